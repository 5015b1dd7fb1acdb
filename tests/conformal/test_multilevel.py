"""Several levels from one release: the joint mechanism's privacy by neighbour enumeration, each
level's lemma and coverage exactly on small cases (with negative controls), the sampler against
the exact law, coverage over random splits, and the calibrate(alpha=[...]) API."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import dpuq
from dpuq.conformal.multilevel import joint_plan
from dpuq.mechanisms.joint_quantiles import (
    joint_quantiles,
    joint_quantiles_log_distribution,
    joint_union_sizes,
)
from dpuq.planning.levels import _cert


def _compositions(total: int, m: int) -> np.ndarray:
    rows = []
    for cuts in itertools.combinations(range(total + m - 1), m - 1):
        rows.append(np.diff(np.concatenate(([-1], cuts, [total + m - 1]))) - 1)
    return np.array(rows)


def _ranks(n, n_levels):
    return [np.linspace(0.5, n, n_levels), np.linspace(0.4 * n, 0.9 * n, n_levels),
            np.full(n_levels, 0.7 * n)]  # fmt: skip


def _lemma_excess(n, m, n_levels, eps, sizes) -> float:
    """max over count vectors, levels and k of P(C_{t_l} < k) - R/(1+R), R = sizes[l] e^..."""
    worst = -1.0
    for ranks in _ranks(n, n_levels):
        for counts in _compositions(n, m):
            tuples, lp = joint_quantiles_log_distribution(counts, ranks, eps)
            p = np.exp(lp)
            c = np.cumsum(counts)
            for level in range(n_levels):
                for k in range(1, n + 1):
                    r = sizes[level] * math.exp(-(eps / 2) * (ranks[level] - k + 1))
                    worst = max(worst, p[c[tuples[:, level]] < k].sum() - r / (1 + r))
    return worst


@pytest.mark.parametrize("n_levels", [2, 3])
@pytest.mark.parametrize("n", [3, 5])
def test_each_level_lemma_holds_for_every_count_vector(n, n_levels):
    for m, eps in itertools.product((2, 3, 4), (0.5, 2.0, 6.0)):
        assert _lemma_excess(n, m, n_levels, eps, joint_union_sizes(m, n_levels)) <= 1e-12


def test_negative_control_single_level_union_size_is_caught():
    # the single-level bound (m - 1 bins below) does not hold for the joint release
    worst = max(_lemma_excess(5, m, 3, eps, [m - 1] * 3) for m in (3, 4) for eps in (2.0, 6.0))
    assert worst > 0.01


def _worst_urn_coverage(n, m, ranks, eps) -> np.ndarray:
    """Per level: min over urns of n + 1 bin labels of P(test bin <= t_l), exactly."""
    n_levels = len(ranks)
    worst = np.ones(n_levels)
    for urn in _compositions(n + 1, m):
        cover = np.zeros(n_levels)
        for b in np.flatnonzero(urn):
            cal = urn.copy()
            cal[b] -= 1
            tuples, lp = joint_quantiles_log_distribution(cal, ranks, eps)
            p = np.exp(lp)
            cover += (
                urn[b] / (n + 1) * np.array([p[tuples[:, lv] >= b].sum() for lv in range(n_levels)])
            )
        worst = np.minimum(worst, cover)
    return worst


@pytest.mark.parametrize("n", [4, 7])
def test_every_urn_covers_each_level_certificate(n):
    for m, eps in itertools.product((2, 3), (1.0, 6.0)):
        sizes = joint_union_sizes(m, 2)
        for ranks in _ranks(n, 2):
            got = _worst_urn_coverage(n, m, ranks, eps)
            certs = [_cert(n, ranks[lv], eps, sizes[lv] + 1) for lv in range(2)]
            assert np.all(got >= np.array(certs) - 1e-12), (n, m, eps, ranks)


def test_planned_levels_cover_over_all_urns_and_uninflated_ranks_fail():
    n, eps, m, alphas = 9, 8.0, 3, [0.3, 0.45]
    _, level, _ = joint_plan(n, alphas, eps, m)
    order = np.argsort(level)
    ranks = level[order] * n
    got = _worst_urn_coverage(n, m, ranks, eps)
    assert np.all(got >= 1 - np.array(alphas)[order])
    # negative control: the non-private ranks (1 - alpha)(n + 1) leave both levels under target
    alphas = np.array([0.4, 0.2])
    plain = (1 - alphas) * (n + 1)
    assert np.all(_worst_urn_coverage(n, 5, plain, 1.0) < 1 - alphas)


def _worst_log_ratio(n, m, ranks, eps_law):
    worst = 0.0
    laws = {
        tuple(c): joint_quantiles_log_distribution(c, ranks, eps_law)[1]
        for c in _compositions(n, m)
    }
    for c, lp in laws.items():
        for a, b in itertools.permutations(range(m), 2):  # move one person from bin a to bin b
            if c[a]:
                d = list(c)
                d[a] -= 1
                d[b] += 1
                worst = max(worst, float(np.abs(lp - laws[tuple(d)]).max()))
    return worst


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_privacy_by_neighbour_enumeration(eps):
    for n, m, n_levels in [(4, 3, 2), (5, 4, 3), (3, 4, 2)]:
        for ranks in _ranks(n, n_levels):
            worst = _worst_log_ratio(n, m, ranks, eps)
            assert worst <= eps + 1e-9


def test_privacy_enumeration_catches_a_doubled_epsilon():
    assert _worst_log_ratio(5, 4, np.array([2.0, 4.0]), 2.0) > 1.0 + 1e-6


def test_sampler_matches_exact_law():
    counts, ranks, eps = np.array([2, 0, 3, 1]), [1.5, 4.0, 5.5], 1.5
    tuples, lp = joint_quantiles_log_distribution(counts, ranks, eps)
    rng = np.random.default_rng(0)
    index = {tuple(t): i for i, t in enumerate(tuples)}
    draws = [index[tuple(joint_quantiles(counts, ranks, eps, rng))] for _ in range(4000)]
    freq = np.bincount(draws, minlength=len(tuples)) / len(draws)
    assert np.abs(freq - np.exp(lp)).max() < 0.025  # 4.7 SE at the largest p (0.13)


def test_calibrate_several_levels_api(tmp_path):
    scores = np.random.default_rng(0).uniform(size=1000)
    ledger = dpuq.Ledger(tmp_path / "l.sqlite")
    ledger.create_budget("d", 2.0)
    alphas = [0.05, 0.2, 0.1]
    cal = dpuq.calibrate(
        scores, alpha=alphas, epsilon=1.0, random_state=0, ledger=ledger, dataset="d"
    )
    assert cal.threshold.shape == (3,) and cal.alpha == tuple(alphas)
    assert cal.threshold[0] >= cal.threshold[2] >= cal.threshold[1]  # nested
    assert np.all(cal.certified_coverage >= 1 - np.array(alphas))
    assert ledger.status("d").spent_epsilon == pytest.approx(1.0)
    assert cal.privacy_report.epsilon == 1.0 and cal.to_dict()["alpha"] == alphas
    assert np.all(np.abs(cal.threshold - (1 - np.array(alphas))) < 0.06)


def test_calibrate_several_levels_bad_input():
    s = np.random.default_rng(0).uniform(size=200)
    with pytest.raises(ValueError, match="repeat"):
        dpuq.calibrate(s, alpha=[0.1, 0.1], epsilon=1.0)
    with pytest.raises(ValueError, match="certified"):
        dpuq.calibrate(s, alpha=[0.1, 0.2], epsilon=1.0, method="paper")
    with pytest.raises(ValueError, match="alpha"):
        dpuq.calibrate(s, alpha=[0.1, 0.7], epsilon=1.0)
    with pytest.raises(ValueError, match="too many ordered tuples"):  # before any charge
        dpuq.calibrate(s, alpha=list(np.linspace(0.05, 0.5, 12)), epsilon=1.0, n_bins=5000)


def test_uninformative_level_is_full_and_warned():
    s = np.random.default_rng(0).uniform(size=60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = dpuq.calibrate(s, alpha=[0.01, 0.3], epsilon=1.0, random_state=0)
    assert cal.threshold[0] == 1.0 and not cal.informative[0] and cal.informative[1]
    assert [w.category for w in caught] == [dpuq.UninformativeReleaseWarning]


@pytest.mark.slow
def test_coverage_over_random_splits():
    rng = np.random.default_rng(5)
    alphas, n, splits = np.array([0.05, 0.1, 0.2]), 300, 400
    pool = rng.beta(2, 5, size=20000)
    cover = np.zeros((splits, 3))
    for r in range(splits):
        idx = rng.permutation(pool.size)
        cal = dpuq.calibrate(pool[idx[:n]], alpha=list(alphas), epsilon=1.0, random_state=rng)
        cover[r] = (pool[idx[n:], None] <= cal.threshold[None, :]).mean(axis=0)
    se = cover.std(axis=0, ddof=1) / np.sqrt(splits)
    assert np.all(cover.mean(axis=0) >= 1 - alphas - 3 * se)
