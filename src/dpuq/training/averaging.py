"""Iterate averaging for :func:`dpuq.training.train_classifier`: which steps to keep, and how.

Averaging is post-processing of iterates that the accounting already covers (every iterate
could be published), so nothing here has a privacy cost.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

__all__ = ["AVERAGING", "IterateAverage", "PosteriorAverage", "average_iterates", "snapshot_steps"]

#: Kinds of iterate averaging of :func:`dpuq.training.train_classifier`.
AVERAGING = ("predictive", "weights")


class IterateAverage(nn.Module):
    """Average of the predictive distributions of late iterates: ``log(mean_k softmax(f_k(x)))``.

    For DP-SGLD this is the posterior average of Langevin samples (Welling and Teh 2011); for
    SGD and DP-SGD it is an ensemble of snapshots along one run (iterate averaging). Its
    outputs are log-probabilities, so ``softmax`` of it is the averaged predictive distribution
    (and cross-entropy / argmax work as on logits). Built by :func:`train_classifier` when
    ``iterate_averaging > 0``. Privacy: a function of the iterates only, i.e. post-processing
    of the sequence of iterates that DP-SGD's accounting covers (module docstring of
    :mod:`dpuq.privacy.accounting`): no extra privacy cost.
    """

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        if not members:
            raise ValueError("members is empty")
        self.members = nn.ModuleList(members)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logp = torch.stack([torch.log_softmax(m(x), dim=1) for m in self.members])
        return torch.logsumexp(logp, dim=0) - math.log(len(self.members))


#: Former name of :class:`IterateAverage` (kept for existing code).
PosteriorAverage = IterateAverage


def snapshot_steps(n_iterates: int, start: float, steps: int) -> tuple[set[int], int]:
    """The steps whose iterates are averaged (evenly spaced from ``start·steps``) and the first.

    Examples
    --------
    >>> sorted(snapshot_steps(3, 0.5, 10)[0])
    [5, 7, 9]
    """
    first = min(int(start * steps), steps - 1)
    return {int(v) for v in np.linspace(first, steps - 1, n_iterates).round()}, first


def average_iterates(model: nn.Module, snapshots: list[dict], averaging: str) -> nn.Module:
    """The released model: ``model`` with the mean weights, or an :class:`IterateAverage`."""
    if averaging == "weights":
        mean_state = {}
        for key, value in snapshots[0].items():
            if value.is_floating_point():
                mean_state[key] = torch.stack([s[key] for s in snapshots]).mean(dim=0)
            else:
                mean_state[key] = snapshots[-1][key]
        model.load_state_dict(mean_state)
        return model
    members = []
    for state in snapshots:
        member = copy.deepcopy(model)
        member.load_state_dict(state)
        members.append(member.eval())
    return IterateAverage(members).eval()
