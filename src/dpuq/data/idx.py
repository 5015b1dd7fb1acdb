"""Reader for the IDX file format of MNIST, Fashion-MNIST, EMNIST, KMNIST (numpy only).

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of dimensions
``d``), then ``d`` big-endian uint32 sizes, then the data in big-endian C order. Files ending in
``.gz`` are decompressed on the fly.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

__all__ = ["read_idx", "write_idx"]

_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {np.dtype(v).newbyteorder("="): k for k, v in _TYPES.items()}


def _open(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (optionally gzipped) into a numpy array of its shape and type.

    Parameters
    ----------
    path : str or path-like
        e.g. ``train-images-idx3-ubyte.gz``.

    Returns
    -------
    ndarray
        Native byte order; uint8 for images and labels of the MNIST family.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the file is not IDX (bad magic number, unknown type code, truncated or too long).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> write_idx(os.path.join(d, "x.idx.gz"), np.arange(6, dtype=np.uint8).reshape(2, 3))
    >>> read_idx(os.path.join(d, "x.idx.gz")).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"IDX file not found: {p}")
    try:
        with _open(p) as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:  # e.g. a corrupt .gz
        raise ValueError(f"{p}: cannot read ({exc})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{p}: not an IDX file (bad magic number {raw[:4].hex()!r})")
    code, ndim = raw[2], raw[3]
    if code not in _TYPES:
        raise ValueError(f"{p}: unknown IDX type code 0x{code:02x}")
    if ndim == 0:
        raise ValueError(f"{p}: IDX file with 0 dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{p}: truncated IDX header")
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = _TYPES[code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(
            f"{p}: IDX data has {len(raw) - header} bytes, the header {shape} of "
            f"{dtype.name} needs {expected}"
        )
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def write_idx(path: str | os.PathLike, array) -> None:
    """Write an array as an IDX file (gzipped when ``path`` ends in ``.gz``).

    Supported dtypes: uint8, int8, int16, int32, float32, float64.
    """
    arr = np.asarray(array)
    dt = arr.dtype.newbyteorder("=")
    if dt not in _CODES:
        raise ValueError(f"array dtype {arr.dtype} has no IDX type code")
    if arr.ndim == 0 or arr.ndim > 255:
        raise ValueError(f"array must have 1 to 255 dimensions, got {arr.ndim}")
    code = _CODES[dt]
    header = bytes([0, 0, code, arr.ndim]) + np.asarray(arr.shape, dtype=">u4").tobytes()
    body = np.ascontiguousarray(arr, dtype=_TYPES[code]).tobytes()
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "wb") as fh:
        fh.write(header + body)
