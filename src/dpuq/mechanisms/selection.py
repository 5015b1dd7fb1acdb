"""Private selection: run private candidates a random number of times, release the best run.

The procedure (Liu & Talwar, STOC 2019; Papernot & Steinke, ICLR 2022, "Hyperparameter tuning
with Rényi differential privacy"): draw ``K`` from a public law (:mod:`.repetitions`), run a
private algorithm ``Q`` ``K`` times independently, each run trying a candidate drawn uniformly
at random, and release only the run with the best score, ``(score, candidate, artifact)``.
Neither ``K`` nor the other runs are released.

The guarantees (exact statements used)
--------------------------------------
Let each run ``Q`` (random candidate, then the candidate's private algorithm) satisfy
``(λ, ε(λ))``-RDP at every order ``λ`` of a grid. A uniformly random candidate followed by its
algorithm is a mixture with public weights, so its Rényi divergence is at most the largest of
the candidates' (joint quasi-convexity of ``exp((λ-1) D_λ)``): ``ε(λ) = max_c ε_c(λ)``.

- **Theorem 2 of Papernot & Steinke** (truncated negative binomial ``K ~ D_{η,γ}``, ``η > -1``,
  ``γ`` in (0, 1); ``η = 1`` geometric, ``η = 0`` logarithmic): if ``Q`` is ``(λ, ε)``- and
  ``(λ̂, ε̂)``-RDP (``λ > 1``, ``λ̂ >= 1``), the selection is ``(λ, ε')``-RDP with
  ``ε' = ε + (1 + η)(1 - 1/λ̂) ε̂ + (1 + η) log(1/γ)/λ̂ + log(E[K])/(λ - 1)``.
  We take the best ``λ̂`` of the grid for the middle terms (they do not depend on ``λ``).
- **Theorem 6 of Papernot & Steinke** (``K ~ Poisson(μ)``): if ``Q`` is ``(λ, ε)``-RDP and
  ``(ε̂, δ̂)``-DP with ``e^ε̂ <= 1 + 1/(λ - 1)``, the selection is ``(λ, ε')``-RDP with
  ``ε' = ε + μ δ̂ + log(μ)/(λ - 1)``; we take ``ε̂ = log(1 + 1/(λ-1))`` and ``δ̂`` from ``Q``'s
  RDP curve (dp-accounting's ``compute_delta``).
- RDP is non-decreasing in the order, so the bound at ``λ`` is also the smallest bound at any
  order ``>= λ`` (as dp-accounting does for its ``RepeatAndSelectDpEvent``, which implements
  the same two theorems; our values are cross-checked against it in the tests).
- **Liu & Talwar 2019** (geometric ``K``, each run pure ``ε``-DP): the selection is ``3ε``-DP.
  Used when every run is pure (``delta=None``) and for pure runs as a second bound.
- Conversion to ``(ε, δ)``: ``ε = min_λ ε'(λ) + log((λ-1)/λ) - (log δ + log λ)/(λ - 1)``
  (Canonne, Kamath, Steinke 2020, Proposition 12; dp-accounting's ``compute_epsilon``).
- A pure ``ε``-DP run is ``(λ, (1/(λ-1)) log((sinh(λε) - sinh((λ-1)ε))/sinh ε))``-RDP
  (Bun & Steinke 2016, proof of Proposition 3: the RDP of randomized response, which is the
  worst ε-DP pair), at most ``min(ε, λε²/2)``.

Ties among the best scores are broken uniformly at random: that is the lexicographic maximum of
``(score, U)`` with an independent uniform ``U`` per run, a run ``(Q, U)`` as private as ``Q``,
followed by dropping ``U`` (post-processing); ties of ``(score, U)`` have probability 0.

The relation is the caller's (replace-one with ``n`` public by default): every run's RDP curve
must be stated under it, and the theorems hold for any symmetric neighbouring relation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from dpuq._sealed import reseed_global_states, sealed
from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.mechanisms.randomness import RandomState, mark_seeded, release_generator
from dpuq.mechanisms.repetitions import (
    DISTRIBUTIONS,
    bernoulli_rational,
    repetition_mean,
    sample_repetitions,
    tnb_gamma_for_mean,
    uniform_index,
)
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = [
    "DEFAULT_ORDERS",
    "SelectionResult",
    "private_selection",
    "pure_dp_rdp",
    "rdp_to_epsilon",
    "repetition_params",
    "selection_rdp",
]

#: Rényi orders of the accounting (half-integers and integers, so that ``2λ`` and ``2λ - 1``,
#: which replace-one DP-SGD needs, are integers; up to 256: order 512 alone would take 0.3 s
#: per DP-SGD curve and matters only for ε far beyond practical totals).
DEFAULT_ORDERS = np.array(
    [1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64,
     96, 128, 192, 256],
    dtype=float,
)  # fmt: skip


def pure_dp_rdp(epsilon: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of a pure ``ε``-DP algorithm (Bun & Steinke 2016; module docstring).

    Examples
    --------
    >>> r = pure_dp_rdp(1.0, [2.0, 1e6])
    >>> bool(r[0] <= 2 * 1.0**2 / 2) and bool(abs(r[1] - 1.0) < 1e-5)
    True
    """
    a = np.asarray(orders, dtype=float)
    e = float(epsilon)
    # log((e^{λε} + e^{(1-λ)ε}) / (1 + e^ε)) / (λ - 1): randomized response with ratio e^ε
    out = (np.logaddexp(a * e, (1.0 - a) * e) - np.logaddexp(0.0, e)) / (a - 1.0)
    return np.minimum(np.maximum(out, 0.0), e)


