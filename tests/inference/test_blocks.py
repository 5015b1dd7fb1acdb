"""The block-wise statistics shared by the in-memory and Dask paths (dpuq.inference._blocks)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpuq.inference import _blocks


def _arrangement_pvalue(monkeypatch, within_block_sorted: bool) -> float:
    """Chi-square p-value of the label arrangements of 4500 plans against uniform.

    Blocks of 4 positions, n = 6, s = 2 subsets of b = 2, 2 left over:
    6!/(2! 2! 2!) = 90 equally likely arrangements for a uniformly random partition.
    """
    monkeypatch.setattr(_blocks, "BLOCK", 4)
    rng = np.random.default_rng(2024)
    seen: dict[bytes, int] = {}
    for _ in range(4500):
        plan = _blocks.partition_plan(6, 2, 2, rng)
        parts = [plan.block_labels(j) for j in range(plan.counts.shape[0])]
        if within_block_sorted:
            parts = [np.sort(p) for p in parts]
        key = np.concatenate(parts).astype(np.int8).tobytes()
        seen[key] = seen.get(key, 0) + 1
    expected = math.factorial(6) // 8
    counts = np.array(list(seen.values()) + [0] * (expected - len(seen)))
    return float(stats.chisquare(counts).pvalue)


def test_partition_is_uniform_across_blocks(monkeypatch):
    """Every arrangement of the labels is equally likely (false-positive rate 1e-4)."""
    assert _arrangement_pvalue(monkeypatch, within_block_sorted=False) > 1e-4


def test_partition_test_detects_a_biased_partition(monkeypatch):
    """Negative control: sorting labels within blocks (right compositions, wrong arrangement)
    must fail the same test."""
    assert _arrangement_pvalue(monkeypatch, within_block_sorted=True) < 1e-4


def test_sorted_subsets_are_a_partition():
    x = np.random.default_rng(3).normal(size=1000)
    plan = _blocks.partition_plan(1000, 7, 142, np.random.default_rng(0))
    subs = _blocks.sorted_subsets(x, plan)
    assert subs.shape == (7, 142)
    assert np.all(np.diff(subs, axis=1) >= 0)
    assert np.unique(subs).size == subs.size and np.isin(subs, x).all()


@pytest.mark.parametrize("n", [1, 5, 3 * _blocks.BLOCK // 2])
def test_blocked_mean_variance_close_to_numpy(n):
    x = np.random.default_rng(n).uniform(-3, 7, size=n)
    mean, var = _blocks.blocked_mean_variance(x)
    assert mean == pytest.approx(x.mean(), rel=1e-12, abs=1e-12)
    assert var == pytest.approx(x.var(), rel=1e-10, abs=1e-12)


def test_tile_moments_do_not_depend_on_other_rows():
    rng = np.random.default_rng(4)
    rows = rng.uniform(size=(5, 50))
    w = rng.multinomial(200, np.full(50, 0.02), size=30).astype(float)
    with _blocks.one_blas_thread():
        a = _blocks.tile_moments(rows, w, 8, 200)
        b = _blocks.tile_moments(rows[2:4], w, 8, 200)
    np.testing.assert_array_equal(a[0][2:4], b[0])
    np.testing.assert_array_equal(a[1][2:4], b[1])
