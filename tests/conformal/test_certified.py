"""The certified method (SPEC A.7): the lemma and the theorem checked exactly, with negative
controls, and the planning helpers (certificate, level, bins, sizes).

Exact checks use the library's own utility (:func:`dpuq.mechanisms.quantile._log_weights`) on
every count vector (lemma) and every urn, i.e. every multiset of n + 1 bin labels in a uniformly
random order (theorem): every exchangeable law of the binned scores is a mixture of urns, and
coverage only depends on the bins, so these checks cover all exchangeable laws.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.special import expit, logsumexp

import dpuq
from dpuq.mechanisms.quantile import _log_weights
from dpuq.planning.levels import _cert


def _compositions(total: int, m: int) -> np.ndarray:
    """All vectors of m non-negative integers summing to ``total`` (rows)."""
    rows = []
    for cuts in itertools.combinations(range(total + m - 1), m - 1):
        rows.append(np.diff(np.concatenate(([-1], cuts, [total + m - 1]))) - 1)
    return np.array(rows)


def _law(counts: np.ndarray, rho: float, eps: float, clip: bool = True) -> np.ndarray:
    """Exact release law (rows) from bin counts (rows), through the library's utility."""
    n = int(counts[0].sum())
    at_or_below = np.cumsum(counts, axis=1).astype(float)
    below = at_or_below - counts
    if clip:
        lw = _log_weights(below, at_or_below, n, rho / n if n else 0.0, eps, "rank")
    else:  # the wrong unclipped form: -max(L_j - rho, U_j - (n - rho))
        lw = -0.5 * eps * np.maximum(below - rho, rho - at_or_below)
    return np.exp(lw - logsumexp(lw, axis=1, keepdims=True))


def _r(k, rho, eps, m):
    return (m - 1) * np.exp(-(eps / 2) * (rho - k + 1))


def _lemma_excess(n, m, rho, eps, clip=True) -> float:
    """max over count vectors and k of P(K < k) - r_k / (1 + r_k) (<= 0 when the lemma holds)."""
    counts = _compositions(n, m)
    p = _law(counts, rho, eps, clip)
    c = np.cumsum(counts, axis=1)
    k = np.arange(1, n + 1)
    below_k = c[:, None, :] <= (k - 1)[None, :, None]  # (vectors, k, bins)
    p_less = (below_k * p[:, None, :]).sum(axis=2)
    r = _r(k, rho, eps, m)
    return float((p_less - r / (1 + r)).max())


def _worst_urn_coverage(n, m, rho, eps) -> float:
    """min over urns of n + 1 bin labels of P(b(s_{n+1}) <= J), exactly."""
    urns = _compositions(n + 1, m)
    cover = np.zeros(len(urns))
    for b in range(m):  # the test point's bin is b with probability a_b / (n + 1)
        has = urns[:, b] > 0
        cal = urns[has].copy()
        cal[:, b] -= 1
        p = _law(cal, rho, eps)
        cover[has] += urns[has, b] / (n + 1) * p[:, b:].sum(axis=1)
    return float(cover.min())


class TestLemma:
    @pytest.mark.parametrize("n", range(1, 8))
    def test_holds_for_every_count_vector(self, n):
        for m, eps in itertools.product((2, 3, 4), (0.3, 1.0, 4.0)):
            for rho in np.linspace(0, n, 9):
                assert _lemma_excess(n, m, rho, eps) <= 1e-12, (n, m, rho, eps)

    def test_unclipped_utility_is_caught(self):
        # Negative control: without the clip at 0 the utility can be positive and the lemma
        # fails; the same exact check finds it.
        worst = max(
            _lemma_excess(n, m, rho, 1.0, clip=False)
            for n in range(2, 7)
            for m in (2, 3, 4)
            for rho in np.linspace(0, n, 7)
        )
        assert worst > 0.05


