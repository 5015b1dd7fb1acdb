"""dpuq.inference.statistics: the zoo's statistics as a library (issue 33).

Each is checked against an independent reference (numpy, scipy, scikit-learn) with integer
weights read as frequencies, vectorised against one call per weight vector, on read-only
inputs, and where a subset leaves it undefined.
"""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

import dpuq
from dpuq.inference import statistics as st


@pytest.fixture
def table():
    rng = np.random.default_rng(7)
    n = 80
    x = rng.gamma(2.0, 1.0, n).round(1)  # rounded: ties for the AUC
    y = 1.0 + 0.5 * x + rng.normal(size=n)
    z = (rng.random(n) < 1 / (1 + np.exp(-(x - 2)))).astype(float)
    e = (rng.random(n) < 0.4).astype(float)
    return np.column_stack([rng.lognormal(size=n), x, y, z, e])


def _log_odds(z, e):
    a, b = np.sum((z == 1) & (e == 1)), np.sum((z == 1) & (e == 0))
    c, d = np.sum((z == 0) & (e == 1)), np.sum((z == 0) & (e == 0))
    return np.log(a * d / (b * c))


REFERENCES = {
    "standard_deviation": (st.standard_deviation(0), lambda t: np.std(t[:, 0])),
    "variance": (st.variance(0), lambda t: np.var(t[:, 0])),
    "correlation": (st.correlation(1, 2), lambda t: np.corrcoef(t[:, 1], t[:, 2])[0, 1]),
    "ratio_of_means": (st.ratio_of_means(2, 1), lambda t: t[:, 2].mean() / t[:, 1].mean()),
    "ols_slope": (st.ols_slope(1, 2), lambda t: np.polyfit(t[:, 1], t[:, 2], 1)[0]),
    "logistic_slope": (
        st.logistic_slope(1, 3, center=2.0, scale=1.5),
        lambda t: (
            LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000)
            .fit((t[:, [1]] - 2.0) / 1.5, t[:, 3])
            .coef_[0, 0]
        ),
    ),
    "log_odds_ratio": (st.log_odds_ratio(3, 4), lambda t: _log_odds(t[:, 3], t[:, 4])),
    "auc": (st.auc(1, 3), lambda t: roc_auc_score(t[:, 3], t[:, 1])),
    "difference_of_means": (
        st.difference_of_means(2, 4),
        lambda t: t[t[:, 4] == 1, 2].mean() - t[t[:, 4] == 0, 2].mean(),
    ),
    "median": (st.weighted_quantile(0.5), None),
}


