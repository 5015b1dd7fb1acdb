"""auto_n_bins above n = 1e5: the windowed simulation of uniform samples (exact in law)."""

import math

import numpy as np
import pytest

import dpuq
from dpuq.planning._bin_simulation import (
    _expected_threshold,
    _FullUniforms,
    _NotCovered,
    _simulated_uniforms,
    _WindowedUniforms,
)
from dpuq.planning.bins import _bin_grid
from dpuq.planning.levels import _gamma_star, _level


def plan_for(n, alpha, eps):
    out = []
    for m in _bin_grid(n, eps):
        q = _level(n, alpha, eps, int(m), _gamma_star(n, alpha, eps, int(m)))
        if q < 1:
            out.append((int(m), q, eps))
    return out


def test_full_vectors_up_to_1e5_windows_above():
    assert isinstance(_simulated_uniforms(100_000, plan_for(100_000, 0.1, 1.0)), _FullUniforms)
    sims = _simulated_uniforms(100_001, plan_for(100_001, 0.1, 1.0))
    assert isinstance(sims, _WindowedUniforms)


def test_counts_have_the_binomial_law():
    """F(x) ~ Bin(n, x) at sparse points; F(b) - F(a) ~ Bin(n, b - a) across the dense part."""
    n = 10**6
    sims = _WindowedUniforms(n, np.array([0.3, 0.95]), (0.899, 0.901))
    edges = np.array([0.3, 0.899, 0.8995, 0.9, 0.901, 0.95])
    c = sims.counts(edges).astype(float)
    assert c.shape == (32, 6)
    assert np.all(np.diff(c, axis=1) >= 0)
    z = []
    for col, x in enumerate(edges):
        z.append((c[:, col].mean() - n * x) / math.sqrt(n * x * (1 - x) / 32))
    inside = c[:, 3] - c[:, 1]  # (0.899, 0.9]
    z.append((inside.mean() - n * 0.001) / math.sqrt(n * 0.001 * 0.999 / 32))
    assert np.max(np.abs(z)) < 4.0  # 7 two-sided z-tests, false-positive rate < 5e-4


def test_asking_outside_the_windows_raises():
    sims = _WindowedUniforms(200_000, np.array([0.5]), (0.89, 0.91))
    with pytest.raises(_NotCovered):
        sims.counts(np.array([0.7]))
    with pytest.raises(_NotCovered):
        _WindowedUniforms(200_000, np.array([0.5]), None).counts(np.array([0.9]))


def test_windowed_and_full_expected_thresholds_agree():
    n, alpha, eps = 150_000, 0.1, 1.0
    plan = [p for p in plan_for(n, alpha, eps) if p[0] >= 2000]
    windowed = _simulated_uniforms(n, plan_for(n, alpha, eps))
    full = _FullUniforms(n)
    # for m >= 2000 the released threshold is close to the sample q-quantile: its mean over 32
    # vectors has sd about sqrt(q(1-q)/n / 32); two independent estimates differ by < 5 sd
    sd = math.sqrt(0.9 * 0.1 / n / 32)
    for m, q, e in plan[::5]:
        diff = _expected_threshold(windowed, q, e, m) - _expected_threshold(full, q, e, m)
        assert abs(diff) < 5 * math.sqrt(2) * sd + 1.0 / m


def test_auto_bins_at_a_million_is_deterministic_and_informative():
    m, gamma = dpuq.auto_n_bins(10**6, 0.1, 1.0, method="paper")
    assert (m, gamma) == dpuq.auto_n_bins(10**6, 0.1, 1.0, method="paper")
    assert m in _bin_grid(10**6, 1.0)
    assert dpuq.inflated_level(10**6, 0.1, 1.0, m, gamma) < 0.901
