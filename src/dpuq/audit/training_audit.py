"""One-run auditing of private training (Steinke, Nasr and Jagielski, NeurIPS 2023).

:func:`audit_training` builds ``m`` canaries, flips a fair coin ``S_i`` for each, trains
**once** on the base data plus the canaries whose coin came up heads, scores every canary by
the trained model's log-probability of its label (less that of its label at the all-zero
input, which removes what canaries of one label share), guesses "in" for the ``k`` highest scores
and "out" for the ``k`` lowest (``r = 2k`` guesses, the others abstain), and counts the ``v``
right guesses. Theorem 3.1 of the paper (:func:`dpuq.audit.one_run_epsilon_lower_bound`)
turns ``(m, r, v)`` into an ε lower bound at ``confidence``.

The relation. Under add/remove-one a canary with tails is simply left out. Under
replace-one (dpuq's relation, ``N`` public) its slot holds a *filler* instead: a copy of a
base example drawn by the auditor, so that flipping one coin replaces one record and the
training set always has ``N_base + m`` examples. Either way flipping one ``S_i`` gives
neighbouring inputs, which is all the theorem needs.

What it proves: with probability at least ``confidence`` over the coins, the training run is
not ``(ε, δ)``-DP for ``ε`` below the bound. Black-box one-run audits are weak (they see only
the final model, and canaries interfere); a small bound says little, a bound above the
claim is proof of a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpuq.audit.bounds import (
    ClaimVerdict,
    _check_confidence,
    _check_delta,
    one_run_epsilon_lower_bound,
)
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = ["TrainingAudit", "audit_training", "random_canaries"]


@dataclass(frozen=True)
class TrainingAudit(ClaimVerdict):
    """The result of a one-run audit.

    Attributes
    ----------
    epsilon : float
        The lower bound (0 when nothing is proven).
    n_canaries, n_guesses, n_correct : int
        ``m``, ``r`` and ``v`` of the theorem.
    confidence, delta : float
    claimed_epsilon : float or None
        The ε of the training run's privacy report (None when it has none).
    """

    epsilon: float
    n_canaries: int
    n_guesses: int
    n_correct: int
    confidence: float
    delta: float
    claimed_epsilon: float | None

    def __str__(self) -> str:
        return (
            f"epsilon >= {self.epsilon:.4f} at {100 * self.confidence:g}% confidence "
            f"(delta={self.delta:g}; one run, {self.n_correct}/{self.n_guesses} right guesses "
            f"on {self.n_canaries} canaries)" + self.verdict()
        )


def random_canaries(X: np.ndarray, n_classes: int, m: int, rng: np.random.Generator):
    """``m`` canaries, each with a label drawn uniformly from the classes.

    When the inputs have at least ``m`` features, canary ``i`` is ``max|X|`` times the unit
    vector of the ``i``-th least used feature (smallest mean ``|X|``): canaries then share no
    feature with each other and few with the data, so nothing but its own presence moves a
    canary's score (the strongest black-box design). Otherwise every feature is ``±max|X|``
    at random (nearly orthogonal directions).

    Examples
    --------
    >>> X = np.zeros((5, 4), dtype=np.float32); X[:, 0] = 1.0
    >>> Xc, yc = random_canaries(X, 3, 2, np.random.default_rng(0))
    >>> Xc.tolist()
    [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    """
    scale = float(np.max(np.abs(X))) or 1.0
    labels = rng.integers(0, n_classes, size=m)
    flat = X.reshape(X.shape[0], -1)
    if flat.shape[1] >= m:
        features = np.argsort(np.abs(flat).mean(0), kind="stable")[:m]
        canaries = np.zeros((m, flat.shape[1]), dtype=np.float32)
        canaries[np.arange(m), features] = scale
        return canaries.reshape(m, *X.shape[1:]), labels
    signs = rng.integers(0, 2, size=(m, *X.shape[1:])) * 2 - 1
    return (scale * signs).astype(np.float32), labels


def _canary_scores(model, Xc: np.ndarray, yc: np.ndarray) -> np.ndarray:
    """``log p(y_i | x_i) - log p(y_i | 0)``: the model's log-probability of each canary's
    label, less that of the same label at the all-zero input (black-box queries only). The
    difference removes what all canaries of a label share (the bias, the class balance), so
    that what is left is each canary's own trace."""
    import torch

    model.eval()
    with torch.no_grad():
        x = torch.as_tensor(np.concatenate([Xc, np.zeros_like(Xc[:1])]), dtype=torch.float32)
        logp = torch.log_softmax(model(x), dim=1).numpy().astype(float)  # log-probs unchanged
    return logp[np.arange(yc.size), yc] - logp[-1, yc]


def _check_guesses(n_guesses, m: int) -> int:
    r = m // 5 if n_guesses is None else n_guesses
    if isinstance(r, bool) or int(r) != r or r < 2 or r % 2 or r > m:
        raise ValueError(f"n_guesses must be an even integer in [2, n_canaries], got {r!r}")
    return int(r)


def audit_training(
    model_fn: Callable[[], Any],
    train_data,
    *,
    train_options: dict,
    n_canaries: int = 1000,
    n_guesses: int | None = None,
    canaries=None,
    confidence: float = 0.95,
    delta: float | None = None,
    trainer: Callable | None = None,
    claimed_epsilon: float | None = None,
    random_state: RandomState = None,
) -> TrainingAudit:
    """Audit private training with one run and ``n_canaries`` canaries (module docstring).

    Parameters
    ----------
    model_fn : callable () -> torch.nn.Module
        A fresh model (logits of shape (batch, n_classes)).
    train_data : (X, y)
        The base training set (numpy arrays).
    train_options : dict
        Keyword arguments of the trainer, e.g. ``{"method": "dpsgd", "epsilon": 8,
        "delta": 1e-5, "epochs": 10}``; ``relation`` picks how an absent canary is handled.
    n_canaries : int, default 1000
    n_guesses : int, optional
        ``r``: guess "in" for the ``r/2`` highest-scoring canaries and "out" for the ``r/2``
        lowest (default ``n_canaries // 5``). Fixed before training: choosing it after seeing
        the scores would void the confidence.
    canaries : (Xc, yc), optional
        The canaries (default :func:`random_canaries`).
    confidence : float, default 0.95
    delta : float, optional
        The δ of the hypothesis tested (default the training's ``delta``, else 0).
    trainer : callable ``(model, (X, y), **train_options) -> (model, report)``, optional
        Default :func:`dpuq.training.train_classifier`.
    claimed_epsilon : float, optional
        The ε the run claims (default: its report's ε when finite).
    random_state : None, int or numpy.random.Generator
        The auditor's randomness (canaries, coins, fillers) and, unless ``train_options``
        has one, the training's seed.

    Returns
    -------
    TrainingAudit
    """
    conf = _check_confidence(confidence)
    if isinstance(n_canaries, bool) or int(n_canaries) != n_canaries or n_canaries < 2:
        raise ValueError(f"n_canaries must be an integer >= 2, got {n_canaries!r}")
    m = int(n_canaries)
    r = _check_guesses(n_guesses, m)
    options = dict(train_options)
    d = _check_delta((options.get("delta") or 0.0) if delta is None else delta)
    X, y = (np.asarray(a) for a in train_data)
    rng = check_random_state(random_state)
    n_classes = int(y.max()) + 1
    if canaries is None:
        Xc, yc = random_canaries(X, n_classes, m, rng)
    else:
        Xc, yc = np.asarray(canaries[0], dtype=np.float32), np.asarray(canaries[1])
        if Xc.shape[0] != m or yc.shape[0] != m:
            raise ValueError("canaries must hold n_canaries examples and labels")
    included = rng.integers(0, 2, size=m).astype(bool)
    filler = rng.integers(0, X.shape[0], size=m)
    options.setdefault("random_state", int(rng.integers(0, 2**31 - 1)))
    replace_one = str(options.get("relation", "replace-one")).startswith("replace")
    if replace_one:
        slots_X = np.where(included.reshape(-1, *[1] * (X.ndim - 1)), Xc, X[filler])
        slots_y = np.where(included, yc, y[filler])
    else:
        slots_X, slots_y = Xc[included], yc[included]
    X_all = np.concatenate([X.astype(np.float32), slots_X.astype(np.float32)])
    y_all = np.concatenate([y, slots_y]).astype(np.int64)
    if trainer is None:
        from dpuq.training import train_classifier as trainer

        options.setdefault("show_progress", False)
    model, report = trainer(model_fn(), (X_all, y_all), **options)
    scores = _canary_scores(model, Xc, yc.astype(np.int64))
    order = np.argsort(scores, kind="stable")
    k = r // 2
    v = int(included[order[-k:]].sum() + (~included[order[:k]]).sum())
    eps = one_run_epsilon_lower_bound(m, r, v, confidence=conf, delta=d)
    if claimed_epsilon is None:
        claimed = getattr(report, "epsilon", None)
        claimed_epsilon = float(claimed) if claimed is not None and np.isfinite(claimed) else None
    return TrainingAudit(eps, m, r, v, conf, d, claimed_epsilon)
