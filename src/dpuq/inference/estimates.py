"""Private point estimates of a bounded sample: mean, trimmed mean, median, variance.

These are the ``θ̃`` of Chadha et al. 2024 (the private estimate the confidence interval is centred
on)
and the private variance used to studentize. Each is a small, separately auditable mechanism.

Privacy (all of them)
---------------------
Input domain: samples ``x_1..x_n`` in a public interval ``[a, b]``, ``R = b - a``; data
outside it are an error (or clipped on request, see :func:`dpuq.inference.check_data`).
Neighbouring relation: replace-one with ``n`` public (two samples of the same size that differ
in one record). Guarantee: ε-DP (δ = 0) each. Sensitivities, proved in one line each:

- mean: ``R/n`` (one term of the sum moves by at most ``R``).
- trimmed mean dropping ``k = floor(trim n)`` values at each end: ``R/(n - 2k)``. Replacing
  ``u`` by ``u'`` moves every order statistic in the direction of ``u' - u`` and their total by
  exactly ``u' - u``, so the sum of the middle ``n - 2k`` moves by at most ``|u' - u| <= R``.
- plug-in variance ``(1/n) sum (x_i - x̄)^2``: ``R^2/n``. Replacing ``u`` by ``u'`` changes
  it by ``(u' - u)(u' + u - x̄ - x̄')/n`` with ``u, u', x̄, x̄'`` in ``[a, b]`` and
  ``x̄' - x̄ = (u' - u)/n``; the maximum over the box is ``R^2 (n - 1)/n^2 < R^2/n``.
- median: its global sensitivity is ``R`` (no useful Laplace release), so it is released with
  the exponential mechanism over a public grid of candidates ``c_j`` in ``[a, b]`` with
  utility ``-max(#{x < c_j}, #{x > c_j})`` (sensitivity 1: each count moves by at most 1),
  ``P(c_j) ∝ exp(-ε max(...)/2)``; exact law: :func:`private_median_log_distribution`.
  Accuracy: with probability ``1 - β`` the released candidate has at most
  ``n/2 + (2/ε)(ln G + ln(1/β))`` points on either side (the exponential mechanism's
  accuracy bound).

The Laplace releases use :func:`dpuq.mechanisms.laplace.laplace_mechanism`; see its module for
the floating-point caveat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpuq._validation import check_candidates, check_epsilon, check_positive_int
from dpuq.inference._blocks import blocked_mean_variance
from dpuq.inference._data import (
    Statistic,
    check_bounds,
    check_data,
    parse_statistic,
)
from dpuq.inference._tiles import ArrayData, exact_statistic
from dpuq.mechanisms.discrete_laplace import check_laplace_epsilon
from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
)
from dpuq.mechanisms.laplace import laplace_release, laplace_scale
from dpuq.mechanisms.randomness import RandomState, check_random_state, mark_seeded
from dpuq.privacy.ledger import CALLER_CHARGED, charge
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "DEFAULT_MEDIAN_CANDIDATES",
    "PrivateEstimate",
    "mean_sensitivity",
    "median_candidates",
    "private_mean",
    "private_median",
    "private_median_log_distribution",
    "private_trimmed_mean",
    "private_variance",
    "trimmed_mean_sensitivity",
    "variance_sensitivity",
]

#: Default number of equally spaced median candidates in ``[a, b]`` (resolution ``R/1000``).
DEFAULT_MEDIAN_CANDIDATES = 1001


@dataclass(frozen=True)
class PrivateEstimate:
    """A released point estimate.

    Attributes
    ----------
    value : float
        The released estimate.
    statistic : str
        ``"mean"``, ``"trimmed_mean"``, ``"median"`` or ``"variance"``.
    noise_scale : float or None
        The Laplace scale used (``sensitivity / epsilon``); None for the median.
    privacy_report : PrivacyReport
    """

    value: float
    statistic: str
    noise_scale: float | None
    privacy_report: PrivacyReport


def mean_sensitivity(n: int, bounds) -> float:
    """Replace-one sensitivity ``R/n`` of the mean of ``n`` values in ``bounds``.

    Examples
    --------
    >>> mean_sensitivity(10, (0.0, 5.0))
    0.5
    """
    a, b = check_bounds(bounds)
    return (b - a) / check_positive_int(n, "n")


def trimmed_mean_sensitivity(n: int, bounds, trim: float) -> float:
    """Replace-one sensitivity ``R/(n - 2k)``, ``k = floor(trim n)``, of the trimmed mean.

    Examples
    --------
    >>> trimmed_mean_sensitivity(10, (0.0, 6.0), 0.2)  # k = 2: R / 6
    1.0
    """
    a, b = check_bounds(bounds)
    stat = parse_statistic("trimmed_mean", trim)
    n = check_positive_int(n, "n")
    return (b - a) / (n - 2 * stat.n_trim(n))


def variance_sensitivity(n: int, bounds) -> float:
    """Replace-one sensitivity bound ``R^2/n`` of the plug-in variance.

    Examples
    --------
    >>> variance_sensitivity(4, (0.0, 2.0))
    1.0
    """
    a, b = check_bounds(bounds)
    return (b - a) ** 2 / check_positive_int(n, "n")


def median_candidates(bounds, n_candidates: int = DEFAULT_MEDIAN_CANDIDATES) -> np.ndarray:
    """The public grid of median candidates: ``n_candidates`` equally spaced points in bounds.

    Examples
    --------
    >>> median_candidates((0.0, 1.0), 3).tolist()
    [0.0, 0.5, 1.0]
    """
    a, b = check_bounds(bounds)
    g = check_candidates(n_candidates)
    return np.linspace(a, b, g)


def _median_utilities(x_sorted: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    below = np.searchsorted(x_sorted, candidates, side="left")
    above = x_sorted.size - np.searchsorted(x_sorted, candidates, side="right")
    return -np.maximum(below, above).astype(float)


def _report(stat_name: str, epsilon: float, sensitivity: str, **details) -> PrivacyReport:
    mech = (
        "exponential mechanism (median over a public grid)"
        if stat_name == "median"
        else f"Laplace mechanism ({stat_name})"
    )
    return PrivacyReport(
        mechanism=mech,
        epsilon=epsilon,
        relation=Relation.REPLACE_ONE,
        sensitivity=sensitivity,
        details=details,
    )


# --- internal releases on validated data (used by the interval code) -------------------------


def _checked(x, bounds, clip: bool = False):
    """Validated data: a NumPy array, or for a Dask collection the chunk-wise data object of
    :mod:`dpuq.inference._dask` (sums, counts and order statistics on the workers)."""
    if is_dask_collection(x):
        from dpuq.inference._dask import dask_interval_data

        return dask_interval_data(x, bounds, clip=clip, statistic="mean", method="ensemble")
    return check_data(x, bounds, clip=clip)[0]


def _release_point_estimate(
    x: np.ndarray,
    stat: Statistic,
    bounds: tuple[float, float],
    epsilon: float,
    rng: np.random.Generator,
    n_candidates: int = DEFAULT_MEDIAN_CANDIDATES,
    *,
    n: int | None = None,
    exact=None,
) -> PrivateEstimate:
    """Release ``θ̃`` for a validated sample; ε-DP (see the module docstring).

    ``n`` and ``exact`` let a chunked caller pass the sample's size and exact statistic
    instead of ``x`` (then None): the mean or trimmed mean, or for the median the candidates'
    counts ``(#{x < c_j}, #{x <= c_j})`` (:mod:`dpuq.inference._tiles`).
    """
    if x is not None and not isinstance(x, np.ndarray):  # chunked (Dask) data: its statistic
        cand = median_candidates(bounds, n_candidates) if stat.name == "median" else None
        n, exact, x = x.size, exact_statistic(x, stat, cand), None
    n = x.size if n is None else n
    a, b = bounds
    if stat.name == "median":
        cand = median_candidates(bounds, n_candidates)
        if exact is None:
            u = _median_utilities(np.sort(x), cand)
        else:  # -max(#{x < c}, #{x > c}) from the counts
            u = -np.maximum(exact[0], n - np.asarray(exact[1])).astype(float)
        j = exponential_mechanism(
            u, epsilon=epsilon, sensitivity=1.0, random_state=rng, ledger=CALLER_CHARGED
        )
        rep = _report(
            "median",
            epsilon,
            "1 (each count of the utility moves by at most 1)",
            n=n,
            candidates=f"{cand.size} equally spaced in [{a:g}, {b:g}]",
        )
        return PrivateEstimate(float(cand[j]), "median", None, rep)
    if stat.name == "mean":
        sens = mean_sensitivity(n, bounds)
        text = f"R/n = {sens:.6g}"
    else:
        sens = trimmed_mean_sensitivity(n, bounds, stat.trim)
        text = f"R/(n - 2k) = {sens:.6g} (k = {stat.n_trim(n)} dropped at each end)"
    scale = laplace_scale(sens, epsilon)
    if stat.name == "mean":  # on the block grid, like the Dask path (dpuq.inference._dask)
        exact = blocked_mean_variance(x)[0] if exact is None else exact
    elif exact is None:  # order statistics, then block sums: as on Dask (dpuq.inference._tiles)
        exact = exact_statistic(ArrayData(x), stat, None)
    value = laplace_release(float(exact), scale=scale, random_state=rng)
    rep = _report(stat.name, epsilon, text, n=n, noise_scale=scale)
    return PrivateEstimate(value, stat.name, scale, rep)


def _release_variance(
    x: np.ndarray | None,
    bounds: tuple[float, float],
    epsilon: float,
    rng: np.random.Generator,
    *,
    n: int | None = None,
    exact: float | None = None,
) -> PrivateEstimate:
    """Release the plug-in variance plus ``Laplace(R^2/(n ε))``; ε-DP. May be negative.

    ``n`` and ``exact`` let a chunked caller pass the size and plug-in variance instead of
    ``x``.
    """
    if x is not None and not isinstance(x, np.ndarray):  # chunked (Dask) data
        n, exact, x = x.size, x.mean_variance()[1], None
    n = x.size if n is None else n
    sens = variance_sensitivity(n, bounds)
    scale = laplace_scale(sens, epsilon)
    exact = blocked_mean_variance(x)[1] if exact is None else exact
    value = laplace_release(float(exact), scale=scale, random_state=rng)
    rep = _report("variance", epsilon, f"R^2/n = {sens:.6g}", n=n, noise_scale=scale)
    return PrivateEstimate(value, "variance", scale, rep)


# --- public functions ---------------------------------------------------------------------------


def _charge(what, ledger, dataset, eps, random_state, n, bounds, clip) -> None:
    """Charge one point estimate (public settings only) after its checks, before its noise."""
    a, b = check_bounds(bounds)
    settings = {"statistic": what.removeprefix("private_"), "n": int(n), "bounds": [a, b]}
    settings["clip"] = bool(clip)
    charge(ledger, dataset, eps, what=what, random_state=random_state, settings=settings)


def private_mean(
    x,
    *,
    epsilon: float,
    bounds,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateEstimate:
    """Release the mean of data in public ``bounds`` with the Laplace mechanism; ε-DP.

    Noise ``Laplace(R/(n ε))``; replace-one neighbours, ``n`` public (module docstring).

    Parameters
    ----------
    x : array-like of shape (n,)
        The data, inside ``bounds``.
    epsilon : float
        Privacy parameter, > 0.
    bounds : (float, float)
        Public interval ``[a, b]`` known to contain every value (from public knowledge, never
        from the data).
    clip : bool, default False
        Clip values outside ``bounds`` instead of raising. Silent: whether any value was
        clipped depends on the data and is not released (docs/explanation/privacy.md).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge ε to ``dataset``'s budget after every check and before any noise is drawn
        (:func:`dpuq.privacy.ledger.charge`), or refuse the release.

    Returns
    -------
    PrivateEstimate

    Examples
    --------
    >>> est = private_mean([1.0, 2.0, 3.0], epsilon=1.0, bounds=(0, 4), random_state=0)
    >>> round(est.noise_scale, 6)  # R / (n ε)
    1.333333
    """
    eps = check_laplace_epsilon(epsilon)  # the exact sampler's floor, before the charge
    data = _checked(x, bounds, clip)
    rng = check_random_state(random_state)
    _charge("private_mean", ledger, dataset, eps, random_state, data.size, bounds, clip)
    release = _release_point_estimate(data, Statistic("mean"), check_bounds(bounds), eps, rng)
    return mark_seeded(release, random_state)


def private_trimmed_mean(
    x,
    *,
    epsilon: float,
    bounds,
    trim: float = 0.1,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateEstimate:
    """Release the trimmed mean with ``Laplace(R/((n - 2k) ε))``, ``k = floor(trim n)``; ε-DP.

    Parameters are those of :func:`private_mean` (``ledger``/``dataset`` too), plus ``trim``
    in [0, 0.5), the proportion dropped at each end.

    Examples
    --------
    >>> est = private_trimmed_mean(
    ...     [0.0, 1.0, 2.0, 3.0, 100.0], epsilon=1.0, bounds=(0, 100), trim=0.2, random_state=0
    ... )
    >>> round(est.noise_scale, 6)  # k = 1: R / ((n - 2) ε)
    33.333333
    """
    eps = check_laplace_epsilon(epsilon)  # the exact sampler's floor, before the charge
    stat = parse_statistic("trimmed_mean", trim)
    data = _checked(x, bounds, clip)
    if data.size - 2 * stat.n_trim(data.size) < 1:
        raise ValueError("trim leaves no data")
    rng = check_random_state(random_state)
    _charge("private_trimmed_mean", ledger, dataset, eps, random_state, data.size, bounds, clip)
    release = _release_point_estimate(data, stat, check_bounds(bounds), eps, rng)
    return mark_seeded(release, random_state)


def private_median(
    x,
    *,
    epsilon: float,
    bounds,
    n_candidates: int = DEFAULT_MEDIAN_CANDIDATES,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateEstimate:
    """Release the median with the exponential mechanism over a public grid; ε-DP.

    The candidates are ``n_candidates`` equally spaced points in ``bounds``; candidate ``c``
    has utility ``-max(#{x < c}, #{x > c})`` (sensitivity 1 under replace-one). Exact law:
    :func:`private_median_log_distribution`. ``clip``, ``random_state``, ``ledger`` and
    ``dataset``: as for :func:`private_mean`.

    Examples
    --------
    >>> est = private_median([1.0, 2.0, 3.0] * 50, epsilon=5.0, bounds=(0, 4), random_state=0)
    >>> abs(est.value - 2.0) < 0.5
    True
    """
    eps = check_epsilon(epsilon)
    data = _checked(x, bounds, clip)
    rng = check_random_state(random_state)
    median_candidates(bounds, n_candidates)  # checked before the charge
    _charge("private_median", ledger, dataset, eps, random_state, data.size, bounds, clip)
    release = _release_point_estimate(
        data, Statistic("median"), check_bounds(bounds), eps, rng, n_candidates
    )
    return mark_seeded(release, random_state)


def private_median_log_distribution(
    x, *, epsilon: float, bounds, n_candidates: int = DEFAULT_MEDIAN_CANDIDATES
) -> tuple[np.ndarray, np.ndarray]:
    """Exact output law of :func:`private_median`: ``(candidates, log_probabilities)``.

    Examples
    --------
    >>> c, lp = private_median_log_distribution(
    ...     [0.0, 0.5, 1.0], epsilon=1.0, bounds=(0, 1), n_candidates=3
    ... )
    >>> c[np.argmax(lp)]
    np.float64(0.5)
    """
    eps = check_epsilon(epsilon)
    data = _checked(x, bounds)
    cand = median_candidates(bounds, n_candidates)
    if isinstance(data, np.ndarray):
        u = _median_utilities(np.sort(data), cand)
    else:  # counts summed over the chunks
        below, at_most = data.median_counts(cand)
        u = -np.maximum(below, data.size - np.asarray(at_most)).astype(float)
    return cand, exponential_mechanism_log_probabilities(u, epsilon=eps, sensitivity=1.0)


def private_variance(
    x,
    *,
    epsilon: float,
    bounds,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateEstimate:
    """Release the plug-in variance with ``Laplace(R^2/(n ε))``; ε-DP.

    The released value can be negative (it is the noisy variance, not clipped). Parameters:
    as for :func:`private_mean`.

    Examples
    --------
    >>> est = private_variance([0.0, 1.0] * 50, epsilon=1.0, bounds=(0, 1), random_state=0)
    >>> round(est.noise_scale, 9)  # R^2/(n ε), up to the exact noise's lattice (1e-12)
    0.01
    """
    eps = check_laplace_epsilon(epsilon)  # the exact sampler's floor, before the charge
    data = _checked(x, bounds, clip)
    rng = check_random_state(random_state)
    _charge("private_variance", ledger, dataset, eps, random_state, data.size, bounds, clip)
    return mark_seeded(_release_variance(data, check_bounds(bounds), eps, rng), random_state)
