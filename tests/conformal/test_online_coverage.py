"""Slow suite: long-run coverage of the private online tracker over adversarial and drifting
streams, the noise bound's validity by simulation, and set sizes against non-private ACI on a
synthetic drifting classifier (a stream that is not in the docs)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import dpuq
from dpuq.mechanisms.online_counts import _block_noise, _OnlineTracker, noise_max_bound

pytestmark = pytest.mark.slow

T = 10_000


def _streams(rng):
    frac = np.linspace(0, 1, T)
    return {
        "sudden shift": np.where(frac < 0.5, rng.uniform(0, 0.3, T), rng.uniform(0.5, 1.0, T)),
        "sawtooth": np.clip(rng.beta(1, 5, T) + 0.6 * ((frac * 7) % 1), 0, 1),
        "alternating extremes": np.tile([0.0, 1.0], T // 2),
        "all ones": np.ones(T),
        "all zeros": np.zeros(T),
        "slow drift": np.clip(rng.beta(1, 6, T) * np.linspace(1, 4, T), 0, 1),
    }


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_long_run_coverage_within_the_bound_on_every_stream(epsilon):
    rng = np.random.default_rng(0)
    bound = dpuq.online_coverage_bound(T, 0.1, epsilon, beta=1e-3)
    assert bound < (0.03 if epsilon < 1 else 0.02)  # informative at T = 10^4
    for name, s in _streams(rng).items():
        for seed in range(10):
            t = dpuq.online_conformal_thresholds(s, 0.1, epsilon, random_state=seed)
            dev = abs(np.mean(s > t) - 0.1)
            assert dev <= bound, (name, seed, dev, bound)


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_adaptive_adversary_who_sees_every_threshold(epsilon):
    """The adversary errs whenever it can, but only every third person (else it covers):
    the bound holds for adaptively chosen sequences too."""
    bound = dpuq.online_coverage_bound(T, 0.1, epsilon, beta=1e-3)
    for seed in range(3):
        tr = _OnlineTracker(alpha=0.1, epsilon=epsilon, step=0.01, block_size=
                           dpuq.online_block_size(0.1, epsilon), initial=0.5)  # fmt: skip
        errs = np.empty(T, dtype=bool)
        for i in range(T):
            t = tr.threshold
            s = (1.0 if t < 1.0 else 0.0) if i % 3 == 0 else 0.0
            tr.observe(np.array([s]), root=seed)
            errs[i] = s > t
        assert abs(errs.mean() - 0.1) <= bound


def test_noise_max_bound_holds_by_simulation():
    """P(max_k |N_k| >= x_β) <= β: 400 simulated noise paths of 200 blocks at β = 0.05; the
    number of exceedances is checked with a binomial test at level 0.001."""
    k, beta, reps = 200, 0.05, 400
    x = noise_max_bound(1.0, k, beta)
    hits = 0
    for r in range(reps):
        path = np.cumsum(_block_noise(r, 0, k, 1.0))
        hits += bool(np.max(np.abs(path)) >= x)
    assert stats.binomtest(hits, reps, beta, alternative="greater").pvalue > 1e-3


def _synthetic_classifier_stream(seed):
    """Ten classes; the model's logits lose their margin over time (softer, more confused),
    and class priors shift: scores drift upwards (not digits; not used to set defaults)."""
    rng = np.random.default_rng(seed)
    frac = np.linspace(0, 1, T)
    prior = np.exp(np.outer(1 - frac, np.zeros(10)) + np.outer(frac, np.linspace(0, 2, 10)))
    prior /= prior.sum(axis=1, keepdims=True)
    y = (prior.cumsum(axis=1) > rng.random((T, 1))).argmax(axis=1)
    margin = 4.0 - 3.0 * frac
    logits = rng.normal(size=(T, 10)) * 1.2
    logits[np.arange(T), y] += margin
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    S = 1.0 - p
    return S, S[np.arange(T), y]


@pytest.mark.parametrize("epsilon", [1.0, 3.0])
def test_sizes_against_nonprivate_aci_on_a_synthetic_drift(epsilon):
    S, s = _synthetic_classifier_stream(7)
    t_aci = dpuq.aci_thresholds(s, 0.1, gamma=0.005)
    size_aci = np.mean(np.sum(S <= t_aci[:, None], axis=1))
    fixed = dpuq.split_conformal_threshold(s[:1000], 0.1)
    assert np.mean(s[1000:] <= fixed) < 0.85  # a real drift
    sizes, covs = [], []
    for seed in range(5):
        t = dpuq.online_conformal_thresholds(s, 0.1, epsilon, random_state=seed)
        sizes.append(np.mean(np.sum(S <= t[:, None], axis=1)))
        covs.append(np.mean(s <= t))
    assert abs(np.mean(covs) - 0.9) < 0.02
    assert np.mean(sizes) <= 1.15 * size_aci
