"""Private confidence intervals for any statistic ``f(rows, sample_weight)`` (privacy-critical).

:func:`_private_statistic_interval` (reached through
:func:`dpuq.private_confidence_interval` with a callable ``statistic``) releases an interval
for the value of the user's own estimator: a regression coefficient, an odds ratio, an AUC, a
quantile. ``f`` follows scikit-learn's ``sample_weight`` convention, so a bootstrap resample
is a vector of multinomial weights over a subset's rows, never a copy of them.

The method (``method="ensemble"``, the default): Chadha et al.'s ensemble of subset bootstraps
with a subsample-and-aggregate point estimate.

1. A uniformly random partition of the ``n`` rows into ``s`` disjoint subsets of
   ``b = floor(n/s)`` rows (the ``n - s b`` left over are not used) and, per subset, ``T``
   weight vectors, all drawn from the generator before, and independently of, the data:
   ``W = (n/b) Multinomial(b, (1/b, ..., 1/b))`` (``resample_size="subset"``, each subset's
   own bootstrap, the default) or ``W ~ Multinomial(n, (1/b, ..., 1/b))``
   (``resample_size="n"``, the bag of little bootstraps).

   With ``n_subsets="auto"`` there are **two partitions** (fourth wave, issue 33), both fixed
   before ``f`` is first called (the second one's generator is spawned from the release's
   generator first; ``f`` never sees either). The **locating** subsets, ``s_0`` of ``b_0`` rows
   (:func:`resolve_general_subsets`: the private locations of steps 3a-b need ``s_0 ε`` of a
   few tens), give the preliminary scale and the location. A second, independent partition
   into ``s <= s_0`` larger **estimating** subsets of ``b`` rows
   (:func:`~dpuq.inference.general_plan.estimate_subsets`, ``s ∝ n^(3/5) ε^(-2/5)``: the
   bias–noise trade-off; at least twice the level the spread's first count's noise alone
   reaches, so that the count can be read) gives the spread and the estimate of steps 3c-d; the
   bootstrap runs on the locating subsets only. At ``n = 5000``, ε = 1 that is
   ``b_0 = 25`` and ``b = 50`` (a quarter of the jackknife's remaining bias, estimates nearer
   to normal, for ``sqrt(2)`` times the mean's noise against the standard error;
   ``docs/how-to/general_intervals.md``). An integer ``n_subsets`` gives one partition.
2. Per subset ``k``: ``θ_k = clamp(f(X_k, n/b))`` (every row weighted ``n/b``, so every call
   sees total weight ``n``, as the full data would), bias-corrected by the jackknife on the
   subset's own rows (``bias_correction=True``, the default for a callable ``f``; Smith 2011
   corrects each block the same way; not for quantiles, whose jackknife is inconsistent):
   ``g = min(50, b)`` groups partitioning the ``b`` rows (delete-one for ``b <= 50``),
   ``θ_(-j)`` the fit without group ``j`` and ``θ_k = clamp(θ_k - mean_j (θ_(-j) - θ_k)
   (b - d_j)/d_j)`` (:func:`~dpuq.inference._subsets.jackknife_correct`). A bias
   ``a/b + O(1/b²)`` becomes ``O(1/b²)`` (without it the mean keeps ``a/b`` while its
   standard error shrinks like ``1/sqrt(n)``). And ``sd_k``, the standard deviation of
   ``T`` bootstrap values ``clamp(f(X_k, W_t))`` (times ``sqrt(b/(b-1))``; BLB:
   ``sqrt(n/b)``), a *preliminary* scale only. ``clamp`` is the projection on the public
   ``statistic_bounds``. A call that raises (any ``BaseException`` but ``KeyboardInterrupt``)
   or returns a non-finite value is **no estimate**: it is in no window of step 3 (the
   location's and the spread's counts leave it out, so the spread is wider: conservative) and
   the mean of step 3d takes it at the released location ``m``. Each call gets its own
   weight array and read-only rows (Python objects in cells copied per subset) under the
   caller's NumPy error state; each subset starts the global random generators from its own
   seed, fixed before ``f`` runs, and they are restored afterwards; ``f``'s warnings, output
   and log records (every level) are swallowed, and an interrupt is re-raised without ``f``'s
   exception (:mod:`dpuq.inference._subsets`).
3. Released, per coordinate, in this order (each step's windows and grids are functions of
   the earlier releases, i.e. post-processing):

   a. the preliminary scale ``u_0``: the exponential mechanism's choice, on a public log
      grid, of the window (``± log(2)/2``) of the locating subsets' ``log sd_k`` holding the
      most values; ``u = u_0 sqrt(b_0/b)`` is the scale of one estimating subset;
   b. the location ``m``: the same choice among candidates ``u_0/2`` apart with windows
      ``± 1.5 u_0`` over the locating subsets' ``θ``
      (:func:`~dpuq.inference.aggregation.window_count_utilities`), at no more ε than the
      data-free bound needs (:func:`location_epsilon`; the rest goes to steps c' and d,
      one fifth and four fifths);
   c. the **spread between the (estimating) subset estimates**: the counts ``c_1, c_2`` of
      ``θ_k`` within ``r_1 = 2u`` and ``r_2 = 16u`` of ``m`` (2/3 and 1/3 of this step's ε),
      each plus exact
      Laplace noise; with ``c`` the first count, or the second where the first is below
      ``s/4`` or below what its noise alone reaches with probability
      :data:`~dpuq.inference.general_plan.SPREAD_NOISE_BETA` (it says too little), the
      normal-equivalent spread of one subset's estimate is
      ``σ_b = r / Φ⁻¹((1 + c/s)/2)`` (:func:`_spread_from_count`);
   c'. **a spread that sees the tail**: with ``R = 5 σ_b`` (released), ``V``, the mean of
      ``min(|θ_k - m|/R, 1)²`` (no estimate: 1) plus exact Laplace noise, with a fifth of
      what the location leaves (:data:`TAIL_SHARE`; step d gets the other four fifths); the
      spread used from here on is the larger of ``σ_b`` and ``R sqrt(V)``. A count reads the
      spread of the *core* of the ``θ_k``; on skewed subset estimates most of their variance
      sits in a few subsets, which the second moment sees. Its noise (scale about 2.5
      ``σ_b²`` at ``s = 100``, ε = 1) only ever widens: a normal law pays 1.55 times its width
      (``benchmarks/bench_subset_tails.py``; the how-to has the figures);
   d. the estimate ``θ̃``: the mean of the ``θ_k`` clamped to ``m ± (κ σ_b + step)``,
      ``κ = 4``, ``step`` the candidates' spacing (``u_0/2``, or ``(hi - lo)/10000`` if larger),
      plus exact Laplace noise.

   The spread is read between subsets, not from their bootstraps: the mean of ``s`` subset
   estimates has variance ``Var(θ_k)/s`` exactly, while a bootstrap of ``b`` rows sees only
   the *uncorrected* estimate's spread on the rows at hand (0.22-0.87 of it on skewed data).
4. The interval ``θ̃ ± q``, ``q`` the ``1 - α/2`` quantile of ``N(0, σ_b²/s)`` plus the
   Laplace noise of ``θ̃`` (folded in exactly), intersected with ``statistic_bounds``. When
   the released ratio ``σ_b / u`` exceeds :data:`SPREAD_RATIO_CAUTION` the release carries a
   caution (``details["caution"]``, a :class:`~dpuq.inference._data.SubsetRegimeWarning`):
   post-processing of released values.

**Privacy** (replace-one, ``n`` public; ε-DP, δ = 0). Given the data-independent partition
and weights (the jackknife's groups are fixed positions of the random partition: public),
``(θ_k, sd_k)`` is a function of subset ``k``'s rows only: ``f`` is called on those rows
alone, each call with its own weight array and read-only rows, and the jackknife combines
that subset's calls only, clamped again. Replacing one person changes one subset, hence at
most one of the ``s`` pairs, arbitrarily; with two partitions, one locating and one
estimating subset (each step below reads one partition only, so each step's sensitivity is
as stated, and the steps compose as before). The locations' utilities (counts of values in a
window whose width is public or released before; for ``method="subsampling"``, rank counts)
then move by at most 1 (exponential mechanism, sensitivity 1); each of the spread's counts
moves by at most 1 (``m`` and ``u`` are released; exact Laplace of scale ``1/ε_c,i``, the
two composing to ``ε_c``); a mean of ``s``
values clamped to a window of half-width ``w`` fixed by earlier releases moves by at most
``2w/s`` (exact Laplace ``2w/(s ε_d)``); the tail's mean of squared deviations in units of
``R = 5 σ_b`` (released before), each in ``[0, 1]``, by at most ``1/s`` (exact Laplace
``1/(s ε_c')``). Five releases per coordinate compose sequentially
(``ε_a + ε_b + ε_c + ε_c' + ε_d`` = the coordinate's ε; ``ε_b`` chosen from released values,
``ε_c'`` a fifth of what it leaves to the estimate);
a vector ``f`` with ``p`` coordinates gives each coordinate ``ε/p`` (basic composition). All
noise comes from :mod:`dpuq.mechanisms`. ``f`` must use nothing but its arguments (no state
carried between calls), and its output range must be **public**: the clamps are what bound
the sensitivity, and bounds read off the data would leak it.

**Honest refusals**: a location can only be trusted when ``s ε_location`` is a few tens.
:func:`location_failure_bound` bounds the probability that a location misses the values from
public quantities only; above :data:`LOCATION_BETA` (0.05) the release is the whole of
``statistic_bounds`` (``informative=False``, an
:class:`~dpuq.inference._data.UninformativeIntervalWarning` whose presence depends on ``n``,
ε, ``s`` and released values only), and when that is known before the data are touched (the
preliminary scale) nothing is spent and the report says ε = 0. So is a released count below
:data:`SPREAD_FRACTION_MIN` of ``s`` or below what its noise alone reaches with probability
:data:`~dpuq.inference.general_plan.SPREAD_NOISE_BETA` (no spread can be read from it; a
statistic with no estimate on most subsets lands here).

**Coverage** is asymptotic, not exact. Assumptions: ``f`` is asymptotically normal at rate
``sqrt(n)`` (smooth functionals, M-estimators, U-statistics such as the AUC; quantiles of
continuous laws); its bias on ``b`` rows has an expansion ``a/b + O(1/b²)`` (smooth
functions of moments with finite fourth moments), so that after the jackknife the remaining
``O(1/b²)`` is small against the standard error, i.e. ``n = o(b⁴)`` with ``s = n/b``
subsets (the automatic estimating subsets have ``b ∝ n^(2/5) ε^(2/5)``, so
``b⁴ ∝ n^(8/5)``); and the subset estimates' spread is held by ``5 σ_b`` (the tail's
second moment, step 3c') and their tails by ``κ = 4`` of the larger spread.
The weak point is small subsets (``b`` of a few tens) of heavy-tailed data (skewness of 5 and
more): there the corrected estimates keep a bias of about one standard error that shrinks
only like ``1/sqrt(b)``, and their spread misses the rows that make the full sample vary
(``benchmarks/bench_subset_bias.py``), so coverage can fall below nominal (the validity zoo,
``docs/how-to/general_intervals.md``); the report says so whenever ``b < 100``
(``RELIABLE_SUBSET``; public: ``n``, ε and ``s`` only). Statistics that are
not defined on every small subset (a logistic fit with separation, an odds ratio with an
empty cell) are no estimate there: they are taken at the released location ``m`` in the
mean, which pulls it towards ``m`` by their share times the distance from ``m`` to the mean of
the others (small when ``m`` is near that mean), and the others' own bias at ``b`` rows may be
large (prefer a penalised form; a continuity correction of small cells is itself a large
bias at tens of rows). ``method="subsampling"`` takes them alternately at the two bounds.
Outside the assumptions altogether: a statistic that one or two rows of the population
drive (an OLS slope with one point of extreme leverage: that row's pull saturates inside the
one or two subsets that hold it, so the mean of the subset estimates is the bulk's value; on
the held-out table HMDA intervals covered 0.52). No ε-DP release can follow one or two rows;
prefer a bounded-influence statistic (inputs clipped to public bounds,
:func:`dpuq.inference.statistics.clipped`; ranks).

``method="subsampling"`` (a PrivSub-style comparison, Shoham et al. 2025, here without the
amplification by overlapping subsamples): three exponential-mechanism quantiles of the same
``θ_k`` (``α/2``, ``1/2``, ``1 - α/2``; ``ε/3`` each, sensitivity 1, one partition) and the
subsampling interval
``m - sqrt(b/n) (q_hi - m), m - sqrt(b/n) (q_lo - m)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from dpuq._sealed import child_generator
from dpuq._validation import check_epsilon, check_in_open_unit, check_work
from dpuq.inference._data import SubsetRegimeWarning
from dpuq.inference._statistic_report import (
    _finish,
    _report,
    _subset_regime_caution,
    _trivial,
)
from dpuq.inference._subsets import SubsetSummaries, _rows, subset_summaries, weighted_quantile
from dpuq.inference.aggregation import (
    _em_value,
    _private_clamped_mean,
    _subsampling_coordinate,
    _tail_second_moment,
)
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.inference.ensemble import _resolve_resamples
from dpuq.inference.general_plan import (
    LOCATION_BETA,
    MIN_LOCATING_SUBSET,
    SPREAD_FRACTION_MIN,
    SPREAD_RADII,
    SPREAD_SHARES,
    SPREAD_SWITCH,
    _check_statistic_bounds,
    _count_floor,
    _count_scale,
    _log_sd_grid,
    _spread_from_count,
    estimate_subsets,
    location_epsilon,
    location_failure_bound,
    resolve_general_subsets,
)
from dpuq.inference.normal_laplace import normal_laplace_quantile
from dpuq.mechanisms.discrete_laplace import laplace_release

__all__ = [
    "DEFAULT_GENERAL_RESAMPLES",
    "ESTIMATE_SHARE",
    "LOCATION_BETA",
    "SubsetSummaries",
    "location_failure_bound",
    "resolve_general_subsets",
    "subset_summaries",
    "weighted_quantile",
]

#: Bootstrap resamples per subset (the spread is averaged over the ``s`` subsets).
DEFAULT_GENERAL_RESAMPLES = 50
#: Share of each coordinate's ε spent on the point estimate; the rest on the standard error.
ESTIMATE_SHARE = 0.7
#: Share of each part spent on its private median (the rest on the clamped mean).
MEDIAN_SHARE = {"estimate": 0.35, "se": 0.5}
#: Half-width of the estimate's clamping window, in normal-equivalent spreads of one subset's
#: estimate. Subset estimates of a nonlinear statistic on tens of rows of skewed data are
#: skewed (the jackknife-corrected ones more so); 3 spreads clipped their long tail and biased
#: the mean (issue 33: a correlation on diamonds covered 0.70 at 3, 0.82 at 4).
KAPPA = 4.0
#: Share of the estimate's ε (after the location's) spent on the tail-sensitive spread
#: (step 3c'), and the radius, in count-based spreads, at which its squared deviations are
#: clamped. Chosen on synthetic subset-estimate laws (``benchmarks/bench_subset_tails.py``:
#: normal, Student t3, lognormal(0.5), lognormal(1), a 90/10 core-and-exponential-tail
#: mixture), not on the validity zoo: at ``s = 100`` subsets and ε = 1 the two skewed laws'
#: coverage went from 0.80 / 0.78 to 0.89 / 0.87 (nominal 0.90), for 1.55 times the normal
#: law's width (1.23 times at ``s = 64``, ε = 3).
TAIL_SHARE = 0.2
TAIL_RADIUS = 5.0
#: Half-width of the locating window of the estimate, in units of ``sd_b``.
LOCATE_HALF_WIDTH = 1.5
#: Width of the window of ``log sd_k`` whose count locates the preliminary scale (half of it
#: either side: a factor sqrt(2)).
LOG_SD_HALF_WIDTH = math.log(2.0)
#: Most candidates of the estimate's private median (its step is ``sd_b / 2`` otherwise).
MAX_CANDIDATES = 10_001
#: Most groups of the delete-a-group jackknife that bias-corrects each subset's estimate
#: (subsets of at most this many rows get the delete-one jackknife).
JACKKNIFE_GROUPS = 50
#: Above this ratio of the released spread between subsets to the released bootstrap scale,
#: the release carries a caution (a :class:`SubsetRegimeWarning`). Where the method's
#: assumptions hold the two agree up to the jackknife's variance inflation, ``1 + O(1/b)``
#: (1.15-1.18 in simulations of MedExp's ratio of means and Computers' OLS slope at
#: ``b = 25``); a ratio of 2 means the subsets' own bootstrap misses half the spread, i.e. the
#: subsets are far from the asymptotic regime.
SPREAD_RATIO_CAUTION = 2.0


# --- the releases -------------------------------------------------------------------------------


def _ensemble_coordinate(located, theta, lo, hi, b, alpha, eps, share, rng) -> dict:
    """One coordinate's release (steps 3a-d, 4). ``located`` holds the locating subsets'
    ``(θ, sd)`` (``s_0`` values each, ``b_0`` rows); ``theta`` the estimating subsets' ``θ``
    (``s`` values of ``b`` rows; the same subsets when ``s = s_0``)."""
    theta0, sd0, b0 = located
    s, s0 = theta.size, theta0.size
    e_est, e_pre, e_count = _coordinate_budget(eps, share)
    # 1. a preliminary scale: the private location of the subsets' bootstrap log spreads
    pre0 = math.exp(_em_value(np.log(sd0), _log_sd_grid(lo, hi), e_pre, rng,
                              half_width=LOG_SD_HALF_WIDTH / 2.0))  # fmt: skip
    step = max(pre0 / 2.0, (hi - lo) / (MAX_CANDIDATES - 1))
    cand = lo + step * np.arange(math.floor((hi - lo) / step) + 1)
    cand = cand if cand[-1] >= hi else np.append(cand, hi)  # hi once, never twice
    # the location's share: no more than the data-free bound needs (the rest: steps c', d)
    e_med = min(MEDIAN_SHARE["estimate"] * e_est, location_epsilon(cand.size, s0))
    bound = location_failure_bound(cand.size, e_med, s0)
    if bound > LOCATION_BETA:  # a function of the released scale: the trivial answer, said so
        return _trivial(
            lo, hi, f"the estimate's location may miss (bound {bound:.2g} > {LOCATION_BETA:g})"
        )
    # 2. the location of the (locating) subset estimates
    m = _em_value(theta0, cand, e_med, rng, half_width=LOCATE_HALF_WIDTH * pre0)
    pre = pre0 * math.sqrt(b0 / b)  # the scale of one estimating subset's estimate: released
    # 3. the spread between the subset estimates: counts within public radii of m
    counts, scales = [], []
    for radius, part in zip(SPREAD_RADII, SPREAD_SHARES, strict=True):
        scales.append(_count_scale(part, e_count))
        inside = np.count_nonzero(np.abs(theta - m) <= radius * pre)  # NaN: never inside
        counts.append(laplace_release(float(inside), scale=scales[-1], random_state=rng))
    # post-processing of the releases: the wider radius's count where the first says too
    # little, i.e. is below SPREAD_SWITCH of s or below what its noise alone reaches with
    # probability SPREAD_NOISE_BETA (before, a first count between the two made the release
    # trivial although the second could be read: 24 of NMES1988's 200 SD samples, issue 33)
    floors = [_count_floor(i, e_count) for i in range(len(SPREAD_RADII))]
    use = 0 if counts[0] >= max(SPREAD_SWITCH * s, floors[0]) else 1
    noise_floor = floors[use]
    sd_b = None
    if counts[use] >= noise_floor:
        sd_b = _spread_from_count(counts[use], s, SPREAD_RADII[use] * pre)
    if sd_b is None:
        return _trivial(lo, hi, "the subset estimates' spread is too large to measure "
                        f"(released count {counts[use]:.3g} within the radius: below "
                        f"{max(SPREAD_FRACTION_MIN * s, noise_floor):.3g})")  # fmt: skip
    count_spread = sd_b
    # 3c'. a spread that sees the tail: the subset estimates' mean squared deviation from m
    e_tail, tail, radius = TAIL_SHARE * (e_est - e_med), None, TAIL_RADIUS * sd_b
    if e_tail > 0:  # (TAIL_SHARE = 0: the count's spread alone, the estimator before 3c')
        tail = _tail_second_moment(theta, m, radius, e_tail, rng)
        sd_b = max(sd_b, radius * math.sqrt(max(tail.value, 0.0)))  # post-processing
    # 4. the estimate: the subset estimates' mean clamped to a window around m
    w = KAPPA * sd_b + step
    filled = np.where(np.isnan(theta), m, theta)  # no estimate: the released location
    cm = _private_clamped_mean(filled, epsilon=e_est - e_med - e_tail, half_width=w, center=m,
                               rng=rng)  # fmt: skip
    value = min(max(cm.value, lo), hi)
    sigma = sd_b / math.sqrt(s)
    half = normal_laplace_quantile(1.0 - alpha / 2.0, sigma, cm.noise_scale)
    out = {
        "lower": max(value - half, lo),
        "upper": min(value + half, hi),
        "estimate": value,
        "standard_error": sigma,
        "estimate_noise_scale": cm.noise_scale,
        "preliminary_scale": pre0,
        "estimating_scale": pre,
        "count_spread": count_spread,
        # the released mean squared deviation and its noise scale, in the statistic's units
        "tail_second_moment": tail.value * radius**2 if tail else None,
        "tail_noise_scale": tail.noise_scale * radius**2 if tail else None,
        "spread_counts": tuple(counts),
        "spread_count_noise_scales": tuple(scales),
        "released_median": m,
        "window_half_width": w,
    }
    # released values only (post-processing): the spread a count one noise standard deviation
    # higher would give, so that the count's noise alone rarely raises a caution
    higher = counts[use] + math.sqrt(2.0) * scales[use]
    ratio = (_spread_from_count(higher, s, SPREAD_RADII[use] * pre) or count_spread) / pre
    if ratio > SPREAD_RATIO_CAUTION:
        out["caution"] = _subset_regime_caution(ratio)
        # the user's call (see _trivial): four frames up
        warnings.warn(out["caution"], SubsetRegimeWarning, stacklevel=5)
    return out


def _coordinate_budget(eps: float, share: float) -> tuple[float, float, float]:
    """``(ε_estimate, ε_scale, ε_counts)`` of one coordinate's ε: ``share`` for the location,
    the tail's second moment and the mean (split in :func:`_ensemble_coordinate`), the rest
    halved between the preliminary scale and the spread's counts."""
    e_est = share * eps
    e_pre = MEDIAN_SHARE["se"] * (eps - e_est)
    return e_est, e_pre, eps - e_est - e_pre


