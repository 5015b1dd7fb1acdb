"""Fixed (data-independent) image features for private training, and the model-family rule.

Tramèr and Boneh (ICLR 2021, "Differentially private learning needs better features (or much
more data)") show that at small ε a linear model on fixed ScatterNet features (Oyallon and
Mallat 2015) beats end-to-end CNNs trained with DP-SGD: the features cost no privacy and the
linear head has few parameters to noise. :func:`scatter_features` computes their features:

- the second-order 2-D scattering transform of kymatio 0.3 (Andreux et al., JMLR 2020) with
  ``J = 2`` scales and ``L = 8`` orientations (81 channels of 7×7 for a 28×28 image), imported
  from its torch frontend module directly (``kymatio.torch`` itself fails to import on current
  SciPy through its 3-D frontend);
- their group normalisation, ``GroupNorm(27, 81, affine=False)`` (Tramèr and Boneh's code,
  ``--input_norm=GroupNorm --num_groups=27``): each example's channels are split into groups
  and each group is standardised over its own coordinates. The statistics are those of one
  example only (no statistic is shared between people), so a person's features are a function
  of their own image and the transform costs no privacy. (Their other option, batch
  normalisation with privately computed statistics, would spend budget; it is not offered.)

:func:`choose_model_family` is the public rule that picks between features + a linear head and
an end-to-end CNN. :func:`synthetic_images` is the public tuning data of the recipe (never
digits or Fashion-MNIST).
"""

from __future__ import annotations

import functools

import numpy as np

from dpuq._validation import check_positive_int

__all__ = [
    "FEATURES_MAX_EXAMPLES",
    "SCATTER_CHANNELS_PER_GROUP",
    "choose_model_family",
    "fixed_features",
    "scatter_features",
    "scattering_shape",
    "synthetic_images",
]

#: Below this ``N·ε``, fixed scattering features + a linear head; above it, a CNN end to end.
#: Tramèr and Boneh (2021, Table 1 and Section 5): at ε = 3 the ScatterNet + linear model beats
#: end-to-end CNNs on MNIST, Fashion-MNIST and CIFAR-10 with 50–60k images (N·ε ≈ 1.5–1.8e5)
#: and loses to them on CIFAR-10 with 550k images (N·ε ≈ 1.65e6); the rule switches at about
#: the geometric middle of the two, 5e5.
FEATURES_MAX_EXAMPLES = 500_000
#: Channels per normalisation group: 81 channels in 27 groups (Tramèr and Boneh's setting).
SCATTER_CHANNELS_PER_GROUP = 3
KYMATIO_MISSING = (
    "scatter_features needs kymatio 0.3 (second-order scattering): pip install 'dpuq[torch]' "
    "or pip install kymatio==0.3.0"
)


def choose_model_family(n_samples: int, epsilon: float) -> tuple[str, str]:
    """``("features", why)`` or ``("cnn", why)`` from public quantities (N and ε) only.

    Tramèr and Boneh (2021) found ScatterNet + linear better than end-to-end CNNs under DP
    unless the data is very large: with ``N·ε`` below :data:`FEATURES_MAX_EXAMPLES` the CNN's
    many noisy parameters cannot be learned as well, so the fixed features win.

    Examples
    --------
    >>> choose_model_family(20_000, 1.0)[0], choose_model_family(550_000, 3.0)[0]
    ('features', 'cnn')
    """
    n = check_positive_int(n_samples, "n_samples")
    eps = float(epsilon)
    if not eps > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon!r}")
    if n * eps < FEATURES_MAX_EXAMPLES:
        return "features", (
            f"N·ε = {n * eps:,.0f} < {FEATURES_MAX_EXAMPLES:,}: fixed second-order scattering "
            "features (group-normalised) + a linear head (Tramèr and Boneh 2021: up to about "
            "60,000 images at ε = 3 these beat end-to-end CNNs under DP; the head has few "
            "parameters to noise)"
        )
    return "cnn", (
        f"N·ε = {n * eps:,.0f} >= {FEATURES_MAX_EXAMPLES:,}: a small CNN trained end to end "
        "(Tramèr and Boneh 2021: with ~550,000 images end-to-end CNNs overtake fixed features)"
    )


