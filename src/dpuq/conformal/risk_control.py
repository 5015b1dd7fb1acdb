"""Private conformal risk control (Angelopoulos, Bates, Fisch, Lei, Schuster, ICLR 2024).

:func:`risk_control` releases one index of a public grid ``λ_1 < ... < λ_m`` with
``E[L_{n+1}(λ̂)] <= alpha`` for exchangeable loss vectors, by the ε-DP selection of
:mod:`dpuq.mechanisms.risk` at the largest target ``τ`` whose certificate reaches ``alpha``
(proof: docs/how-to/risk_control.md). Privacy: ε-DP, δ = 0, replace-one with ``n`` public; the data
enter only through the loss sums ``S_j``. Loss helpers: :func:`false_negative_losses`
(multi-label sets of findings) and :func:`interval_losses` (regression intervals).
:func:`conformal_risk_control` is the non-private baseline.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.conformal.calibration import PUBLIC_DECIDED
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.mechanisms.risk import (
    _risk_selection_rows,
    certified_risk_target,
    check_losses,
    loss_sums,
    risk_certificate,
)
from dpuq.privacy.ledger import charge
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "PrivateRiskControl",
    "conformal_risk_control",
    "false_negative_losses",
    "interval_losses",
    "risk_control",
    "with_trivial_answer",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrivateRiskControl:
    """The released result of :func:`risk_control`: public values only.

    Attributes
    ----------
    index : int
        Released 0-based grid index ``Ĵ``.
    lambda_ : float
        ``lambdas[index]``.
    certified_risk : float
        Proven bound on ``E[L_{n+1}(λ̂)]`` (at most ``alpha``; 0 for the trivial release).
    target : float or None
        The target loss sum τ* (None: no informative selection, ``λ_m`` released).
    alpha, epsilon, n, n_lambdas : the public settings.
    informative : bool
    privacy_report : PrivacyReport
    """

    index: int
    lambda_: float
    certified_risk: float
    target: float | None
    alpha: float
    epsilon: float
    n: int
    n_lambdas: int
    informative: bool
    privacy_report: PrivacyReport

    @property
    def trivial(self) -> bool:
        """The last grid value was released: use the trivial answer (the whole label set, the
        whole line), whatever ``lambda_`` is (its loss is 0 by construction)."""
        return self.index == self.n_lambdas - 1

    def to_dict(self) -> dict:
        """JSON-ready dict of the released values and the privacy report."""
        return {
            "index": self.index,
            "lambda": self.lambda_,
            "certified_risk": self.certified_risk,
            "target": self.target,
            "alpha": self.alpha,
            "epsilon": self.epsilon,
            "n": self.n,
            "n_lambdas": self.n_lambdas,
            "informative": self.informative,
            "privacy_report": self.privacy_report.to_dict(),
        }


def _check_lambdas(lambdas, m: int) -> np.ndarray:
    if lambdas is None:
        return np.arange(m, dtype=float)
    lam = np.asarray(lambdas, dtype=float)
    if lam.shape != (m,):
        raise ValueError(f"lambdas must have shape ({m},), one value per column of losses")
    if np.any(np.isnan(lam)) or np.any(np.diff(lam) <= 0):
        raise ValueError("lambdas must be strictly increasing (no NaN)")
    return lam


def risk_control(
    losses,
    *,
    alpha: float,
    epsilon: float,
    lambdas=None,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateRiskControl:
    """Release a λ with ``E[L_{n+1}(λ̂)] <= alpha`` under ε-DP (private conformal risk control).

    Privacy: ε-DP, δ = 0, replace-one with ``n`` public: the exponential mechanism over the
    grid with the sensitivity-1 utility ``-max(S_j - τ, τ - S_{j-1}, 0)`` on the loss sums
    (:mod:`dpuq.mechanisms.risk`). ``τ*`` depends only on ``(n, alpha, epsilon, m)``.
    Guarantee: for exchangeable loss vectors (calibration and test) that are nonincreasing in
    λ and in [0, 1], ``E[L_{n+1}(λ̂)] <= certified_risk <= alpha``, where the last grid value
    ``λ_m`` is the trivial answer (the whole label set, the whole line: loss 0 by construction;
    the last column of ``losses`` is never read, and ``trivial`` says when it was released)
    (docs/how-to/risk_control.md). When no target is certified, ``λ_m`` is released (risk 0),
    nothing is sampled: public quantities alone decided it, so it charges ε = 0 and the report says
    so.

    Parameters
    ----------
    losses : array-like of shape (n, m), or a Dask array / DataFrame
        ``losses[i, j] = L_i(λ_j)`` in [0, 1], nonincreasing in j; the last column stands for
        the trivial answer and is taken as 0 (:func:`with_trivial_answer` appends one). Dask
        input is validated and reduced to the m sums on the workers (exactly: the same release
        as in memory for the same seed; see docs/how-to/scale.md).
    alpha : float
        Risk level in (0, 1).
    epsilon : float
        Privacy parameter > 0 (the total cost).
    lambdas : array-like of shape (m,), optional
        The public grid, strictly increasing (default ``0, 1, ..., m-1``).
    random_state : None, int or numpy.random.Generator
        None (default): OS entropy, for releases; a seed for experiments only.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge ε to ``dataset``'s budget before any noise is drawn.

    Returns
    -------
    PrivateRiskControl

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> lam = np.linspace(0, 1, 51)
    >>> losses = (rng.uniform(size=(1000, 1)) > lam).astype(float)  # miscoverage-like
    >>> rc = risk_control(losses, alpha=0.1, epsilon=1.0, lambdas=lam, random_state=0)
    >>> bool(0.8 <= rc.lambda_ <= 1.0), bool(rc.certified_risk <= 0.1)
    (True, True)
    """
    a = check_in_open_unit(alpha, "alpha")
    eps = check_epsilon(epsilon)
    if is_dask_collection(losses):  # exact sums and checks on the workers, before the charge
        from dpuq.scale._dask import dask_loss_sums

        arr, (dask_sums, n) = None, dask_loss_sums(losses)
        m = dask_sums.size
    else:
        arr, dask_sums = check_losses(losses), None
        n, m = arr.shape
    lam = _check_lambdas(lambdas, m)
    target = certified_risk_target(n, a, eps, m)
    charge(
        ledger,
        dataset,
        eps if target is not None else 0.0,  # none: public quantities alone decide it
        what="risk_control: private conformal risk control",
        random_state=random_state,
        settings={"alpha": a, "n": int(n), "n_lambdas": int(m)},
    )
    notes: list[str] = []
    if target is None:
        index, cert = m - 1, 0.0
        notes.append(
            f"no informative selection: even target 0 is certified only above alpha={a:g} at "
            f"n={n}, epsilon={eps:g}, m={m}; the largest lambda (loss 0) is released, nothing "
            "was sampled"
        )
        notes.append(PUBLIC_DECIDED)
    else:
        # the only step that reads the data (Dask: the same floats, summed on the workers)
        sums = (loss_sums(arr) if arr is not None else dask_sums)[None, :]
        index = int(_risk_selection_rows(sums, n, target, eps, check_random_state(random_state))[0])
        cert = risk_certificate(n, target, eps, m)
    report = PrivacyReport(
        mechanism="exponential mechanism over a public lambda grid (private conformal risk "
        "control; dpuq docs/how-to/risk_control.md)",
        epsilon=eps if target is not None else 0.0,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity=(
            "utility -max(S_j - tau, tau - S_{j-1}, 0) moves by at most 1 (losses in [0, 1])"
            if target is not None
            else "none: constant release, no data used"
        ),
        details={
            "n": n,
            "alpha": a,
            "n_lambdas": m,
            "target (tau)": target,
            "certified risk": cert,
        },
        notes=tuple(notes),
        seeded=target is not None and random_state is not None,
    )
    logger.debug("risk_control: released index %d of %d at n=%d, alpha=%g", index, m, n, a)
    return PrivateRiskControl(
        index=index,
        lambda_=float(lam[index]),
        certified_risk=float(cert),
        target=target,
        alpha=a,
        epsilon=eps,
        n=n,
        n_lambdas=m,
        informative=target is not None,
        privacy_report=report,
    )


def with_trivial_answer(losses, lambdas=None) -> tuple[np.ndarray, np.ndarray]:
    """Append the trivial answer to a grid: a last column of zero losses and ``λ = inf``.

    For losses of a family of sets or intervals that does not reach the trivial answer (the
    whole label set, the whole line) by itself: :func:`risk_control` needs a last grid value
    whose loss is 0 by construction, whatever the data. Release ``λ = inf`` as that answer.

    Examples
    --------
    >>> L, lam = with_trivial_answer([[1.0, 0.5], [0.5, 0.2]], [0.1, 0.2])
    >>> L.tolist(), lam.tolist()
    ([[1.0, 0.5, 0.0], [0.5, 0.2, 0.0]], [0.1, 0.2, inf])
    """
    arr = np.asarray(losses, dtype=float)
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError("losses must have shape (n, m) with m >= 1")
    lam = np.arange(arr.shape[1], dtype=float) if lambdas is None else np.asarray(lambdas, float)
    if lam.shape != (arr.shape[1],):
        raise ValueError(f"lambdas must have shape ({arr.shape[1]},), one per column of losses")
    return np.hstack([arr, np.zeros((arr.shape[0], 1))]), np.append(lam, np.inf)


def conformal_risk_control(losses, alpha: float) -> int:
    """Non-private conformal risk control's index: the smallest j with ``(S_j + 1)/(n + 1) <= α``.

    A baseline (not private). Losses as for :func:`risk_control` (0 in the last column, so an
    index always exists).

    Examples
    --------
    >>> conformal_risk_control(np.tile([1.0, 0.5, 0.05, 0.0], (99, 1)), 0.1)
    2
    """
    a = check_in_open_unit(alpha, "alpha")
    arr = check_losses(losses)
    n = arr.shape[0]
    ok = (loss_sums(arr) + 1.0) / (n + 1) <= a
    return int(np.argmax(ok)) if ok.any() else arr.shape[1] - 1


def false_negative_losses(label_sets, probs, lambdas=None) -> np.ndarray:
    """False-negative-rate losses of the multi-label sets ``C_λ(x) = {k : p_k(x) >= 1 - λ}``.

    ``L_i(λ) = 1 - |Y_i ∩ C_λ(x_i)| / |Y_i|`` (0 when ``Y_i`` is empty): in [0, 1],
    nonincreasing in λ, and 0 at ``λ = 1`` (every finding is in the set).

    Parameters
    ----------
    label_sets : array-like of bool, shape (n, K)
        The true findings of each item.
    probs : array-like of shape (n, K)
        Model scores in [0, 1] per finding (need not sum to 1).
    lambdas : array-like of shape (m,), optional
        Increasing grid in [0, 1] ending at 1 (default ``linspace(0, 1, 101)``).

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> false_negative_losses([[1, 1, 0]], [[0.9, 0.3, 0.8]], [0.0, 0.5, 1.0]).tolist()
    [[1.0, 0.5, 0.0]]
    """
    y = np.asarray(label_sets).astype(bool)
    p = np.asarray(probs, dtype=float)
    if y.ndim != 2 or p.shape != y.shape:
        raise ValueError("label_sets and probs must have the same shape (n, K)")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("probs must be finite and in [0, 1]")
    lam = np.linspace(0.0, 1.0, 101) if lambdas is None else np.asarray(lambdas, dtype=float)
    if lam.ndim != 1 or lam.size < 2 or np.any(np.diff(lam) <= 0) or lam[-1] != 1.0:
        raise ValueError("lambdas must be strictly increasing and end at 1.0")
    included = p[:, :, None] >= 1.0 - lam[None, None, :]  # (n, K, m)
    found = np.sum(included & y[:, :, None], axis=1)
    size = y.sum(axis=1)[:, None]
    return np.where(size > 0, 1.0 - found / np.maximum(size, 1), 0.0)


def interval_losses(y, y_pred, lambdas, *, bound: float | None = None) -> np.ndarray:
    """Losses of the intervals ``[ŷ - λ, ŷ + λ]`` along an increasing grid of half-widths.

    ``bound=None``: miscoverage ``1{|y - ŷ| > λ}``. With a public ``bound`` B > 0: the
    distance outside the interval over B, capped at 1, ``min(max(|y - ŷ| - λ, 0) / B, 1)``.
    Nonincreasing in λ. The last λ must be ``inf`` (the whole line, loss 0 for everyone): a
    finite "large enough" last value would make the error "some residual exceeds it" depend on
    the data, so it is refused as a setting, before anything is released.

    Examples
    --------
    >>> interval_losses([0.0, 3.0], [0.0, 0.0], [0.0, 1.0, np.inf]).tolist()
    [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    >>> interval_losses([3.0], [0.0], [0.0, 1.0, np.inf], bound=4.0).tolist()
    [[0.75, 0.5, 0.0]]
    """
    t = np.asarray(y, dtype=float).ravel()
    f = np.asarray(y_pred, dtype=float).ravel()
    lam = np.asarray(lambdas, dtype=float)
    if t.shape != f.shape:
        raise ValueError("y and y_pred must have the same length")
    if lam.ndim != 1 or lam.size < 2 or np.any(np.diff(lam) <= 0) or lam[0] < 0:
        raise ValueError("lambdas must be >= 0 and strictly increasing")
    if lam[-1] != np.inf:
        raise ValueError("lambdas must end with inf (the whole line, where every loss is 0)")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(f))):
        raise ValueError("y and y_pred must be finite")
    residual = np.abs(t - f)[:, None]
    if bound is None:
        return (residual > lam[None, :]).astype(float)
    b = float(bound)
    if not (math.isfinite(b) and b > 0):
        raise ValueError(f"bound must be a finite number > 0, got {bound!r}")
    with np.errstate(invalid="ignore"):
        out = np.minimum(np.maximum(residual - lam[None, :], 0.0) / b, 1.0)
    return np.where(np.isinf(lam)[None, :], 0.0, out)
