"""One entry point for SGD, DP-SGD and DP-SGLD training of a PyTorch classifier (on Opacus).

The loop itself. Its parts live beside it: the settings, the recipe's defaults and their checks
(:mod:`dpuq.training.settings`), batches and data checks (:mod:`dpuq.training.batches`),
iterate averaging (:mod:`dpuq.training.averaging`), the noise plan and the privacy report
(:mod:`dpuq.training.privacy`). What the methods do and where the defaults come from:
``docs/how-to/training.md``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from dpuq._progress import progress
from dpuq._validation import _as_float
from dpuq.mechanisms.randomness import mark_seeded
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.training.augment import average_grad_samples, random_translations
from dpuq.training.averaging import (
    AVERAGING,
    IterateAverage,
    PosteriorAverage,
    average_iterates,
    snapshot_steps,
)
from dpuq.training.batches import (
    batches_private,
    batches_shuffled,
    check_label_range,
    torch_generator,
)
from dpuq.training.predict import predict_proba
from dpuq.training.privacy import plan_noise, private_training_report
from dpuq.training.recipe import AUTO
from dpuq.training.schedules import learning_rates
from dpuq.training.settings import METHODS, check_private_model, resolve_settings

__all__ = [
    "AVERAGING",
    "METHODS",
    "IterateAverage",
    "PosteriorAverage",
    "TrainingResult",
    "check_private_model",
    "predict_proba",
    "train_classifier",
]


class TrainingResult(NamedTuple):
    """What :func:`train_classifier` returns: ``model, report = train_classifier(...)``.

    Attributes
    ----------
    model : torch.nn.Module
        The user's model, trained in place, in eval mode, with Opacus' hooks removed; or an
        :class:`IterateAverage` of late iterates (``iterate_averaging > 0``, predictive), or the
        user's model holding the average weights (``averaging="weights"``).
    privacy_report : PrivacyReport
        The guarantee (ε by PLD, the primary figure; GDP's figure in ``details``), the steps
        run and why training stopped. For ``method="sgd"``: ε = inf (not private).
    """

    model: nn.Module
    privacy_report: PrivacyReport


def train_classifier(
    model: nn.Module,
    train_data,
    *,
    method: str,
    epsilon: float | None = None,
    delta: float | None = None,
    epochs: float | str = AUTO,
    batch_size: int | str = AUTO,
    learning_rate=AUTO,
    max_grad_norm: float | str = AUTO,
    clipping: str = AUTO,
    noise_multiplier: float | None = None,
    temperature: float | str | None = None,
    pre_noise_scale: float = 0.0,
    prior_std: float | str | None = AUTO,
    iterate_averaging: int | str = AUTO,
    averaging_start: float | str = AUTO,
    averaging: str = AUTO,
    augmentation_multiplicity: int | str = AUTO,
    momentum: float | str = AUTO,
    accountant: str = "pld",
    relation: Relation | str = Relation.REPLACE_ONE,
    loss_fn: nn.Module | None = None,
    random_state=None,
    show_progress: bool = True,
    posterior_samples: int | None = None,
    burn_in: float | None = None,
    ledger=None,
    dataset: str | None = None,
    task: str = "classification",
    world_size: int = 1,
    device="cpu",
) -> TrainingResult:
    """Train a classifier with SGD, DP-SGD or DP-SGLD on one code path (Opacus underneath).

    ``train_classifier(model, data, method="dpsgd", epsilon=3, delta=1e-5)`` trains well with
    nothing else: every setting left at ``"auto"`` comes from the data-free recipe
    (:func:`dpuq.training.recipe.auto_recipe`, public quantities only, so it costs no privacy).
    With your own ``learning_rate``, the optimiser settings' ``"auto"`` means the classic
    defaults. All three methods run the same loop for at most ``round(epochs · N /
    batch_size)`` steps; the private ones stop when the next step would exceed ``(epsilon,
    delta)`` under ``relation`` (the σ_t schedule is public, so the stop is planned in
    advance). The recipe's rules and sources, the three methods and averaging are explained in
    ``docs/how-to/training.md`` ("What train_classifier does").

    Parameters
    ----------
    model : torch.nn.Module
        Outputs logits of shape (batch, n_classes). Trained in place.
    train_data : (X, y) pair of arrays/tensors, or a torch Dataset of (x, y)
        Labels are integers in ``0..n_classes-1`` (checked against the model's output size).
    method : {"sgd", "dpsgd", "dpsgld"}
    epsilon, delta : float
        Target privacy (required for the private methods): ``epsilon > 0``, ``delta`` in (0, 1).
    epochs : float or "auto"
        Upper bound on training length, in passes over the data (> 0).
    batch_size : int or "auto"
        Expected batch size ``B`` (Poisson sampling) or the batch size (SGD).
    learning_rate : float, callable step -> rate, or "auto"
        E.g. :class:`dpuq.training.PolynomialDecay` (Welling and Teh's schedule).
    max_grad_norm : float or "auto" (1.0)
        Clipping norm ``C`` (private methods).
    clipping : {"auto", "flat", "normalized"}
        ``"flat"``: Opacus' ``g·min(1, C/||g||)``; ``"normalized"``: ``C·g/(||g|| + 0.01)``
        (Bu et al. 2023), sensitivity ``C`` either way.
    noise_multiplier : float, optional
        DP-SGD's σ; default: calibrated to the budget and planned steps.
    temperature : float or "auto"
        DP-SGLD's ``T > 0`` (default for ``"dpsgld"``: ``"auto"``). ``"auto"``: the smallest T
        whose planned schedule fits in the budget
        (:func:`dpuq.privacy.accounting.calibrate_temperature`), so the
        budget lasts exactly the planned epochs, like DP-SGD's calibrated σ.
    pre_noise_scale : float, default 0
        DP-SGLD's pre-noise standard deviation (per coordinate of each per-example gradient).
    prior_std : float, optional
        Standard deviation of a Gaussian prior on the weights (weight decay ``1/(N s0²)``),
        any method.
    iterate_averaging : int, default 0
        When > 0, average this many iterates, evenly spaced over the steps after
        ``averaging_start`` (any method; no extra privacy cost). For DP-SGLD this is posterior
        averaging.
    averaging_start : float, default 0.5
        Fraction of the steps run before the first averaged iterate, in [0, 1) (DP-SGLD's
        burn-in).
    averaging : {"predictive", "weights"}, default "predictive"
        ``"predictive"``: return an :class:`IterateAverage` (the mean of the iterates'
        predictive distributions; for DP-SGLD the posterior predictive). ``"weights"``: the
        user's model with the mean of the iterates' weights (Polyak-Ruppert averaging; one
        network at prediction time).
    augmentation_multiplicity : int or "auto"
        ``K``: each example's per-example gradient is the mean over ``K`` random one-pixel
        translations of it (zero padded), taken before clipping (De et al. 2022, Section 3):
        sensitivity and accounting unchanged (:mod:`dpuq.training.augment`). ``K > 1`` needs
        image-shaped inputs (N, H, W) or (N, C, H, W). ``"auto"``:
        :data:`dpuq.training.augment.AUGMENTATION_MULTIPLICITY` for image-shaped inputs, 1
        otherwise.
    momentum : float, default 0
        SGD momentum for ``"sgd"`` and ``"dpsgd"``; DP-SGLD requires 0.
    accountant : {"pld", "rdp", "gdp"}, default "pld"
        Which accountant decides the stop and gives ε. "gdp" is an approximation.
    relation : {"replace-one", "add/remove-one"}, default "replace-one"
        The neighbouring relation ``(epsilon, delta)`` is stated under (the report's
        ``relation``). Replace-one (``N`` public) is the relation of the rest of dpuq, so the
        training report composes with calibration and intervals without conversion.
    loss_fn : torch.nn.Module, optional
        Mean-reduced loss on (logits, labels); default cross-entropy.
    random_state : None, int or numpy.random.Generator
        Seeds batch sampling and noise. None: fresh OS entropy (use for real releases); a
        seeded run is marked ``seeded`` in its report (private only while the seed is secret).
    show_progress : bool, default True
        Progress bar over steps (tqdm, when installed).
    posterior_samples, burn_in : deprecated
        Former names of ``iterate_averaging`` and ``averaging_start``.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge the target ``(epsilon, delta)`` under ``relation`` to ``dataset``'s budget
        before training starts (a replace-one budget converts it, see :mod:`dpuq.privacy.ledger`),
        or refuse; ``method="sgd"`` cannot be charged (not private).
    task : {"classification", "regression"}, default "classification"
        ``"regression"``: ``y`` holds real-valued targets (float32) and the model one output
        per example, shape (batch, 1); the default loss is the mean squared error. Clipping,
        noise and accounting are the same (they never look at the loss). Use
        ``averaging="weights"`` (the predictive average is over softmax outputs).
    world_size : int, default 1
        Private training in ``world_size`` processes, started here or those of a ``torchrun``
        group; the accounting of one process (:mod:`dpuq.training.distributed`).
    device : "cpu", "cuda", "cuda:N" or "auto" (CUDA when available), default "cpu"

    Returns
    -------
    TrainingResult
        ``(model, privacy_report)``.

    Raises
    ------
    ValueError
        Bad ε/δ, schedules giving ``σ_t <= 0``, labels out of range, a model Opacus cannot make
        private (naming the layer).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 4)).astype("float32")
    >>> y = (X[:, 0] > 0).astype("int64")
    >>> model, report = train_classifier(
    ...     nn.Linear(4, 2), (X, y), method="dpsgd", epsilon=3.0, delta=1e-5, epochs=2,
    ...     batch_size=50, learning_rate=0.5, random_state=0, show_progress=False)
    >>> report.epsilon <= 3.0, str(report.relation)
    (True, 'replace-one')
    """
    call = dict(locals())  # the arguments, for the processes of world_size > 1
    from dpuq.training import distributed

    dev, ranks = distributed.resolve_device(device), distributed.check_world_size(world_size)
    if ranks > 1 and not distributed.in_process_group():
        return TrainingResult(*distributed.launch(train_classifier, call, ranks))
    procs = distributed.join_group(ranks)
    cfg = resolve_settings(
        model, train_data, method=method, epsilon=epsilon, delta=delta, epochs=epochs,
        batch_size=batch_size, learning_rate=learning_rate, max_grad_norm=max_grad_norm,
        clipping=clipping, noise_multiplier=noise_multiplier, temperature=temperature,
        pre_noise_scale=pre_noise_scale, prior_std=prior_std,
        iterate_averaging=iterate_averaging, averaging_start=averaging_start,
        averaging=averaging, momentum=momentum, accountant=accountant, relation=relation,
        posterior_samples=posterior_samples, burn_in=burn_in,
        augmentation_multiplicity=augmentation_multiplicity, task=task,
    )  # fmt: skip
    private, epsilon, delta, relation = cfg.private, cfg.epsilon, cfg.delta, cfg.relation
    tensors, n, n_classes, temperature = cfg.tensors, cfg.n, cfg.n_classes, cfg.temperature
    bsz, clip, clipping, prior_std = cfg.batch_size, cfg.max_grad_norm, cfg.clipping, cfg.prior_std
    accountant, pre = cfg.accountant, cfg.pre_noise_scale

    planned = max(1, round(cfg.epochs * n / bsz))
    eta = learning_rates(cfg.schedule, planned)
    sample_rate = bsz / n
    gen = torch_generator(random_state)
    if procs is not None:  # this rank's own stream (sampling, augmentation; noise on rank 0)
        if not private or tensors is None:
            raise ValueError("world_size > 1 needs a private method and (X, y) tensors")
        gen = procs.generator(gen)
    gen_cpu = gen  # batches and augmentation; the noise's generator is on the device
    if tensors is not None and dev.type != "cpu":
        tensors = (tensors[0].to(dev), tensors[1].to(dev))  # moved once
    prior_wd = 0.0
    if prior_std is not None:
        s0 = _as_float(prior_std, "prior_std")
        if not math.isfinite(s0) or s0 <= 0:
            raise ValueError(f"prior_std must be finite and > 0, got {prior_std!r}")
        prior_wd = 1.0 / (n * s0 * s0)

    details: dict[str, Any] = {
        "n_samples": n,
        "expected batch size": float(bsz),
        "max_grad_norm": clip,
        "clipping": clipping,
        "learning rate first": float(eta[0]),
        "learning rate last planned": float(eta[-1]),
    }
    if prior_std is not None:
        details["prior std"] = float(prior_std)
    if cfg.recipe_used is not None:
        details["auto settings (data-free recipe)"] = ", ".join(cfg.auto_keys)
    if task == "regression":
        details["task"] = "regression"

    # ---- plan the noise and the number of steps (data-free) --------------------------------
    sigmas, steps = plan_noise(
        method, details, eta=eta, sample_rate=sample_rate, batch_size=bsz, max_grad_norm=clip,
        n_samples=n, epsilon=epsilon, delta=delta, noise_multiplier=noise_multiplier,
        temperature=temperature, pre_noise_scale=pre,
        accountant=accountant, relation=relation,
    )  # fmt: skip
    temperature = details.get("temperature", temperature)

    from dpuq.privacy.ledger import ledger_required

    charged_here = procs is None or procs.rank == 0  # one charge for all the ranks
    charged = False
    if charged_here and (
        ledger is not None or dataset is not None or (private and ledger_required())
    ):
        from dpuq.privacy.ledger import charge

        cost = (epsilon, delta) if private else (math.inf, 1.0)
        what, seeded = f"train_classifier ({method})", random_state is not None
        charge(
            ledger,
            dataset,
            cost[0],
            delta=cost[1],
            relation=relation,
            what=what,
            seeded=seeded,
            settings={
                "method": method,
                "n": n,
                "planned steps": int(steps),
                "accountant": accountant,
            },
        )
        charged = True
    # ---- wrap and train -------------------------------------------------------------------
    model.to(dev).train()
    base = torch.optim.SGD(
        model.parameters(), lr=float(eta[0]), momentum=cfg.momentum, weight_decay=prior_wd
    )
    if loss_fn is None:
        loss_fn = _SquaredError() if task == "regression" else nn.CrossEntropyLoss()
    if private:
        from opacus import GradSampleModule

        from dpuq.training.optimizer import DPSGDOptimizer, DPSGLDOptimizer

        if dev.type != "cpu":  # Opacus draws the noise on the gradients' device
            gen_cpu, gen = gen, torch.Generator(device=dev)
            gen.manual_seed(int(torch.randint(2**62, (1,), generator=gen_cpu)))
        if procs is not None:
            DPSGDOptimizer, DPSGLDOptimizer = distributed.distributed_optimizers()
        net = GradSampleModule(
            model if procs is None else distributed.wrap_model(model), loss_reduction="mean"
        )
        if method == "dpsgld":
            opt = DPSGLDOptimizer(
                base,
                max_grad_norm=clip,
                expected_batch_size=bsz,
                n_samples=n,
                temperature=float(temperature),
                pre_noise_scale=pre,
                generator=gen,
                clipping=clipping,
            )
        else:
            opt = DPSGDOptimizer(
                base,
                noise_multiplier=float(sigmas[0]),
                max_grad_norm=clip,
                expected_batch_size=bsz,
                loss_reduction="mean",
                generator=gen,
                clipping=clipping,
            )
        if procs is not None:
            batches = distributed.shard_batches(tensors, n, sample_rate, steps, gen_cpu, procs)
        else:
            batches = batches_private(train_data, tensors, n, sample_rate, steps, gen_cpu)
    else:
        net, opt = model, base
        batches = batches_shuffled(train_data, tensors, n, bsz, steps, gen_cpu)

    taken: list[float] = []
    snapshot_at: set[int] = set()
    if cfg.iterate_averaging and steps > 0:
        snapshot_at, first = snapshot_steps(cfg.iterate_averaging, cfg.averaging_start, steps)
        details["averaged iterates"] = len(snapshot_at)
        details["averaging"] = cfg.averaging
        details["averaging from step"] = first
    snapshots: list[dict] = []
    aug_k = cfg.augmentation_multiplicity
    if aug_k > 1:  # De et al. 2022: average K augmentations' gradients before clipping
        details["augmentation multiplicity"] = aug_k
        aug_gen = torch.Generator().manual_seed(int(torch.randint(2**62, (1,), generator=gen_cpu)))
    desc = {"sgd": "SGD", "dpsgd": "DP-SGD", "dpsgld": "DP-SGLD"}[method]
    try:
        for t, (xb, yb) in progress(
            enumerate(batches), desc=desc, total=steps, disable=not show_progress
        ):
            if tensors is None and task == "classification":
                check_label_range(yb, n_classes)
            for group in opt.param_groups:
                group["lr"] = float(eta[t])
            opt.zero_grad(set_to_none=True)
            if aug_k > 1:
                xb, yb = random_translations(xb, aug_k, aug_gen), yb.repeat_interleave(aug_k)
            loss = loss_fn(net(xb), yb)
            with warnings.catch_warnings():  # Opacus' hooks on a model whose input needs no grad
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                loss.backward()
            if aug_k > 1 and private:
                average_grad_samples(model, aug_k)
            opt.step()
            if private:
                taken.append(float(opt.noise_multiplier))
            if t in snapshot_at:
                snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    except BaseException as exc:  # say that the budget was spent (public: the call's own cost)
        if charged:
            exc.add_note(
                f"dpuq: epsilon {cost[0]:g}, delta {cost[1]:g} were charged to data set "
                f"{dataset!r} before training stopped; the charge stands (nothing was released)"
            )
        raise
    finally:
        if private:
            net.remove_hooks()
            for p in model.parameters():
                for attr in ("grad_sample", "summed_grad", "_forward_counter"):
                    if hasattr(p, attr):
                        delattr(p, attr)
    model.eval()
    if procs is not None:
        procs.check_identical(model)
    if snapshots:
        model = average_iterates(model, snapshots, cfg.averaging)
    seeded = random_state is not None

    if not private:
        report = PrivacyReport(
            mechanism="SGD (non-private)",
            epsilon=math.inf,
            delta=1.0,
            relation=relation,
            sensitivity="unbounded (no clipping, no noise)",
            details={"steps": len(range(steps)), **details},
            notes=("Not private: do not release this model if the training data is sensitive.",),
            seeded=seeded,
        )
        return TrainingResult(model, mark_seeded(report, random_state))
    hist = np.asarray(taken, dtype=float)  # every sampled step counts, even an empty batch
    report = private_training_report(
        method=method,
        sample_rate=sample_rate,
        sigmas=hist,
        delta=delta,
        target_epsilon=epsilon,
        planned_steps=planned,
        details=details,
        accountant=accountant,
        relation=relation,
        seeded=seeded,
    )
    return TrainingResult(model, mark_seeded(report, random_state))


class _SquaredError(nn.Module):
    """Mean squared error of a (batch, 1) output against (batch,) targets (regression)."""

    def forward(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((output.reshape(target.shape) - target) ** 2)
