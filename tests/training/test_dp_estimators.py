"""DPClassifier / DPRegressor: errors naming the argument, public model choice, plugging into
the conformal estimators and the CLI, the privacy report, the ledger, progress lines."""

from __future__ import annotations

import json
import logging
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import make_classification
from torch import nn

import dpuq
from cli_helpers import run_cli
from dpuq._estimator import RepeatedReleaseWarning
from dpuq.privacy.ledger import Ledger
from dpuq.training import estimators
from dpuq.training.estimators import DPClassifier, DPRegressor
from dpuq.training.features import synthetic_images

FAST = dict(accountant="gdp", epochs=3, show_progress=False, random_state=0)


@pytest.fixture(autouse=True)
def _one_thread_quiet():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RepeatedReleaseWarning)
        yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tab():
    X, y = make_classification(
        900, n_features=6, n_informative=4, n_classes=3, class_sep=1.5, random_state=1
    )
    return X, y


def _clf(**kw):
    return DPClassifier(**{"epsilon": 4.0, "delta": 1e-5, **FAST, **kw})


# ---------------------------------------------------------------- errors naming the argument
def test_init_validates_nothing_and_fit_names_the_argument(tab):
    X, y = tab
    cases = [
        (dict(epsilon=-1.0), ValueError, "epsilon"),
        (dict(delta=2.0), ValueError, "delta"),
        (dict(method="sgd"), ValueError, "method"),
        (dict(model="resnet"), ValueError, "model"),
        (dict(model=3), TypeError, "model"),
        (dict(feature_bounds=(1, 0)), ValueError, "feature_bounds"),
        (dict(feature_bounds=[(0, 1)] * 4), ValueError, "feature_bounds"),
        (dict(random_state=np.random.default_rng(0)), TypeError, "random_state"),
    ]
    for kw, kind, needle in cases:
        est = _clf(**kw)  # constructing never raises (scikit-learn's contract)
        with pytest.raises(kind, match=needle):
            est.fit(X, y)
    with pytest.raises(TypeError):
        DPClassifier(delta=1e-5)  # no default epsilon


def test_bad_data_gets_a_clear_error(tab):
    X, y = tab
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _clf().fit(bad, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        _clf().fit(X, y[:-1])
    with pytest.raises(ValueError, match="2 classes"):
        _clf().fit(X, np.zeros(len(y), dtype=int))
    with pytest.raises(ValueError, match="not in classes"):
        _clf(classes=[0, 1]).fit(X, y)
    with pytest.raises(ValueError, match="Expected 2D array"):
        _clf().fit(X[:, 0], y)
    fitted = _clf().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :4])
    with pytest.raises(dpuq.NotFittedError):
        _clf().predict(X)


def test_batch_norm_and_wrong_outputs_are_refused_by_name(tab):
    X, y = tab
    bn = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    with pytest.raises(ValueError, match=r"model cannot be trained privately.*BatchNorm1d"):
        _clf(model=bn).fit(X, y)
    with pytest.raises(ValueError, match=r"model must output shape \(batch, 3\)"):
        _clf(model=nn.Linear(6, 2)).fit(X, y)
    with pytest.raises(ValueError, match="model cannot take X"):
        _clf(model=nn.Linear(5, 3)).fit(X, y)


# ---------------------------------------------------------------- the estimator contract
def test_a_torch_module_is_copied_trained_and_never_modified(tab):
    X, y = tab
    net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    clf = _clf(model=net, feature_bounds=(-6, 6)).fit(X, y)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert clf.model_name_ == "user" and clf.model_ is not net
    # trained: above chance (1/3 for 3 classes) by more than 4 binomial SEs at n = 900
    assert clf.score(X, y) > 0.4
    twin = clone(clf)
    assert twin.get_params()["model"] is not net and not hasattr(twin, "model_")


def test_seeded_fits_are_reproducible_and_reports_say_seeded(tab):
    X, y = tab
    a, b = _clf(model="mlp").fit(X, y), _clf(model="mlp").fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.privacy_report_.seeded and not _clf(random_state=None).fit(X, y).privacy_report_.seeded


def test_predict_logits_proba_and_labels_agree(tab):
    X, y = tab
    clf = _clf(classes=np.array([2, 0, 1])).fit(X, y)
    z, p = clf.predict_logits(X[:50]), clf.predict_proba(X[:50])
    np.testing.assert_allclose(p, dpuq.softmax(z), atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X[:50]), clf.classes_[p.argmax(1)])
    assert clf.classes_.tolist() == [2, 0, 1]  # the declared order
    assert "declared" in " ".join(clf.privacy_report_.notes)


