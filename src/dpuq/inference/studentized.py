"""The studentized root ``√n (θ̂ - θ)/σ̂`` (Chadha et al. 2024: eq. 3, Theorems 3 and 4).

Each subset's bootstrap gives a studentized CDF; the subsets' values are aggregated by a
private median and a mean clamped to a window around it (widened winsorised mean), which
lowers the sensitivity to the window width over ``s``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpuq._validation import (
    check_candidates,
    check_epsilon,
    check_in_open_unit,
)
from dpuq.inference._data import UninformativeIntervalWarning
from dpuq.inference.aggregation import (
    _private_clamped_mean,
    check_half_width,
)
from dpuq.inference.ensemble import (
    PrivateCDF,
    RootKernel,
    _check_thresholds,
    _ensemble_cdf,
    _ensemble_report,
    _prepare,
    ensemble_plan,
    ensemble_step,
)
from dpuq.mechanisms.discrete_laplace import check_laplace_epsilon
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.privacy.ledger import charge

__all__ = [
    "private_studentized_cdf",
    "studentized_half_width",
]


def studentized_half_width(m: float, n: int, b: int, n_resamples: int) -> float:
    """Default clamping half-width for a subset CDF value near ``m`` (studentized root).

    ``4 sqrt(m (1 - m)/T)`` covers the subsets' Monte Carlo spread; ``1/sqrt(n b)`` their
    spread from the data (the studentized root's subset CDFs differ by ``O(1/sqrt(n b))``,
    Theorem 3); ``1/T`` keeps the window open at ``m`` in {0, 1}.
    """
    mm = min(max(m, 0.0), 1.0)
    return (
        4.0 * math.sqrt(mm * (1.0 - mm) / n_resamples)
        + 1.0 / math.sqrt(n * b)
        + (1.0 / n_resamples)
    )


def private_studentized_cdf(
    x,
    t,
    *,
    epsilon: float,
    bounds,
    n_subsets="auto",
    n_resamples="auto",
    half_width="auto",
    median_share: float = 0.5,
    n_candidates: int = 201,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateCDF:
    """Private estimate of the studentized mean's CDF ``P(√n (x̄ - θ)/σ̂ <= t)`` (Chadha et al. 2024,
    Theorem 3).

    Each subset's bootstrap CDF of ``√n (x̄* - x̄_k)/σ̂*`` at ``t`` is computed as in the
    ensemble; because the studentized root is nearly pivotal these ``s`` values lie close
    together, and they are aggregated by :func:`dpuq.inference.aggregation._private_clamped_mean`:
    a private median over ``n_candidates`` points of [0, 1] (``median_share`` of the budget)
    and the mean clamped to ``median ± half_width`` plus ``Laplace(2 half_width/(s ε_mean))``.
    Sensitivity ``2 half_width/s`` instead of ``1/s``: the noise is far smaller when the window
    is narrow.

    Privacy: ε-DP, δ = 0 (sequential composition of the median and the clamped mean; one
    subset per record). ``k`` thresholds share ε equally (ε/k each).

    Parameters
    ----------
    half_width : "auto", float or callable
        Clamping half-width, or a function of the released median. Auto:
        :func:`studentized_half_width` (Monte Carlo and data spread of the subsets' values).
        Values outside the window are clamped, which biases the estimate: a wider window
        trades that bias for noise.
    median_share : float, default 0.5
        Share of each threshold's ε spent on the private median.
    n_candidates : int, default 201
        Candidates of the private median, equally spaced in [0, 1].

    Other parameters are those of :func:`private_bootstrap_cdf`.

    Returns
    -------
    PrivateCDF
        ``noise_scale`` is the largest Laplace scale used over the thresholds.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 20000)
    >>> est = private_studentized_cdf(x, 1.96, epsilon=1.0, bounds=(0, 1), random_state=0)
    >>> abs(est.value - 0.975) < 0.02
    True
    """
    data, _, eps, stat = _prepare(x, bounds, epsilon, "mean", 0.0, clip)
    tarr = _check_thresholds(t)
    tv = tarr.reshape(-1)
    rng = check_random_state(random_state)
    what = "private_studentized_cdf"
    # every setting before the charge: a refused setting costs nothing
    s_plan, tt = ensemble_plan(data.size, stat, n_subsets, eps, n_resamples, tv.size)
    n, b = data.size, data.size // s_plan
    if isinstance(half_width, str):
        if half_width != "auto":
            raise ValueError(
                f"half_width must be 'auto', a number or a callable, got {half_width!r}"
            )
        width = lambda m: studentized_half_width(m, n, b, tt)  # noqa: E731
    else:
        width = half_width
    cand = np.linspace(0.0, 1.0, check_candidates(n_candidates))
    eps_each = eps / tv.size
    share = check_in_open_unit(median_share, "median_share")
    # each threshold's median gets share of its ε/k (the exponential mechanism's floor) and its
    # clamped mean the rest, in Laplace noise
    check_epsilon(share * eps_each, "median_share * epsilon / thresholds")
    check_laplace_epsilon((1.0 - share) * eps_each, what="each threshold's mean epsilon")
    # a number is checked as _private_clamped_mean checks it; a callable at a public value
    # (the middle of [0, 1], where the subsets' CDF values lie): a broken one fails here
    check_half_width(width(0.5) if callable(width) else width,
                     " (or a function giving that, here at 0.5)")  # fmt: skip
    charge(
        ledger, dataset, eps, what=what, random_state=random_state,
        settings={"n": int(data.size), "statistic": stat.name, "thresholds": int(tv.size)},
    )  # fmt: skip
    kernel = RootKernel(stat, "studentized", thresholds=tv)
    (per_subset,), res = ensemble_step(data, stat, n_subsets, eps, n_resamples, rng, kernel)
    # The median lands outside the subsets' values with probability at most
    # G exp(-ε_med s / 4) (exponential-mechanism accuracy: a candidate beyond every value
    # has utility -s, the median about -s/2); then the clamped mean is badly biased.
    far = cand.size * math.exp(-eps_each * share * res.n_subsets / 4.0)
    if far > 0.05:
        warnings.warn(
            f"the private median of the subsets' values may miss them (probability up to "
            f"{min(far, 1.0):.2g}): s = {res.n_subsets} subsets with epsilon "
            f"{eps_each * share:.3g} for the median; use fewer thresholds, a larger epsilon or "
            "more data",
            UninformativeIntervalWarning,
            stacklevel=2,
        )
    out = np.empty(tv.size)
    scales, centers, widths = [], [], []
    for j in range(tv.size):  # one clamped mean per threshold (a handful)
        cm = _private_clamped_mean(
            per_subset[:, j],
            epsilon=eps_each,
            half_width=width,
            candidates=cand,
            median_share=share,
            rng=rng,
        )
        out[j] = cm.value
        scales.append(cm.noise_scale)
        centers.append(cm.center)
        widths.append(cm.half_width)
    report = _ensemble_report(
        res,
        "studentized private bootstrap ensemble (Chadha et al. 2024, Theorem 3): private "
        "median + clamped mean",
        eps,
        random_state is not None,
        f"per threshold: median utility 1; clamped mean 2 w/s (w = {max(widths):.4g} at most)",
        statistic="mean (studentized)",
        epsilon_per_threshold=eps_each,
        median_share=median_share,
        released_medians=", ".join(f"{c:.4g}" for c in centers),
        half_widths=", ".join(f"{w:.4g}" for w in widths),
    )
    return _ensemble_cdf(tarr, out, "studentized", "mean", res, max(scales), report)
