"""Private online conformal sets on drifting streams: the figures and table of
docs/how-to/online.md.

Two streams of 10,000 cases built from scikit-learn's digits (public data) and a logistic
regression trained on 700 other digits, each with an engineered drift:

- ``label shift``: the share of the classes the model finds hardest (1, 2, 3, 8, 9) grows from
  10% to 95% over the stream (the images carry Gaussian pixel noise of sd 0.35 throughout);
- ``covariate shift``: the images fade (contrast from 1 down to 0.2, pixel noise of sd 0.15),
  so the model grows less confident and the true label's score rises.

Methods, all at target coverage 0.9 with LAC scores: the private tracker
(:func:`dpuq.online_conformal_thresholds`, default settings) at ε = 0.5, 1 and 3 over several
noise seeds; non-private ACI with γ = 0.005 (:func:`dpuq.aci_thresholds`); and a fixed split
threshold calibrated (non-privately) on the first 1,000 cases. Run:
``python -m dpuq.experiments.online_drift --out docs/assets`` (writes
``docs/assets/online_drift.png``
and ``docs/assets/online_drift.json``, prints the markdown table).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from dataclasses import dataclass, field

import numpy as np

from dpuq.conformal.online import aci_thresholds, online_conformal_thresholds
from dpuq.conformal.split import split_conformal_threshold
from dpuq.reporting import markdown_table
from dpuq.reporting.figures import save_tight, subplots

__all__ = ["StreamResult", "drifting_stream", "main", "run_stream"]

EPSILONS = (0.5, 1.0, 3.0)
ALPHA = 0.1
N_STREAM = 10_000
N_CALIBRATION = 1_000
HARD_CLASSES = (1, 2, 3, 8, 9)
WINDOW = 500
FIXED = "fixed split (first 1,000)"


@functools.lru_cache(maxsize=4)
def _model_and_pool(seed: int):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    order = np.random.default_rng(seed).permutation(y.size)
    train, pool = order[:700], order[700:]
    model = LogisticRegression(max_iter=2000, C=0.5).fit(X[train], y[train])
    return model, X[pool], y[pool]


def drifting_stream(kind: str, seed: int = 0, n: int | None = None):
    """``(score_matrix, true_label_scores)`` of a drifting stream (module docstring).

    Examples
    --------
    >>> S, s = drifting_stream("covariate shift", n=50)
    >>> S.shape, s.shape
    ((50, 10), (50,))
    """
    if kind not in ("label shift", "covariate shift"):
        raise ValueError(f"kind must be 'label shift' or 'covariate shift', got {kind!r}")
    n = N_STREAM if n is None else n
    model, Xp, yp = _model_and_pool(seed)
    rng = np.random.default_rng(seed + 1)
    frac = np.linspace(0.0, 1.0, n)
    if kind == "label shift":
        hard = rng.random(n) < 0.1 + 0.85 * frac
        easy_cls = np.setdiff1d(np.arange(10), HARD_CLASSES)
        cls = np.where(hard, rng.choice(HARD_CLASSES, n), rng.choice(easy_cls, n))
        pools = [np.flatnonzero(yp == c) for c in range(10)]
        idx = np.array([pools[c][rng.integers(pools[c].size)] for c in cls])
        X = Xp[idx] + 0.35 * rng.standard_normal((n, Xp.shape[1]))
    else:
        idx = rng.integers(0, yp.size, size=n)
        contrast = 1.0 - 0.8 * frac
        X = contrast[:, None] * Xp[idx] + 0.15 * rng.standard_normal((n, Xp.shape[1]))
    probs = model.predict_proba(X)
    S = np.clip(1.0 - probs, 0.0, 1.0)
    return S, S[np.arange(n), yp[idx]]


@dataclass
class StreamResult:
    """Coverage and set sizes of every method on one stream (person by person)."""

    kind: str
    covered: dict[str, np.ndarray] = field(default_factory=dict)
    sizes: dict[str, np.ndarray] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, float]]:
        """Long-run coverage, mean set size and coverage on the last half, per method."""
        half = N_STREAM // 2
        return {
            name: {
                "coverage": float(np.mean(c)),
                "coverage_late": float(np.mean(c[..., half:])),
                "mean_size": float(np.mean(self.sizes[name])),
            }
            for name, c in self.covered.items()
        }


def _evaluate(S: np.ndarray, s: np.ndarray, t: np.ndarray):
    return s <= t, np.sum(S <= t[:, None], axis=1)


def run_stream(kind: str, n_seeds: int = 5, seed: int = 0) -> StreamResult:
    """Every method on one stream; the private rows stack ``n_seeds`` noise seeds."""
    S, s = drifting_stream(kind, seed)
    res = StreamResult(kind)
    res.covered["ACI (γ=0.005, non-private)"], res.sizes["ACI (γ=0.005, non-private)"] = _evaluate(
        S, s, aci_thresholds(s, ALPHA, gamma=0.005)
    )
    fixed = split_conformal_threshold(s[:N_CALIBRATION], ALPHA)
    res.covered[FIXED], res.sizes[FIXED] = _evaluate(S, s, np.full(s.size, fixed))
    for eps in EPSILONS:
        runs = [
            _evaluate(S, s, online_conformal_thresholds(s, ALPHA, eps, random_state=100 + k))
            for k in range(n_seeds)
        ]
        res.covered[f"private ε={eps:g}"] = np.stack([r[0] for r in runs])
        res.sizes[f"private ε={eps:g}"] = np.stack([r[1] for r in runs])
    return res


def _rolling(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 2:
        x = x[0]  # the first noise seed
    c = np.cumsum(np.concatenate(([0.0], x)))
    return (c[WINDOW:] - c[:-WINDOW]) / WINDOW


def plot(results: list[StreamResult], path: str) -> None:
    """Rolling coverage and set size (window 500) per stream, one row per stream."""
    fig, axes = subplots(len(results), 2, figsize=(11, 3.6 * len(results)))
    axes = np.atleast_2d(axes)
    x = np.arange(WINDOW, N_STREAM + 1)
    styles = {"ACI": ("black", "-"), "fixed": ("grey", ":")}
    colours = {"0.5": "tab:red", "1": "tab:blue", "3": "tab:green"}
    for row, res in zip(axes, results, strict=True):
        for name in res.covered:
            key = name.split(" ")[0]
            colour, ls = styles.get(key, (colours.get(name.split("=")[-1], "C0"), "-"))
            row[0].plot(x, _rolling(res.covered[name]), color=colour, ls=ls, lw=1, label=name)
            row[1].plot(x, _rolling(res.sizes[name]), color=colour, ls=ls, lw=1, label=name)
        row[0].axhline(1 - ALPHA, color="k", lw=0.5, ls="--")
        row[0].set_ylim(0.3, 1.02)
        row[0].set_title(f"{res.kind}: coverage (rolling {WINDOW})")
        row[1].set_title(f"{res.kind}: mean set size (rolling {WINDOW})")
        for ax in row:
            ax.set_xlabel("person")
        row[0].legend(fontsize=7, loc="lower left")
    save_tight(fig, path, dpi=110)


def table(results: list[StreamResult]) -> str:
    """Markdown: coverage, late coverage, mean size and size / ACI's, per stream and method."""
    rows = []
    for res in results:
        summ = res.summary()
        aci = summ["ACI (γ=0.005, non-private)"]["mean_size"]
        for name, v in summ.items():
            rows.append(
                [
                    res.kind,
                    name,
                    f"{v['coverage']:.3f}",
                    f"{v['coverage_late']:.3f}",
                    f"{v['mean_size']:.3f}",
                    f"{v['mean_size'] / aci:.3f}",
                ]
            )
    head = ["stream", "method", "coverage", "coverage (last 5,000)", "mean size", "size / ACI"]
    return markdown_table(head, rows)


def main(argv: list[str] | None = None) -> None:
    """Print the table, write the figure and the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/assets", help="folder for the figure and numbers")
    parser.add_argument("--seeds", type=int, default=5, help="noise seeds per ε")
    args = parser.parse_args(argv)
    results = [run_stream(kind, n_seeds=args.seeds) for kind in ("label shift", "covariate shift")]
    print(f"{N_STREAM:,} cases per stream, target 0.9, private rows: mean over {args.seeds} seeds")
    print(table(results))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "online_drift.png")
    plot(results, path)
    numbers = {r.kind: r.summary() for r in results}
    with open(os.path.join(args.out, "online_drift.json"), "w", encoding="utf-8") as fh:
        json.dump({"n": N_STREAM, "seeds": args.seeds, "results": numbers}, fh, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":  # pragma: no cover
    main()
