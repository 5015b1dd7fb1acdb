"""The accountants of :mod:`dpuq.privacy.accounting`: GDP (central limit), PLD and RDP
(dp-accounting).

Each takes a schedule of noise multipliers ``σ_t`` at Poisson sampling rate ``p`` and a
neighbouring relation, and bounds (or, GDP, approximates) the ε at a given δ; the setting,
the relations and the arguments are in :mod:`dpuq.privacy.accounting`'s docstring, which is the
module users call (``dpuq.privacy.accounting.epsilon_spent(..., accountant=...)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import log_ndtr, ndtr

from dpuq._validation import _as_float, check_in_open_unit, first_nonpositive
from dpuq.privacy.report import Relation

__all__ = [
    "DEFAULT_DISCRETIZATION",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "pld_epsilon",
    "rdp_curve",
    "rdp_epsilon",
]

#: Privacy-loss grid of the PLD accountant (pessimistic: finer is tighter and slower).
DEFAULT_DISCRETIZATION = 1e-3

NEIGHBOURING_ADD_REMOVE = Relation.ADD_REMOVE.description


def _check_relation(relation) -> Relation:
    return Relation.coerce(relation)


def _check_sample_rate(sample_rate) -> float:
    p = _as_float(sample_rate, "sample_rate")
    if not (0.0 < p <= 1.0):
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    return p


def _check_delta(delta) -> float:
    return check_in_open_unit(delta, "delta")


def _check_sigmas(noise_multipliers, name: str = "noise_multipliers") -> np.ndarray:
    try:
        s = np.asarray(noise_multipliers, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    s = np.atleast_1d(s)
    if s.ndim != 1:
        raise ValueError(f"{name} must be a 1-d sequence of per-step values, got shape {s.shape}")
    if s.size == 0:
        raise ValueError(f"{name} is empty: no training step to account for")
    i = first_nonpositive(s)
    if i is not None:
        n_bad = int(np.count_nonzero(~np.isfinite(s) | (s <= 0)))
        raise ValueError(
            f"{name} must be finite and > 0 at every step; {n_bad} are not "
            f"(first: step {i}, value {s[i]!r})"
        )
    return s


def gdp_mu(
    sample_rate: float,
    noise_multipliers: Sequence[float] | np.ndarray,
    *,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> float:
    """GDP central-limit parameter ``μ = p · sqrt(Σ_t (exp(1/σ_t²) − 1))`` (Bu et al. 2020).

    That ``μ`` is for add/remove neighbours; under replace-one the parameter is ``2μ``
    (group privacy of size 2 for GDP: Dong, Roth, Su 2019, Thm 2.14).

    Parameters
    ----------
    sample_rate : float
        Poisson sampling rate ``p = B / N`` in (0, 1].
    noise_multipliers : array-like of float
        ``σ_t`` of every step taken (all finite and > 0).
    relation : Relation or str, default "replace-one"

    Returns
    -------
    float

    Examples
    --------
    The the paper's known value: ``p = 256/60000``, ``σ = 1.06``, 20 epochs (4,688 steps).

    >>> round(gdp_mu(256 / 60000, [1.06] * 4688, relation="add/remove-one"), 3)
    0.35
    >>> round(gdp_mu(256 / 60000, [1.06] * 4688), 3)
    0.7
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    factor = 2.0 if _check_relation(relation) is Relation.REPLACE_ONE else 1.0
    with np.errstate(over="ignore"):
        terms = np.expm1(1.0 / s**2)
    total = math.fsum(terms.tolist())
    return factor * p * math.sqrt(total) if math.isfinite(total) else math.inf


def _check_mu(mu) -> float:
    m = _as_float(mu, "mu")
    if math.isnan(m) or m < 0:
        raise ValueError(f"mu must be >= 0, got {mu!r}")
    return m


def _log_gdp_delta_terms(mu: float, eps: float) -> float:
    """``δ(ε)`` for μ-GDP, computed with log-CDFs (no overflow of ``e^ε``)."""
    a = ndtr(-eps / mu + mu / 2.0)
    b = math.exp(eps + float(log_ndtr(-eps / mu - mu / 2.0)))
    return max(float(a) - b, 0.0)


