"""Throughput of DP-SGLD vs Opacus' DP-SGD vs non-private SGD (issue 3). Prints medians.

Same CNN (:func:`dpuq.training.small_cnn`, 28x28, ~26k weights), batches of 256 random
Fashion-MNIST-shaped images, one torch thread. Each timing: 20 optimizer steps (forward,
backward, per-example gradients, clipping, noise, update); median of 7 after a warm-up.
Target: DP-SGLD >= 0.9x Opacus DP-SGD.

Run: ``./run.sh bench`` or ``.venv/bin/python benchmarks/bench_training.py``.
"""

from __future__ import annotations

import warnings

from _timing import median_time


def main() -> None:
    import torch
    from opacus import PrivacyEngine
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from dpuq.training import DPSGLDOptimizer, small_cnn

    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    warnings.filterwarnings("ignore", message=".*[Ss]ecure RNG.*")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    batch, steps, n = 256, 20, 60000
    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def runner(model, opt):
        def run():
            for _ in range(steps):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(x), y).backward()
                opt.step()

        return run

    # non-private SGD
    sgd_model = small_cnn(10)
    sgd = runner(sgd_model, torch.optim.SGD(sgd_model.parameters(), lr=0.1))

    # Opacus' DP-SGD, wrapped the standard way
    engine = PrivacyEngine(accountant="rdp")
    loader = DataLoader(TensorDataset(x, y), batch_size=batch)
    m = small_cnn(10)
    dp_model, dp_opt, _ = engine.make_private(
        module=m,
        optimizer=torch.optim.SGD(m.parameters(), lr=0.1),
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    dp_opt.expected_batch_size = batch
    dpsgd = runner(dp_model, dp_opt)

    def dpsgld_runner(pre_noise):
        from opacus import GradSampleModule

        model = GradSampleModule(small_cnn(10))
        opt = DPSGLDOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            max_grad_norm=1.0,
            expected_batch_size=batch,
            n_samples=n,
            temperature=0.05,
            pre_noise_scale=pre_noise,
        )
        return runner(model, opt)

    rows = [
        ("SGD (non-private)", sgd),
        ("Opacus DP-SGD (make_private)", dpsgd),
        ("DP-SGLD (dpuq), no pre-noise", dpsgld_runner(0.0)),
        ("DP-SGLD (dpuq), pre-noise 1e-3", dpsgld_runner(1e-3)),
    ]
    results = {}
    print(f"{'method':<34}{'examples/s':>12}{'vs DP-SGD':>11}")
    for name, fn in rows:
        results[name] = batch * steps / median_time(fn)
    ref = results["Opacus DP-SGD (make_private)"]
    for name, rate in results.items():
        print(f"{name:<34}{rate:>12.0f}{rate / ref:>10.2f}x")


if __name__ == "__main__":
    main()
