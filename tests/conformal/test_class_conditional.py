"""Class-conditional (Mondrian) private sets: exact privacy, schedule, coverage, edge cases."""

import itertools
import warnings

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

import dpuq
from dpuq.conformal.class_levels import (
    auto_class_bins,
    class_padding,
    class_rank_schedule,
    padded_coverage_certificate,
)
from dpuq.mechanisms.class_thresholds import (
    RankKnots,
    _class_log_weights,
    check_rank_schedule,
    class_threshold_log_distribution,
    class_thresholds,
    rank_at,
)

M = 3
CENTRES = (np.arange(M) + 0.5) / M  # one score per bin


def _law(scores, labels, k, eps, schedule, pad):
    return class_threshold_log_distribution(
        np.asarray(scores, float), np.asarray(labels, int), k,
        epsilon=eps, n_bins=M, schedule=schedule, pad=pad,
    )[1]  # fmt: skip


def _datasets(max_n, k):
    for n in range(max_n + 1):
        yield from itertools.product(range(M), range(k), repeat=n) if n else [()]


def _split(data):
    flat = list(data)
    bins = [flat[i] for i in range(0, len(flat), 2)]
    labels = [flat[i] for i in range(1, len(flat), 2)]
    return CENTRES[bins] if bins else np.zeros(0), np.asarray(labels, int)


SCHEDULES = [
    pytest.param(*class_rank_schedule(8, alpha=0.2, epsilon=1.0, n_bins=M), id="certificate"),
    pytest.param(np.array([0, 1, 1, 2, 2, 2, 3]), 1, id="flat-steps"),
    # knots: ρ = 1, 2, 2, 3, 4 on sizes 0..4, the interpolation min(R_{i+1}, R_i + n - s_i)
    pytest.param(RankKnots(np.array([0, 2, 4]), np.array([1, 2, 4])), 1, id="knots"),
]


def _pairs_add_remove(max_n, k):
    """Every data set with at most max_n points and every addition of one point."""
    for n in range(max_n):
        for data in itertools.product(range(M), range(k), repeat=n):
            for b, y in itertools.product(range(M), range(k)):
                yield data, (*data, b, y), y


def _log_laws(data, k, eps, schedule, pad):
    scores, labels = _split(data)
    if scores.size == 0:  # the law of empty data: every class empty (built from zero counts)
        lw = _class_log_weights(np.zeros((k, M), dtype=np.int64), schedule, pad, eps)
        return lw - np.logaddexp.reduce(lw, axis=1, keepdims=True)
    return _law(scores, labels, k, eps, schedule, pad)


def _unchecked_log_laws(data, k, eps, schedule, pad):
    """The same law without the schedule check (for the negative control only)."""
    scores, labels = _split(data)
    counts = np.zeros((k, M), dtype=np.int64)
    np.add.at(counts, (labels, np.floor(scores * M).astype(int)), 1)
    lw = _class_log_weights(counts, schedule, pad, eps)
    return lw - np.logaddexp.reduce(lw, axis=1, keepdims=True)


@pytest.mark.parametrize(("schedule", "pad"), SCHEDULES)
def test_exact_privacy_add_remove_within_a_class(schedule, pad):
    eps, k = 1.0, 2
    worst = 0.0
    for small, big, y in _pairs_add_remove(3, k):
        a, b = _log_laws(small, k, eps, schedule, pad), _log_laws(big, k, eps, schedule, pad)
        diff = np.abs(a - b)
        others = np.delete(diff, y, axis=0)
        assert np.all(others < 1e-12)  # other classes' laws are untouched
        worst = max(worst, diff[y].max())
    assert worst <= eps / 2 + 1e-9
    assert worst > 0.3 * eps / 2  # the bound is not vacuous: the law does move


@pytest.mark.parametrize(("schedule", "pad"), SCHEDULES)
def test_exact_privacy_replace_one_with_label_change(schedule, pad):
    eps, k, n = 1.0, 2, 3
    worst, worst_label_change = 0.0, 0.0
    for data in itertools.product(range(M), range(k), repeat=n):
        base = _log_laws(data, k, eps, schedule, pad)
        for i, b, y in itertools.product(range(n), range(M), range(k)):
            new = list(data)
            new[2 * i : 2 * i + 2] = [b, y]
            d = _log_laws(tuple(new), k, eps, schedule, pad) - base
            # joint law is a product over classes: the worst output takes each row's extreme
            loss = max(d.max(axis=1).sum(), -d.min(axis=1).sum())
            worst = max(worst, loss)
            if y != data[2 * i + 1]:
                worst_label_change = max(worst_label_change, loss)
    assert worst <= eps + 1e-9
    assert worst_label_change > 0.2 * eps  # a label change really moves the law


