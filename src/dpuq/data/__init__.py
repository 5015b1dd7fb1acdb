"""Offline data loaders: IDX files (MNIST format), Fashion-MNIST, scikit-learn digits."""

from dpuq.data.idx import read_idx, write_idx
from dpuq.data.images import (
    FASHION_MNIST_CLASSES,
    FASHION_MNIST_DIR,
    ImageData,
    fashion_mnist_available,
    load_digits_images,
    load_fashion_mnist,
    load_mnist_format,
)

__all__ = [
    "FASHION_MNIST_CLASSES",
    "FASHION_MNIST_DIR",
    "ImageData",
    "fashion_mnist_available",
    "load_digits_images",
    "load_fashion_mnist",
    "load_mnist_format",
    "read_idx",
    "write_idx",
]
