"""A fair Table 1: what calibrates a network trained with differential privacy?

Run (needs the ``torch`` extra; Fashion-MNIST from Debian's ``dataset-fashion-mnist``)::

    python -m dpuq.experiments.dpsgld     # the table -> docs/assets/ (~20 min, 1 thread)
    python -m dpuq.experiments.dpsgld --quick --out /tmp/x   # digits, one seed, a minute
    dpuq reproduce dpsgld                              # the same, from the CLI

Design (one command, shipped data). People are split once per seed into *training* (the
network), *held-out* (private temperature scaling; never used for training) and *test*
(metrics, and private prediction sets on random calibration/test halves). Every private row
spends the same (ε, δ) on its training people under one relation, replace-one; private
temperature scaling spends ε_T on the held-out people, who are disjoint from the training
people, so a scaled model is (max(ε, ε_T), δ)-DP for everybody (parallel composition).

Rows (all on the same small CNN, same epochs and batch size):

- SGD (not private), the reference;
- DP-SGD, last iterate, constant learning rate, a small sweep (every value is shown: picking
  the best one *after looking at test results* is not private);
- DP-SGD with the decaying schedule of DP-SGLD, last iterate and iterate average;
- DP-SGLD (temperature calibrated to the budget), last iterate and posterior average;
- each private row again after private temperature scaling (calibration-gap utility).

Hyper-parameters were fixed before the runs (the issue's learning rates; DP-SGLD's decaying
schedule from its paper, starting at the top of the sweep); none were tuned on test data.

Writes ``dpsgld.json`` (every row of every seed), ``dpsgld_table.md`` (mean ± sd over seeds,
and the headline medians) and ``dpsgld_reliability.png`` (reliability diagrams, seed 0) into
``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from dpuq.metrics.calibration import expected_calibration_error, reliability_curve
from dpuq.privacy.ledger import CALLER_CHARGED
from dpuq.reporting import markdown_table
from dpuq.reporting.figures import save_tight, subplots

__all__ = ["FULL", "QUICK", "Setting", "main", "run_seed"]


@dataclass(frozen=True)
class Setting:
    """Sizes and hyper-parameters of one table (public, data-free)."""

    dataset: str
    n_train: int
    n_heldout: int
    n_test: int | None
    epochs: float
    batch_size: int
    epsilon: float
    delta: float
    temperature_epsilon: float
    calibration_epsilon: float
    alpha: float
    seeds: tuple[int, ...]
    learning_rates: tuple[float, ...]
    decay_initial: float
    n_average: int
    n_set_splits: int = 10
    relation: str = "replace-one"
    notes: tuple[str, ...] = field(default_factory=tuple)


FULL = Setting(
    dataset="fashion-mnist",
    n_train=20_000,
    n_heldout=2_000,
    n_test=None,  # the official 10,000 test images
    epochs=3,
    batch_size=256,
    epsilon=0.5,
    delta=1e-5,
    temperature_epsilon=0.5,
    calibration_epsilon=1.0,
    alpha=0.1,
    seeds=(0, 1, 2),
    learning_rates=(0.5, 1.0, 2.0),
    decay_initial=2.0,
    n_average=20,
)

QUICK = replace(
    FULL,
    dataset="digits",
    n_train=1_000,
    n_heldout=400,  # n_test None: the remaining 397
    batch_size=64,
    epsilon=2.0,
    temperature_epsilon=1.0,
    seeds=(0,),
    learning_rates=(1.0,),
    decay_initial=1.0,
    n_average=5,
    n_set_splits=3,
)


def _data(setting: Setting, seed: int):
    """(train, held-out, test) as (images[:, None], labels) pairs; a fresh split per seed."""
    from dpuq.data import load_digits_images, load_fashion_mnist

    rng = np.random.default_rng(1000 + seed)
    if setting.dataset == "fashion-mnist":
        tr, te = load_fashion_mnist("train"), load_fashion_mnist("test")
        order = rng.permutation(tr.labels.size)
        a = order[: setting.n_train]
        b = order[setting.n_train : setting.n_train + setting.n_heldout]
        test = (te.images[:, None], te.labels)
        if setting.n_test:
            test = (test[0][: setting.n_test], test[1][: setting.n_test])
        return (tr.images[a, None], tr.labels[a]), (tr.images[b, None], tr.labels[b]), test
    d = load_digits_images()
    order = rng.permutation(d.labels.size)
    a = order[: setting.n_train]
    b = order[setting.n_train : setting.n_train + setting.n_heldout]
    c = order[setting.n_train + setting.n_heldout :][: setting.n_test]
    return tuple((d.images[i, None], d.labels[i]) for i in (a, b, c))


def _runs(setting: Setting, steps: int):
    """(run name, method, kwargs, rows): rows are (row name, "last" | "average")."""
    from dpuq.training import PolynomialDecay

    decay = PolynomialDecay(setting.decay_initial, gamma=0.55, scale=max(1.0, steps / 10))
    avg = {"iterate_averaging": setting.n_average, "averaging_start": 0.5}
    runs = [("SGD", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, [("SGD", "last")])]
    for lr in setting.learning_rates:
        name = f"DP-SGD, lr {lr:g}"
        runs.append((name, "dpsgd", {"learning_rate": lr}, [(name, "last")]))
    runs.append(
        (
            "DP-SGD, decaying lr",
            "dpsgd",
            {"learning_rate": decay, **avg},
            [("DP-SGD, decaying lr", "last"), ("DP-SGD, decaying lr + averaging", "average")],
        )
    )
    runs.append(
        (
            "DP-SGLD",
            "dpsgld",
            {"learning_rate": decay, "temperature": "auto", "prior_std": 1.0, **avg},
            [("DP-SGLD", "last"), ("DP-SGLD + posterior averaging", "average")],
        )
    )
    return runs


def _log_probs(model, x: np.ndarray, batch: int = 2048) -> np.ndarray:
    import torch

    xt = torch.as_tensor(x, dtype=torch.float32)
    out = []
    with torch.no_grad():
        for s in range(0, xt.shape[0], batch):
            out.append(torch.log_softmax(model(xt[s : s + batch]).double(), dim=1))
    return torch.cat(out).numpy()


def _metrics(log_probs: np.ndarray, y: np.ndarray, setting: Setting, seed: int) -> dict:
    from dpuq.conformal.calibration import calibrate

    p = np.exp(log_probs)
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(y.size)
    curve = reliability_curve(p, y)
    nll = float(-np.mean(np.maximum(log_probs[rows, y], -50.0)))
    brier = float(np.mean(((p - np.eye(p.shape[1])[y]) ** 2).sum(axis=1)))
    # private prediction sets (LAC score 1 - p_y) on random calibration/test halves
    rng = np.random.default_rng([seed, 7])
    cover, size = [], []
    for _ in range(setting.n_set_splits):
        perm = rng.permutation(y.size)
        cal, ev = perm[: y.size // 2], perm[y.size // 2 :]
        rel = calibrate(
            1.0 - p[cal, y[cal]],
            alpha=setting.alpha,
            epsilon=setting.calibration_epsilon,
            random_state=rng,
        )
        sets = (1.0 - p[ev]) <= rel.threshold
        cover.append(float(sets[np.arange(ev.size), y[ev]].mean()))
        size.append(float(sets.sum(axis=1).mean()))
    return {
        "accuracy": float(np.mean(p.argmax(axis=1) == y)),
        "ece": expected_calibration_error(p, y),
        "nll": nll,
        "brier": brier,
        "mean_confidence": float(p.max(axis=1).mean()),
        "set_coverage": float(np.mean(cover)),
        "set_size": float(np.mean(size)),
        "reliability": {
            "confidence": np.nan_to_num(curve.confidence, nan=-1).tolist(),
            "accuracy": np.nan_to_num(curve.accuracy, nan=-1).tolist(),
            "counts": curve.counts.tolist(),
        },
    }


def run_seed(setting: Setting, seed: int, log=print) -> list[dict]:
    """Every row of the table for one seed (training, temperature scaling, metrics)."""
    import torch

    from dpuq.training import private_temperature_scaling, small_cnn, train_classifier

    (x, y), (xh, yh), (xt, yt) = _data(setting, seed)
    steps = max(1, round(setting.epochs * y.size / setting.batch_size))
    out = []
    for k, (run, method, kwargs, rows) in enumerate(_runs(setting, steps)):
        torch.manual_seed(10_000 * seed + k)
        kw = dict(kwargs)
        if method != "sgd":
            kw.update(epsilon=setting.epsilon, delta=setting.delta, relation=setting.relation)
        start = time.perf_counter()
        model, report = train_classifier(
            small_cnn(10, image_size=x.shape[-1]),
            (x, y),
            method=method,
            epochs=setting.epochs,
            batch_size=setting.batch_size,
            random_state=np.random.default_rng([seed, k]),
            show_progress=False,
            ledger=CALLER_CHARGED,  # an experiment: a simulation, not a release
            **kw,
        )
        seconds = time.perf_counter() - start
        det = report.details
        for row, which in rows:
            net = model.members[-1] if which == "last" and hasattr(model, "members") else model
            lp_test = _log_probs(net, xt)
            base = {
                "row": row,
                "run": run,
                "method": method,
                "seed": seed,
                "private": method != "sgd",
                "temperature_scaled": False,
                "epsilon_train": report.epsilon if method != "sgd" else None,
                "relation": report.relation.value,
                "steps": det.get("steps"),
                "dpsgld_temperature": det.get("temperature"),
                "sigma_min": det.get("noise multiplier min"),
                "train_seconds": seconds,
            }
            out.append({**base, **_metrics(lp_test, yt, setting, seed)})
            if method == "sgd":
                continue
            lp_held = _log_probs(net, xh)
            t, rep = private_temperature_scaling(
                lp_held,
                yh,
                epsilon=setting.temperature_epsilon,
                random_state=np.random.default_rng([seed, k, len(out)]),
                ledger=CALLER_CHARGED,  # an experiment: a simulation, not a release
            )
            scaled = lp_test / t
            scaled -= np.logaddexp.reduce(scaled, axis=1, keepdims=True)
            out.append(
                {
                    **base,
                    "row": row + " + private TS",
                    "temperature_scaled": True,
                    "softmax_temperature": t,
                    "epsilon_ts": rep.epsilon,
                    **_metrics(scaled, yt, setting, seed),
                }
            )
        for r in out[-2 * len(rows) :]:
            if r["run"] == run:
                log(
                    f"seed {seed} {r['row']:42s} acc {r['accuracy']:.3f} ECE {r['ece']:.4f} "
                    f"NLL {r['nll']:.3f} Brier {r['brier']:.3f} set {r['set_size']:.2f} "
                    f"({r['set_coverage']:.3f}) T {r.get('softmax_temperature', '-')} "
                    f"({seconds:.0f}s)"
                )
    return out


def _order(setting: Setting) -> list[str]:
    names = ["SGD"]
    for lr in setting.learning_rates:
        names.append(f"DP-SGD, lr {lr:g}")
    names += [
        "DP-SGD, decaying lr",
        "DP-SGD, decaying lr + averaging",
        "DP-SGLD",
        "DP-SGLD + posterior averaging",
    ]
    return [n for name in names for n in (name, name + " + private TS") if n != "SGD + private TS"]


def table(rows: list[dict], setting: Setting) -> str:
    """Markdown: mean ± sd over seeds per row, then the headline medians."""
    keys = ["accuracy", "ece", "nll", "brier", "mean_confidence", "set_size", "set_coverage"]
    header = ["method", "accuracy", "ECE", "NLL", "Brier", "mean conf.", "set size"]
    header += ["set coverage", "ε (train; TS)", "seeds"]
    lines = []
    for name in _order(setting):
        rs = [r for r in rows if r["row"] == name]
        if not rs:
            continue
        cells = []
        for k in keys:
            v = np.array([r[k] for r in rs])
            sd = v.std(ddof=1) if v.size > 1 else 0.0
            digits = 4 if k == "ece" else 3
            cells.append(f"{v.mean():.{digits}f} ± {sd:.{digits}f}")
        if rs[0]["private"]:
            e = max(r["epsilon_train"] for r in rs)
            eps = f"{e:.3f}" + (f"; {rs[0]['epsilon_ts']:g}" if rs[0]["temperature_scaled"] else "")
        else:
            eps = "∞"
        lines.append([name, *cells, eps, str(len(rs))])
    return markdown_table(header, lines)


def headline(rows: list[dict], setting: Setting) -> str:
    """Median ECE and accuracy over seeds, before and after private temperature scaling."""
    header = ["method", "median ECE", "median ECE after private TS", "median accuracy", "median T"]
    lines = []
    for name in _order(setting):
        if name.endswith("+ private TS"):
            continue
        before = [r for r in rows if r["row"] == name]
        after = [r for r in rows if r["row"] == name + " + private TS"]
        if not before:
            continue
        med = lambda rs, k: float(np.median([r[k] for r in rs]))  # noqa: E731
        ts = f"{med(after, 'ece'):.4f}" if after else "–"
        temp = f"{med(after, 'softmax_temperature'):.2f}" if after else "–"
        lines.append(
            [name, f"{med(before, 'ece'):.4f}", ts, f"{med(before, 'accuracy'):.3f}", temp]
        )
    return markdown_table(header, lines)


def plot(rows: list[dict], path: Path, setting: Setting) -> None:
    """Reliability diagrams of the first seed: one panel per method, before and after TS."""
    seed = min(r["seed"] for r in rows)
    names = [n for n in _order(setting) if not n.endswith("+ private TS")]
    names = [n for n in names if any(r["row"] == n and r["seed"] == seed for r in rows)]
    cols = 4
    nrows = -(-len(names) // cols)
    fig, axes = subplots(nrows, cols, figsize=(4.2 * cols, 4.2 * nrows), squeeze=False)
    for ax in axes.ravel()[len(names) :]:
        ax.axis("off")
    for ax, name in zip(axes.ravel(), names, strict=False):
        for suffix, style in (("", "-"), (" + private TS", "--")):
            r = next((r for r in rows if r["row"] == name + suffix and r["seed"] == seed), None)
            if r is None:
                continue
            rel = r["reliability"]
            counts = np.array(rel["counts"])
            conf = np.where(counts > 0, rel["confidence"], np.nan)
            acc = np.where(counts > 0, rel["accuracy"], np.nan)
            if not ax.lines:
                ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=1)
            label = ("after private TS" if suffix else "as trained") + f" (ECE {r['ece']:.3f})"
            ax.plot(conf, acc, style, marker="o", ms=3, label=label)
        ax.set_title(name, fontsize=10)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence")
        ax.set_ylabel("accuracy")
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"{setting.dataset}: reliability on test people (seed {seed}); training ε = "
        f"{setting.epsilon:g}, TS ε = {setting.temperature_epsilon:g}, {setting.relation}"
    )
    save_tight(fig, path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpuq.experiments.dpsgld", description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("docs/assets"))
    ap.add_argument("--seeds", type=int, nargs="+", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="digits, one seed (a smoke run)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    setting = QUICK if args.quick else FULL
    if args.seeds:
        setting = Setting(**{**asdict(setting), "seeds": tuple(args.seeds)})
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    start = time.perf_counter()
    for seed in setting.seeds:
        rows += run_seed(setting, seed, log=lambda s: print(s, flush=True))
        record = {"setting": asdict(setting), "rows": rows}
        (args.out / "dpsgld.json").write_text(json.dumps(record, indent=1))
    text = (
        f"{table(rows, setting)}\n\nHeadline (medians over {len(setting.seeds)} seed(s)):\n\n"
        f"{headline(rows, setting)}\n\nwall time {time.perf_counter() - start:.0f} s\n"
    )
    (args.out / "dpsgld_table.md").write_text(text)
    plot(rows, args.out / "dpsgld_reliability.png", setting)
    print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