def test_string_labels_round_trip(tab):
    X, y = tab
    names = np.array(["ant", "bee", "cat"])[y]
    clf = _clf().fit(X, names)
    assert set(clf.predict(X)) <= set(names) and clf.classes_.tolist() == ["ant", "bee", "cat"]


# ---------------------------------------------------------------- public model choice
def test_the_model_choice_and_report_read_public_quantities_only(tab):
    X, y = tab
    rng = np.random.default_rng(5)
    other_X, other_y = rng.normal(size=X.shape) * 100, rng.permutation(y)
    a, b = _clf().fit(X, y), _clf().fit(other_X, other_y)
    assert a.model_name_ == b.model_name_ == "linear"
    keys = ("model", "model (why)", "inputs", "n_samples (public)", "steps", "expected batch size")
    assert all(a.privacy_report_.details[k] == b.privacy_report_.details[k] for k in keys)
    assert a.privacy_report_.notes == b.privacy_report_.notes
    assert "no feature_bounds declared" in a.privacy_report_.details["inputs"]
    assert a.privacy_report_.epsilon <= 4.0 + 1e-9
    assert "N is public under replace-one" in " ".join(a.privacy_report_.notes)


def test_images_follow_the_recipe_rule():
    from dpuq.training.features import choose_model_family

    x, y = synthetic_images(300, side=8, seed=3)
    clf = _clf(feature_bounds=(0, 1)).fit(x, y)
    family, why = choose_model_family(300, 4.0)
    assert clf.model_name_ == family == "features"
    assert why in clf.privacy_report_.details["model (why)"]
    assert clf.predict_proba(x[:5]).shape == (5, 10)
    # the same inputs as the demo's models: fixed_features (8×8: pixels beside one-scale
    # scattering, 64 + 144 = 208), not scattering alone (144, before the demo used it)
    assert next(clf.model_.parameters()).shape[-1] == 208
    assert "pixels beside" in clf.privacy_report_.details["model (why)"]
    cnn = _clf(model="cnn").fit(x[:, None], y)  # (N, C, H, W)
    assert cnn.model_name_ == "cnn" and cnn.predict(x[:4, None]).shape == (4,)
    with pytest.raises(ValueError, match="model='mlp' needs tabular"):
        _clf(model="mlp").fit(x, y)


def test_declared_bounds_clip_and_scale():
    from dpuq.training.auto_model import check_feature_bounds, scale_features

    b = check_feature_bounds([(0, 10), (-1, 1)], 2)
    out = scale_features(np.array([[5.0, 3.0], [-4.0, 0.0]]), b)
    np.testing.assert_allclose(out, [[0.0, 1.0], [-1.0, 0.0]])
    with pytest.raises(ValueError, match="target_bounds"):
        DPRegressor(epsilon=1.0, delta=1e-5, target_bounds=(2, 1), **FAST).fit(
            np.zeros((10, 2)), np.zeros(10)
        )


# ---------------------------------------------------------------- regression
def test_the_regressor_learns_a_linear_signal_and_maps_targets_back():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1000, 3))
    y = 10 + X @ np.array([3.0, -2.0, 1.0]) + 0.1 * rng.normal(size=1000)
    reg = DPRegressor(
        epsilon=4.0, delta=1e-5, feature_bounds=(-1, 1), target_bounds=(0, 20), **FAST
    ).fit(X, y)
    assert reg.score(X, y) > 0.6
    assert 6 < float(np.median(reg.predict(X))) < 14  # back on the targets' scale
    assert reg.privacy_report_.details["task"] == "regression"


def test_train_classifier_takes_real_targets_for_regression():
    from dpuq.training import train_classifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2)).astype("float32")
    y = (0.3 * X[:, 0]).astype("float32")
    model, report = train_classifier(
        nn.Linear(2, 1), (X, y), method="dpsgd", epsilon=3.0, delta=1e-5, epochs=2,
        accountant="gdp", task="regression", averaging="weights", random_state=0,
        show_progress=False,
    )  # fmt: skip
    assert report.epsilon <= 3.0 + 1e-9 and model(torch.zeros(1, 2)).shape == (1, 1)
    with pytest.raises(ValueError, match="task"):
        train_classifier(nn.Linear(2, 1), (X, y), method="dpsgd", epsilon=1.0, delta=1e-5,
                         task="ranking")  # fmt: skip