class TestTheorem:
    @pytest.mark.parametrize("n", range(1, 13))
    def test_every_urn_covers_at_least_the_certificate(self, n):
        for m, eps in itertools.product((2, 3, 5), (0.5, 2.0, 8.0)):
            for rho in np.linspace(0, n, 5):
                got = _worst_urn_coverage(n, m, rho, eps)
                assert got >= _cert(n, rho, eps, m) - 1e-12, (n, m, rho, eps)

    @pytest.mark.parametrize(
        ("n", "alpha", "eps", "m"),
        [
            (9, 0.2, 8.0, 4),
            (12, 0.1, 8.0, 3),
            (10, 0.3, 5.0, 2),
            (12, 0.25, 5.0, 4),
            (8, 0.5, 1, 2),
        ],
    )
    def test_certified_level_covers_over_all_urns(self, n, alpha, eps, m):
        level = dpuq.certified_level(n, alpha, eps, m)
        assert math.isfinite(level)
        assert _worst_urn_coverage(n, m, level * n, eps) >= 1 - alpha

    def test_negative_control_uninflated_rank_is_caught(self):
        # rho = (1 - alpha)(n + 1), the non-private rank without the inflation: some urn
        # covers less than 1 - alpha, and the exact check catches it.
        n, alpha, eps, m = 9, 0.2, 1.0, 4
        assert _worst_urn_coverage(n, m, (1 - alpha) * (n + 1), eps) < 1 - alpha


class TestCertificate:
    @pytest.mark.parametrize(
        ("n", "rho", "eps", "m"),
        [(10, 8.3, 1.0, 5), (1000, 912.3, 1.0, 250), (500, 480.0, 0.1, 30), (3000, 2999.0, 9, 2)],
    )
    def test_matches_the_formula(self, n, rho, eps, m):
        k = np.arange(1, n + 1)
        direct = expit((eps / 2) * (rho - k + 1) - math.log(m - 1)).sum() / (n + 1)
        got = dpuq.coverage_certificate(n, rho / n, eps, m)
        assert direct - 1e-12 <= got <= direct  # rounded down, by at most float error

    def test_increasing_and_bounded(self):
        levels = np.linspace(0, 1, 101)
        c = [dpuq.coverage_certificate(500, q, 1.0, 100) for q in levels]
        assert np.all(np.diff(c) > 0) and c[-1] < 500 / 501
        assert dpuq.coverage_certificate(500, 1.2, 1.0, 100) == 1.0  # constant release

    @pytest.mark.parametrize(
        ("n", "alpha", "eps", "m"), [(1000, 0.1, 1.0, 187), (200, 0.05, 2, 10)]
    )
    def test_level_is_the_smallest_certified(self, n, alpha, eps, m):
        level = dpuq.certified_level(n, alpha, eps, m)
        assert dpuq.coverage_certificate(n, level, eps, m) >= 1 - alpha
        assert dpuq.coverage_certificate(n, level - 1e-6, eps, m) < 1 - alpha
        # the rough form (1 - a)(n + 1) + (2/eps) log(m - 1) - 1/2, within a rank
        rough = (1 - alpha) * (n + 1) + 2 / eps * math.log(m - 1) - 0.5
        assert abs(level * n - rough) < 1.0

    def test_no_certified_level_is_infinite(self):
        assert dpuq.certified_level(20, 0.1, 1.0, 10) == math.inf


