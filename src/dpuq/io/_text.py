"""Numbers from delimited text files: the rules of :mod:`dpuq.io` for ``.csv``/``.tsv``/``.txt``.

Decoding (UTF-8, or UTF-16 with a byte-order mark), skipped lines (blank, ``#`` comments), the
delimiter and header rules, the decimal comma of ``;``-separated files, and error messages
that give line and column numbers, never a cell (the data). :func:`text_layout` and
:func:`is_data_line` serve the chunked readers of :mod:`dpuq.scale.readers` with the same rules.
"""

from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path

import numpy as np

__all__ = ["header_column", "is_data_line", "text_layout", "with_decimal_points"]


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _is_default_column_names(tokens: list[str], second: str, delimiter) -> bool:
    """A header ``0,1,...,K-1`` (pandas' names for unnamed columns) above rows of decimals."""
    if len(tokens) < 2 or tokens != [str(k) for k in range(len(tokens))]:
        return False
    row = [t.strip() for t in second.split(delimiter)]
    return any(c in t for t in row for c in ".eE")


_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def _decode(raw: bytes, label: str) -> str:
    """Text of a file: UTF-8, or UTF-16 when a byte-order mark says so; the mark is dropped."""
    encoding = "utf-8"
    for bom, enc in _BOMS:
        if raw.startswith(bom):
            raw, encoding = raw[len(bom) :], enc
            break
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError:
        raise ValueError(f"{label}: not a UTF-8 text file (use .npy for binary arrays)") from None


def _is_skipped(line: str) -> bool:
    """Blank lines and comment lines (first non-blank character ``#``) carry no data."""
    text = line.strip()
    return not text or text.startswith("#")


def _bad_line(lines: list[str], first: int, delimiter, usecols) -> str:
    """Where parsing failed: the 1-based line number and the reason (error path only)."""
    width = None
    for number, line in enumerate(lines[first:], start=first + 1):
        if _is_skipped(line):
            continue
        cells = [c.strip() for c in (line.split(delimiter) if delimiter else line.split())]
        if usecols is not None:
            cells = cells[1:]
        if width is None:
            width = len(cells)
        if len(cells) != width:
            return f"line {number}: {len(cells)} value(s), expected {width} as on the first row"
        for column, cell in enumerate(cells, start=1):
            if not _is_number(_decimal_point(cell, delimiter)):
                # never the cell itself: it is data
                return f"line {number}, column {column}: not a number"
    return "cannot parse the numbers"


#: A number written with a decimal comma (one comma, no point), as in ``0,937`` or ``-1,5e-3``.
_DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+(?:[eE][+-]?\d+)?$")


def _decimal_point(cell: str, delimiter) -> str:
    """``0,93`` -> ``0.93`` in a ``;``-separated file only: there a comma cannot separate
    values, so a single comma between digits is a decimal comma (unambiguous). Elsewhere,
    and for any other pattern (thousands separators, several commas), the cell is unchanged."""
    if delimiter == ";" and _DECIMAL_COMMA.match(cell):
        return cell.replace(",", ".")
    return cell


def with_decimal_points(lines: list[str], delimiter) -> list[str]:
    """The data lines of a ``;``-separated file with its decimal commas made points, cell by
    cell (:func:`_decimal_point`); lines of any other file unchanged."""
    if delimiter != ";":
        return lines
    return [";".join(_decimal_point(c.strip(), ";") for c in line.split(";")) for line in lines]


def _layout(lines: list[str], label: str) -> tuple[str | None, int, range | None]:
    """``(delimiter, index of the first data line, columns to use)`` (module rules)."""
    content = [k for k, line in enumerate(lines) if not _is_skipped(line)]
    if not content:
        raise ValueError(f"{label}: no data (only blank or comment lines)")
    first = lines[content[0]]
    second = lines[content[1]] if len(content) > 1 else ""
    sample = first + second
    if ";" in sample:  # a semicolon never appears in a number (European spreadsheets)
        delimiter: str | None = ";"
    elif "," in sample:
        delimiter = ","
    else:
        delimiter = "\t" if "\t" in sample else None
    tokens = [t.strip() for t in (first.split(delimiter) if delimiter else first.split())]
    usecols = None
    if delimiter is not None and len(tokens) > 1 and tokens[0] == "":
        # pandas' to_csv() with its index: an empty first header cell, the index first
        header, usecols = True, range(1, len(tokens))
    elif _is_default_column_names(tokens, second, delimiter):
        header = True
    else:
        header = not all(_is_number(_decimal_point(t, delimiter)) for t in tokens)
    if header and len(content) < 2:
        raise ValueError(f"{label}: only a header line (line {content[0] + 1}), no data")
    return delimiter, (content[1] if header else content[0]), usecols


