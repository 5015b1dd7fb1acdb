"""The regression bound's trade-off: a tighter B, narrower intervals but more whole-line releases.

Public data only (scikit-learn's diabetes, which ships with the package; nothing here was tuned
on it): each random split takes 200 training people (the bound's source: 5-fold held-out Ridge
residuals), 159 calibration people (one ε = 1 release at 90 %) and the rest as test people.
For each way of choosing B the table gives the share of releases whose intervals are the whole
line, the median half-width of the others and their coverage, and, for the aimed B, what
``dpuq.public_bound`` planned. Run (a few minutes on a loaded machine):

    PYTHONPATH=src python benchmarks/bound_tradeoff.py --splits 200
"""

from __future__ import annotations

import argparse
import logging

import numpy as np

logger = logging.getLogger("bound_tradeoff")

N_TRAIN, N_CAL, ALPHA, EPSILON = 200, 159, 0.1, 1.0


def _rows(n_splits: int, seed: int):
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge

    import dpuq
    from dpuq.planning import plan

    X, y = load_diabetes(return_X_y=True)
    m = plan(N_CAL, ALPHA, EPSILON).n_bins
    choices = ["q = 0.90", "q = 0.95", "q = 0.99", "aimed at n, ε", "outcome range"]
    out = {c: {"whole": 0, "width": [], "cover": [], "B": []} for c in choices}
    planned = []
    rng = np.random.default_rng(seed)
    for _ in range(n_splits):
        perm = rng.permutation(y.size)
        tr, cal, te = perm[:N_TRAIN], perm[N_TRAIN : N_TRAIN + N_CAL], perm[N_TRAIN + N_CAL :]
        kw = {"cv": 5, "random_state": int(rng.integers(2**31))}
        aimed = dpuq.public_bound(
            Ridge(alpha=0.1), X[tr], y[tr], n_calibration=N_CAL, calibration_epsilon=EPSILON,
            confidence_level=1 - ALPHA, **kw,
        )  # fmt: skip
        planned.append(aimed.whole_line_probability)
        bounds = {"aimed at n, ε": aimed.bound, "outcome range": float(np.ptp(y))}
        for q in (0.90, 0.95, 0.99):
            b = dpuq.public_bound(Ridge(alpha=0.1), X[tr], y[tr], quantile=q, **kw)
            bounds[f"q = {q:.2f}"] = b.bound
        model = Ridge(alpha=0.1).fit(X[tr], y[tr])
        pred_cal, pred_te = model.predict(X[cal]), model.predict(X[te])
        for name, b in bounds.items():
            scores = dpuq.absolute_residual_scores(pred_cal, y[cal], bound=b)
            release = dpuq.calibrate(scores, alpha=ALPHA, epsilon=EPSILON, n_bins=m,
                                     random_state=rng)  # fmt: skip
            row = out[name]
            row["B"].append(b)
            if release.threshold >= 1.0:
                row["whole"] += 1
                continue
            half = release.threshold * b
            row["width"].append(half)
            row["cover"].append(float(np.mean(np.abs(y[te] - pred_te) <= half)))
    return choices, out, float(np.mean(planned))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--splits", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    choices, out, planned = _rows(args.splits, args.seed)
    logger.info(
        "| B chosen as | median B | whole-line releases | median half-width (others) | "
        "coverage (others) |"
    )
    logger.info("|---|---|---|---|---|")
    for c in choices:
        r = out[c]
        width = f"{np.median(r['width']):.0f}" if r["width"] else "–"
        cover = f"{np.mean(r['cover']):.3f}" if r["cover"] else "–"
        logger.info(
            f"| {c} | {np.median(r['B']):.0f} | {r['whole']}/{args.splits} "
            f"({100 * r['whole'] / args.splits:.1f} %) | {width} | {cover} |"
        )
    logger.info(f"aimed B: planned whole-line probability {planned:.4f} on average")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