def _private_statistic_interval(
    x,
    statistic: Callable,
    *,
    statistic_bounds,
    alpha: float,
    epsilon: float,
    method: str = "ensemble",
    n_subsets="auto",
    n_resamples="auto",
    estimate_share: float = ESTIMATE_SHARE,
    vectorized: bool = False,
    resample_size: str = "subset",
    bias_correction: bool = True,
    name: str | None = None,
    rng: np.random.Generator,
    charge_cost: Callable[[float], None] = lambda eps: None,
) -> ConfidenceInterval | tuple[ConfidenceInterval, ...]:
    """The interval of the module docstring (called by :func:`dpuq.private_confidence_interval`).

    ``charge_cost(epsilon)`` runs after every setting is validated and after the subsets'
    (unreleased) summaries, before any noise: a ``KeyboardInterrupt`` while ``statistic``
    runs aborts with nothing charged and nothing released. Returns one
    :class:`ConfidenceInterval` for scalar ``statistic_bounds``, else a tuple with one per
    coordinate, each carrying the call's
    privacy report (its ε is the call's total).
    """
    if not callable(statistic):
        raise TypeError("statistic must be callable: f(rows, sample_weight) -> float or array")
    if not isinstance(vectorized, bool | np.bool_):
        raise TypeError(f"vectorized must be True or False, got {vectorized!r}")
    if resample_size not in ("n", "subset"):
        raise ValueError(f"resample_size must be 'n' or 'subset', got {resample_size!r}")
    if not isinstance(bias_correction, bool | np.bool_):
        raise TypeError(f"bias_correction must be True or False, got {bias_correction!r}")
    if method not in ("ensemble", "subsampling"):
        raise ValueError(
            f"method must be 'ensemble' or 'subsampling' for a callable statistic, got {method!r}"
        )
    a = check_in_open_unit(alpha, "alpha")
    eps = check_epsilon(epsilon)
    share = check_in_open_unit(estimate_share, "estimate_share")
    lo, hi, scalar = _check_statistic_bounds(statistic_bounds)
    n, _ = _rows(x)
    p = lo.size
    e_c = eps / p  # each coordinate's share
    e_pre, e_count = _coordinate_budget(e_c, share)[1:]
    if method == "ensemble" and isinstance(n_subsets, str):  # "auto": two partitions, step 1
        s0 = resolve_general_subsets(n_subsets, n, e_c, min_rows=MIN_LOCATING_SUBSET)
        # public: twice the first spread count's noise floor, so that the count can be read
        s = estimate_subsets(n, e_c, s0, at_least=math.ceil(2.0 * _count_floor(0, e_count)))
    else:
        s = s0 = resolve_general_subsets(n_subsets, n, e_c)
    tt = _resolve_resamples(n_resamples, DEFAULT_GENERAL_RESAMPLES)
    if method == "ensemble" and tt < 2:
        raise ValueError("n_resamples must be >= 2 for method='ensemble' (a standard deviation)")
    if method == "ensemble":  # data-free: can the spread's location be trusted at all?
        bound = location_failure_bound(_log_sd_grid(0.0, 1.0).size, e_pre, s0)
    else:
        bound = location_failure_bound(MAX_CANDIDATES, e_c / 3, s0)
    if bound > LOCATION_BETA:  # nothing is computed from the data: nothing is spent
        why = f"the spread's location may miss (bound {bound:.2g} > {LOCATION_BETA:g})"
        rows = [_trivial(lo[j], hi[j], why)
                for j in range(p)]  # fmt: skip
        return _finish(rows, statistic, name, method, a, scalar, _report(
            0.0, method, n, s, tt, p, share, (n // s0) if method == "ensemble" else 0, n // s,
            "nothing was computed from the data (the data-free bound above); cost 0",
            (s0, n // s0)))  # fmt: skip
    tt_run = tt if method == "ensemble" else 1

    def groups(k: int) -> int:
        return min(JACKKNIFE_GROUPS, n // k) if bias_correction else 0

    check_work(  # the same caps subset_summaries applies, checked before the charge
        s0 * (tt_run + groups(s0)) * (n // s0) + (s != s0) * s * (1 + groups(s)) * (n // s),
        f"n_subsets x n_resamples x subset size = {s0:,} x {tt_run:,} x {n // s0:,}"
        + (f" plus {s:,} x {1 + groups(s):,} x {n // s:,}" if s != s0 else ""),
        "use fewer resamples (n_resamples)",
    )
    # both partitions' generators are fixed before f is called (f never sees either)
    rng_est = child_generator(rng) if s != s0 else rng
    # unreleased; before the charge, so an interrupt charges nothing
    kw = {"vectorized": vectorized, "resample_size": resample_size}
    loc = subset_summaries(x, statistic, lo, hi, n_subsets=s0, n_resamples=tt_run,
                           jackknife_groups=groups(s0), rng=rng, **kw)  # fmt: skip
    summ = loc
    if s != s0:  # the estimating subsets: a second, independent partition (step 1)
        summ = subset_summaries(x, statistic, lo, hi, n_subsets=s, n_resamples=0,
                                jackknife_groups=groups(s), rng=rng_est, **kw)  # fmt: skip
    charge_cost(eps)
    b = summ.subset_size
    rows = []
    for j in range(p):  # coordinates (a handful): each gets e_c = eps / p
        if method == "ensemble":
            rows.append(
                _ensemble_coordinate(
                    (loc.theta[:, j], loc.sd[:, j], loc.subset_size),
                    summ.theta[:, j],
                    lo[j],
                    hi[j],
                    b,
                    a,
                    e_c,
                    share,
                    rng,
                )
            )
        else:
            rows.append(_subsampling_coordinate(summ.theta[:, j], lo[j], hi[j], n, b, a,
                                                e_c, rng, MAX_CANDIDATES))  # fmt: skip
    rs = loc.subset_size if resample_size == "subset" else n
    report = _report(eps, method, n, s, tt, p, share, rs, b, None, (s0, loc.subset_size))
    return _finish(rows, statistic, name, method, a, scalar, report)
