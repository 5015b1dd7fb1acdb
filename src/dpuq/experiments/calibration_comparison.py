"""Certified vs paper calibration vs split conformal on shipped data
(docs/explanation/calibration.md).

Run (about a minute on one core; Fashion-MNIST is used when its Debian package is installed)::

    python -m dpuq.experiments.calibration_comparison --out docs/assets/calibration_tables.md

Data: sklearn's digits (a logistic regression trained on 297 images, a pool of 1500 for
calibration + test) and Fashion-MNIST (a logistic regression on 10,000 training images, the
10,000 test images as the pool). For each n and ε, every method is evaluated on the **same**
random calibration/test splits of the pool (paired), with the vectorised tools of
:mod:`dpuq.experiments.evaluation`: one exact ε-DP release per split. A size ratio is the mean
private set size over the mean split-conformal set size. A second table runs APS and RAPS on
digits at ε = 1 (deterministic vs randomized scores) and reports the share of splits whose
release is the full set, and the largest share of calibration scores in one bin (the grid
against the score law).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpuq.conformal.scores import aps_scores, raps_scores
from dpuq.experiments.common import Method, compare_methods
from dpuq.experiments.evaluation import ScorePool, random_splits
from dpuq.mechanisms.quantile import bin_edges, bin_index
from dpuq.planning import auto_n_bins
from dpuq.reporting import markdown_table

__all__ = ["aps_table", "comparison_rows", "digits_pool", "load_pools", "main"]

logger = logging.getLogger(__name__)
SIZES = (200, 500, 1000)
EPSILONS = (0.5, 1.0)
ALPHA = 0.1


@dataclass(frozen=True)
class Pool:
    """Class probabilities and labels of a held-out pool (calibration + test)."""

    name: str
    probs: np.ndarray
    labels: np.ndarray


def digits_pool(c: float = 0.3) -> Pool:
    """Digits: a logistic regression (inverse regularisation ``c``) on 297 images, 1500 left.

    ``c = 30`` gives a confident model (mean top probability 0.93), as in the APS table.
    """
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    idx = np.random.default_rng(11).permutation(len(y))
    train, rest = idx[:297], idx[297:]
    model = LogisticRegression(max_iter=5000, C=c).fit(X[train], y[train])
    name = f"digits (logistic regression, C = {c:g})"
    return Pool(name, model.predict_proba(X[rest]), y[rest])


def _fashion_pool() -> Pool | None:
    from dpuq.data.images import fashion_mnist_available, load_fashion_mnist

    if not fashion_mnist_available():
        return None
    from sklearn.linear_model import LogisticRegression

    train, test = load_fashion_mnist("train"), load_fashion_mnist("test")
    X = train.images.reshape(len(train.labels), -1)[:10_000]
    model = LogisticRegression(max_iter=200, C=0.05).fit(X, train.labels[:10_000])
    probs = model.predict_proba(test.images.reshape(len(test.labels), -1))
    return Pool("Fashion-MNIST (logistic regression)", probs, test.labels)


def load_pools(fashion: bool = True) -> list[Pool]:
    """The shipped pools: digits, and Fashion-MNIST when installed and asked for."""
    pools = [digits_pool()]
    if fashion and (fm := _fashion_pool()) is not None:
        pools.append(fm)
    return pools


def comparison_rows(pool: Pool, n_splits: int, seed: int = 0) -> list[list[str]]:
    """Rows: n, ε, split-conformal coverage and size, then coverage and size ratio per method."""
    scores = ScorePool.from_probs(pool.probs, pool.labels)
    rows = []
    for n in SIZES:
        if n >= scores.n_points - 100:
            continue
        for eps in EPSILONS:
            methods = [
                Method("split conformal"),
                Method("certified", eps, calibration="certified"),
                Method("paper", eps, calibration="paper"),
            ]
            res = compare_methods(
                scores, methods, alpha=ALPHA, n_calibration=n, n_test=None,
                n_splits=n_splits, random_state=np.random.default_rng([seed, n, int(eps * 100)]),
                show_progress=False,
            )  # fmt: skip
            base = res[0].metrics
            row = [
                str(n),
                f"{eps:g}",
                f"{base.coverage.mean():.3f}",
                f"{base.mean_size.mean():.3f}",
            ]
            for r in res[1:]:
                m = r.metrics
                ratio = m.mean_size.mean() / base.mean_size.mean()
                full = float(np.mean(m.thresholds >= 1.0))
                row += [f"{m.coverage.mean():.3f}", f"×{ratio:.3f}", f"{full:.0%}"]
            rows.append(row)
    return rows


COMPARISON_HEADER = [
    "n", "ε", "split cov.", "split size",
    "certified cov.", "certified size", "certified full",
    "paper cov.", "paper size", "paper full",
]  # fmt: skip


def _score_pool(matrix: np.ndarray, labels: np.ndarray) -> ScorePool:
    true = matrix[np.arange(len(labels)), labels]
    return ScorePool(true, np.sort(matrix, axis=1))


def aps_table(pool: Pool, n: int, epsilon: float, n_splits: int, seed: int = 0):
    """Rows for APS/RAPS (deterministic and randomized) with both methods, on one pool."""
    rng = np.random.default_rng([seed, 1])
    kinds = {
        "APS (deterministic)": aps_scores(pool.probs),
        "APS (randomized)": aps_scores(pool.probs, randomized=True, random_state=rng),
        "RAPS (deterministic)": raps_scores(pool.probs),
        "RAPS (randomized)": raps_scores(pool.probs, randomized=True, random_state=rng),
    }
    splits = random_splits(len(pool.labels), n, None, n_splits, np.random.default_rng([seed, 2]))
    rows = []
    for name, matrix in kinds.items():
        sp = _score_pool(matrix, pool.labels)
        methods = [
            Method("split conformal"),
            Method("certified", epsilon, calibration="certified"),
            Method("paper", epsilon, calibration="paper"),
        ]
        res = compare_methods(
            sp, methods, alpha=ALPHA, n_calibration=n, n_test=None, n_splits=n_splits,
            random_state=np.random.default_rng([seed, 3]), show_progress=False, splits=splits,
        )  # fmt: skip
        m_cert = auto_n_bins(n, ALPHA, epsilon)[0]
        per_bin = np.bincount(bin_index(sp.true_scores, bin_edges(m_cert)), minlength=m_cert)
        row = [
            name,
            f"{per_bin.max() / per_bin.sum():.2f}",
            f"{res[0].metrics.mean_size.mean():.2f}",
        ]
        for r in res[1:]:
            m = r.metrics
            full = float(np.mean(m.thresholds >= 1.0))
            row += [f"{m.coverage.mean():.3f}", f"{m.mean_size.mean():.2f}", f"{full:.0%}"]
        rows.append(row)
    return rows


APS_HEADER = [
    "score", "top bin share", "split size",
    "certified cov.", "certified size", "certified full",
    "paper cov.", "paper size", "paper full",
]  # fmt: skip


def main(argv: list[str] | None = None) -> str:
    """Run the comparison; print the markdown and write it to ``--out`` if given."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=300, help="random splits per cell")
    ap.add_argument("--aps-splits", type=int, default=100, help="random splits for APS/RAPS")
    ap.add_argument("--no-fashion", action="store_true", help="digits only")
    ap.add_argument("--out", type=Path, help="markdown file to write")
    args = ap.parse_args(argv)
    parts = [
        f"Coverage and set size at α = {ALPHA}, LAC scores, {args.splits} random splits per "
        "cell (paired: all methods on the same splits). Size ratios are over split conformal; "
        "'full' is the share of splits whose release is the full set.",
    ]
    pools = load_pools(fashion=not args.no_fashion)
    for pool in pools:
        rows = comparison_rows(pool, args.splits)
        parts += ["", f"### {pool.name}, pool of {len(pool.labels)}", ""]
        parts.append(markdown_table(COMPARISON_HEADER, rows))
    n_aps, confident = 1000, digits_pool(30.0)
    parts += [
        "",
        f"### APS and RAPS on {confident.name}, n = {n_aps}, ε = 1, {args.aps_splits} splits",
        "",
        "A confident model (mean top-class probability "
        f"{confident.probs.max(axis=1).mean():.2f}). 'top bin share': the largest share of the "
        "pool's true-label scores in one bin of the certified grid (m* at this n, ε).",
        "",
        markdown_table(APS_HEADER, aps_table(confident, n_aps, 1.0, args.aps_splits)),
    ]
    text = "\n".join(parts) + "\n"
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return text


if __name__ == "__main__":  # pragma: no cover
    main()
