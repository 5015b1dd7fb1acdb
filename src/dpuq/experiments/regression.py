"""Private conformal regression on a real data set that ships with scikit-learn.

``sklearn.datasets.load_diabetes``: 442 patients, 10 baseline measurements (age, sex, BMI,
blood pressure, six blood serum values), outcome a quantitative measure of disease progression
one year later (between 25 and 346). Each random split trains a model on 192 patients, releases
the conformal threshold with ε-DP from 200 others, and measures coverage and interval width on
the remaining 50; the non-private split-conformal interval (exact order statistic, no bound,
no binning) is computed on the same splits.

Run: ``python -m dpuq.experiments.regression [--splits 200] [--score absolute|cqr]``
(figures in ``docs/how-to/regression.md``).
"""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import dataclass

import numpy as np

from dpuq._progress import progress
from dpuq.conformal.calibration import UninformativeReleaseWarning, split_conformal_threshold
from dpuq.conformal.regressor import PrivateConformalRegressor
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.planning import auto_n_bins
from dpuq.reporting import markdown_table

__all__ = ["RegressionRow", "format_rows", "run_regression_experiment"]

#: Outcome range of the diabetes data, public in its documentation: no residual can exceed
#: 346 - 25 = 321, a bound that needs no data at all.
DIABETES_RANGE_BOUND = 321.0


@dataclass(frozen=True)
class RegressionRow:
    """One method's results over the splits."""

    method: str
    epsilon: float  # inf for the non-private baseline
    bound: str  # the public bound B, or how it was chosen; "–" for the baseline
    coverage: np.ndarray  # per split, on the test part
    width: np.ndarray  # per split: mean interval width on the test part (inf = whole line)

    @property
    def whole_line(self) -> float:
        """Share of splits whose release was the whole line."""
        return float(np.mean(~np.isfinite(self.width)))

    @property
    def mean_width(self) -> float:
        """Mean width over the splits with finite intervals (nan if there are none)."""
        finite = self.width[np.isfinite(self.width)]
        return float(finite.mean()) if finite.size else math.nan


def _models(score: str, seed: int):
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import Ridge

    if score == "absolute":
        return Ridge(alpha=0.01)
    params = {"n_estimators": 150, "max_depth": 2, "learning_rate": 0.05, "random_state": seed}
    return (
        GradientBoostingRegressor(loss="quantile", alpha=0.05, **params),
        GradientBoostingRegressor(loss="quantile", alpha=0.95, **params),
    )


def run_regression_experiment(
    *,
    epsilons=(1.0, 2.0, 5.0, 10.0),
    alpha: float = 0.1,
    score: str = "absolute",
    bounds=(DIABETES_RANGE_BOUND, "train"),
    n_splits: int = 200,
    n_train: int = 192,
    n_calibration: int = 200,
    random_state: RandomState = 0,
    show_progress: bool = True,
) -> list[RegressionRow]:
    """Coverage and width of private and non-private conformal intervals on the diabetes data.

    ``bounds`` holds public bounds B, or ``"train"`` for ``B = 2 ×`` the 90% quantile of the
    absolute training scores of each split (data other than the calibration set). Returns one
    :class:`RegressionRow` for the non-private baseline, then one per ``(bound, epsilon)``.

    Examples
    --------
    >>> rows = run_regression_experiment(
    ...     epsilons=(5.0,), bounds=(321.0, "train"), n_splits=3, show_progress=False
    ... )
    >>> [(r.method, r.bound) for r in rows][1:], rows[1].coverage.shape
    ([('private', '321'), ('private', '2 × q90 of training residuals')], (3,))
    """
    from sklearn.datasets import load_diabetes

    if score not in ("absolute", "cqr"):
        raise ValueError(f"score must be 'absolute' or 'cqr', got {score!r}")
    rng = check_random_state(random_state)
    X, y = load_diabetes(return_X_y=True)
    if n_train + n_calibration >= y.size:
        raise ValueError("n_train + n_calibration leaves no test points")
    plans = {e: auto_n_bins(n_calibration, alpha, e)[0] for e in epsilons}  # data-independent
    base_cov, base_width = np.empty(n_splits), np.empty(n_splits)
    cov = {(b, e): np.empty(n_splits) for b in bounds for e in epsilons}
    width = {(b, e): np.empty(n_splits) for b in bounds for e in epsilons}
    for k in progress(range(n_splits), "splits", disable=not show_progress):
        order = rng.permutation(y.size)
        tr, ca, te = np.split(order, [n_train, n_train + n_calibration])
        model = _models(score, k)
        # non-private baseline: raw scores (no bound), exact order statistic
        if score == "absolute":
            model.fit(X[tr], y[tr])
            pred_c, pred_t = model.predict(X[ca]), model.predict(X[te])
            q = split_conformal_threshold(np.abs(y[ca] - pred_c), alpha)
            lo, hi = pred_t - q, pred_t + q
        else:
            for m in model:
                m.fit(X[tr], y[tr])
            qc = np.column_stack([m.predict(X[ca]) for m in model])
            qt = np.column_stack([m.predict(X[te]) for m in model])
            q = split_conformal_threshold(np.maximum(qc[:, 0] - y[ca], y[ca] - qc[:, 1]), alpha)
            lo, hi = qt[:, 0] - q, qt[:, 1] + q
        base_cov[k] = np.mean((lo <= y[te]) & (y[te] <= hi))
        base_width[k] = np.mean(np.maximum(hi - lo, 0.0))
        for b in bounds:
            b_value = _training_bound(model, score, X[tr], y[tr]) if b == "train" else b
            for e in epsilons:
                reg = PrivateConformalRegressor(
                    model, epsilon=e, confidence_level=1 - alpha, conformity_score=score,
                    bound=b_value, n_bins=plans[e], random_state=int(rng.integers(2**32)),
                )  # fmt: skip
                with warnings.catch_warnings():  # counted in the "whole line" column instead
                    warnings.simplefilter("ignore", UninformativeReleaseWarning)
                    reg.conformalize(X[ca], y[ca])
                iv = reg.predict_interval(X[te]).sets
                cov[b, e][k] = np.mean((iv[:, 0] <= y[te]) & (y[te] <= iv[:, 1]))
                width[b, e][k] = np.mean(np.maximum(iv[:, 1] - iv[:, 0], 0.0))
    baseline = RegressionRow("split conformal (not private)", math.inf, "–", base_cov, base_width)
    return [baseline] + [
        RegressionRow("private", e, _bound_label(b), cov[b, e], width[b, e])
        for b in bounds
        for e in epsilons
    ]


