"""Training data in, mini-batches out: checks of the data and the two batch samplers.

Private training samples batches by Poisson sampling (Opacus' sampler: each example enters a
batch with probability ``p``, the sampling that DP-SGD's accounting assumes); non-private
training reshuffles every epoch. The seed of both is a ``torch.Generator`` made from the
caller's ``random_state``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = [
    "TASKS",
    "as_tensors",
    "batches_private",
    "batches_shuffled",
    "check_label_range",
    "n_outputs",
    "torch_generator",
]


#: What :func:`dpuq.training.train_classifier` learns: class indices or real-valued targets.
TASKS = ("classification", "regression")


def as_tensors(
    train_data, task: str = "classification"
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(X, y) arrays or a TensorDataset -> tensors; None for another Dataset.

    ``task="classification"``: ``y`` holds integer class indices (int64); ``"regression"``:
    real-valued targets (float32, finite).
    """
    from torch.utils.data import Dataset, TensorDataset

    if isinstance(train_data, tuple | list) and len(train_data) == 2:
        x, y = train_data
        x = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x, dtype=torch.float32)
        y_arr = y if torch.is_tensor(y) else torch.as_tensor(np.asarray(y))
        if task == "regression":
            if y_arr.dtype == torch.bool or y_arr.dtype.is_complex:
                raise ValueError(f"train_data: targets must be real numbers, got {y_arr.dtype}")
            y_arr = y_arr.to(torch.float32)
            if not torch.isfinite(y_arr).all():
                raise ValueError("train_data: y has non-finite values (NaN or inf)")
        elif y_arr.dtype.is_floating_point:
            if not torch.all(y_arr == torch.round(y_arr)):
                raise ValueError("train_data: labels must be integer class indices")
        elif y_arr.dtype == torch.bool or y_arr.dtype.is_complex:
            raise ValueError(f"train_data: labels must be integers, got dtype {y_arr.dtype}")
        if task != "regression":
            y_arr = y_arr.long()
        if y_arr.ndim != 1 or x.shape[0] != y_arr.shape[0]:
            raise ValueError(
                f"train_data: need X of shape (n, ...) and y of shape (n,), got {tuple(x.shape)} "
                f"and {tuple(y_arr.shape)}"
            )
        if not torch.isfinite(x).all():
            raise ValueError("train_data: X has non-finite values (NaN or inf)")
        return x, y_arr
    if isinstance(train_data, TensorDataset) and len(train_data.tensors) == 2:
        return as_tensors(tuple(train_data.tensors), task)
    if isinstance(train_data, Dataset):
        return None
    raise TypeError(
        "train_data must be a pair (X, y) of arrays/tensors or a torch Dataset of (x, y), "
        f"got {type(train_data).__name__}"
    )


def n_outputs(model: nn.Module, x1: torch.Tensor) -> int:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(x1)
    model.train(was_training)
    if out.ndim != 2:
        raise ValueError(f"model must output logits of shape (batch, n_classes), got {out.shape}")
    return int(out.shape[1])


def check_label_range(y: torch.Tensor, n_classes: int, where: str = "train_data") -> None:
    if y.numel() == 0:
        return
    if bool(((y < 0) | (y >= n_classes)).any()):  # no counts or values: they are not released
        raise ValueError(f"{where}: labels outside the model's classes 0..{n_classes - 1}")


def torch_generator(random_state) -> torch.Generator:
    g = torch.Generator()
    if random_state is None:
        g.seed()  # fresh entropy
    elif isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        g.manual_seed(int(random_state))
    elif isinstance(random_state, np.random.Generator):
        g.manual_seed(int(random_state.integers(2**63 - 1)))
    else:
        raise TypeError(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {type(random_state).__name__}"
        )
    return g


def batches_private(data, tensors, n, sample_rate, steps, gen):
    """Poisson-sampled batches (Opacus' sampler): each example enters with prob. p."""
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    if tensors is not None:
        x, y = tensors
        sampler = UniformWithReplacementSampler(
            num_samples=n, sample_rate=sample_rate, generator=gen, steps=steps
        )
        for idx in sampler:
            index = torch.as_tensor(idx, dtype=torch.long)
            yield x[index], y[index]
        return
    from opacus.data_loader import DPDataLoader

    loader = DPDataLoader(data, sample_rate=sample_rate, generator=gen)
    done = 0
    while done < steps:
        for xb, yb in loader:
            yield xb, yb
            done += 1
            if done >= steps:
                return


def batches_shuffled(data, tensors, n, batch_size, steps, gen):
    """Non-private mini-batches: reshuffle every epoch, fixed size (last one may be smaller)."""
    if tensors is not None:
        x, y = tensors
        done = 0
        while True:
            perm = torch.randperm(n, generator=gen)
            for start in range(0, n, batch_size):
                index = perm[start : start + batch_size]
                yield x[index], y[index]
                done += 1
                if done >= steps:
                    return
    from torch.utils.data import DataLoader

    loader = DataLoader(data, batch_size=batch_size, shuffle=True, generator=gen)
    done = 0
    while True:
        for xb, yb in loader:
            yield xb, yb
            done += 1
            if done >= steps:
                return