def test_negative_control_non_lipschitz_schedule_leaks():
    """A schedule jumping by 2 breaks the sensitivity bound; the enumeration sees it."""
    eps, k, bad, pad = 1.0, 2, np.array([0, 0, 0, 3]), 0
    worst = 0.0
    for small, big, y in _pairs_add_remove(3, k):
        a, b = (
            _unchecked_log_laws(small, k, eps, bad, pad),
            _unchecked_log_laws(big, k, eps, bad, pad),
        )
        worst = max(worst, np.abs(a - b)[y].max())
    assert worst > eps / 2 + 0.1
    with pytest.raises(ValueError, match="steps of at most 1"):
        check_rank_schedule(bad, pad)


@pytest.mark.parametrize(
    ("schedule", "pad", "match"),
    [
        ([1.5, 2.0], 2, "integers"),
        ([-1, 0], 2, ">= 0"),
        ([3, 2], 5, "nondecreasing"),
        ([3, 4], 2, "n \\+ pad"),
        ([], 1, "non-empty"),
    ],
)
def test_bad_schedule_is_refused(schedule, pad, match):
    with pytest.raises(ValueError, match=match):
        check_rank_schedule(np.asarray(schedule), pad)


@pytest.mark.parametrize(("alpha", "epsilon", "m"), [(0.1, 1.0, 20), (0.05, 0.3, 200), (0.5, 4, 2)])
def test_schedule_is_the_certificate_and_needs_no_majorant(alpha, epsilon, m):
    rho, pad = class_rank_schedule(300, alpha=alpha, epsilon=epsilon, n_bins=m)
    check_rank_schedule(rho, pad)
    assert pad == class_padding(alpha, epsilon, m) == rho[0]
    for n in (0, 1, 2, 7, 50, 300):
        cert = padded_coverage_certificate(n, int(rho[n]), epsilon=epsilon, n_bins=m)
        assert cert >= 1 - alpha
        if rho[n] > 0:  # minimal: one rank less fails (so the majorant changed nothing)
            below = padded_coverage_certificate(n, int(rho[n]) - 1, epsilon=epsilon, n_bins=m)
            assert below < 1 - alpha + 1e-8


def test_rank_extension_beyond_the_window_keeps_slope_one():
    rho, pad = class_rank_schedule(50, alpha=0.1, epsilon=1.0, n_bins=10)
    ext = rank_at(rho, np.arange(200))
    check_rank_schedule(ext, pad)
    for n in (60, 120, 199):
        assert padded_coverage_certificate(n, int(ext[n]), epsilon=1.0, n_bins=10) >= 0.9


def _exact_class_coverage(sizes, eps, alpha, m, repeats, seed):
    """Mean over calibration draws of the exact per-class coverage P(S <= T_y), scores Beta."""
    rng = np.random.default_rng(seed)
    k, n = len(sizes), sum(sizes)
    params = [(2.0, 5.0), (1.0, 1.0), (5.0, 2.0), (2.0, 2.0)][:k]
    rho, pad = class_rank_schedule(n, alpha=alpha, epsilon=eps, n_bins=m)
    labels = np.repeat(np.arange(k), sizes)
    cov = np.zeros((repeats, k))
    for r in range(repeats):
        scores = np.concatenate(
            [rng.beta(a, b, size=s) for (a, b), s in zip(params, sizes, strict=True)]
        )
        t, lp = class_threshold_log_distribution(
            scores, labels, k, epsilon=eps, n_bins=m, schedule=rho, pad=pad
        )
        cdf = np.array([beta_dist(a, b).cdf(t) for a, b in params])
        cov[r] = np.sum(np.exp(lp) * cdf, axis=1)
    return cov


def test_per_class_coverage_exact_law_over_random_calibration_sets():
    alpha = 0.1
    cov = _exact_class_coverage([0, 3, 40, 600], 1.0, alpha, 20, 60, 7)
    mean, se = cov.mean(axis=0), cov.std(axis=0, ddof=1) / np.sqrt(cov.shape[0])
    assert np.all(mean >= 1 - alpha - 3 * se - 1e-9)
    assert mean[3] < 0.99  # the large class is informative, not trivially covered


