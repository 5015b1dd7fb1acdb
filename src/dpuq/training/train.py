"""One entry point for SGD, DP-SGD and DP-SGLD training of a PyTorch classifier (on Opacus)."""

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

#: Kinds of iterate averaging of :func:`train_classifier`.
AVERAGING = ("predictive", "weights")


class IterateAverage(nn.Module):
    """Average of the predictive distributions of late iterates: ``log(mean_k softmax(f_k(x)))``.

    For DP-SGLD this is the posterior average of Langevin samples (Welling and Teh 2011); for
    SGD and DP-SGD it is an ensemble of snapshots along one run (iterate averaging). Its
    outputs are log-probabilities, so ``softmax`` of it is the averaged predictive distribution
    (and cross-entropy / argmax work as on logits). Built by :func:`train_classifier` when
    ``iterate_averaging > 0``. Privacy: a function of the iterates only, i.e. post-processing
    of the sequence of iterates that DP-SGD's accounting covers (module docstring of
    :mod:`dpuq.accounting`): no extra privacy cost.
    """

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        if not members:
            raise ValueError("members is empty")
        self.members = nn.ModuleList(members)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logp = torch.stack([torch.log_softmax(m(x), dim=1) for m in self.members])
        return torch.logsumexp(logp, dim=0) - math.log(len(self.members))


#: Former name of :class:`IterateAverage` (kept for existing code).
PosteriorAverage = IterateAverage


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


