"""Synthetic ImageNet-scale classifier outputs that behave like a ResNet-152's.

The paper's Figures 5 and 6 use a pretrained ResNet-152 on ImageNet's 50,000 validation
images (1000 classes). Neither the images nor the weights can be downloaded here, so
``dpuq reproduce bins|epsilon`` accept a user's cached logits file and otherwise use this
documented generator. It is a stand-in for the *score distribution* the conformal procedure
sees, not a model of images.

The generator (all draws from one seeded generator)
---------------------------------------------------
- Labels ``y_i`` uniform over the K classes.
- Classes sit on a ring in a random order; the 4 classes following ``y`` on the ring are its
  look-alikes (ImageNet has many near-duplicate classes: dog breeds, tools).
- Raw logits ``z_ik ~ N(0, 1)`` for every class; the true class gets ``+ d_i`` with a per-image
  difficulty ``d_i ~ N(6.27, 2.0²)``; each look-alike gets ``+ U(0, 4.92)``.
- Logits ``= 2.22 · z`` (the sharpness sets how over-confident the softmax is);
  probabilities are their softmax.

The four constants were fitted (Nelder-Mead on 10,000 images) to the profile of torchvision's
ResNet-152 (V1 weights): top-1 accuracy 78.3 %, top-5 94.0 %, and over-confidence of about 5
points (mean top-class probability minus accuracy; Guo et al. 2017 report an ECE of about 5.5 %
for ResNet-152 on ImageNet). Measured on 50,000 generated images (``random_state=0``): top-1
0.781, top-5 0.941, mean top-class probability 0.829, ECE (15 equal-width bins) 0.060; the
non-private split-conformal LAC sets at α = 0.1 (n = 30,000, 100 splits) have mean size 1.71,
60 % singletons, and coverage 0.900. The coverage *guarantee* does
not depend on any of this; the set sizes and the spread of coverage over splits do.
"""

from __future__ import annotations

import numpy as np

from dpuq._progress import progress
from dpuq._validation import check_positive_int
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = ["RESNET152_PROFILE", "synthetic_imagenet_logits"]

#: Generator constants (see the module docstring).
DIFFICULTY_MEAN = 6.27
DIFFICULTY_SD = 2.0
LOOKALIKE_BOOST = 4.92
N_LOOKALIKES = 4
SHARPNESS = 2.22

#: The published profile the constants were fitted to (torchvision ResNet-152, V1 weights).
RESNET152_PROFILE = {"top1": 0.783, "top5": 0.940, "overconfidence": 0.05}


def synthetic_imagenet_logits(
    n_samples: int,
    n_classes: int = 1000,
    *,
    random_state: RandomState = None,
    chunk: int = 8192,
    show_progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Logits and labels from the ResNet-152-like generator (module docstring).

    Parameters
    ----------
    n_samples : int
        Number of images.
    n_classes : int, default 1000
        Number of classes (> N_LOOKALIKES).
    random_state : None, int or numpy.random.Generator
        Seed for a reproducible data set.
    chunk : int
        Rows generated at a time (memory only; the result does not depend on it).
    show_progress : bool
        Show a progress bar.

    Returns
    -------
    logits : ndarray of shape (n_samples, n_classes), float32
    labels : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> logits, y = synthetic_imagenet_logits(2000, random_state=0)
    >>> logits.shape, bool(0.7 < np.mean(logits.argmax(axis=1) == y) < 0.86)
    ((2000, 1000), True)
    """
    n = check_positive_int(n_samples, "n_samples")
    k = check_positive_int(n_classes, "n_classes", minimum=N_LOOKALIKES + 2)
    rng = check_random_state(random_state)
    ring = rng.permutation(k)
    position = np.empty(k, dtype=np.int64)
    position[ring] = np.arange(k)
    labels = rng.integers(k, size=n)
    logits = np.empty((n, k), dtype=np.float32)
    starts = range(0, n, chunk)
    for start in progress(starts, "synthetic logits", disable=not show_progress):
        y = labels[start : start + chunk]
        rows = np.arange(y.size)
        z = rng.standard_normal((y.size, k), dtype=np.float32)
        z[rows, y] += rng.normal(DIFFICULTY_MEAN, DIFFICULTY_SD, y.size).astype(np.float32)
        for step in range(1, N_LOOKALIKES + 1):
            z[rows, ring[(position[y] + step) % k]] += (
                LOOKALIKE_BOOST * rng.random(y.size)
            ).astype(np.float32)
        z *= np.float32(SHARPNESS)
        logits[start : start + chunk] = z
    return logits, labels


def softmax(logits: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Row-wise softmax in float64, ``chunk`` rows at a time.

    Examples
    --------
    >>> softmax(np.array([[0.0, 0.0], [0.0, np.log(3.0)]])).round(6).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    """
    logits = np.asarray(logits)
    out = np.empty(logits.shape, dtype=float)
    for start in range(0, logits.shape[0], chunk):
        z = logits[start : start + chunk].astype(float)
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        out[start : start + chunk] = z
    return out
