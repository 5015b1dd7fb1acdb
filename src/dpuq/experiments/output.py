"""Output folders of the demo and the reproductions, written atomically.

Everything goes into a temporary sibling folder first; only when the run has finished is it
renamed to the requested path. An interrupted run (Ctrl-C, an error) therefore never leaves a
folder at that path that looks complete: the temporary folder is removed, and a previous
complete output stays as it was.

A folder is only ever replaced when it is empty or was written by dpuq (it holds the marker
file ``.dpuq-output``), so pointing ``--out`` at a folder of one's own is an error, never a
deletion.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MARKER", "atomic_output_dir", "check_output_dir"]

#: Marker file that identifies a folder written by dpuq.
MARKER = ".dpuq-output"


def check_output_dir(path: str | os.PathLike, name: str = "--out") -> Path:
    """Check before any work that ``path`` can become (or replace) an output folder.

    Raises
    ------
    ValueError
        If ``path`` is a file, a non-empty folder not written by dpuq, or its parent is not a
        writable folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_dir(d / "report") == d / "report"
    True
    """
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.exists() and not p.is_dir():
        raise ValueError(f"{name} {str(p)!r} exists and is not a folder")
    if p.is_dir() and any(p.iterdir()) and not (p / MARKER).exists():
        raise ValueError(
            f"{name} {str(p)!r} is a non-empty folder not written by dpuq; "
            "choose another path (dpuq never overwrites other folders)"
        )
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{name}: {str(parent)!r} is not a folder")
    probe = parent
    while not probe.exists():
        probe = probe.parent if str(probe.parent) != str(probe) else Path(".")
    if not os.access(probe, os.W_OK):
        raise ValueError(f"{name}: folder {str(probe)!r} is not writable")
    return p


@contextlib.contextmanager
def atomic_output_dir(path: str | os.PathLike, name: str = "--out") -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``path`` in one rename.

    On any exception (including ``KeyboardInterrupt``) the temporary folder is deleted and
    ``path`` is left untouched.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "out"
    >>> with atomic_output_dir(d) as tmp:
    ...     _ = (tmp / "a.txt").write_text("hi")
    >>> sorted(p.name for p in d.iterdir())
    ['.dpuq-output', 'a.txt']
    """
    final = check_output_dir(path, name)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; a report folder is for sharing
    try:
        (tmp / MARKER).write_text("written by dpuq; this folder may be replaced by a new run\n")
        yield tmp
        old = None
        if final.exists():
            check_output_dir(final, name)  # still ours (or empty) right before replacing
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
            os.rename(final, old / final.name)
        os.rename(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
