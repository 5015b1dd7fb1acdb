"""Issue 35: seconds per training step of dpuq against a plain Opacus loop (same model, batch).

``python benchmarks/bench_step_time.py [linear] [cnn]``: for each model — the linear head on
28×28 scattering features (3,969 → 10) and :func:`dpuq.training.small_cnn` on 28×28 images —
and the same batch (``B = 256``, Poisson sampling at ``p = B/N``, ``N = 12,800`` random
inputs), three trainings:

- a **plain Opacus loop**: ``PrivacyEngine().make_private`` (σ = 1 given, flat clipping
  ``C = 1``), SGD, a Poisson ``DataLoader``, ``zero_grad`` / ``backward`` / ``step``;
- ``dpuq.training.train_classifier`` with the same σ, flat clipping, SGD rate 1, no averaging
  (``learning_rate=1.0``: the classic settings);
- ``train_classifier`` with the recipe's optimiser (normalised clipping, late-iterate
  averaging), the same σ and batch.

The time of a step is the **marginal** one: each training runs ``S1 = 20`` and ``S2 = 220``
steps (``BENCH_STEPS``) and ``(t(S2) − t(S1)) / 200`` is kept, so one-off costs (Opacus'
wrapping, dpuq's checks and budget accounting) cancel; wall time and this process's CPU time
(steadier on a shared machine). Median of ``BENCH_ROUNDS`` (3) interleaved rounds, one torch
thread (``BENCH_THREADS``), on ``BENCH_DEVICE`` (default the CPU). Figures:
docs/explanation/benchmarks.md.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings

from _opacus_loop import plain_opacus_loop

N, BATCH, SIGMA = 12_800, 256, 1.0
S1, S2 = (int(v) for v in os.environ.get("BENCH_STEPS", "20 220").split())
DEVICE = os.environ.get("BENCH_DEVICE", "cpu")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def data(kind: str):
    import torch

    gen = torch.Generator().manual_seed(0)
    shape = (N, 3969) if kind == "linear" else (N, 1, 28, 28)
    return torch.randn(*shape, generator=gen), torch.randint(0, 10, (N,), generator=gen)


def model(kind: str):
    import torch

    from dpuq.training import small_cnn

    torch.manual_seed(0)
    return torch.nn.Linear(3969, 10) if kind == "linear" else small_cnn(10, image_size=28)


def opacus_loop(kind: str, x, y, steps: int) -> None:
    plain_opacus_loop(model(kind), x, y, batch_size=BATCH, noise_multiplier=SIGMA, lr=1.0,
                      steps=steps, device=DEVICE)  # fmt: skip


def dpuq_run(kind: str, x, y, steps: int, **kw) -> None:
    from dpuq.privacy.ledger import CALLER_CHARGED
    from dpuq.training import train_classifier

    train_classifier(
        model(kind), (x, y), method="dpsgd", epsilon=100.0, delta=1e-5,
        noise_multiplier=SIGMA, epochs=steps * BATCH / N, batch_size=BATCH, random_state=0,
        show_progress=False, ledger=CALLER_CHARGED, device=DEVICE, **kw,
    )  # fmt: skip


def dpuq_flat(kind: str, x, y, steps: int) -> None:
    dpuq_run(kind, x, y, steps, learning_rate=1.0)


def dpuq_recipe(kind: str, x, y, steps: int) -> None:
    dpuq_run(kind, x, y, steps, learning_rate=0.5, clipping="normalized",
             iterate_averaging=20, averaging="weights")  # fmt: skip


RUNS = {
    "plain Opacus loop (flat clipping)": opacus_loop,
    "dpuq, flat clipping, rate 1, no averaging": dpuq_flat,
    "dpuq, recipe's optimiser (normalised, averaging)": dpuq_recipe,
}


def marginal(fn, kind, x, y) -> tuple[float, float]:
    """Wall and CPU seconds per step beyond the one-off costs: (t(S2) - t(S1)) / (S2 - S1).

    The CPU time (this process, one thread) is the steadier figure on a shared machine."""
    wall, cpu = [], []
    for steps in (S1, S2):
        w, c = time.perf_counter(), time.process_time()
        fn(kind, x, y, steps)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return (wall[1] - wall[0]) / (S2 - S1), (cpu[1] - cpu[0]) / (S2 - S1)


def main(kinds) -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
    print(f"B = {BATCH}, N = {N}, σ = {SIGMA:g}, {torch.get_num_threads()} thread(s), device "
          f"{DEVICE}, marginal time per step ({S2} − {S1} steps), median of {ROUNDS} rounds",
          flush=True)  # fmt: skip
    for kind in kinds:
        x, y = data(kind)
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in RUNS}
        for fn in RUNS.values():  # first-call costs (imports, allocators) outside the rounds
            fn(kind, x, y, S1)
        for _ in range(ROUNDS):
            for label, fn in RUNS.items():
                times[label].append(marginal(fn, kind, x, y))
        base = times["plain Opacus loop (flat clipping)"]
        ref = [statistics.median(t[i] for t in base) for i in (0, 1)]
        print(f"{kind} ({sum(p.numel() for p in model(kind).parameters()):,} weights): "
              "wall ms/step (ratio) | CPU ms/step (ratio)")  # fmt: skip
        for label, t in times.items():
            w, c = (statistics.median(v[i] for v in t) for i in (0, 1))
            rounds = ", ".join(f"{1000 * v[1]:.1f}" for v in t)
            print(f"  {label:<50} {1000 * w:8.2f} ({w / ref[0]:4.2f}×) | {1000 * c:8.2f} "
                  f"({c / ref[1]:4.2f}×)  CPU rounds: {rounds}", flush=True)  # fmt: skip


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    main([a for a in sys.argv[1:] if a in ("linear", "cnn")] or ["linear", "cnn"])
