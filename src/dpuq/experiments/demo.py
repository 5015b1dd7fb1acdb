"""The short demo: private prediction sets for handwritten digits.

A logistic regression is trained on one part of ``sklearn``'s digits; the conformal threshold
is released with ε-DP from a calibration part, and coverage and set sizes are measured on a
test part, over many random calibration/test splits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpuq._progress import progress
from dpuq.conformal.calibration import PrivateCalibration, calibrate, split_conformal_threshold
from dpuq.conformal.scores import lac_scores
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.quantile import auto_n_bins, optimal_gamma

__all__ = ["DemoResult", "run_demo"]


@dataclass(frozen=True)
class DemoResult:
    """Summary of the demo."""

    n_train: int
    n_calibration: int
    n_test: int
    n_splits: int
    accuracy: float
    private_coverage: np.ndarray  # per split
    private_size: np.ndarray
    baseline_coverage: np.ndarray
    baseline_size: np.ndarray
    example: PrivateCalibration


def run_demo(
    *,
    epsilon: float = 1.0,
    alpha: float = 0.1,
    n_calibration: int = 500,
    n_splits: int = 100,
    random_state: RandomState = None,
    show_progress: bool = True,
) -> DemoResult:
    """Run the digits demo and return its numbers."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    rng = check_random_state(random_state)
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    order = rng.permutation(len(y))
    n_train = len(y) - 2 * n_calibration
    if n_train < 100:
        raise ValueError(f"n_calibration={n_calibration} leaves too few training points")
    train, rest = order[:n_train], order[n_train:]
    model = LogisticRegression(max_iter=2000, C=0.5).fit(X[train], y[train])
    probs = model.predict_proba(X[rest])
    labels = y[rest]
    accuracy = float(np.mean(np.argmax(probs, axis=1) == labels))
    cal_scores = lac_scores(probs, labels)
    all_scores = lac_scores(probs)
    n_bins, _ = auto_n_bins(n_calibration, alpha, epsilon)
    gamma = optimal_gamma(n_calibration, alpha, epsilon, n_bins)
    n_rest = len(rest)
    idx = np.argsort(rng.random((n_splits, n_rest)), axis=1)
    cal_idx, test_idx = idx[:, :n_calibration], idx[:, n_calibration:]
    test_scores = all_scores[test_idx]  # (splits, n_test, K)
    test_labels = labels[test_idx]
    thresholds = np.empty(n_splits)
    baseline = np.empty(n_splits)
    example = None
    for k in progress(range(n_splits), "calibration splits", disable=not show_progress):
        cal = calibrate(
            cal_scores[cal_idx[k]],
            alpha=alpha,
            epsilon=epsilon,
            n_bins=n_bins,
            gamma=gamma,
            random_state=rng,
        )
        example = example or cal
        thresholds[k] = cal.threshold
        baseline[k] = split_conformal_threshold(cal_scores[cal_idx[k]], alpha)

    def evaluate(t: np.ndarray):
        sets = test_scores <= t[:, None, None]
        hit = np.take_along_axis(sets, test_labels[..., None], axis=2)[..., 0]
        return hit.mean(axis=1), sets.sum(axis=2).mean(axis=1)

    pc, ps = evaluate(thresholds)
    bc, bs = evaluate(baseline)
    return DemoResult(
        n_train=n_train,
        n_calibration=n_calibration,
        n_test=n_rest - n_calibration,
        n_splits=n_splits,
        accuracy=accuracy,
        private_coverage=pc,
        private_size=ps,
        baseline_coverage=bc,
        baseline_size=bs,
        example=example,
    )


def format_demo(result: DemoResult, alpha: float) -> str:
    """A terminal summary of :func:`run_demo`."""

    def row(name, cov, size):
        lo, hi = np.percentile(cov, [5, 95])
        return f"{name:<28}{cov.mean():>9.3f}  [{lo:.3f}, {hi:.3f}]{size.mean():>11.2f}"

    lines = [
        "dpuq demo: private prediction sets on sklearn digits (10 classes)",
        f"model: logistic regression, trained on {result.n_train} images, "
        f"test accuracy {result.accuracy:.3f}",
        f"calibration n = {result.n_calibration}, test n = {result.n_test}, "
        f"{result.n_splits} random calibration/test splits, target coverage {1 - alpha:.2f}",
        "",
        f"{'calibration':<28}{'coverage':>9}  {'5%-95%':<16}{'mean size':>11}",
        row("split conformal (not private)", result.baseline_coverage, result.baseline_size),
        row(
            f"private (ε = {result.example.epsilon:g})",
            result.private_coverage,
            result.private_size,
        ),
        "",
        "privacy report of one release:",
        str(result.example.privacy_report),
    ]
    return "\n".join(lines)