def _default_scales(side: int) -> int:
    return 1 if side < 16 else 2


def scattering_shape(side: int, n_scales: int | None = None, n_orientations: int = 8):
    """``(channels, side / 2^J)`` of the second-order scattering of a ``side``×``side`` image.

    Channels: ``1 + J·L + L²·J(J−1)/2`` (order 0, 1 and 2 coefficients).

    Examples
    --------
    >>> scattering_shape(28), scattering_shape(8)
    ((81, 7), (9, 4))
    """
    j = _default_scales(side) if n_scales is None else check_positive_int(n_scales, "n_scales")
    lo = check_positive_int(n_orientations, "n_orientations")
    return 1 + j * lo + lo * lo * j * (j - 1) // 2, side // 2**j


def _groups(channels: int) -> int:
    """Largest divisor of ``channels`` with at least 3 channels a group (81 → 27)."""
    for g in range(max(1, channels // SCATTER_CHANNELS_PER_GROUP), 0, -1):
        if channels % g == 0:
            return g
    return 1  # pragma: no cover - g = 1 always divides


@functools.lru_cache(maxsize=8)
def _scattering(side: int, n_scales: int, n_orientations: int):
    try:
        from kymatio.scattering2d.frontend.torch_frontend import ScatteringTorch2D
    except ImportError as exc:
        raise ImportError(f"{KYMATIO_MISSING} ({exc})") from exc
    return ScatteringTorch2D(J=n_scales, shape=(side, side), L=n_orientations, max_order=2)


def scatter_features(
    images,
    *,
    n_scales: int | None = None,
    n_orientations: int = 8,
    n_groups: int | None = None,
    batch_size: int = 512,
) -> np.ndarray:
    """Group-normalised second-order scattering features of square grey images (kymatio).

    Parameters
    ----------
    images : array of shape (n, H, W) or (n, 1, H, W), values in [0, 1]
    n_scales : int, optional
        ``J``; default 2 (Tramèr and Boneh), 1 for images under 16 pixels.
    n_orientations : int, default 8
        ``L`` (Tramèr and Boneh; kymatio's default).
    n_groups : int, optional
        Groups of channels normalised together; default: 3 channels a group (27 of 81).
    batch_size : int, default 512
        Images transformed at once (memory; the result does not depend on it).

    Returns
    -------
    ndarray of shape (n, K·(H/2^J)²), float32
        Channel-major (``K`` channels of ``(H/2^J)²``); each group of channels of each row has
        mean 0 and variance 1 (up to torch's ``1e-5``).

    Examples
    --------
    >>> scatter_features(np.zeros((2, 28, 28))).shape
    (2, 3969)
    """
    import torch
    import torch.nn.functional as F

    x = np.asarray(images, dtype=np.float32)
    if x.ndim == 4 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"images must have shape (n, H, W) with H == W, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("images must be finite (no NaN or inf)")
    side = int(x.shape[1])
    j = _default_scales(side) if n_scales is None else check_positive_int(n_scales, "n_scales")
    lo = check_positive_int(n_orientations, "n_orientations")
    chans, out_side = scattering_shape(side, j, lo)
    g = _groups(chans) if n_groups is None else check_positive_int(n_groups, "n_groups")
    if chans % g:
        raise ValueError(f"n_groups must divide the {chans} scattering channels, got {g}")
    bs = check_positive_int(batch_size, "batch_size")
    transform = _scattering(side, j, lo)
    out = np.empty((x.shape[0], chans * out_side * out_side), dtype=np.float32)
    with torch.no_grad():
        for start in range(0, x.shape[0], bs):
            s = transform(torch.from_numpy(x[start : start + bs]))  # (b, K, h, w)
            out[start : start + len(s)] = F.group_norm(s, g).flatten(1).numpy()
    return out


#: Images below this side get their pixels beside the (one-scale) scattering features.
SMALL_IMAGE_SIDE = 16


def fixed_features(images) -> np.ndarray:
    """The features + linear head family's inputs: a fixed, per-example function of each image.

    Images of :data:`SMALL_IMAGE_SIDE` pixels or more: :func:`scatter_features` (Tramèr and
    Boneh's J = 2). Smaller images (8×8 digits): the pixels beside the J = 1 scattering
    features scaled by 1/3 (their norm, ``sqrt(144)/3 = 4``, is then that of a half-inked 8×8
    image). Chosen on the public 8×8 glyph surrogates only (``docs/how-to/training.md``): pixels won
    on unshifted glyphs (DP-SGD 0.860 against 0.803), scattering on shifted ones (0.726 against
    0.480); both together were best or close to it on each (0.897, 0.702).

    Examples
    --------
    >>> fixed_features(np.zeros((2, 8, 8))).shape, fixed_features(np.zeros((2, 28, 28))).shape
    ((2, 208), (2, 3969))
    """
    x = np.asarray(images, dtype=np.float32)
    if x.ndim == 4 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"images must have shape (n, H, W) with H == W, got {x.shape}")
    if x.shape[1] >= SMALL_IMAGE_SIDE:
        return scatter_features(x)
    flat = x.reshape(len(x), -1)
    return np.concatenate([flat, scatter_features(x) / np.float32(3.0)], axis=1)


def synthetic_images(
    n: int,
    *,
    n_classes: int = 10,
    side: int = 8,
    noise: float = 0.1,
    jitter: float = 0.03,
    seed: int = 0,
    max_shift: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Public synthetic stroke images: the recipe's tuning data (never a reported data set).

    Each class is three random line segments (its "glyph", drawn from ``seed``); each example
    jitters the segment ends, shifts the glyph by up to ``max_shift`` pixels (default
    ``side // 8``), scales its ink and
    adds Gaussian pixel noise, clipped to [0, 1]. Balanced classes. (Test data: drawn with
    numpy's generator, not a privacy mechanism.)

    Examples
    --------
    >>> x, y = synthetic_images(20, side=8)
    >>> x.shape, y.shape, float(x.min()) >= 0
    ((20, 8, 8), (20,), True)
    """
    n = check_positive_int(n, "n")
    rng = np.random.default_rng(seed)
    glyph_rng = np.random.default_rng([seed, 7])
    ends = glyph_rng.uniform(0.15, 0.85, size=(n_classes, 3, 2, 2))
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    e = ends[y] + rng.normal(0, jitter, size=(n, 3, 2, 2))
    sh = side // 8 if max_shift is None else check_positive_int(max_shift, "max_shift", minimum=0)
    shift = rng.integers(-sh, sh + 1, size=(n, 1, 2)) / side
    grid = (np.arange(side) + 0.5) / side
    py, px = np.meshgrid(grid, grid, indexing="ij")
    pts = np.stack([py.ravel(), px.ravel()], axis=1)  # (P, 2)
    img = np.zeros((n, pts.shape[0]))
    width = 0.6 / side + 0.04
    for s in range(3):
        a, b = e[:, s, 0] + shift[:, 0], e[:, s, 1] + shift[:, 0]  # (n, 2)
        ab = b - a
        t = np.einsum("npk,nk->np", pts[None] - a[:, None], ab) / (ab * ab).sum(1)[:, None]
        t = np.clip(t, 0, 1)
        d = np.linalg.norm(pts[None] - (a[:, None] + t[..., None] * ab[:, None]), axis=2)
        img = np.maximum(img, np.exp(-((d / width) ** 2)))
    ink = rng.uniform(0.6, 1.0, size=(n, 1))
    img = img * ink + rng.normal(0, noise, size=img.shape)
    return np.clip(img, 0, 1).reshape(n, side, side).astype(np.float32), y.astype(np.int64)
