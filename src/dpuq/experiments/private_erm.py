"""Private ERM experiments (Nikolov's notes): decision stumps on breast cancer, and the PAC theorem.

1. :func:`run_breast_cancer` — ``sklearn``'s breast cancer data (569 patients, 30 features):
   ε-DP decision stumps over a **public** threshold grid against the non-private ERM stump,
   test error against ε over many random train/test splits. The grid is ``PUBLIC_GRID``, 256
   log-spaced values from 1e-3 to 1e4 shared by every feature: the features are positive
   physical measurements (lengths, areas, ratios) below 10^4, which is public knowledge; no
   range is read from the data (the data set's documented min/max table is computed from the
   same patients, so it is not used).
2. :func:`run_realizable` — the sample-complexity theorem in the realizable case: thresholds
   or intervals on [0, 1] under the uniform law, a target concept in the class, ``n`` from
   :func:`~dpuq.learning.pac_sample_complexity` (and fractions of it); the fraction of runs
   whose population error exceeds ``α`` must be at most ``β``.

Run ``python -m dpuq.experiments.private_erm --out docs/assets`` to print the tables and write
``docs/assets/private_erm.png``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpuq._progress import progress
from dpuq.learning import DecisionStumps, Intervals, PrivateERMClassifier, Thresholds
from dpuq.learning.erm import pac_sample_complexity
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.reporting import markdown_table
from dpuq.reporting.figures import save_tight, subplots

__all__ = [
    "PUBLIC_GRID",
    "BreastCancerResult",
    "RealizableResult",
    "run_breast_cancer",
    "run_realizable",
]

#: Public threshold grid for the breast cancer features (see the module docstring).
PUBLIC_GRID = np.geomspace(1e-3, 1e4, 256)

DEFAULT_EPSILONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


def _mean_se(v: np.ndarray) -> str:
    return f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(v.size):.3f}"


@dataclass(frozen=True)
class BreastCancerResult:
    """Test errors of private and non-private stumps, per ε and split."""

    epsilons: np.ndarray  # (E,)
    n_train: int
    n_test: int
    n_concepts: int
    expected_error: np.ndarray  # (E, S): exact E[test error] under the learner's law
    sampled_error: np.ndarray  # (E, S): test error of one released stump
    erm_error: np.ndarray  # (S,): non-private ERM over the same public stumps
    tree_stump_error: np.ndarray  # (S,): sklearn depth-1 tree (thresholds from the data)
    majority_error: np.ndarray  # (S,): always predict the training majority class

    def table(self) -> str:
        """A markdown table: mean over splits ± standard error."""
        header = ["ε", "private: E[test error] (mean ± SE)", "one release (median)"]
        rows = [
            [f"{eps:g}", _mean_se(e), f"{np.median(one):.3f}", _mean_se(self.erm_error)]
            for eps, e, one in zip(
                self.epsilons, self.expected_error, self.sampled_error, strict=True
            )
        ]
        return markdown_table([*header, "ERM stump (non-private)"], rows)


def run_breast_cancer(
    *,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    n_splits: int = 50,
    test_size: float = 0.3,
    random_state: RandomState = 0,
    show_progress: bool = True,
) -> BreastCancerResult:
    """Private vs non-private decision stumps on breast cancer, over random splits.

    For each split the learner's exact law (``selection_probabilities``) gives the expected
    test error at each ε without sampling noise; one release per ε (``fit``) shows the spread.
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.tree import DecisionTreeClassifier

    rng = check_random_state(random_state)
    X, y = load_breast_cancer(return_X_y=True)
    stumps = DecisionStumps(PUBLIC_GRID, n_features=X.shape[1])
    eps = np.asarray(epsilons, dtype=float)
    expected = np.empty((eps.size, n_splits))
    sampled = np.empty((eps.size, n_splits))
    erm = np.empty(n_splits)
    tree = np.empty(n_splits)
    majority = np.empty(n_splits)
    n_train = n_test = 0
    for s in progress(range(n_splits), "breast cancer splits", disable=not show_progress):
        seed = int(rng.integers(2**31))
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=test_size, random_state=seed, stratify=y
        )
        n_train, n_test = len(y_tr), len(y_te)
        test_err = stumps.empirical_errors(X_te, y_te)  # every stump at once
        erm[s] = test_err[int(np.argmin(stumps.error_counts(X_tr, y_tr)))]
        tree_model = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X_tr, y_tr)
        tree[s] = 1.0 - tree_model.score(X_te, y_te)
        majority[s] = np.mean(y_te != int(np.mean(y_tr) >= 0.5))
        for i, e in enumerate(eps):
            clf = PrivateERMClassifier(
                stumps, epsilon=float(e), random_state=int(rng.integers(2**32))
            )
            expected[i, s] = clf.selection_probabilities(X_tr, y_tr) @ test_err
            sampled[i, s] = 1.0 - clf.fit(X_tr, y_tr).score(X_te, y_te)
    n_concepts = stumps.n_concepts
    return BreastCancerResult(
        eps, n_train, n_test, n_concepts, expected, sampled, erm, tree, majority
    )


