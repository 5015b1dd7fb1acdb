"""Privacy accounting for DP-SGD and DP-SGLD with a noise multiplier that changes per step.

Setting (SPEC B). Training data of ``N`` examples; each step samples a batch by Poisson sampling
with rate ``p = B / N``, clips every per-example gradient to L2 norm ``C`` and adds
``N(0, σ_t² C² I)`` to their sum. One step is the Poisson-subsampled Gaussian mechanism with
noise multiplier ``σ_t`` (sensitivity ``C``, noise ``σ_t C``). Steps compose adaptively.

- **Neighbouring relation**: add/remove one training example (the relation under which Poisson
  subsampling is analysed). Under replace-one the guarantee is that of two add/remove steps.
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

NEIGHBOURING_ADD_REMOVE = (
    "add/remove one training example (Poisson subsampling with rate p = B/N; under replace-one "
    "the guarantee is that of composing two add/remove steps)"
)


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


def gdp_mu(sample_rate: float, noise_multipliers: Sequence[float] | np.ndarray) -> float:
    """GDP central-limit parameter ``μ = p · sqrt(Σ_t (exp(1/σ_t²) − 1))`` (Bu et al. 2020).

    Parameters
    ----------
    sample_rate : float
        Poisson sampling rate ``p = B / N`` in (0, 1].
    noise_multipliers : array-like of float
        ``σ_t`` of every step taken (all finite and > 0).

    Returns
    -------
    float

    Examples
    --------
    The SPEC's known value: ``p = 256/60000``, ``σ = 1.06``, 20 epochs (4,688 steps).

    >>> round(gdp_mu(256 / 60000, [1.06] * 4688), 3)
    0.35
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    with np.errstate(over="ignore"):
        terms = np.expm1(1.0 / s**2)
    total = math.fsum(terms.tolist())
    return p * math.sqrt(total) if math.isfinite(total) else math.inf


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


def _step_pld(pld_lib, sigma: float, p: float, discretization: float):
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=float(sigma),
        sampling_prob=p,
        value_discretization_interval=discretization,
    )


def _compose(pld_lib, groups, p: float, discretization: float):
    total = None
    for sigma, count in zip(*groups, strict=True):
        part = _step_pld(pld_lib, sigma, p, discretization).self_compose(int(count))
        total = part if total is None else total.compose(part)
    return total


