"""The privacy of DP-SGD and DP-SGLD training: its noise plan and its report.

Argument (relation, sensitivity, ε, δ): each step clips every per-example gradient to L2 norm
``C`` and adds Gaussian noise of standard deviation ``σ_t·C`` to their sum over a
Poisson-sampled batch (rate ``p``). Under replace-one neighbours a swapped record moves the
sum by at most ``2C``, under add/remove-one an added or removed record by ``C``; the sequence
of iterates is the adaptive composition of these subsampled Gaussian steps, accounted by
:mod:`dpuq.privacy.accounting` (PLD by default, its replace-one support; RDP; or the GDP central
limit approximation). The plan (σ or the temperature, and the last step) is computed from
public quantities only (``n``, ``p``, the learning-rate schedule, the target ``(ε, δ)``), so
stopping early reveals nothing. The noise itself is drawn by Opacus (see
:data:`FLOATING_POINT_NOTE`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpuq._validation import _as_float
from dpuq.privacy import accounting
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = ["FLOATING_POINT_NOTE", "plan_noise", "private_training_report"]


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


def private_training_report(
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
        accountant=all_details["accountant"],
        sampling=f"Poisson subsampling of the training people at rate p = {sample_rate:.4g} "
        "(the accountant's assumption; Opacus draws the batches)",
    )


def plan_noise(
    method: str,
    details: dict[str, Any],
    *,
    eta: np.ndarray,
    sample_rate: float,
    batch_size: int,
    max_grad_norm: float,
    n_samples: int,
    epsilon: float | None,
    delta: float | None,
    noise_multiplier: float | None,
    temperature: float | str | None,
    pre_noise_scale: float,
    accountant: str,
    relation: Relation,
) -> tuple[np.ndarray | None, int]:
    """The noise multipliers σ_t of the planned steps and how many of them the budget runs.

    Data-free: only public sizes, the schedule ``eta`` and the target ``(epsilon, delta)``.
    DP-SGD: a constant σ, given or calibrated to spend the budget in the planned steps.
    DP-SGLD: σ_t from the temperature (given, or ``"auto"``: the coldest that runs every
    planned step) and the learning rate. ``details`` gets the temperature chosen. For
    ``"sgd"``: ``(None, planned steps)``.
    """
    planned = int(np.size(eta))
    sigmas = None
    # the budget that every accounting call below plans against
    target = {"epsilon": epsilon, "delta": delta, "accountant": accountant, "relation": relation}
    if method == "dpsgd":
        if noise_multiplier is None:
            sigma = accounting.calibrate_noise_multiplier(
                sample_rate=sample_rate, steps=planned, **target
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
                batch_size=batch_size,
                max_grad_norm=max_grad_norm,
                n_samples=n_samples,
                **target,
            )
            details["temperature chosen"] = "auto: the coldest T that runs every planned step"
        sigmas = np.atleast_1d(
            accounting.dpsgld_noise_multiplier(
                batch_size=batch_size,
                max_grad_norm=max_grad_norm,
                temperature=temperature,
                learning_rate=eta,
                n_samples=n_samples,
            )
        )
        details.update(temperature=float(temperature), pre_noise_scale=pre_noise_scale)
    if method != "sgd":
        steps = accounting.max_steps(sample_rate, sigmas, **target)
    else:
        steps = planned
    return sigmas, steps