def gdp_delta(mu: float, epsilon: float) -> float:
    """``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`` of a μ-GDP mechanism (Dong et al. 2019).

    Examples
    --------
    >>> round(gdp_delta(1.0, 1.0), 4)
    0.1269
    """
    m = _check_mu(mu)
    e = _as_float(epsilon, "epsilon")
    if math.isnan(e) or e < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if m == 0:
        return 0.0
    if math.isinf(m):
        return 1.0
    return _log_gdp_delta_terms(m, e)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ``ε >= 0`` with ``δ(ε) <= delta`` for a μ-GDP mechanism.

    Parameters
    ----------
    mu : float
        GDP parameter (``μ >= 0``; ``inf`` gives ``ε = inf``).
    delta : float
        Target δ in (0, 1).

    Returns
    -------
    float

    Examples
    --------
    The the paper's known values (δ = 1e-5):

    >>> round(gdp_epsilon(0.350, 1e-5), 2), round(gdp_epsilon(1.785, 1e-5), 2)
    (1.34, 8.7)
    """
    m = _check_mu(mu)
    d = _check_delta(delta)
    if m == 0:
        return 0.0
    if math.isinf(m):
        return math.inf
    if _log_gdp_delta_terms(m, 0.0) <= d:
        return 0.0
    lo, hi = 0.0, max(1.0, m * m)
    while _log_gdp_delta_terms(m, hi) > d:
        lo, hi = hi, 2.0 * hi
    from scipy.optimize import brentq

    return float(brentq(lambda e: _log_gdp_delta_terms(m, e) - d, lo, hi, xtol=1e-12, rtol=1e-12))


# ---------------------------------------------------------------------------------------------
# Rigorous accountants (dp-accounting)


def _import_dp_accounting():
    try:
        import dp_accounting
        from dp_accounting.pld import privacy_loss_distribution as pld_lib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the PLD and RDP accountants need the 'dp-accounting' package: "
            "pip install 'dpuq[torch]' (or pip install dp-accounting)"
        ) from exc
    return dp_accounting, pld_lib


def _check_bucket_ratio(bucket_ratio) -> float:
    r = _as_float(bucket_ratio, "bucket_ratio")
    if not (1.0 <= r < math.inf):
        raise ValueError(f"bucket_ratio must be >= 1 and finite, got {bucket_ratio!r}")
    return r


def _bucket_index(s: np.ndarray, ratio: float) -> np.ndarray:
    if ratio == 1.0:
        _, idx = np.unique(s, return_inverse=True)
        return idx
    return np.floor(np.log(s / s.min()) / math.log(ratio) + 1e-12).astype(np.int64)


def _grouped(s: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Groups of steps with σ within ``ratio``: (smallest σ of each group, steps in it)."""
    idx = _bucket_index(s, ratio)
    uniq, inverse, counts = np.unique(idx, return_inverse=True, return_counts=True)
    smallest = np.full(uniq.size, np.inf)
    np.minimum.at(smallest, inverse, s)
    return smallest, counts


