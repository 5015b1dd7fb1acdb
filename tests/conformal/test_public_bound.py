"""`dpuq.public_bound`: the regression bound B from held-out training residuals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import Ridge

import dpuq
from dpuq.conformal.bound import InSampleResidualsWarning


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:250], y[:250], X[250:], y[250:]


def test_held_out_bound_is_larger_than_in_sample_for_an_overfitting_model(diabetes):
    X, y, Xn, yn = diabetes
    forest = RandomForestRegressor(n_estimators=40, random_state=0)
    held = dpuq.public_bound(forest, X, y, random_state=0)
    assert held.held_out
    forest.fit(X, y)
    with pytest.warns(InSampleResidualsWarning, match="cv=5"):
        inside = dpuq.public_bound(forest, X, y, cv=None)
    assert not inside.held_out
    new_people = np.quantile(np.abs(yn - forest.predict(Xn)), 0.99)
    # in-sample residuals understate new people's; held-out ones do not (by a wide margin)
    assert inside.bound < 0.7 * new_people
    assert held.bound > 0.8 * new_people


def test_a_held_out_bound_gives_informative_private_intervals(diabetes):
    X, y, Xn, yn = diabetes
    model = Ridge(alpha=0.1).fit(X, y)
    b = float(dpuq.public_bound(Ridge(alpha=0.1), X, y, random_state=0))
    reg = dpuq.PrivateConformalRegressor(model, epsilon=5.0, bound=b, random_state=0)
    iv = reg.conformalize(Xn[:150], yn[:150]).predict_interval(Xn[150:]).sets
    assert np.all(np.isfinite(iv))
    assert np.mean((iv[:, 0] <= yn[150:]) & (yn[150:] <= iv[:, 1])) > 0.75


def test_cqr_pair_and_held_out_data_without_warning(diabetes):
    from sklearn.ensemble import GradientBoostingRegressor

    X, y, Xn, yn = diabetes
    pair = tuple(
        GradientBoostingRegressor(loss="quantile", alpha=a, n_estimators=30, random_state=0)
        for a in (0.05, 0.95)
    )
    b = dpuq.public_bound(pair, X, y, score="cqr", cv=3, random_state=0)
    assert b.bound > 0
    for m in pair:
        m.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = dpuq.public_bound(pair, Xn, yn, score="cqr", cv=None, held_out=True)
    assert c.held_out and c.bound > 0


def test_private_release_of_the_bound(diabetes):
    X, y, Xn, yn = diabetes
    model = Ridge(alpha=0.1).fit(X, y)  # fitted on other people than (Xn, yn)
    b = dpuq.public_bound(
        model, Xn, yn, cv=None, held_out=True, epsilon=1.0, upper=400.0, random_state=1
    )
    assert b.privacy_report is not None and b.privacy_report.seeded
    assert np.isclose(b.bound / 0.4, round(b.bound / 0.4))  # on the public grid upper/m
    with pytest.raises(ValueError, match="cv=None"):
        dpuq.public_bound(model, Xn, yn, epsilon=1.0, upper=400.0)
    with pytest.raises(ValueError, match="held_out=True"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dpuq.public_bound(model, Xn, yn, cv=None, epsilon=1.0, upper=400.0)
    with pytest.raises(ValueError, match="upper"):
        dpuq.public_bound(model, Xn, yn, cv=None, held_out=True, epsilon=1.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"score": "pinball"}, "score"),
        ({"quantile": 1.0}, "quantile"),
        ({"cv": 1}, "cv"),
    ],
)
def test_bad_arguments_are_named(diabetes, kwargs, match):
    X, y, _, _ = diabetes
    with pytest.raises(ValueError, match=match):
        dpuq.public_bound(Ridge(), X, y, **kwargs)


def test_plan_bound_on_the_command_line(diabetes, tmp_path, capsys):
    from dpuq.cli import main

    X, y, _, _ = diabetes
    from sklearn.model_selection import cross_val_predict

    pred = cross_val_predict(Ridge(alpha=0.1), X, y, cv=5)
    np.savetxt(tmp_path / "p.csv", pred)
    np.savetxt(tmp_path / "y.csv", y)
    args = ["plan", "--alpha", "0.1", "--suggest-bound", "--predictions", str(tmp_path / "p.csv")]
    args += ["--targets", str(tmp_path / "y.csv")]
    expected = float(np.quantile(np.abs(y - pred), 0.99, method="higher"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main([*args, "--held-out"]) == 0
    out = capsys.readouterr().out
    assert f"B = {expected:.6g}" in out and "held-out" in out
    with pytest.warns(UserWarning, match="in-sample"):
        assert main(args) == 0
    assert main(args[:4]) == 2  # --suggest-bound without files: one line, exit 2
    assert "--suggest-bound needs --predictions" in capsys.readouterr().err
