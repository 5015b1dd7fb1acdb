"""The model of :class:`dpuq.DPClassifier` / :class:`dpuq.DPRegressor`, from public quantities.

``model="auto"`` picks a network from what is public before any training: the input's shape
(tabular ``(N, d)`` or images ``(N, H, W)`` / ``(N, C, H, W)``), the number of training people
``N`` (public under the replace-one relation, the library's default: dpuq's stance, as in
:mod:`dpuq.training.recipe`; under add/remove-one ``N`` is not public and the choice uses the
same number as the recipe does, which the report says), ``(ε, δ)`` and the number of outputs.
It never reads a data value, so the choice costs no privacy; the privacy report says which
model was chosen and why.

- **Tabular** inputs get a linear model (logistic regression for a classifier, least squares
  for a regressor), zero-initialised (the loss is convex: no random start is needed, and the
  fit is the same for every seed but the noise). A linear model has the fewest weights to noise
  (``d·K``): DP-SGD's noise grows with the parameter count, and private linear models are the
  standard strong baseline for tabular data (Chaudhuri, Monteleoni and Sarwate, JMLR 2011;
  Tramèr and Boneh, ICLR 2021, for linear models on fixed features). ``model="mlp"`` asks for
  a small network instead (one hidden layer of :data:`MLP_WIDTH` tanh units).
- **Images** follow the recipe's image rule, :func:`dpuq.training.features.choose_model_family`
  (fixed scattering features + a linear head at small ``N·ε``, a small CNN otherwise); this
  module calls it and adds nothing of its own.

Features are scaled by **declared public bounds** (:func:`check_feature_bounds`,
:func:`scale_features`), never by statistics of the data (a min, a mean or a standard
deviation of the training set would make every person's input depend on every other person,
and the released model would carry them). Values outside the bounds are clipped to them.
Without declared bounds the features are used as given, assumed already on a public scale
(the report says so). DP-SGD's privacy never depends on the bounds (it clips per-example
gradients); the bounds only make the optimisation well conditioned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = [
    "MLP_WIDTH",
    "MODELS",
    "ModelChoice",
    "check_feature_bounds",
    "choose_model",
    "scale_features",
]

#: The named models of ``model=``: ``"auto"`` (the rule), ``"linear"``, ``"mlp"`` (tabular),
#: ``"features"`` (scattering features + a linear head) and ``"cnn"`` (images).
MODELS = ("auto", "linear", "mlp", "features", "cnn")
#: Hidden units of ``model="mlp"``: a conventional small width (not tuned); one tanh layer,
#: bounded activations as Papernot et al. (AAAI 2021, "Tempered sigmoid activations for deep
#: learning with differential privacy") recommend under DP-SGD.
MLP_WIDTH = 64


@dataclass(frozen=True)
class ModelChoice:
    """The network to train, the kind of input transform it needs, and why it was chosen."""

    name: str
    network: nn.Module
    features: str  # "none" or "scattering" (the recipe's fixed image features)
    why: str


#: Largest magnitude of a declared bound (features, targets): the network computes in float32.
MAX_BOUND = 1e30


def check_feature_bounds(
    bounds, n_features: int, *, images: bool = False, name: str = "feature_bounds"
):
    """Declared public bounds as ``(low, high)`` float arrays of shape ``(d,)``, or None.

    ``bounds`` is None (no declared bounds), a pair of numbers (the same for every feature or
    pixel), a pair of sequences of length ``d``, or an array of shape ``(d, 2)``. Images take
    a pair of numbers only. Every low must be below its high and both finite.

    Examples
    --------
    >>> lo, hi = check_feature_bounds((0, 16), 3)
    >>> lo.tolist(), hi.tolist()
    ([0.0, 0.0, 0.0], [16.0, 16.0, 16.0])
    >>> check_feature_bounds([(0, 1), (5, 2)], 2)
    Traceback (most recent call last):
    ...
    ValueError: feature_bounds: each low must be below its high (feature 1 has 5 >= 2)
    """
    if bounds is None:
        return None
    try:
        arr = np.asarray(bounds, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be None, a pair (low, high) or an array of shape "
            f"(n_features, 2), got {bounds!r}"
        ) from None
    if arr.shape == (2,):
        lo, hi = np.full(n_features, arr[0]), np.full(n_features, arr[1])
    elif images:
        raise ValueError(f"{name} for images must be one pair (low, high), got shape {arr.shape}")
    elif arr.shape == (n_features, 2):
        lo, hi = arr[:, 0], arr[:, 1]
    elif arr.shape == (2, n_features):
        lo, hi = arr[0], arr[1]
    else:
        raise ValueError(
            f"{name} must be a pair (low, high) or have shape "
            f"(n_features, 2) = ({n_features}, 2), got shape {arr.shape}"
        )
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError(f"{name} must be finite")
    bad = np.flatnonzero(lo >= hi)
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"{name}: each low must be below its high (feature {j} has {lo[j]:g} >= {hi[j]:g})"
        )
    if max(np.abs(lo).max(), np.abs(hi).max()) > MAX_BOUND:
        raise ValueError(f"{name} must lie within ±{MAX_BOUND:g} (the network works in float32)")
    with np.errstate(all="ignore"):  # as the network would see them: float32 ends
        span = hi.astype(np.float32) - lo.astype(np.float32)
        tiny = ~(np.isfinite(1.0 / span) & (span > 0))
    if tiny.any():
        j = int(np.flatnonzero(tiny)[0])
        raise ValueError(
            f"{name}: low and high must differ in float32 (feature {j}: {lo[j]:g}, {hi[j]:g})"
        )
    return lo, hi


def scale_features(X: np.ndarray, bounds, *, images: bool = False) -> np.ndarray:
    """Clip ``X`` to the declared bounds and map them to [-1, 1] (tabular) or [0, 1] (images).

    A fixed per-feature affine map of each person's own values (no statistic of other
    people). ``bounds=None``: ``X`` as float32, unchanged.

    Examples
    --------
    >>> b = check_feature_bounds((0, 10), 2)
    >>> scale_features(np.array([[0.0, 20.0]]), b).tolist()
    [[-1.0, 1.0]]
    """
    if bounds is None:
        if np.abs(X).max(initial=0.0) > np.finfo(np.float32).max:  # the cast would overflow
            raise ValueError("X: values beyond float32's range; declare feature_bounds")
        return np.asarray(X, dtype=np.float32)
    x = np.asarray(X, dtype=np.float64)  # clipped first: a float32 cast could overflow
    lo, hi = bounds
    shape = (1, -1) if x.ndim == 2 else (1,) * x.ndim
    lo_b = np.asarray(lo[0] if x.ndim != 2 else lo, dtype=np.float64).reshape(shape)
    hi_b = np.asarray(hi[0] if x.ndim != 2 else hi, dtype=np.float64).reshape(shape)
    unit = ((np.clip(x, lo_b, hi_b) - lo_b) / (hi_b - lo_b)).astype(np.float32)
    return unit if images else (2.0 * unit - 1.0).astype(np.float32)


def _linear(n_in: int, n_out: int) -> nn.Module:
    net = nn.Linear(n_in, n_out)
    with torch.no_grad():  # convex loss: a zero start, the same for every seed
        net.weight.zero_()
        net.bias.zero_()
    return net


def _seeded(seed: int | None, build):
    """``build()`` with torch's initialisation drawn from ``seed`` (fresh entropy for None),
    leaving the global torch generator as it was."""
    with torch.random.fork_rng(devices=[]):
        if seed is None:
            torch.seed()
        else:
            torch.manual_seed(int(seed))
        return build()


def choose_model(
    model: Any,
    input_shape: tuple[int, ...],
    *,
    n_samples: int,
    epsilon: float,
    n_outputs: int,
    seed: int | None,
) -> ModelChoice:
    """The network for ``model`` ("auto" or a name of :data:`MODELS`) on inputs of
    ``input_shape`` (one example's shape), from public quantities only (module docstring).

    Examples
    --------
    >>> c = choose_model("auto", (30,), n_samples=5000, epsilon=1.0, n_outputs=2, seed=0)
    >>> c.name, c.features, sum(p.numel() for p in c.network.parameters())
    ('linear', 'none', 62)
    """
    from dpuq.training.features import SMALL_IMAGE_SIDE, choose_model_family, fixed_features
    from dpuq.training.models import small_cnn

    if not (isinstance(model, str) and model in MODELS):
        raise ValueError(f"model must be a torch.nn.Module or one of {MODELS}, got {model!r}")
    images = len(input_shape) >= 2
    if not images:
        d = int(input_shape[0])
        if model in ("features", "cnn"):
            raise ValueError(f"model={model!r} needs images (X of shape (N, H, W) or (N, C, H, W))")
        if model == "mlp":
            net = _seeded(
                seed,
                lambda: nn.Sequential(
                    nn.Linear(d, MLP_WIDTH), nn.Tanh(), nn.Linear(MLP_WIDTH, n_outputs)
                ),
            )
            why = f"asked for (model='mlp'): one hidden layer of {MLP_WIDTH} tanh units"
            return ModelChoice("mlp", net, "none", why)
        why = (
            "tabular input: a linear model on the (declared-bounds-scaled) features, the fewest "
            f"weights to noise ({d}·{n_outputs} + {n_outputs})"
            + (" (model='auto')" if model == "auto" else " (model='linear')")
        )
        return ModelChoice("linear", _linear(d, n_outputs), "none", why)
    if model == "mlp":
        raise ValueError("model='mlp' needs tabular input (X of shape (N, d))")
    shape = tuple(int(s) for s in input_shape)
    channels, side = (1, shape[0]) if len(shape) == 2 else (shape[0], shape[1])
    square = shape[-1] == shape[-2]
    family, why = choose_model_family(n_samples, epsilon)
    if model != "auto":
        family, why = (
            ("features" if model in ("features", "linear") else "cnn"),
            f"asked for ({model!r})",
        )
    grey_square = square and channels == 1
    if family == "features" and grey_square:
        n_feat = fixed_features(np.zeros((1, *shape[-2:]), dtype=np.float32)).shape[1]
        why = f"images: {why}; fixed scattering features ({n_feat}) + a linear head"
        if shape[-1] < SMALL_IMAGE_SIDE:
            why += f" (a {shape[-1]}×{shape[-1]} image: its pixels beside one-scale scattering)"
        return ModelChoice("features", _linear(n_feat, n_outputs), "scattering", why)
    if family == "features":
        why += "; the scattering features take square grey images only: a small CNN instead"
    if not square:
        raise ValueError(f"X: images must be square (H == W), got shape {shape}")
    net = _seeded(seed, lambda: small_cnn(n_outputs, image_size=side, in_channels=channels))
    return ModelChoice("cnn", net, "none", f"images: {why}; small CNN (dpuq.training.small_cnn)")


def image_inputs(x: np.ndarray, features: str) -> np.ndarray:
    """The network's input for images ``x`` (N, H, W) or (N, C, H, W) after scaling.

    ``"scattering"``: :func:`dpuq.training.features.fixed_features`, the features + linear
    head family's inputs (second-order scattering; under 16 pixels the pixels beside
    one-scale scattering), the same inputs as ``dpuq demo``'s models.
    """
    if features == "scattering":
        from dpuq.training.features import fixed_features

        return fixed_features(x)
    return x[:, None] if x.ndim == 3 else x


def input_note(bounds, images: bool) -> str:
    """What the report says about the inputs' scale."""
    if bounds is None:
        return "no feature_bounds declared: inputs used as given (assumed already on a public " + (
            "scale, pixels in [0, 1])" if images else "scale, e.g. in [-1, 1])"
        )
    lo, hi = bounds
    if np.all(lo == lo[0]) and np.all(hi == hi[0]):
        span = f"[{lo[0]:g}, {hi[0]:g}] for every {'pixel' if images else 'feature'}"
    else:
        span = f"per-feature bounds from {float(lo.min()):g} to {float(hi.max()):g}"
    target = "[0, 1]" if images else "[-1, 1]"
    return f"declared public feature_bounds {span}: clipped to them and mapped to {target}"