def test_empty_and_three_point_classes_give_mostly_full_sets():
    rng = np.random.default_rng(3)
    labels = np.concatenate([np.full(3, 1), np.full(2000, 2)])
    scores = rng.uniform(size=labels.size) * 0.5
    draws = np.array(
        [
            dpuq.calibrate_by_class(
                scores, labels, 3, alpha=0.1, epsilon=1.0, random_state=s
            ).thresholds
            for s in range(100)
        ]
    )
    assert np.mean(draws[:, 0] == 1.0) >= 0.8  # empty class
    assert np.mean(draws[:, 1] == 1.0) >= 0.8  # three points
    assert np.mean(draws[:, 2]) < 0.7  # the large class is informative


@pytest.mark.filterwarnings("ignore::dpuq.UninformativeReleaseWarning")
def test_release_holds_public_values_only():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=500)
    cal = dpuq.calibrate_by_class(
        rng.uniform(size=500), labels, 4, alpha=0.1, epsilon=1.0, random_state=1
    )
    d = cal.to_dict()
    assert set(d) == {
        "class_conditional", "thresholds", "n_classes", "alpha", "epsilon", "n_bins", "pad",
        "n", "privacy_report",
    }  # fmt: skip
    assert len(cal.thresholds) == 4
    rep = cal.privacy_report
    assert rep.relation is dpuq.privacy.report.Relation.REPLACE_ONE and rep.epsilon == 1.0
    assert rep.seeded
    assert not dpuq.calibrate_by_class(
        rng.uniform(size=50), labels[:50], 4, alpha=0.1, epsilon=1.0
    ).privacy_report.seeded
    text = str(rep) + repr(d)
    for y in range(4):  # no class size anywhere
        assert f"n_y={int(np.sum(labels == y))}" not in text
    with pytest.raises(AttributeError):
        cal.thresholds = (0.0,)


def test_same_seed_same_release_and_sampler_matches_law():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, size=60)
    scores = rng.uniform(size=60)
    rho, pad = class_rank_schedule(60, alpha=0.2, epsilon=2.0, n_bins=4)
    kw = dict(epsilon=2.0, n_bins=4, schedule=rho, pad=pad)
    t, lp = class_threshold_log_distribution(scores, labels, 2, **kw)
    gen = np.random.default_rng(11)
    draws = np.array(
        [class_thresholds(scores, labels, 2, **kw, random_state=gen) for _ in range(4000)]
    )
    from scipy.stats import chisquare

    for y in range(2):
        observed = np.array([np.sum(draws[:, y] == e) for e in t])
        expected = np.exp(lp[y]) * draws.shape[0]
        keep = expected > 5
        obs = np.append(observed[keep], observed[~keep].sum())
        exp = np.append(expected[keep], expected[~keep].sum())
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3


def test_uninformative_warning_names_only_public_values():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = dpuq.calibrate_by_class([0.1] * 5, [0, 0, 0, 1, 1], 2, alpha=0.1, epsilon=1.0)
    msgs = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert msgs and "n=5" in msgs[0] and "n_y" not in msgs[0]
    assert len(cal.thresholds) == 2


