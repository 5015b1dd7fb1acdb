"""Privacy accounting for DP-SGD and DP-SGLD with a noise multiplier that changes per step.

Setting (SPEC B). Training data of ``N`` examples; each step samples a batch by Poisson sampling
with rate ``p = B / N``, clips every per-example gradient to L2 norm ``C`` and adds
``N(0, σ_t² C² I)`` to their sum. One step is the Poisson-subsampled Gaussian mechanism with
noise multiplier ``σ_t`` (sensitivity ``C``, noise ``σ_t C``). Steps compose adaptively.

- **Neighbouring relation** (:class:`dpuq.report.Relation`), named by every function here with
  ``relation=`` (default replace-one, the relation of the rest of dpuq):

  - *replace-one* (``N`` public; one person's record swapped for another's): by PLD,
    dp-accounting's own analysis of the Poisson-subsampled Gaussian under
    ``NeighboringRelation.REPLACE_ONE``: the worst pair of outputs is
    ``(1−p) N(0, σ²) + p N(−1, σ²)`` against ``(1−p) N(0, σ²) + p N(+1, σ²)`` (in units of ``C``:
    the swapped record's clipped gradient ``g`` becomes ``g'``, ``||g − g'|| <= 2C``, but each is
    sampled with probability ``p``). Far tighter than doubling the add/remove ε: ``σ = 1``,
    ``p = 0.01``, 1,000 steps, ``δ = 1e-5`` give ε = 2.84 against 1.83 under add/remove.
  - *add/remove-one*: the relation under which Poisson subsampling is classically analysed.

  GDP under replace-one is ``2μ``-GDP (group privacy of size 2 for GDP, Dong, Roth, Su 2019,
  Thm 2.14); RDP under replace-one is the add/remove RDP bound converted by group privacy,
  ``(2ε', (1 + e^ε') δ')`` at the ``δ'`` that meets the target ``δ`` (dp-accounting's RDP
  accountant has no replace-one analysis of Poisson subsampling).
- **GDP central limit** (Dong, Roth, Su 2019; Bu et al. 2020), the seed paper's accountant:
  ``μ = p · sqrt(Σ_t (exp(1/σ_t²) − 1))`` and
  ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``. It is an asymptotic approximation and can
  *under*-state ε (it does at the SPEC's known values): shown beside the rigorous figure, never
  alone.
- **PLD** (privacy loss distributions, the ``dp-accounting`` package): the rigorous figure.
  Steps whose ``σ_t`` lie within a factor ``bucket_ratio`` of each other are grouped and
  accounted with the group's *smallest* σ (more noise never costs more privacy, so this is an
  upper bound); the PLDs are pessimistically discretised, so the ε reported is an upper bound
  on the true ε of the schedule.
- **RDP** (Mironov 2017, same package): rigorous, looser, fast.

``dp-accounting`` is part of the ``dpuq[torch]`` extra; the GDP functions need only numpy/scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import log_ndtr, ndtr

from dpuq._validation import _as_float, check_epsilon, check_in_open_unit, check_positive_int
from dpuq.report import Relation

__all__ = [
    "ACCOUNTANTS",
    "calibrate_noise_multiplier",
    "calibrate_temperature",
    "dpsgld_noise_multiplier",
    "epsilon_spent",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "max_steps",
    "pld_epsilon",
    "rdp_epsilon",
]

#: Privacy-loss grid of the PLD accountant (pessimistic: finer is tighter and slower).
DEFAULT_DISCRETIZATION = 1e-3

#: Accountants accepted by :func:`epsilon_spent`, :func:`max_steps` and the trainers.
ACCOUNTANTS = ("pld", "rdp", "gdp")

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
    bad = np.flatnonzero(~np.isfinite(s) | (s <= 0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{name} must be finite and > 0 at every step; {bad.size} are not "
            f"(first: step {i}, value {s[i]!r})"
        )
    return s


def dpsgld_noise_multiplier(
    *,
    batch_size: float,
    max_grad_norm: float,
    temperature: float,
    learning_rate,
    n_samples: int,
):
    """DP-SGLD's per-step noise multiplier ``σ_t = (B / C) · sqrt(2 T / (η_t N))``.

    SGLD on the tempered posterior ``p(θ | D)^(1/T)`` with the mean loss and step ``η_t`` adds
    ``N(0, 2 η_t T / N)`` per coordinate. DP-SGD adds ``η_t σ_t C / B`` times a standard normal
    (noise ``N(0, σ_t² C²)`` on the sum of ``B`` clipped gradients, divided by ``B``, times
    ``η_t``). Equating the two standard deviations gives the formula (SPEC B; it replaces the
    seed paper's lost equations). A decaying ``η_t`` *raises* ``σ_t``: later steps cost less.

    Parameters
    ----------
    batch_size : float
        Expected batch size ``B = p N``.
    max_grad_norm : float
        Clipping norm ``C``.
    temperature : float
        ``T > 0``; ``T = 1`` is the Bayesian posterior, ``T < 1`` a cold one.
    learning_rate : float or array-like
        ``η_t > 0`` (one value or one per step).
    n_samples : int
        Training set size ``N``.

    Returns
    -------
    float or ndarray
        ``σ_t``, with the shape of ``learning_rate``.

    Raises
    ------
    ValueError
        If any input is not finite and > 0 (which would give ``σ_t <= 0`` or undefined).

    Examples
    --------
    >>> round(dpsgld_noise_multiplier(batch_size=256, max_grad_norm=1.0, temperature=0.05,
    ...                               learning_rate=0.1, n_samples=60000), 4)
    1.0451
    """
    b = _as_float(batch_size, "batch_size")
    c = _as_float(max_grad_norm, "max_grad_norm")
    t = _as_float(temperature, "temperature")
    n = check_positive_int(n_samples, "n_samples")
    for name, v in (("batch_size", b), ("max_grad_norm", c), ("temperature", t)):
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be finite and > 0 (σ_t would be <= 0), got {v!r}")
    eta = np.asarray(learning_rate, dtype=float)
    bad = np.flatnonzero(~np.isfinite(eta.ravel()) | (eta.ravel() <= 0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            "learning_rate must be finite and > 0 at every step (σ_t = (B/C)·sqrt(2T/(η_t N)) "
            f"is undefined otherwise); {bad.size} are not (first: step {i}, "
            f"value {eta.ravel()[i]!r})"
        )
    sigma = (b / c) * np.sqrt(2.0 * t / (eta * n))
    return float(sigma) if sigma.ndim == 0 else sigma


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
    The SPEC's known value: ``p = 256/60000``, ``σ = 1.06``, 20 epochs (4,688 steps).

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
    The SPEC's known values (δ = 1e-5):

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


def _check_accountant(accountant: str) -> str:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    return accountant


def epsilon_spent(
    sample_rate: float,
    noise_multipliers,
    delta: float,
    accountant: str = "pld",
    *,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> float:
    """ε at ``delta`` of a schedule by the named accountant (``"pld"``, ``"rdp"``, ``"gdp"``).

    Examples
    --------
    >>> round(epsilon_spent(256 / 60000, [1.06] * 4688, 1e-5, accountant="gdp",
    ...                     relation="add/remove-one"), 2)
    1.34
    """
    acc = _check_accountant(accountant)
    rel = _check_relation(relation)
    if acc == "gdp":
        return gdp_epsilon(gdp_mu(sample_rate, noise_multipliers, relation=rel), delta)
    if acc == "rdp":
        return rdp_epsilon(sample_rate, noise_multipliers, delta, relation=rel)
    return pld_epsilon(sample_rate, noise_multipliers, delta, relation=rel)


def max_steps(
    sample_rate: float,
    noise_multipliers,
    *,
    epsilon: float,
    delta: float,
    accountant: str = "pld",
    bucket_ratio: float = 1.01,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> int:
    """Number of leading steps of a schedule that fit in the budget ``(epsilon, delta)``.

    Training that runs these steps and stops "when the next step would exceed the target" is
    the same thing: ε of a prefix grows with its length. The schedule is public (it depends
    on the hyperparameters only), so planning with it costs no privacy.

    Parameters
    ----------
    sample_rate : float
    noise_multipliers : array-like of float
        The planned ``σ_t`` of every step, in order.
    epsilon : float
        Target ε > 0.
    delta : float
        Target δ in (0, 1).
    accountant : {"pld", "rdp", "gdp"}, default "pld"
    bucket_ratio : float, default 1.01
        As in :func:`pld_epsilon` (PLD only; groups consecutive steps).
    relation : Relation or str, default "replace-one"
        The neighbouring relation the budget is stated under.

    Returns
    -------
    int
        ``K`` in ``0..len(noise_multipliers)``: the first ``K`` steps spend at most ``epsilon``
        and, when ``K`` is less than the schedule's length, the first ``K + 1`` spend more.

    Examples
    --------
    >>> max_steps(256 / 60000, [1.06] * 10000, epsilon=1.3412, delta=1e-5, accountant="gdp",
    ...           relation="add/remove-one")
    4687
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    eps = check_epsilon(epsilon)
    d = _check_delta(delta)
    acc = _check_accountant(accountant)
    r = _check_bucket_ratio(bucket_ratio)
    rel = _check_relation(relation)

    if acc == "gdp":
        factor = 2.0 if rel is Relation.REPLACE_ONE else 1.0
        with np.errstate(over="ignore"):
            cum = factor * p * np.sqrt(np.cumsum(np.expm1(1.0 / s**2)))

        def fits(k: int) -> bool:
            return k == 0 or gdp_epsilon(float(cum[k - 1]), d) <= eps

    elif acc == "rdp":

        def fits(k: int) -> bool:
            return k == 0 or rdp_epsilon(p, s[:k], d, relation=rel) <= eps

    if acc in ("gdp", "rdp"):  # ε grows with the prefix: bisect on its length
        if fits(s.size):
            return int(s.size)
        lo, hi = 0, int(s.size)  # fits(lo), not fits(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

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


def calibrate_noise_multiplier(
    *,
    sample_rate: float,
    steps: int,
    epsilon: float,
    delta: float,
    accountant: str = "pld",
    rtol: float = 1e-3,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> float:
    """Smallest constant σ (within ``rtol``) for which ``steps`` DP-SGD steps spend <= ε.

    Returns a σ that satisfies the budget under ``relation`` by the chosen accountant (the
    upper end of the final bisection bracket), for DP-SGD with a fixed noise multiplier.

    Examples
    --------
    >>> sigma = calibrate_noise_multiplier(sample_rate=256 / 60000, steps=4688,
    ...                                     epsilon=1.3413, delta=1e-5, accountant="gdp",
    ...                                     relation="add/remove-one")
    >>> round(sigma, 2)
    1.06
    """
    p = _check_sample_rate(sample_rate)
    k = check_positive_int(steps, "steps")
    eps = check_epsilon(epsilon)
    d = _check_delta(delta)
    acc = _check_accountant(accountant)
    rel = _check_relation(relation)
    factor = 2.0 if rel is Relation.REPLACE_ONE else 1.0

    def spent(sigma: float) -> float:
        if acc == "gdp":
            return gdp_epsilon(factor * p * math.sqrt(k * math.expm1(1.0 / sigma**2)), d)
        if acc == "rdp":
            return _rdp_const(p, sigma, k, d, rel)
        _, pld_lib = _import_dp_accounting()
        pld = _step_pld(pld_lib, sigma, p, DEFAULT_DISCRETIZATION, rel).self_compose(k)
        return float(pld.get_epsilon_for_delta(d))

    lo, hi = 0.1, 1.0
    while spent(hi) > eps:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            raise ValueError(
                f"no noise multiplier <= 1e4 reaches epsilon={eps:g} in {k} steps "
                f"at sample_rate={p:g}: lower the number of steps or raise epsilon"
            )
    while lo > 1e-3 and spent(lo) <= eps:
        hi, lo = lo, lo / 2.0
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if spent(mid) <= eps else (mid, hi)
    return float(hi)


def _rdp_const(p: float, sigma: float, k: int, d: float, relation: Relation) -> float:
    dpa, _ = _import_dp_accounting()
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(float(sigma))), k)
    if relation is Relation.ADD_REMOVE:
        return float(acc.get_epsilon(d))
    return _replace_one_by_group_privacy(lambda dd: float(acc.get_epsilon(dd)), d)


