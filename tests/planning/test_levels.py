"""The level q̃, γ*, m* and planning helpers (SPEC A.4), and the split-conformal rank (A.5)."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import dpuq
from dpuq.planning.bins import _bin_grid


def _q(n, a, e, m, g):
    return (n + 1) * (1 - a) / (n * (1 - g * a)) + 2 * math.log(m / (g * a)) / (e * n)


PLANS = [
    (n, a, e, m)
    for n in (50, 500, 5000, 100000)
    for a in (0.01, 0.05, 0.1, 0.3, 0.5)
    for e in (0.1, 1.0, 8.0)
    for m in (10, 1000)
]


class TestInflatedLevel:
    def test_matches_the_formula(self):
        for n, a, e, m in PLANS:
            assert dpuq.inflated_level(n, a, e, m, 0.3) == pytest.approx(_q(n, a, e, m, 0.3))

    def test_is_not_clipped(self):
        assert dpuq.inflated_level(10, 0.1, 0.1, 100, 0.5) > 1.0

    @pytest.mark.parametrize("gamma", [0.0, 1.0, -0.1, float("nan")])
    def test_rejects_gamma_outside_unit_interval(self, gamma):
        with pytest.raises(ValueError, match="gamma"):
            dpuq.inflated_level(100, 0.1, 1.0, 10, gamma)


class TestOptimalGamma:
    @pytest.mark.parametrize(("n", "a", "e", "m"), PLANS)
    def test_no_worse_than_numerical_minimisation(self, n, a, e, m):
        g = dpuq.optimal_gamma(n, a, e, m)
        assert 0 < g < 1
        res = minimize_scalar(
            lambda lg: _q(n, a, e, m, 10.0**lg),
            bounds=(-12, math.log10(1 - 1e-9)),
            method="bounded",
            options={"xatol": 1e-10},
        )
        assert _q(n, a, e, m, g) <= res.fun + 1e-9 * max(1.0, abs(res.fun))

    def test_is_a_stationary_point_when_interior(self):
        n, a, e, m = 1000, 0.1, 1.0, 100
        g = dpuq.optimal_gamma(n, a, e, m)
        h = 1e-7 * g
        assert abs(_q(n, a, e, m, g + h) - _q(n, a, e, m, g - h)) / (2 * h) < 1e-4


class TestAutoBins:
    def test_deterministic(self):
        assert dpuq.auto_n_bins(2000, 0.1, 1.0, method="paper") == dpuq.auto_n_bins(
            2000, 0.1, 1.0, method="paper"
        )

    def test_returns_a_grid_value_and_its_optimal_gamma(self):
        m, g = dpuq.auto_n_bins(3000, 0.05, 2.0, method="paper")
        assert m in _bin_grid(3000, 2.0)
        assert g == dpuq.optimal_gamma(3000, 0.05, 2.0, m)

    def test_beats_extreme_bin_counts_on_fresh_uniform_scores(self):
        # Expected released threshold, exact law, on uniform scores drawn independently of
        # the internal simulation: m* should not be worse than m = 10 or m = 10 n eps.
        n, a, e = 2000, 0.1, 1.0
        m_star, _ = dpuq.auto_n_bins(n, a, e, method="paper")
        rng = np.random.default_rng(99)
        vectors = rng.uniform(size=(64, n))

        def expected(m):
            q = dpuq.inflated_level(n, a, e, m, dpuq.optimal_gamma(n, a, e, m))
            vals = []
            for v in vectors:
                t, p = dpuq.private_quantile_distribution(v, q, e, m, utility="weighted")
                vals.append(float(p @ t))
            return np.mean(vals)

        best = expected(m_star)
        assert best <= expected(10) + 1e-3
        assert best <= expected(10 * n) + 1e-3

    def test_uninformative_settings_give_smallest_grid_value(self):
        m, _ = dpuq.auto_n_bins(20, 0.1, 0.5, method="paper")
        assert m == 10


class TestPlanning:
    @pytest.mark.parametrize(("a", "e"), [(0.1, 1.0), (0.05, 0.5), (0.2, 8.0)])
    def test_min_calibration_size_is_the_boundary(self, a, e):
        n = dpuq.min_calibration_size(a, e, method="paper")
        lvl = lambda k: _q(k, a, e, 10, dpuq.optimal_gamma(k, a, e, 10))  # noqa: E731
        assert lvl(n) < 1 <= lvl(n - 1)

    def test_min_epsilon(self):
        e = dpuq.min_epsilon(1000, 0.1, 100, method="paper")
        assert dpuq.inflated_level(1000, 0.1, e, 100, dpuq.optimal_gamma(1000, 0.1, e, 100)) < 1
        lower = e * 0.99
        g = dpuq.optimal_gamma(1000, 0.1, lower, 100)
        assert dpuq.inflated_level(1000, 0.1, lower, 100, g) >= 1
        assert dpuq.min_epsilon(5, 0.1, method="paper") == math.inf
        assert dpuq.min_epsilon(5, 0.1) == math.inf


class TestUninformativeRelease:
    def test_threshold_one_without_sampling(self):
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        with pytest.warns(dpuq.UninformativeReleaseWarning, match=r"n >= \d+"):
            cal = dpuq.calibrate(
                np.full(30, 0.2), alpha=0.1, epsilon=0.5, method="paper", random_state=rng
            )
        assert cal.threshold == 1.0 and not cal.informative and cal.level >= 1
        assert rng.bit_generator.state == state  # nothing was drawn
        assert cal.privacy_report.notes  # the report says so

    def test_informative_release_does_not_warn(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for method in ("certified", "paper"):
                cal = dpuq.calibrate(
                    np.linspace(0, 1, 2000), alpha=0.1, epsilon=1.0, method=method, random_state=0
                )
                assert cal.informative and cal.level < 1


class TestSplitConformalRank:
    def test_rank_is_exact_for_decimal_alphas(self):
        # k = ceil((n+1)(1 - c/100)) in integer arithmetic, against the library's threshold.
        for c in range(1, 100):
            alpha = c / 100
            for n in range(1, 120):
                k = -((-(n + 1) * (100 - c)) // 100)
                scores = np.arange(1, n + 1) / (n + 1)
                got = dpuq.split_conformal_threshold(scores[::-1], alpha)
                want = math.inf if k > n else scores[k - 1]
                assert got == want, (n, alpha)

    def test_float_alpha_pitfall(self):
        # 0.3 is 0.29999999999999998889... as a float; (9+1)(1-0.3) = 7 exactly.
        assert dpuq.split_conformal_threshold(np.arange(1, 10) / 10, 0.3) == 0.7


def test_planning_package_keeps_every_public_import_path():
    """dpuq.planning was one module: every public name still imports from it and is the
    seam module's own; private helpers are imported from the module that defines them."""
    import dpuq.planning as planning
    from dpuq.planning import bins, joint, levels, online, sizes

    for name in planning.__all__:
        owner = next(m for m in (levels, bins, sizes, joint, online) if hasattr(m, name))
        assert getattr(planning, name) is getattr(owner, name)
    assert planning.plan is sizes.plan and planning.auto_n_bins is bins.auto_n_bins
    with pytest.raises(AttributeError):
        planning._cert  # noqa: B018  (private: dpuq.planning.levels._cert)


