"""Marginal vs class-conditional private sets, class by class, on imbalanced data.

A model is trained on part of the data; the rest is a pool of (probabilities, label) pairs
split at random, many times, into calibration and test parts. On each split three thresholds
are released from the calibration part and evaluated on the test part:

- ``marginal``: :func:`dpuq.calibrate` (one threshold, ε-DP);
- ``class-conditional``: :func:`dpuq.calibrate_by_class` (one threshold per class, ε-DP);
- ``split (non-private)``: the exact non-private Mondrian split-conformal thresholds, for
  reference.

One class is made rare by keeping only a fraction of it (in training and in the pool), so the
model is also worse on it: the situation where marginal coverage hides a badly covered class.

Run ``python -m dpuq.experiments.class_conditional`` to rewrite
``docs/assets/class_conditional.json``
and ``docs/assets/class_conditional_table.md``. Each split is a separate simulated release on
overlapping people (an experiment, not a deployment).
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dpuq.conformal.calibration import (
    UninformativeReleaseWarning,
    calibrate,
    split_conformal_threshold,
)
from dpuq.conformal.class_conditional import calibrate_by_class, class_prediction_sets
from dpuq.conformal.scores import lac_scores
from dpuq.metrics.class_coverage import coverage_by_class
from dpuq.reporting import markdown_table

__all__ = ["ClassConditionalConfig", "format_table", "load_pool", "run_experiment"]

METHODS = ("marginal", "class-conditional", "split (non-private)")


@dataclass(frozen=True)
class ClassConditionalConfig:
    """Settings of :func:`run_experiment` (all public)."""

    dataset: str = "fashion-mnist"  # or "digits"
    rare_class: int = 0
    rare_fraction: float = 0.1
    n_train: int = 10_000
    calibration_fraction: float = 0.5
    alpha: float = 0.1
    epsilon: float = 1.0
    n_splits: int = 40
    seed: int = 0


def load_pool(config: ClassConditionalConfig) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Train the model and return the pool's probabilities, labels and class names."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from dpuq.data.images import load_digits_images, load_fashion_mnist

    rng = np.random.default_rng(config.seed)
    if config.dataset == "fashion-mnist":
        from dpuq.data.images import FASHION_MNIST_CLASSES

        parts = [load_fashion_mnist("train"), load_fashion_mnist("test")]
        x = np.concatenate([p.images.reshape(len(p.labels), -1) for p in parts])
        y = np.concatenate([p.labels for p in parts])
        names = list(FASHION_MNIST_CLASSES)
    elif config.dataset == "digits":
        d = load_digits_images()
        x, y, names = d.images.reshape(len(d.labels), -1), d.labels, [str(i) for i in range(10)]
    else:
        raise ValueError(f"dataset must be 'fashion-mnist' or 'digits', got {config.dataset!r}")
    rare = np.flatnonzero(y == config.rare_class)
    drop = rng.choice(rare, size=rare.size - round(config.rare_fraction * rare.size), replace=False)
    keep = np.setdiff1d(np.arange(y.size), drop)
    keep = rng.permutation(keep)
    n_train = min(config.n_train, keep.size // 3)
    train, pool = keep[:n_train], keep[n_train:]
    model = make_pipeline(PCA(min(50, x.shape[1]), random_state=0), LogisticRegression(C=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings: the model only needs to exist
        model.fit(x[train], y[train])
    return model.predict_proba(x[pool]), y[pool].astype(np.int64), names


def _mondrian_split(scores: np.ndarray, labels: np.ndarray, k: int, alpha: float) -> np.ndarray:
    out = np.ones(k)
    for c in range(k):  # reference thresholds, one per class
        s = scores[labels == c]
        if s.size:
            out[c] = min(1.0, split_conformal_threshold(s, alpha))
    return out


def _private_pair(true, labels, k: int, alpha: float, epsilon: float, rng):
    """One simulated release of each private method: marginal and per-class thresholds (k,)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UninformativeReleaseWarning)
        marginal = calibrate(true, alpha=alpha, epsilon=epsilon, random_state=rng).threshold
        by_class = calibrate_by_class(
            true, labels, k, alpha=alpha, epsilon=epsilon, random_state=rng
        ).threshold_array()
    return np.full(k, marginal), by_class