@dataclass(frozen=True)
class RealizableResult:
    """Failure rates ``P(population error > α)`` against the theorem's ``β``."""

    concept_class: str
    n_concepts: int
    alpha: float
    beta: float
    epsilons: np.ndarray  # (E,)
    fractions: np.ndarray  # (F,): n = fraction * bound
    n_bound: np.ndarray  # (E,): pac_sample_complexity per ε
    failure_rate: np.ndarray  # (E, F)
    mean_error: np.ndarray  # (E, F): mean population error
    n_trials: int

    def table(self) -> str:
        """A markdown table of failure rates."""
        head = [f"n = {Fraction(f).limit_denominator(1000)} × bound" for f in self.fractions]
        rows = [
            [f"{e:g}", str(self.n_bound[i])]
            + [
                f"{r:.3f} (err {m:.3f})"
                for r, m in zip(self.failure_rate[i], self.mean_error[i], strict=True)
            ]
            for i, e in enumerate(self.epsilons)
        ]
        return markdown_table(["ε", "bound n", *head], rows)


def _realizable_class(name: str):
    """A public class on [0, 1], a target in it, and exact population errors under U[0, 1]."""
    if name == "thresholds":
        grid = np.linspace(0.0, 1.0, 101)[1:-1]  # 99 thresholds
        concepts = Thresholds(grid)
        target = 33
        pop_error = np.abs(grid - grid[target])
    elif name == "intervals":
        grid = np.linspace(0.0, 1.0, 41)
        concepts = Intervals(grid)
        lo, hi = concepts.endpoints
        target = int(np.flatnonzero((np.isclose(lo, 0.3)) & np.isclose(hi, 0.55))[0])
        overlap = np.clip(np.minimum(hi, hi[target]) - np.maximum(lo, lo[target]), 0, None)
        pop_error = (hi - lo) + (hi[target] - lo[target]) - 2 * overlap
    else:
        raise ValueError(f"concept class must be 'thresholds' or 'intervals', got {name!r}")
    return concepts, target, pop_error


def run_realizable(
    *,
    concept_class: str = "thresholds",
    alpha: float = 0.1,
    beta: float = 0.1,
    epsilons: Sequence[float] = (0.1, 1.0, 10.0),
    fractions: Sequence[float] = (1 / 64, 1 / 16, 1 / 4, 1.0),
    n_trials: int = 1000,
    random_state: RandomState = 0,
    show_progress: bool = True,
) -> RealizableResult:
    """Check the PAC theorem: at ``n = pac_sample_complexity(...)`` failures are at most β."""
    rng = check_random_state(random_state)
    concepts, target, pop_error = _realizable_class(concept_class)
    eps = np.asarray(epsilons, dtype=float)
    fr = np.asarray(fractions, dtype=float)
    bound = np.array([pac_sample_complexity(concepts.n_concepts, alpha, beta, e) for e in eps])
    failure = np.empty((eps.size, fr.size))
    mean_err = np.empty((eps.size, fr.size))
    cells = [(i, j) for i in range(eps.size) for j in range(fr.size)]
    for i, j in progress(cells, f"realizable {concept_class}", disable=not show_progress):
        n = max(1, int(np.ceil(fr[j] * bound[i])))
        errs = np.empty(n_trials)
        for t in range(n_trials):
            x = rng.uniform(size=n)
            labels = concepts.predict(target, x)
            clf = PrivateERMClassifier(  # a fresh learner (and seed) per simulated release
                concepts, epsilon=float(eps[i]), random_state=int(rng.integers(2**32))
            )
            errs[t] = pop_error[clf.fit(x, labels).concept_index_]
        failure[i, j] = np.mean(errs > alpha)
        mean_err[i, j] = errs.mean()
    n_concepts = concepts.n_concepts
    return RealizableResult(
        concept_class, n_concepts, alpha, beta, eps, fr, bound, failure, mean_err, n_trials
    )