class TestPlanning:
    def test_auto_bins_deterministic_and_fine(self):
        m, gamma = dpuq.auto_n_bins(1000, 0.1, 1.0)
        assert gamma is None and (m, gamma) == dpuq.auto_n_bins(1000, 0.1, 1.0)
        assert m > 4 * dpuq.auto_n_bins(1000, 0.1, 1.0, method="paper")[0]  # finer than paper
        assert dpuq.auto_n_bins(30000, 0.1, 1.0)[0] > 1000  # large n: fast (window), no sim

    @pytest.mark.parametrize(("n", "eps"), [(100, 100.0), (10**6, 1e-3), (10**9, 1.0), (50, 1.0)])
    def test_auto_bins_extreme_settings(self, n, eps):
        # no huge grids when epsilon is large (ties within 0.05 ranks go to the smaller m);
        # informative m whenever one exists
        m, _ = dpuq.auto_n_bins(n, 0.1, eps)
        assert 10 <= m <= max(10_000, n)
        informative = math.isfinite(dpuq.certified_level(n, 0.1, eps, 10))
        assert math.isfinite(dpuq.certified_level(n, 0.1, eps, m)) == informative

    def test_auto_bins_beats_other_bins_on_fresh_uniform_scores(self):
        n, a, e = 1000, 0.1, 1.0
        rng = np.random.default_rng(5)
        vectors = rng.uniform(size=(32, n))

        def expected(m):
            lvl = dpuq.certified_level(n, a, e, m)
            return np.mean([p @ t for t, p in (dpuq.private_quantile_distribution(v, lvl, e, m)
                                                for v in vectors)])  # fmt: skip

        m_star, _ = dpuq.auto_n_bins(n, a, e)
        best = expected(m_star)
        assert best <= min(expected(10), expected(40), expected(2000)) + 1e-3

    @pytest.mark.parametrize(("a", "e"), [(0.1, 1.0), (0.05, 0.5), (0.2, 8.0)])
    def test_min_calibration_size_is_the_boundary(self, a, e):
        n = dpuq.min_calibration_size(a, e)
        assert math.isfinite(dpuq.certified_level(n, a, e, 10))
        assert dpuq.certified_level(n - 1, a, e, 10) == math.inf

    def test_informative_from_sixty_at_epsilon_one(self):
        assert dpuq.min_calibration_size(0.1, 1.0) <= 60
        assert dpuq.min_calibration_size(0.1, 1.0, method="paper") > 100

    def test_min_epsilon(self):
        e = dpuq.min_epsilon(1000, 0.1, 100)
        assert math.isfinite(dpuq.certified_level(1000, 0.1, e, 100))
        assert dpuq.certified_level(1000, 0.1, e * 0.99, 100) == math.inf
        assert dpuq.min_epsilon(9, 0.1) == math.inf  # n/(n+1) <= 1 - alpha

    def test_plan_agrees_with_calibrate(self):
        p = dpuq.planning.plan(1000, 0.1, 1.0)
        cal = dpuq.calibrate(np.linspace(0, 1, 1000), alpha=0.1, epsilon=1.0, random_state=0)
        assert (p.n_bins, p.level, p.certified_coverage) == (
            cal.n_bins, cal.level, cal.certified_coverage)  # fmt: skip
        assert p.baseline < p.expected_threshold < p.baseline + 0.02


class TestCalibrateCertified:
    def test_uninformative_is_constant_and_warning_is_data_free(self):
        messages = []
        for scores in (np.full(30, 0.2), np.random.default_rng(1).uniform(size=30)):
            rng = np.random.default_rng(0)
            state = rng.bit_generator.state
            with pytest.warns(dpuq.UninformativeReleaseWarning, match=r"n >= \d+") as rec:
                cal = dpuq.calibrate(scores, alpha=0.1, epsilon=0.5, random_state=rng)
            assert cal.threshold == 1.0 and not cal.informative and cal.level == math.inf
            assert cal.certified_coverage == 1.0 and not cal.privacy_report.seeded
            assert rng.bit_generator.state == state  # nothing was drawn
            messages.append(str(rec[0].message))
        assert messages[0] == messages[1]  # depends on public settings only

    def test_informative_and_certified(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cal = dpuq.calibrate(np.linspace(0, 1, 60), alpha=0.1, epsilon=1.0, random_state=0)
        assert cal.informative and cal.certified_coverage >= 0.9
        assert "rank utility" in cal.privacy_report.mechanism

    def test_seeded_report_and_fresh_default(self):
        s = np.random.default_rng(2).uniform(size=500)
        assert dpuq.calibrate(s, alpha=0.1, epsilon=1.0, random_state=3).privacy_report.seeded
        assert not dpuq.calibrate(s, alpha=0.1, epsilon=1.0).privacy_report.seeded