def calibrate_temperature(
    *,
    learning_rates,
    batch_size: float,
    max_grad_norm: float,
    n_samples: int,
    epsilon: float,
    delta: float,
    accountant: str = "pld",
    rtol: float = 1e-2,
    relation: Relation | str = Relation.REPLACE_ONE,
) -> float:
    """Smallest DP-SGLD temperature (within ``rtol``) whose whole schedule fits in the budget.

    ``σ_t = sqrt(T) · (B/C) sqrt(2/(η_t N))`` grows with ``T``, so ε falls with ``T``: this is the
    coldest posterior that runs every planned step, the DP-SGLD analogue of calibrating
    DP-SGD's σ to the budget. Data-free (uses the public schedule only).

    Examples
    --------
    >>> T = calibrate_temperature(learning_rates=[0.1] * 4688, batch_size=256, max_grad_norm=1,
    ...                           n_samples=60000, epsilon=1.3413, delta=1e-5, accountant="gdp",
    ...                           relation="add/remove-one")
    >>> round(float(dpsgld_noise_multiplier(batch_size=256, max_grad_norm=1, temperature=T,
    ...                                     learning_rate=0.1, n_samples=60000)), 2)
    1.06
    """
    eta = np.asarray(learning_rates, dtype=float)
    unit = np.atleast_1d(
        dpsgld_noise_multiplier(
            batch_size=batch_size,
            max_grad_norm=max_grad_norm,
            temperature=1.0,
            learning_rate=eta,
            n_samples=n_samples,
        )
    )
    p = _check_sample_rate(float(batch_size) / check_positive_int(n_samples, "n_samples"))
    eps = check_epsilon(epsilon)
    d = _check_delta(delta)
    acc = _check_accountant(accountant)
    rel = _check_relation(relation)

    def fits(temp: float) -> bool:
        # coarse groups (1.05) overstate ε, so the T found is safe for finer accounting too
        sig = math.sqrt(temp) * unit
        if acc == "pld":
            return pld_epsilon(p, sig, d, bucket_ratio=1.05, relation=rel) <= eps
        return rdp_epsilon(p, sig, d, bucket_ratio=1.05, relation=rel) <= eps

    def gdp_fits(temp: float) -> bool:
        return gdp_epsilon(gdp_mu(p, math.sqrt(temp) * unit, relation=rel), d) <= eps

    guess = _smallest_true(gdp_fits, 1.0, rtol)  # cheap start, then the chosen accountant
    return guess if acc == "gdp" else _smallest_true(fits, guess, rtol)


def _smallest_true(pred, start: float, rtol: float) -> float:
    """Smallest x > 0 (within rtol) with pred(x) True, for pred False below and True above."""
    lo = hi = float(start)
    while not pred(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            raise ValueError("no temperature <= 1e12 fits the budget")
    if lo == hi:
        while pred(lo):
            hi, lo = lo, lo / 2.0
            if lo < 1e-15:
                return hi
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if pred(mid) else (mid, hi)
    return float(hi)
