"""A pilot check of a statistic's private interval, on public or synthetic data (not a release).

The interval :func:`dpuq.private_confidence_interval` gives a callable statistic has
asymptotic coverage (:mod:`dpuq.inference.general`). It holds where the statistic's
jackknife-corrected estimates on subsets of ``b`` rows are nearly unbiased and vary as the
full sample's estimate does (smooth statistics of light-tailed data). It fails where a few
extreme rows drive the statistic: the validity zoo's SD of a variable with skewness 6, a
correlation or slope that one or two rows decide (docs/how-to/general_intervals.md). Whether a
statistic is in that regime at a given ``n`` depends on the data's law, which a release cannot
inspect without spending ε (and its answer would be noisy).

A user with **public or synthetic data like theirs** (a published table, last year's public
release, a simulation from a fitted model) can inspect it for free. :func:`pilot_check` treats
``rows`` as a population. It draws ``reps`` samples of ``n`` rows with replacement and, on
each:

- runs the private interval itself (seeded, charged to no ledger: a simulation) and checks
  whether it covers ``f(rows)``; it reports coverage with its Monte Carlo standard error, the
  median width and the share of informative releases;
- measures, without noise, the two assumptions the interval rests on: the **bias** of the
  mean of the ``s`` corrected subset estimates, in standard errors of the full-sample
  estimate (its spread over the samples), and the **spread ratio**
  ``sd(θ_k)/sqrt(s)`` over that standard error; and the coverage of the interval the
  subsets give without noise (the release's large-ε limit, at best): the share of samples
  whose ``mean(θ_k) ± z sd(θ_k)/sqrt(s)`` covers ``f(rows)``, ``z`` the normal ``1 − α/2``
  quantile.

The noise of the release hides part of a gap at small ε and none of it as ε grows, so
``coverage_without_noise`` says what to expect at a larger ε or for a similar table, and
``assumptions_hold`` is False where it is clearly (two Monte Carlo SEs) more than
:data:`ASSUMPTION_TOLERANCE` below nominal.

**Not private.** It reads ``rows`` directly and all it returns depends on them: use public
or synthetic data only, never the data you mean to release from.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from scipy.special import ndtri

from dpuq._validation import check_epsilon, check_in_open_unit, check_work
from dpuq.inference._subsets import subset_summaries
from dpuq.inference.general import JACKKNIFE_GROUPS
from dpuq.inference.general_plan import _check_statistic_bounds
from dpuq.inference.intervals import private_confidence_interval
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.privacy._ledger_gate import _simulation

__all__ = ["ASSUMPTION_TOLERANCE", "PilotCheck", "pilot_check"]

#: ``assumptions_hold`` where the coverage without noise is at least ``1 - α`` minus this:
#: about the loss of a bias of half a standard error at nominal 0.90 (0.86).
ASSUMPTION_TOLERANCE = 0.05
#: Most samples a pilot draws.
MAX_REPS = 10_000
#: Settings of :func:`dpuq.private_confidence_interval` a pilot does not pass on.
NOT_SETTINGS = frozenset({"ledger", "dataset"})


@dataclass(frozen=True)
class PilotCheck:
    """What :func:`pilot_check` measured; arrays have one entry per coordinate of ``f``.

    Attributes
    ----------
    n, epsilon, alpha, reps : the settings
    n_subsets, subset_size : the estimating subsets the release used at this ``n`` and ε
    truth : ``f(rows)``, the population value (clamped to ``statistic_bounds``)
    coverage, coverage_se : the private interval's coverage of ``truth`` and its Monte Carlo SE
    informative : share of releases that were not the whole of ``statistic_bounds``
    median_width : median width of the private intervals
    bias : mean of the corrected subset estimates minus ``truth``, in standard errors of the
        full-sample estimate
    spread_ratio : ``sd(θ_k)/sqrt(s)`` over that standard error
    coverage_without_noise : share of samples whose ``mean(θ_k) ± z sd(θ_k)/sqrt(s)`` covers
        ``truth``: the release's large-ε limit, at best
    coverage_without_noise_se : its Monte Carlo SE (binomial)
    """

    n: int
    epsilon: float
    alpha: float
    reps: int
    n_subsets: int
    subset_size: int
    truth: np.ndarray
    coverage: np.ndarray
    coverage_se: np.ndarray
    informative: np.ndarray
    median_width: np.ndarray
    bias: np.ndarray
    spread_ratio: np.ndarray
    coverage_without_noise: np.ndarray
    coverage_without_noise_se: np.ndarray

    @property
    def assumptions_hold(self) -> np.ndarray:
        """Per coordinate: False where the coverage without noise is below ``1 - alpha`` minus
        :data:`ASSUMPTION_TOLERANCE` by more than twice its Monte Carlo SE (clearly short), or
        where the measures are undetermined (:attr:`determined`)."""
        short = 1.0 - self.alpha - ASSUMPTION_TOLERANCE - self.coverage_without_noise
        return self.determined & ~(short > 2.0 * self.coverage_without_noise_se)

    @property
    def determined(self) -> np.ndarray:
        """Per coordinate: whether the bias and spread ratio could be measured (False where
        the statistic does not vary over the samples, or has no value on them)."""
        return np.isfinite(self.bias) & np.isfinite(self.spread_ratio)

    def summary(self) -> str:
        """One line per coordinate, with a verdict."""
        lines = [
            f"pilot on public data: n = {self.n}, epsilon = {self.epsilon:g}, {self.reps} "
            f"samples, {self.n_subsets} subsets of {self.subset_size} rows"
        ]
        for j in range(self.truth.size):
            if not self.determined[j]:
                verdict = ("UNDETERMINED: the statistic does not vary over the samples, or has "
                           "no value on them")  # fmt: skip
            elif self.assumptions_hold[j]:
                verdict = "assumptions hold"
            else:
                verdict = ("OUTSIDE the assumptions: coverage rests on the noise, and falls as "
                           "epsilon grows")  # fmt: skip
            lines.append(
                f"[{j}] coverage {self.coverage[j]:.3f} (SE {self.coverage_se[j]:.3f}, nominal "
                f"{1 - self.alpha:g}), informative {self.informative[j]:.2f}, median width "
                f"{self.median_width[j]:.4g}; subsets' bias {self.bias[j]:+.2f} SE, spread "
                f"ratio {self.spread_ratio[j]:.2f}, coverage without noise "
                f"{self.coverage_without_noise[j]:.3f} (SE {self.coverage_without_noise_se[j]:.3f})"
                f": {verdict}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _sampler(rows) -> tuple[int, Callable[[np.ndarray], object]]:
    """``(N, take)``: the population's size and a function from row indices to a sample."""
    if hasattr(rows, "iloc"):  # a DataFrame: a fresh frame per sample
        return len(rows), lambda idx: rows.iloc[idx].reset_index(drop=True)
    arr = np.asarray(rows)
    if arr.ndim not in (1, 2) or arr.shape[0] == 0:
        raise ValueError(f"rows must be a non-empty 1-d or 2-d array or a DataFrame, got "
                         f"shape {arr.shape}")  # fmt: skip
    return arr.shape[0], lambda idx: arr[idx]


