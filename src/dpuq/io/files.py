"""Reading users' score, probability, label and prediction files; writing results.

Formats, chosen by the file's suffix:

- ``.npy``: a NumPy array (never pickled objects);
- ``.csv``, ``.tsv``, ``.txt``: numbers separated by semicolons, commas, tabs or spaces, one
  row per sample. In a ``;``-separated file (as European spreadsheets write) a decimal comma
  is read too (``0,937``): there a comma cannot separate values, so it is unambiguous; any
  other pattern (thousands separators, several commas) is an error. UTF-8 (a byte-order
  mark, as Excel writes, is dropped; UTF-16 with a mark is read too); LF, CRLF or CR line
  ends. Blank lines and lines whose first non-blank character is ``#`` are skipped anywhere.
  Header rule: the first remaining line is a header when it is not all numbers, or when it
  is pandas' default names ``0,1,...,K-1`` above rows of decimals; a first header cell that
  is empty (pandas' ``to_csv()`` with its index) marks an index column, which is dropped.
  Errors give the 1-based line and column numbers, never a cell (the data);
- ``.parquet``: every column must be numeric (needs ``pyarrow``: ``pip install pyarrow``).

Every problem is a :class:`ValueError` (or :class:`ImportError` for a missing optional reader)
whose one-line message names the option, the file and what is wrong, so that the command line
can print it as is. The text-file rules are implemented in :mod:`dpuq.io._text`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from dpuq.io._text import _decimal_point as _decimal_point  # re-exported (chunked readers)
from dpuq.io._text import _read_text, is_data_line, text_layout

__all__ = [
    "READ_SUFFIXES",
    "check_output_path",
    "is_data_line",
    "json_text",
    "read_array",
    "read_json",
    "read_matrix",
    "read_vector",
    "text_layout",
    "write_intervals",
    "write_json",
    "write_sets",
]

READ_SUFFIXES = (".npy", ".csv", ".tsv", ".txt", ".parquet")
_NUMERIC_KINDS = "biuf"


def _label(name: str, path: Path) -> str:
    return f"{name} {str(path)!r}"


def check_read_suffix(path: Path, label: str) -> str:
    """The file's suffix, lower-case, if dpuq reads that type; else a ValueError naming it."""
    suffix = path.suffix.lower()
    if suffix not in READ_SUFFIXES:
        raise ValueError(
            f"{label}: unsupported file type {suffix or '(no suffix)'!r}; "
            f"use one of {', '.join(READ_SUFFIXES)}"
        )
    return suffix


def read_array(path: str | os.PathLike, name: str = "input") -> np.ndarray:
    """Read a numeric 1-d or 2-d array from ``path`` (format from the suffix).

    Parameters
    ----------
    path : str or path-like
    name : str
        What the file is, for error messages (e.g. ``"--scores"``).

    Returns
    -------
    ndarray
        Numeric (bool, integer or float) array with ``ndim`` 1 or 2. NaN may be present:
        the callers' checks count and reject it.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "s.csv")
    >>> _ = open(p, "w").write("score\\n0.1\\n0.7\\n")
    >>> read_array(p, "--scores").tolist()
    [0.1, 0.7]
    """
    p = Path(path)
    label = _label(name, p)
    suffix = check_read_suffix(p, label)
    if not p.exists():
        raise ValueError(f"{label}: no such file")
    if p.is_dir():
        raise ValueError(f"{label}: is a directory, not a file")
    if suffix == ".npy":
        arr = _read_npy(p, label)
    elif suffix == ".parquet":
        arr = _read_parquet(p, label)
    else:
        arr = _read_text(p, label)
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise ValueError(f"{label}: wrong dtype {arr.dtype}; numbers expected")
    if arr.ndim not in (1, 2):
        raise ValueError(f"{label}: expected a 1-d or 2-d array, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{label}: no data (shape {arr.shape})")
    return arr


def _read_npy(p: Path, label: str) -> np.ndarray:
    with open(p, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            raise ValueError(f"{label}: not a .npy file (no NumPy header)")
    try:
        arr = np.load(p, allow_pickle=False)
    except Exception as exc:  # corrupt file, pickled objects, npz ...
        raise ValueError(f"{label}: cannot read as .npy ({_one_line(exc)})") from None
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{label}: not a single .npy array")
    return arr


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _read_parquet(p: Path, label: str) -> np.ndarray:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            f"{label}: reading .parquet files needs pyarrow (pip install pyarrow), "
            "or save the data as .npy or .csv"
        ) from None
    try:
        table = pq.read_table(p)
    except Exception as exc:
        raise ValueError(f"{label}: cannot read as .parquet ({_one_line(exc)})") from None
    if table.num_columns == 0:
        raise ValueError(f"{label}: no columns")
    columns = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        if col.null_count:
            # no count: how many values are missing depends on the data
            raise ValueError(f"{label}: column {name!r} has missing value(s)")
        values = col.to_numpy()
        if values.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(
                f"{label}: column {name!r} has wrong dtype {col.type}; numbers expected"
            )
        columns.append(values)
    if len(columns) == 1:
        return columns[0]
    return np.column_stack(columns)


