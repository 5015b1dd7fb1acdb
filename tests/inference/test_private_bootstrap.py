"""Private bootstrap CDFs and confidence intervals (SPEC D).

Grouped by behaviour: sensitivity arguments checked numerically (exhaustively on tiny data),
noise scales against the documented ones, the monotone projection and the uniform bound, the
resampling machinery against direct computation, coverage on seeded simulations (3-SE
margins), privacy reports, released objects, bad input.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import dpuq
from dpuq.inference import (
    ClippingWarning,
    UninformativeIntervalWarning,
    naive_bootstrap_privacy,
    normal_approximation_interval,
    percentile_bootstrap_interval,
    private_bootstrap_cdf,
    private_bootstrap_cdf_grid,
    private_confidence_interval,
    private_mean,
    private_median_log_distribution,
    private_studentized_cdf,
    private_trimmed_mean,
    private_variance,
    project_monotone,
    subset_bootstrap_cdfs,
)
from dpuq.inference._data import parse_statistic
from dpuq.inference._resampling import Resamples, simulate_em_median
from dpuq.inference.aggregation import _private_clamped_mean
from dpuq.inference.estimates import (
    mean_sensitivity,
    trimmed_mean_sensitivity,
    variance_sensitivity,
)

BOUNDS = (0.0, 1.0)


def _all_datasets(values, n):
    return {c: np.array(c, dtype=float) for c in itertools.product(values, repeat=n)}


def _neighbours(key, values):
    for i, v in itertools.product(range(len(key)), values):
        if v != key[i]:
            yield (*key[:i], v, *key[i + 1 :])


# --- sensitivity, exhaustively on tiny data ------------------------------------------------------


@pytest.mark.parametrize("statistic", ["mean", "median", "trimmed_mean"])
def test_ensemble_cdf_before_noise_moves_at_most_one_over_s(statistic):
    """Every neighbour of every data set in {0, 1/2, 1}^6: one subset row changes, and the
    averaged CDF at every threshold moves by at most 1/s (SPEC D, Algorithm 2)."""
    values, s = (0.0, 0.5, 1.0), 3
    t = np.array([-1.5, -0.5, -0.1, 0.0, 0.4, 1.5])
    data = _all_datasets(values, 6)
    per_subset = {
        k: subset_bootstrap_cdfs(
            x,
            t,
            n_subsets=s,
            bounds=BOUNDS,
            statistic=statistic,
            trim=0.25,
            n_resamples=40,
            random_state=7,
        )
        for k, x in data.items()
    }
    worst, moved = 0.0, 0
    for key, f in per_subset.items():
        for nb in _neighbours(key, values):
            g = per_subset[nb]
            changed_rows = np.flatnonzero(np.any(f != g, axis=1))
            assert changed_rows.size <= 1
            diff = np.max(np.abs(f.mean(axis=0) - g.mean(axis=0)))
            worst = max(worst, diff)
            moved += diff > 0
    assert worst <= 1.0 / s + 1e-12
    assert moved > 0  # the check is not vacuous


def test_release_difference_between_neighbours_is_the_pre_noise_difference():
    """Same seed, neighbouring data: identical shuffle, weights and noise, so the released
    values differ exactly by the (<= 1/s) pre-noise difference."""
    rng = np.random.default_rng(0)
    x = rng.uniform(size=40)
    y = x.copy()
    y[17] = 1.0 - x[17]
    t = np.array([-0.3, 0.0, 0.2])
    a = private_bootstrap_cdf(x, t, epsilon=1.0, bounds=BOUNDS, n_subsets=5, random_state=3)
    b = private_bootstrap_cdf(y, t, epsilon=1.0, bounds=BOUNDS, n_subsets=5, random_state=3)
    fa = subset_bootstrap_cdfs(x, t, n_subsets=5, bounds=BOUNDS, random_state=3).mean(axis=0)
    fb = subset_bootstrap_cdfs(y, t, n_subsets=5, bounds=BOUNDS, random_state=3).mean(axis=0)
    np.testing.assert_allclose(a.noisy - b.noisy, fa - fb, atol=1e-12)
    assert np.max(np.abs(fa - fb)) <= 1 / 5 + 1e-12


def test_grid_masses_move_at_most_two_over_s_in_l1():
    """The tree's input: averaged cell masses; one record moves them by <= 2/s in L1."""
    values, s = (0.0, 0.5, 1.0), 3
    grid = np.linspace(-2.0, 2.0, 15)
    data = _all_datasets(values, 6)

    def masses(x):
        f = subset_bootstrap_cdfs(
            x, grid, n_subsets=s, bounds=BOUNDS, n_resamples=30, random_state=1
        ).mean(axis=0)
        return np.diff(np.concatenate([[0.0], f, [1.0]]))

    m = {k: masses(x) for k, x in data.items()}
    worst = max(np.abs(m[key] - m[nb]).sum() for key in data for nb in _neighbours(key, values))
    assert 0 < worst <= 2.0 / s + 1e-12


