"""DP-SGLD as an Opacus optimizer: DP-SGD whose Gaussian noise is Langevin noise.

Privacy-critical: this module (with Opacus' per-sample gradients and clipping, and
:mod:`dpuq.privacy.accounting`) is what makes training private. Needs ``torch`` and ``opacus``.
"""

from __future__ import annotations

import math

import torch
from opacus.optimizers import DPOptimizer

from dpuq.privacy.accounting import dpsgld_noise_multiplier
from dpuq.training.recipe import CLIPPING

__all__ = ["CLIPPING", "NORMALIZED_STABILITY", "DPSGDOptimizer", "DPSGLDOptimizer"]

#: AUTO-S's stability constant γ (Bu et al. 2023 use 0.01).
NORMALIZED_STABILITY = 0.01


def _normalized_clip_and_accumulate(optimizer: DPOptimizer, gamma: float) -> None:
    """Clip and sum the per-example gradients with AUTO-S's factor, in one pass (issue 35).

    Each example's gradient ``g`` enters the sum as ``f·g`` with
    ``f = C/(||g|| + γ) · min(1, C/(C·||g||/(||g|| + γ) + 1e-6))``: the normalisation
    ``C·g/(||g|| + γ)`` followed by Opacus' own clipping of the normalised gradient at ``C``
    (Opacus' factor ``min(1, C/(norm + 1e-6))``, written out with the normalised norm). So each
    term's norm is at most ``C`` whatever the normalisation does, and the sensitivity is
    Opacus' ``C``, unchanged. The sum is the one the two stages gave (normalise in place, then
    Opacus clips and sums), with one pass over the per-example gradients instead of three
    (the norms once, no in-place rescaling): on a 3,969 → 10 head, 1.21× a plain Opacus
    step before, flat clipping's time now (``benchmarks/bench_step_time.py``).
    """
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    samples = optimizer.grad_samples
    clip = optimizer.max_grad_norm
    if len(samples[0]) == 0:
        factor = torch.zeros((0,), device=samples[0].device)
    else:
        norms = torch.stack([g.reshape(len(g), -1).norm(2, dim=-1) for g in samples], dim=1)
        norms = norms.norm(2, dim=1)
        scale = clip / (norms + gamma)
        factor = scale * (clip / (scale * norms + 1e-6)).clamp(max=1.0)
    for p in optimizer.params:
        _check_processed_flag(p.grad_sample)
        g = optimizer._get_flat_grad_sample(p).to(p.dtype)
        grad = torch.einsum("i,i...", factor.to(g.device).to(p.dtype), g)
        p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad
        _mark_as_processed(p.grad_sample)


class DPSGDOptimizer(DPOptimizer):
    """Opacus' DP-SGD optimizer with a choice of clipping: flat (Opacus) or normalised.

    ``clipping="normalized"`` rescales every per-example gradient to ``C·g/(||g|| + γ)``
    before Opacus clips at ``C`` (a no-op then) and adds ``N(0, σ² C² I)`` to the sum: the
    automatic clipping of Bu et al. (NeurIPS 2023), whose update does not depend on ``C`` up to
    the learning rate, so ``C`` needs no tuning. Sensitivity and noise are Opacus' (``C``,
    ``σC``), so the privacy accounting is that of DP-SGD, unchanged.

    Examples
    --------
    >>> from opacus import GradSampleModule
    >>> net = GradSampleModule(torch.nn.Linear(3, 2))
    >>> opt = DPSGDOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), noise_multiplier=1.0,
    ...                      max_grad_norm=1.0, expected_batch_size=4, clipping="normalized")
    >>> opt.clipping
    'normalized'
    """

    def __init__(self, optimizer, *, clipping: str = "flat", **kwargs) -> None:
        if clipping not in CLIPPING:
            raise ValueError(f"clipping must be one of {CLIPPING}, got {clipping!r}")
        self.clipping = clipping
        kwargs.setdefault("loss_reduction", "mean")
        super().__init__(optimizer, **kwargs)

    def clip_and_accumulate(self) -> None:
        """Normalise and clip at ``C`` (when asked: :func:`_normalized_clip_and_accumulate`), or let
        Opacus clip; then sum."""
        if self.clipping == "normalized":
            _normalized_clip_and_accumulate(self, NORMALIZED_STABILITY)
        else:
            super().clip_and_accumulate()


