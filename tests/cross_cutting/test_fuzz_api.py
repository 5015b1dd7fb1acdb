"""Property-based fuzzing of every public function of ``dpuq`` that takes data or parameters.

One property per entry point: a clear ``ValueError``/``TypeError`` naming an argument, or a
valid result (finite, inside its documented range); never another exception, a NaN, a numpy
warning, or a non-real input silently coerced (see ``tests/cross_cutting/_fuzz.py``).
"""

from __future__ import annotations

import numpy as np
from _fuzz import (
    ALPHA,
    POSITIVE_EPSILON,
    SEEDS,
    Refused,
    arrays,
    assert_finite,
    call,
    in_range,
    is_nonreal,
    labels_for,
    make_tests,
    probabilities,
    scalar,
)
from hypothesis import strategies as st

import dpuq

BINS = scalar(st.one_of(st.just("auto"), st.integers(2, 400)), [0, 1, -3, 10**9, 2.5, "x", None])
SMALL_BINS = scalar(st.integers(2, 400), [0, 1, -3, 10**9, 2.5, "x", None, True])
EPS = scalar(POSITIVE_EPSILON)
ALPHAS = scalar(ALPHA)


def _refuse_nonreal(result, *arrays_in):
    if any(is_nonreal(a) for a in arrays_in):
        assert result is Refused, "a non-real array was silently coerced"


# --- conformal: calibration, quantiles, planning -------------------------------------------------


def _calibrate(data):
    scores = data.draw(arrays(max_n=60), label="scores")
    kw = {
        "alpha": data.draw(ALPHAS, label="alpha"),
        "epsilon": data.draw(EPS, label="epsilon"),
        "n_bins": data.draw(BINS, label="n_bins"),
        "gamma": data.draw(scalar(st.one_of(st.just("auto"), st.floats(1e-6, 0.999))), "gamma"),
        "random_state": data.draw(SEEDS, label="random_state"),
    }
    res = call(dpuq.calibrate, scores, names=("scores", *kw), **kw)
    _refuse_nonreal(res, scores)
    if res is not Refused:
        assert in_range(res.threshold, 0.0, 1.0)
        assert_finite(res.epsilon)
        if res.informative:  # the certified method's level is inf when no rank is certified
            assert_finite(res.level)
            assert res.gamma is None or in_range(res.gamma, 0.0, 1.0)
        else:
            assert res.threshold == 1.0
        # the cost: epsilon, or 0 when public quantities alone decided the release (issue 34)
        assert res.privacy_report.epsilon == (res.epsilon if res.informative else 0.0)


def _private_quantile(data):
    scores = data.draw(arrays(max_n=60), label="scores")
    kw = {
        "level": data.draw(scalar(st.floats(0.01, 0.999)), label="level"),
        "epsilon": data.draw(EPS, label="epsilon"),
        "n_bins": data.draw(SMALL_BINS, label="n_bins"),
    }
    fn = data.draw(
        st.sampled_from(
            [
                dpuq.private_quantile,
                dpuq.private_quantiles,
                dpuq.private_quantile_distribution,
                dpuq.private_quantile_log_distribution,
            ]
        )
    )
    extra = {} if "distribution" in fn.__name__ else {"random_state": 3}
    res = call(fn, scores, names=("scores", *kw), **kw, **extra)
    _refuse_nonreal(res, scores)
    if res is Refused:
        return
    if fn is dpuq.private_quantile_distribution:
        edges, probs = res
        assert_finite(edges, probs)
        assert abs(probs.sum() - 1.0) < 1e-9 and probs.min() >= 0
    elif fn is dpuq.private_quantile_log_distribution:
        edges, logp = res
        assert_finite(edges)
        assert not np.isnan(logp).any() and logp.max() <= 1e-12
    else:
        vals = np.atleast_1d(res)
        assert_finite(vals)
        assert vals.min() >= 0.0 and vals.max() <= 1.0


def _split_conformal(data):
    scores = data.draw(arrays(max_n=60), label="scores")
    alpha = data.draw(ALPHAS, label="alpha")
    res = call(dpuq.split_conformal_threshold, scores, alpha, names=("scores", "alpha"))
    _refuse_nonreal(res, scores)
    if res is not Refused:  # one of the scores, or inf (documented: too few scores)
        assert res == np.inf or res in np.asarray(scores, dtype=float)


