"""Private conformal regression: scores, intervals, coverage, privacy, released state, errors."""

import math
import pickle
import warnings

import numpy as np
import pytest
from scipy import stats

import dpuq

ALPHA = 0.1


def linear_data(rng, n, noise=1.0):
    x = rng.uniform(-2, 2, size=(n, 1))
    y = 3 * x[:, 0] + rng.normal(scale=noise, size=n)
    return x, y


class FixedLinear:
    """A 'trained' model: the true regression function (no fit needed)."""

    def predict(self, X):
        return 3 * np.asarray(X)[:, 0]


class FixedBand:
    """One object returning (n, 2) lower/upper quantile predictions."""

    def __init__(self, half_width):
        self.half_width = half_width

    def predict(self, X):
        mid = 3 * np.asarray(X)[:, 0]
        return np.column_stack((mid - self.half_width, mid + self.half_width))


class TestScores:
    def test_absolute_residual_is_scaled_and_capped(self, rng):
        pred = rng.normal(size=200)
        y = pred + rng.normal(scale=3, size=200)
        s = dpuq.absolute_residual_scores(pred, y, bound=2.5)
        raw = np.abs(y - pred)
        np.testing.assert_allclose(s[raw < 2.5], raw[raw < 2.5] / 2.5)
        assert np.all(s[raw >= 2.5] == 1.0) and (raw >= 2.5).any()

    def test_cqr_score_sign_and_bounds(self):
        band = np.array([[0.0, 2.0]] * 5)
        y = np.array([1.0, 0.0, 2.5, -10.0, 20.0])  # inside, on edge, outside, far out
        s = dpuq.cqr_scores(band, y, bound=2.0)
        assert s[0] < 0.5 and s[1] == 0.5 and 0.5 < s[2] < 1.0
        assert s[3] == 1.0 and s[4] == 1.0
        deep_inside = dpuq.cqr_scores([[-100.0, 100.0]], [0.0], bound=2.0)
        assert deep_inside.tolist() == [0.0]

    @pytest.mark.parametrize("t", [0.0, 0.1, 0.37, 0.5, 0.8, 0.99])
    def test_absolute_interval_is_exactly_the_set_of_conforming_y(self, rng, t):
        pred = rng.normal(size=50)
        iv = dpuq.absolute_residual_intervals(pred, t, bound=3.0)
        ys = pred[:, None] + np.linspace(-5, 5, 1001)[None, :] + 1e-7  # avoid exact edges
        inside = (iv[:, :1] <= ys) & (ys <= iv[:, 1:])
        scores = dpuq.absolute_residual_scores(
            np.repeat(pred, ys.shape[1]), ys.ravel(), bound=3.0
        ).reshape(ys.shape)
        np.testing.assert_array_equal(inside, scores <= t)

    @pytest.mark.parametrize("t", [0.0, 0.2, 0.5, 0.63, 0.95])
    def test_cqr_interval_is_exactly_the_set_of_conforming_y(self, rng, t):
        lo = rng.normal(size=40)
        band = np.column_stack((lo, lo + rng.uniform(0.1, 3, size=40)))
        iv = dpuq.cqr_intervals(band, t, bound=2.0)
        ys = lo[:, None] + np.linspace(-6, 8, 1401)[None, :] + 1e-7
        inside = (iv[:, :1] <= ys) & (ys <= iv[:, 1:])
        scores = dpuq.cqr_scores(
            np.repeat(band, ys.shape[1], axis=0), ys.ravel(), bound=2.0
        ).reshape(ys.shape)
        np.testing.assert_array_equal(inside, scores <= t)

    def test_threshold_one_is_the_whole_line(self, rng):
        pred = rng.normal(size=7)
        for iv in (
            dpuq.absolute_residual_intervals(pred, 1.0, bound=1.0),
            dpuq.cqr_intervals(np.column_stack((pred, pred + 1)), 1.0, bound=1.0),
        ):
            assert iv.shape == (7, 2)
            assert np.all(iv[:, 0] == -np.inf) and np.all(iv[:, 1] == np.inf)


