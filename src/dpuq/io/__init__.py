"""Users' files: reading scores, probabilities, labels and predictions; writing results.

- :mod:`dpuq.io.files`: the readers and writers (``.npy``, delimited text, Parquet, JSON) and
  the output-path checks; every problem is a one-line :class:`ValueError` naming the option
  and the file, never a value of the data;
- ``dpuq.io._text``: the rules for delimited text (delimiters, decimal commas, headers),
  shared with the chunked readers of :mod:`dpuq.scale`;
- ``dpuq.io._atomic``: release files written atomically and, without ``force``, exclusively.

Nothing here computes a statistic.
"""

from dpuq.io._text import _decimal_point as _decimal_point  # the old dpuq.io module's names
from dpuq.io.files import (
    READ_SUFFIXES,
    check_output_path,
    check_read_suffix,
    is_data_line,
    json_text,
    read_array,
    read_json,
    read_matrix,
    read_vector,
    text_layout,
    write_intervals,
    write_json,
    write_sets,
)

__all__ = [
    "READ_SUFFIXES",
    "check_output_path",
    "check_read_suffix",
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