def repetition_params(distribution: str, expected_runs: float, shape: float) -> dict[str, float]:
    """The public parameters of the law of ``K``: ``gamma``, ``eta`` or ``mu``, and ``mean``.

    Examples
    --------
    >>> repetition_params("geometric", 10.0, 1.0)["gamma"]
    0.1
    """
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")
    m = float(expected_runs)
    if distribution == "poisson":
        if not (math.isfinite(m) and m > 0):
            raise ValueError(f"expected_runs must be finite and > 0, got {expected_runs!r}")
        return {"mu": m, "mean": m}
    eta = 1.0 if distribution == "geometric" else float(shape)
    if not (math.isfinite(eta) and eta > -1):
        raise ValueError(f"shape must be finite and > -1, got {shape!r}")
    gamma = tnb_gamma_for_mean(m, eta)
    mean = repetition_mean("truncated_negative_binomial", gamma=gamma, eta=eta)
    return {"gamma": gamma, "eta": eta, "mean": mean}


def selection_rdp(orders, rdp, distribution: str, params: dict[str, float]) -> np.ndarray:
    """RDP curve of the best of ``K`` runs from one run's curve (Theorems 2 and 6; docstring).

    Examples
    --------
    >>> o = np.array([2.0, 4.0, 8.0])
    >>> p = repetition_params("geometric", 10.0, 1.0)
    >>> bool(np.all(selection_rdp(o, pure_dp_rdp(0.5, o), "geometric", p) > pure_dp_rdp(0.5, o)))
    True
    """
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    if a.shape != r.shape or a.ndim != 1 or not np.all(a > 1):
        raise ValueError("orders and rdp must be 1-d of the same length, with every order > 1")
    mean = params["mean"]
    if distribution == "poisson":
        from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

        mu = params["mu"]
        out = np.empty_like(a)
        for i, lam in enumerate(a):
            eps_hat = math.log1p(1.0 / (lam - 1.0))
            delta_hat, _ = compute_delta(a, r, eps_hat)
            out[i] = r[i] + mu * delta_hat + math.log(mu) / (lam - 1.0)
    else:
        eta, gamma = params["eta"], params["gamma"]
        # E[K] rounded up a little: the bound needs an upper bound on log E[K]
        log_mean = math.log(mean) + 1e-12
        middle = (1.0 + eta) * np.min((1.0 - 1.0 / a) * r + math.log(1.0 / gamma) / a)
        out = r + middle + log_mean / (a - 1.0)
    # monotonicity in the order: the bound at λ holds at every smaller order
    idx = np.argsort(a)
    res = np.empty_like(out)
    res[idx] = np.minimum.accumulate(out[idx][::-1])[::-1]
    return res


def rdp_to_epsilon(orders, rdp, delta: float) -> float:
    """``(ε, δ)`` from an RDP curve (Canonne, Kamath, Steinke 2020, Prop. 12; dp-accounting).

    Examples
    --------
    >>> o = np.array([2.0, 8.0, 32.0])
    >>> 0 < rdp_to_epsilon(o, 0.5 * o, 1e-5) < 10
    True
    """
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    eps, _ = compute_epsilon(np.asarray(orders, dtype=float), np.asarray(rdp, dtype=float), delta)
    return float(eps)


@dataclass(frozen=True)
class SelectionResult:
    """What :func:`private_selection` releases: the best run and the guarantee of the release.

    Attributes
    ----------
    artifact : Any
        The best run's artifact (e.g. a trained model); None if no run was made (Poisson
        ``K = 0``).
    candidate : Any
        The candidate of that run (None if no run).
    score : float or None
        That run's private score (its own noisy value, as released by the run).
    run_budget : float
        The per-run budget solved from the total (public; its meaning is the caller's: pure ε
        of each run by default).
    privacy_report : PrivacyReport
        The total guarantee of the selection (what was charged to the ledger).
    """

    artifact: Any
    candidate: Any
    score: float | None
    run_budget: float
    privacy_report: PrivacyReport