def test_point_estimate_sensitivities_hold_exhaustively():
    values, n = (0.0, 1 / 3, 2 / 3, 1.0), 5
    data = _all_datasets(values, n)
    stat = parse_statistic("trimmed_mean", 0.2)  # k = 1 at each end
    f_mean = {k: x.mean() for k, x in data.items()}
    f_trim = {k: float(stat.of_sorted(np.sort(x))) for k, x in data.items()}
    f_var = {k: x.var() for k, x in data.items()}
    dm = dt = dv = 0.0
    for key in data:
        for nb in _neighbours(key, values):
            dm = max(dm, abs(f_mean[key] - f_mean[nb]))
            dt = max(dt, abs(f_trim[key] - f_trim[nb]))
            dv = max(dv, abs(f_var[key] - f_var[nb]))
    assert dm <= mean_sensitivity(n, BOUNDS) + 1e-12
    assert dt <= trimmed_mean_sensitivity(n, BOUNDS, 0.2) + 1e-12
    assert dt == pytest.approx(1.0 / 3.0)  # R/(n - 2k) is attained
    assert dv <= variance_sensitivity(n, BOUNDS) + 1e-12
    assert dv == pytest.approx((n - 1) / n**2)  # the tight value R^2 (n-1)/n^2


def test_private_median_law_is_epsilon_dp_exhaustively():
    values, eps = (0.0, 0.4, 1.0), 0.8
    data = _all_datasets(values, 5)
    laws = {
        k: private_median_log_distribution(x, epsilon=eps, bounds=BOUNDS, n_candidates=6)[1]
        for k, x in data.items()
    }
    worst = max(
        np.max(np.abs(laws[key] - laws[nb])) for key in data for nb in _neighbours(key, values)
    )
    assert worst <= eps + 1e-12


def test_clamped_mean_moves_at_most_two_w_over_s():
    rng = np.random.default_rng(4)
    s, w = 9, 0.3
    for _ in range(200):
        v = rng.normal(size=s)
        v2 = v.copy()
        v2[rng.integers(s)] = rng.normal(scale=5)  # anything, inside or outside the window
        a = _private_clamped_mean(
            v, epsilon=1.0, half_width=w, center=0.1, rng=np.random.default_rng(8)
        )
        b = _private_clamped_mean(
            v2, epsilon=1.0, half_width=w, center=0.1, rng=np.random.default_rng(8)
        )
        assert abs(a.value - b.value) <= 2 * w / s + 1e-12
        assert a.noise_scale == pytest.approx(2 * w / s)


# --- the Laplace scales used are the documented ones --------------------------------------------


def test_ensemble_noise_is_laplace_one_over_s_epsilon():
    x = np.random.default_rng(5).beta(2, 5, size=120)
    eps, s = 2.0, 6
    noise = []
    for seed in range(400):
        r = private_bootstrap_cdf(
            x, 0.1, epsilon=eps, bounds=BOUNDS, n_subsets=s, n_resamples=20, random_state=seed
        )
        assert r.noise_scale == pytest.approx(1 / (s * eps))
        pre = subset_bootstrap_cdfs(
            x, 0.1, n_subsets=s, bounds=BOUNDS, n_resamples=20, random_state=seed
        ).mean()
        noise.append(float(r.noisy) - pre)
    assert stats.kstest(noise, stats.laplace(scale=1 / (s * eps)).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(scale=2 / (s * eps)).cdf).pvalue < 1e-3


def test_several_thresholds_share_the_budget():
    x = np.random.default_rng(5).uniform(size=200)
    r = private_bootstrap_cdf(
        x, [0.0, 0.1, 0.2, 0.3], epsilon=1.0, bounds=BOUNDS, n_subsets=10, random_state=0
    )
    assert r.noise_scale == pytest.approx(4 / 10)
    assert r.privacy_report.epsilon == 1.0


def test_point_estimates_use_the_documented_scales():
    x = np.random.default_rng(6).uniform(2, 7, size=50)
    bounds, eps = (2.0, 7.0), 0.5
    m = [
        private_mean(x, epsilon=eps, bounds=bounds, random_state=i).value - x.mean()
        for i in range(1000)
    ]
    assert stats.kstest(m, stats.laplace(scale=5 / (50 * eps)).cdf).pvalue > 1e-3
    assert private_mean(x, epsilon=eps, bounds=bounds).noise_scale == pytest.approx(5 / 25)
    tm = private_trimmed_mean(x, epsilon=eps, bounds=bounds, trim=0.1)
    assert tm.noise_scale == pytest.approx(5 / ((50 - 10) * eps))
    assert private_variance(x, epsilon=eps, bounds=bounds).noise_scale == pytest.approx(
        25 / (50 * eps)
    )


