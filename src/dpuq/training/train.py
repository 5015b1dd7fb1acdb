"""One entry point for SGD, DP-SGD and DP-SGLD training of a PyTorch classifier (on Opacus).

Length (~470 lines, half of it the docstring of :func:`train_classifier`): the loop itself. Its
parts live beside it: batches and data checks (:mod:`dpuq.training.batches`), iterate
averaging (:mod:`dpuq.training.averaging`), the noise plan and the privacy report
(:mod:`dpuq.training.privacy`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from dpuq import accounting
from dpuq._progress import progress
from dpuq._validation import _as_float, check_epsilon, check_in_open_unit, check_positive_int
from dpuq.mechanisms.randomness import mark_seeded
from dpuq.report import PrivacyReport, Relation
from dpuq.training.averaging import (
    AVERAGING,
    IterateAverage,
    PosteriorAverage,
    average_iterates,
    snapshot_steps,
)
from dpuq.training.batches import (
    as_tensors,
    batches_private,
    batches_shuffled,
    check_label_range,
    n_outputs,
    torch_generator,
)
from dpuq.training.privacy import plan_noise, private_training_report
from dpuq.training.recipe import AUTO, CLIPPING, auto_recipe
from dpuq.training.schedules import as_schedule, learning_rates

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

#: Training methods of :func:`train_classifier`.
METHODS = ("sgd", "dpsgd", "dpsgld")
#: What ``"auto"`` means for the optimiser settings when the learning rate is the user's.
CLASSIC_DEFAULTS = {
    "max_grad_norm": 1.0, "clipping": "flat", "momentum": 0.0, "iterate_averaging": 0,
    "averaging": "predictive", "averaging_start": 0.5, "prior_std": None,
}  # fmt: skip


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


def check_private_model(model: nn.Module) -> None:
    """Raise ValueError naming every layer that Opacus cannot train privately.

    Runs Opacus' module validators (e.g. BatchNorm mixes examples of a batch, so per-example
    gradients do not exist) on every submodule, and rejects trainable layers with buffers.

    Examples
    --------
    >>> check_private_model(nn.Sequential(nn.Linear(2, 2)))
    >>> check_private_model(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))
    Traceback (most recent call last):
    ...
    ValueError: model cannot be trained privately by Opacus: layer '1' (BatchNorm1d): ...
    """
    from opacus.validators import ModuleValidator

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    problems = []
    for name, module in model.named_modules():
        label = f"layer '{name or '<root>'}' ({type(module).__name__})"
        validator = ModuleValidator.VALIDATORS.get(type(module))
        if validator is not None:
            for err in validator(module):
                problems.append(f"{label}: {str(err).strip().splitlines()[0]}")
        has_params = any(p.requires_grad for p in module.parameters(recurse=False))
        if has_params and any(True for _ in module.buffers(recurse=False)):
            if validator is None:
                problems.append(f"{label}: trainable layer with buffers (not private)")
    if problems:
        raise ValueError(
            "model cannot be trained privately by Opacus: "
            + "; ".join(problems)
            + ". Replace such layers (e.g. BatchNorm by GroupNorm; "
            "opacus.validators.ModuleValidator.fix(model) does it)."
        )


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
) -> TrainingResult:
    """Train a classifier with SGD, DP-SGD or DP-SGLD on one code path (Opacus underneath).

    ``train_classifier(model, data, method="dpsgd", epsilon=3, delta=1e-5)`` trains well with
    nothing else: every setting left at ``"auto"`` comes from the data-free recipe
    :func:`dpuq.training.recipe.auto_recipe`, a function of public quantities only (N, ε, δ,
    the relation, the model's parameter count, the number of classes), so choosing it costs no
    privacy. Its rules and their sources (details in :mod:`dpuq.training.recipe`):

    - normalised ("automatic") clipping with ``C = 1``, so C needs no tuning (Bu, Wang, Zha,
      Karypis, NeurIPS 2023);
    - a fixed number of steps with the batch from a compute budget, at a noise per averaged
      gradient σ/B that depends on the steps only (Sander, Stock, Sablayrolles 2023, "TAN
      without a burn"), σ kept >= 2;
    - large batches, many steps, no momentum, a constant rate and averaged late weights (De,
      Berrada, Hayes, Smith, Balle 2022);
    - DP-SGLD: a Welling-Teh decaying rate, the temperature calibrated to the budget, the
      posterior predictive average and a standard-normal prior (Knolle et al. 2021).

    The optimiser settings (``clipping``, ``momentum``, averaging, ``prior_std``,
    ``max_grad_norm``) follow the recipe when ``learning_rate`` is the recipe's; with your own
    ``learning_rate`` their ``"auto"`` means the classic defaults (flat clipping at C = 1, no
    momentum, no averaging, no prior). ``epochs`` and ``batch_size`` left at ``"auto"`` always
    come from the recipe. The model itself is yours: group normalisation, not batch norm
    (checked); for small data fixed features with a linear head
    (:mod:`dpuq.training.features`, Tramèr and Boneh 2021) or a frozen public backbone whose
    outputs you pass as ``train_data``.

    All three methods run the same loop on the same model for at most
    ``round(epochs · N / batch_size)`` steps with the learning-rate schedule given.

    - ``"sgd"``: shuffled mini-batches of ``batch_size``; not private.
    - ``"dpsgd"`` (Abadi et al. 2016): Poisson sampling at ``p = batch_size / N``, per-example
      gradients clipped to ``max_grad_norm`` (Opacus), Gaussian noise with a constant
      ``noise_multiplier``. When ``noise_multiplier`` is None it is calibrated so that the planned
      steps spend exactly ``(epsilon, delta)``.
    - ``"dpsgld"`` (Knolle et al. 2021): as DP-SGD, plus pre-noise, the per-step noise multiplier
      ``σ_t = (B/C)·sqrt(2T/(η_t N))`` from ``temperature`` and the (decaying) learning rate,
      and a Gaussian prior ``N(0, prior_std²)`` as weight decay ``1/(N prior_std²)``.

    Private methods stop when the next step would exceed ``(epsilon, delta)`` under
    ``relation`` (by the chosen accountant; the σ_t schedule is public, so the stopping step is
    planned in advance). The noise multiplier (DP-SGD) or temperature (DP-SGLD, ``"auto"``) is
    calibrated under that relation too.

    Every method can average its late iterates (``iterate_averaging``, same schedule for all):
    for DP-SGLD it is the posterior average of Langevin samples, for SGD and DP-SGD iterate
    averaging. The privacy report says what was released; averaging is post-processing of the
    iterates, all of which the accounting covers.

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
        (:func:`dpuq.accounting.calibrate_temperature`), so the
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
        before training starts (a replace-one budget converts it, see :mod:`dpuq.ledger`), or
        refuse; ``method="sgd"`` cannot be charged (not private).

    Returns
    -------
    TrainingResult
        ``(model, privacy_report)``.

    Raises
    ------
    ValueError
        Bad ε/δ, schedules giving ``σ_t <= 0``, labels out of range, a model Opacus cannot make
        private (naming the layer).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if posterior_samples is not None:
        warnings.warn(
            "posterior_samples is deprecated: use iterate_averaging (it applies to every method)",
            DeprecationWarning,
            stacklevel=2,
        )
        iterate_averaging = posterior_samples
    if burn_in is not None:
        warnings.warn(
            "burn_in is deprecated: use averaging_start", DeprecationWarning, stacklevel=2
        )
        averaging_start = burn_in
    if averaging not in (*AVERAGING, AUTO):
        raise ValueError(f"averaging must be one of {AVERAGING}, got {averaging!r}")
    relation = Relation.coerce(relation)
    private = method != "sgd"
    if private:
        if epsilon is None or delta is None:
            raise ValueError(f"method={method!r} needs epsilon and delta")
        epsilon = check_epsilon(epsilon)
        delta = check_in_open_unit(delta, "delta")
    elif epsilon is not None or delta is not None:
        raise ValueError("method='sgd' is not private: do not pass epsilon or delta")
    accountant = accounting._check_accountant(accountant)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if method == "dpsgld" and temperature is None:
        temperature = AUTO
    tensors = as_tensors(train_data)
    n = int(tensors[0].shape[0]) if tensors is not None else len(train_data)
    if n < 2:
        raise ValueError(f"train_data needs at least 2 examples, got {n}")
    settings = dict(
        epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
        max_grad_norm=max_grad_norm, clipping=clipping, momentum=momentum,
        iterate_averaging=iterate_averaging, averaging=averaging,
        averaging_start=averaging_start, prior_std=prior_std,
    )  # fmt: skip
    auto_keys = [k for k, v in settings.items() if isinstance(v, str) and v == AUTO]
    recipe_used = None
    if auto_keys:
        x1 = tensors[0][:1] if tensors is not None else train_data[0][0].unsqueeze(0)
        recipe_used = auto_recipe(
            method,
            n_samples=n,
            epsilon=epsilon,
            delta=delta,
            relation=relation,
            n_params=sum(p.numel() for p in model.parameters() if p.requires_grad),
            n_classes=n_outputs(model, x1),
        ).as_kwargs()
        follow = isinstance(learning_rate, str) and learning_rate == AUTO
        for k in auto_keys:
            settings[k] = (
                recipe_used[k] if follow or k in ("epochs", "batch_size") else (CLASSIC_DEFAULTS[k])
            )
    epochs, batch_size, learning_rate = (
        settings["epochs"], settings["batch_size"], settings["learning_rate"]
    )  # fmt: skip
    max_grad_norm, clipping, momentum = (
        settings["max_grad_norm"], settings["clipping"], settings["momentum"]
    )  # fmt: skip
    iterate_averaging, averaging = settings["iterate_averaging"], settings["averaging"]
    averaging_start, prior_std = settings["averaging_start"], settings["prior_std"]
    if clipping not in CLIPPING:
        raise ValueError(f"clipping must be one of {CLIPPING} or 'auto', got {clipping!r}")
    ep = _as_float(epochs, "epochs")
    if not math.isfinite(ep) or ep <= 0:
        raise ValueError(f"epochs must be finite and > 0, got {epochs!r}")
    bsz = check_positive_int(batch_size, "batch_size")
    clip = _as_float(max_grad_norm, "max_grad_norm")
    if not math.isfinite(clip) or clip <= 0:
        raise ValueError(f"max_grad_norm must be finite and > 0, got {max_grad_norm!r}")
    mom = _as_float(momentum, "momentum")
    if not (0 <= mom < 1):
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if method == "dpsgld":
        if temperature is None:
            raise ValueError("method='dpsgld' needs a temperature > 0 (or 'auto')")
        if mom != 0:
            raise ValueError("method='dpsgld' needs momentum=0 (Langevin dynamics is plain SGD)")
    elif temperature is not None:
        raise ValueError(f"temperature is a DP-SGLD parameter; method={method!r}")
    if method != "dpsgd" and noise_multiplier is not None:
        raise ValueError("noise_multiplier is a DP-SGD parameter (DP-SGLD derives σ_t from T, η_t)")
    pre = _as_float(pre_noise_scale, "pre_noise_scale")
    if not math.isfinite(pre) or pre < 0:
        raise ValueError(f"pre_noise_scale must be finite and >= 0, got {pre_noise_scale!r}")
    if pre > 0 and method != "dpsgld":
        raise ValueError("pre_noise_scale is a DP-SGLD parameter")
    schedule = as_schedule(learning_rate)
    n_post = check_positive_int(iterate_averaging, "iterate_averaging", minimum=0)
    burn = _as_float(averaging_start, "averaging_start")
    if not (0 <= burn < 1):
        raise ValueError(f"averaging_start must be in [0, 1), got {averaging_start!r}")

    if private:
        check_private_model(model)
    if bsz > n:
        raise ValueError(f"batch_size must be <= the number of examples ({n}), got {bsz}")
    x1 = tensors[0][:1] if tensors is not None else train_data[0][0].unsqueeze(0)
    n_classes = n_outputs(model, x1)
    if tensors is not None:
        check_label_range(tensors[1], n_classes)

    planned = max(1, round(ep * n / bsz))
    eta = learning_rates(schedule, planned)
    sample_rate = bsz / n
    gen = torch_generator(random_state)
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
    if recipe_used is not None:
        details["auto settings (data-free recipe)"] = ", ".join(auto_keys)

    # ---- plan the noise and the number of steps (data-free) --------------------------------
    sigmas, steps = plan_noise(
        method, details, eta=eta, sample_rate=sample_rate, batch_size=bsz, max_grad_norm=clip,
        n_samples=n, epsilon=epsilon, delta=delta, noise_multiplier=noise_multiplier,
        temperature=temperature, pre_noise_scale=pre, accountant=accountant, relation=relation,
    )  # fmt: skip
    temperature = details.get("temperature", temperature)

    from dpuq.ledger import ledger_required

    if ledger is not None or dataset is not None or (private and ledger_required()):
        from dpuq.ledger import charge

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
        )
    # ---- wrap and train -------------------------------------------------------------------
    model.train()
    base = torch.optim.SGD(
        model.parameters(), lr=float(eta[0]), momentum=mom, weight_decay=prior_wd
    )
    loss_fn = nn.CrossEntropyLoss() if loss_fn is None else loss_fn
    if private:
        from opacus import GradSampleModule

        from dpuq.training.optimizer import DPSGDOptimizer, DPSGLDOptimizer

        net = GradSampleModule(model, loss_reduction="mean")
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
        batches = batches_private(train_data, tensors, n, sample_rate, steps, gen)
    else:
        net, opt = model, base
        batches = batches_shuffled(train_data, tensors, n, bsz, steps, gen)

    taken: list[float] = []
    snapshot_at: set[int] = set()
    if n_post and steps > 0:
        snapshot_at, first = snapshot_steps(n_post, burn, steps)
        details["averaged iterates"] = len(snapshot_at)
        details["averaging"] = averaging
        details["averaging from step"] = first
    snapshots: list[dict] = []
    desc = {"sgd": "SGD", "dpsgd": "DP-SGD", "dpsgld": "DP-SGLD"}[method]
    try:
        for t, (xb, yb) in progress(
            enumerate(batches), desc=desc, total=steps, disable=not show_progress
        ):
            if tensors is None:
                check_label_range(yb, n_classes)
            for group in opt.param_groups:
                group["lr"] = float(eta[t])
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(xb), yb)
            with warnings.catch_warnings():  # Opacus' hooks on a model whose input needs no grad
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                loss.backward()
            opt.step()
            if private:
                taken.append(float(opt.noise_multiplier))
            if t in snapshot_at:
                snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    finally:
        if private:
            net.remove_hooks()
            for p in model.parameters():
                for attr in ("grad_sample", "summed_grad", "_forward_counter"):
                    if hasattr(p, attr):
                        delattr(p, attr)
    model.eval()
    if snapshots:
        model = average_iterates(model, snapshots, averaging)
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


def predict_proba(model: nn.Module, x, batch_size: int = 2048) -> np.ndarray:
    """Softmax probabilities of a classifier on ``x`` (array or tensor), as a numpy array.

    Examples
    --------
    >>> net = nn.Linear(3, 2)
    >>> predict_proba(net, np.zeros((4, 3))).shape
    (4, 2)
    """
    xt = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x, dtype=torch.float32)
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, xt.shape[0], batch_size):
            out.append(torch.softmax(model(xt[start : start + batch_size]), dim=1))
    model.train(was_training)
    probs = torch.cat(out).double().numpy()
    return probs / probs.sum(axis=1, keepdims=True)