def _planning(data):
    n = data.draw(scalar(st.integers(1, 10**6), [0, -5, 2.5, 10**30, True, "10", None]), "n")
    alpha, eps = data.draw(ALPHAS, label="alpha"), data.draw(EPS, label="epsilon")
    bins = data.draw(SMALL_BINS, label="n_bins")
    gamma = data.draw(scalar(st.floats(1e-6, 0.999)), label="gamma")
    which = data.draw(st.sampled_from(["inflated", "gamma", "min_n", "min_eps", "upper"]))
    if which == "inflated":
        res = call(
            dpuq.inflated_level,
            n,
            alpha,
            eps,
            bins,
            gamma,
            names=("n", "alpha", "epsilon", "n_bins", "gamma"),
        )
        if res is not Refused:
            assert_finite(res)
            assert res > 0
    elif which == "gamma":
        res = call(
            dpuq.optimal_gamma, n, alpha, eps, bins, names=("n", "alpha", "epsilon", "n_bins")
        )
        if res is not Refused:
            assert in_range(res, 0.0, 1.0)
    elif which == "min_n":
        res = call(
            dpuq.min_calibration_size, alpha, eps, bins, names=("alpha", "epsilon", "n_bins")
        )
        if res is not Refused:
            assert isinstance(res, int) and res >= 1
    elif which == "min_eps":
        res = call(dpuq.min_epsilon, n, alpha, bins, names=("n", "alpha", "n_bins"))
        if res is not Refused:
            assert res > 0  # may be inf: no ε makes n points informative
    else:
        p_max = data.draw(scalar(st.floats(0.0, 1.0)), label="p_max")
        res = call(
            dpuq.coverage_upper_bound,
            n,
            alpha,
            eps,
            bins,
            gamma,
            p_max,
            names=("n", "alpha", "epsilon", "n_bins", "gamma", "p_max"),
        )
        if res is not Refused:  # documented: inf when q̃ >= 1 (no informative release)
            assert res == np.inf or res >= 0.0


def _auto_n_bins(data):
    n = data.draw(scalar(st.integers(1, 3000), [0, -1, 2.5, True, None]), label="n")
    alpha = data.draw(ALPHAS, label="alpha")
    eps = data.draw(scalar(st.floats(1e-3, 5.0)), label="epsilon")
    res = call(dpuq.auto_n_bins, n, alpha, eps, names=("n", "alpha", "epsilon"))
    if res is not Refused:
        m, gamma = res  # gamma only for method="paper"; None for the certified default
        assert m >= 2 and (gamma is None or in_range(gamma, 0.0, 1.0))


# --- scores and sets ----------------------------------------------------------------------------


def _class_scores(data):
    probs = data.draw(probabilities(), label="probs")
    shape = np.shape(probs)
    n, k = (shape[0], shape[1]) if len(shape) == 2 else (3, 3)
    with_labels = data.draw(st.booleans())
    labels = data.draw(labels_for(n, k), label="labels") if with_labels else None
    which = data.draw(st.sampled_from(["lac", "aps", "raps"]))
    if which == "lac":
        res = call(dpuq.lac_scores, probs, labels, names=("probs", "labels"))
    elif which == "aps":
        res = call(
            dpuq.aps_scores,
            probs,
            labels,
            randomized=data.draw(st.booleans()),
            random_state=1,
            names=("probs", "labels", "randomized"),
        )
    else:
        res = call(
            dpuq.raps_scores,
            probs,
            labels,
            lam=data.draw(scalar(st.floats(0.0, 2.0)), label="lam"),
            k_reg=data.draw(scalar(st.integers(0, 6), [-1, 2.5, None, True]), label="k_reg"),
            names=("probs", "labels", "lam", "k_reg"),
        )
    _refuse_nonreal(res, probs, labels)
    if res is not Refused:
        assert_finite(res)
        assert res.min() >= 0.0 and res.max() <= 1.0


def _prediction_sets(data):
    matrix = data.draw(arrays(ndim=2, max_n=20), label="score_matrix")
    threshold = data.draw(scalar(st.floats(0.0, 1.0)), label="threshold")
    res = call(dpuq.prediction_sets, matrix, threshold, names=("score_matrix", "threshold"))
    _refuse_nonreal(res, matrix)
    if res is not Refused:
        assert res.dtype == bool and res.shape == np.shape(matrix)


