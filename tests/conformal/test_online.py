"""``online_conformal_thresholds`` and the online estimators: validation before the charge,
one charge per stream, estimator = function, coverage on a drifting stream, pickling."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_digits
from sklearn.linear_model import LogisticRegression, Ridge

import dpuq
from dpuq import PrivateOnlineConformalClassifier, PrivateOnlineConformalRegressor
from dpuq._estimator import NotFittedError
from dpuq.privacy.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _drifting(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(rng.beta(1.0, 6.0, size=n) * np.linspace(1.0, 3.0, n), 0.0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scores": [0.1, np.nan, 0.2]}, "non-finite"),
        ({"scores": [[0.1, 0.2]]}, "1-dimensional"),
        ({"scores": [0.1, 1.2]}, r"\[0, 1\]"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 0.6}, "alpha"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": 1.5e-12}, "epsilon"),  # too small for the noise lattice: was charged
        ({"step": 0.0}, "step"),
        ({"block_size": 0}, "block_size"),
        ({"block_size": "big"}, "block_size"),
        ({"initial": 1.5}, "initial"),
        ({"random_state": -3}, "random_state"),
    ],
)
def test_bad_input_is_refused_before_any_charge(tmp_path, kwargs, message):
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("s", epsilon=10.0)
    call = {"scores": [0.1, 0.2, 0.3], "alpha": 0.1, "epsilon": 1.0, **kwargs}
    scores, alpha, epsilon = call.pop("scores"), call.pop("alpha"), call.pop("epsilon")
    with pytest.raises((ValueError, TypeError), match=message):
        dpuq.online_conformal_thresholds(scores, alpha, epsilon, ledger=ledger, dataset="s", **call)
    assert ledger.status("s").spent_epsilon == 0.0


def test_one_charge_for_the_whole_stream(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("s", epsilon=1.5)
    t = dpuq.online_conformal_thresholds(
        _drifting(), 0.1, 1.0, random_state=0, ledger=ledger, dataset="s"
    )
    assert t.shape == (4000,)
    assert ledger.status("s").spent_epsilon == pytest.approx(1.0)
    with pytest.raises(dpuq.BudgetExceededError):
        dpuq.online_conformal_thresholds(_drifting(), 0.1, 1.0, ledger=ledger, dataset="s")


def test_drifting_stream_long_run_coverage_and_bound():
    s = _drifting(10_000, seed=2)
    fixed = np.quantile(s[:1000], 0.9)
    assert np.mean(s[1000:] <= fixed) < 0.75  # the stream drifts: a fixed threshold fails
    bound = dpuq.online_coverage_bound(10_000, 0.1, 1.0)
    for seed in range(3):
        t = dpuq.online_conformal_thresholds(s, 0.1, 1.0, random_state=seed)
        assert abs(np.mean(s > t) - 0.1) <= bound
        assert abs(np.mean(s[5000:] > t[5000:]) - 0.1) < 0.03  # and late, not only on average


def test_aci_baseline_tracks_drift():
    s = _drifting(3000, seed=1)
    t = dpuq.aci_thresholds(s, 0.1, gamma=0.005)
    assert abs(np.mean(s > t) - 0.1) < 0.02
    with pytest.raises(ValueError, match="gamma"):
        dpuq.aci_thresholds(s, 0.1, gamma=0.0)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    model = LogisticRegression(max_iter=300).fit(X[:700], y[:700])
    return model, X[700:], y[700:]


def test_classifier_equals_the_function_on_its_scores(digits):
    """Fed in chunks of any size, the estimator's current threshold is always the one the
    batch function gives the next person (same seed, same scores)."""
    model, X, y = digits
    scores = dpuq.lac_scores(model.predict_proba(X[:600]), y[:600])
    alpha = 0.1  # the estimator's alpha for confidence_level=0.9 (read as typed)
    t = dpuq.online_conformal_thresholds(scores, alpha, 1.0, block_size=20, random_state=5)
    clf = PrivateOnlineConformalClassifier(model, epsilon=1.0, block_size=20, random_state=5)
    clf.start()
    assert clf.threshold_ == t[0]
    sizes = np.random.default_rng(0).integers(1, 45, size=100)
    lo = 0
    for size in sizes:
        hi = min(lo + int(size), 599)
        clf.update(X[lo:hi], y[lo:hi])
        lo = hi
        assert clf.n_seen_ == lo
        assert clf.threshold_ == t[lo]
        if lo == 599:
            break
    assert clf.n_released_ == 29
    assert len(set(t.tolist())) > 10  # the threshold did move


def test_classifier_sets_follow_the_threshold_and_state_rules(digits, tmp_path):
    model, X, y = digits
    clf = PrivateOnlineConformalClassifier(model, epsilon=1.0, random_state=0)
    with pytest.raises(NotFittedError):
        clf.predict_set(X[:2])
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("ward", epsilon=5.0)
    clf.start(ledger=ledger, dataset="ward")
    assert ledger.status("ward").spent_epsilon == pytest.approx(1.0)
    _, sets = clf.predict_set(X[:5])
    assert sets.shape == (5, 10)
    probs = model.predict_proba(X[:5])
    assert np.array_equal(sets, 1.0 - probs <= clf.threshold_)
    with pytest.raises(RuntimeError, match="already started"):
        clf.start()
    with pytest.raises(TypeError, match="update"):
        clf.conformalize(X, y)
    clf.update(X[:5], y[:5])  # incomplete block: its count is unreleased
    with pytest.raises(TypeError, match="incomplete block"):
        pickle.dumps(clf)
    clf.update(X[5 : clf.block_size_], y[5 : clf.block_size_])
    again = pickle.loads(pickle.dumps(clf))
    assert again.threshold_ == clf.threshold_
    assert ledger.status("ward").spent_epsilon == pytest.approx(1.0)  # updates charge nothing more
    assert clf.privacy_report_.epsilon == 1.0


def test_classifier_refuses_bad_settings_before_the_charge(digits, tmp_path):
    model = digits[0]
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("d", epsilon=5.0)
    for bad in (
        {"confidence_level": 0.3},
        {"conformity_score": "nope"},
        {"conformity_score": "raps", "score_params": {"lam": -1.0}},
        {"score_params": {"unknown": 1}},
        {"step": -1.0},
        {"random_state": np.random.default_rng(0)},
    ):
        params = {"epsilon": 1.0, **bad}
        with pytest.raises((ValueError, TypeError)):
            PrivateOnlineConformalClassifier(model, **params).start(ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == 0.0


def test_a_model_that_cannot_predict_is_refused_before_the_charge(digits, tmp_path):
    """The model is a public setting: one that cannot predict must not cost ε at start()
    (regression: it was found only at the first update, after the charge)."""
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("d", epsilon=5.0)
    model = digits[0]
    for est in (
        PrivateOnlineConformalClassifier(object(), epsilon=1.0),
        PrivateOnlineConformalRegressor(object(), epsilon=1.0, bound=1.0),
        PrivateOnlineConformalRegressor((model, model), epsilon=1.0, bound=1.0),
        PrivateOnlineConformalRegressor(
            (model, object()), epsilon=1.0, bound=1.0, conformity_score="cqr"
        ),
    ):
        with pytest.raises(TypeError, match="estimator"):
            est.start(ledger=ledger, dataset="d")
        assert not hasattr(est, "tracker_")
    assert ledger.status("d").spent_epsilon == 0.0
    # a pair for CQR and a callable are fine
    PrivateOnlineConformalRegressor(
        (model, model), epsilon=1.0, bound=1.0, conformity_score="cqr"
    ).start(ledger=ledger, dataset="d")
    PrivateOnlineConformalClassifier(model.predict_proba, epsilon=1.0).start()
    assert ledger.status("d").spent_epsilon == pytest.approx(1.0)


def test_regressor_intervals_cover_a_drifting_stream():
    X, y = load_diabetes(return_X_y=True)
    model = Ridge(alpha=0.1).fit(X[:150], y[:150])
    rng = np.random.default_rng(0)
    idx = rng.integers(150, len(y), size=6000)
    noise = rng.normal(size=6000) * np.linspace(0.0, 60.0, 6000)  # outcomes grow noisier
    Xs, ys = X[idx], y[idx] + noise
    reg = PrivateOnlineConformalRegressor(model, epsilon=1.0, bound=400.0, random_state=1)
    reg.start()
    covered = []
    for lo in range(0, 6000, reg.block_size_):
        hi = lo + reg.block_size_
        _, iv = reg.predict_interval(Xs[lo:hi])
        covered.append((iv[:, 0] <= ys[lo:hi]) & (ys[lo:hi] <= iv[:, 1]))
        reg.update(Xs[lo:hi], ys[lo:hi])
    cov = np.concatenate(covered)
    assert abs(cov.mean() - 0.9) < 0.02
    assert abs(cov[3000:].mean() - 0.9) < 0.03


def test_randomised_aps_scores_draw_fresh_uniforms_per_update(digits):
    model, X, y = digits
    clf = PrivateOnlineConformalClassifier(
        model, epsilon=1.0, conformity_score="aps", block_size=10, random_state=2
    )
    clf.start()
    a = clf._stream_scores(X[:10], y[:10])
    clf.update(X[:10], y[:10])
    b = clf._stream_scores(X[:10], y[:10])  # same people, later position: other uniforms
    assert not np.array_equal(a, b)
    clf.update(X[10:500], y[10:500])
    assert clf.n_released_ == 50


def test_an_automatic_block_beyond_the_cap_is_refused_before_the_charge(tmp_path):
    """At ε = 1e-5 the automatic block (2/(ε² α(1-α)) = 2.2e11 persons) was charged, then
    asked for 1.6 TiB (an outside probe, ninth session); the cap that held for a given
    block_size holds for the automatic one, before anything is charged."""
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=10.0)
    with pytest.raises(ValueError, match="block_size='auto' is 222,222,222,223 persons"):
        dpuq.online_conformal_thresholds(
            np.full(50, 0.5), alpha=0.1, epsilon=1e-5, ledger=led, dataset="d"
        )
    assert led.status("d").spent_epsilon == 0.0


def test_the_thresholds_take_memory_in_the_stream_not_in_the_block():
    """A block larger than the stream repeated every threshold to the block's size (800 MB
    for 50 persons at block_size = 10^8); the thresholds now take the stream's size."""
    import tracemalloc

    from dpuq.mechanisms.online_counts import _tracker_thresholds

    tracemalloc.start()
    try:  # the tracker itself: the public function no longer runs it when no block completes
        t, _ = _tracker_thresholds(
            np.linspace(0, 1, 50),
            alpha=0.1,
            epsilon=1.0,
            step=0.01,
            block_size=10**8,
            initial=0.5,
            root=0,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t.shape == (50,) and np.all(t == 0.5)  # no block completes: the initial threshold
    assert peak < 10**7


def test_a_block_as_long_as_the_stream_releases_nothing_and_costs_nothing(tmp_path):
    """block_size >= n: no block completes before the last person, so no count is released
    and every threshold is ``initial``, whatever the scores. It was charged ε for that; it
    costs 0 now (the ledger records 0), and warns on public n and block_size alone."""
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("s", epsilon=1.5)
    kw = {"initial": 0.3, "random_state": 0, "ledger": ledger, "dataset": "s"}
    messages = set()
    for b, s in [(40, _drifting(40)), (40, np.zeros(40)), (41, _drifting(40)), (10**6, [1.0])]:
        with pytest.warns(dpuq.UninformativeReleaseWarning, match="no block of") as rec:
            t = dpuq.online_conformal_thresholds(s, 0.1, 1.0, block_size=b, **kw)
        assert np.array_equal(t, np.full(len(s), 0.3))
        assert {w.filename for w in rec} == {__file__}  # at the user's call
        if b == 40:
            messages.add(str(rec[0].message))
    assert len(messages) == 1  # the same words for other scores: public settings only
    assert ledger.status("s").spent_epsilon == 0.0
    assert [r.epsilon for r in ledger.releases("s")] == [0.0] * 4
    report = dpuq.conformal.online.online_privacy_report(
        dpuq.conformal.online.check_online_settings(0.1, 1.0, block_size=40), n=40
    )
    assert report.epsilon == 0.0 and "costs epsilon = 0" in report.notes[0]


def test_one_block_before_the_last_person_is_a_charged_release(tmp_path):
    """block_size = n - 1: block 1 completes, its count sets the last person's threshold."""
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("s", epsilon=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpuq.UninformativeReleaseWarning)
        t = dpuq.online_conformal_thresholds(
            _drifting(40),
            0.1,
            1.0,
            block_size=39,
            initial=0.3,
            random_state=0,
            ledger=ledger,
            dataset="s",
        )
    assert np.all(t[:39] == 0.3) and t[39] != 0.3
    assert ledger.status("s").spent_epsilon == pytest.approx(1.0)


def test_a_model_whose_output_does_not_fit_the_score_is_refused_before_the_charge(tmp_path):
    """Probe D7: CQR with one point model charged at start(), then every update and
    predict_interval failed. Its output shape is probed on a public row of zeros first."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("d", epsilon=5.0)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    point, quantiles = Ridge().fit(X, y), Ridge().fit(X, np.column_stack((y - 1, y + 1)))
    for est, shape in (
        (
            PrivateOnlineConformalRegressor(
                point, epsilon=0.3, bound=3.0, conformity_score="cqr", block_size=3
            ),
            r"\(1,\)",
        ),
        (PrivateOnlineConformalRegressor(quantiles, epsilon=0.3, bound=3.0), r"\(1, 2\)"),
        (
            PrivateOnlineConformalRegressor(
                (quantiles, point), epsilon=0.3, bound=3.0, conformity_score="cqr"
            ),
            r"\(1, 2\), \(1,\)",
        ),
    ):
        with pytest.raises(ValueError, match=f"conformity_score=.*returned shape.*{shape}"):
            est.start(ledger=ledger, dataset="d")
        assert not hasattr(est, "tracker_")
    assert ledger.status("d").spent_epsilon == 0.0
    # the outputs each score needs pass; so do models the probe cannot run (no width given,
    # or an unknown category on the row of zeros): their first rows decide, as before
    categories = make_pipeline(OneHotEncoder(), Ridge()).fit([[1.0], [2.0]], [0.0, 1.0])
    for est in (
        PrivateOnlineConformalRegressor(quantiles, epsilon=0.3, bound=3.0, conformity_score="cqr"),
        PrivateOnlineConformalRegressor(
            (point, point), epsilon=0.3, bound=3.0, conformity_score="cqr"
        ),
        PrivateOnlineConformalRegressor(point, epsilon=0.3, bound=3.0),
        PrivateOnlineConformalRegressor(
            point.predict, epsilon=0.3, bound=3.0, conformity_score="cqr"
        ),
        PrivateOnlineConformalRegressor(categories, epsilon=0.3, bound=3.0),
    ):
        est.start(ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == pytest.approx(1.5)
    reg = PrivateOnlineConformalRegressor(
        quantiles, epsilon=0.3, bound=3.0, conformity_score="cqr", random_state=0
    )
    assert reg.update(X, y).predict_interval(X[:2]).sets.shape == (2, 2)


def test_the_offline_regressor_refuses_a_mismatched_model_before_the_charge(tmp_path):
    """PrivateConformalRegressor scores the calibration rows before its charge: the same
    mismatch costs nothing there (a guard, not a change)."""
    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("d", epsilon=5.0)
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    reg = dpuq.PrivateConformalRegressor(
        Ridge().fit(X, y), epsilon=1.0, bound=3.0, conformity_score="cqr"
    )
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        reg.conformalize(X, y, ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == 0.0


def test_a_classifier_whose_probabilities_every_update_would_refuse_costs_nothing(tmp_path):
    """The online classifier probed its score on a dummy row but not its model: a model whose
    probabilities every update refuses (one column, rows not summing to 1) was charged at
    start(). Its probabilities on a public row of zeros are checked first now."""
    from sklearn.linear_model import LogisticRegression

    ledger = Ledger(tmp_path / "l.sqlite", create=True)
    ledger.create_budget("d", epsilon=5.0)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    good = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))

    class Scaled:  # probabilities times 2: not a probability vector
        n_features_in_ = 3

        def predict_proba(self, rows):
            return 2.0 * good.predict_proba(rows)

    class OneColumn:
        n_features_in_ = 3

        def predict_proba(self, rows):
            return good.predict_proba(rows)[:, :1]

    for model in (Scaled(), OneColumn()):
        est = dpuq.PrivateOnlineConformalClassifier(model, epsilon=0.3, random_state=0)
        with pytest.raises(ValueError, match="public row of zeros"):
            est.start(ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == 0.0
    dpuq.PrivateOnlineConformalClassifier(good, epsilon=0.3).start(ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == pytest.approx(0.3)
