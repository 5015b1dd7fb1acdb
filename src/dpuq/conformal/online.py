"""Online conformal thresholds under drift, ε-DP for every person of the stream.

:func:`online_conformal_thresholds` gives each person of a score stream the threshold
computed from the persons before them: the quantile tracker fed by privately released error
counts of consecutive blocks (privacy argument and coverage proof:
:mod:`dpuq.mechanisms.online_counts`; settings: :mod:`dpuq.planning.online`).
:func:`aci_thresholds` is the non-private baseline (adaptive conformal inference, Gibbs and
Candès 2021), for comparisons only.
"""

from __future__ import annotations

import bisect
import math
import warnings

import numpy as np

from dpuq._validation import _as_float, check_alpha, check_epsilon, check_scores
from dpuq.conformal.calibration import UninformativeReleaseWarning
from dpuq.mechanisms.online_counts import _tracker_thresholds, block_count_scale
from dpuq.mechanisms.randomness import RandomState, derive_seed, release_generator
from dpuq.planning.online import DEFAULT_INITIAL, DEFAULT_STEP, online_block_size
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = [
    "OnlineSettings",
    "aci_thresholds",
    "check_online_settings",
    "no_count_released",
    "online_conformal_thresholds",
    "online_privacy_report",
]

MECHANISM = (
    "quantile tracker on block error counts released with exact Laplace noise "
    "(parallel composition over blocks)"
)


class OnlineSettings(tuple):
    """The checked public settings ``(alpha, epsilon, step, block_size, initial)``."""

    __slots__ = ()

    def __new__(cls, alpha, epsilon, step, block_size, initial):
        return super().__new__(cls, (alpha, epsilon, step, block_size, initial))

    alpha = property(lambda self: self[0])
    epsilon = property(lambda self: self[1])
    step = property(lambda self: self[2])
    block_size = property(lambda self: self[3])
    initial = property(lambda self: self[4])

    def as_dict(self) -> dict:
        return {
            "alpha": self.alpha,
            "epsilon": self.epsilon,
            "step": self.step,
            "block_size": self.block_size,
            "initial": self.initial,
        }


#: Largest block size (persons per released count), given or automatic.
MAX_BLOCK = 10**9


def check_online_settings(
    alpha, epsilon, step=DEFAULT_STEP, block_size="auto", initial=DEFAULT_INITIAL
) -> OnlineSettings:
    """Check every public setting of the tracker; ``block_size="auto"`` is resolved.

    Examples
    --------
    >>> check_online_settings(0.1, 1.0).block_size
    23
    >>> check_online_settings(0.7, 1.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be in (0, 0.5], got 0.7
    """
    a = check_alpha(alpha)
    eps = check_epsilon(epsilon)
    block_count_scale(eps)  # an ε too small for the noise lattice is refused here, not after
    eta = _as_float(step, "step")
    if not (math.isfinite(eta) and 0.0 < eta <= 1.0):
        raise ValueError(f"step must be a number in (0, 1] (score units per person), got {step!r}")
    if isinstance(block_size, str):
        if block_size != "auto":
            raise ValueError(f"block_size must be 'auto' or an int >= 1, got {block_size!r}")
        b = online_block_size(a, eps)
        if b > MAX_BLOCK:  # public: α and ε; refused before the charge, as an explicit size
            raise ValueError(
                f"block_size='auto' is {b:,} persons per count at alpha={a:g}, "
                f"epsilon={eps:g}, beyond {MAX_BLOCK:,}: raise epsilon or give block_size"
            )
    elif isinstance(block_size, bool) or not isinstance(block_size, int | np.integer):
        raise TypeError(f"block_size must be 'auto' or an int >= 1, got {block_size!r}")
    else:
        b = int(block_size)
        if not 1 <= b <= MAX_BLOCK:
            raise ValueError(f"block_size must be an int in [1, 10^9], got {block_size!r}")
    q0 = _as_float(initial, "initial")
    if not 0.0 <= q0 <= 1.0:
        raise ValueError(f"initial must be in [0, 1] (a threshold on scores), got {initial!r}")
    return OnlineSettings(a, eps, eta, b, q0)