def test_interval_report_states_the_scales_it_used():
    x = np.random.default_rng(7).uniform(0, 4, size=800)
    ci = private_confidence_interval(x, alpha=0.1, epsilon=4.0, bounds=(0, 4), random_state=0)
    det = ci.privacy_report.details
    assert det["estimate_noise"] == f"Laplace({4 / (800 * 2.0):.6g})"
    assert det["variance_noise_scale"] == pytest.approx(16 / 800 / det["epsilon_variance"])
    parts = ("epsilon_variance", "epsilon_half_width", "epsilon_asymmetry")
    assert sum(det[p] for p in parts) == pytest.approx(2.0)


# --- the monotone projection and the uniform bound ----------------------------------------------


def test_projection_gives_a_valid_cdf_and_is_the_euclidean_projection():
    from scipy.optimize import isotonic_regression

    rng = np.random.default_rng(9)
    for _ in range(200):
        y = np.sort(rng.uniform(size=30)) + rng.normal(scale=0.3, size=30)
        p = project_monotone(y)
        assert np.all(np.diff(p) >= 0) and p.min() >= 0 and p.max() <= 1
        ref = np.clip(isotonic_regression(y).x, 0, 1)  # an independent implementation
        np.testing.assert_allclose(p, ref, atol=1e-12)


def test_projection_never_increases_the_sup_error_to_a_cdf():
    rng = np.random.default_rng(10)
    for _ in range(300):
        f = np.sort(rng.uniform(size=25))
        y = f + rng.laplace(scale=0.2, size=25)
        assert np.max(np.abs(project_monotone(y) - f)) <= np.max(np.abs(y - f)) + 1e-12


def test_grid_cdf_is_valid_and_its_uniform_bound_holds():
    """Over seeds, the noise exceeds the stated bound in at most a beta fraction of runs."""
    x = np.random.default_rng(11).beta(2, 3, size=300)
    grid = np.linspace(-1.0, 1.0, 31)
    beta, runs, exceed = 0.2, 150, 0
    for seed in range(runs):
        r = private_bootstrap_cdf_grid(
            x,
            grid,
            epsilon=1.0,
            bounds=BOUNDS,
            n_subsets=10,
            n_resamples=20,
            beta=beta,
            random_state=seed,
        )
        assert np.all(np.diff(r.cdf) >= 0) and r.cdf.min() >= 0 and r.cdf.max() <= 1
        pre = subset_bootstrap_cdfs(
            x, grid, n_subsets=10, bounds=BOUNDS, n_resamples=20, random_state=seed
        ).mean(axis=0)
        raw_err = np.max(np.abs(r.noisy - pre))
        assert np.max(np.abs(r.cdf - pre)) <= raw_err + 1e-12
        exceed += raw_err > r.error_bound
    assert exceed / runs <= beta + 3 * math.sqrt(beta * (1 - beta) / runs)
    assert r.noise_scale == pytest.approx(2 * r.depth / (10 * 1.0))
    assert r.depth == 5  # 32 cells


# --- the resampling machinery against direct computation ---------------------------------------


@pytest.mark.parametrize(
    ("statistic", "n"), [("mean", 40), ("median", 41), ("median", 40), ("trimmed_mean", 40)]
)
def test_weighted_statistics_equal_the_expanded_resample(statistic, n):
    rng = np.random.default_rng(12)
    b, t = 8, 30
    xs = np.sort(rng.normal(size=(3, b)), axis=1)
    w = rng.multinomial(n, np.full(b, 1 / b), size=(3, t)).astype(float)
    res = Resamples(xs[:, None, :], w, 3, n)
    stat = parse_statistic(statistic, 0.1)
    got = res.statistic(stat)
    m1, var = res.mean_and_variance()
    for k in range(3):
        for i in range(t):
            expanded = np.sort(np.repeat(xs[k], w[k, i].astype(int)))
            assert got[k, i] == pytest.approx(float(stat.of_sorted(expanded)), abs=1e-12)
            assert var[k, i] == pytest.approx(expanded.var(), abs=1e-12)
            assert m1[k, i] == pytest.approx(expanded.mean(), abs=1e-12)