@pytest.mark.filterwarnings("ignore::dpuq.UninformativeReleaseWarning")
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n_classes=1), "n_classes"),
        (dict(alpha=0.7), "alpha"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(n_bins="many"), "n_bins"),
        (dict(labels=[0, 5, 1]), "labels"),
        (dict(labels=[0, 1]), "labels"),
        (dict(scores=[0.1, 1.5, 0.2]), "scores"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = dict(scores=[0.1, 0.5, 0.2], labels=[0, 1, 1], n_classes=3, alpha=0.1, epsilon=1.0)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        dpuq.calibrate_by_class(
            args.pop("scores"), args.pop("labels"), args.pop("n_classes"), **args
        )


def test_auto_bins_is_data_free_and_deterministic():
    m = auto_class_bins(5000, 5, 0.1, 1.0)
    assert m == auto_class_bins(5000, 5, 0.1, 1.0)
    assert 4 <= m <= 2000


@pytest.mark.parametrize(("n", "rho"), [(1, 0.5), (10, 7.0), (500, 470.0), (500, 500.0)])
def test_padded_certificate_is_the_certified_one_plus_the_top_rank(n, rho):
    """Against :func:`dpuq.planning.coverage_certificate` (per class at ε/2): the padded
    certificate adds exactly the term of the test point ranked above all n real scores."""
    from dpuq.conformal.class_levels import _g
    from dpuq.planning import coverage_certificate

    eps, m = 1.0, 30
    ours = padded_coverage_certificate(n, rho, epsilon=eps, n_bins=m)
    theirs = coverage_certificate(n, rho / n, eps / 2, m)
    top = float(_g(rho - n, eps / 2, m)) / (n + 1)
    assert ours == pytest.approx(theirs + top, abs=1e-12)


def test_classifier_class_conditional_sets_use_each_label_threshold(digits_model):
    X, y, model = digits_model
    clf = dpuq.PrivateConformalClassifier(
        model, epsilon=4.0, class_conditional=True, random_state=0
    ).conformalize(X[600:1500], y[600:1500])
    assert clf.threshold_.shape == (10,)
    assert isinstance(clf.calibration_, dpuq.ClassConditionalCalibration)
    assert clf.privacy_report_.seeded and clf.privacy_report_.epsilon == 4.0
    sets = clf.predict_set(X[1500:]).sets
    scores = dpuq.lac_scores(model.predict_proba(X[1500:]))
    np.testing.assert_array_equal(sets, scores <= clf.threshold_[None, :])
    import pickle

    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_set(X[1500:]).sets, sets)
    with pytest.raises(ValueError, match="thresholds must have shape"):
        dpuq.conformal.class_conditional.class_prediction_sets(scores, clf.threshold_[:3])


def test_regressor_groups_one_threshold_per_group():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(2)
    n = 6000
    x = rng.normal(size=(n, 1))
    g = (rng.random(n) < 0.3).astype(int)
    y = x[:, 0] + rng.normal(size=n) * np.where(g == 1, 3.0, 0.5)  # group 1 is noisier
    model = LinearRegression().fit(x[:1000], y[:1000])
    reg = dpuq.PrivateConformalRegressor(
        model, epsilon=2.0, bound=15.0, n_groups=2, random_state=0
    ).conformalize(x[1000:4000], y[1000:4000], groups=g[1000:4000])
    assert reg.threshold_.shape == (2,) and reg.threshold_[1] > reg.threshold_[0]
    iv = reg.predict_interval(x[4000:], groups=g[4000:]).sets
    inside = (iv[:, 0] <= y[4000:]) & (y[4000:] <= iv[:, 1])
    for grp in (0, 1):
        assert inside[g[4000:] == grp].mean() >= 0.87
    marginal = dpuq.PrivateConformalRegressor(model, epsilon=2.0, bound=15.0, random_state=0)
    miv = marginal.conformalize(x[1000:4000], y[1000:4000]).predict_interval(x[4000:]).sets
    m_inside = (miv[:, 0] <= y[4000:]) & (y[4000:] <= miv[:, 1])
    assert m_inside[g[4000:] == 1].mean() < 0.85  # marginal intervals miss the noisy group
    with pytest.raises(ValueError, match="groups="):
        reg.predict_interval(x[4000:])
    with pytest.raises(ValueError, match="n_groups"):
        marginal.predict_interval(x[4000:], groups=g[4000:])
    with pytest.raises(ValueError, match="groups"):
        dpuq.PrivateConformalRegressor(model, epsilon=1.0, bound=15.0, n_groups=2).conformalize(
            x[:10], y[:10], groups=[0, 1, 2, 0, 0, 0, 0, 0, 0, 0]
        )


@pytest.mark.filterwarnings("ignore::dpuq.UninformativeReleaseWarning")
def test_property_any_valid_input_gives_a_valid_release():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=25, deadline=None)
    @given(
        data=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 3)), min_size=1, max_size=60),
        k=st.integers(4, 6),
        alpha=st.floats(0.01, 0.5),
        epsilon=st.floats(0.05, 20.0),
        m=st.one_of(st.just("auto"), st.integers(2, 50)),
    )
    def check(data, k, alpha, epsilon, m):
        scores, labels = zip(*data, strict=True)
        cal = dpuq.calibrate_by_class(
            list(scores), list(labels), k, alpha=alpha, epsilon=epsilon, n_bins=m, random_state=0
        )
        t = np.asarray(cal.thresholds)
        assert t.shape == (k,)
        grid = np.arange(1, cal.n_bins + 1) / cal.n_bins
        assert np.all(np.isin(t, grid))

    check()