def _regression(data):
    n = data.draw(st.integers(0, 20))
    two = data.draw(st.booleans())
    elements = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([np.nan, np.inf, 1e308]))
    pred = data.draw(
        arrays(ndim=2 if two else 1, columns=2, max_n=n, min_n=n, elements=elements), "y_pred"
    )
    y = data.draw(arrays(max_n=n, min_n=n, elements=elements), label="y")
    bound = data.draw(scalar(st.floats(1e-3, 1e4)), label="bound")
    threshold = data.draw(scalar(st.floats(0.0, 1.0)), label="threshold")
    if two:
        res = call(dpuq.cqr_scores, pred, y, bound=bound, names=("y_quantiles", "y", "bound"))
        ivl = call(
            dpuq.cqr_intervals,
            pred,
            threshold,
            bound=bound,
            names=("y_quantiles", "threshold", "bound"),
        )
    else:
        res = call(
            dpuq.absolute_residual_scores, pred, y, bound=bound, names=("y_pred", "y", "bound")
        )
        ivl = call(
            dpuq.absolute_residual_intervals,
            pred,
            threshold,
            bound=bound,
            names=("y_pred", "threshold", "bound"),
        )
    _refuse_nonreal(res, pred, y)
    _refuse_nonreal(ivl, pred)
    if res is not Refused:
        assert_finite(res)
        assert res.min(initial=0.0) >= 0.0 and res.max(initial=1.0) <= 1.0
    if ivl is not Refused:
        assert not np.isnan(ivl).any()  # ±inf is the documented "whole line"
        if not two:  # CQR: lower > upper is a documented empty set
            assert np.all(ivl[:, 0] <= ivl[:, 1])


# --- metrics ------------------------------------------------------------------------------------


def _calibration_metrics(data):
    probs = data.draw(probabilities(), label="probs")
    shape = np.shape(probs)
    n, k = (shape[0], shape[1]) if len(shape) == 2 else (3, 3)
    labels = data.draw(labels_for(n, k), label="labels")
    bins = data.draw(scalar(st.integers(1, 50), [0, -1, 10**9, 2.5, None, True]), "n_bins")
    fn = data.draw(
        st.sampled_from(
            [
                dpuq.expected_calibration_error,
                dpuq.static_calibration_error,
                dpuq.adaptive_calibration_error,
                dpuq.reliability_curve,
            ]
        )
    )
    res = call(fn, probs, labels, bins, names=("probs", "labels", "n_bins"))
    _refuse_nonreal(res, probs, labels)
    if res is not Refused and fn is not dpuq.reliability_curve:
        assert in_range(res, 0.0, 1.0)


def _auc(data):
    probs = data.draw(probabilities(), label="probs")
    shape = np.shape(probs)
    n, k = (shape[0], shape[1]) if len(shape) == 2 else (3, 3)
    labels = data.draw(labels_for(n, k), label="labels")
    res = call(dpuq.multiclass_auc, probs, labels, names=("probs", "labels"))
    _refuse_nonreal(res, probs, labels)
    if res is not Refused:
        assert in_range(res, 0.0, 1.0)


def _set_metrics(data):
    n = data.draw(st.integers(0, 20))
    k = data.draw(st.integers(1, 4))
    sets = data.draw(
        st.one_of(
            st.lists(st.booleans(), min_size=n * k, max_size=n * k).map(
                lambda v: np.array(v, dtype=bool).reshape(n, k)
            ),
            arrays(ndim=2, max_n=n),
        ),
        label="sets",
    )
    labels = data.draw(labels_for(n, k), label="labels")
    which = data.draw(st.sampled_from(["coverage", "by_size", "sizes"]))
    if which == "coverage":
        res = call(dpuq.coverage, sets, labels, names=("sets", "labels"))
        if res is not Refused:
            assert in_range(res, 0.0, 1.0)
    elif which == "by_size":
        res = call(dpuq.coverage_by_set_size, sets, labels, names=("sets", "labels"))
        if res is not Refused:
            for count, cov in res.values():
                assert count >= 1 and in_range(cov, 0.0, 1.0)
    else:
        res = call(dpuq.set_sizes, sets, names=("sets",))
        if res is not Refused:
            assert res.min(initial=0) >= 0


# --- mechanisms ---------------------------------------------------------------------------------


def _mechanisms(data):
    utilities = data.draw(
        arrays(
            max_n=30,
            elements=st.one_of(
                st.floats(-1e3, 1e3), st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308])
            ),
        ),
        label="utilities",
    )
    kw = {
        "epsilon": data.draw(EPS, label="epsilon"),
        "sensitivity": data.draw(scalar(st.floats(1e-3, 10.0)), label="sensitivity"),
    }
    which = data.draw(
        st.sampled_from(["em", "em_p", "em_lp", "pf", "pf_p"]),
    )
    fn = {
        "em": dpuq.exponential_mechanism,
        "em_p": dpuq.exponential_mechanism_probabilities,
        "em_lp": dpuq.exponential_mechanism_log_probabilities,
        "pf": dpuq.permute_and_flip,
        "pf_p": dpuq.permute_and_flip_probabilities,
    }[which]
    if which in ("em", "pf"):
        kw["random_state"] = 0
    res = call(fn, utilities, names=("utilities", *kw), **kw)
    _refuse_nonreal(res, utilities)
    if res is Refused:
        return
    size = np.asarray(utilities).size
    if which in ("em", "pf"):
        assert 0 <= res < size
    elif which == "em_lp":
        assert not np.isnan(res).any() and res.max() <= 1e-12
    else:
        assert_finite(res)
        assert abs(res.sum() - 1.0) < 1e-9


