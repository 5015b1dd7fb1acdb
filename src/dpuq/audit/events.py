"""Rejection events chosen on draws that the bound never sees (DP-Sniper's idea).

An event is ``{o : s(o) >= t}`` or ``{o : s(o) < t}`` for a scalar score ``s`` of the output
``o``. The scores are fitted on one part of the draws (the *fit* part) and the event (score,
threshold, direction and which data set is "D") is chosen on another (the *select* part);
the bound is computed on the remaining draws, so the event is fixed before they are looked at
and one Clopper–Pearson test is valid. Scores:

* each coordinate of the output (at most :data:`MAX_COORDINATES`, those whose means differ most
  between the two data sets on the fit part);
* for vector outputs, the Fisher discriminant direction ``(Σ_D + Σ_D' + λI)^{-1}(μ_D - μ_D')``;
* a histogram likelihood-ratio classifier on each of these scalars (one bin per value for
  discrete outputs, quantile bins otherwise), as in DP-Sniper (Bichsel et al. 2021), whose
  thresholds give unions of bins, not only half-lines;
* for vector outputs, a joint histogram over the distinct output vectors when they are few,
  else a Gaussian (quadratic discriminant) likelihood ratio.

The choice maximises the bound that the select part's own counts give.
Everything is deterministic given the draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpuq.audit.bounds import clopper_pearson

__all__ = ["Event", "choose_event", "output_features"]

MAX_COORDINATES = 16
MAX_THRESHOLDS = 256
MAX_HISTOGRAM_VALUES = 64
QUANTILE_BINS = 32
MAX_JOINT_VALUES = 256


def output_features(outputs: list, name: str = "release") -> np.ndarray:
    """Stack released values (numbers or arrays of one size) as a float array (n, k)."""
    rows = [np.asarray(o, dtype=float).ravel() for o in outputs]
    sizes = {r.size for r in rows}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError(f"{name} must return numbers or arrays of one non-zero size")
    return np.vstack(rows)


@dataclass(frozen=True)
class _Score:
    """A scalar score of the (finite-mapped) features, with its description."""

    description: str
    function: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Event:
    """A rejection event: ``score >= threshold`` (``upper``) or ``score < threshold``.

    ``swapped`` is True when the event is more likely on the neighbour D' than on D (the bound
    is then for the ordering D' vs D).
    """

    description: str
    threshold: float
    upper: bool
    swapped: bool
    _score: _Score
    _finite: Callable[[np.ndarray], np.ndarray]

    def contains(self, features: np.ndarray) -> np.ndarray:
        """Boolean mask of the rows of ``features`` that lie in the event."""
        s = self._score.function(self._finite(features))
        return s >= self.threshold if self.upper else s < self.threshold

    def __str__(self) -> str:
        op = ">=" if self.upper else "<"
        order = "D' vs D" if self.swapped else "D vs D'"
        return f"{self.description} {op} {self.threshold:.6g} ({order})"


def _finite_map(fit: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Map NaN and ±inf to fixed finite values (set on the fit part, per coordinate)."""
    finite = np.where(np.isfinite(fit), fit, np.nan)
    with np.errstate(all="ignore"):
        lo = np.nan_to_num(np.nanmin(finite, axis=0), nan=0.0)
        hi = np.nan_to_num(np.nanmax(finite, axis=0), nan=0.0)
    span = np.maximum(hi - lo, 1.0)

    def apply(x: np.ndarray) -> np.ndarray:
        x = np.where(np.isposinf(x), hi + span, x)
        x = np.where(np.isneginf(x), lo - span, x)
        return np.where(np.isnan(x), lo - 2 * span, x)

    return apply


def _coordinate(j: int, dim: int) -> _Score:
    name = "output" if dim == 1 else f"output[{j}]"
    return _Score(name, lambda x: x[:, j])


def _fisher(a: np.ndarray, b: np.ndarray) -> _Score:
    cov = np.cov(a, rowvar=False) + np.cov(b, rowvar=False)
    ridge = 1e-9 * max(float(np.trace(cov)), 1e-12) + 1e-12
    w = np.linalg.solve(cov + ridge * np.eye(a.shape[1]), a.mean(0) - b.mean(0))
    w = w / max(float(np.abs(w).max()), 1e-300)
    return _Score("Fisher projection", lambda x: x @ w)


def _histogram(base: _Score, a: np.ndarray, b: np.ndarray) -> _Score:
    """Log-likelihood ratio of D vs D' per bin of ``base`` (add-1/2 smoothing)."""
    sa, sb = base.function(a), base.function(b)
    values = np.unique(np.concatenate([sa, sb]))
    if values.size <= MAX_HISTOGRAM_VALUES:
        edges = (values[1:] + values[:-1]) / 2.0  # one bin per value
    else:
        qs = np.linspace(0, 1, QUANTILE_BINS + 1)[1:-1]
        edges = np.unique(np.quantile(np.concatenate([sa, sb]), qs))
    n_bins = edges.size + 1
    ca = np.bincount(np.searchsorted(edges, sa, side="right"), minlength=n_bins)
    cb = np.bincount(np.searchsorted(edges, sb, side="right"), minlength=n_bins)
    llr = np.log((ca + 0.5) / (sa.size + 0.5)) - np.log((cb + 0.5) / (sb.size + 0.5))
    return _Score(
        f"histogram likelihood ratio of {base.description} ({n_bins} bins)",
        lambda x: llr[np.searchsorted(edges, base.function(x), side="right")],
    )


