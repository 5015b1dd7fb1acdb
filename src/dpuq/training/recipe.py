"""The data-free training recipe: every "auto" setting of :func:`train_classifier`.

:func:`auto_recipe` is a pure function of public quantities only: the number of training
examples ``N`` (public under replace-one), the target ``(ε, δ)``, the neighbouring relation,
the model's parameter count and the number of classes. It never sees the data, so choosing
hyperparameters with it costs no privacy (a test checks that permuted or other data of the same
size give the same recipe). Its rules, and where each comes from:

- **Normalised ("automatic") clipping**, ``C = 1`` (Bu, Wang, Zha, Karypis, NeurIPS 2023,
  "Automatic clipping", AUTO-S with γ = 0.01): every per-example gradient is rescaled to
  ``C·g/(||g|| + γ)``, so the update no longer depends on ``C`` and only the learning rate is
  left; the sensitivity is still ``C`` (Opacus clips at ``C`` after it).
- **Many steps at a fixed noise per averaged gradient** (Sander, Stock, Sablayrolles, ICML
  2023, "TAN without a burn"): by the central limit theorem of GDP the noise of the mean
  gradient ``σ/B`` at a given number of steps ``T`` is ``≈ sqrt(T)/(μ N)`` whatever the batch
  size, so the recipe fixes ``T`` (:data:`TARGET_STEPS`) and takes the batch from the compute
  budget (:data:`EXAMPLE_BUDGET` gradients), raising it when needed so that σ stays at least
  :data:`MIN_NOISE_MULTIPLIER` (below about 1 the subsampled Gaussian's accounting becomes
  inefficient). The floor was 2 until issue 35: at large ``N·ε`` it bound and cut a
  20,000-image run to 146 steps; with 1 it runs the planned 300, +0.01–0.02 accuracy on
  Fashion-MNIST *validation* images (training split, never the reported test split).
- **The learning rate from the noise of a step** (issue 35): with normalised clipping every
  per-example gradient has norm 1, so the mean update's signal is at most 1 while its noise
  has norm about ``R = (σ/B)·sqrt(P) ≈ sqrt(T·P)/(μN)`` (``P`` parameters; public). The rate
  is ``1/R`` within [:data:`LEARNING_RATE`, :data:`MAX_LEARNING_RATE`]: noisy steps (small
  ``N·ε``, many parameters: the digits demo, ``R ≈ 4``) keep the small rate tuned on the 8×8
  glyphs, quiet ones (20,000 images, tabular data at ``N = 5000``: ``R ≈ 0.1–0.25``) take
  larger steps, up to De et al.'s rate 4 — they are limited by the distance travelled
  (``rate × steps``), not by the noise. Chosen on public data only: Fashion-MNIST validation
  images and ``make_classification`` sets that are not reported (``docs/how-to/training.md``).
- **Large batches, many steps, weight averaging** (De, Berrada, Hayes, Smith, Balle 2022,
  "Unlocking high-accuracy differentially private image classification through scale"):
  no momentum, a constant learning rate, and the average of late iterates' weights
  (Polyak-Ruppert; their EMA) released for DP-SGD. Averaging is post-processing.
- **DP-SGLD** (Knolle et al. 2021) shares the batch, steps and clipping, and gets a
  Welling-Teh polynomial decay ``η_t = η_0 (1 + t/T)^(−1/2)`` (the rate falls to ~71%), the
  temperature calibrated to the budget (``"auto"``: the coldest that runs every step) and the
  posterior predictive average of late samples; a standard-normal prior (weight decay
  ``1/N``). With a constant rate it would be DP-SGD with iterate averaging exactly.
- **Augmentation multiplicity** (De et al. 2022, Section 3: average each example's gradient
  over ``K`` augmentations before clipping; :mod:`dpuq.training.augment`) is an explicit
  option of :func:`dpuq.training.train_classifier` and off by default: with a linear head on
  pixels it lost accuracy on every public surrogate (``docs/how-to/training.md``).
- Non-private SGD: momentum 0.9, batch ``min(128, N/4)``, rate 0.05, flat (no) clipping.

Model choice (group normalisation instead of batch norm; fixed features plus a linear head for
small data, Tramèr and Boneh 2021) is the caller's: :mod:`dpuq.training.features` and
:func:`dpuq.training.choose_model_family`.

The constants were tuned on public data that dpuq does not report on: the synthetic images of
:func:`dpuq.training.features.synthetic_images` (8×8 and 28×28), Fashion-MNIST *validation*
images (held out of the training split; the reported figures use its test split) and
``make_classification`` draws that no table reports; never on digits or on a reported test
set: see ``docs/how-to/training.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dpuq._validation import check_epsilon, check_in_open_unit, check_positive_int
from dpuq.privacy.report import Relation
from dpuq.training.schedules import PolynomialDecay

__all__ = [
    "AUTO",
    "CLIPPING",
    "EXAMPLE_BUDGET",
    "LEARNING_RATE",
    "MAX_LEARNING_RATE",
    "MIN_NOISE_MULTIPLIER",
    "TARGET_STEPS",
    "Recipe",
    "auto_recipe",
    "step_noise_ratio",
]

#: Clipping rules: Opacus' flat clipping ``g·min(1, C/||g||)``, or normalised ("automatic")
#: clipping ``g·C/(||g|| + γ)`` (Bu, Wang, Zha, Karypis, NeurIPS 2023, AUTO-S).
CLIPPING = ("flat", "normalized")
#: The value that asks :func:`train_classifier` for the recipe's setting.
AUTO = "auto"
#: Steps ``T`` of a private run (TAN: quality at a fixed σ/B is set by the number of steps).
TARGET_STEPS = 300
#: Per-example gradients computed in a run (compute budget), scaled down for large models.
EXAMPLE_BUDGET = 400_000
#: Epoch bounds of the compute budget.
MIN_EPOCHS, MAX_EPOCHS = 5.0, 200.0
#: Floor on the calibrated noise multiplier (efficiency of the subsampled accounting).
MIN_NOISE_MULTIPLIER = 1.0
#: Learning rate of the private methods under normalised clipping (mean of unit vectors) for
#: noisy steps (``R >= 1/LEARNING_RATE``); tuned on the 8×8 glyphs (issue 24).
LEARNING_RATE = 0.5
#: The largest rate (quiet steps, ``R <= 1/MAX_LEARNING_RATE``): De et al. 2022's rate 4 at
#: ``C = 1``; Fashion-MNIST validation images: 4 best of 0.5/1/2/4 (issue 35).
MAX_LEARNING_RATE = 4.0
#: Late iterates averaged, and the fraction of the steps before the first one.
AVERAGED_ITERATES, AVERAGING_START = 20, 0.5
#: DP-SGLD: the rate's decay scale as a fraction of the planned steps, the decay's power
#: (Welling and Teh's γ) and the prior's std.
SGLD_DECAY_SCALE, SGLD_DECAY_POWER, SGLD_PRIOR_STD = 1.0, 0.5, 1.0
#: DP-SGLD's average of late samples: "predictive" (posterior predictive) or "weights".
SGLD_AVERAGING = "predictive"
#: DP-SGD's Gaussian prior std (weight decay ``1/(N std²)``); None: no prior.
DPSGD_PRIOR_STD: float | None = None
#: Largest sampling rate B/N.
MAX_SAMPLE_RATE = 0.5


@dataclass(frozen=True)
class Recipe:
    """Settings of one training run, each with the rule that gave it (``sources``)."""

    epochs: float
    batch_size: int
    learning_rate: Any
    max_grad_norm: float
    clipping: str
    momentum: float
    iterate_averaging: int
    averaging: str
    averaging_start: float
    prior_std: float | None = None
    temperature: str | None = None
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def as_kwargs(self) -> dict[str, Any]:
        """The settings as keyword arguments of :func:`train_classifier`."""
        out = {
            k: getattr(self, k)
            for k in (
                "epochs", "batch_size", "learning_rate", "max_grad_norm", "clipping",
                "momentum", "iterate_averaging", "averaging", "averaging_start", "prior_std",
            )
        }  # fmt: skip
        if self.temperature is not None:
            out["temperature"] = self.temperature
        return out


def step_noise_ratio(steps: float, n_params: int, mu: float, n: int) -> float:
    """``R ≈ sqrt(T·P)/(μN)``: the norm of a step's noise against that of its signal (≤ 1).

    By the GDP central limit (TAN) the mean gradient's noise is ``σ/B ≈ sqrt(T)/(μN)`` per
    coordinate, ``sqrt(P)`` coordinates; normalised clipping bounds the signal by 1.

    Examples
    --------
    >>> round(step_noise_ratio(300, 39_700, 0.72, 20_000), 2)
    0.24
    """
    return math.sqrt(steps * n_params) / (mu * n)


def _learning_rate(ratio: float) -> float:
    return float(min(MAX_LEARNING_RATE, max(LEARNING_RATE, 1.0 / ratio)))


def _epochs(n: int, n_params: int) -> float:
    scale = max(1.0, n_params / 30_000) ** 0.5  # larger models: fewer passes per second
    return float(min(MAX_EPOCHS, max(MIN_EPOCHS, EXAMPLE_BUDGET / (n * scale))))


def auto_recipe(
    method: str,
    *,
    n_samples: int,
    epsilon: float | None = None,
    delta: float | None = None,
    relation: Relation | str = Relation.REPLACE_ONE,
    n_params: int,
    n_classes: int,
    task: str = "classification",
) -> Recipe:
    """The recipe's settings for one run, from public quantities only (module docstring).

    Parameters
    ----------
    method : {"sgd", "dpsgd", "dpsgld"}
    n_samples : int
        ``N``, the number of training examples (public under replace-one).
    epsilon, delta : float
        The target budget (private methods).
    relation : {"replace-one", "add/remove-one"}
    n_params : int
        Trainable parameters of the model.
    n_classes : int
    task : {"classification", "regression"}, default "classification"
        Regression keeps the small rate :data:`LEARNING_RATE`: under normalised clipping a
        squared error's update has norm 1 however small the residual, so the rate sets how
        far the iterates stay from the fit (a larger one lost R² 0.9 → 0.1 on a linear test
        signal); the rule's "quiet steps can be longer" holds for the classification loss.

    Returns
    -------
    Recipe

    Examples
    --------
    >>> r = auto_recipe("dpsgd", n_samples=20_000, epsilon=1.0, delta=1e-5, n_params=26_000,
    ...                 n_classes=10)
    >>> r.clipping, r.momentum, r.averaging
    ('normalized', 0.0, 'weights')
    >>> r.batch_size == auto_recipe("dpsgd", n_samples=20_000, epsilon=1.0, delta=1e-5,
    ...                             n_params=26_000, n_classes=10).batch_size
    True
    """
    from dpuq.privacy.accounting import gdp_mu_for_budget

    if method not in ("sgd", "dpsgd", "dpsgld"):
        raise ValueError(f"method must be one of ('sgd', 'dpsgd', 'dpsgld'), got {method!r}")
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    n = check_positive_int(n_samples, "n_samples", minimum=2)
    p_count = check_positive_int(n_params, "n_params")
    check_positive_int(n_classes, "n_classes", minimum=2)
    rel = Relation.coerce(relation)
    epochs = _epochs(n, p_count)
    if method == "sgd":
        batch = max(1, min(128, n // 4))
        return Recipe(
            epochs=min(epochs, 40.0), batch_size=batch, learning_rate=0.05, max_grad_norm=1.0,
            clipping="flat", momentum=0.9, iterate_averaging=0, averaging="weights",
            averaging_start=AVERAGING_START,
            sources={"all": "non-private SGD with momentum 0.9 (no privacy: no clipping/noise)"},
        )  # fmt: skip
    eps = check_epsilon(epsilon)
    d = check_in_open_unit(delta, "delta")
    mu = gdp_mu_for_budget(eps, d) / (2.0 if rel is Relation.REPLACE_ONE else 1.0)
    steps = float(TARGET_STEPS)
    batch = epochs * n / steps
    floor = MIN_NOISE_MULTIPLIER * mu * n / math.sqrt(steps)  # σ ≈ B sqrt(T) / (μ N)
    if batch < floor:  # keep the epochs, take fewer, larger batches: T = (E / (σ_min μ))²
        steps = max(1.0, (epochs / (MIN_NOISE_MULTIPLIER * mu)) ** 2)
        batch = epochs * n / steps
    batch_size = int(min(max(16, round(batch)), max(2, int(MAX_SAMPLE_RATE * n))))
    ratio = step_noise_ratio(epochs * n / batch_size, p_count, mu, n)
    rate = _learning_rate(ratio) if task == "classification" else LEARNING_RATE
    sources = {
        "clipping": "normalized, C = 1 (automatic clipping, Bu et al. NeurIPS 2023)",
        "epochs": f"compute budget: {EXAMPLE_BUDGET:,} per-example gradients, scaled by "
        f"1/sqrt(params/30k), within [{MIN_EPOCHS:g}, {MAX_EPOCHS:g}] epochs (De et al. 2022: "
        "many steps)",
        "batch_size": f"T = {TARGET_STEPS} steps from the compute budget (TAN, Sander et al. "
        f"2023), raised so that σ >= {MIN_NOISE_MULTIPLIER:g} by the GDP central limit",
        "learning_rate": (
            f"{rate:g} = 1/R within [{LEARNING_RATE:g}, {MAX_LEARNING_RATE:g}], R = "
            f"sqrt(T·P)/(μN) = {ratio:.3g} the noise of a step against its signal"
            if task == "classification"
            else f"{rate:g} (regression: the small rate, see auto_recipe's task)"
        )
        + "; no momentum (normalised clipping: one rate; De et al. 2022)",
        "averaging": "late-iterate averaging (De et al. 2022's EMA; post-processing)",
    }
    common = dict(
        epochs=epochs, batch_size=batch_size, max_grad_norm=1.0, clipping="normalized",
        momentum=0.0, iterate_averaging=AVERAGED_ITERATES, averaging_start=AVERAGING_START,
    )  # fmt: skip
    if method == "dpsgd":
        return Recipe(
            learning_rate=rate, averaging="weights", prior_std=DPSGD_PRIOR_STD,
            sources=sources, **common,
        )  # fmt: skip
    planned = max(1, round(epochs * n / batch_size))
    sources.update(
        learning_rate=f"Welling-Teh decay {rate:g}·(1 + t/T)^(-1/2) (Welling, Teh 2011; "
        f"{rate:g} = 1/R within [{LEARNING_RATE:g}, {MAX_LEARNING_RATE:g}], R = {ratio:.3g})",
        temperature="auto: the coldest that runs every planned step (Welling and Teh 2011)",
        averaging="posterior predictive average of late samples (Welling and Teh 2011)",
        prior_std="1 (standard-normal prior, weight decay 1/N)",
    )
    decay = PolynomialDecay(
        rate, gamma=SGLD_DECAY_POWER, scale=max(1.0, SGLD_DECAY_SCALE * planned)
    )
    return Recipe(
        learning_rate=decay, averaging=SGLD_AVERAGING, prior_std=SGLD_PRIOR_STD,
        temperature=AUTO, sources=sources, **common,
    )  # fmt: skip