def _as_tensors(train_data) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(X, y) arrays or a TensorDataset -> tensors; None for another Dataset."""
    from torch.utils.data import Dataset, TensorDataset

    if isinstance(train_data, tuple | list) and len(train_data) == 2:
        x, y = train_data
        x = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x, dtype=torch.float32)
        y_arr = y if torch.is_tensor(y) else torch.as_tensor(np.asarray(y))
        if y_arr.dtype.is_floating_point:
            if not torch.all(y_arr == torch.round(y_arr)):
                raise ValueError("train_data: labels must be integer class indices")
        elif y_arr.dtype == torch.bool or y_arr.dtype.is_complex:
            raise ValueError(f"train_data: labels must be integers, got dtype {y_arr.dtype}")
        y_arr = y_arr.long()
        if y_arr.ndim != 1 or x.shape[0] != y_arr.shape[0]:
            raise ValueError(
                f"train_data: need X of shape (n, ...) and y of shape (n,), got {tuple(x.shape)} "
                f"and {tuple(y_arr.shape)}"
            )
        if not torch.isfinite(x).all():
            raise ValueError("train_data: X has non-finite values (NaN or inf)")
        return x, y_arr
    if isinstance(train_data, TensorDataset) and len(train_data.tensors) == 2:
        return _as_tensors(tuple(train_data.tensors))
    if isinstance(train_data, Dataset):
        return None
    raise TypeError(
        "train_data must be a pair (X, y) of arrays/tensors or a torch Dataset of (x, y), "
        f"got {type(train_data).__name__}"
    )


def _n_outputs(model: nn.Module, x1: torch.Tensor) -> int:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(x1)
    model.train(was_training)
    if out.ndim != 2:
        raise ValueError(f"model must output logits of shape (batch, n_classes), got {out.shape}")
    return int(out.shape[1])


def _check_label_range(y: torch.Tensor, n_classes: int, where: str = "train_data") -> None:
    if y.numel() == 0:
        return
    if bool(((y < 0) | (y >= n_classes)).any()):  # no counts or values: they are not released
        raise ValueError(f"{where}: labels outside the model's classes 0..{n_classes - 1}")


def _generator(random_state) -> torch.Generator:
    g = torch.Generator()
    if random_state is None:
        g.seed()  # fresh entropy
    elif isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        g.manual_seed(int(random_state))
    elif isinstance(random_state, np.random.Generator):
        g.manual_seed(int(random_state.integers(2**63 - 1)))
    else:
        raise TypeError(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {type(random_state).__name__}"
        )
    return g


def _batches_private(data, tensors, n, sample_rate, steps, gen):
    """Poisson-sampled batches (Opacus' sampler): each example enters with prob. p."""
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    if tensors is not None:
        x, y = tensors
        sampler = UniformWithReplacementSampler(
            num_samples=n, sample_rate=sample_rate, generator=gen, steps=steps
        )
        for idx in sampler:
            index = torch.as_tensor(idx, dtype=torch.long)
            yield x[index], y[index]
        return
    from opacus.data_loader import DPDataLoader

    loader = DPDataLoader(data, sample_rate=sample_rate, generator=gen)
    done = 0
    while done < steps:
        for xb, yb in loader:
            yield xb, yb
            done += 1
            if done >= steps:
                return


def _batches_shuffled(data, tensors, n, batch_size, steps, gen):
    """Non-private mini-batches: reshuffle every epoch, fixed size (last one may be smaller)."""
    if tensors is not None:
        x, y = tensors
        done = 0
        while True:
            perm = torch.randperm(n, generator=gen)
            for start in range(0, n, batch_size):
                index = perm[start : start + batch_size]
                yield x[index], y[index]
                done += 1
                if done >= steps:
                    return
    from torch.utils.data import DataLoader

    loader = DataLoader(data, batch_size=batch_size, shuffle=True, generator=gen)
    done = 0
    while True:
        for xb, yb in loader:
            yield xb, yb
            done += 1
            if done >= steps:
                return


#: Said in every private training report (issue 12: out of scope of dpuq's exact noise).
FLOATING_POINT_NOTE = (
    "Out of scope of dpuq's exact-noise guarantee: the Gaussian noise of DP-SGD/DP-SGLD is "
    "drawn by Opacus with torch's floating-point sampler (secure_mode off), not by an exact "
    "sampler in dpuq.mechanisms; floating-point attacks on it (Mironov 2012) are not defended "
    "against. The (ε, δ) above is that of the ideal Gaussian mechanism."
)


def _averaging_note(details: dict[str, Any]) -> str:
    k = details.get("averaged iterates")
    if not k:
        return (
            "Released: the last iterate. The accounting covers the whole sequence of iterates "
            "(adaptive composition), so releasing any of them changes nothing."
        )
    kind = details.get("averaging")
    what = "predictive distributions" if kind == "predictive" else "weights"
    return (
        f"Released: the average of the {what} of {k} late iterates. The accounting covers the "
        "whole sequence of iterates (adaptive composition of the steps), so the average is "
        "post-processing and costs no privacy; the guarantee also holds if every iterate is "
        "published."
    )


def _private_report(
    *,
    method: str,
    sample_rate: float,
    sigmas: np.ndarray,
    delta: float,
    target_epsilon: float,
    planned_steps: int,
    details: dict[str, Any],
    accountant: str,
    relation: Relation,
    seeded: bool,
) -> PrivacyReport:
    steps = int(sigmas.size)
    gdp_how = (
        "2μ-GDP under replace-one (group privacy of size 2, Dong, Roth, Su 2019) from the "
        "CLT's μ under add/remove-one"
        if relation is Relation.REPLACE_ONE
        else "μ-GDP under add/remove-one by the CLT"
    )
    notes = [
        f"All figures are under {relation.value} neighbours. The GDP figure (central limit "
        f"theorem, the seed paper's accountant; {gdp_how}) is an approximation that can "
        "understate ε; the primary figure is "
        + {"pld": "the PLD accountant's upper bound.", "rdp": "the RDP accountant's bound."}.get(
            accountant, "GDP (no rigorous accountant was asked for)."
        ),
        FLOATING_POINT_NOTE,
        "Only the model weights are released; the training loss is not reported (it would "
        "be a non-private statistic of the training data).",
        _averaging_note(details),
    ]
    if steps == 0:
        eps_primary = eps_gdp = 0.0
        mu = 0.0
        notes.insert(0, "The budget did not allow a single step: the model is untrained.")
    else:
        mu = accounting.gdp_mu(sample_rate, sigmas, relation=relation)
        eps_gdp = accounting.gdp_epsilon(mu, delta)
        eps_primary = (
            eps_gdp
            if accountant == "gdp"
            else accounting.epsilon_spent(sample_rate, sigmas, delta, accountant, relation=relation)
        )
    stop = (
        "planned steps done"
        if steps >= planned_steps
        else "budget: the next step would exceed the target (ε, δ)"
    )
    name = {"dpsgd": "DP-SGD", "dpsgld": "DP-SGLD"}[method]
    all_details = {
        "accountant": {
            "pld": f"PLD (dp-accounting, {relation.value}; σ grouped within 1% using each "
            "group's smallest σ)",
            "rdp": f"RDP (dp-accounting; {relation.value}"
            + (" by group privacy)" if relation is Relation.REPLACE_ONE else ")"),
            "gdp": f"GDP central limit (approximation; {relation.value})",
        }[accountant],
        "relation": relation.value,
        f"epsilon ({accountant})": float(eps_primary),
        "epsilon (GDP CLT)": float(eps_gdp),
        "mu (GDP)": float(mu),
        "target epsilon": float(target_epsilon),
        "steps": steps,
        "planned steps": int(planned_steps),
        "stopped because": stop,
        "sample rate p": float(sample_rate),
        "noise multiplier min": float(sigmas.min()) if steps else math.nan,
        "noise multiplier max": float(sigmas.max()) if steps else math.nan,
        **details,
    }
    return PrivacyReport(
        mechanism=f"{name} (Poisson-subsampled Gaussian on clipped per-example gradients, Opacus)",
        epsilon=float(eps_primary),
        delta=float(delta),
        relation=relation,
        sensitivity=f"per-example gradients clipped to L2 norm C = {details['max_grad_norm']:g}; "
        "Gaussian noise of std σ_t·C on their sum (a swapped record moves the sum by at most "
        "2C, an added or removed one by C; dp-accounting's analysis for each relation)",
        details=all_details,
        notes=tuple(notes),
        seeded=seeded,
    )


def train_classifier(
    model: nn.Module,
    train_data,
    *,
    method: str,
    epochs: float,
    batch_size: int,
    epsilon: float | None = None,
    delta: float | None = None,
    learning_rate=0.1,
    max_grad_norm: float = 1.0,
    noise_multiplier: float | None = None,
    temperature: float | None = None,
    pre_noise_scale: float = 0.0,
    prior_std: float | None = None,
    iterate_averaging: int = 0,
    averaging_start: float = 0.5,
    averaging: str = "predictive",
    momentum: float = 0.0,
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
    epochs : float
        Upper bound on training length, in passes over the data (> 0).
    batch_size : int
        Expected batch size ``B`` (Poisson sampling) or the batch size (SGD).
    epsilon, delta : float
        Target privacy (required for the private methods): ``epsilon > 0``, ``delta`` in (0, 1).
    learning_rate : float or callable step -> rate, default 0.1
        E.g. :class:`dpuq.training.PolynomialDecay` (Welling and Teh's schedule).
    max_grad_norm : float, default 1.0
        Clipping norm ``C`` (private methods).
    noise_multiplier : float, optional
        DP-SGD's σ; default: calibrated to the budget and planned steps.
    temperature : float or "auto"
        DP-SGLD's ``T > 0`` (required for ``"dpsgld"``). ``"auto"``: the smallest T whose planned
        schedule fits in the budget (:func:`dpuq.accounting.calibrate_temperature`), so the
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
    if averaging not in AVERAGING:
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

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if private:
        check_private_model(model)

    tensors = _as_tensors(train_data)
    n = int(tensors[0].shape[0]) if tensors is not None else len(train_data)
    if n < 2:
        raise ValueError(f"train_data needs at least 2 examples, got {n}")
    if bsz > n:
        raise ValueError(f"batch_size must be <= the number of examples ({n}), got {bsz}")
    x1 = tensors[0][:1] if tensors is not None else train_data[0][0].unsqueeze(0)
    n_classes = _n_outputs(model, x1)
    if tensors is not None:
        _check_label_range(tensors[1], n_classes)

    planned = max(1, round(ep * n / bsz))
    eta = learning_rates(schedule, planned)
    sample_rate = bsz / n
    gen = _generator(random_state)
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
        "learning rate first": float(eta[0]),
        "learning rate last planned": float(eta[-1]),
    }
    if prior_std is not None:
        details["prior std"] = float(prior_std)

    # ---- plan the noise and the number of steps (data-free) --------------------------------
    if method == "dpsgd":
        if noise_multiplier is None:
            sigma = accounting.calibrate_noise_multiplier(
                sample_rate=sample_rate,
                steps=planned,
                epsilon=epsilon,
                delta=delta,
                accountant=accountant,
                relation=relation,
            )
        else:
            sigma = _as_float(noise_multiplier, "noise_multiplier")
            if not math.isfinite(sigma) or sigma <= 0:
                raise ValueError(f"noise_multiplier must be finite and > 0, got {sigma!r}")
        sigmas = np.full(planned, sigma)
    elif method == "dpsgld":
        if isinstance(temperature, str):
            if temperature != "auto":
                raise ValueError(f"temperature must be a number > 0 or 'auto', got {temperature!r}")
            temperature = accounting.calibrate_temperature(
                learning_rates=eta,
                batch_size=bsz,
                max_grad_norm=clip,
                n_samples=n,
                epsilon=epsilon,
                delta=delta,
                accountant=accountant,
                relation=relation,
            )
            details["temperature chosen"] = "auto: the coldest T that runs every planned step"
        sigmas = np.atleast_1d(
            accounting.dpsgld_noise_multiplier(
                batch_size=bsz,
                max_grad_norm=clip,
                temperature=temperature,
                learning_rate=eta,
                n_samples=n,
            )
        )
        details.update(temperature=float(temperature), pre_noise_scale=pre)
    if private:
        steps = accounting.max_steps(
            sample_rate,
            sigmas,
            epsilon=epsilon,
            delta=delta,
            accountant=accountant,
            relation=relation,
        )
    else:
        steps = planned

    if ledger is not None or dataset is not None:
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
        from opacus.optimizers import DPOptimizer

        from dpuq.training.optimizer import DPSGLDOptimizer

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
            )
        else:
            opt = DPOptimizer(
                base,
                noise_multiplier=float(sigmas[0]),
                max_grad_norm=clip,
                expected_batch_size=bsz,
                loss_reduction="mean",
                generator=gen,
            )
        batches = _batches_private(train_data, tensors, n, sample_rate, steps, gen)
    else:
        net, opt = model, base
        batches = _batches_shuffled(train_data, tensors, n, bsz, steps, gen)

    taken: list[float] = []
    snapshot_at: set[int] = set()
    if n_post and steps > 0:
        first = min(int(burn * steps), steps - 1)
        snapshot_at = {int(v) for v in np.linspace(first, steps - 1, n_post).round()}
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
                _check_label_range(yb, n_classes)
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
    if snapshots and averaging == "weights":
        mean_state = {}
        for key, value in snapshots[0].items():
            if value.is_floating_point():
                mean_state[key] = torch.stack([s[key] for s in snapshots]).mean(dim=0)
            else:
                mean_state[key] = snapshots[-1][key]
        model.load_state_dict(mean_state)
    elif snapshots:
        import copy

        members = []
        for state in snapshots:
            member = copy.deepcopy(model)
            member.load_state_dict(state)
            members.append(member.eval())
        model = IterateAverage(members).eval()
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
    report = _private_report(
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