def run_experiment(config: ClassConditionalConfig, probs=None, labels=None) -> dict:
    """Per-class coverage and mean size of the three methods, averaged over random splits.

    Returns a JSON-ready dict: the config, the class names and counts, and for each method and
    class the mean coverage, its standard error over splits and the mean set size.
    """
    names = None
    if probs is None:
        probs, labels, names = load_pool(config)
    k = probs.shape[1]
    names = names or [str(c) for c in range(k)]
    rng = np.random.default_rng(config.seed + 1)
    all_scores = lac_scores(probs)
    true = all_scores[np.arange(labels.size), labels]
    n_cal = round(config.calibration_fraction * labels.size)
    cov = np.zeros((len(METHODS), config.n_splits, k))
    size = np.zeros_like(cov)
    overall = np.zeros((len(METHODS), config.n_splits, 2))
    cal_counts = np.zeros((config.n_splits, k))
    for r in range(config.n_splits):  # one simulated release per split
        perm = rng.permutation(labels.size)
        cal, test = perm[:n_cal], perm[n_cal:]
        cal_counts[r] = np.bincount(labels[cal], minlength=k)
        t_marg, t_class = _private_pair(
            true[cal], labels[cal], k, config.alpha, config.epsilon, rng
        )
        t_split = _mondrian_split(true[cal], labels[cal], k, config.alpha)
        for i, t in enumerate((t_marg, t_class, t_split)):
            sets = class_prediction_sets(all_scores[test], t)
            _, cov[i, r], size[i, r] = coverage_by_class(sets, labels[test], k)
            overall[i, r] = sets[np.arange(test.size), labels[test]].mean(), sets.sum(1).mean()
    result = {
        "config": asdict(config),
        "classes": names,
        "pool_counts": np.bincount(labels, minlength=k).tolist(),
        "mean_calibration_counts": cal_counts.mean(axis=0).round(1).tolist(),
        "methods": {},
    }
    for i, method in enumerate(METHODS):
        result["methods"][method] = {
            "coverage": np.nanmean(cov[i], axis=0).tolist(),
            "coverage_se": (
                np.nanstd(cov[i], axis=0, ddof=1) / math.sqrt(config.n_splits)
            ).tolist(),
            "size": np.nanmean(size[i], axis=0).tolist(),
            "overall_coverage": float(overall[i, :, 0].mean()),
            "overall_size": float(overall[i, :, 1].mean()),
            "overall_size_se": float(overall[i, :, 1].std(ddof=1) / math.sqrt(config.n_splits)),
            "min_class_coverage": float(np.nanmin(np.nanmean(cov[i], axis=0))),
        }
    return result


def format_table(result: dict) -> str:
    """Markdown table: per class, coverage (± s.e.) and mean size of each method."""
    methods = result["methods"]
    header = ["class", "calibration n (mean)"]
    header += [f"{m} {what}" for m in methods for what in ("coverage", "size")]
    rows = []
    for c, name in enumerate(result["classes"]):
        rows.append([name, f"{result['mean_calibration_counts'][c]:.0f}"])
        for m in methods.values():
            rows[-1] += [
                f"{m['coverage'][c]:.3f} ± {m['coverage_se'][c]:.3f}",
                f"{m['size'][c]:.2f}",
            ]
    rows.append(["**all**", f"{sum(result['mean_calibration_counts']):.0f}"])
    for m in methods.values():
        se = f" ± {m['overall_size_se']:.2f}" if "overall_size_se" in m else ""
        rows[-1] += [f"{m['overall_coverage']:.3f}", f"{m['overall_size']:.2f}" + se]
    return markdown_table(header, rows) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion-mnist", choices=("fashion-mnist", "digits"))
    parser.add_argument("--splits", type=int, default=40)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--out", default="docs/assets")
    args = parser.parse_args(argv)
    config = ClassConditionalConfig(
        dataset=args.dataset, n_splits=args.splits, epsilon=args.epsilon
    )
    result = run_experiment(config)
    out = Path(args.out)
    stem = (
        "class_conditional"
        if args.dataset == "fashion-mnist"
        else f"class_conditional_{args.dataset}"
    )
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"{stem}_table.md").write_text(format_table(result))
    print(format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ------------------------------------------------------------------------ the demo's table
def demo_class_table(
    probs, labels, splits, *, alpha: float, epsilon: float, rng, class_names, max_splits=20
) -> list[dict]:
    """Per-class coverage and size of marginal vs class-conditional private sets (the demo).

    ``splits`` is the demo's ``(calibration, test)`` index arrays; the first ``max_splits``
    splits are used, each a simulated release of both methods at ``epsilon``. Returns rows of
    :func:`dpuq.metrics.class_coverage.class_coverage_table` averaged over the splits.
    """
    from dpuq.metrics.class_coverage import class_coverage_table

    cal_idx, test_idx = splits
    k = probs.shape[1]
    scores = lac_scores(probs)
    true = scores[np.arange(labels.size), labels]
    tables = []
    for cal, test in zip(cal_idx[:max_splits], test_idx[:max_splits], strict=True):
        t_marg, t_class = _private_pair(true[cal], labels[cal], k, alpha, epsilon, rng)
        tables.append(
            class_coverage_table(
                labels[test],
                class_names,
                marginal=class_prediction_sets(scores[test], t_marg),
                class_conditional=class_prediction_sets(scores[test], t_class),
            )
        )
    rows = []
    for i, row in enumerate(tables[0]):
        rows.append(
            {
                key: (np.nanmean([t[i][key] for t in tables]) if key != "class" else value)
                for key, value in row.items()
            }
        )
    return rows


def format_class_table(rows: list[dict]) -> str:
    """Plain-text table of :func:`demo_class_table` rows."""
    if not rows:
        return ""
    keys = list(rows[0])
    lines = ["  ".join(f"{k:>24}" if i else f"{k:<14}" for i, k in enumerate(keys))]
    for row in rows:
        cells = []
        for i, k in enumerate(keys):
            v = row[k]
            text = str(v) if isinstance(v, str) else (f"{v:.0f}" if k == "n" else f"{v:.3f}")
            cells.append(f"{text:>24}" if i else f"{text:<14}")
        lines.append("  ".join(cells))
    return "\n".join(lines)