def _conditional_coverage(score, t, bound, half_width=1.0):
    """P(Y in interval | threshold t) for y = 3x + N(0, 1) and the fixed models below."""
    t = np.asarray(t, dtype=float)
    if score == "absolute":
        reach = t * bound
    else:
        reach = np.maximum(half_width + bound * (2 * t - 1), 0.0)
    return np.where(t >= 1, 1.0, 2 * stats.norm.cdf(reach) - 1)


class TestCoverage:
    """Coverage over many random calibration/test splits, stated margins of 3 SE."""

    @pytest.mark.parametrize("score", ["absolute", "cqr"])
    def test_coverage_at_least_target_and_equal_to_its_exact_expectation(self, score):
        rng = np.random.default_rng(2024)
        n_cal, n_test, splits, eps, bound = 600, 400, 300, 2.0, 4.0
        m, _ = dpuq.auto_n_bins(n_cal, ALPHA, eps)
        x, y = linear_data(rng, splits * (n_cal + n_test))
        x = x.reshape(splits, n_cal + n_test, 1)
        y = y.reshape(splits, n_cal + n_test)
        model = FixedLinear() if score == "absolute" else FixedBand(1.0)
        covered, expected = np.empty(splits), np.empty(splits)
        for k in range(splits):
            reg = dpuq.PrivateConformalRegressor(
                model, epsilon=eps, confidence_level=1 - ALPHA, conformity_score=score, bound=bound,
                n_bins=m, random_state=int(rng.integers(2**32)),
            ).conformalize(x[k, :n_cal], y[k, :n_cal])  # fmt: skip
            iv = reg.predict_interval(x[k, n_cal:]).sets
            yt = y[k, n_cal:]
            covered[k] = np.mean((iv[:, 0] <= yt) & (yt <= iv[:, 1]))
            # exact law of this split's release -> its exact expected coverage
            pred = model.predict(x[k, :n_cal])
            scores = (
                dpuq.absolute_residual_scores(pred, y[k, :n_cal], bound=bound)
                if score == "absolute"
                else dpuq.cqr_scores(pred, y[k, :n_cal], bound=bound)
            )
            t, p = dpuq.private_quantile_distribution(scores, reg.calibration_.level, eps, m)
            expected[k] = p @ _conditional_coverage(score, t, bound)
        se = covered.std(ddof=1) / math.sqrt(splits)
        assert covered.mean() >= 1 - ALPHA - 3 * se
        diff = covered - expected
        assert abs(diff.mean()) <= 3 * diff.std(ddof=1) / math.sqrt(splits)
        assert covered.mean() < 0.99  # informative: not the whole line

    def test_too_small_bound_widens_but_never_loses_coverage(self):
        rng = np.random.default_rng(5)
        x, y = linear_data(rng, 3000)
        widths, covs = {}, {}
        for bound in (0.5, 1.5, 4.0):
            reg = dpuq.PrivateConformalRegressor(
                FixedLinear(), epsilon=2.0, bound=bound, random_state=1
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", dpuq.UninformativeReleaseWarning)
                reg.conformalize(x[:1000], y[:1000])
            iv = reg.predict_interval(x[1000:]).sets
            widths[bound] = float(np.mean(iv[:, 1] - iv[:, 0]))
            covs[bound] = float(np.mean((iv[:, 0] <= y[1000:]) & (y[1000:] <= iv[:, 1])))
        # B = 0.5 is below the 90% residual quantile (1.64): the release is the whole line
        assert widths[0.5] == np.inf and covs[0.5] == 1.0
        assert np.isfinite(widths[4.0]) and covs[4.0] >= 0.87
        assert widths[1.5] >= widths[4.0] or widths[1.5] == np.inf


class TestEstimators:
    def test_shapes_like_mapie(self, rng):
        x, y = linear_data(rng, 900)
        reg = dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0, bound=5.0, random_state=0)
        assert reg.conformalize(x[:600], y[:600]) is reg
        assert reg.predict(x[600:]).shape == (300,)
        iv = reg.predict_interval(x[600:]).sets
        assert iv.shape == (300, 2) and np.all(iv[:, 0] <= iv[:, 1])
        np.testing.assert_allclose(iv.mean(axis=1), reg.predict(x[600:]))
        np.testing.assert_allclose(iv[:, 1] - iv[:, 0], 2 * reg.threshold_ * 5.0)

    def test_cqr_with_two_sklearn_quantile_regressors_trained_by_fit(self, rng):
        from sklearn.ensemble import GradientBoostingRegressor

        x, y = linear_data(rng, 1400)
        y = y + x[:, 0] * rng.normal(size=1400)  # heteroscedastic: CQR adapts the width
        pair = tuple(
            GradientBoostingRegressor(loss="quantile", alpha=a, n_estimators=60, max_depth=2)
            for a in (0.05, 0.95)
        )
        reg = dpuq.PrivateConformalRegressor(
            pair, epsilon=2.0, conformity_score="cqr", bound=3.0, prefit=False, random_state=0
        )
        reg.fit(x[:600], y[:600]).conformalize(x[600:1100], y[600:1100])
        iv = reg.predict_interval(x[1100:]).sets
        assert iv.shape == (300, 2)
        w = iv[:, 1] - iv[:, 0]
        assert np.corrcoef(np.abs(x[1100:, 0]), w)[0, 1] > 0.5  # wider where noise is larger
        assert reg.privacy_report_.details["bound (public)"] == 3.0

    def test_one_object_or_callable_returning_both_quantiles(self, rng):
        x, y = linear_data(rng, 800)
        a = dpuq.PrivateConformalRegressor(
            FixedBand(1.2), epsilon=1.0, conformity_score="cqr", bound=3.0, random_state=4
        ).conformalize(x[:500], y[:500])
        b = dpuq.PrivateConformalRegressor(
            FixedBand(1.2).predict, epsilon=1.0, conformity_score="cqr", bound=3.0, random_state=4
        ).conformalize(x[:500], y[:500])
        assert a.threshold_ == b.threshold_
        np.testing.assert_array_equal(
            a.predict_interval(x[500:]).sets, b.predict_interval(x[500:]).sets
        )

    def test_release_matches_the_functional_core(self, rng):
        x, y = linear_data(rng, 700)
        reg = dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0, bound=4.0, random_state=9)
        reg.conformalize(x, y)
        scores = dpuq.absolute_residual_scores(FixedLinear().predict(x), y, bound=4.0)
        cal = dpuq.calibrate(scores, alpha=ALPHA, epsilon=1.0, random_state=9)
        assert reg.threshold_ == cal.threshold and reg.calibration_.n_bins == cal.n_bins

    def test_uninformative_release_gives_whole_line_and_warns(self, rng):
        x, y = linear_data(rng, 60)
        reg = dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=0.5, bound=4.0)
        with pytest.warns(dpuq.UninformativeReleaseWarning):
            reg.conformalize(x[:40], y[:40])
        assert reg.threshold_ == 1.0 and not reg.calibration_.informative
        iv = reg.predict_interval(x[40:]).sets
        assert np.all(np.isinf(iv))


