"""Progress: a tqdm bar on an interactive terminal, log lines through ``logging`` otherwise.

Bars go to stderr and only when stderr is a TTY (and tqdm, the ``demo`` extra, is installed),
so pipes and CI output stay clean. Anywhere else (a job on a cluster, a notebook's log, a
pipe) a long loop logs a line at INFO level to the ``dpuq.progress`` logger at every tenth of
its known length (:data:`LOG_EVERY`), e.g. ``DP-SGD: step 300/3000 (10%)``: configure
``logging`` (``logging.basicConfig(level=logging.INFO)``) to see them, with the logging
formatter's own timestamps. The lines carry only the loop's public position (the step count,
planned from public quantities), never a data value.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: Log lines per loop of known length (one at every tenth of it).
LOG_EVERY = 10
#: The logger of progress lines.
logger = logging.getLogger("dpuq.progress")


def _interactive() -> bool:
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def _logged(iterable: Iterable[T], desc: str, total: int | None) -> Iterator[T]:
    """Yield from ``iterable``, logging ``desc: step i/total (p%)`` at every tenth of it."""
    if total is None or total <= 0:
        yield from iterable
        return
    marks = {max(1, round(total * k / LOG_EVERY)) for k in range(1, LOG_EVERY + 1)}
    logger.info("%s: %d steps", desc, total)
    for done, item in enumerate(iterable, 1):
        yield item
        if done in marks:
            logger.info("%s: step %d/%d (%d%%)", desc, done, total, round(100 * done / total))


def progress(
    iterable: Iterable[T], desc: str, total: int | None = None, disable: bool = False
) -> Iterator[T]:
    """Wrap ``iterable`` in a bar (interactive stderr with tqdm) or in log lines (otherwise).

    ``disable=True``: neither.

    Examples
    --------
    >>> list(progress(range(3), "demo", total=3, disable=True))
    [0, 1, 2]
    """
    if disable:
        yield from iterable
        return
    if not _interactive():
        yield from _logged(iterable, desc, total)
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional dependency
        yield from _logged(iterable, desc, total)
        return
    yield from tqdm(iterable, desc=desc, total=total, leave=False)
