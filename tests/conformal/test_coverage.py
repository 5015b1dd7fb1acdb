"""Coverage of private and non-private sets on real data over many random splits (SPEC A.4-A.5).

Margins are 3 standard errors of the mean coverage over splits. The model is fixed; the pool of
calibration + test points is re-split at random, so calibration and test points are exchangeable
given the pool and the guarantees hold split by split.
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

import dpuq
from dpuq.mechanisms.quantile import bin_edges, bin_index

ALPHA = 0.1
N_SPLITS = 300


@pytest.fixture(scope="module")
def pool():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    idx = np.random.default_rng(11).permutation(len(y))
    train, rest = idx[:297], idx[297:]  # 1500 points left for calibration + test
    model = LogisticRegression(max_iter=3000, C=0.3).fit(X[train], y[train])
    probs = model.predict_proba(X[rest])
    return dpuq.lac_scores(probs), y[rest]


@pytest.mark.parametrize(
    ("n", "epsilon", "method"),
    [(500, 1.0, "certified"), (1000, 8.0, "certified"), (500, 1.0, "paper"), (1000, 8.0, "paper")],
)
def test_private_and_split_conformal_coverage(pool, n, epsilon, method):
    scores, labels = pool
    rng = np.random.default_rng(n)
    m, gamma = dpuq.auto_n_bins(n, ALPHA, epsilon, method=method)
    true_scores = scores[np.arange(len(labels)), labels]
    priv, base = [], []
    for _ in range(N_SPLITS):
        perm = rng.permutation(len(labels))
        cal, test = perm[:n], perm[n:]
        release = dpuq.calibrate(
            true_scores[cal],
            alpha=ALPHA,
            epsilon=epsilon,
            n_bins=m,
            gamma=gamma,
            method=method,
            random_state=rng,
        )
        t_base = dpuq.split_conformal_threshold(true_scores[cal], ALPHA)
        priv.append(
            dpuq.coverage(dpuq.prediction_sets(scores[test], release.threshold), labels[test])
        )
        base.append(dpuq.coverage(dpuq.prediction_sets(scores[test], t_base), labels[test]))
    priv, base = np.array(priv), np.array(base)
    se_p = priv.std(ddof=1) / np.sqrt(N_SPLITS)
    se_b = base.std(ddof=1) / np.sqrt(N_SPLITS)

    # Theorem 2 (paper) or the certificate (certified): coverage >= 1 - alpha
    print(f"n={n} eps={epsilon} {method}: private {priv.mean():.4f} split {base.mean():.4f}")
    assert priv.mean() >= release.certified_coverage - 3 * se_p >= 1 - ALPHA - 3 * se_p
    # split conformal: 1 - alpha <= coverage <= 1 - alpha + 1/(n+1)
    assert 1 - ALPHA - 3 * se_b <= base.mean() <= 1 - ALPHA + 1 / (n + 1) + 3 * se_b
    if method == "certified":  # not conservative: about the target rank's share rho*/n
        assert priv.mean() <= release.level + 0.01 + 3 * se_p
        return
    # Theorem 3 with p_max = the largest bin probability of the pool's true-label scores
    p_max = np.bincount(bin_index(true_scores, bin_edges(m)), minlength=m).max() / len(labels)
    upper = dpuq.coverage_upper_bound(n, ALPHA, epsilon, m, gamma, p_max)
    assert priv.mean() <= upper + 3 * se_p
    # split conformal: 1 - alpha <= coverage <= 1 - alpha + 1/(n+1)
    assert 1 - ALPHA - 3 * se_b <= base.mean() <= 1 - ALPHA + 1 / (n + 1) + 3 * se_b