def test_simulated_em_median_follows_the_exact_law():
    rng = np.random.default_rng(13)
    xs = np.sort(rng.uniform(size=7))
    w = np.array([3, 0, 5, 1, 2, 4, 6], dtype=float)  # one resample of size 21
    t = 20000
    res = Resamples(xs[None, None, :], np.repeat(w[None, None, :], t, axis=1), 1, int(w.sum()))
    cand = np.linspace(0, 1, 11)
    draws = simulate_em_median(res, cand, 0.7, np.random.default_rng(14))[0]
    _, log_law = private_median_log_distribution(
        np.repeat(xs, w.astype(int)), epsilon=0.7, bounds=BOUNDS, n_candidates=11
    )
    counts = np.array([(draws == c).sum() for c in cand])
    expected = np.exp(log_law) * t
    assert counts.sum() == t
    keep = expected >= 5
    assert counts[~keep].sum() <= 5 + 5 * expected[~keep].sum()  # rare candidates stay rare
    obs, exp = counts[keep], expected[keep] * counts[keep].sum() / expected[keep].sum()
    assert stats.chisquare(obs, exp).pvalue > 1e-3


# --- coverage on seeded simulations -------------------------------------------------------------


def _coverage(statistic, truth, n, trials, eps, alpha, seed, method="ensemble", trim=0.1):
    rng = np.random.default_rng(seed)
    hits, widths = [], []
    for _ in range(trials):
        x = rng.beta(2, 5, size=n)
        ci = private_confidence_interval(
            x,
            alpha=alpha,
            epsilon=2 * eps,  # eps for the estimate and eps for the bootstrap (as before 0.2)
            bounds=BOUNDS,
            statistic=statistic,
            trim=trim,
            method=method,
            random_state=rng,
        )
        hits.append(ci.lower <= truth <= ci.upper)
        widths.append(ci.width)
    return float(np.mean(hits)), float(np.mean(widths))


def _trimmed_truth(trim):
    d = stats.beta(2, 5)
    lo, hi = d.ppf(trim), d.ppf(1 - trim)
    from scipy.integrate import quad

    return quad(lambda v: v * d.pdf(v), lo, hi)[0] / (1 - 2 * trim)


def test_mean_interval_covers_and_is_not_much_wider_than_the_bootstrap():
    trials, alpha = 200, 0.1
    cov, width = _coverage("mean", 2 / 7, 400, trials, 5.0, alpha, seed=20)
    assert cov >= 1 - alpha - 3 * math.sqrt(alpha * (1 - alpha) / trials)
    rng = np.random.default_rng(21)
    ref = np.mean(
        [
            percentile_bootstrap_interval(
                rng.beta(2, 5, size=400), alpha=alpha, random_state=rng
            ).width
            for _ in range(50)
        ]
    )
    assert width <= 1.5 * ref


@pytest.mark.slow
@pytest.mark.parametrize(
    ("statistic", "truth"),
    [("mean", 2 / 7), ("median", stats.beta(2, 5).median()), ("trimmed_mean", None)],
)
def test_interval_coverage_large(statistic, truth):
    truth = _trimmed_truth(0.1) if truth is None else truth
    trials, alpha = 1000, 0.05
    cov, _ = _coverage(statistic, truth, 500, trials, 5.0, alpha, seed=30)
    assert cov >= 1 - alpha - 3 * math.sqrt(alpha * (1 - alpha) / trials)


def test_median_and_trimmed_mean_intervals_cover():
    trials, alpha = 100, 0.1
    margin = 3 * math.sqrt(alpha * (1 - alpha) / trials)
    cov, _ = _coverage("median", stats.beta(2, 5).median(), 300, trials, 5.0, alpha, seed=22)
    assert cov >= 1 - alpha - margin
    cov, _ = _coverage("trimmed_mean", _trimmed_truth(0.1), 300, trials, 5.0, alpha, seed=23)
    assert cov >= 1 - alpha - margin


@pytest.mark.slow
def test_baselines_cover():
    rng = np.random.default_rng(31)
    trials, alpha = 1000, 0.05
    margin = 3 * math.sqrt(alpha * (1 - alpha) / trials)
    hits_n, hits_p = [], []
    for _ in range(trials):
        x = rng.beta(2, 5, size=500)
        hits_n.append(
            2 / 7
            in normal_approximation_interval(
                x, alpha=alpha, epsilon=4.0, bounds=BOUNDS, random_state=rng
            )
        )
        hits_p.append(2 / 7 in percentile_bootstrap_interval(x, alpha=alpha, random_state=rng))
    assert np.mean(hits_n) >= 1 - alpha - margin
    assert np.mean(hits_p) >= 1 - alpha - margin


def test_studentized_cdf_is_accurate_for_large_n():
    x = np.random.default_rng(24).uniform(size=20000)  # symmetric: J_st is Φ up to O(1/n)
    for t in (-1.96, 0.0, 1.0):
        r = private_studentized_cdf(x, t, epsilon=1.0, bounds=BOUNDS, random_state=0)
        assert r.value == pytest.approx(stats.norm.cdf(t), abs=0.02)
        assert r.privacy_report.epsilon == 1.0


