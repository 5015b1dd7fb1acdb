"""Progress bars: tqdm on an interactive terminal (the ``demo`` extra), otherwise silent.

Bars go to stderr and only when stderr is a TTY, so logs, pipes and CI output stay clean.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def _interactive() -> bool:
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def progress(
    iterable: Iterable[T], desc: str, total: int | None = None, disable: bool = False
) -> Iterator[T]:
    """Wrap ``iterable`` in a progress bar on stderr when tqdm is there and stderr is a TTY."""
    if disable or not _interactive():
        yield from iterable
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional dependency
        yield from iterable
        return
    yield from tqdm(iterable, desc=desc, total=total, leave=False)