def _runs(s: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of consecutive steps in one bucket: (smallest σ of each run, length)."""
    idx = _bucket_index(s, ratio)
    starts = np.flatnonzero(np.r_[True, np.diff(idx) != 0])
    lengths = np.diff(np.r_[starts, s.size])
    return np.minimum.reduceat(s, starts), lengths


def _neighboring(relation: Relation):
    dpa, _ = _import_dp_accounting()
    nr = dpa.NeighboringRelation
    return nr.REPLACE_ONE if relation is Relation.REPLACE_ONE else nr.ADD_OR_REMOVE_ONE


def _step_pld(pld_lib, sigma: float, p: float, discretization: float, relation: Relation):
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=float(sigma),
        sampling_prob=p,
        value_discretization_interval=discretization,
        neighboring_relation=_neighboring(relation),
    )


def _compose(pld_lib, groups, p: float, discretization: float, relation: Relation):
    total = None
    for sigma, count in zip(*groups, strict=True):
        part = _step_pld(pld_lib, sigma, p, discretization, relation).self_compose(int(count))
        total = part if total is None else total.compose(part)
    return total


def _pld_max_steps(p: float, s: np.ndarray, eps: float, d: float, r: float, rel: Relation) -> int:
    """PLD part of :func:`dpuq.privacy.accounting.max_steps`: the longest prefix of ``s`` within ε.

    Runs of steps in one bucket are composed whole while they fit; in the run that does not,
    the prefix length is bisected (ε of a prefix grows with its length).
    """
    _, pld_lib = _import_dp_accounting()
    disc = DEFAULT_DISCRETIZATION
    run_sigma, run_len = _runs(s, r)
    groups = _grouped(s, r)
    if run_sigma.size > 2 * groups[0].size:  # unordered schedule: one cheap check first
        if _compose(pld_lib, groups, p, disc, rel).get_epsilon_for_delta(d) <= eps:
            return int(s.size)
    cache: dict[float, object] = {}
    done, total = 0, None
    for sigma, length in zip(run_sigma.tolist(), run_len.tolist(), strict=True):
        if sigma not in cache:
            cache[sigma] = _step_pld(pld_lib, sigma, p, disc, rel)
        step = cache[sigma]
        candidate = step.self_compose(length)
        if total is not None:
            candidate = total.compose(candidate)
        if candidate.get_epsilon_for_delta(d) <= eps:
            total, done = candidate, done + length
            continue
        lo, hi = 0, length  # a prefix of lo steps of this run fits, of hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            trial = step.self_compose(mid)
            if total is not None:
                trial = total.compose(trial)
            if trial.get_epsilon_for_delta(d) <= eps:
                lo = mid
            else:
                hi = mid
        return done + lo
    return done


def pld_epsilon(
    sample_rate: float,
    noise_multipliers,
    delta: float,
    *,
    bucket_ratio: float = 1.01,
    discretization: float = DEFAULT_DISCRETIZATION,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> float:
    """ε at ``delta`` of the composed Poisson-subsampled Gaussian steps, by PLD (rigorous).

    Parameters
    ----------
    sample_rate : float
        Poisson sampling rate ``p`` in (0, 1].
    noise_multipliers : array-like of float
        ``σ_t`` of every step (finite, > 0).
    delta : float
        Target δ in (0, 1).
    bucket_ratio : float, default 1.01
        Steps whose σ lie within this factor are accounted together with their smallest σ
        (an upper bound; 1 groups only equal σ). Cost grows with the number of groups.
    discretization : float, default 1e-3
        Privacy-loss grid of the PLD (pessimistic rounding: still an upper bound). A finer
        grid gives a slightly smaller ε (about 0.5% at ε = 1 for 1e-4) at ~5x the cost.
    relation : Relation or str, default "replace-one"
        The neighbouring relation (dp-accounting's own analysis for each; module docstring).

    Returns
    -------
    float
        An upper bound on the ε of the schedule at ``delta`` under ``relation``.

    Examples
    --------
    >>> round(pld_epsilon(0.01, [1.0] * 1000, 1e-5), 2)
    2.84
    >>> round(pld_epsilon(0.01, [1.0] * 1000, 1e-5, relation="add/remove-one"), 2)
    1.83
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    d = _check_delta(delta)
    r = _check_bucket_ratio(bucket_ratio)
    disc = _as_float(discretization, "discretization")
    if not (0 < disc < 1):
        raise ValueError(f"discretization must be in (0, 1), got {discretization!r}")
    rel = _check_relation(relation)
    _, pld_lib = _import_dp_accounting()
    return float(_compose(pld_lib, _grouped(s, r), p, disc, rel).get_epsilon_for_delta(d))


def rdp_epsilon(
    sample_rate: float,
    noise_multipliers,
    delta: float,
    *,
    bucket_ratio: float = 1.01,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> float:
    """ε at ``delta`` by Rényi-DP accounting (rigorous, usually looser than PLD).

    Steps are grouped as in :func:`pld_epsilon` (each group with its smallest σ). Under
    replace-one: the add/remove bound converted by group privacy (module docstring).

    Examples
    --------
    >>> 1.4 < rdp_epsilon(256 / 60000, [1.06] * 4688, 1e-5, relation="add/remove-one") < 1.7
    True
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    d = _check_delta(delta)
    r = _check_bucket_ratio(bucket_ratio)
    rel = _check_relation(relation)
    dpa, _ = _import_dp_accounting()
    sig, counts = _grouped(s, r)
    acc = dpa.rdp.RdpAccountant()
    for sigma, count in zip(sig, counts, strict=True):
        acc.compose(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(float(sigma))), int(count))
    if rel is Relation.ADD_REMOVE:
        return float(acc.get_epsilon(d))
    return _replace_one_by_group_privacy(lambda dd: float(acc.get_epsilon(dd)), d)


def rdp_curve(
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    orders,
    *,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> np.ndarray:
    """RDP ``ε(λ)`` of ``steps`` Poisson-subsampled Gaussian steps at each order ``λ > 1``.

    Add/remove-one: dp-accounting's bound for the sampled Gaussian (Mironov, Talwar, Zhang
    2019; it bounds both directions), times ``steps`` (composition). Replace-one: a swap is a
    removal then an addition, and Mironov's weak triangle inequality (2017, Proposition 11,
    ``p = q = 2``) gives ``ε_R(λ) <= (λ - 1/2)/(λ - 1) ε_AR(2λ) + ε_AR(2λ - 1)`` for the
    whole run (``P``: data set, ``Q``: without the person, ``R``: with the new record). Use
    half-integer or integer orders (``2λ``, ``2λ - 1`` integers): faster and exact series.

    Examples
    --------
    >>> o = np.array([2.0, 4.0])
    >>> r = rdp_curve(1.0, 1.0, 1, o)  # one full-batch Gaussian step, sensitivity 2C
    >>> bool(np.all(r >= 2 * o))  # at least the exact replace-one value λ 2²/2
    True
    """
    p = _check_sample_rate(sample_rate)
    sigma = float(_check_sigmas([noise_multiplier], "noise_multiplier")[0])
    k = int(steps)
    if k < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}")
    a = np.asarray(orders, dtype=float)
    if a.ndim != 1 or not np.all(a > 1):
        raise ValueError("orders must be a 1-d array of orders > 1")
    rel = _check_relation(relation)
    from dp_accounting.rdp.rdp_privacy_accountant import (
        _compute_rdp_poisson_subsampled_gaussian as sampled_gaussian,
    )

    if rel is Relation.ADD_REMOVE:
        return k * np.asarray(sampled_gaussian(p, sigma, a), dtype=float)
    r2 = k * np.asarray(sampled_gaussian(p, sigma, 2.0 * a), dtype=float)
    r1 = k * np.asarray(sampled_gaussian(p, sigma, 2.0 * a - 1.0), dtype=float)
    return (a - 0.5) / (a - 1.0) * r2 + r1


def _replace_one_by_group_privacy(eps_add_remove, delta: float) -> float:
    """Smallest ``2 ε'(δ')`` over ``δ'`` with ``(1 + e^ε'(δ')) δ' <= delta`` (bisection on log δ').

    ``eps_add_remove(δ')`` is an add/remove (ε', δ') curve; a replacement is a removal and an
    addition, so ``(2ε', (1 + e^ε') δ')`` holds under replace-one (group privacy of size 2).
    Only δ' that meet the constraint are ever returned, so the result is a valid bound.
    """

    def ok(log_d: float) -> tuple[bool, float]:
        e = eps_add_remove(math.exp(log_d))
        return (1.0 + math.exp(min(e, 700.0))) * math.exp(log_d) <= delta, e

    lo, hi = math.log(delta) - 40.0, math.log(delta / 2.0)
    good, e_lo = ok(lo)
    if not good:
        return math.inf
    good, e_hi = ok(hi)
    if good:
        return 2.0 * e_hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        good, e_mid = ok(mid)
        if good:
            lo, e_lo = mid, e_mid
        else:
            hi = mid
    return 2.0 * e_lo
