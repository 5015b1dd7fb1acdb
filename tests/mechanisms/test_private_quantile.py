"""Exact privacy and sampling of the binned private quantile (SPEC A.3 and A.7), both utilities."""

import functools
import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import dpuq
from dpuq.mechanisms.quantile import (
    _row_log_weights,
    bin_edges,
    bin_index,
    private_quantile_from_counts,
)

UTILITIES = ("rank", "weighted")


def _law(utility):
    return functools.partial(dpuq.private_quantile_log_distribution, utility=utility)


def _neighbour_laws(scores, level, epsilon, m):
    """Log-laws of every replace-one neighbour: each score replaced by each bin value."""
    values = np.concatenate(([0.0], bin_edges(m)))  # one value per bin (0 and e_1 share bin 1)
    laws = []
    for i, v in itertools.product(range(scores.size), values):
        nb = scores.copy()
        nb[i] = v
        laws.append(dpuq.private_quantile_log_distribution(nb, level, epsilon, m)[1])
    return np.array(laws)


def _max_log_ratio(scores, level, epsilon, m, law=dpuq.private_quantile_log_distribution):
    base = law(scores, level, epsilon, m)[1]
    return np.abs(_neighbour_laws_with(law, scores, level, epsilon, m) - base).max()


def _neighbour_laws_with(law, scores, level, epsilon, m):
    values = np.concatenate(([0.0], bin_edges(m)))
    out = []
    for i, v in itertools.product(range(scores.size), values):
        nb = scores.copy()
        nb[i] = v
        out.append(law(nb, level, epsilon, m)[1])
    return np.array(out)


def _literal_box_law(scores, level, epsilon, m):
    """The paper's algorithm box taken literally: w_j = u_j/(q(1-q)), no normalisation, <=."""
    edges = bin_edges(m)
    b = bin_index(np.asarray(scores), edges)
    counts = np.bincount(b, minlength=m)
    at_or_below = np.cumsum(counts)
    above = scores.size - at_or_below
    w = np.maximum((1 - level) * at_or_below, level * above) / (level * (1 - level))
    lw = -epsilon * w / 2
    return edges, lw - logsumexp(lw)


def _random_cases(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 61))
        m = int(rng.integers(2, 26))
        level = float(rng.choice([0.5, 0.6, 0.75, 0.9, 0.95, 0.99, 0.999, rng.uniform(0.5, 1)]))
        epsilon = float(rng.choice([0.1, 0.5, 1.0, 3.0, 8.0]))
        # scores on bin values and in between, so that every bin can be hit
        scores = np.where(rng.random(n) < 0.5, rng.integers(0, m + 1, n) / m, rng.uniform(0, 1, n))
        yield scores, level, epsilon, m


class TestExactPrivacy:
    @pytest.mark.parametrize("utility", UTILITIES)
    @pytest.mark.parametrize("case", range(40))
    def test_every_replace_one_neighbour_within_epsilon(self, case, utility):
        scores, level, epsilon, m = list(_random_cases(40, seed=7))[case]
        if utility == "rank":  # any target rank in [0, n], not only the paper's levels
            level = float(np.random.default_rng(case).uniform(0.0, 1.0))
        worst = _max_log_ratio(scores, level, epsilon, m, law=_law(utility))
        assert worst <= epsilon + 1e-9, (scores.size, m, level, epsilon, worst)

    def test_enumeration_catches_a_doubled_exponent(self):
        # Power check: the rank law with exp(ε u) instead of exp(ε u / 2) (a sensitivity of 1/2
        # wrongly assumed) is caught exceeding ε by the same enumeration.
        scores = np.array([0.1, 0.2, 0.3, 0.45, 0.5, 0.6, 0.8, 0.9])
        worst = _max_log_ratio(scores, 0.5, 1.0, 10, law=_law("rank"))
        doubled = _max_log_ratio(scores, 0.5, 2.0, 10, law=_law("rank"))
        assert worst <= 1.0 + 1e-9 < doubled

    def test_literal_algorithm_box_is_caught_leaking(self):
        # The same enumeration detects the leak of the paper's box taken literally.
        scores = np.array([0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 0.95, 1.0, 0.35])
        worst = _max_log_ratio(scores, 0.9, 1.0, 10, law=_literal_box_law)
        assert worst > 2.0  # more than twice the claimed ε = 1

    def test_output_law_sums_to_one_and_is_positive(self):
        scores = np.random.default_rng(0).uniform(size=5000)
        t, lp = dpuq.private_quantile_log_distribution(scores, 0.9, 0.5, 2000)
        assert np.all(np.isfinite(lp))
        assert np.isclose(logsumexp(lp), 0.0)
        assert np.array_equal(t, bin_edges(2000))

    def test_uninformative_level_is_a_point_mass_on_one(self):
        t, p = dpuq.private_quantile_distribution([0.1, 0.2], 1.0, 1.0, 10, utility="weighted")
        assert t.tolist() == [1.0] and p.tolist() == [1.0]
        for utility in UTILITIES:
            assert dpuq.private_quantile([0.1, 0.2], 1.3, 1.0, 10, utility=utility) == 1.0
        # rank: level 1 is the target rank n, still informative
        t, p = dpuq.private_quantile_distribution([0.1, 0.2], 1.0, 1.0, 10, utility="rank")
        assert t.size == 10 and p[1] == p.max()

    def test_bad_utility_and_level_are_errors(self):
        with pytest.raises(ValueError, match="utility"):
            dpuq.private_quantile([0.1], 0.5, 1.0, 10, utility="median")
        with pytest.raises(ValueError, match="level"):
            dpuq.private_quantile([0.1], -0.1, 1.0, 10)


