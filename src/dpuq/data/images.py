"""Image classification data sets that work offline: MNIST-format directories, Fashion-MNIST
from Debian's ``dataset-fashion-mnist`` package, and scikit-learn's 8x8 digits."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dpuq.data.idx import read_idx

__all__ = [
    "FASHION_MNIST_CLASSES",
    "FASHION_MNIST_DIR",
    "ImageData",
    "fashion_mnist_available",
    "load_digits_images",
    "load_fashion_mnist",
    "load_mnist_format",
]

#: Where Debian's ``dataset-fashion-mnist`` package puts the IDX files.
FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")

FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


class ImageData(NamedTuple):
    """Images and labels.

    Attributes
    ----------
    images : ndarray of shape (n, height, width), float32 in [0, 1]
    labels : ndarray of shape (n,), int64
    """

    images: np.ndarray
    labels: np.ndarray


def _find(directory: Path, stem: str) -> Path:
    for name in (stem + ".gz", stem, stem.replace("-idx", ".idx")):
        if (directory / name).is_file():
            return directory / name
    raise FileNotFoundError(f"{directory}: no {stem}[.gz]")


def load_mnist_format(
    directory: str | os.PathLike, split: str = "train", *, n_classes: int = 10
) -> ImageData:
    """Load one split of an MNIST-format directory (MNIST, Fashion-MNIST, KMNIST ...).

    The directory holds ``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]``,
    ``t10k-images-idx3-ubyte[.gz]`` and ``t10k-labels-idx1-ubyte[.gz]`` (the names the data
    sets ship under).

    Parameters
    ----------
    directory : str or path-like
    split : {"train", "test"}
    n_classes : int, default 10
        Labels must lie in ``0..n_classes-1``.

    Returns
    -------
    ImageData
        Pixels scaled to [0, 1] (float32); labels int64.

    Raises
    ------
    FileNotFoundError
        If a file is missing.
    ValueError
        If images and labels disagree in number, or labels are out of range.
    """
    if split not in _FILES:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    d = Path(directory)
    img_stem, lab_stem = _FILES[split]
    images = read_idx(_find(d, img_stem))
    labels = read_idx(_find(d, lab_stem))
    if images.ndim != 3 or labels.ndim != 1:
        raise ValueError(
            f"{d}: expected images (n, h, w) and labels (n,), got {images.shape}, {labels.shape}"
        )
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{d}: {images.shape[0]} images but {labels.shape[0]} labels ({split})")
    y = labels.astype(np.int64)
    bad = int(np.count_nonzero((y < 0) | (y >= n_classes)))
    if bad:
        raise ValueError(f"{d}: {bad} label(s) outside 0..{n_classes - 1} ({split})")
    scale = 255.0 if images.dtype == np.uint8 else 1.0
    return ImageData((images.astype(np.float32) / np.float32(scale)), y)


def fashion_mnist_available(directory: str | os.PathLike | None = None) -> bool:
    """True when the four Fashion-MNIST IDX files are present (default: Debian's location)."""
    d = Path(directory) if directory is not None else FASHION_MNIST_DIR
    try:
        for stems in _FILES.values():
            for stem in stems:
                _find(d, stem)
    except FileNotFoundError:
        return False
    return True


def load_fashion_mnist(
    split: str = "train", *, directory: str | os.PathLike | None = None
) -> ImageData:
    """Fashion-MNIST (Xiao et al. 2017): 60,000 train / 10,000 test 28x28 images, 10 classes.

    Reads Debian's package ``dataset-fashion-mnist`` (``apt-get install dataset-fashion-mnist``,
    files in ``/usr/share/datasets/fashion-mnist``) or any directory with the same IDX files.
    Class names: :data:`FASHION_MNIST_CLASSES`.

    Raises
    ------
    FileNotFoundError
        With the install hint, when the files are missing.
    """
    d = Path(directory) if directory is not None else FASHION_MNIST_DIR
    if not fashion_mnist_available(d):
        raise FileNotFoundError(
            f"Fashion-MNIST not found in {d}: on Debian/Ubuntu run "
            "'apt-get install dataset-fashion-mnist', or pass directory= to a folder with the "
            "four IDX files (train-images-idx3-ubyte.gz, ...)"
        )
    return load_mnist_format(d, split)


def load_digits_images() -> ImageData:
    """scikit-learn's digits (1,797 8x8 images, 10 classes), pixels scaled to [0, 1].

    Always available offline (ships with scikit-learn).

    Examples
    --------
    >>> data = load_digits_images()
    >>> data.images.shape, data.labels.shape, float(data.images.max())
    ((1797, 8, 8), (1797,), 1.0)
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)
    return ImageData(images, bunch.target.astype(np.int64))