def no_count_released(n: int, settings: OnlineSettings) -> bool:
    """Whether a stream of ``n`` persons releases no count: ``n <= block_size``.

    The first count is released when block 1 is complete, and sets the threshold of person
    ``block_size + 1`` on; the last block's count would set none. So when no block completes
    before the last person, nothing is released and every threshold is ``initial``: public
    settings alone (``n``, public under replace-one, and ``block_size``) decide the output.

    Examples
    --------
    >>> settings = check_online_settings(0.1, 1.0, block_size=50)
    >>> no_count_released(50, settings), no_count_released(51, settings)
    (True, False)
    """
    return n <= settings.block_size


def _no_count_message(n: int, settings: OnlineSettings) -> str:
    return (
        f"no block of block_size={settings.block_size} completes before the last of the n={n} "
        f"persons: no count is released and every threshold is initial={settings.initial:g}, "
        "whatever the scores. Public settings alone decided it, so it costs epsilon = 0 and "
        "charges nothing. Thresholds that follow the stream need block_size < n (a count "
        "per block of persons; block_size='auto' plans it from alpha and epsilon)."
    )


def online_privacy_report(
    settings: OnlineSettings, *, seeded: bool = False, n: int | None = None
) -> PrivacyReport:
    """The privacy report of a whole stream released by the tracker (any length).

    With the stream's length ``n`` (public) and ``n <= block_size``
    (:func:`no_count_released`), the report of the constant release: ε = 0, and why.

    Examples
    --------
    >>> r = online_privacy_report(check_online_settings(0.1, 1.0))
    >>> r.epsilon, r.delta, r.relation.value
    (1.0, 0.0, 'replace-one')
    >>> online_privacy_report(check_online_settings(0.1, 1.0, block_size=50), n=50).epsilon
    0.0
    """
    if n is not None and no_count_released(n, settings):
        return PrivacyReport(
            mechanism=MECHANISM,
            epsilon=0.0,
            delta=0.0,
            relation=Relation.REPLACE_ONE,
            sensitivity="none: constant release (no count released, no score read)",
            details={**settings.as_dict(), "n": int(n)},
            notes=(_no_count_message(n, settings),),
            seeded=False,
        )
    return PrivacyReport(
        mechanism=MECHANISM,
        epsilon=settings.epsilon,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity="1 per block error count (one person is in one block, counted once)",
        details={**settings.as_dict(), "continual_observation": "event-level, whole stream"},
        notes=(
            "epsilon covers each person over the whole released threshold sequence, for a "
            "stream of any length (no horizon: blocks compose in parallel)",
        ),
        seeded=seeded,
    )


