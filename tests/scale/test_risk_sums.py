"""Risk control on Dask (issue 38): exact chunk-wise loss sums, the same release as in memory."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpuq
from dpuq.mechanisms.risk import check_losses, loss_sums
from dpuq.scale.sums import loss_chunk_sums, merge_column_sums

da = pytest.importorskip(
    "dask.array", reason="Dask support needs the extra: pip install dpuq[dask]"
)
dask = pytest.importorskip("dask")


def _losses(n, m, rng):
    """Nonincreasing rows in [0, 1], 0 last, with awkward floats (tiny, subnormal, 1.0)."""
    raw = rng.uniform(size=(n, m - 1)) ** rng.integers(1, 40, size=(n, 1))
    raw[rng.uniform(size=raw.shape) < 0.05] = 5e-324
    raw[rng.uniform(size=raw.shape) < 0.05] = 1.0
    raw[::7, 0] = 1e-300
    rows = -np.sort(-raw, axis=1)
    return np.concatenate([rows, np.zeros((n, 1))], axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunk_sums_round_to_fsum_whatever_the_chunks(seed):
    rng = np.random.default_rng(seed)
    x = _losses(3_001, 6, rng)
    want = loss_sums(x)
    assert want.tolist() == [math.fsum(c) for c in x.T]
    for cuts in ([1_500], [1, 2, 1_000, 2_999], list(range(100, 3_000, 97))):
        parts = [loss_chunk_sums(p) for p in np.split(x, cuts)]
        got = merge_column_sums(parts[::-1]).rounded()  # any order
        assert got.tolist() == want.tolist()
    # a naive float sum of chunk sums differs somewhere (the test can fail)
    naive = sum(p.sum(axis=0) for p in np.split(x, list(range(100, 3_000, 97))))
    assert not np.array_equal(naive, want) or not np.array_equal(x.sum(axis=0), want)


def test_fast_path_of_dyadic_losses_mixes_with_the_general_one():
    """0/1 and quarter losses take the int64 path, chunk by chunk; a chunk with one awkward
    value takes the general path; every mix rounds to fsum."""
    rng = np.random.default_rng(7)
    u = rng.uniform(size=5_000)
    x = np.stack([(u > t) * 1.0 for t in (0.0, 0.3, 0.6)] + [np.floor(4 * u) / 4 * (u < 0.9)], 1)
    x = np.concatenate([-np.sort(-x, axis=1), np.zeros((len(u), 1))], axis=1)
    x[4_321, :2] = [0.1 + 1e-17, 0.1]  # not a multiple of 2^-30
    want = [math.fsum(c) for c in x.T]
    for cuts in ([2_500], list(range(250, 5_000, 250)), [4_321, 4_322]):
        parts = [loss_chunk_sums(p) for p in np.split(x, cuts)]
        merged = merge_column_sums(parts)
        assert merged.rounded().tolist() == want
        assert merged.fixed.any() and merged.hi.any()  # both paths were taken


@pytest.mark.parametrize(
    "spoil",
    [
        lambda x: x.__setitem__((5, 0), np.nan),
        lambda x: x.__setitem__((5, 0), 1.5),
        lambda x: x.__setitem__((7, 2), 0.9),  # an increase along the row
    ],
)
def test_dask_loss_errors_equal_memory_before_the_charge(spoil, tmp_path):
    x = _losses(400, 4, np.random.default_rng(3))
    spoil(x)
    with pytest.raises(ValueError) as want:
        check_losses(x)
    ledger = dpuq.Ledger(tmp_path / "l.db")
    ledger.create_budget("cal", epsilon=2.0)
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError) as got:
        dpuq.risk_control(
            da.from_array(x, chunks=(64, 2)), alpha=0.1, epsilon=1.0, ledger=ledger, dataset="cal"
        )
    assert str(got.value) == str(want.value)
    assert ledger.status("cal").spent_epsilon == 0.0


def test_risk_control_on_dask_equals_memory_threads():
    x = _losses(20_000, 11, np.random.default_rng(4))
    lam = np.linspace(0.0, 1.0, 11)
    kw = {"alpha": 0.2, "epsilon": 1.0, "lambdas": lam}
    with dask.config.set(scheduler="threads"):
        for seed in range(4):
            ref = dpuq.risk_control(x, **kw, random_state=seed)
            got = dpuq.risk_control(da.from_array(x, chunks=(3_333, 4)), **kw, random_state=seed)
            assert got == ref


def test_the_last_column_is_trivial_on_dask_as_in_memory():
    """Issue 34: the last grid value is the trivial answer whatever the data, on Dask too
    (a positive loss there is neither an error nor read)."""
    x = _losses(2_000, 6, np.random.default_rng(5))
    x[::3, -1] = 0.7  # ignored: taken as 0
    kw = {"alpha": 0.2, "epsilon": 1.0, "lambdas": np.linspace(0.0, 1.0, 6)}
    clean = x.copy()
    clean[:, -1] = 0.0
    with dask.config.set(scheduler="synchronous"):
        for seed in range(3):
            ref = dpuq.risk_control(clean, **kw, random_state=seed)
            assert dpuq.risk_control(x, **kw, random_state=seed) == ref
            got = dpuq.risk_control(da.from_array(x, chunks=(500, 6)), **kw, random_state=seed)
            assert got == ref