def _bound_label(b) -> str:
    return "2 × q90 of training residuals" if b == "train" else f"{b:g}"


def _training_bound(model, score: str, X_train, y_train) -> float:
    """``B = 2 ×`` the 90% quantile of the absolute training scores (not calibration data)."""
    if score == "absolute":
        raw = np.abs(y_train - model.predict(X_train))
    else:
        lo, hi = model[0].predict(X_train), model[1].predict(X_train)
        raw = np.abs(np.maximum(lo - y_train, y_train - hi))
    return float(2.0 * np.quantile(raw, 0.9))


def format_rows(rows: list[RegressionRow], alpha: float, n_calibration: int = 200) -> str:
    """A terminal / markdown table of :func:`run_regression_experiment`."""
    n_splits = rows[0].coverage.size
    lines = [
        f"diabetes (442 patients), target coverage {1 - alpha:.2f}, calibration n = "
        f"{n_calibration}, {n_splits} random splits",
        "",
    ]
    header = ["method", "ε", "bound B", "coverage (mean ± 1.96 SE)", "coverage 5%–95%"]
    cells = []
    for r in rows:
        se = r.coverage.std(ddof=1) / math.sqrt(r.coverage.size) if r.coverage.size > 1 else 0
        lo, hi = np.percentile(r.coverage, [5, 95])
        eps = "∞" if math.isinf(r.epsilon) else f"{r.epsilon:g}"
        w = "–" if math.isnan(r.mean_width) else f"{r.mean_width:.1f}"
        cov = f"{r.coverage.mean():.3f} ± {1.96 * se:.3f}"
        cells.append(
            [r.method, eps, str(r.bound), cov, f"{lo:.2f}–{hi:.2f}", w, f"{r.whole_line:.0%}"]
        )
    return "\n".join(lines) + "\n" + markdown_table([*header, "mean width", "whole line"], cells)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--score", choices=["absolute", "cqr"], default="absolute")
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0, 5.0, 10.0])
    parser.add_argument(
        "--bounds",
        type=lambda t: t if t == "train" else float(t),
        nargs="+",
        default=[DIABETES_RANGE_BOUND, "train"],
        help="public bounds B, or 'train' (2 × the 90%% quantile of training residuals)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = run_regression_experiment(
        epsilons=tuple(args.epsilons),
        alpha=args.alpha,
        score=args.score,
        bounds=tuple(args.bounds),
        n_splits=args.splits,
        random_state=args.seed,
    )
    print(f"score: {args.score}")
    print(format_rows(rows, args.alpha))


if __name__ == "__main__":  # pragma: no cover
    main()
