"""Out-of-core score files: read ``.npy``, Parquet and CSV in chunks, never whole.

:func:`open_scores` returns a :class:`~dpuq.scale.counts.ChunkedScores` that
:func:`dpuq.calibrate` validates and bins one chunk at a time, so memory stays at a few
chunks whatever the file size:

- ``.npy``: memory-mapped (``np.load(mmap_mode="r")``), sliced in chunks;
- ``.parquet``: one column, read batch by batch with pyarrow (``n`` from the metadata);
- ``.csv``/``.tsv``/``.txt``: the layout rules of :mod:`dpuq.io` (header, delimiter, index
  column), parsed in chunks of lines; a first pass counts and validates the values.

Errors name the option and the file, like :mod:`dpuq.io`.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dpuq.scale.counts import ChunkedScores, check_numeric_dtype

__all__ = ["CHUNK_ROWS", "open_scores"]

#: Values per chunk (8 MB of float64).
CHUNK_ROWS = 1 << 20


def _progress(total: int | None, desc: str):
    """A tqdm bar on a terminal only; silent when stderr is not a TTY."""
    if not sys.stderr.isatty():
        return None
    from dpuq._progress import progress

    return lambda it: progress(it, desc=desc, total=total)


def open_scores(
    path, name: str = "--scores", *, column: str | None = None, chunk_rows: int = CHUNK_ROWS
) -> ChunkedScores:
    """A chunked view of a one-column score file (``.npy``, ``.parquet``, ``.csv`` ...).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "s.npy")
    >>> np.save(p, np.linspace(0, 1, 11))
    >>> src = open_scores(p, chunk_rows=4)
    >>> src.size, src.summary(None).high
    (11, 1.0)
    """
    from dpuq.io import check_read_suffix

    p = Path(path)
    label = f"{name} {str(p)!r}"
    suffix = check_read_suffix(p, label)
    if not p.is_file():
        raise ValueError(f"{label}: no such file")
    if suffix == ".npy":
        if column is not None:
            raise ValueError(f"{label}: --column applies to .parquet and .csv files")
        return _npy(p, label, chunk_rows)
    if suffix == ".parquet":
        return _parquet(p, label, column, chunk_rows)
    return _text(p, label, column, chunk_rows)


def _npy(p: Path, label: str, chunk_rows: int) -> ChunkedScores:
    with open(p, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            raise ValueError(f"{label}: not a .npy file (no NumPy header)")
    try:
        arr = np.load(p, mmap_mode="r", allow_pickle=False)
    except Exception as exc:
        raise ValueError(f"{label}: cannot read as .npy ({exc})") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{label}: expected one column, got shape {arr.shape}")
    check_numeric_dtype(arr.dtype, label)
    n = arr.shape[0]

    def chunks() -> Iterator[np.ndarray]:
        for i in range(0, n, chunk_rows):
            yield np.array(arr[i : i + chunk_rows], dtype=float)

    return ChunkedScores(chunks, n, label, _progress(-(-n // chunk_rows), "reading scores"))


def _parquet(p: Path, label: str, column: str | None, chunk_rows: int) -> ChunkedScores:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            f"{label}: reading .parquet files needs pyarrow (pip install pyarrow)"
        ) from None
    try:
        pf = pq.ParquetFile(p)
    except Exception as exc:
        raise ValueError(f"{label}: cannot read as .parquet ({exc})") from None
    names = pf.schema_arrow.names
    if column is None:
        if len(names) != 1:
            raise ValueError(f"{label}: {len(names)} columns {names}; choose one with --column")
        column = names[0]
    elif column not in names:
        raise ValueError(f"{label}: no column {column!r}; columns are {names}")
    n = pf.metadata.num_rows

    def chunks() -> Iterator[np.ndarray]:
        for batch in pq.ParquetFile(p).iter_batches(batch_size=chunk_rows, columns=[column]):
            col = batch.column(0)
            if col.null_count:
                raise ValueError(f"{label}: column {column!r} has missing value(s)")
            values = col.to_numpy(zero_copy_only=False)
            if values.dtype.kind not in "biuf":
                raise ValueError(
                    f"{label}: column {column!r} has wrong dtype {col.type}; numbers expected"
                )
            yield values

    return ChunkedScores(chunks, n, label, _progress(-(-n // chunk_rows), "reading scores"))


def _text(p: Path, label: str, column: str | None, chunk_rows: int) -> ChunkedScores:
    from dpuq.io._text import (
        check_file_header_width,
        header_column,
        is_data_line,
        text_layout,
        with_decimal_points,
    )

    # the rules of dpuq.io: byte-order mark, blank and comment lines, header line (naming as
    # many columns as the rows hold)
    delimiter, skip, usecols = text_layout(p, label)
    check_file_header_width(p, label, delimiter, skip)
    if column is not None:
        usecols = [header_column(p, label, column, delimiter, skip)]

    def chunks() -> Iterator[np.ndarray]:
        with open(p, encoding="utf-8-sig") as fh:
            for _ in range(skip):
                fh.readline()
            while True:
                raw = list(itertools.islice(fh, chunk_rows))
                if not raw:
                    return
                lines = [line for line in raw if is_data_line(line)]
                if not lines:
                    continue
                lines = with_decimal_points(lines, delimiter)  # as dpuq.io reads them
                try:
                    arr = np.loadtxt(
                        lines, delimiter=delimiter, usecols=usecols, dtype=float, ndmin=2
                    )
                except ValueError:  # numpy's message quotes the cell: data, never shown
                    raise ValueError(
                        f"{label}: a line is not all numbers or has the wrong number of "
                        "columns (read it with dpuq.io for the line number)"
                    ) from None
                if arr.size == 0:
                    continue
                if arr.shape[1] != 1:
                    raise ValueError(
                        f"{label}: expected one column, got {arr.shape[1]}; choose one with "
                        "--column"
                    )
                yield arr[:, 0]

    counting = ChunkedScores(chunks, 0, label)
    first = counting.summary(None)  # one pass: count and validate (n is not in the file)
    first.check(label)
    return ChunkedScores(chunks, first.n, label, _progress(None, "reading scores"))