def _sampler_law(scores, q, eps, m, utility):
    """The law the shared sampler draws from (one row), expanded to the m bins, exactly."""
    edges = bin_edges(m)
    bins = bin_index(scores, edges)[None, :]
    lw, grouped = _row_log_weights(bins, m, q, eps, utility)
    if grouped is None:
        return lw[0] - logsumexp(lw[0])
    b, start, length = grouped
    n = scores.size
    expanded = np.full(m, -np.inf)
    first = np.isfinite(lw[0, :n])
    expanded[b[0, first]] = lw[0, :n][first]
    for g in np.flatnonzero(length[0]):
        expanded[start[0, g] : start[0, g] + length[0, g]] = lw[0, n + g] - np.log(length[0, g])
    return expanded - logsumexp(expanded)


class TestOneLaw:
    """Single and batched releases draw from one candidate law: equal to the exact law."""

    @pytest.mark.parametrize("utility", UTILITIES)
    @pytest.mark.parametrize("seed", range(12))
    def test_sampler_law_equals_the_exact_law(self, seed, utility):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 40))
        m = int(rng.choice([2, 3, 7, 4 * (n + 1), 4 * (n + 1) + 1, 300]))  # dense and grouped
        scores = np.where(rng.random(n) < 0.5, rng.integers(0, m + 1, n) / m, rng.uniform(size=n))
        q, eps = float(rng.uniform(0.5, 0.999)), float(rng.uniform(0.05, 10))
        full = dpuq.private_quantile_log_distribution(scores, q, eps, m, utility=utility)[1]
        np.testing.assert_allclose(_sampler_law(scores, q, eps, m, utility), full, atol=1e-12)


class TestSameCode:
    @pytest.mark.parametrize("m", [7, 50, 1000])  # dense and grouped layouts (n = 30)
    @pytest.mark.parametrize("utility", UTILITIES)
    def test_single_batched_counts_and_calibrate_draw_identically(self, m, utility):
        # One sampler: with the same seed, every entry point returns the same draw.
        scores = np.random.default_rng(m).beta(2, 5, size=30)
        counts = np.bincount(bin_index(scores, bin_edges(m)), minlength=m)
        for seed in range(20):
            a = dpuq.private_quantile(scores, 0.8, 1.0, m, random_state=seed, utility=utility)
            b = dpuq.private_quantiles(scores[None, :], 0.8, 1.0, m, seed, utility=utility)[0]
            c = private_quantile_from_counts(counts, 0.8, 1.0, seed, utility=utility)
            assert a == b == c

    def test_calibrate_releases_the_private_quantile_at_its_level(self):
        scores = np.random.default_rng(1).uniform(size=500)
        for method, utility in (("certified", "rank"), ("paper", "weighted")):
            cal = dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, method=method, random_state=3)
            q = dpuq.private_quantile(
                scores, cal.level, 1.0, cal.n_bins, random_state=3, utility=utility
            )
            assert cal.threshold == q


class TestSampler:
    @pytest.mark.parametrize(
        ("level", "epsilon", "m", "utility"),
        [(0.9, 1.0, 20, "weighted"), (0.6, 0.2, 50, "weighted"), (0.8, 0.5, 300, "rank")],
    )
    def test_draws_follow_the_exact_law(self, level, epsilon, m, utility):
        # Chi-square goodness of fit at a fixed false-positive rate of 1e-3; single and
        # batched draws pooled (they share one law).
        rng = np.random.default_rng(2024)
        scores = rng.beta(2, 5, size=40)
        t, p = dpuq.private_quantile_distribution(scores, level, epsilon, m, utility=utility)
        single = [
            dpuq.private_quantile(scores, level, epsilon, m, random_state=rng, utility=utility)
            for _ in range(2000)
        ]
        batched = dpuq.private_quantiles(
            np.tile(scores, (6000, 1)), level, epsilon, m, random_state=rng, utility=utility
        )
        draws = np.concatenate((single, batched))
        observed = np.array([np.sum(draws == v) for v in t])
        assert observed.sum() == draws.size  # every draw is a candidate threshold
        expected = p * draws.size
        keep = expected >= 5
        obs = np.append(observed[keep], observed[~keep].sum())
        exp = np.append(expected[keep], expected[~keep].sum())
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        pvalue = stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue
        assert pvalue > 1e-3

    def test_seeded_draws_reproduce(self):
        scores = np.linspace(0, 1, 300)
        a = dpuq.private_quantile(scores, 0.9, 1.0, 100, random_state=5)
        b = dpuq.private_quantile(scores, 0.9, 1.0, 100, random_state=5)
        assert a == b

    def test_default_randomness_is_fresh(self):
        scores = np.linspace(0, 1, 50)
        draws = {dpuq.private_quantile(scores, 0.7, 0.05, 1000) for _ in range(20)}
        assert len(draws) > 1


class TestBins:
    def test_set_membership_matches_bin_membership(self):
        # S <= e_k exactly when b(S) <= k, including scores on the edges.
        for m in (3, 7, 10, 97, 1000):
            edges = bin_edges(m)
            s = np.concatenate((edges, np.nextafter(edges, 0), np.nextafter(edges, 2), [0.0]))
            s = s[(s >= 0) & (s <= 1)]
            b = bin_index(s, edges)
            for k in range(m):
                np.testing.assert_array_equal(dpuq.prediction_sets(s[None, :], edges[k])[0], b <= k)

    def test_zero_goes_to_the_first_bin(self):
        assert bin_index(np.array([0.0]), bin_edges(5)).tolist() == [0]
