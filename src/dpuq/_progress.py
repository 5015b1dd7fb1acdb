"""Progress bars: tqdm when installed (the ``demo`` extra), otherwise silent."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress(
    iterable: Iterable[T], desc: str, total: int | None = None, disable: bool = False
) -> Iterator[T]:
    """Wrap ``iterable`` in a progress bar on stderr when tqdm is available."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional dependency
        yield from iterable
        return
    yield from tqdm(iterable, desc=desc, total=total, disable=disable, leave=False)