def test_studentized_cdf_splits_the_budget_and_warns_when_the_median_is_unreliable():
    x = np.random.default_rng(24).uniform(size=20000)
    with pytest.warns(UserWarning, match="private median of the subsets' values may miss"):
        r = private_studentized_cdf(x, [-1.0, 0.0, 1.0], epsilon=1.0, bounds=BOUNDS, random_state=0)
    assert r.privacy_report.details["epsilon_per_threshold"] == pytest.approx(1 / 3)


# --- the naive method's (ε', δ) ------------------------------------------------------------------


def test_naive_privacy_is_far_worse_than_nominal_and_grows_with_resamples():
    p1 = naive_bootstrap_privacy(2000, 1.0, 20, 1e-6)
    p2 = naive_bootstrap_privacy(2000, 1.0, 80, 1e-6)
    assert p1.epsilon > 1.0 + p1.epsilon_per_appearance
    assert p2.epsilon > p1.epsilon
    assert naive_bootstrap_privacy(2000, 1.0, 20, 1e-9).epsilon >= p1.epsilon


def test_naive_multiplicity_event_has_the_stated_probability():
    """E = {max_i c_i <= C, sum_i c_i <= A} fails with probability <= δ/2 (here δ = 0.4)."""
    n, t, delta = 30, 6, 0.4
    p = naive_bootstrap_privacy(n, 1.0, t, delta)
    rng = np.random.default_rng(25)
    c = rng.binomial(n, 1 / n, size=(40000, t))  # multiplicity of one record per resample
    fail = np.mean((c.max(axis=1) > p.max_appearances) | (c.sum(axis=1) > p.total_appearances))
    assert fail <= delta / 2 + 3 * math.sqrt(delta / 2 / 40000)
    # and the thresholds are the smallest that work (each of the two tails is <= δ/4)
    assert t * stats.binom.sf(p.max_appearances - 1, n, 1 / n) > delta / 4
    assert stats.binom.sf(p.total_appearances - 1, n * t, 1 / n) > delta / 4


def test_naive_release_reports_its_epsilon_delta():
    x = np.random.default_rng(26).uniform(size=500)
    r = private_bootstrap_cdf(
        x, [0.0, 0.1], epsilon=1.0, bounds=BOUNDS, method="naive", random_state=0
    )
    assert r.privacy_report.delta == 1e-6
    assert r.privacy_report.epsilon == naive_bootstrap_privacy(500, 1.0, 22, 1e-6).epsilon
    assert not r.privacy_report.pure
    ci = private_confidence_interval(
        x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, method="naive", random_state=0
    )
    assert ci.privacy_report.epsilon > 1.0 and ci.privacy_report.delta > 0


# --- reports and the ensemble_cdf method ---------------------------------------------------------


def test_epsilon_is_the_total_and_the_share_splits_it():
    x = np.random.default_rng(27).uniform(size=300)
    ci = private_confidence_interval(x, alpha=0.1, epsilon=1.5, bounds=BOUNDS, random_state=0)
    assert ci.privacy_report.epsilon == 1.5 and ci.privacy_report.pure
    det = ci.privacy_report.details
    assert det["epsilon_estimate"] == pytest.approx(0.75)
    ci = private_confidence_interval(
        x, alpha=0.1, epsilon=0.75, estimate_share=0.25, bounds=BOUNDS, random_state=0
    )
    det = ci.privacy_report.details
    assert ci.privacy_report.epsilon == pytest.approx(0.75)
    assert det["epsilon_estimate"] == pytest.approx(0.1875)
    parts = ("epsilon_estimate", "epsilon_variance", "epsilon_half_width", "epsilon_asymmetry")
    assert sum(det[p] for p in parts) == pytest.approx(0.75)
    ci = normal_approximation_interval(x, alpha=0.1, epsilon=0.8, bounds=BOUNDS, random_state=0)
    assert ci.privacy_report.epsilon == 0.8
    assert ci.privacy_report.details["epsilon_variance"] == pytest.approx(0.4)


def test_ensemble_cdf_is_trivial_when_the_slack_is_too_large_and_says_so():
    x = np.random.default_rng(28).uniform(size=500)
    with pytest.warns(UninformativeIntervalWarning, match=r"n >= \d+"):
        ci = private_confidence_interval(
            x, alpha=0.05, epsilon=2.0, bounds=BOUNDS, method="ensemble_cdf", random_state=0
        )
    assert (ci.lower, ci.upper) == BOUNDS and not ci.informative
    assert ci.privacy_report.epsilon == 1.0  # only the estimate (half of 2) was released