#: Bytes read to find a text file's layout (its header and first data line).
_LAYOUT_PREFIX = 1 << 20


def text_layout(p: Path, label: str) -> tuple[str | None, int, range | None]:
    """``(delimiter, lines before the first data line, columns to use)`` of a text file, from
    its first MiB only (the module rules: byte-order mark, comments, blank lines, header);
    used by the chunked reader :mod:`dpuq.scale.readers`, which reads the rest in chunks."""
    with open(p, "rb") as fh:
        raw = fh.read(_LAYOUT_PREFIX)
    if len(raw) == _LAYOUT_PREFIX and b"\n" in raw:
        raw = raw[: raw.rindex(b"\n") + 1]  # whole lines only
    return _layout(_decode(raw, label).splitlines(), label)


def is_data_line(line: str) -> bool:
    """False for the blank and comment lines that every reader skips."""
    return not _is_skipped(line)


def header_column(
    p: Path, label: str, column: str, delimiter: str | None, skip: int, flag: str = "--column"
) -> int:
    """The index of ``column`` in the header line of a text file (``delimiter``, ``skip`` as
    :func:`text_layout` gives them); the error names ``flag`` but not the header's cells
    (a file whose first row is data would have them taken for names). A name the header
    holds twice is ambiguous: refused, not its first match."""
    header, _ = _header_and_first_row(p, skip)
    if header is None:
        raise ValueError(f"{flag} needs a header line naming the columns in {label}")
    names = header_names(header, delimiter)
    if column not in names:
        raise ValueError(f"{flag}: no column {column!r} in the header line of {label}")
    if names.count(column) > 1:
        raise ValueError(f"{flag}: the header line of {label} names {column!r} more than once")
    return names.index(column)


def _read_text(p: Path, label: str) -> np.ndarray:
    """Numbers from a text file; the rules are those of the module docstring.

    A UTF-8 or UTF-16 byte-order mark is dropped, CRLF and CR line ends are accepted, blank
    lines and lines starting with ``#`` are skipped, and the first remaining line is a header
    when it is not all numbers (or is pandas' ``0,1,...`` above decimals). Errors give the
    line number.
    """
    lines = _decode(p.read_bytes(), label).splitlines()
    delimiter, start, usecols = _layout(lines, label)
    rows = [line for line in lines[start:] if not _is_skipped(line)]
    if delimiter == ";" and any("," in line for line in rows):
        rows = [";".join(_decimal_point(c.strip(), ";") for c in line.split(";")) for line in rows]
    try:
        arr = np.loadtxt(rows, delimiter=delimiter, usecols=usecols, dtype=float, ndmin=1)
    except ValueError:
        where = _bad_line(lines, start, delimiter, usecols)
        raise ValueError(f"{label}: {where}") from None
    before = [line for line in lines[:start] if not _is_skipped(line)]
    if before:  # a header: it must name as many columns as the rows hold
        check_header_width(before[-1], rows[0], delimiter, label)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    return arr


def header_names(header: str, delimiter) -> list[str]:
    """The names of a header line: CSV quoting honoured (``"age, years"`` is one name), a
    trailing delimiter's empty name dropped; split on whitespace where there is no delimiter."""
    if delimiter is None:
        return header.split()
    names = [t.strip() for t in next(csv.reader([header.strip("\r\n")], delimiter=delimiter))]
    while len(names) > 1 and names[-1] == "":
        names.pop()
    return names


def check_header_width(header: str, first_row: str, delimiter, label: str) -> None:
    """Refuse a header naming more or fewer columns than the first data row holds: which name
    goes with which column would be a guess. A file's shape only, never a value. Files
    without a delimiter are not checked (a name may hold a space there)."""
    if delimiter is None:
        return
    names = header_names(header, delimiter)
    width = len(first_row.split(delimiter))
    if len(names) != width:
        raise ValueError(
            f"{label}: the header names {len(names)} column(s) but the rows hold {width}"
        )


def check_file_header_width(p: Path, label: str, delimiter, skip: int) -> None:
    """:func:`check_header_width` on a file's header and first data line (``delimiter`` and
    ``skip`` as :func:`text_layout` gives them); for the readers that do not load it whole."""
    header, first = _header_and_first_row(p, skip)
    if header is not None and first is not None:
        check_header_width(header, first, delimiter, label)


def _header_and_first_row(p: Path, skip: int) -> tuple[str | None, str | None]:
    """The header line (the last content line of the first ``skip``; None without one) and
    the first data line after them (None in a file with no data)."""
    with open(p, encoding="utf-8-sig") as fh:
        before = [line for line in itertools.islice(fh, skip) if is_data_line(line)]
        first = next((line for line in fh if is_data_line(line)), None)
    return (before[-1] if before else None), first
