"""Private hyperparameter search for DP-SGD: train candidates, release the best, count it all.

:func:`select_and_train` is :func:`dpuq.mechanisms.selection.private_selection` with DP-SGD
runs. Each run draws a candidate configuration uniformly at random, trains a fresh model with
DP-SGD (:func:`dpuq.training.train_classifier`, every setting explicit) on the *training*
people, and scores it on the *validation* people by the number of correct predictions plus
exact discrete Laplace noise (:func:`dpuq.mechanisms.laplace_mechanism`).

Privacy of one run (relation: replace-one with ``n`` public by default)
-----------------------------------------------------------------------
The two parts touch disjoint people. A swapped training person changes only the model's law
(the score is then post-processing with the validation people fixed); a swapped validation
person changes only the score's law given the model. So the run's Rényi divergence at every
order is at most the larger of the two parts' (parallel composition):
``ε_run(λ) = max(ε_DP-SGD(λ), ε_count(λ))``.

- DP-SGD: ``T`` steps of the Poisson-subsampled Gaussian at rate ``p = B/N_train``, noise
  ``σ``: :func:`dpuq.privacy.accounting.rdp_curve` (dp-accounting's RDP; replace-one by the weak
  triangle inequality).
- The count: sensitivity 1 (a swap changes at most one prediction's correctness), pure
  ``ε_count``-DP, hence the RDP curve :func:`dpuq.mechanisms.selection.pure_dp_rdp`.

The per-run budget is one number ``μ`` (Gaussian-DP scale by the central limit theorem, Bu et
al. 2020) shared by all candidates, so that every candidate gets an equally private run
whatever its batch size and length: candidate ``c`` uses ``σ_c`` with
``f p_c sqrt(T_c (exp(1/σ_c²) - 1)) = μ`` (``f = 2`` under replace-one), and the count uses
``ε_count = ε_GDP(μ, δ)`` (documented default split). ``μ`` is solved from the TOTAL
``(ε, δ)`` by the rigorous RDP bound of the selection (the CLT only parametrises; it is not
used to account). All of this is data-free; the total is charged before any run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dpuq._validation import _as_float, check_epsilon, check_in_open_unit
from dpuq.mechanisms.laplace import laplace_mechanism
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.mechanisms.repetitions import uniform_permutation
from dpuq.mechanisms.selection import (
    DEFAULT_ORDERS,
    SelectionResult,
    private_selection,
    pure_dp_rdp,
)
from dpuq.privacy import accounting
from dpuq.privacy.ledger import CALLER_CHARGED
from dpuq.privacy.report import Relation

__all__ = ["TRAINING_KEYS", "select_and_train"]

#: Keys a candidate may set (passed to :func:`train_classifier`); ``epochs`` and
#: ``batch_size`` are required. ``"model"``: free-form, for ``model_fn`` only.
TRAINING_KEYS = (
    "epochs",
    "batch_size",
    "learning_rate",
    "max_grad_norm",
    "momentum",
    "iterate_averaging",
    "averaging_start",
    "averaging",
    "prior_std",
)


def _check_candidate(c, n_train: int) -> dict[str, Any]:
    if not isinstance(c, Mapping):
        raise TypeError(f"each candidate must be a dict of settings, got {type(c).__name__}")
    unknown = sorted(set(c) - set(TRAINING_KEYS) - {"model"})
    if unknown:
        raise ValueError(
            f"candidate {dict(c)!r}: unknown or reserved settings {unknown} (allowed: "
            f"{TRAINING_KEYS} and 'model'; ε, δ, σ and the relation are set by the selection)"
        )
    for key in ("epochs", "batch_size"):
        if key not in c:
            raise ValueError(f"candidate {dict(c)!r} needs {key!r} (the accounting needs it)")
    ep = _as_float(c["epochs"], "epochs")
    if not (math.isfinite(ep) and ep > 0):
        raise ValueError(f"candidate {dict(c)!r}: epochs must be finite and > 0")
    b = c["batch_size"]
    if isinstance(b, bool) or not isinstance(b, int | np.integer) or not (1 <= b <= n_train):
        raise ValueError(f"candidate {dict(c)!r}: batch_size must be an int in [1, {n_train}]")
    return dict(c)


def _split(data, validation_data, validation_fraction, rng):
    x, y = data
    n = len(y)
    if validation_data is not None:
        return (x, y), validation_data
    f = _as_float(validation_fraction, "validation_fraction")
    if not (0 < f < 1):
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}")
    n_val = round(f * n)
    if n_val < 1 or n - n_val < 2:
        raise ValueError(f"cannot split {n} examples with validation_fraction={f:g}")
    perm = uniform_permutation(n, rng)  # data-free: depends on n only
    tr, va = perm[n_val:], perm[:n_val]
    return (x[tr], y[tr]), (x[va], y[va])


def select_and_train(
    model_fn: Callable[[dict], Any],
    data,
    candidates: Sequence[Mapping[str, Any]],
    *,
    method: str = "dpsgd",
    epsilon: float,
    delta: float,
    validation_data=None,
    validation_fraction: float = 0.2,
    distribution: str = "truncated_negative_binomial",
    expected_runs: float = 10.0,
    shape: float = 0.0,
    relation: Relation | str = Relation.REPLACE_ONE,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> SelectionResult:
    """Search DP-SGD hyperparameters privately; the TOTAL ``(ε, δ)`` covers the whole search.

    Runs a random number of DP-SGD trainings (``E[K] = expected_runs``) of random candidates and
    releases the model with the best noisy validation accuracy (module docstring for the
    privacy argument; Papernot & Steinke 2022 for the selection).

    Parameters
    ----------
    model_fn : callable ``candidate -> torch.nn.Module``
        A fresh, untrained model for a candidate (it sees the whole candidate dict, e.g. its
        ``"model"`` entry). Called once per candidate before anything is charged (checked with
        :func:`dpuq.training.check_private_model`) and once per run.
    data : (X, y)
        Arrays (or tensors) of the people; split into training and validation people by a
        data-free random permutation unless ``validation_data`` is given (then ``data`` is
        the training set).
    candidates : sequence of dict
        Settings of :func:`train_classifier` (:data:`TRAINING_KEYS`; ``epochs`` and
        ``batch_size`` required) and optionally ``"model"``.
    method : {"dpsgd"}
        DP-SGD only (its RDP curve is known in closed form per candidate).
    epsilon, delta : float
        TOTAL privacy of the search (and of the model released).
    validation_fraction : float, default 0.2
        Share of the people held out for scoring.
    distribution, expected_runs, shape
        Law of the number of runs (:func:`dpuq.mechanisms.selection.private_selection`);
        default truncated negative binomial with ``η = 0`` (logarithmic) and 10 runs expected.
    relation : {"replace-one", "add/remove-one"}
    random_state : None, int or numpy.random.Generator
        None for real releases; a seed for experiments (the report says "seeded").
    ledger, dataset
        Charge the total to ``dataset``'s budget before any run.

    Returns
    -------
    SelectionResult
        ``artifact``: the trained model; ``candidate``: its settings; ``score``: its noisy
        number of correct validation predictions; ``privacy_report``: the total; its
        ``details`` give each candidate's σ and per-run ε. With ``distribution="poisson"``
        no run may be made (``K = 0``): then ``artifact``, ``candidate`` and ``score`` are
        None.

    Examples
    --------
    >>> import torch
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2)).astype("float32"); y = (X[:, 0] > 0).astype("int64")
    >>> res = select_and_train(lambda c: torch.nn.Linear(2, 2), (X, y),
    ...                        [{"epochs": 2, "batch_size": 64, "learning_rate": 0.5}],
    ...                        epsilon=4.0, delta=1e-5, expected_runs=2, random_state=0)
    >>> res.privacy_report.epsilon <= 4.0
    True
    """
    from dpuq.training.batches import as_tensors, check_label_range, n_outputs
    from dpuq.training.train import check_private_model, predict_proba, train_classifier

    if method != "dpsgd":
        raise ValueError(f"select_and_train supports method='dpsgd' only, got {method!r}")
    eps = check_epsilon(epsilon)
    d = check_in_open_unit(delta, "delta")
    rel = Relation.coerce(relation)
    if not callable(model_fn):
        raise TypeError("model_fn must be callable: candidate -> torch.nn.Module")
    if not (isinstance(data, tuple | list) and len(data) == 2):
        raise TypeError("data must be an (X, y) pair")
    if validation_data is not None and not (
        isinstance(validation_data, tuple | list) and len(validation_data) == 2
    ):
        raise TypeError("validation_data must be an (X, y) pair")
    if validation_data is None and rel is Relation.ADD_REMOVE:
        raise ValueError(
            "under add/remove-one the number of people is not public, so a random split of "
            "them is not data-free: pass validation_data= (disjoint validation people)"
        )
    if len(data[0]) != len(data[1]):
        raise ValueError("data: X and y must have the same number of rows")
    split_rng = check_random_state(random_state)
    (x_tr, y_tr), (x_va, y_va) = _split(data, validation_data, validation_fraction, split_rng)
    n_train, n_val = len(y_tr), len(y_va)
    cands = [_check_candidate(c, n_train) for c in candidates]
    if not cands:
        raise ValueError("candidates is empty: nothing to select from")
    t_tr, t_va = as_tensors((x_tr, y_tr)), as_tensors((x_va, y_va))
    for c in cands:  # everything a run checks, checked before anything is charged
        net = model_fn(c)
        check_private_model(net)
        k = n_outputs(net, t_tr[0][:1])
        check_label_range(t_tr[1], k, "data")
        check_label_range(t_va[1], k, "validation_data")
    factor = 2.0 if rel is Relation.REPLACE_ONE else 1.0
    y_va_np = np.asarray(y_va)

    def plan(c: Mapping, mu: float) -> tuple[float, int, float]:
        p = c["batch_size"] / n_train
        steps = max(1, round(float(c["epochs"]) * n_train / c["batch_size"]))  # as trained
        sigma = 1.0 / math.sqrt(math.log1p((mu / (factor * p)) ** 2 / steps))
        return p, steps, sigma

    def count_epsilon(mu: float) -> float:
        return float(accounting.gdp_epsilon(mu, d))

    def run_rdp(c, mu, orders):
        p, steps, sigma = plan(c, mu)
        sgd = accounting.rdp_curve(p, sigma, steps, orders, relation=rel)
        return np.maximum(sgd, pure_dp_rdp(count_epsilon(mu), orders))

    seeded = random_state is not None

    def run(c, mu, rng):
        p, steps, sigma = plan(c, mu)
        # the run's own (ε, δ) target, a hair above its RDP figure so that every planned step
        # runs; the selection's accounting uses the RDP curve above, not this figure
        target = accounting.epsilon_spent(p, [sigma] * steps, d, "rdp", relation=rel)
        kwargs = {k: v for k, v in c.items() if k in TRAINING_KEYS}
        model, report = train_classifier(
            model_fn(c),
            (x_tr, y_tr),
            method="dpsgd",
            epsilon=target * (1.0 + 1e-6) + 1e-9,
            delta=d,
            noise_multiplier=sigma,
            accountant="rdp",
            relation=rel,
            random_state=int(rng.integers(2**63)) if seeded else None,
            show_progress=False,
            ledger=CALLER_CHARGED,  # the selection charged its total
            **kwargs,
        )
        det = report.details
        if (
            det["steps"] > steps
            or abs(det["sample rate p"] - p) > 1e-12 * p
            or (det["steps"] and det["noise multiplier min"] < sigma)
        ):  # data-free: the plan is public; a mismatch is a programming error
            raise RuntimeError("train_classifier ran other steps than the selection accounted")
        pred = predict_proba(model, x_va).argmax(axis=1)
        correct = float(np.sum(pred == y_va_np))
        score = laplace_mechanism(correct, sensitivity=1.0, epsilon=count_epsilon(mu),
                                  random_state=rng, ledger=CALLER_CHARGED)  # fmt: skip
        return score, model

    result = private_selection(
        cands,
        run,
        epsilon=eps,
        delta=d,
        run_rdp=run_rdp,
        distribution=distribution,
        expected_runs=expected_runs,
        shape=shape,
        orders=DEFAULT_ORDERS,
        relation=rel,
        mechanism="DP-SGD hyperparameter selection",
        random_state=split_rng if seeded else None,
        ledger=ledger,
        dataset=dataset,
    )
    mu = result.run_budget
    per = []
    for c in cands:
        p, steps, sigma = plan(c, mu)
        e_run = accounting.rdp_epsilon(p, [sigma] * steps, d, relation=rel)
        per.append({"candidate": c, "noise multiplier": sigma, "steps": steps,
                    "sample rate": p, "DP-SGD epsilon (RDP, alone)": e_run})  # fmt: skip
    import dataclasses

    report = result.privacy_report
    details = {
        **report.details,
        "per-run budget": f"μ = {mu:.4g} (GDP scale shared by the candidates)",
        "validation count epsilon (pure, per run)": count_epsilon(mu),
        "training people": n_train,
        "validation people": n_val,
        "score": "noisy number of correct validation predictions (discrete Laplace)",
        "candidates' plans": tuple(per),
        "naive composition (E[K] runs, basic)": math.ceil(report.details["expected runs E[K]"])
        * max(max(x["DP-SGD epsilon (RDP, alone)"] for x in per), count_epsilon(mu)),
    }
    notes = (
        *report.notes,
        "Each run: DP-SGD on the training people and a noisy count on the validation people "
        "(disjoint people: the run's Rényi divergence is the larger of the two). DP-SGD noise "
        "is drawn by Opacus in floating point (out of scope of dpuq's exact noise).",
    )
    report = dataclasses.replace(report, details=details, notes=notes)
    return dataclasses.replace(result, privacy_report=report)