def _accuracy_bound(data):
    kw = {
        "epsilon": data.draw(EPS, label="epsilon"),
        "sensitivity": data.draw(scalar(st.floats(1e-3, 10.0)), label="sensitivity"),
        "beta": data.draw(scalar(st.floats(1e-9, 0.999)), label="beta"),
    }
    g = data.draw(scalar(st.integers(1, 10**9), [0, -1, 2.5, None]), label="n_candidates")
    res = call(dpuq.exponential_mechanism_accuracy_bound, g, names=("n_candidates", *kw), **kw)
    if res is not Refused:
        assert_finite(res)
        assert res >= 0


def _laplace(data):
    value = data.draw(
        st.one_of(
            st.floats(-1e6, 1e6),
            arrays(max_n=10, elements=st.floats(-1e6, 1e6)),
            st.sampled_from([np.nan, np.inf, 1e308, True, "1", None, 1j]),
        ),
        label="value",
    )
    kw = {
        "sensitivity": data.draw(scalar(st.floats(1e-3, 1e3)), label="sensitivity"),
        "epsilon": data.draw(EPS, label="epsilon"),
    }
    res = call(dpuq.laplace_mechanism, value, names=("value", *kw), **kw, random_state=2)
    _refuse_nonreal(res, value if isinstance(value, np.ndarray) else None)
    if res is not Refused:
        assert_finite(res)


def _pac(data):
    args = (
        data.draw(scalar(st.integers(1, 10**9), [0, -2, 2.5, None, True]), label="n_concepts"),
        data.draw(scalar(st.floats(1e-4, 0.99)), label="alpha"),
        data.draw(scalar(st.floats(1e-9, 0.99)), label="beta"),
        data.draw(EPS, label="epsilon"),
    )
    res = call(dpuq.pac_sample_complexity, *args, names=("n_concepts", "alpha", "beta", "epsilon"))
    if res is not Refused:
        assert isinstance(res, int) and res >= 1


# --- private inference --------------------------------------------------------------------------

BOUNDS = st.one_of(
    st.just((0.0, 1.0)),
    st.just((0.0, 1.0)),
    st.sampled_from([(1.0, 0.0), (0.0, np.inf), (np.nan, 1.0), (0.0,), "01", None, (0, 1e308)]),
)


def _interval(data):
    x = data.draw(arrays(max_n=80), label="x")
    kw = {
        "alpha": data.draw(scalar(st.floats(0.01, 0.5)), label="alpha"),
        "epsilon": data.draw(EPS, label="epsilon"),
        "bounds": data.draw(BOUNDS, label="bounds"),
        "statistic": data.draw(st.sampled_from(["mean", "median", "trimmed_mean", "mode"])),
        "method": data.draw(
            st.sampled_from(["ensemble", "ensemble", "ensemble_cdf", "naive", "x"])
        ),
        "n_resamples": data.draw(
            scalar(st.one_of(st.just("auto"), st.integers(1, 60)), [0, 10**9, 2.5, "many"])
        ),
        "n_subsets": data.draw(
            scalar(st.one_of(st.just("auto"), st.integers(1, 10)), [0, 10**9, -1, 2.5])
        ),
        "trim": data.draw(scalar(st.floats(0.0, 0.49)), label="trim"),
        "n_candidates": data.draw(scalar(st.integers(2, 300), [0, 1, 10**9])),
        "n_grid": data.draw(scalar(st.integers(1, 100), [0, 10**9, 2.5])),
        "clip": data.draw(st.sampled_from([False, False, True, "yes"])),
        "random_state": data.draw(SEEDS),
    }
    res = call(dpuq.private_confidence_interval, x, names=("x", *kw), **kw)
    _refuse_nonreal(res, x)
    if res is not Refused:
        assert_finite(res.lower, res.upper, res.estimate)
        assert 0.0 <= res.lower <= res.upper <= 1.0
        assert res.privacy_report.epsilon > 0


