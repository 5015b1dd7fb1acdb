"""Offline data loaders: IDX files (MNIST format), Fashion-MNIST, scikit-learn digits."""

from dpuq.data import images as _images
from dpuq.data.idx import read_idx, write_idx
from dpuq.data.images import *  # noqa: F403 (the loaders, listed in images.__all__)

__all__ = ["read_idx", "write_idx", *_images.__all__]
