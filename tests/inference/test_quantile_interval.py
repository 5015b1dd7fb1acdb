"""The private order-statistic interval for a quantile: exact, distribution-free coverage.

The target ranks are checked against the binomial law exactly; coverage is checked over
seeded samples of a continuous, a discrete (heavy ties) and a skewed law, with a negative
control (the same release without the rank-error shift) that must cover less.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import binom

import dpuq
from dpuq.inference import quantile_interval as qi
from dpuq.inference.quantile_interval import order_statistic_ranks


def _miss_bound_full(rho, n, q, eps, m, side):
    """E min(1, m exp(-(ε/2) side (ρ - B) / 2)) over the whole binomial law (no window)."""
    k = np.arange(n + 1)
    return float(
        np.sum(
            binom.pmf(k, n, q) * np.exp(np.minimum(0.0, math.log(m) - eps / 4 * side * (rho - k)))
        )
    )


@pytest.mark.parametrize(("n", "q", "alpha"), [(50, 0.5, 0.1), (5000, 0.9, 0.1), (300, 0.1, 0.05)])
def test_the_target_ranks_are_the_tightest_whose_miss_bound_is_alpha_over_two(n, q, alpha):
    """Each end's miss bound (binomial law convolved with the mechanism's worst-case rank
    error) is at most α/2 at the released rank and above it a tenth of a rank inward."""
    eps, m = 1.0, 1001
    lo, hi, _ = order_statistic_ranks(n, q, alpha, eps, m)
    assert (
        _miss_bound_full(hi, n, q, eps, m, 1)
        <= alpha / 2
        < _miss_bound_full(hi - 0.1, n, q, eps, m, 1)
    )
    assert (
        _miss_bound_full(lo, n, q, eps, m, -1)
        <= alpha / 2
        < _miss_bound_full(lo + 0.1, n, q, eps, m, -1)
    )


def test_the_convolution_bound_is_inside_the_union_bound():
    """Splitting α/2 into a binomial tail and a mechanism failure β = α/10 (the first version)
    gives ends at least as far out, at every n, q and ε tried."""
    for n, q, eps in [(50, 0.5, 1.0), (1000, 0.5, 1.0), (5000, 0.9, 0.5), (300, 0.1, 4.0)]:
        alpha, m = 0.1, 1001
        beta, gamma = alpha / 20, alpha / 2 - alpha / 20
        reach = 4.0 / eps * math.log(m / beta)
        lo, hi, _ = order_statistic_ranks(n, q, alpha, eps, m)
        assert hi <= binom.isf(gamma, n, q) + 1 + reach
        assert lo >= binom.ppf(gamma, n, q) - 1 - reach


def _coverage(draw, truth, q, reps, eps, rng, bounds):
    hits = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpuq.UninformativeIntervalWarning)
        for _ in range(reps):
            ci = dpuq.private_confidence_interval(
                draw(rng), statistic="quantile", quantile=q, bounds=bounds, alpha=0.1,
                epsilon=eps, random_state=rng,
            )  # fmt: skip
            hits.append(ci.lower <= truth <= ci.upper)
    return float(np.mean(hits))


@pytest.mark.parametrize(
    ("law", "draw", "truth", "bounds"),
    [
        ("lognormal", lambda r: np.minimum(r.lognormal(0, 1, 400), 30), math.exp(1.2816), (0, 30)),
        ("poisson (ties)", lambda r: r.poisson(3.0, 400).astype(float), 5.0, (0, 20)),
        ("two points", lambda r: (r.random(400) < 0.88).astype(float), 1.0, (0, 1)),
    ],
)
def test_coverage_holds_for_continuous_discrete_and_skewed_laws(law, draw, truth, bounds):
    """The 0.9 quantile at n = 400, ε = 2: at least 1 - α - 3 SE over 150 samples, whatever
    the law (the Poisson's and the two-point law's quantiles sit on atoms)."""
    reps = 150
    cov = _coverage(draw, truth, 0.9, reps, 2.0, np.random.default_rng(40), bounds)
    assert cov >= 0.9 - 3 * math.sqrt(0.09 / reps), (law, cov)


def test_without_the_rank_error_shift_coverage_falls_negative_control(monkeypatch):
    """The margin is what covers the mechanism's rank error: at a small ε, with the
    non-private binomial ranks instead, the same release covers far less often."""
    draw = lambda r: r.lognormal(0, 1, 2000)  # noqa: E731
    truth, reps = math.exp(1.2816), 120
    rng = np.random.default_rng(41)
    honest = _coverage(draw, truth, 0.9, reps, 0.05, rng, (0, 200))

    def unshifted(n, q, alpha, epsilon, n_bins):  # the non-private binomial ends
        return binom.ppf(alpha / 2, n, q) - 1, binom.isf(alpha / 2, n, q) + 1, 0.0

    monkeypatch.setattr(qi, "order_statistic_ranks", unshifted)
    naive = _coverage(draw, truth, 0.9, reps, 0.05, np.random.default_rng(41), (0, 200))
    assert honest >= 0.9 - 3 * math.sqrt(0.09 / reps)
    assert naive < 0.9 - 3 * math.sqrt(0.09 / reps), (honest, naive)


def test_too_little_data_gives_the_bounds_and_says_so():
    x = np.random.default_rng(3).uniform(size=60)
    with pytest.warns(dpuq.UninformativeIntervalWarning, match="order statistic"):
        ci = dpuq.private_confidence_interval(x, statistic="quantile", quantile=0.9,
                                              bounds=(0, 1), alpha=0.1, epsilon=0.5)  # fmt: skip
    assert (ci.lower, ci.upper, ci.informative) == (0.0, 1.0, False)


def test_the_old_subset_path_stays_available_and_the_charge_is_the_total(tmp_path):
    led = dpuq.Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=3.0)
    x = np.random.default_rng(4).uniform(size=5000)
    kw = {"statistic": "quantile", "quantile": 0.5, "bounds": (0, 1), "alpha": 0.1,
          "epsilon": 1.0, "ledger": led, "dataset": "d", "random_state": 0}  # fmt: skip
    exact = dpuq.private_confidence_interval(x, **kw)
    subsets = dpuq.private_confidence_interval(x, method="ensemble", n_resamples=10, **kw)
    assert exact.method == "order_statistics" and subsets.method == "ensemble"
    assert exact.lower < 0.5 < exact.upper
    assert led.status("d").spent_epsilon == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("draw", "truth", "bounds"),
    [
        (lambda r: r.integers(18, 41, 400).astype(float), 29.0, (0, 100)),  # ages on bin edges
        (lambda r: np.full(400, 0.9), 0.9, (0, 10)),  # a point mass on an edge
    ],
    ids=["integer ages", "point mass"],
)
def test_data_on_the_bin_edges_are_counted_where_the_ends_are_released(draw, truth, bounds):
    """Review finding: binning (x - a)/(b - a) and mapping the edges back put U an ulp below a
    median of 29 (bounds (0, 100), 100 bins) and the interval missed every time."""
    rng, hits = np.random.default_rng(42), []
    for _ in range(60):
        ci = dpuq.private_confidence_interval(
            draw(rng), statistic="quantile", quantile=0.5, bounds=bounds, alpha=0.1,
            epsilon=2.0, n_candidates=100, random_state=rng,
        )  # fmt: skip
        hits.append(ci.lower <= truth <= ci.upper)
    assert np.mean(hits) >= 0.9 - 3 * math.sqrt(0.09 / 60)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, "n must be"),
        ({"q": 1.0}, "q must be"),
        ({"alpha": 0.0}, "alpha must be"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"n_bins": 1}, "n_bins"),
    ],
)
def test_the_ranks_name_a_bad_argument(kwargs, match):
    args = {"n": 100, "q": 0.5, "alpha": 0.1, "epsilon": 1.0, "n_bins": 101, **kwargs}
    with pytest.raises(ValueError, match=match):
        order_statistic_ranks(**args)


@pytest.mark.parametrize(
    ("setting", "value"),
    [("n_subsets", 40), ("n_resamples", 20), ("estimate_share", 0.5), ("symmetric", False)],
)
@pytest.mark.parametrize("statistic", ["median", "quantile"])
def test_a_subsets_setting_with_order_statistics_is_refused_not_ignored(statistic, setting, value):
    """The median's default has no subsets: a subsets' setting passed to it names itself in
    the error (it was silently ignored), and method='ensemble' takes it."""
    x = np.random.default_rng(5).uniform(size=400)
    kw = {"statistic": statistic, "bounds": (0, 1), "alpha": 0.1, "epsilon": 1.0}
    if statistic == "quantile":
        kw["quantile"] = 0.5
    if setting == "symmetric" and statistic == "quantile":
        pytest.skip("symmetric is a string-statistic setting")
    with pytest.raises(ValueError, match=setting):
        dpuq.private_confidence_interval(x, **kw, **{setting: value})
    if statistic == "median":
        ens = {"method": "ensemble", "n_resamples": 20, "random_state": 0, **kw, setting: value}
        ci = dpuq.private_confidence_interval(x, **ens)
        assert ci.method == "ensemble"


def _compositions(n: int, k: int):
    if k == 1:
        yield (n,)
        return
    for i in range(n + 1):
        for rest in _compositions(n - i, k - 1):
            yield (i, *rest)


@pytest.mark.parametrize("theta", [1.0, 1.5, 2.0])
def test_exact_coverage_on_a_discrete_law_by_enumerating_every_sample(theta):
    """Review of the third session: X on the atoms 0..3 (probabilities .2, .3, .3, .2; every
    θ in [1, 2] is a population median), n = 20, ε = 6, α = 0.3, four bins with edges on the
    atoms. Every sample's count vector is enumerated with its multinomial probability and
    each end's exact release law (:func:`dpuq.private_quantile_log_distribution`): the
    coverage is at least 1 - α, exactly, not up to Monte Carlo error."""
    from scipy.stats import multinomial

    atoms, probs, (a, b), m, n, eps, alpha = (
        [0, 1, 2, 3],
        [0.2, 0.3, 0.3, 0.2],
        (-1, 3),
        4,
        20,
        6.0,
        0.3,
    )
    rho_l, rho_u, _ = order_statistic_ranks(n, 0.5, alpha, eps, m)
    assert 0 <= rho_l and rho_u <= n  # both ends drawn
    tops = a + (b - a) * np.arange(1, m + 1) / m  # U = t_J
    bottoms = np.concatenate([[a], tops[:-1]])  # L = t_{J-1}
    scores = (np.asarray(atoms, dtype=float) - a) / (b - a)
    cover = 0.0
    for c in _compositions(n, len(atoms)):
        x = np.repeat(scores, c)
        p_up = np.exp(dpuq.private_quantile_log_distribution(x, rho_u / n, eps / 2, m)[1])
        p_lo = np.exp(dpuq.private_quantile_log_distribution(x, rho_l / n, eps / 2, m)[1])
        hit = (1.0 - p_up[tops < theta].sum()) * (1.0 - p_lo[bottoms > theta].sum())
        cover += multinomial.pmf(c, n, probs) * hit
    assert cover >= 1 - alpha, cover


def test_the_ranks_meet_their_bound_at_ten_million(monkeypatch):
    """Review finding: brentq's relative tolerance (1e-12 of ρ ≈ 1e7) beat the 1e-6 outward
    hair, leaving ρ_L 5e-7 inside its own bound; the ranks are now stepped out until it holds."""
    n, q, alpha, eps, m = 10**7, 0.99, 0.1, 50.0, 1001
    lo, hi, _ = order_statistic_ranks(n, q, alpha, eps, m)
    k = np.arange(int(n * q) - 200_000, int(n * q) + 200_001, dtype=float)
    pk = binom.pmf(k, n, q)
    out = 1.0 - pk.sum()
    assert qi._miss_bound(hi, k, pk, out, math.log(m), eps / 2, 1) <= alpha / 2
    assert qi._miss_bound(lo, k, pk, out, math.log(m), eps / 2, -1) <= alpha / 2


def test_the_median_is_exact_by_default_and_a_bad_seed_costs_nothing(tmp_path):
    led = dpuq.Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=3.0)
    x = np.random.default_rng(6).uniform(size=2000)
    kw = {"statistic": "median", "bounds": (0, 1), "alpha": 0.1, "epsilon": 1.0,
          "ledger": led, "dataset": "d"}  # fmt: skip
    with pytest.raises(TypeError):
        dpuq.private_confidence_interval(x, random_state="bad", **kw)
    assert led.status("d").spent_epsilon == 0.0  # review finding: it was charged first
    ci = dpuq.private_confidence_interval(x, random_state=0, **kw)
    assert (ci.method, ci.statistic) == ("order_statistics", "median")
    assert ci.lower < 0.5 < ci.upper and led.status("d").spent_epsilon == pytest.approx(1.0)
    with pytest.raises(ValueError, match="order_statistics"):
        dpuq.private_confidence_interval(
            x, method="order_statistics", **{**kw, "statistic": "mean"}
        )