def _total_epsilon(b, candidates, run_rdp, orders, distribution, params, delta, pure):
    curve = np.max([np.asarray(run_rdp(c, b, orders), dtype=float) for c in candidates], axis=0)
    eps = rdp_to_epsilon(orders, selection_rdp(orders, curve, distribution, params), delta)
    if pure and distribution == "geometric":
        eps = min(eps, 3.0 * b)  # Liu & Talwar 2019
    return eps


def _solve_budget(total, epsilon: float) -> float:
    """Largest per-run budget ``b`` (to a relative 1e-3) whose total is ``<= epsilon``."""
    lo, hi = epsilon * 1e-6, epsilon
    if total(lo) > epsilon:
        raise ValueError(
            f"epsilon={epsilon:g} is too small for this selection: even a per-run budget of "
            f"{lo:.3g} costs more in total (fewer expected runs or a larger epsilon)"
        )
    if total(hi) <= epsilon:
        return hi
    while hi / lo > 1.0 + 1e-3:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if total(mid) <= epsilon else (lo, mid)
    return lo


def private_selection(
    candidates: Sequence[Any],
    run: Callable[[Any, float, np.random.Generator], tuple[float, Any]],
    *,
    epsilon: float,
    delta: float | None = None,
    run_rdp: Callable[[Any, float, np.ndarray], np.ndarray] | None = None,
    distribution: str = "truncated_negative_binomial",
    expected_runs: float = 10.0,
    shape: float = 0.0,
    orders=None,
    relation: Relation | str = Relation.REPLACE_ONE,
    mechanism: str = "private selection",
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> SelectionResult:
    """Run random candidates a random number of times and release the best run, privately.

    ``epsilon`` (and ``delta``) are the TOTAL cost of the call. The per-run budget ``b`` is
    solved from it: the largest ``b`` whose selection bound (module docstring) is within the
    total. The total is charged to the ledger before any run.

    Parameters
    ----------
    candidates : sequence
        Candidate configurations (public); each run tries one drawn uniformly at random.
    run : callable ``(candidate, b, rng) -> (score, artifact)``
        One private run at per-run budget ``b``, drawing its noise from ``rng``. Higher score
        is better; a NaN score counts as ``-inf``. A run that raises an ``Exception`` or
        returns no real score is a failed run (score NaN, artifact None): the exception is
        dropped, since letting it out would tell that one of the hidden runs failed. A
        released artifact None thus means the best run failed (every run did): try ``run``
        on public or synthetic data first.
    epsilon : float
        Total ε of the selection.
    delta : float, optional
        Total δ. None: pure DP, which needs pure runs (``run_rdp=None``) and
        ``distribution="geometric"`` (Liu & Talwar: ``b = ε/3``).
    run_rdp : callable ``(candidate, b, orders) -> rdp``, optional
        Each run's RDP curve at budget ``b`` under ``relation``. Default: the run is pure
        ``b``-DP (curve :func:`pure_dp_rdp`).
    distribution : {"truncated_negative_binomial", "geometric", "poisson"}
        Law of the number of runs; ``shape`` is the TNB's ``η`` (0: logarithmic).
    expected_runs : float, default 10
        ``E[K]`` (> 1; Poisson: > 0).
    orders : array, optional
        Rényi orders (> 1), default :data:`DEFAULT_ORDERS`.
    relation : {"replace-one", "add/remove-one"}
        The relation every run's guarantee is stated under (the report's).
    mechanism : str
        Name of what is selected, for the report.
    random_state : None, int or numpy.random.Generator
        None for real releases; a seed makes the report say "seeded".
    ledger, dataset
        Charge the total to ``dataset``'s budget before any run
        (:func:`dpuq.privacy.ledger.charge`).

    Returns
    -------
    SelectionResult

    Examples
    --------
    >>> from dpuq.mechanisms.laplace import laplace_mechanism
    >>> true = {"a": 3.0, "b": 5.0}  # per-candidate counts on some data set
    >>> def run(c, b, rng):
    ...     return laplace_mechanism(true[c], sensitivity=1.0, epsilon=b, random_state=rng), c
    >>> res = private_selection(["a", "b"], run, epsilon=3.0, distribution="geometric",
    ...                         expected_runs=4, random_state=0)
    >>> round(res.run_budget, 3), res.privacy_report.epsilon
    (1.0, 3.0)
    """
    cands = list(candidates)
    if not cands:
        raise ValueError("candidates is empty: nothing to select from")
    if not callable(run):
        raise TypeError("run must be callable (candidate, budget, rng) -> (score, artifact)")
    eps = check_epsilon(epsilon)
    pure = run_rdp is None
    if delta is None:
        if not (pure and distribution == "geometric"):
            raise ValueError(
                "delta=None (pure DP) needs pure runs (run_rdp=None) and "
                "distribution='geometric' (Liu & Talwar's 3ε); otherwise pass delta"
            )
        d = 0.0
    else:
        d = check_in_open_unit(delta, "delta")
    params = repetition_params(distribution, expected_runs, shape)
    rel = Relation.coerce(relation)
    o = DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    if o.ndim != 1 or o.size == 0 or not np.all(np.isfinite(o) & (o > 1)):
        raise ValueError("orders must be a non-empty 1-d array of finite orders > 1")
    curve_of = (lambda c, b, oo: pure_dp_rdp(b, oo)) if pure else run_rdp

    # ---- solve the per-run budget from the total (public) --------------------------------
    if d == 0.0:
        b = eps / 3.0
        total = 3.0 * b
    else:
        f = lambda b_: _total_epsilon(b_, cands, curve_of, o, distribution, params, d, pure)  # noqa: E731
        b = _solve_budget(f, eps)
        total = f(b)
    details = {
        "distribution of the number of runs": distribution,
        "expected runs E[K]": params["mean"],
        **{k: v for k, v in params.items() if k != "mean"},
        "per-run budget": b,
        "candidates": len(cands),
        "accounting": "Liu & Talwar 2019 (3ε, pure runs)"
        if d == 0.0
        else "Papernot & Steinke 2022 "
        + ("Theorem 6" if distribution == "poisson" else "Theorem 2")
        + ", RDP converted to (ε, δ) (Canonne, Kamath, Steinke 2020)",
    }
    report = PrivacyReport(
        mechanism=f"{mechanism} (best of a random number of private runs)",
        epsilon=float(total),
        delta=float(d),
        relation=rel,
        sensitivity="each run's own guarantee (its RDP curve under the relation); the "
        "selection's bound from it (Papernot & Steinke 2022 / Liu & Talwar 2019)",
        details=details,
        notes=(
            "Only the best run is released: its score, candidate and artifact. The number of "
            "runs and the other runs are not (releasing them would void the bound). The wall "
            "time of the call grows with the number of runs: do not publish it.",
        ),
        seeded=random_state is not None,
        accountant=details["accounting"],
        tuning="accounted: the search over the candidates is part of this release's epsilon "
        "(best of a random number of runs; the runs' number and scores stay hidden)",
    )
    # always charged: with DPUQ_REQUIRE_LEDGER=1 a selection without a ledger is refused.
    # settings: public (the distribution of K, the budget, |candidates|)
    rng = release_generator(
        random_state, ledger, dataset, report, what=mechanism, settings=dict(details)
    )

    # ---- the runs ---------------------------------------------------------------------------
    k = sample_repetitions(
        distribution,
        rng,
        gamma=params.get("gamma", 0.0),
        eta=params.get("eta", 0.0),
        mu=params.get("mu", 0.0),
    )
    with sealed():  # nothing the hidden runs print, log, warn or do to global RNGs gets out
        best = _best_of_runs(cands, run, b, k, rng)
    score, cand, artifact = best if best is not None else (None, None, None)
    result = SelectionResult(artifact, cand, score, float(b), report)
    return mark_seeded(result, random_state)


def _one_run(run, cand, b: float, rng: np.random.Generator) -> tuple[float, Any]:
    """One hidden run; a run that raises (any ``Exception``) or returns no real score is a
    failed run, ``(nan, None)``. Nothing of it escapes: an exception let out of the ``k``
    hidden runs would say that some run failed (probability growing with the secret ``K``)
    and its traceback would hold ``k`` itself."""
    from dpuq.privacy.ledger import _within_charged_release

    try:
        reseed_global_states(rng)  # independent runs, even for a model_fn using global RNGs
        with _within_charged_release():  # the runs are paid for by the total charged above
            out = run(cand, b, rng)
        score, artifact = out
        if isinstance(score, Real):
            return float(score), artifact
    except Exception:  # a failed run, not an error of the release
        pass
    return math.nan, None


def _best_of_runs(cands, run, b: float, k: int, rng: np.random.Generator):
    """``k`` runs of uniformly drawn candidates; the best (score, candidate, artifact), ties
    broken uniformly. Inside the charged release (the runs charge nothing)."""
    best_key, best, ties = -math.inf, None, 0
    for _ in range(k):
        cand = cands[uniform_index(len(cands), rng)]
        score, artifact = _one_run(run, cand, b, rng)
        key = -math.inf if math.isnan(score) else score
        if best is None or key > best_key:
            best_key, best, ties = key, (float(score), cand, artifact), 1
        elif key == best_key:  # uniform tie-break: keep the newcomer with probability 1/ties
            ties += 1
            from fractions import Fraction

            if bernoulli_rational(Fraction(1, ties), rng):
                best = (float(score), cand, artifact)
    return best