def _baseline_intervals(data):
    x = data.draw(arrays(max_n=60), label="x")
    which = data.draw(st.booleans())
    alpha = data.draw(scalar(st.floats(0.01, 0.5)), label="alpha")
    if which:
        kw = {"alpha": alpha, "epsilon": data.draw(EPS), "bounds": data.draw(BOUNDS)}
        res = call(dpuq.normal_approximation_interval, x, names=("x", *kw), **kw, random_state=1)
    else:
        kw = {
            "alpha": alpha,
            "statistic": data.draw(st.sampled_from(["mean", "median", "trimmed_mean"])),
            "n_resamples": data.draw(scalar(st.integers(1, 200), [0, 10**9, 2.5])),
        }
        res = call(dpuq.percentile_bootstrap_interval, x, names=("x", *kw), **kw, random_state=1)
    _refuse_nonreal(res, x)
    if res is not Refused:
        assert_finite(res.lower, res.upper, res.estimate)
        assert res.lower <= res.upper


def _bootstrap_cdfs(data):
    x = data.draw(arrays(max_n=80), label="x")
    t = data.draw(arrays(max_n=5, elements=st.floats(-3, 3)), label="t")
    eps = data.draw(EPS, label="epsilon")
    bounds = data.draw(BOUNDS, label="bounds")
    which = data.draw(st.sampled_from(["cdf", "grid", "student"]))
    resamples = data.draw(scalar(st.one_of(st.just("auto"), st.integers(1, 50)), [0, 10**9]))
    if which == "cdf":
        kw = {
            "epsilon": eps,
            "bounds": bounds,
            "n_resamples": resamples,
            "statistic": data.draw(st.sampled_from(["mean", "median", "trimmed_mean"])),
            "method": data.draw(st.sampled_from(["ensemble", "naive", "x"])),
        }
        res = call(dpuq.private_bootstrap_cdf, x, t, names=("x", "t", *kw), **kw, random_state=0)
    elif which == "grid":
        kw = {
            "epsilon": eps,
            "bounds": bounds,
            "n_resamples": resamples,
            "n_grid": data.draw(scalar(st.integers(1, 64), [0, 10**9])),
            "root": data.draw(st.sampled_from(["basic", "studentized", "x"])),
        }
        res = call(
            dpuq.private_bootstrap_cdf_grid, x, names=("x", "grid", *kw), **kw, random_state=0
        )
    else:
        kw = {
            "epsilon": eps,
            "bounds": bounds,
            "n_resamples": resamples,
            "n_candidates": data.draw(scalar(st.integers(2, 300), [0, 10**9])),
        }
        res = call(dpuq.private_studentized_cdf, x, t, names=("x", "t", *kw), **kw, random_state=0)
    _refuse_nonreal(res, x, t)
    if res is not Refused:
        assert_finite(res.cdf)
        assert res.cdf.min(initial=0.0) >= 0.0 and res.cdf.max(initial=1.0) <= 1.0


# --- private learning ---------------------------------------------------------------------------


def _erm(data):
    n = data.draw(st.integers(0, 30))
    X = data.draw(arrays(ndim=2, max_n=n, min_n=n, columns=2), label="X")
    y = data.draw(labels_for(n, 2), label="y")
    grid = data.draw(arrays(max_n=8, min_n=0), label="grid")
    concepts = data.draw(st.sampled_from(["thresholds", "stumps"]))
    make = dpuq.Thresholds if concepts == "thresholds" else dpuq.DecisionStumps
    cls = call(make, grid, names=("grid", "thresholds"))
    if cls is Refused:
        return
    eps = data.draw(EPS, label="epsilon")
    clf = dpuq.PrivateERMClassifier(cls, epsilon=eps, random_state=0)
    res = call(clf.fit, X, y, names=("X", "y", "epsilon", "concepts", "n_features", "feature"))
    _refuse_nonreal(res, X, y)
    if res is not Refused:
        pred = call(res.predict, X, names=("X",))
        if pred is not Refused:
            assert set(np.unique(pred)) <= {0, 1}


PROPERTIES = {
    "calibrate": _calibrate,
    "private_quantile": _private_quantile,
    "split_conformal": _split_conformal,
    "planning": _planning,
    "auto_n_bins": _auto_n_bins,
    "class_scores": _class_scores,
    "prediction_sets": _prediction_sets,
    "regression": _regression,
    "calibration_metrics": _calibration_metrics,
    "auc": _auc,
    "set_metrics": _set_metrics,
    "mechanisms": _mechanisms,
    "accuracy_bound": _accuracy_bound,
    "laplace": _laplace,
    "pac": _pac,
    "interval": _interval,
    "baseline_intervals": _baseline_intervals,
    "bootstrap_cdfs": _bootstrap_cdfs,
    "erm": _erm,
}
for _name, _prop in PROPERTIES.items():
    make_tests(globals(), _name, _prop)
