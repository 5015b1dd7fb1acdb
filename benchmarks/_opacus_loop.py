"""The plain Opacus training loop the benchmarks time dpuq against (run as scripts: this
folder is on sys.path): ``PrivacyEngine.make_private`` with a given σ, flat clipping at 1,
Poisson sampling, SGD, ``zero_grad`` / ``backward`` / ``step`` for a fixed number of steps."""

from __future__ import annotations


def plain_opacus_loop(
    net,
    x,
    y,
    *,
    batch_size: int,
    noise_multiplier: float,
    lr: float,
    steps: int,
    device: str = "cpu",
    accountant: str | None = None,
) -> None:
    """Train ``net`` on ``(x, y)`` for ``steps`` steps the way Opacus' tutorials do."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    engine = PrivacyEngine() if accountant is None else PrivacyEngine(accountant=accountant)
    net = net.to(device)
    m, opt, dl = engine.make_private(
        module=net, optimizer=torch.optim.SGD(net.parameters(), lr=lr),
        data_loader=DataLoader(TensorDataset(x.to(device), y.to(device)), batch_size=batch_size),
        noise_multiplier=noise_multiplier, max_grad_norm=1.0, poisson_sampling=True,
    )  # fmt: skip
    loss_fn, done = torch.nn.CrossEntropyLoss(), 0
    while done < steps:
        for xb, yb in dl:
            opt.zero_grad(set_to_none=True)
            loss_fn(m(xb), yb).backward()
            opt.step()
            done += 1
            if done >= steps:
                break
    if device != "cpu":
        torch.cuda.synchronize()
