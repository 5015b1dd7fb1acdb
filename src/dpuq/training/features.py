"""Fixed (data-independent) image features for private training, and the model-family rule.

Tramèr and Boneh (ICLR 2021, "Differentially private learning needs better features (or much
more data)") show that at small ε and small data a linear model on fixed, hand-crafted
ScatterNet features (Oyallon and Mallat) beats end-to-end CNNs trained with DP-SGD: the
features cost no privacy and the linear head has few parameters to noise.
:func:`scatter_features` computes first-order scattering-like features: the modulus of a
fixed bank of complex Gabor (Morlet-like) filters at ``J`` scales and ``L`` orientations, then
a Gaussian low-pass and subsampling by ``2^J``, beside the low-pass of the image itself; each
example's feature vector is then standardised on its own (per-example, like group
normalisation: no statistic is shared between examples, so nothing about other people leaks
into anyone's features). The filters are built in numpy from closed forms; no data is used.
(Kymatio's ScatterNet would do the same with second-order coefficients, but its 0.3 release
fails to import through ``kymatio.torch`` on current SciPy.)

:func:`choose_model_family` is the public rule the demo uses to pick between the two families.
:func:`synthetic_images` is the public tuning data of the recipe (never digits or
Fashion-MNIST).
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import check_positive_int

__all__ = [
    "FEATURES_MAX_EXAMPLES",
    "choose_model_family",
    "gabor_bank",
    "scatter_features",
    "synthetic_images",
]

#: Below this many training examples per unit of ε, fixed features + a linear head.
FEATURES_MAX_EXAMPLES = 10_000


def choose_model_family(n_samples: int, epsilon: float) -> tuple[str, str]:
    """``("features", why)`` or ``("cnn", why)`` from public quantities (N and ε) only.

    Tramèr and Boneh (2021) found ScatterNet + linear better than end-to-end CNNs under DP
    unless the data is large: with ``N·ε`` below :data:`FEATURES_MAX_EXAMPLES` the CNN's many
    noisy parameters cannot be learned well, so the fixed features win.

    Examples
    --------
    >>> choose_model_family(800, 3.0)[0], choose_model_family(60_000, 1.0)[0]
    ('features', 'cnn')
    """
    n = check_positive_int(n_samples, "n_samples")
    if n * float(epsilon) < FEATURES_MAX_EXAMPLES:
        return "features", (
            f"N·ε = {n * float(epsilon):,.0f} < {FEATURES_MAX_EXAMPLES:,}: fixed scattering "
            "features + a linear head (Tramèr and Boneh 2021: at small data and ε fixed "
            "features beat end-to-end CNNs under DP; the head has few parameters to noise)"
        )
    return "cnn", (
        f"N·ε = {n * float(epsilon):,.0f} >= {FEATURES_MAX_EXAMPLES:,}: a small CNN trained end "
        "to end (enough people for its weights to be learned through the noise)"
    )


def gabor_bank(size: int, n_scales: int, n_orientations: int) -> np.ndarray:
    """Complex Gabor filters, zero-mean, shape ``(J·L, size, size)`` (closed form, no data).

    Scale ``j``: Gaussian envelope σ = 0.8·2^j pixels, centre frequency 3π/4 / 2^j.

    Examples
    --------
    >>> gabor_bank(5, 1, 4).shape
    (4, 5, 5)
    """
    r = np.arange(size) - (size - 1) / 2.0
    yy, xx = np.meshgrid(r, r, indexing="ij")
    out = []
    for j in range(n_scales):
        s, xi = 0.8 * 2**j, 0.75 * math.pi / 2**j
        env = np.exp(-(xx**2 + yy**2) / (2 * s * s))
        for k in range(n_orientations):
            th = math.pi * k / n_orientations
            wave = np.exp(1j * xi * (xx * math.cos(th) + yy * math.sin(th)))
            psi = env * wave
            psi = psi - env * (psi.sum() / env.sum())  # zero mean (Morlet correction)
            out.append(psi / np.abs(psi).sum())
    return np.stack(out)


def _gaussian(size: int, s: float) -> np.ndarray:
    r = np.arange(size) - (size - 1) / 2.0
    g = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * s * s))
    return g / g.sum()


def scatter_features(
    images, *, n_scales: int | None = None, n_orientations: int = 8, batch_size: int = 2048
) -> np.ndarray:
    """Fixed first-order scattering-like features of square grey images, per-example scaled.

    Parameters
    ----------
    images : array of shape (n, H, W) or (n, 1, H, W), values in [0, 1]
    n_scales : int, optional
        ``J``; default 1 for images of 16 pixels or less, 2 otherwise.
    n_orientations : int, default 8
    batch_size : int, default 2048

    Returns
    -------
    ndarray of shape (n, (1 + J·L)·(H/2^J)²), float32
        Each row standardised to mean 0 and variance 1 over its own coordinates.

    Examples
    --------
    >>> scatter_features(np.zeros((2, 8, 8))).shape
    (2, 144)
    """
    import torch
    import torch.nn.functional as F

    x = np.asarray(images, dtype=np.float32)
    if x.ndim == 4 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 3 or x.shape[1] != x.shape[2]:
        raise ValueError(f"images must have shape (n, H, W) with H == W, got {x.shape}")
    side = x.shape[1]
    j = n_scales if n_scales is not None else (1 if side <= 16 else 2)
    j = check_positive_int(j, "n_scales")
    size = 2 * (2 ** (j + 1)) + 1
    bank = gabor_bank(size, j, n_orientations)
    w = torch.as_tensor(np.concatenate([bank.real, bank.imag])[:, None], dtype=torch.float32)
    low = torch.as_tensor(_gaussian(size, 0.8 * 2**j)[None, None], dtype=torch.float32)
    stride, pad, n_filt = 2**j, size // 2, bank.shape[0]
    out = []
    with torch.no_grad():
        for start in range(0, x.shape[0], batch_size):
            xb = torch.as_tensor(x[start : start + batch_size, None])
            z = F.conv2d(xb, w, padding=pad)
            mod = torch.sqrt(z[:, :n_filt] ** 2 + z[:, n_filt:] ** 2 + 1e-8)
            chans = torch.cat([xb, mod], dim=1)
            c = chans.shape[1]
            pooled = F.conv2d(chans, low.expand(c, 1, -1, -1), padding=pad, groups=c, stride=stride)
            f = pooled.flatten(1)
            f = (f - f.mean(dim=1, keepdim=True)) / (f.std(dim=1, keepdim=True) + 1e-6)
            out.append(f.numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)


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