@pytest.mark.parametrize(
    "call",
    [
        lambda n: dpuq.min_epsilon(n, 0.5, 91),
        lambda n: dpuq.min_epsilon(n, 0.1),
        lambda n: dpuq.inflated_level(n, 0.1, 1.0, 50, 0.5),
        lambda n: dpuq.optimal_gamma(n, 0.1, 1.0, 50),
        lambda n: dpuq.coverage_upper_bound(n, 0.1, 1.0, 50, 0.5, 0.5),
    ],
)
def test_a_count_beyond_two_to_the_53_is_refused_by_name(call):
    """``min_epsilon(10**30, 0.5, 91)`` never returned (the slow fuzz suite hung on it, two
    sessions running): the certificate's cut stepped back one k at a time where ``c k`` was
    beyond float precision, so no step moved it. A count beyond 2^53 is refused by name now;
    at 2^53 itself the answer comes."""
    with pytest.raises(ValueError, match=r"n must be <= 9,007,199,254,740,992"):
        call(10**30)
    with pytest.raises(ValueError, match="beyond 2\\^53"):
        call(2**53 + 1)
    assert call(2**53) is not None


def test_the_certificate_cut_is_found_in_bounded_steps_at_any_n():
    """The certificate itself (no public entry point checks n there) returns at any n."""
    from dpuq.planning.levels import _cert

    assert 0.0 <= _cert(10**30, 1e30, 1e12, 91) <= 1.0
