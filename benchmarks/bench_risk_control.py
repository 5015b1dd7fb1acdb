"""Private conformal risk control against non-private CRC: λ̂ ratio and test risk over splits.

Multi-label false-negative-rate control on scikit-learn's ``make_multilabel_classification``
(a one-vs-rest logistic model fitted on a separate training part), n = 1000 calibration
points, ε = 1, α = 0.1, grid λ = 0, 0.01, ..., 1. Prints medians and means over random
calibration/test splits. Run: ``python benchmarks/bench_risk_control.py [n_splits]``.
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier

from dpuq.conformal.risk_control import conformal_risk_control, false_negative_losses
from dpuq.mechanisms.risk import _risk_selection_rows, certified_risk_target, loss_sums


def main(n_splits: int = 500, n: int = 1000, epsilon: float = 1.0, alpha: float = 0.1) -> None:
    X, Y = make_multilabel_classification(
        n_samples=8000, n_features=20, n_classes=10, n_labels=3, random_state=0
    )
    model = OneVsRestClassifier(LogisticRegression(max_iter=500)).fit(X[:3000], Y[:3000])
    probs = model.predict_proba(X[3000:])
    lam = np.linspace(0.0, 1.0, 101)
    losses = false_negative_losses(Y[3000:], probs, lam)
    rng = np.random.default_rng(1)
    m = lam.size
    target = certified_risk_target(n, alpha, epsilon, m)
    idx_priv, idx_np, risk_priv, risk_np = [], [], [], []
    sums = np.empty((n_splits, m))
    tests = []
    for _ in range(n_splits):
        perm = rng.permutation(losses.shape[0])
        cal, test = perm[:n], perm[n:]
        sums[len(tests)] = loss_sums(losses[cal])
        tests.append(test)
        idx_np.append(conformal_risk_control(losses[cal], alpha))
    idx_priv = _risk_selection_rows(sums, n, target, epsilon, random_state=2)
    for k in range(n_splits):
        risk_priv.append(losses[tests[k], idx_priv[k]].mean())
        risk_np.append(losses[tests[k], idx_np[k]].mean())
    rp, rn = np.array(risk_priv), np.array(risk_np)
    lp, ln = lam[idx_priv], lam[np.array(idx_np)]
    print(f"n={n} epsilon={epsilon} alpha={alpha} splits={n_splits} target tau*={target:.2f}")
    print(f"non-private CRC: median lambda {np.median(ln):.3f}, mean risk {rn.mean():.4f}")
    se = rp.std(ddof=1) / np.sqrt(n_splits)
    print(f"private: median lambda {np.median(lp):.3f}, mean risk {rp.mean():.4f} (SE {se:.4f})")
    print(f"lambda ratio private/non-private: median {np.median(lp / ln):.3f}, "
          f"mean {np.mean(lp) / np.mean(ln):.3f}")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