def test_ensemble_cdf_is_informative_at_large_n():
    x = np.random.default_rng(29).uniform(size=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeIntervalWarning)
        ci = private_confidence_interval(
            x, alpha=0.6, epsilon=20.0, bounds=BOUNDS, method="ensemble_cdf", random_state=0
        )
    # a 40% interval misses 0.5 in most runs: one seeded run checks informativeness, not coverage
    assert ci.informative and ci.lower < ci.estimate < ci.upper
    assert abs(ci.estimate - 0.5) < 0.01
    assert ci.width < 0.05
    assert ci.privacy_report.epsilon == 20.0


# --- released objects ---------------------------------------------------------------------------


def test_released_objects_hold_no_data():
    x = np.random.default_rng(30).uniform(size=257)
    objs = [
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, random_state=0),
        private_confidence_interval(
            x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, statistic="median", random_state=0
        ),
        private_bootstrap_cdf(x, [0.0, 0.5], epsilon=1.0, bounds=BOUNDS, random_state=0),
        private_bootstrap_cdf_grid(x, epsilon=1.0, bounds=BOUNDS, random_state=0),
    ]
    for obj in objs:
        for value in vars(obj).values():
            arr = np.asarray(value) if isinstance(value, np.ndarray | float) else None
            assert arr is None or arr.size != x.size
            assert arr is None or not np.any(np.isin(arr, x))


def test_seed_reproduces_and_top_level_exports_work():
    x = np.random.default_rng(31).uniform(size=300)
    a = dpuq.private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, random_state=5)
    b = dpuq.private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, random_state=5)
    assert a.interval == b.interval
    c = dpuq.private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS)
    assert c.interval != a.interval


# --- bad input ----------------------------------------------------------------------------------


def test_data_outside_bounds_is_an_error_or_clipped_without_a_count():
    x = np.array([0.1, 0.5, 1.7, -0.2, 0.3] * 20)
    with pytest.raises(ValueError, match="values lie outside bounds") as err:
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS)
    assert not any(s in str(err.value) for s in ("40", "100", "1.7", "-0.2"))  # nothing of x
    with warnings.catch_warnings(record=True) as rec:  # clip=True is silent, whatever the data
        warnings.simplefilter("always")
        ci = private_confidence_interval(
            x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, clip=True, random_state=0
        )
    assert not [w for w in rec if issubclass(w.category, ClippingWarning)]
    assert 0.0 <= ci.lower <= ci.upper <= 1.0
    with pytest.raises(ValueError, match="outside bounds"):
        private_bootstrap_cdf(x, 0.0, epsilon=1.0, bounds=BOUNDS)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_data(bad):
    x = np.full(50, 0.5)
    x[3] = bad
    with pytest.raises(ValueError, match="non-finite"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS)
    with pytest.raises(ValueError, match="non-finite"):
        private_bootstrap_cdf(x, 0.0, epsilon=1.0, bounds=BOUNDS)


def test_too_few_data_for_the_subsets_names_the_smallest_n():
    x = np.full(30, 0.5)
    with pytest.raises(ValueError, match="n_subsets=20 needs n >= 40"):
        private_bootstrap_cdf(x, 0.0, epsilon=1.0, bounds=BOUNDS, n_subsets=20)
    with pytest.raises(ValueError, match="n_subsets=20 needs n >= 40"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, n_subsets=20)


@pytest.mark.parametrize("eps", [0.0, -1.0, np.nan, np.inf])
def test_bad_epsilon(eps):
    x = np.full(50, 0.5)
    with pytest.raises(ValueError, match="epsilon"):
        private_confidence_interval(x, alpha=0.1, epsilon=eps, bounds=BOUNDS)
    with pytest.raises(ValueError, match="epsilon"):
        private_bootstrap_cdf(x, 0.0, epsilon=eps, bounds=BOUNDS)
    with pytest.raises(ValueError, match="estimate_share"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, estimate_share=eps, bounds=BOUNDS)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.1, np.nan])
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        private_confidence_interval(np.full(50, 0.5), alpha=alpha, epsilon=1.0, bounds=BOUNDS)


