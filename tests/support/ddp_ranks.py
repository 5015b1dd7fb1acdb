"""A rank of a torchrun-like run for tests/training/test_distributed.py: the process group is
made by the caller (here), and ``train_classifier(..., world_size=k)`` joins it."""

from __future__ import annotations

import os

import numpy as np
import torch


def data(n: int = 600, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype("float32")
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype("int64")
    return X, y


def run_rank(rank: int, world_size: int, port: int, out_dir: str, kwargs: dict) -> None:
    """One rank: join a gloo group, train, save the weights and the report's ε."""
    from dpuq.training import train_classifier

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        torch.manual_seed(rank)  # different initial weights: DPDDP must broadcast rank 0's
        model = torch.nn.Linear(5, 2)
        model, report = train_classifier(model, data(), world_size=world_size, **kwargs)
        torch.save(
            {"state": model.state_dict(), "epsilon": report.epsilon},
            os.path.join(out_dir, f"rank{rank}.pt"),
        )
    finally:
        torch.distributed.destroy_process_group()