# ---------------------------------------------------------------- plugging in
def test_plugs_into_the_private_conformal_estimators(tab):
    X, y = tab
    clf = _clf(feature_bounds=(-6, 6)).fit(X[:400], y[:400])
    conf = dpuq.PrivateConformalClassifier(clf, epsilon=1.0, random_state=0)
    conf.conformalize(X[400:], y[400:])
    assert conf.predict_set(X[:5]).shape == (5, 3)
    assert conf.classes_.tolist() == clf.classes_.tolist()
    unfitted = dpuq.PrivateConformalClassifier(_clf(), epsilon=1.0, prefit=False, random_state=0)
    unfitted.fit(X[:400], y[:400]).conformalize(X[400:], y[400:])
    assert hasattr(unfitted.estimator_, "model_")
    from_logits = dpuq.PrivateConformalClassifier.from_logits(clf, epsilon=1.0, random_state=0)
    assert from_logits.conformalize(X[400:], y[400:]).predict_set(X[:2]).shape == (2, 3)
    rng = np.random.default_rng(0)
    Xr = rng.uniform(-1, 1, size=(600, 2))
    yr = Xr[:, 0] + 0.1 * rng.normal(size=600)
    reg = DPRegressor(epsilon=4.0, delta=1e-5, feature_bounds=(-1, 1), **FAST).fit(
        Xr[:300], yr[:300]
    )
    intervals = dpuq.PrivateConformalRegressor(reg, epsilon=1.0, bound=4.0, random_state=0)
    assert intervals.conformalize(Xr[300:], yr[300:]).predict_interval(Xr[:3]).shape[0] == 3


@pytest.mark.filterwarnings("ignore:--seed makes the noise reproducible")
def test_outputs_feed_the_cli_and_temperature_scaling(tab, tmp_path, capsys):
    X, y = tab
    clf = _clf(feature_bounds=(-6, 6)).fit(X[:400], y[:400])
    np.save(tmp_path / "probs.npy", clf.predict_proba(X[400:]))
    np.savetxt(tmp_path / "labels.csv", y[400:], fmt="%d")
    code, _, err = run_cli(capsys, "calibrate", "--probs", tmp_path / "probs.npy", "--labels",
                           tmp_path / "labels.csv", "--alpha", 0.1, "--epsilon", 1, "--seed", 0,
                           "-o", tmp_path / "cal.json")  # fmt: skip
    assert code == 0, err
    assert json.loads((tmp_path / "cal.json").read_text())["threshold"] > 0
    T = dpuq.training.private_temperature_scaling(
        clf.predict_logits(X[400:650]), y[400:650], epsilon=1.0, random_state=0
    )
    p = dpuq.softmax(clf.predict_logits(X[650:]) / T)  # the result is the temperature
    np.testing.assert_allclose(p, dpuq.softmax(clf.predict_logits(X[650:]), float(T.temperature)))


# ---------------------------------------------------------------- ledger, device, progress
def test_fit_charges_the_ledger_once_before_training(tab, tmp_path):
    X, y = tab
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("people", epsilon=5.0, delta=1e-4)
    _clf().fit(X, y, ledger=led, dataset="people")
    (row,) = led.releases("people")
    assert row.epsilon == 4.0 and row.settings["n"] == len(y)
    with pytest.raises(dpuq.BudgetExceededError):
        _clf().fit(X, y, ledger=led, dataset="people")


def test_device_and_world_size_are_forwarded_only_when_set(tab, monkeypatch):
    X, y = tab
    seen = []
    real = dpuq.training.train.train_classifier

    def spy(*args, **kwargs):
        seen.append({k: kwargs[k] for k in ("device", "world_size") if k in kwargs})
        kwargs.pop("device", None), kwargs.pop("world_size", None)
        return real(*args, **kwargs)

    monkeypatch.setattr(dpuq.training.train, "train_classifier", spy)
    _clf().fit(X, y)
    _clf(device="cpu", world_size=2).fit(X, y)
    assert seen == [{}, {"device": "cpu", "world_size": 2}]