@pytest.mark.parametrize("name", sorted(k for k, v in REFERENCES.items() if v[1] is not None))
def test_integer_weights_are_frequencies(name, table):
    """f(rows, w) with integer w equals the reference on the rows repeated w times."""
    f, ref = REFERENCES[name]
    rng = np.random.default_rng(1)
    for _ in range(5):
        w = rng.multinomial(table.shape[0], np.full(table.shape[0], 1 / table.shape[0]))
        expanded = np.repeat(table, w, axis=0)
        tol = 1e-6 if name == "logistic_slope" else 1e-10
        assert float(f(table, w.astype(float))) == pytest.approx(ref(expanded), rel=tol, abs=tol)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_vectorised_equals_one_call_per_weight_vector_on_read_only_rows(name, table):
    f = REFERENCES[name][0]
    rows = table.copy()
    rows.flags.writeable = False
    w = np.random.default_rng(2).multinomial(80, np.full(80, 1 / 80), size=6).astype(float)
    w.flags.writeable = False
    stacked = np.asarray(f(rows, w))
    assert stacked.shape == (6,)
    single = np.array([f(rows, w[t]) for t in range(6)])
    np.testing.assert_allclose(stacked, single, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(rows, table)  # nothing was written


def test_undefined_subsets_are_no_estimate_not_a_made_up_number():
    const = np.column_stack([np.ones(10), np.ones(10), np.arange(10.0), np.zeros(10), np.ones(10)])
    w = np.ones(10)
    assert np.isnan(st.correlation(1, 2)(const, w))
    assert np.isnan(st.ols_slope(1, 2)(const, w))
    assert np.isnan(st.difference_of_means(2, 4)(const, w))  # nobody in group 0
    assert not np.isfinite(st.log_odds_ratio(3, 4)(const, w))  # empty cells
    assert np.isnan(st.auc(1, 3)(const, w))  # no positives
    assert not np.isfinite(st.ratio_of_means(2, 3)(const, w))  # a mean of 0 below
    # such values are "no estimate" in the release, never a made-up number: a group of 3 rows
    # in 5,000 has no row in most subsets, and the release says it cannot measure the spread
    rows = np.column_stack([np.arange(5000.0) / 5000, np.where(np.arange(5000) < 3, 1.0, 0.0)])
    with pytest.warns(dpuq.UninformativeIntervalWarning):
        ci = dpuq.private_confidence_interval(
            rows, statistic=st.difference_of_means(0, 1), statistic_bounds=(-1, 1),
            vectorized=True, alpha=0.1, epsilon=1.0, random_state=0,
        )  # fmt: skip
    assert ci.informative is False and "spread is too large" in ci.details["reason"]


def test_constant_columns_and_undefined_logistic_fits_are_no_estimate():
    """Review findings: a column constant at 0.1 gave slopes up to 3e16 (its weighted mean is
    not exactly 0.1); a logistic fit without events, with constant x, or separated returned
    about 0.1, 0 or 100 instead of NaN."""
    rng = np.random.default_rng(5)
    w = rng.multinomial(50, np.full(50, 1 / 50), size=400).astype(float)
    for value in (0.1, 0.3, 7.7):
        const = np.column_stack([np.full(50, value), rng.normal(size=50)])
        assert np.isnan(st.ols_slope(0, 1)(const, w)).all()
        assert np.isnan(st.correlation(0, 1)(const, w)).all()
        assert np.all(st.standard_deviation(0)(const, w) == 0.0)
        assert np.isnan(st.ols_slope(0, 1, x_bounds=(0, value))(const + 1.0, w)).all()
    x = rng.normal(size=50)
    no_event = np.column_stack([x, np.zeros(50)])
    flat_x = np.column_stack([np.full(50, 2.0), rng.integers(0, 2, 50)])
    separated = np.column_stack([x, (x > 0).astype(float)])
    for rows in (no_event, flat_x, separated):
        assert np.isnan(st.logistic_slope()(rows, w)).all()
        assert np.isnan(st.logistic_slope()(rows, np.ones(50)))
    fine = np.column_stack([x, (rng.random(50) < 1 / (1 + np.exp(-x))).astype(float)])
    assert np.isfinite(st.logistic_slope()(fine, np.ones(50)))
    zero = np.zeros((2, 50))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, whatever the weights
        for f in (st.standard_deviation(0), st.correlation(0, 1), st.ols_slope(0, 1),
                  st.logistic_slope(0, 1), st.auc(0, 1), st.difference_of_means(0, 1)):  # fmt: skip
            assert np.isnan(f(fine, zero)).all()


def test_second_review_findings():
    """A column constant among the weighted rows but not at row 0 (a zero weight there) was
    ~1e-16 off centre (slopes of 2e15); per-coordinate step clipping turned Newton's
    direction, so near-separated fits that have a maximum cycled and came out NaN; a fixed
    ridge was rounded away at large weights and one singular row failed the whole call."""
    rows = np.column_stack([np.r_[1.0, np.zeros(36)], np.random.default_rng(6).normal(size=37)])
    w = np.r_[0.0, np.full(36, 5000 / 37)]  # row 0 (the only one with x = 1) weighs nothing
    assert np.isnan(st.ols_slope(0, 1)(rows, w)) and np.isnan(st.correlation(0, 1)(rows, w))
    assert st.standard_deviation(0)(rows, w) == 0.0
    # one overlapping point: the maximum exists (a large slope), and is found
    x = np.linspace(-2, 2, 30)
    z = (x > 0).astype(float)
    z[np.argmin(np.abs(x - 0.2))] = 0.0  # one non-event among the events' side
    z[np.argmin(np.abs(x + 0.2))] = 1.0  # and one event among the others
    slope = float(st.logistic_slope()(np.column_stack([x, z]), np.ones(30)))
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x[:, None], z)
    assert np.isfinite(slope) and slope == pytest.approx(ref.coef_[0, 0], rel=1e-4)
    flat = np.column_stack([np.full(30, 2.0), z])
    big = np.vstack([np.full(30, 1e9), np.ones(30)])  # the first row's Hessian is singular
    out = st.logistic_slope()(np.column_stack([x, z]), big)
    assert np.isfinite(out[1]) and np.isnan(st.logistic_slope()(flat, big)).all()


