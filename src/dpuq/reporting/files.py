"""Output folders of the demo and the reproductions: tables, ``summary.md``, written atomically.

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
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MARKER",
    "atomic_output_dir",
    "check_output_dir",
    "markdown_table",
    "text_table",
    "write_experiment",
    "write_results",
]

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


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub markdown table.

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain aligned table for the terminal.

    Examples
    --------
    >>> print(text_table(["a", "bb"], [["1", "2"]]))
    a  bb
    1  2
    """
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    out = []
    for row in [header, *rows]:
        out.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out)


def write_results(
    directory: Path,
    *,
    title: str,
    command: str,
    seed: int | str | None,
    elapsed_s: float,
    body: str,
    data: dict[str, Any],
    arrays: dict[str, np.ndarray] | None = None,
) -> None:
    """Write ``summary.md`` (title, command, seed, time, ``body``), ``results.json`` and,
    when given, ``splits.npz`` (per-split arrays, to redraw the figures)."""
    from dpuq.io import write_json

    header = [
        f"# {title}",
        "",
        "Made by:",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Seed: {'none (OS entropy)' if seed is None else seed}. "
        f"Run time: {elapsed_s:.1f} s on {_machine()}. "
        f"Written {time.strftime('%Y-%m-%d')} by dpuq.",
        "",
    ]
    (directory / "summary.md").write_text("\n".join(header) + body.rstrip() + "\n", "utf-8")
    write_json(directory / "results.json", {"title": title, "command": command, **data})
    if arrays:
        np.savez_compressed(directory / "splits.npz", **arrays)


def write_experiment(
    out: str | os.PathLike,
    *,
    figures: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
    **results: Any,
) -> Path:
    """One output folder, atomically: the figures (file name -> matplotlib figure, as PNG),
    other text ``files`` (file name -> text), then :func:`write_results` with ``results``."""
    from dpuq.reporting.figures import save

    with atomic_output_dir(out) as tmp:
        for name, fig in (figures or {}).items():
            save(fig, tmp / name)
        for name, text in (files or {}).items():
            (tmp / name).write_text(text, encoding="utf-8")
        write_results(tmp, **results)
    return Path(out)


def _machine() -> str:
    import platform

    return f"{os.cpu_count()} CPU core(s), Python {platform.python_version()}"
