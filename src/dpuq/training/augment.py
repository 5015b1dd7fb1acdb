"""Augmentation multiplicity for DP training (De et al. 2022, Section 3).

De, Berrada, Hayes, Smith and Balle (2022, "Unlocking high-accuracy differentially private
image classification through scale", Section 3) make each example's per-example gradient the
AVERAGE over ``K`` random augmentations of that example, taken BEFORE clipping. One example
still contributes one clipped vector, so the sensitivity (``C``) and the accounting (Poisson
sampling of examples, σ) are unchanged; only the variance of the signal falls.

Here the augmentations are public random translations by up to one pixel in each direction,
with zero padding (no flips: digits and glyphs are not mirror-symmetric). The training loop
feeds ``B·K`` augmented inputs (:func:`random_translations`, copies of an example adjacent),
and :func:`average_grad_samples` reshapes each parameter's Opacus ``grad_sample`` from
``(B·K, ...)`` to ``(B, K, ...)`` and averages over ``K`` before the optimiser clips. The
translations are drawn with torch from a generator derived from the training seed: they are
not privacy noise (the same seed gives the same model).
"""

from __future__ import annotations

import torch
from torch import nn

from dpuq._validation import check_positive_int

__all__ = [
    "AUGMENTATION_MULTIPLICITY",
    "MAX_SHIFT",
    "average_grad_samples",
    "check_multiplicity",
    "random_translations",
]

#: ``K`` of the ``"auto"`` rule for image-shaped inputs (``x.ndim >= 3``: (N, H, W) or
#: (N, C, H, W)); 1 (off) for any other input.
AUGMENTATION_MULTIPLICITY = 1
#: Largest translation, in pixels, along each image axis.
MAX_SHIFT = 1


def check_multiplicity(value, x_ndim: int) -> int:
    """``augmentation_multiplicity`` as an int ``K >= 1`` (``"auto"``: the public rule).

    Explicit ``K > 1`` needs image-shaped inputs (``x_ndim >= 3``, the batch axis included).

    Examples
    --------
    >>> check_multiplicity("auto", 2), check_multiplicity(4, 3)
    (1, 4)
    >>> check_multiplicity(0, 3)
    Traceback (most recent call last):
    ...
    ValueError: augmentation_multiplicity must be an integer >= 1 (or 'auto'), got 0
    """
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(
                f"augmentation_multiplicity must be an integer >= 1 (or 'auto'), got {value!r}"
            )
        return AUGMENTATION_MULTIPLICITY if x_ndim >= 3 else 1
    try:
        k = check_positive_int(value, "augmentation_multiplicity")
    except (TypeError, ValueError):
        raise ValueError(
            f"augmentation_multiplicity must be an integer >= 1 (or 'auto'), got {value!r}"
        ) from None
    if k > 1 and x_ndim < 3:
        raise ValueError(
            "augmentation_multiplicity > 1 needs image-shaped inputs (N, H, W) or (N, C, H, W) "
            f"(translations); got inputs with {x_ndim} dimensions"
        )
    return k


def random_translations(
    x: torch.Tensor, k: int, generator: torch.Generator, max_shift: int = MAX_SHIFT
) -> torch.Tensor:
    """``K`` randomly translated copies of each image, zero padded: shape ``(B·K, ...)``.

    Rows ``i·K .. i·K + K − 1`` are the copies of ``x[i]``; each is shifted by an integer
    ``(dy, dx)``, uniform in ``[−max_shift, max_shift]²``, along the last two axes.

    Examples
    --------
    >>> x = torch.arange(4.0).reshape(1, 2, 2)
    >>> out = random_translations(x, 3, torch.Generator().manual_seed(0))
    >>> out.shape, bool((out.sum((1, 2)) <= x.sum()).all())
    (torch.Size([3, 2, 2]), True)
    """
    rep = x.repeat_interleave(k, dim=0)
    if rep.shape[0] == 0 or max_shift == 0:
        return rep
    m, (h, w) = max_shift, rep.shape[-2:]
    shifts = torch.randint(-m, m + 1, (rep.shape[0], 2), generator=generator).to(rep.device)
    padded = nn.functional.pad(rep, (m, m, m, m))
    rows = (torch.arange(h, device=rep.device)[None, :] + m - shifts[:, :1]).view(
        -1, *[1] * (rep.ndim - 3), h, 1
    )
    cols = (torch.arange(w, device=rep.device)[None, :] + m - shifts[:, 1:]).view(
        -1, *[1] * (rep.ndim - 3), 1, w
    )
    lead = rep.shape[1:-2]
    rows = rows.expand(-1, *lead, h, w + 2 * m)
    out = torch.gather(padded, -2, rows)
    return torch.gather(out, -1, cols.expand(-1, *lead, h, w))


def average_grad_samples(model: nn.Module, k: int) -> None:
    """Average each parameter's ``grad_sample`` over the ``K`` copies of each example.

    ``(B·K, ...) -> (B, ...)``, in place, before the optimiser clips: one example still
    contributes one clipped vector (sensitivity unchanged). Opacus' mean-reduced per-sample
    gradients are each row's own loss gradient, so the result is the mean over augmentations.
    """
    for p in model.parameters():
        gs = getattr(p, "grad_sample", None)
        if gs is not None:
            p.grad_sample = gs.reshape(gs.shape[0] // k, k, *gs.shape[1:]).mean(1)