class TestPrivacy:
    def test_swapping_one_point_changes_the_law_by_at_most_e_eps(self, rng):
        """Exact laws of the released threshold on neighbouring calibration sets."""
        eps, bound, m = 1.0, 2.0, 8
        x, y = linear_data(rng, 30)
        pred = FixedLinear().predict(x)
        q = 0.75  # any level: the mechanism is ε-DP at every level
        base = dpuq.absolute_residual_scores(pred, y, bound=bound)
        _, p0 = dpuq.private_quantile_log_distribution(base, q, eps, m)
        worst = 0.0
        for i in range(30):
            for y_new in (-50.0, pred[i], pred[i] + 0.77, pred[i] + 50.0):
                s = base.copy()
                s[i] = dpuq.absolute_residual_scores([pred[i]], [y_new], bound=bound)[0]
                _, p1 = dpuq.private_quantile_log_distribution(s, q, eps, m)
                worst = max(worst, np.max(np.abs(p1 - p0)))
        assert worst <= eps + 1e-12
        assert worst > 0.1 * eps  # the check is not vacuous

    def test_fitted_object_holds_no_calibration_data(self, rng):
        from sklearn.linear_model import Ridge

        x, y = linear_data(rng, 1500)
        model = Ridge().fit(x[:500], y[:500])
        reg = dpuq.PrivateConformalRegressor(model, epsilon=1.0, bound=4.0, random_state=0)
        reg.conformalize(x[500:], y[500:])
        blob = pickle.dumps(reg)
        residuals = np.abs(y[500:] - model.predict(x[500:]))
        for values in (y[500:], x[500:, 0], residuals, residuals / 4.0):
            assert not any(np.float64(v).tobytes() in blob for v in values)
        assert len(blob) - len(pickle.dumps(model)) < 4000
        clone = pickle.loads(blob)
        np.testing.assert_array_equal(
            clone.predict_interval(x[:50]).sets, reg.predict_interval(x[:50]).sets
        )