def test_third_review_findings_absent_rows_missing_values_and_weight_scale(table):
    """An outside probe (eighth session): a row of weight 0 holding ``inf`` or NaN poisoned
    the moment statistics (``0 × inf``); a NaN score sorted to the top of the AUC and a NaN
    label or group read as 0; the median of rows with no weight was the largest value; a
    logistic fit under weights of 1e-22 returned a finite wrong slope (an absolute ridge)."""
    w = np.ones(table.shape[0] + 1)
    w[-1] = 0.0
    both = np.vstack([np.ones(table.shape[0]), w[:-1] * 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, (f, _) in REFERENCES.items():
            clean = f(table, np.ones(table.shape[0]))
            for bad in (np.inf, -np.inf, np.nan, 1e100):
                extra = np.vstack([table, np.full(table.shape[1], bad)])
                got = f(extra, w)  # absent: the value without the extra row
                assert got == pytest.approx(clean, rel=1e-12, nan_ok=False), (name, bad)
            holed = table.copy()
            holed[5, :] = np.nan  # a missing value in a row with weight: no estimate
            assert np.isnan(f(holed, np.ones(table.shape[0]))), name
            skip5 = np.ones(table.shape[0])
            skip5[5] = 0.0  # ... and absent where that row has no weight, per weight row
            out = f(holed, np.vstack([skip5, np.ones(table.shape[0])]))
            assert np.isfinite(out[0]) and np.isnan(out[1]), name
            assert np.isnan(f(table, np.zeros(table.shape[0]))), name  # no weight at all
            assert np.allclose(f(table, both), f(table, both * 1e-22), rtol=1e-9), name


def test_the_factories_name_their_statistics():
    assert st.ols_slope().__name__ == "ols_slope" and st.auc().__name__ == "auc"
    assert st.clipped(st.variance(), {0: (0, 1)}).__name__ == "clipped variance"
    ci = dpuq.private_confidence_interval(
        np.random.default_rng(0).normal(size=(2000, 2)), statistic=st.correlation(),
        statistic_bounds=(-1, 1), vectorized=True, alpha=0.1, epsilon=1.0, random_state=0,
    )  # fmt: skip
    assert ci.statistic == "correlation"


def test_bounded_influence_slope_resists_one_row():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 500)
    rows = np.column_stack([x, 0.5 * x + 0.1 * rng.normal(size=500)])
    lever = np.vstack([rows, [[60.0, 60.0]]])  # one row of extreme leverage
    w = np.ones(501)
    plain, bounded = st.ols_slope()(lever, w), st.ols_slope(x_bounds=(0, 1), y_bounds=(0, 1))
    assert abs(float(plain) - 0.5) > 0.4  # the row drives the plain slope to about 1
    assert abs(float(bounded(lever, w)) - 0.5) < 0.05


def test_clipped_is_the_statistic_of_clipped_columns_and_writes_nothing(table):
    rows = table.copy()
    rows.flags.writeable = False
    w = np.random.default_rng(4).multinomial(80, np.full(80, 1 / 80), size=3).astype(float)
    f = st.clipped(st.correlation(1, 2), {1: (0.5, 3.0), 2: (1.0, 2.5)})
    manual = table.copy()
    manual[:, 1] = np.clip(manual[:, 1], 0.5, 3.0)
    manual[:, 2] = np.clip(manual[:, 2], 1.0, 2.5)
    np.testing.assert_array_equal(f(rows, w), st.correlation(1, 2)(manual, w))
    np.testing.assert_array_equal(rows, table)
    one = st.clipped(st.standard_deviation(), {0: (0.0, 1.0)})
    assert float(one(np.array([0.0, 5.0]), np.ones(2))) == 0.5  # 5 counts as 1
    with pytest.raises(ValueError, match="column 0 only"):
        st.clipped(st.standard_deviation(), {1: (0, 1)})(np.arange(3.0), np.ones(3))
    for bad, match in (({}, "at least one"), ({0: (2, 1)}, "bounds"), ([1], "dict"),
                       ({-1: (0, 1)}, "column")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            st.clipped(st.standard_deviation(), bad)
    with pytest.raises(TypeError, match="callable"):
        st.clipped(None, {0: (0, 1)})


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: st.correlation(-1, 2), "x must be a column index"),
        (lambda: st.ols_slope(0, 1.5), "y must be a column index"),
        (lambda: st.auc(True, 1), "score must be a column index"),
        (lambda: st.ols_slope(x_bounds=(1, 0)), "x_bounds"),
        (lambda: st.ols_slope(y_bounds="ab"), "y_bounds"),
        (lambda: st.logistic_slope(scale=0), "scale"),
        (lambda: st.logistic_slope(iterations=0), "iterations"),
        (lambda: st.weighted_quantile(1.5), "quantile"),
    ],
)
def test_bad_settings_name_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_second_column_of_one_column_rows_is_an_error():
    with pytest.raises(ValueError, match="column 1"):
        st.correlation(0, 1)(np.arange(5.0), np.ones(5))


def test_ready_made_statistic_through_the_release_covers_on_a_known_law():
    """A negative-free smoke check of the path users take (coverage is the zoo's job):
    20 seeded samples of n = 2000 from a law with slope 2; the interval holds 2 in most."""
    hits = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=2000)
        rows = np.column_stack([x, 1.0 + 2.0 * x + rng.normal(size=2000)])
        ci = dpuq.private_confidence_interval(
            rows, statistic=st.ols_slope(), statistic_bounds=(-10.0, 10.0), vectorized=True,
            alpha=0.1, epsilon=1.0, random_state=seed,
        )  # fmt: skip
        hits += ci.lower <= 2.0 <= ci.upper
    assert hits >= 15  # nominal 0.9: P(Binomial(20, 0.9) < 15) = 0.011