def test_other_bad_arguments():
    x = np.full(50, 0.5)
    with pytest.raises(ValueError, match="statistic"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, statistic="mode")
    with pytest.raises(ValueError, match="trim"):
        private_confidence_interval(
            x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, statistic="trimmed_mean", trim=0.5
        )
    with pytest.raises(ValueError, match="bounds"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=(1.0, 0.0))
    with pytest.raises(TypeError, match="bounds"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=1.0)
    with pytest.raises(ValueError, match="method"):
        private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=BOUNDS, method="magic")
    with pytest.raises(ValueError, match="median"):
        private_bootstrap_cdf(
            x, 0.0, epsilon=1.0, bounds=BOUNDS, statistic="median", method="naive"
        )
    with pytest.raises(ValueError, match="grid must be strictly increasing"):
        private_bootstrap_cdf_grid(x, [0.0, 0.0], epsilon=1.0, bounds=BOUNDS)
    with pytest.raises(ValueError, match="studentized"):
        private_bootstrap_cdf_grid(
            x, epsilon=1.0, bounds=BOUNDS, statistic="median", root="studentized"
        )
    with pytest.raises(TypeError, match="n_subsets"):
        private_bootstrap_cdf(x, 0.0, epsilon=1.0, bounds=BOUNDS, n_subsets=2.5)


def test_folded_bounds_bracket_the_exact_noisy_root_law():
    """The interval's fold: with J = Φ known on a grid and Laplace noise of scale λ, the
    bounds on P(U - L <= t) bracket the exact normal-Laplace CDF, and do so tightly."""
    from dpuq.inference.interval_methods import _fold_bounds
    from dpuq.inference.normal_laplace import normal_laplace_cdf

    grid = np.linspace(-5, 5, 401)
    t = np.linspace(-3, 3, 61)
    for lam, u in ((0.3, 0.0), (1.0, 0.01), (1e-9, 0.0)):
        low, up = _fold_bounds(grid, stats.norm.cdf(grid), u, lam, t)
        exact = normal_laplace_cdf(t, 1.0, lam)
        assert np.all(low <= exact + 1e-12) and np.all(exact <= up + 1e-12)
        assert np.max(up - low) <= 2 * u + 0.03  # grid spacing 0.025 times the density


@pytest.mark.parametrize(("sigma", "lam"), [(1.0, 0.3), (0.2, 3.0), (1.0, 1e-9), (1e-3, 1.0)])
def test_normal_laplace_cdf_matches_numerical_convolution(sigma, lam):
    from scipy.integrate import quad

    from dpuq.inference.intervals import normal_laplace_cdf

    def exact(t):  # integrate the smooth CDF against the narrower of the two densities
        if sigma <= lam:
            f = lambda z: stats.laplace.cdf(t - sigma * z, scale=lam) * stats.norm.pdf(z)  # noqa: E731
            return quad(f, -12, 12, points=[t / sigma] if abs(t / sigma) < 12 else None)[0]
        f = lambda v: stats.norm.cdf((t - v) / sigma) * stats.laplace.pdf(v, scale=lam)  # noqa: E731
        return quad(f, -60 * lam, 60 * lam, points=[0.0])[0]

    for t in (-2.0, -0.3, 0.0, 0.7, 3.0):
        assert float(normal_laplace_cdf(t, sigma, lam)) == pytest.approx(exact(t), abs=1e-7)


