"""Which utility should private temperature scaling use, and when is it worth its ε?

Run: ``python -m dpuq.experiments.dpsgld_ts [--out docs/assets]`` (about 3 minutes, one thread).

Retrains the DP-SGD (constant lr 1) network of :mod:`dpuq.experiments.dpsgld`'s Table 1 for
each seed (same seeds, data split and privacy), then releases the temperature many times with
each utility (calibration gap, Brier, clipped NLL) and with fewer held-out people or other ε,
and measures ECE on the test people. Writes ``dpsgld_ts.json`` and ``dpsgld_ts.md``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dpuq.metrics.calibration import expected_calibration_error
from dpuq.privacy.ledger import CALLER_CHARGED

__all__ = ["main"]


def _softmax(lp: np.ndarray, t: float) -> np.ndarray:
    z = lp / t
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpuq.experiments.dpsgld_ts")
    ap.add_argument("--out", type=Path, default=Path("docs/assets"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--draws", type=int, default=25)
    args = ap.parse_args(argv)

    import torch

    from dpuq.experiments.dpsgld import FULL, _data, _log_probs
    from dpuq.training import private_temperature_scaling, small_cnn, train_classifier

    torch.set_num_threads(1)
    k = 1 + list(FULL.learning_rates).index(1.0)  # the run index of "DP-SGD, lr 1" in Table 1
    rows = []
    for seed in args.seeds:
        (x, y), (xh, yh), (xt, yt) = _data(FULL, seed)
        torch.manual_seed(10_000 * seed + k)
        model, _ = train_classifier(
            small_cnn(10, image_size=x.shape[-1]), (x, y), method="dpsgd",
            epochs=FULL.epochs, batch_size=FULL.batch_size, learning_rate=1.0,
            epsilon=FULL.epsilon, delta=FULL.delta, relation=FULL.relation,
            random_state=np.random.default_rng([seed, k]), show_progress=False,
            ledger=CALLER_CHARGED,  # an experiment: a simulation, not a release
        )  # fmt: skip
        lp_h, lp_t = _log_probs(model, xh), _log_probs(model, xt)
        ece0 = expected_calibration_error(_softmax(lp_t, 1.0), yt)
        gen = np.random.default_rng([seed, 99])
        cases = [(loss, FULL.n_heldout, 0.5) for loss in ("gap", "brier", "nll")]
        cases += [("gap", n, e) for n in (250, 500, 1000) for e in (0.5,)]
        cases += [("gap", 2000, e) for e in (0.1, 2.0)]
        for loss, n, eps in cases:
            eces, temps = [], []
            for _ in range(args.draws):
                sub = gen.choice(yh.size, size=n, replace=False)
                t, _ = private_temperature_scaling(
                    lp_h[sub],
                    yh[sub],
                    epsilon=eps,
                    loss=loss,
                    random_state=gen,
                    ledger=CALLER_CHARGED,  # an experiment: a simulation, not a release
                )
                temps.append(t)
                eces.append(expected_calibration_error(_softmax(lp_t, t), yt))
            rows.append({"seed": seed, "loss": loss, "n": n, "epsilon": eps, "ece_before": ece0,
                         "ece": eces, "temperature": temps})  # fmt: skip
            print(
                f"seed {seed} {loss:5s} n {n:5d} ε {eps:g}: ECE {ece0:.4f} -> median "
                f"{np.median(eces):.4f}, T in [{min(temps):.2f}, {max(temps):.2f}]",
                flush=True,
            )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dpsgld_ts.json").write_text(json.dumps(rows, indent=1))
    lines = [
        "| utility | held-out n | ε_T | ECE before (median over seeds) | ECE after: median over "
        "seeds and draws [10%, 90%] | T: median [10%, 90%] |",
        "|---|---|---|---|---|---|",
    ]
    keys = sorted(
        {(r["loss"], r["n"], r["epsilon"]) for r in rows}, key=lambda c: (c[0] != "gap", c)
    )
    for loss, n, eps in keys:
        rs = [r for r in rows if (r["loss"], r["n"], r["epsilon"]) == (loss, n, eps)]
        e = np.concatenate([r["ece"] for r in rs])
        t = np.concatenate([r["temperature"] for r in rs])
        before = np.median([r["ece_before"] for r in rs])
        lines.append(
            f"| {loss} | {n} | {eps:g} | {before:.4f} | {np.median(e):.4f} "
            f"[{np.quantile(e, 0.1):.4f}, {np.quantile(e, 0.9):.4f}] | {np.median(t):.2f} "
            f"[{np.quantile(t, 0.1):.2f}, {np.quantile(t, 0.9):.2f}] |"
        )
    (args.out / "dpsgld_ts.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