def _values(f, rows, n: int, p: int, vectorized: bool) -> np.ndarray:
    """``f`` on all ``n`` of ``rows`` (weight 1 each), as a ``(p,)`` float array."""
    w = np.ones((1, n)) if vectorized else np.ones(n)
    out = np.asarray(f(rows, w))
    if out.dtype.kind not in "biuf":
        raise ValueError(f"statistic must return real numbers, got dtype {out.dtype}")
    out = out.astype(float).reshape(-1)
    if out.size != p:
        raise ValueError(f"statistic returned {out.size} values; statistic_bounds has "
                         f"{p}")  # fmt: skip
    return out


def _bias_and_ratio(full, sub_mean, sub_se, truth):
    """The subsets' bias and spread ratio, in standard errors of the full-sample estimate (its
    spread over the samples; a sample where ``f`` has no value is left out)."""
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN
        se = np.nanstd(full, axis=0, ddof=1)
        return (np.nanmean(sub_mean, axis=0) - truth) / se, np.nanmean(sub_se, axis=0) / se


def pilot_check(
    statistic: Callable,
    rows,
    *,
    statistic_bounds,
    n: int,
    epsilon: float,
    alpha: float = 0.1,
    vectorized: bool = False,
    reps: int = 100,
    random_state: RandomState = None,
    **interval_settings,
) -> PilotCheck:
    """Check on public or synthetic ``rows`` whether a statistic's private interval holds.

    **Not private**: ``rows`` are read directly (module docstring). ``rows`` play the
    population; ``reps`` samples of ``n`` rows are drawn from them with replacement.

    Parameters
    ----------
    statistic : callable
        ``f(rows, sample_weight)``, as for :func:`dpuq.private_confidence_interval`.
    rows : array-like of shape (N,) or (N, d), or DataFrame
        Public or synthetic data resembling the private data.
    statistic_bounds : (lo, hi)
        The public range of ``f``, as for the release.
    n : int
        The size of the private data set the release will see.
    epsilon, alpha : float
        The release's settings.
    vectorized : bool, default False
        As for the release.
    reps : int, default 100
        Samples (coverage's Monte Carlo SE is about ``sqrt(0.09 / reps)``).
    random_state : None, int or numpy.random.Generator
        Seeds the samples and the simulated releases.
    **interval_settings
        Other settings of :func:`dpuq.private_confidence_interval` (``method``,
        ``n_subsets``, ``estimate_share``, ``bias_correction``, ...).

    Returns
    -------
    PilotCheck

    Examples
    --------
    >>> import numpy as np
    >>> from dpuq.inference import statistics
    >>> public = np.random.default_rng(0).normal(size=(20_000, 1))
    >>> pc = pilot_check(statistics.standard_deviation(0), public, statistic_bounds=(0, 5),
    ...                  n=2000, epsilon=2.0, vectorized=True, reps=10, random_state=0)
    >>> bool(pc.assumptions_hold[0]), pc.subset_size
    (True, 45)
    """
    if not callable(statistic):
        raise TypeError("statistic must be callable: f(rows, sample_weight) -> float or array")
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 4:
        raise ValueError(f"n must be an integer >= 4, got {n!r}")
    if isinstance(reps, bool) or not isinstance(reps, Integral) or not 2 <= reps <= MAX_REPS:
        raise ValueError(f"reps must be an integer in [2, {MAX_REPS}], got {reps!r}")
    a = check_in_open_unit(alpha, "alpha")
    eps = check_epsilon(epsilon)
    lo, hi, _ = _check_statistic_bounds(statistic_bounds)
    owned = sorted(NOT_SETTINGS & set(interval_settings))
    if owned:  # a pilot is a simulation: it charges no ledger and releases nothing
        raise ValueError(f"pilot_check takes no {', '.join(owned)}: it is not a release (its "
                         "simulated releases are charged to no ledger)")  # fmt: skip
    rng = check_random_state(random_state)
    size, take = _sampler(rows)
    width = 1 if np.ndim(rows) == 1 else int(np.shape(rows)[1])
    check_work(n * width, f"a sample of n x columns = {n:,} x {width:,}", "use a smaller n")
    p = lo.size
    truth = _values(statistic, take(np.arange(size)), size, p, vectorized)
    if not np.all(np.isfinite(truth)):  # before the clamp: +inf is no value either
        raise ValueError("statistic has no finite value on rows (the population): a pilot "
                         "needs the population value it checks coverage of")  # fmt: skip
    truth = np.clip(truth, lo, hi)  # as the release clamps its estimates
    jackknife = interval_settings.get("bias_correction", True)
    covered, live, widths = (np.zeros((reps, p)) for _ in range(3))
    full, sub_mean, sub_se = (np.zeros((reps, p)) for _ in range(3))
    s = b = 0
    for r in range(reps):  # samples: each a whole release (tens of ms to a second)
        sample = take(rng.integers(0, size, size=n))
        with _simulation(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a simulation's warnings are not the user's
            out = private_confidence_interval(
                sample, alpha=a, epsilon=eps, statistic=statistic,
                statistic_bounds=statistic_bounds, vectorized=vectorized, random_state=rng,
                **interval_settings,
            )  # fmt: skip
        cis = out if isinstance(out, tuple) else (out,)
        lower = np.array([ci.lower for ci in cis])
        upper = np.array([ci.upper for ci in cis])
        covered[r] = (lower <= truth) & (truth <= upper)
        live[r] = [ci.informative for ci in cis]
        widths[r] = upper - lower
        details = cis[0].privacy_report.details
        s, b = int(details["n_subsets"]), int(details["subset_size"])
        full[r] = np.clip(_values(statistic, sample, n, p, vectorized), lo, hi)
        summ = subset_summaries(
            sample, statistic, lo, hi, n_subsets=s, n_resamples=0, vectorized=vectorized,
            rng=rng, jackknife_groups=min(JACKKNIFE_GROUPS, b) if jackknife else 0,
        )  # fmt: skip
        theta = np.where(np.isfinite(summ.theta), summ.theta, np.nan)  # no estimate: NaN
        k = np.isfinite(theta).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a subset column without values
            sub_mean[r] = np.nanmean(theta, axis=0)
            sub_se[r] = np.nanstd(theta, axis=0, ddof=1) / np.sqrt(k)
    bias, ratio = _bias_and_ratio(full, sub_mean, sub_se, truth)
    # the interval without noise, sample by sample: the subsets' mean ± z times its own SE
    z = float(ndtri(1.0 - a / 2.0))
    no_noise = (np.abs(sub_mean - truth) <= z * sub_se).mean(axis=0)  # NaN: a miss
    cov = covered.mean(axis=0)
    return PilotCheck(
        n=int(n), epsilon=eps, alpha=a, reps=int(reps), n_subsets=s, subset_size=b,
        truth=truth, coverage=cov, coverage_se=np.sqrt(cov * (1.0 - cov) / reps),
        informative=live.mean(axis=0), median_width=np.median(widths, axis=0), bias=bias,
        spread_ratio=ratio, coverage_without_noise=no_noise,
        coverage_without_noise_se=np.sqrt(no_noise * (1.0 - no_noise) / reps),
    )  # fmt: skip