def online_conformal_thresholds(
    scores,
    alpha: float,
    epsilon: float,
    *,
    step: float = DEFAULT_STEP,
    block_size: int | str = "auto",
    initial: float = DEFAULT_INITIAL,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> np.ndarray:
    """The threshold ``t_i`` used for person ``i`` of a score stream, ε-DP over the stream.

    Person ``i``'s prediction set is ``{y : S(x_i, y) <= t_i}``; ``t_i`` depends on the scores
    of earlier blocks only (causal). ``t_i >= 1`` is the full set, ``t_i < 0`` the empty set.

    Privacy: ε-DP (δ = 0), event-level under continual observation with replace-one
    neighbours, for each person over the whole returned sequence, however long the stream
    (:mod:`dpuq.mechanisms.online_counts`). When ``block_size >= T`` no block completes
    before the last person (:func:`no_count_released`): no count is released, every
    threshold is ``initial``, the release costs ε = 0 (a ledger records a charge of 0) and an
    :class:`~dpuq.conformal.calibration.UninformativeReleaseWarning` says so (it depends on
    ``T`` and ``block_size`` only). Coverage: for every score sequence, with
    probability ``1 - β``, ``|mean miscoverage - α| <=``
    :func:`dpuq.planning.online_coverage_bound` (about 0.01 at 10^4 persons, ε = 1).

    Parameters
    ----------
    scores : array-like of shape (T,)
        Conformity scores in [0, 1] in arrival order (low = conforms).
    alpha : float
        Target miscoverage, in (0, 0.5].
    epsilon : float
        Total privacy cost of the whole stream, > 0.
    step : float, default 0.01
        The tracker's step ``η`` in score units per person (public).
    block_size : "auto" or int, default "auto"
        Persons per released count; "auto" is :func:`dpuq.planning.online_block_size`.
    initial : float, default 0.5
        The first block's threshold (public; 1/2 minimises the worst-case bound).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.
    ledger, dataset :
        Charge ε to ``dataset`` before any noise (:func:`dpuq.privacy.ledger.charge`).

    Returns
    -------
    ndarray of shape (T,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=2000) * np.linspace(0.5, 1.0, 2000)  # harder over time
    >>> t = online_conformal_thresholds(s, 0.1, 1.0, random_state=0)
    >>> t.shape, bool(abs(np.mean(s > t) - 0.1) < 0.03)
    ((2000,), True)
    """
    s = check_scores(scores, "scores")
    settings = check_online_settings(alpha, epsilon, step, block_size, initial)
    report = online_privacy_report(settings, seeded=random_state is not None, n=s.size)
    rng = release_generator(
        random_state,
        ledger,
        dataset,
        report,
        what="online conformal thresholds",
        settings={**settings.as_dict(), "n": int(s.size)},
    )
    if report.epsilon == 0.0:  # public: n <= block_size; charged 0 above, nothing is read
        warnings.warn(
            _no_count_message(s.size, settings), UninformativeReleaseWarning, stacklevel=2
        )
        return np.full(s.size, settings.initial)
    thresholds, _ = _tracker_thresholds(
        s,
        alpha=settings.alpha,
        epsilon=settings.epsilon,
        step=settings.step,
        block_size=settings.block_size,
        initial=settings.initial,
        root=derive_seed(rng),
    )
    return thresholds


def aci_thresholds(scores, alpha: float, gamma: float = 0.005) -> np.ndarray:
    """Non-private adaptive conformal inference (Gibbs and Candès 2021): a baseline only.

    ``α_{i+1} = α_i + γ(α - err_i)``, ``α_1 = α``, and ``t_i`` the conformal quantile at level
    ``1 - α_i`` of all earlier scores: the ``ceil((1 - α_i) i)``-th smallest of ``s_1 ..
    s_{i-1}`` (``inf`` when there are too few or ``α_i <= 0``; ``-inf`` when ``α_i >= 1``).
    NOT private: it reads every score. ``O(T)`` per step (sorted insertion).

    Examples
    --------
    >>> t = aci_thresholds(np.linspace(0, 1, 50), 0.1)
    >>> t.shape, bool(np.isinf(t[0]))
    ((50,), True)
    """
    s = check_scores(scores, "scores")
    a0 = check_alpha(alpha)
    g = _as_float(gamma, "gamma")
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"gamma must be a finite number > 0, got {gamma!r}")
    past: list[float] = []
    out = np.empty(s.size)
    a = a0
    for i, si in enumerate(s.tolist()):
        if a >= 1.0:
            t = -math.inf
        elif a <= 0.0:
            t = math.inf
        else:
            k = math.ceil((1.0 - a) * (i + 1))
            t = past[k - 1] if 1 <= k <= i else (math.inf if k > i else -math.inf)
        out[i] = t
        a += g * (a0 - (1.0 if si > t else 0.0))
        bisect.insort(past, si)
    return out