def read_vector(path, name: str, *, integer: bool = False) -> np.ndarray:
    """Read one column (shape (n,) or (n, 1)) of finite numbers; integers if ``integer``."""
    arr = read_array(path, name)
    label = _label(name, Path(path))
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise ValueError(f"{label}: expected one column, got shape {arr.shape}")
        arr = arr[:, 0]
    _check_finite(arr, label)
    if integer:
        if arr.dtype.kind == "f":
            if not np.all(arr == np.round(arr)):
                raise ValueError(f"{label}: expected integer class indices, found fractions")
            if arr.size and np.abs(arr).max() >= 2.0**53:  # a cast would not be exact (or warn)
                raise ValueError(f"{label}: expected class indices, found values beyond 2^53")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "b":
        raise ValueError(f"{label}: wrong dtype bool; numbers expected")
    return arr


def read_matrix(
    path, name: str, *, columns: int | None = None, keep_float: bool = False
) -> np.ndarray:
    """Read a 2-d float array of finite numbers (a 1-d file is one column).

    ``keep_float=True`` keeps a float16/float32 file's dtype (so that checks can use its
    precision); otherwise the result is float64.
    """
    arr = read_array(path, name)
    label = _label(name, Path(path))
    if arr.dtype.kind == "b":
        raise ValueError(f"{label}: wrong dtype bool; numbers expected")
    if arr.ndim == 1:
        arr = arr[:, None]
    if columns is not None and arr.shape[1] != columns:
        raise ValueError(f"{label}: expected {columns} column(s), got shape {arr.shape}")
    _check_finite(arr, label)
    if keep_float and arr.dtype.kind == "f":
        return arr
    return arr.astype(float, copy=False)


def _check_finite(arr: np.ndarray, label: str) -> None:
    if arr.dtype.kind == "f":
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        if bad:
            raise ValueError(f"{label}: non-finite value(s) (NaN, empty or inf)")


def read_json(path, name: str) -> dict[str, Any]:
    """Read a JSON object."""
    p = Path(path)
    label = _label(name, p)
    if not p.exists():
        raise ValueError(f"{label}: no such file")
    try:
        with open(p, encoding="utf-8") as fh:
            obj = json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{label}: not valid JSON ({_one_line(exc)})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{label}: expected a JSON object")
    return obj


def check_output_path(path, name: str, suffixes: tuple[str, ...], *, force: bool = True) -> Path:
    """Check, before any work is done, that ``path`` can be written with a known suffix."""
    p = Path(path)
    label = _label(name, p)
    if p.suffix.lower() not in suffixes:
        raise ValueError(f"{label}: the file name must end in {' or '.join(suffixes)}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{label}: directory {str(parent)!r} does not exist")
    if p.is_dir():
        raise ValueError(f"{label}: is a directory")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{label}: directory {str(parent)!r} is not writable")
    if p.exists() and not force:
        raise ValueError(f"{label}: exists; pass --force to overwrite it")
    return p


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def json_text(obj: dict[str, Any]) -> str:
    """``obj`` as indented JSON text (infinities as the strings ``"inf"``/``"-inf"``)."""
    return json.dumps(_jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path, obj: dict[str, Any]) -> None:
    """Write ``obj`` as indented JSON, atomically (:mod:`dpuq.io._atomic`)."""
    from dpuq.io._atomic import atomic_write

    text = json_text(obj)
    atomic_write(path, lambda f: f.write_text(text))


def write_sets(path, sets: np.ndarray, classes: list) -> None:
    """Write boolean prediction sets (n, K).

    ``.csv``: a 0/1 column per class (header: the class); ``.json``: for each row the list of
    classes in its set; ``.npy``: the boolean array.
    """
    from dpuq.io._atomic import atomic_write

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        atomic_write(p, lambda f: f.write_with(lambda t: np.save(t, sets)))
    elif suffix == ".json":
        members = [np.asarray(classes)[row].tolist() for row in sets]
        write_json(p, {"classes": list(classes), "sets": members})
    else:
        header = ",".join(str(c) for c in classes)
        atomic_write(
            p,
            lambda f: f.write_with(
                lambda t: np.savetxt(
                    t, sets.astype(np.int8), fmt="%d", delimiter=",", header=header, comments=""
                )
            ),
        )


def write_intervals(path, intervals: np.ndarray) -> None:
    """Write (n, 2) intervals: ``.csv`` (columns lower, upper; ``inf`` for unbounded),
    ``.json`` (lists; ``"inf"``/``"-inf"`` for unbounded) or ``.npy``."""
    from dpuq.io._atomic import atomic_write

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        atomic_write(p, lambda f: f.write_with(lambda t: np.save(t, intervals)))
    elif suffix == ".json":
        write_json(p, {"lower": intervals[:, 0].tolist(), "upper": intervals[:, 1].tolist()})
    else:
        atomic_write(
            p,
            lambda f: f.write_with(
                lambda t: np.savetxt(
                    t, intervals, fmt="%.17g", delimiter=",", header="lower,upper", comments=""
                )
            ),
        )
