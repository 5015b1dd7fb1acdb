"""Reading text files: byte-order marks, line ends, blank and comment lines, the header rule."""

from __future__ import annotations

import numpy as np
import pytest

from dpuq.io import read_array, read_vector


def _write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf0.1\n0.2\n0.3\n",  # Excel's UTF-8 with a byte-order mark: no row lost
        b"0.1\r\n0.2\r\n0.3\r\n",  # CRLF
        b"0.1\r0.2\r0.3",  # old Mac CR, no final newline
        b"# scores of the calibration split\n\n0.1\n\n0.2\n# a comment\n0.3\n\n",
        b"\xef\xbb\xbfscore\r\n0.1\r\n0.2\r\n0.3\r\n",  # BOM + header + CRLF
        b"\xff\xfe" + "0.1\n0.2\n0.3\n".encode("utf-16-le"),  # UTF-16 with its mark
    ],
)
def test_the_same_three_numbers(tmp_path, data):
    p = _write(tmp_path, "s.csv", data)
    assert read_array(p, "--scores").tolist() == [0.1, 0.2, 0.3]


def test_a_numeric_first_row_is_data_not_a_header(tmp_path):
    p = _write(tmp_path, "p.csv", b"0.4,0.6\n0.9,0.1\n")
    assert read_array(p, "--probs").shape == (2, 2)


def test_pandas_index_column_is_dropped(tmp_path):
    p = _write(tmp_path, "p.csv", b",0,1\n0,0.1,0.9\n1,0.2,0.8\n")
    assert read_array(p, "--probs").tolist() == [[0.1, 0.9], [0.2, 0.8]]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a,b\n1,2\n\n3,x\n", "line 4, column 2: not a number"),
        (b"1 2\n# c\n3\n", "line 3: 1 value(s), expected 2"),
        (b"# nothing\n\n", "no data"),
        (b"\n\nscore\n# c\n", "only a header line (line 3)"),
        (b"\xff\xfe\xff\xd8", "not a UTF-8 text file"),
        (b"0.1\n\xc3\x28\n", "not a UTF-8 text file"),
        # a header naming more or fewer columns than the rows hold: which name belongs to
        # which column would be a guess (it was read without comment, eighth session)
        (b"age,income,visits\n1,2\n3,4\n", "the header names 3 column(s) but the rows hold 2"),
        (b"# c\nage\n1,2\n3,4\n", "the header names 1 column(s) but the rows hold 2"),
    ],
)
def test_errors_name_the_file_and_the_line(tmp_path, data, message):
    p = _write(tmp_path, "bad.txt", data)
    with pytest.raises(ValueError, match="--scores") as info:
        read_array(p, "--scores")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_integer_labels_from_a_bom_file(tmp_path):
    p = _write(tmp_path, "y.csv", b"\xef\xbb\xbflabel\r\n0\r\n2\r\n1\r\n")
    y = read_vector(p, "--labels", integer=True)
    assert y.dtype == np.int64 and y.tolist() == [0, 2, 1]


@pytest.mark.parametrize(
    ("data", "shape"),
    [
        (b"predicted score\n0.1\n0.2\n", (2,)),  # no delimiter: a name may hold a space
        (b'"age, years",income\n1,2\n3,4\n', (2, 2)),  # CSV quoting: one name
        (b"a,b,\n1,2\n3,4\n", (2, 2)),  # a trailing delimiter's empty name
        (b",a,b\n0,1,2\n1,3,4\n", (2, 2)),  # pandas' index
    ],
)
def test_headers_that_name_every_column_are_read(tmp_path, data, shape):
    """The header-width check (ninth session) refuses none of these (a second reader's
    cases): each names as many columns as its rows hold."""
    assert read_array(_write(tmp_path, "h.csv", data), "--x").shape == shape


def test_named_reads_check_the_header_and_honour_its_quoting(tmp_path):
    """``dpuq interval --column`` and the chunked reader read by name: a header over fewer
    columns is refused there too, and a quoted name holding the delimiter is one column
    (split naively, ``income`` was taken for the third column)."""
    from dpuq.commands.interval import read_column
    from dpuq.scale.readers import open_scores

    bad = _write(tmp_path, "bad.csv", b"a,b,c\n0.1,0.2\n0.3,0.4\n")
    for read in (lambda: read_column(bad, "a"), lambda: open_scores(bad, column="a")):
        with pytest.raises(ValueError, match="the header names 3 column"):
            read()
    quoted = _write(tmp_path, "q.csv", b'"age, years",income\n1,2\n3,4\n')
    assert read_column(quoted, "income").tolist() == [2.0, 4.0]
