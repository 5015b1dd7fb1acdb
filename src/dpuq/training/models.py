"""Small convolutional networks for image classification that Opacus can train privately."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["small_cnn"]


def small_cnn(
    n_classes: int = 10, *, image_size: int = 28, in_channels: int = 1, width: int = 16
) -> nn.Sequential:
    """The CNN of Papernot et al. (2021) / Opacus' MNIST example, sized to the images.

    Two convolutions (tanh, 2x2 max-pool of stride 1) and two dense layers: five layers
    counting the pooling blocks, as in the seed paper's MNIST model; ~26k weights on 28x28.
    No batch normalisation (it mixes the examples of a batch, which DP-SGD cannot allow).
    Images of 16 pixels or less (e.g. sklearn's 8x8 digits) get 3x3 kernels.

    Parameters
    ----------
    n_classes : int, default 10
    image_size : int, default 28
        Height and width of the (square) input images.
    in_channels : int, default 1
    width : int, default 16
        Channels of the first convolution (the second has twice as many).

    Examples
    --------
    >>> net = small_cnn(10, image_size=8)
    >>> net(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 10])
    """
    if image_size > 16:
        conv1 = nn.Conv2d(in_channels, width, 8, stride=2, padding=3)
        conv2 = nn.Conv2d(width, 2 * width, 4, stride=2)
    else:
        conv1 = nn.Conv2d(in_channels, width, 3, stride=1, padding=1)
        conv2 = nn.Conv2d(width, 2 * width, 3, stride=2)
    features = nn.Sequential(
        conv1, nn.Tanh(), nn.MaxPool2d(2, 1), conv2, nn.Tanh(), nn.MaxPool2d(2, 1), nn.Flatten()
    )
    with torch.no_grad():
        n_flat = features(torch.zeros(1, in_channels, image_size, image_size)).shape[1]
    return nn.Sequential(*features, nn.Linear(n_flat, 32), nn.Tanh(), nn.Linear(32, n_classes))