class TestErrors:
    def test_bound_is_required_and_positive(self, rng):
        x, y = linear_data(rng, 300)
        with pytest.raises(TypeError, match="bound"):
            dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0, bound=None).conformalize(
                x, y
            )
        for bad in (0.0, -1.0, np.inf, np.nan):
            with pytest.raises(ValueError, match="bound"):
                dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0, bound=bad).fit(x, y)
        with pytest.raises(TypeError):
            dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0)  # no default bound

    def test_bad_parameters_name_the_argument(self, rng):
        x, y = linear_data(rng, 300)
        cases = [
            ({"conformity_score": "quantile"}, ValueError, "conformity_score"),
            ({"epsilon": 0.0}, ValueError, "epsilon"),
            ({"confidence_level": 0.3}, ValueError, "confidence_level"),
            ({"confidence_level": 1.0}, ValueError, "confidence_level"),
        ]
        for params, error, name in cases:
            kw = {"epsilon": 1.0, "bound": 2.0, **params}
            with pytest.raises(error, match=name):
                dpuq.PrivateConformalRegressor(FixedLinear(), **kw).conformalize(x, y)

    def test_bad_data(self, rng):
        x, y = linear_data(rng, 300)
        reg = dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0, bound=2.0)
        y_nan = y.copy()
        y_nan[3] = np.nan
        with pytest.raises(ValueError, match="non-finite"):
            reg.conformalize(x, y_nan)
        with pytest.raises(ValueError, match="y_cal"):
            reg.conformalize(x, y[:-1])
        cqr = dpuq.PrivateConformalRegressor(
            FixedLinear(), epsilon=1.0, bound=2.0, conformity_score="cqr"
        )
        with pytest.raises(ValueError, match=r"\(n, 2\)"):
            cqr.conformalize(x, y)
        pair = dpuq.PrivateConformalRegressor(
            (FixedLinear(), FixedLinear()), epsilon=1.0, bound=2.0
        )
        with pytest.raises(TypeError, match="not a pair"):
            pair.conformalize(x, y)
        with pytest.raises(TypeError, match="fit"):
            dpuq.PrivateConformalRegressor(
                lambda X: X[:, 0], epsilon=1.0, bound=2.0, prefit=False
            ).fit(x, y)

    def test_predict_interval_before_conformalize(self, rng):
        x, _ = linear_data(rng, 10)
        reg = dpuq.PrivateConformalRegressor(FixedLinear(), epsilon=1.0, bound=2.0)
        with pytest.raises(dpuq.NotFittedError, match="conformalize"):
            reg.predict_interval(x)


@pytest.mark.slow
def test_diabetes_experiment_covers():
    from dpuq.experiments.regression import run_regression_experiment

    rows = run_regression_experiment(
        epsilons=(2.0, 10.0), bounds=(321.0, "train"), n_splits=300, show_progress=False,
        random_state=3,
    )  # fmt: skip
    for r in rows:
        se = r.coverage.std(ddof=1) / math.sqrt(r.coverage.size)
        assert r.coverage.mean() >= 1 - ALPHA - 3 * se, r
    private10 = [r for r in rows if r.epsilon == 10.0]
    assert all(r.whole_line == 0 for r in private10)
    assert all(r.mean_width < 1.3 * rows[0].mean_width for r in private10)
