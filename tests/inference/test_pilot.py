"""The pilot check on public data (dpuq.inference.pilot): it tells a statistic inside the
general path's assumptions from one outside them, on synthetic laws chosen a priori."""

import numpy as np
import pandas as pd
import pytest

import dpuq
from dpuq.inference import statistics
from dpuq.inference.pilot import ASSUMPTION_TOLERANCE, pilot_check


def test_a_smooth_statistic_of_light_tailed_data_is_inside_the_assumptions():
    """The SD of normal data at n = 2000: the corrected subsets are nearly unbiased and vary
    as the full sample does, and the private interval covers."""
    public = np.random.default_rng(0).normal(size=(50_000, 1))
    pc = pilot_check(statistics.standard_deviation(0), public, statistic_bounds=(0, 5),
                     n=2000, epsilon=1.0, vectorized=True, reps=60,
                     random_state=1)  # fmt: skip
    assert pc.assumptions_hold.tolist() == [True]
    assert abs(pc.bias[0]) < 0.5 and 0.8 < pc.spread_ratio[0] < 1.4
    assert pc.coverage_without_noise[0] > 0.9 - ASSUMPTION_TOLERANCE
    # the release's own coverage: within 3 Monte Carlo SE of nominal (or above it)
    assert pc.coverage[0] >= 0.9 - 3 * np.sqrt(0.09 / 60)
    assert pc.truth[0] == pytest.approx(public.std(), rel=1e-12)
    assert pc.n_subsets * pc.subset_size <= 2000 and pc.informative[0] > 0.9


def test_a_heavy_tailed_sd_is_flagged_outside_the_assumptions():
    """Negative control: the SD of a lognormal(0, 1.5) variable. A few rows drive it; the
    subsets' mean is biased down by about a standard error and their spread is short, so the
    interval's large-epsilon limit undercovers: the pilot must say so."""
    public = np.random.default_rng(2).lognormal(0.0, 1.5, size=(50_000, 1))
    pc = pilot_check(statistics.standard_deviation(0), public, statistic_bounds=(0, 200),
                     n=2000, epsilon=1.0, vectorized=True, reps=60,
                     random_state=3)  # fmt: skip
    assert pc.assumptions_hold.tolist() == [False]
    assert pc.bias[0] < -0.5 and pc.coverage_without_noise[0] < 0.8
    assert "OUTSIDE the assumptions" in pc.summary()


def test_a_vector_statistic_and_a_dataframe_and_the_rows_are_left_alone():
    rng = np.random.default_rng(4)
    x = rng.normal(size=20_000)
    frame = pd.DataFrame({"x": x, "y": 2.0 * x + rng.normal(size=x.size)})
    before = frame.copy()

    def fit(rows, sample_weight):
        w = np.asarray(sample_weight, dtype=float)
        xs, ys = rows["x"].to_numpy(), rows["y"].to_numpy()
        mx, my = np.average(xs, weights=w), np.average(ys, weights=w)
        slope = np.sum(w * (xs - mx) * (ys - my)) / np.sum(w * (xs - mx) ** 2)
        return np.array([my - slope * mx, slope])

    pc = pilot_check(fit, frame, statistic_bounds=([-5, -5], [5, 5]), n=4000, epsilon=2.0,
                     reps=8, random_state=5)  # fmt: skip
    assert pc.truth.shape == pc.coverage.shape == pc.bias.shape == (2,)
    pd.testing.assert_frame_equal(frame, before)
    assert len(pc.summary().splitlines()) == 3