class DPSGLDOptimizer(DPOptimizer):
    """DP-SGLD (Knolle et al. 2021): Opacus' DP-SGD with Langevin noise and pre-noise.

    Each step, on the per-example gradients ``g_i`` that Opacus' ``GradSampleModule``
    computes for a Poisson-sampled batch (rate ``p = B / N``):

    1. pre-noise ``g̃_i = g_i + N(0, pre_noise_scale² I)`` (Chen, Wu, Hong 2020);
    2. clip ``clip_C(g̃_i)`` (Opacus);
    3. add ``N(0, σ_t² C² I)`` to their sum, with
       ``σ_t = (B / C) · sqrt(2 T / (η_t N))`` from the current learning rate ``η_t``
       (read from the wrapped optimizer, so any torch LR scheduler works);
    4. divide by ``B`` and take the wrapped SGD step (its ``weight_decay`` is the Gaussian prior
       ``N(0, s0²)`` when set to ``1 / (N s0²)``).

    The parameter-space noise is then ``η_t σ_t C / B = sqrt(2 η_t T / N)``: SGLD on the tempered
    posterior ``p(θ | D)^(1/T)``.

    **Privacy.** Input domain: a training set of ``N`` examples; neighbouring relation:
    replace-one (``N`` public; a swapped record moves the clipped sum by at most ``2C``) or
    add/remove-one (moves it by ``C``), as the accountant is told: dp-accounting analyses the
    Poisson-subsampled Gaussian under each. Pre-noise is applied to each example's own
    gradient before clipping, so it does not change the sensitivity. Step ``t`` is the
    Poisson-subsampled Gaussian mechanism with noise multiplier ``σ_t`` (Abadi et al. 2016);
    the steps compose adaptively and are accounted by :mod:`dpuq.privacy.accounting` from
    :attr:`noise_history` (PLD, rigorous; GDP beside it). The guarantee holds only with
    Poisson sampling at rate ``p`` (Opacus' ``DPDataLoader`` or ``UniformWithReplacementSampler``)
    and ``expected_batch_size = p N``.

    Parameters
    ----------
    optimizer : torch.optim.SGD
        Plain SGD (``momentum=0``: the Langevin noise scale assumes it) over the parameters of an
        Opacus ``GradSampleModule``. One learning rate for all parameter groups.
    max_grad_norm : float
        Clipping norm ``C``.
    expected_batch_size : float
        ``B = p N``.
    n_samples : int
        ``N``, the training set size.
    temperature : float
        ``T > 0``.
    pre_noise_scale : float, default 0
        Standard deviation of the pre-noise added to every per-example gradient coordinate.
    generator : torch.Generator, optional
        Source of the noise (default: torch's global generator).
    clipping : {"flat", "normalized"}, default "flat"
        As in :class:`DPSGDOptimizer` (normalised: Bu et al. 2023; Opacus still clips at C).

    Attributes
    ----------
    noise_history : list of float
        ``σ_t`` of every step taken (public: a function of the hyperparameters only).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        max_grad_norm: float,
        expected_batch_size: float,
        n_samples: int,
        temperature: float,
        pre_noise_scale: float = 0.0,
        generator: torch.Generator | None = None,
        clipping: str = "flat",
    ) -> None:
        if clipping not in CLIPPING:
            raise ValueError(f"clipping must be one of {CLIPPING}, got {clipping!r}")
        self.clipping = clipping
        if not isinstance(optimizer, torch.optim.SGD):
            raise TypeError(
                f"optimizer must be torch.optim.SGD (DP-SGLD is SGD plus Langevin noise), "
                f"got {type(optimizer).__name__}"
            )
        for group in optimizer.param_groups:
            if group.get("momentum", 0) != 0 or group.get("nesterov", False):
                raise ValueError(
                    "optimizer: DP-SGLD needs momentum=0 (the noise scale sqrt(2 η T / N) "
                    f"assumes plain SGD), got momentum={group.get('momentum')}"
                )
        lrs = {float(g["lr"]) for g in optimizer.param_groups}
        if len(lrs) != 1:
            raise ValueError(f"optimizer: all parameter groups need one learning rate, got {lrs}")
        pre = float(pre_noise_scale)
        if not math.isfinite(pre) or pre < 0:
            raise ValueError(f"pre_noise_scale must be finite and >= 0, got {pre_noise_scale!r}")
        self.n_samples = int(n_samples)
        self.temperature = float(temperature)
        self.pre_noise_scale = pre
        self.noise_history: list[float] = []
        self._expected_b = float(expected_batch_size)
        self._clip = float(max_grad_norm)
        sigma0 = self.current_noise_multiplier(optimizer.param_groups[0]["lr"])
        super().__init__(
            optimizer,
            noise_multiplier=sigma0,
            max_grad_norm=max_grad_norm,
            expected_batch_size=expected_batch_size,
            loss_reduction="mean",
            generator=generator,
        )

    def current_noise_multiplier(self, learning_rate: float | None = None) -> float:
        """``σ_t`` for the current (or the given) learning rate; ValueError if not > 0."""
        lr = self.param_groups[0]["lr"] if learning_rate is None else learning_rate
        return dpsgld_noise_multiplier(
            batch_size=self._expected_b,
            max_grad_norm=self._clip,
            temperature=self.temperature,
            learning_rate=float(lr),
            n_samples=self.n_samples,
        )

    def clip_and_accumulate(self) -> None:
        """Pre-noise each per-example gradient, then let Opacus clip and sum."""
        if self.pre_noise_scale > 0:
            for p in self.params:
                gs = self._get_flat_grad_sample(p)
                noise = torch.randn(
                    gs.shape, generator=self.generator, device=gs.device, dtype=gs.dtype
                )
                # grad_sample is this step's own buffer (Poisson sampling forbids accumulation)
                p.grad_sample = gs.add_(noise, alpha=self.pre_noise_scale)
        if self.clipping == "normalized":
            _normalized_clip_and_accumulate(self, NORMALIZED_STABILITY)
        else:
            super().clip_and_accumulate()

    def pre_step(self, closure=None) -> bool:
        """Set ``σ_t`` from the current learning rate, then clip, noise and scale (Opacus)."""
        self.noise_multiplier = self.current_noise_multiplier()
        stepped = super().pre_step(closure)
        if stepped:
            self.noise_history.append(float(self.noise_multiplier))
        return stepped