def test_progress_is_logged_when_stderr_is_not_a_terminal(tab, caplog):
    X, y = tab
    lines = []
    for labels in (y, np.roll(y, 1)):  # two data sets of the same size: the same lines
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="dpuq.progress"):
            _clf(show_progress=True).fit(X, labels)
        lines.append([r.getMessage() for r in caplog.records if r.name == "dpuq.progress"])
    assert lines[0] == lines[1]
    assert lines[0][-1].startswith("DP-SGD: step") and lines[0][-1].endswith("(100%)")
    assert 3 <= len(lines[0]) <= 12
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dpuq.progress"):
        _clf(show_progress=False).fit(X, y)
    assert not [r for r in caplog.records if r.name == "dpuq.progress"]


def test_estimators_module_is_in_the_training_package():
    assert dpuq.DPClassifier is estimators.DPClassifier
    assert dpuq.training.DPRegressor is estimators.DPRegressor


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dpsgd", "dpsgld"])
def test_tabular_accuracy_near_non_private_logistic_regression(method):
    """Issue 35's goal at N = 5000, ε = 1 (replace-one), on a draw the benchmark does not
    report (seed 11): within 0.05 of non-private logistic regression (benchmark: 0.004-0.019)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(
        10_000, n_features=20, n_informative=10, n_redundant=4, random_state=11
    )
    base = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    reference = base.fit(X[:5000], y[:5000]).score(X[5000:], y[5000:])
    clf = DPClassifier(epsilon=1.0, delta=1e-5, method=method, feature_bounds=(-5, 5),
                       show_progress=False, random_state=0).fit(X[:5000], y[:5000])  # fmt: skip
    assert clf.privacy_report_.epsilon <= 1.0 + 1e-9
    assert clf.score(X[5000:], y[5000:]) >= reference - 0.05


def test_a_pickle_predicts_the_same_and_holds_no_generator(tab):
    import pickle

    X, y = tab
    clf = _clf(method="dpsgld").fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    state = restored.__dict__
    assert not any(isinstance(v, np.random.Generator | torch.Generator) for v in state.values())


def test_dpsgld_predicts_the_posterior_average_and_spends_its_budget(tab):
    """DP-SGLD releases the posterior predictive of late Langevin samples (Welling and Teh
    2011): ``predict_proba`` is the mean of the samples' softmax outputs, post-processing of
    iterates the accounting covers. Its temperature is calibrated by the report's own
    accountant, so the run spends ε (issue 35: 2 % of ε was left unspent)."""
    from dpuq.training.averaging import IterateAverage

    X, y = tab
    clf = _clf(method="dpsgld", accountant="pld").fit(X, y)
    members = clf.model_.members
    assert isinstance(clf.model_, IterateAverage) and len(members) >= 2
    assert clf.privacy_report_.details["averaged iterates"] == len(members)
    x = torch.as_tensor(clf._inputs(np.asarray(X[:50], dtype=np.float64), clf.bounds_))
    with torch.no_grad():
        each = torch.stack([torch.softmax(m(x), dim=1) for m in members])
    np.testing.assert_allclose(clf.predict_proba(X[:50]), each.mean(0).numpy(), atol=1e-6)
    report = clf.privacy_report_
    assert report.details["averaging"] == "predictive"
    assert 0.999 * 4.0 <= report.epsilon <= 4.0


# ---------------------------------------------------------------- an outside probe (eighth session)
def test_a_refused_refit_leaves_the_estimator_as_it_was(tab, tmp_path):
    """A refit refused after ``fit`` had set ``classes_`` (or ``target_bounds_``, the fixed
    features, ``n_features_in_``) paired the old model with the new state: predictions
    changed. Refused now means unchanged; the repeated-release warning fires only once a refit
    is accepted (it said epsilon was spent again when nothing was)."""
    X, y = tab
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=6.0, delta=1e-4)
    clf = _clf().fit(X, y, ledger=led, dataset="d")
    before, state = clf.predict(X[:20]), sorted(vars(clf))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedReleaseWarning)  # none for a refused refit
        with pytest.raises(dpuq.BudgetExceededError):
            clf.set_params(classes=[5, 7, 9]).fit(X, np.array([5, 7, 9])[y], ledger=led,
                                                  dataset="d")  # fmt: skip
        with pytest.raises(ValueError, match="learning_rate"):
            clf.set_params(classes=None, learning_rate=-1.0).fit(X[:, :4], y)
    assert np.array_equal(clf.predict(X[:20]), before) and sorted(vars(clf)) == state
    assert clf.n_features_in_ == X.shape[1] and list(clf.classes_) == [0, 1, 2]
    with pytest.warns(RepeatedReleaseWarning, match="spent"):
        clf.set_params(classes=None, learning_rate="auto").fit(X, y)
    # a warning turned into an error comes after the estimator is whole: the refit's model
    # (its budget spent) is kept, not thrown away (a second reader, eighth session)
    led.create_budget("e", epsilon=20.0, delta=1e-4)
    clf.set_params(random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedReleaseWarning)
        with pytest.raises(RepeatedReleaseWarning):
            clf.fit(X, y, ledger=led, dataset="e")
    assert led.status("e").spent_epsilon == 4.0 and clf.random_state == 1
    assert clf.privacy_report_.details.get("seeded", True) is not None
    assert not np.array_equal(clf.predict_proba(X[:50]), _clf().fit(X, y).predict_proba(X[:50]))
    t = X[:, 0] + X[:, 1]
    reg = DPRegressor(epsilon=4.0, delta=1e-5, target_bounds=(-4, 4), **FAST).fit(X, t)
    pred = reg.predict(X[:5])
    with pytest.raises(ValueError, match="learning_rate"):
        reg.set_params(target_bounds=(100, 200), learning_rate=-1.0).fit(X, t)
    assert np.array_equal(reg.predict(X[:5]), pred) and reg.target_bounds_[0][0] == -4


def test_bad_recipe_settings_are_refused_before_the_inputs_are_read(tab, monkeypatch):
    """A bad accountant, epochs, batch_size or learning_rate was refused only after every
    input had been featurised (time growing with N)."""
    from dpuq.training import _dp_estimator

    def not_yet(*a, **k):
        raise AssertionError("the inputs were read before the settings were checked")

    monkeypatch.setattr(_dp_estimator, "scale_features", not_yet)
    monkeypatch.setattr(_dp_estimator, "choose_model", not_yet)
    X, y = tab
    for kw, name in ((dict(accountant="zzz"), "accountant"), (dict(epochs=0), "epochs"),
                     (dict(batch_size=-3), "batch_size"),
                     (dict(learning_rate=-1.0), "learning_rate")):  # fmt: skip
        with pytest.raises(ValueError, match=name):
            _clf(**kw).fit(X, y)


def test_values_beyond_float32_and_extreme_bounds_get_a_clear_error_not_a_warning(tab):
    """A finite value above float32's maximum made a cast warn ("overflow"), a warning whose
    presence depended on the data; declared bounds at ±3e38 or 1e-46 apart broke the scaling
    silently or blamed X."""
    X, y = tab
    big = X.copy()
    big[3, 2] = 1e39
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all: clipped at float64 first
        clf = _clf(feature_bounds=(-10, 10)).fit(big, y)
        assert np.isfinite(clf.predict_proba(big)).all()
    with pytest.raises(ValueError, match="X: values beyond float32"):
        _clf().fit(big, y)
    with pytest.raises(ValueError, match="y: values beyond float32"):
        DPRegressor(epsilon=4.0, delta=1e-5, **FAST).fit(X, np.r_[1e300, np.zeros(len(X) - 1)])
    for bounds in ((-3e38, 3e38), (0.0, 1e-46), (-1e300, 1e300), (1e7, 1e7 + 0.5)):
        with pytest.raises(ValueError, match="feature_bounds"):
            _clf(feature_bounds=bounds).fit(X, y)
        with pytest.raises(ValueError, match="target_bounds"):
            DPRegressor(epsilon=4.0, delta=1e-5, target_bounds=bounds, **FAST).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="classes must declare at least 2"):
        _clf(classes=[]).fit(X, y)


def test_a_training_that_fails_after_the_charge_says_the_charge_stands(tmp_path):
    """A second reader (eighth session): a model that raised during training left the ledger
    charged and the error silent about it."""
    from dpuq.training import train_classifier

    class Breaks(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            if self.training:
                raise RuntimeError("a user's model failed")
            return self.lin(x)

    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=5.0, delta=1e-4)
    x = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    with pytest.raises(RuntimeError, match="failed") as info:
        train_classifier(Breaks(), (x, y), method="dpsgd", epsilon=1.0, delta=1e-5,
                         accountant="gdp", epochs=1, show_progress=False, ledger=led,
                         dataset="d", random_state=0)  # fmt: skip
    assert any("the charge stands" in note for note in info.value.__notes__)
    assert led.status("d").spent_epsilon == 1.0
