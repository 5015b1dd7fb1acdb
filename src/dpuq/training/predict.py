"""Predictions of a trained network: softmax probabilities, batched, on a chosen device.

Post-processing of a released model (no data of the training set is read here).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["predict_proba"]


def predict_proba(model: nn.Module, x, batch_size: int = 2048, device=None) -> np.ndarray:
    """Softmax probabilities of a classifier on ``x`` (array or tensor), as a numpy array.

    ``device``: where to predict (``"auto"``, ``"cpu"``, ``"cuda"``...); default: where the
    model's parameters are. The inputs are moved there once, the model too.

    Examples
    --------
    >>> net = nn.Linear(3, 2)
    >>> predict_proba(net, np.zeros((4, 3))).shape
    (4, 2)
    """
    xt = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x, dtype=torch.float32)
    from dpuq.training.distributed import to_device

    model, xt = to_device(model, xt, device)
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, xt.shape[0], batch_size):
            out.append(torch.softmax(model(xt[start : start + batch_size]), dim=1))
    model.train(was_training)
    probs = torch.cat(out).double().cpu().numpy()
    return probs / probs.sum(axis=1, keepdims=True)
