"""Exact column sums of a matrix read in row chunks: the correctly rounded ``math.fsum`` of
every column, whatever the chunking.

Private conformal risk control (:func:`dpuq.risk_control`) reads the data only through the
loss sums ``S_j = Σ_i L_i(λ_j)``, the correctly rounded sum of each column
(:func:`dpuq.mechanisms.risk.loss_sums`). Rounded partial sums do not add up to the rounded
total, so each chunk returns its column sums *exactly*, as integers: every double
``x = M · 2^(e-53)`` (``frexp``, ``M < 2^53`` an integer) is split into ``M = hi · 2^26 + lo``
and the halves are summed per column and exponent (``bincount``; a chunk of at most 2^26
rows keeps every such sum below 2^53, hence exact in float64, then held as int64).
Summaries of disjoint chunks add exactly (int64: up to 2^33 rows), and the client turns each
column's integers into one Python integer and one correctly rounded division, which is what
``math.fsum`` returns. Fast path: a chunk whose losses are all multiples of 2^-30 (0/1
losses, fractions of a few bits) is summed directly as int64 multiples of 2^-30. Each chunk
also returns the validation flags of
:func:`dpuq.mechanisms.risk.check_losses` (no value, no count).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["ExactColumnSums", "loss_chunk_sums", "merge_column_sums"]

#: frexp exponents of doubles in [0, 1]: -1073 (the smallest subnormal) .. 1 (for 1.0).
_E_MIN, _E_MAX = -1073, 1
_N_EXP = _E_MAX - _E_MIN + 1
#: Rows per exact sub-pass (each half-mantissa sum stays below 2^27 · 2^26 = 2^53).
_ROWS = 1 << 26
#: Fast path: losses that are multiples of 2^-_FIXED are summed as int64 (< 2^26 rows * 2^30).
_FIXED = 30
#: The flags, in order: not finite or outside [0, 1], increasing along a row. The last column is
#: the trivial answer, taken as 0 whatever the data (as in memory: dpuq.mechanisms.risk).
FLAGS = ("range", "increasing")


@dataclass(frozen=True)
class ExactColumnSums:
    """Column sums of ``n`` rows held exactly: ``hi`` and ``lo`` (int64, shape (m, E)) are
    the sums of the half-mantissas per column and frexp exponent, ``fixed`` (int64, (m,)) the
    sums of the fast path in units of 2^-30; ``flags`` the validation flags (:data:`FLAGS`)."""

    n: int
    hi: np.ndarray
    lo: np.ndarray
    fixed: np.ndarray
    flags: np.ndarray

    def rounded(self) -> np.ndarray:
        """Each column's exact sum, correctly rounded to float (= ``math.fsum`` of it).

        Examples
        --------
        >>> import math
        >>> x = np.array([[0.7, 1e-300, 0.0], [0.2, 5e-324, 0.0], [0.1, 0.0, 0.0]])
        >>> s = loss_chunk_sums(x[:1]); t = loss_chunk_sums(x[1:])
        >>> got = merge_column_sums([s, t]).rounded()
        >>> got.tolist() == [math.fsum(c) for c in x.T], bool(got[0] == sum(x[:, 0]))
        (True, False)
        """
        out = np.empty(self.hi.shape[0])
        shift = np.arange(_N_EXP)  # exponent e - _E_MIN of each bucket
        for j in range(out.size):  # columns (grid values) are few
            used = np.flatnonzero(self.hi[j] | self.lo[j])
            total = sum(
                ((int(self.hi[j, k]) << 26) + int(self.lo[j, k])) << int(shift[k]) for k in used
            ) + (int(self.fixed[j]) << (53 - _E_MIN - _FIXED))
            # x = M 2^(e - 53) = M 2^(k + _E_MIN - 53): one exact integer over 2^(53 - _E_MIN)
            out[j] = float(Fraction(total, 1 << (53 - _E_MIN)))
        return out


def loss_chunk_sums(values) -> ExactColumnSums:
    """Validation flags and exact column sums of one chunk of rows (an (r, m) array).

    Rows with a flag still count in ``n``; the sums are then not used (the release refuses).
    """
    arr = np.array(values, dtype=float)  # a copy: the last column is set below
    rows, m = arr.shape
    if m:
        arr[:, -1] = 0.0  # the trivial answer, by construction (never read)
    bad_range = bool(arr.size) and not bool(np.all((arr >= 0.0) & (arr <= 1.0)))
    flags = np.array(
        [
            bad_range,  # NaN fails both comparisons
            not bad_range and m > 1 and bool(np.any(np.diff(arr, axis=1) > 0.0)),
        ]
    )
    hi = np.zeros((m, _N_EXP), dtype=np.int64)
    lo = np.zeros((m, _N_EXP), dtype=np.int64)
    fixed = np.zeros(m, dtype=np.int64)
    if flags.any():
        return ExactColumnSums(rows, hi, lo, fixed, flags)
    cols = np.arange(m) * _N_EXP
    for start in range(0, rows, _ROWS):
        part = arr[start : start + _ROWS]
        scaled = part * float(2**_FIXED)  # exact: a power of 2, no overflow in [0, 2^30]
        if np.array_equal(scaled, np.floor(scaled)):  # every loss a multiple of 2^-30
            fixed += scaled.astype(np.int64).sum(axis=0)  # < 2^26 rows * 2^30: exact
            continue
        mant, expo = np.frexp(part)
        big = np.ldexp(mant, 53).astype(np.int64)  # M < 2^53, exact
        index = (cols[None, :] + (expo - _E_MIN)).ravel()
        for out, half in ((hi, big >> 26), (lo, big & ((1 << 26) - 1))):
            w = np.bincount(index, weights=half.ravel().astype(float), minlength=m * _N_EXP)
            out += w.reshape(m, _N_EXP).astype(np.int64)  # each sum < 2^53: exact
    return ExactColumnSums(rows, hi, lo, fixed, flags)


def merge_column_sums(parts: list) -> ExactColumnSums:
    """Add the exact sums of disjoint chunks (integers: any order, any chunking)."""
    first = parts[0]
    hi, lo, fixed, flags = first.hi.copy(), first.lo.copy(), first.fixed.copy(), first.flags.copy()
    for p in parts[1:]:
        hi += p.hi
        lo += p.lo
        fixed += p.fixed
        flags |= p.flags
    return ExactColumnSums(sum(p.n for p in parts), hi, lo, fixed, flags)