def test_it_runs_where_a_ledger_is_required_and_charges_nothing(monkeypatch, tmp_path):
    """A simulation on public data, like dpuq's own experiments: no ledger is needed, and an
    explicit release afterwards still must have one."""
    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    public = np.random.default_rng(6).normal(size=(5000, 1))
    f = statistics.standard_deviation(0)
    pc = pilot_check(f, public, statistic_bounds=(0, 5), n=1000, epsilon=2.0,
                     vectorized=True, reps=3, random_state=7)  # fmt: skip
    assert pc.reps == 3
    with pytest.raises(dpuq.privacy.ledger.LedgerRequiredError):
        dpuq.private_confidence_interval(public[:1000], alpha=0.1, epsilon=1.0, statistic=f,
                                         statistic_bounds=(0, 5), vectorized=True)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"statistic": "mean"}, "statistic must be callable"),
        ({"n": 3}, "n must be an integer >= 4"),
        ({"n": 10.0}, "n must be an integer"),
        ({"reps": 1}, "reps must be an integer in"),
        ({"reps": True}, "reps must be an integer in"),
        ({"alpha": 1.5}, "alpha"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"rows": np.empty((0, 1))}, "rows must be a non-empty"),
        ({"statistic_bounds": (1, 0)}, "statistic_bounds"),
    ],
)
def test_bad_settings_are_refused_by_name(change, match):
    kwargs = {
        "statistic": statistics.standard_deviation(0),
        "rows": np.ones((100, 1)),
        "statistic_bounds": (0, 5),
        "n": 50,
        "epsilon": 1.0,
        "alpha": 0.1,
        "reps": 5,
        "vectorized": True,
    }
    kwargs.update(change)
    with pytest.raises((ValueError, TypeError), match=match):
        pilot_check(kwargs.pop("statistic"), kwargs.pop("rows"), **kwargs)


def test_a_statistic_without_a_population_value_is_refused_and_missing_estimates_are_left_out():
    rows = np.random.default_rng(8).normal(size=(4000, 2))

    def nowhere(rows, sample_weight):
        return np.nan

    with pytest.raises(ValueError, match="no finite value on rows"):
        pilot_check(nowhere, rows, statistic_bounds=(-1, 1), n=500, epsilon=1.0, reps=3)

    def sometimes(rows, sample_weight):  # no value on a sample or subset whose first row < -2
        x = np.asarray(rows)[:, 0]
        return np.nan if x[0] < -2.0 else float(np.average(x, weights=sample_weight))

    pc = pilot_check(sometimes, rows, statistic_bounds=(-1, 1), n=500, epsilon=2.0, reps=6,
                     random_state=9)  # fmt: skip
    assert np.isfinite(pc.bias[0]) and np.isfinite(pc.coverage_without_noise[0])


def test_a_ledger_is_refused_and_n_is_capped_before_anything_is_drawn(tmp_path):
    """An outside probe: a ledger passed through was charged once per simulated release (3
    samples: 3.0 of ε), and n = 10^13 asked numpy for 72.8 TiB before any check."""
    led = dpuq.Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=50.0)
    public = np.random.default_rng(10).normal(size=(2000, 2))
    f = statistics.standard_deviation(0)
    kw = {"statistic_bounds": (0, 5), "epsilon": 1.0, "vectorized": True, "reps": 3}
    with pytest.raises(ValueError, match="takes no dataset, ledger"):
        pilot_check(f, public, n=2000, ledger=led, dataset="d", **kw)
    assert led.status("d").spent_epsilon == 0.0 and led.releases("d") == []
    with pytest.raises(ValueError, match="cells, more than the cap"):
        pilot_check(f, public, n=10**13, **kw)


def test_odd_statistics_are_refused_or_undetermined():
    public = np.random.default_rng(11).normal(size=(3000, 1))
    kw = {"statistic_bounds": (-5, 5), "n": 500, "epsilon": 1.0, "reps": 4, "random_state": 0}
    with pytest.raises(ValueError, match="no finite value"):  # +inf was clamped to the bound
        pilot_check(lambda r, w: np.inf, public, **kw)
    with pytest.raises(ValueError, match="real numbers"):
        pilot_check(lambda r, w: 1.0 + 1.0j, public, **kw)
    pc = pilot_check(lambda r, w: 0.5, public, **kw)  # a constant: nothing to measure
    assert pc.determined.tolist() == [False] and pc.assumptions_hold.tolist() == [False]
    assert "UNDETERMINED" in pc.summary()
