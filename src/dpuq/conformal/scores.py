"""Conformity scores for classification : pure functions of probabilities and labels.

Each takes class probabilities ``probs`` of shape (n, K). With ``labels`` it returns the (n,)
scores of the true labels (calibration); without, the (n, K) matrix of scores of every label
(prediction). Every score lies in [0, 1]; low means the label conforms.

Rows of ``probs`` must be >= 0 and sum to 1 within 1e-6 (float16/float32 rows: within their own
precision); they are then divided by their sum so that all scores lie in [0, 1] exactly (this
only removes rounding, it changes no decision).
"""

from __future__ import annotations

import numpy as np

from dpuq._validation import _as_float, check_labels, check_positive_int, check_probabilities
from dpuq.mechanisms.randomness import (
    RandomState,
    check_random_state,
    derive_seed,
    row_uniforms,
)

__all__ = ["aps_scores", "lac_scores", "raps_scores", "score_matrix_and_labels", "top_k_scores"]


def _normalised(probs) -> np.ndarray:
    p = check_probabilities(probs)
    return p / p.sum(axis=1, keepdims=True)


def _pick(matrix: np.ndarray, labels, name: str = "labels") -> np.ndarray:
    if labels is None:
        return matrix
    y = check_labels(labels, matrix.shape[1], matrix.shape[0], name)
    return matrix[np.arange(matrix.shape[0]), y]


def lac_scores(probs, labels=None) -> np.ndarray:
    """LAC score ``1 - p̂_y(x)`` (Sadinle et al. 2019; the score of Angelopoulos et al. 2022).

    Parameters
    ----------
    probs : array-like of shape (n, K)
        Class probabilities.
    labels : array-like of shape (n,), optional
        True class indices 0..K-1.

    Returns
    -------
    ndarray of shape (n,) with labels, else (n, K)

    Examples
    --------
    >>> lac_scores([[0.7, 0.3]], [1]).tolist()
    [0.7]
    """
    return _pick(1.0 - _normalised(probs), labels)


def _row_draws(n: int, randomized: bool, random_state, uniforms) -> np.ndarray | None:
    """The per-row ``U`` of randomised scores: given (chunked scoring), or drawn per row
    from generators derived from ``random_state`` (:func:`~dpuq.mechanisms.randomness.
    row_uniforms`, the same numbers whatever the chunking)."""
    if not randomized:
        return None
    if uniforms is not None:
        u = np.asarray(uniforms, dtype=float)
        if u.shape != (n,):
            raise ValueError(f"uniforms must have shape ({n},), got {u.shape}")
        return u
    return row_uniforms(derive_seed(check_random_state(random_state)), 0, n)


def _aps_matrix(p: np.ndarray, randomized: bool, u: np.ndarray | None):
    order = np.argsort(-p, axis=1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=1)
    cum_above = np.cumsum(sorted_p, axis=1) - sorted_p  # mass ranked strictly above
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(p.shape[1])[None, :], axis=1)
    above = np.take_along_axis(cum_above, ranks, axis=1)
    if randomized:
        scores = above + u[:, None] * p
    else:
        scores = above + p
    # Cumulative sums of a normalised row can exceed 1 by a few ulps: remove that rounding.
    return np.minimum(np.maximum(scores, 0.0), 1.0), ranks + 1


def aps_scores(
    probs,
    labels=None,
    *,
    randomized: bool = False,
    random_state: RandomState = None,
    uniforms=None,
) -> np.ndarray:
    """APS score (Romano, Sesia, Candès 2020): mass of labels ranked above ``y`` plus ``p̂_y``.

    With ``randomized=True`` the own-label term is ``U · p̂_y`` with one ``U ~ Uniform(0, 1)``
    per row (exact coverage in expectation); otherwise ``p̂_y`` (conservative). Ties in
    probability are ranked by class index. ``uniforms`` (shape (n,)) gives the ``U`` draws
    instead of ``random_state`` (chunked scoring on Dask, :mod:`dpuq.scale._dask`).

    Examples
    --------
    >>> aps_scores([[0.5, 0.3, 0.2]], [1]).round(6).tolist()
    [0.8]
    """
    p = _normalised(probs)
    u = _row_draws(p.shape[0], randomized, random_state, uniforms)
    return _pick(_aps_matrix(p, randomized, u)[0], labels)


def raps_scores(
    probs,
    labels=None,
    *,
    lam: float = 0.01,
    k_reg: int = 5,
    randomized: bool = False,
    random_state: RandomState = None,
    uniforms=None,
) -> np.ndarray:
    """RAPS score (Angelopoulos et al. 2021), rescaled to [0, 1] by its public maximum.

    ``(APS + λ max(0, rank(y) - k_reg)) / (1 + λ max(0, K - k_reg))``; the divisor depends only
    on public parameters and K, so the rescaling costs no privacy.

    Examples
    --------
    >>> raps_scores([[0.5, 0.3, 0.2]], [2], lam=0.5, k_reg=1).round(6).tolist()
    [1.0]
    """
    p = _normalised(probs)
    lam = _as_float(lam, "lam")
    if not np.isfinite(lam) or lam < 0 or lam > 1e100:
        raise ValueError(f"lam must be a finite number in [0, 1e100], got {lam!r}")
    k_reg = check_positive_int(k_reg, "k_reg", minimum=0)
    u = _row_draws(p.shape[0], randomized, random_state, uniforms)
    aps, ranks = _aps_matrix(p, randomized, u)
    penalty = lam * np.maximum(0, ranks - k_reg)
    scale = 1.0 + lam * max(0, p.shape[1] - k_reg)
    return _pick(np.minimum((aps + penalty) / scale, 1.0), labels)


def top_k_scores(probs, labels=None) -> np.ndarray:
    """Top-K score: the rank of a label by decreasing probability, over K (MAPIE's "top_k").

    ``s = (1 + #{k : p̂_k(x) > p̂_y(x)}) / K`` in (0, 1]: a set ``{y : s <= t}`` holds the
    ``floor(tK)`` most probable labels (all tied ones too). The score ignores the values of the
    probabilities beyond their order, so its sets have one size for every x.

    Examples
    --------
    >>> top_k_scores([[0.5, 0.3, 0.2]], [1]).tolist()
    [0.6666666666666666]
    >>> top_k_scores([[0.5, 0.3, 0.2]]).tolist()
    [[0.3333333333333333, 0.6666666666666666, 1.0]]
    """
    p = _normalised(probs)
    above = (p[:, None, :] > p[:, :, None]).sum(axis=2)  # (n, K): labels strictly above
    return _pick((1.0 + above) / p.shape[1], labels)


_SCORES = {"lac": lac_scores, "aps": aps_scores, "raps": raps_scores, "top_k": top_k_scores}


def score_function(name: str):
    """The score function called ``name`` (``"lac"``, ``"aps"``, ``"raps"`` or ``"top_k"``)."""
    if name not in _SCORES:
        raise ValueError(f"score must be one of {sorted(_SCORES)}, got {name!r}")
    return _SCORES[name]


def score_matrix_and_labels(name: str, probs, labels=None, **params):
    """Scores by name; a convenience for estimators and the command line."""
    return score_function(name)(probs, labels, **params)