def _joint_histogram(a: np.ndarray, b: np.ndarray) -> _Score | None:
    values, inverse = np.unique(np.vstack([a, b]), axis=0, return_inverse=True)
    if values.shape[0] > MAX_JOINT_VALUES:
        return None
    inverse = inverse.ravel()
    ca = np.bincount(inverse[: a.shape[0]], minlength=values.shape[0])
    cb = np.bincount(inverse[a.shape[0] :], minlength=values.shape[0])
    llr = np.log((ca + 0.5) / (a.shape[0] + 0.5)) - np.log((cb + 0.5) / (b.shape[0] + 0.5))

    def score(x: np.ndarray) -> np.ndarray:  # the value's ratio; 0 for a value never fitted
        _, inv = np.unique(np.vstack([values, x]), axis=0, return_inverse=True)
        inv = inv.ravel()
        table = np.zeros(inv.max() + 1)
        table[inv[: values.shape[0]]] = llr
        return table[inv[values.shape[0] :]]

    return _Score(f"joint histogram likelihood ratio ({values.shape[0]} values)", score)


def _quadratic(a: np.ndarray, b: np.ndarray) -> _Score:
    """Gaussian (quadratic discriminant) log-likelihood ratio of D vs D' fitted per side."""

    def fit(x: np.ndarray):
        cov = np.atleast_2d(np.cov(x, rowvar=False))
        cov = cov + (1e-9 * max(float(np.trace(cov)), 1e-12) + 1e-12) * np.eye(x.shape[1])
        return x.mean(0), np.linalg.inv(cov), np.linalg.slogdet(cov)[1]

    (ma, ia, la), (mb, ib, lb) = fit(a), fit(b)

    def score(x: np.ndarray) -> np.ndarray:
        da, db = x - ma, x - mb
        qa = np.einsum("ij,jk,ik->i", da, ia, da)
        qb = np.einsum("ij,jk,ik->i", db, ib, db)
        return 0.5 * (qb - qa) + 0.5 * (lb - la)

    return _Score("quadratic discriminant likelihood ratio", score)


def _scores(a: np.ndarray, b: np.ndarray) -> list[_Score]:
    dim = a.shape[1]
    spread = np.sqrt(a.var(0) + b.var(0)) + 1e-12
    order = np.argsort(-np.abs(a.mean(0) - b.mean(0)) / spread, kind="stable")
    base = [_coordinate(int(j), dim) for j in order[:MAX_COORDINATES]]
    if dim > 1:
        base.append(_fisher(a, b))
    scores = base + [_histogram(s, a, b) for s in base]
    if dim > 1:
        joint = _joint_histogram(a, b)
        if joint is not None:
            scores.append(joint)
        else:
            scores.append(_quadratic(a, b))
    return scores


def _log_ratios(counts_a, n_a: int, counts_b, n_b: int, confidence: float, delta: float):
    """The bound of every event ``(upper, swapped)`` at every threshold, from the counts of
    ``s >= t`` (Clopper–Pearson is symmetric: the bounds of the complement ``s < t`` are
    ``1 - hi`` and ``1 - lo``, so four quantile vectors serve all four events)."""
    level = 1.0 - (1.0 - confidence) / 2.0
    lo_a, hi_a = clopper_pearson(counts_a, n_a, level)
    lo_b, hi_b = clopper_pearson(counts_b, n_b, level)
    pairs = {
        (True, False): (lo_a, hi_b),
        (True, True): (lo_b, hi_a),
        (False, False): (1.0 - hi_a, 1.0 - lo_b),
        (False, True): (1.0 - hi_b, 1.0 - lo_a),
    }
    out = {}
    for key, (num, den) in pairs.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.log((num - delta) / den)
        out[key] = np.where(num > delta, np.maximum(np.nan_to_num(eps, nan=0.0), 0.0), 0.0)
    return out


def _best_threshold(sa: np.ndarray, sb: np.ndarray, confidence: float, delta: float):
    """(bound on the select part, threshold, upper, swapped) maximising that bound.

    The bound is computed from the select part's own counts and sizes: its Clopper–Pearson
    widths penalise events seen a few times only (extrapolating the frequencies to the larger
    estimation part would favour them, and they rarely hold up). Ties (all 0 when the select
    part is small) go to the larger bound at 50% confidence."""
    pooled = np.unique(np.concatenate([sa, sb]))
    if pooled.size > MAX_THRESHOLDS:
        pooled = np.unique(np.quantile(pooled, np.linspace(0, 1, MAX_THRESHOLDS)))
    at_least_a = sa.size - np.searchsorted(np.sort(sa), pooled, side="left")  # #{s >= t}
    at_least_b = sb.size - np.searchsorted(np.sort(sb), pooled, side="left")
    main = _log_ratios(at_least_a, sa.size, at_least_b, sb.size, confidence, delta)
    ties = _log_ratios(at_least_a, sa.size, at_least_b, sb.size, 0.5, 0.0)
    best = (-1.0, float(pooled[0]), True, False)
    for key, eps in main.items():
        eps = eps + 1e-6 * ties[key]
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(pooled[i]), *key)
    return best


def choose_event(
    fit_a: np.ndarray,
    fit_b: np.ndarray,
    select_a: np.ndarray,
    select_b: np.ndarray,
    *,
    confidence: float,
    delta: float,
) -> Event:
    """Fit scores on the fit part, pick the event on the select part (module docstring)."""
    finite = _finite_map(np.vstack([fit_a, fit_b]))
    fa, fb = finite(fit_a), finite(fit_b)
    sa, sb = finite(select_a), finite(select_b)
    best: tuple | None = None
    for score in _scores(fa, fb):
        found = _best_threshold(score.function(sa), score.function(sb), confidence, delta)
        if best is None or found[0] > best[0][0]:
            best = (found, score)
    (_, threshold, upper, swapped), score = best
    return Event(score.description, threshold, upper, swapped, score, finite)