def pld_epsilon(
    sample_rate: float,
    noise_multipliers,
    delta: float,
    *,
    bucket_ratio: float = 1.01,
    discretization: float = DEFAULT_DISCRETIZATION,
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

    Returns
    -------
    float
        An upper bound on the ε of the schedule at ``delta`` (add/remove neighbours).

    Examples
    --------
    >>> 1.3 < pld_epsilon(256 / 60000, [1.06] * 4688, 1e-5) < 1.5
    True
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    d = _check_delta(delta)
    r = _check_bucket_ratio(bucket_ratio)
    disc = _as_float(discretization, "discretization")
    if not (0 < disc < 1):
        raise ValueError(f"discretization must be in (0, 1), got {discretization!r}")
    _, pld_lib = _import_dp_accounting()
    return float(_compose(pld_lib, _grouped(s, r), p, disc).get_epsilon_for_delta(d))


def rdp_epsilon(
    sample_rate: float, noise_multipliers, delta: float, *, bucket_ratio: float = 1.01
) -> float:
    """ε at ``delta`` by Rényi-DP accounting (rigorous, usually looser than PLD).

    Steps are grouped as in :func:`pld_epsilon` (each group with its smallest σ).

    Examples
    --------
    >>> 1.4 < rdp_epsilon(256 / 60000, [1.06] * 4688, 1e-5) < 1.7
    True
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    d = _check_delta(delta)
    r = _check_bucket_ratio(bucket_ratio)
    dpa, _ = _import_dp_accounting()
    sig, counts = _grouped(s, r)
    acc = dpa.rdp.RdpAccountant()
    for sigma, count in zip(sig, counts, strict=True):
        acc.compose(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(float(sigma))), int(count))
    return float(acc.get_epsilon(d))


def _check_accountant(accountant: str) -> str:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    return accountant


def epsilon_spent(
    sample_rate: float, noise_multipliers, delta: float, accountant: str = "pld"
) -> float:
    """ε at ``delta`` of a schedule by the named accountant (``"pld"``, ``"rdp"``, ``"gdp"``).

    Examples
    --------
    >>> round(epsilon_spent(256 / 60000, [1.06] * 4688, 1e-5, accountant="gdp"), 2)
    1.34
    """
    acc = _check_accountant(accountant)
    if acc == "gdp":
        return gdp_epsilon(gdp_mu(sample_rate, noise_multipliers), delta)
    if acc == "rdp":
        return rdp_epsilon(sample_rate, noise_multipliers, delta)
    return pld_epsilon(sample_rate, noise_multipliers, delta)


def max_steps(
    sample_rate: float,
    noise_multipliers,
    *,
    epsilon: float,
    delta: float,
    accountant: str = "pld",
    bucket_ratio: float = 1.01,
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

    Returns
    -------
    int
        ``K`` in ``0..len(noise_multipliers)``: the first ``K`` steps spend at most ``epsilon``
        and, when ``K`` is less than the schedule's length, the first ``K + 1`` spend more.

    Examples
    --------
    >>> max_steps(256 / 60000, [1.06] * 10000, epsilon=1.3412, delta=1e-5, accountant="gdp")
    4687
    """
    p = _check_sample_rate(sample_rate)
    s = _check_sigmas(noise_multipliers)
    eps = check_epsilon(epsilon)
    d = _check_delta(delta)
    acc = _check_accountant(accountant)
    r = _check_bucket_ratio(bucket_ratio)

    if acc == "gdp":
        with np.errstate(over="ignore"):
            cum = p * np.sqrt(np.cumsum(np.expm1(1.0 / s**2)))

        def fits(k: int) -> bool:
            return k == 0 or gdp_epsilon(float(cum[k - 1]), d) <= eps

    elif acc == "rdp":

        def fits(k: int) -> bool:
            return k == 0 or rdp_epsilon(p, s[:k], d) <= eps

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
        if _compose(pld_lib, groups, p, disc).get_epsilon_for_delta(d) <= eps:
            return int(s.size)
    cache: dict[float, object] = {}
    done, total = 0, None
    for sigma, length in zip(run_sigma.tolist(), run_len.tolist(), strict=True):
        if sigma not in cache:
            cache[sigma] = _step_pld(pld_lib, sigma, p, disc)
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
) -> float:
    """Smallest constant σ (within ``rtol``) for which ``steps`` DP-SGD steps spend <= ε.

    Returns a σ that satisfies the budget by the chosen accountant (the upper end of the final
    bisection bracket), for DP-SGD with a fixed noise multiplier.

    Examples
    --------
    >>> sigma = calibrate_noise_multiplier(sample_rate=256 / 60000, steps=4688,
    ...                                     epsilon=1.3413, delta=1e-5, accountant="gdp")
    >>> round(sigma, 2)
    1.06
    """
    p = _check_sample_rate(sample_rate)
    k = check_positive_int(steps, "steps")
    eps = check_epsilon(epsilon)
    d = _check_delta(delta)
    acc = _check_accountant(accountant)

    def spent(sigma: float) -> float:
        if acc == "gdp":
            return gdp_epsilon(p * math.sqrt(k * math.expm1(1.0 / sigma**2)), d)
        if acc == "rdp":
            return _rdp_const(p, sigma, k, d)
        _, pld_lib = _import_dp_accounting()
        pld = _step_pld(pld_lib, sigma, p, DEFAULT_DISCRETIZATION).self_compose(k)
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


def _rdp_const(p: float, sigma: float, k: int, d: float) -> float:
    dpa, _ = _import_dp_accounting()
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(float(sigma))), k)
    return float(acc.get_epsilon(d))


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
) -> float:
    """Smallest DP-SGLD temperature (within ``rtol``) whose whole schedule fits in the budget.

    ``σ_t = sqrt(T) · (B/C) sqrt(2/(η_t N))`` grows with ``T``, so ε falls with ``T``: this is the
    coldest posterior that runs every planned step, the DP-SGLD analogue of calibrating
    DP-SGD's σ to the budget. Data-free (uses the public schedule only).

    Examples
    --------
    >>> T = calibrate_temperature(learning_rates=[0.1] * 4688, batch_size=256, max_grad_norm=1,
    ...                           n_samples=60000, epsilon=1.3413, delta=1e-5, accountant="gdp")
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

    def fits(temp: float) -> bool:
        # coarse groups (1.05) overstate ε, so the T found is safe for finer accounting too
        sig = math.sqrt(temp) * unit
        if acc == "pld":
            return pld_epsilon(p, sig, d, bucket_ratio=1.05) <= eps
        return rdp_epsilon(p, sig, d, bucket_ratio=1.05) <= eps

    def gdp_fits(temp: float) -> bool:
        return gdp_epsilon(gdp_mu(p, math.sqrt(temp) * unit), d) <= eps

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