def plot(bc: BreastCancerResult, realizable: Sequence[RealizableResult], path: str) -> None:
    """Two panels: breast cancer error vs ε; realizable failure rate vs n / bound."""
    fig, (ax1, ax2) = subplots(1, 2, figsize=(11, 4.2))
    s = bc.expected_error.shape[1]
    mean = bc.expected_error.mean(axis=1)
    se = bc.expected_error.std(axis=1, ddof=1) / np.sqrt(s)
    jitter = np.exp(np.random.default_rng(0).uniform(-0.08, 0.08, size=bc.sampled_error.shape))
    ax1.scatter(
        (bc.epsilons[:, None] * jitter).ravel(),
        bc.sampled_error.ravel(),
        s=6,
        alpha=0.25,
        color="tab:blue",
        label="one private release (per split)",
    )
    ax1.plot(bc.epsilons, mean, "o-", color="tab:blue", label="private: E[test error] (exact)")
    ax1.fill_between(bc.epsilons, mean - 2 * se, mean + 2 * se, color="tab:blue", alpha=0.2)
    ax1.axhline(bc.erm_error.mean(), color="black", ls="--", label="non-private ERM stump")
    ax1.axhline(
        bc.tree_stump_error.mean(), color="gray", ls=":", label="sklearn depth-1 tree (data grid)"
    )
    ax1.axhline(bc.majority_error.mean(), color="tab:red", ls="-.", label="majority class")
    ax1.set_xscale("log")
    ax1.set_xlabel("ε")
    ax1.set_ylabel("test error")
    ax1.set_title(
        f"Breast cancer, ε-DP stumps ({bc.n_concepts} public stumps, n_train = {bc.n_train})"
    )
    ax1.legend(fontsize=7)
    markers = ["o", "s", "^", "D"]
    for k, r in enumerate(realizable):
        for i, e in enumerate(r.epsilons):
            ax2.plot(
                r.fractions,
                r.failure_rate[i],
                marker=markers[k % len(markers)],
                label=f"{r.concept_class} (|C| = {r.n_concepts}), ε = {e:g}",
            )
    if realizable:
        ax2.axhline(realizable[0].beta, color="black", ls="--", label="β")
    ax2.set_xscale("log")
    ax2.set_xlabel("n / pac_sample_complexity(|C|, α, β, ε)")
    ax2.set_ylabel("P(population error > α)")
    ax2.set_title("Realizable case: failure rate (α = β = 0.1)")
    ax2.legend(fontsize=7)
    save_tight(fig, path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    """Print the tables (markdown) and write the figure."""
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/assets", help="folder for private_erm.png")
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    bc = run_breast_cancer(n_splits=args.splits, random_state=args.seed)
    print(f"Breast cancer: n_train = {bc.n_train}, n_test = {bc.n_test}, {args.splits} splits")
    print(bc.table())
    print(
        f"non-private ERM stump {bc.erm_error.mean():.3f}; sklearn depth-1 tree "
        f"{bc.tree_stump_error.mean():.3f}; majority {bc.majority_error.mean():.3f}"
    )
    realizable = [
        run_realizable(concept_class=name, n_trials=args.trials, random_state=args.seed)
        for name in ("thresholds", "intervals")
    ]
    for r in realizable:
        print(
            f"\nRealizable, {r.concept_class} (|C| = {r.n_concepts}), α = {r.alpha}, "
            f"β = {r.beta}, {r.n_trials} trials per cell"
        )
        print(r.table())
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "private_erm.png")
    plot(bc, realizable, path)
    print(f"\nwrote {path}")


if __name__ == "__main__":  # pragma: no cover
    main()