def test_experiment_smoke(tmp_path):
    """The experiment module runs end to end on a tiny budget (tables and figures)."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    from dpuq.experiments import private_bootstrap as exp

    rows = exp.run_peer_setting(
        trials=3,
        ns=(300,),
        epsilons=(5.0,),
        show_progress=False,
        methods=("ensemble", "ensemble_cdf", "naive", "normal", "percentile"),
    )
    table = exp.format_coverage(rows)
    assert table.count("\n") == len(rows) + 1 and "not private" in table
    assert {r.method: r.epsilon_total for r in rows}["ensemble"] == 10.0
    res = exp.run_cdf_error(ns=(500, 1000), reps=2, show_progress=False)
    assert set(res.slopes) == set(res.errors) and "fitted slope" in exp.format_cdf_error(res)
    drows = exp.run_diabetes(reps=2, epsilons=(5.0,), show_progress=False)
    assert len(drows) == 4 and all(r.mean_lower < r.mean_upper for r in drows)
    exp.plot_coverage(rows, tmp_path / "c.png")
    exp.plot_cdf_error(res, tmp_path / "e.png")
    exp.plot_diabetes(drows, tmp_path / "d.png")
    assert all((tmp_path / f).stat().st_size > 0 for f in ("c.png", "e.png", "d.png"))


def test_the_naive_interval_refuses_too_few_resamples_before_the_charge(tmp_path):
    """With one resample (n = 200, ε = 0.01: the default floor(sqrt(n ε_cdf)) is 1, or
    ``n_resamples=1``) ``method="naive"`` returned a zero-width interval marked informative
    (an outside probe, ninth session). Fewer than 1/α resamples cannot place its α/2
    quantiles apart: refused by name, before anything is charged."""
    from dpuq import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=5.0)
    x = np.random.default_rng(0).uniform(size=200)
    for eps, extra in ((0.01, {}), (1.0, {"n_resamples": 1}), (1.0, {"n_resamples": 9})):
        with pytest.raises(ValueError, match="needs n_resamples >= 10"):
            dpuq.private_confidence_interval(x, alpha=0.1, epsilon=eps, bounds=(0, 1),
                                             method="naive", ledger=led, dataset="d",
                                             **extra)  # fmt: skip
    assert led.status("d").spent_epsilon == 0.0
    ci = dpuq.private_confidence_interval(
        x, alpha=0.1, epsilon=1.0, bounds=(0, 1), method="naive", n_resamples=10, random_state=0
    )
    assert ci.lower < ci.upper


_TINY_EPSILON_CALLS = {
    "cdf, one t": lambda x, e, **k: private_bootstrap_cdf(x, 0.0, epsilon=e, **k),
    "cdf, 50 t": lambda x, e, **k: private_bootstrap_cdf(x, np.linspace(-1, 1, 50), epsilon=e, **k),
    "cdf, naive": lambda x, e, **k: private_bootstrap_cdf(x, 0.0, epsilon=e, method="naive", **k),
    "cdf grid": lambda x, e, **k: private_bootstrap_cdf_grid(x, epsilon=e, **k),
    "studentized": lambda x, e, **k: private_studentized_cdf(x, 0.0, epsilon=e, **k),
    "naive interval": lambda x, e, **k: private_confidence_interval(
        x, alpha=0.1, epsilon=e, method="naive", **k
    ),
    "ensemble_cdf": lambda x, e, **k: private_confidence_interval(
        x, alpha=0.1, epsilon=e, method="ensemble_cdf", **k
    ),
    "ensemble": lambda x, e, **k: private_confidence_interval(x, alpha=0.1, epsilon=e, **k),
}


@pytest.mark.parametrize("name", sorted(_TINY_EPSILON_CALLS))
def test_an_epsilon_below_the_exact_samplers_floor_is_refused_before_the_charge(name, tmp_path):
    """At ε between 1e-12 and about 1e-9 (more with many thresholds or grid points) the CDF
    releases and the naive and ``ensemble_cdf`` intervals were charged and then refused by
    the exact Laplace sampler (an outside probe, ninth session). Every Laplace part is now
    checked against its floor first: each call either releases and is charged or is refused
    and costs nothing."""
    from dpuq import Ledger

    x = np.random.default_rng(0).uniform(size=2000)
    outcomes = []
    for e in (2e-12, 5e-12, 1e-11, 3e-11, 1e-10, 3e-10, 1e-9):
        led = Ledger(tmp_path / f"{e:g}.sqlite")
        led.create_budget("d", epsilon=1.0, delta=0.5)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _TINY_EPSILON_CALLS[name](x, e, bounds=(0, 1), n_resamples=20, random_state=0,
                                          ledger=led, dataset="d")  # fmt: skip
        except ValueError as err:
            assert "too small for exact Laplace noise" in str(err)
            assert led.status("d").spent_epsilon == 0.0, (name, e)
            outcomes.append("refused")
        else:
            assert led.status("d").spent_epsilon > 0.0
            outcomes.append("released")
    assert outcomes[0] == "refused" and outcomes[-1] == "released"


def test_thresholds_grids_and_the_studentized_settings_are_checked_before_the_charge(tmp_path):
    """An outside probe: 3 million thresholds (or a 10-million-point grid) were charged and
    then ran out of memory; the studentized CDF charged and then refused a half_width of -1,
    or a median share whose epsilon fell below the exponential mechanism's floor."""
    from dpuq import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=5.0)
    x = np.random.default_rng(0).uniform(size=3000)
    kw = {"epsilon": 0.5, "bounds": (0, 1), "ledger": led, "dataset": "d"}
    calls = [
        (lambda: private_bootstrap_cdf(x, np.linspace(-1, 1, 200_001), **kw), "number of t"),
        (lambda: private_bootstrap_cdf(x, np.linspace(-1, 1, 60_000), **kw), "thresholds"),
        (lambda: private_bootstrap_cdf_grid(x, np.linspace(-1, 1, 200_001), **kw), "grid's size"),
        (lambda: private_studentized_cdf(x, [0.0, 1.0], half_width=-1.0, **kw), "half_width"),
        (lambda: private_studentized_cdf(x, [0.0], half_width=lambda m: np.nan, **kw),
         "half_width"),
        (lambda: private_studentized_cdf(x, 0.0, median_share=1e-12, **kw), "median_share"),
    ]  # fmt: skip
    for call, match in calls:
        with pytest.raises(ValueError, match=match):
            call()
    assert led.status("d").spent_epsilon == 0.0
