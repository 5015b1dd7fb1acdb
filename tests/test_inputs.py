"""Inputs users hold: logits, float16/float32 probabilities, torch tensors, pandas columns."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dpuq
from cli_helpers import run_cli
from dpuq._validation import as_array, check_probabilities, probability_tolerance
from dpuq.conformal.logits import LogitsModel, softmax

pytestmark = pytest.mark.filterwarnings("ignore:--seed makes the noise reproducible")


def _logit_data(n=2000, k=4, seed=0):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, k))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return z, y


class TestSoftmax:
    def test_matches_the_definition_and_is_stable_for_huge_logits(self):
        z = np.array([[1.0, 2.0, 3.0], [1e4, 0.0, -1e4], [-1e4, -1e4, -1e4]])
        p = softmax(z)
        assert np.all(np.isfinite(p))
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-15)
        np.testing.assert_allclose(p[0], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
        np.testing.assert_array_equal(p[1], [1.0, 0.0, 0.0])
        np.testing.assert_allclose(p[2], 1 / 3)

    def test_temperature_divides_the_logits_and_must_be_positive(self):
        z = np.array([[0.0, 2.0]])
        np.testing.assert_allclose(softmax(z, 2.0), softmax(z / 2.0))
        for bad in (0.0, -1.0, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="temperature"):
                softmax(z, bad)

    @pytest.mark.parametrize(
        "z, match", [([1.0, 2.0], "2-dimensional"), ([[1.0]], "2 classes"), ([[np.nan, 0]], "NaN")]
    )
    def test_bad_logits_are_named(self, z, match):
        with pytest.raises(ValueError, match=match):
            softmax(z)


class TestProbabilityTolerance:
    @pytest.mark.parametrize("dtype", [np.float16, np.float32])
    def test_low_precision_rows_are_accepted_within_their_own_precision(self, dtype):
        z, _ = _logit_data(500, k=100)
        p = softmax(z).astype(dtype)  # rounding moves the sums away from 1
        assert np.abs(p.astype(float).sum(axis=1) - 1).max() > 1e-6 or dtype == np.float32
        out = check_probabilities(p)
        assert out.dtype == np.float64
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
        dpuq.lac_scores(p, np.zeros(500, dtype=int))  # scores accept them too

    def test_float64_rows_keep_the_strict_tolerance(self):
        p = np.array([[0.5, 0.5 - 1e-4]])
        with pytest.raises(ValueError, match="do not sum to 1"):
            check_probabilities(p)
        with pytest.raises(ValueError, match="do not sum to 1"):  # beyond float16 precision too
            check_probabilities(np.array([[0.5, 0.45]], dtype=np.float16))

    def test_tolerance_grows_with_classes_and_shrinks_with_precision(self):
        assert probability_tolerance(np.float64, 1000) == 1e-6
        assert probability_tolerance(np.float32, 1000) > probability_tolerance(np.float32, 10)
        assert probability_tolerance(np.float16, 10) > probability_tolerance(np.float32, 10)


class TestContainers:
    def test_torch_tensors_with_grad_and_pandas_frames_are_accepted(self):
        torch = pytest.importorskip("torch")
        pd = pytest.importorskip("pandas")
        z, y = _logit_data(300)
        p = softmax(z)
        t = torch.tensor(p, dtype=torch.float32, requires_grad=True)
        expected = dpuq.lac_scores(p, y)
        np.testing.assert_allclose(dpuq.lac_scores(t, torch.tensor(y)), expected, atol=1e-6)
        frame = pd.DataFrame(p)
        np.testing.assert_allclose(dpuq.lac_scores(frame, pd.Series(y)), expected)
        np.testing.assert_allclose(softmax(torch.tensor(z)), p)
        assert as_array(pd.Series([1, 2])).tolist() == [1, 2]

    def test_polars_columns_are_accepted(self):
        pl = pytest.importorskip("polars")
        assert as_array(pl.Series([0.25, 0.75])).tolist() == [0.25, 0.75]

    def test_a_nullable_pandas_column_with_missing_values_is_refused_by_name(self):
        pd = pytest.importorskip("pandas")
        with pytest.raises(ValueError, match="labels"):
            dpuq.lac_scores([[0.5, 0.5]] * 2, pd.Series([0, None], dtype="Int64"))


class TestFromLogits:
    def test_same_release_as_the_softmax_probabilities(self):
        z, y = _logit_data()
        fn = LogitsModel(lambda X: z[np.asarray(X)[:, 0].astype(int)], temperature=1.7)
        X = np.arange(len(y))[:, None]
        a = dpuq.PrivateConformalClassifier.from_logits(
            fn.model, temperature=1.7, epsilon=1.0, random_state=4
        ).conformalize(X[:1500], y[:1500])
        b = dpuq.PrivateConformalClassifier(
            lambda X: softmax(z[np.asarray(X)[:, 0].astype(int)], 1.7), epsilon=1.0, random_state=4
        ).conformalize(X[:1500], y[:1500])
        assert a.threshold_ == b.threshold_
        np.testing.assert_array_equal(a.predict_set(X[1500:]).sets, b.predict_set(X[1500:]).sets)

    def test_torch_module_and_sklearn_decision_function(self):
        torch = pytest.importorskip("torch")
        from sklearn.linear_model import LogisticRegression

        rng = np.random.default_rng(1)
        X = rng.normal(size=(600, 3)).astype(np.float32)
        y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
        net = torch.nn.Linear(3, 2)
        p = LogitsModel(net).predict_proba(X)
        assert p.shape == (600, 2)
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
        lr = LogisticRegression().fit(X, y)
        np.testing.assert_allclose(LogitsModel(lr).predict_proba(X), lr.predict_proba(X), atol=1e-6)


class TestCli:
    def _run(self, capsys, *argv):
        return run_cli(capsys, *argv)

    def test_logits_give_the_release_of_their_softmax(self, tmp_path, capsys):
        z, y = _logit_data()
        np.save(tmp_path / "z.npy", z)
        np.save(tmp_path / "p.npy", softmax(z, 2.0))
        np.savetxt(tmp_path / "y.csv", y, fmt="%d")
        common = ["--labels", tmp_path / "y.csv", "--alpha", 0.1, "--epsilon", 1, "--seed", 5]
        code, out, _ = self._run(
            capsys, "calibrate", "--logits", tmp_path / "z.npy", "--temperature", 2,
            *common, "-o", tmp_path / "a.json",
        )  # fmt: skip
        assert code == 0
        assert "seeded" in out
        code, _, _ = self._run(
            capsys, "calibrate", "--probs", tmp_path / "p.npy", *common, "-o", tmp_path / "b.json"
        )
        assert code == 0
        a = json.loads((tmp_path / "a.json").read_text())
        b = json.loads((tmp_path / "b.json").read_text())
        assert a["threshold"] == b["threshold"]
        assert a["temperature"] == 2.0 and a["input"] == "logits"
        assert a["seeded"] and a["privacy_report"]["seeded"]
        code, out, _ = self._run(
            capsys, "predict", "--calibration", tmp_path / "a.json",
            "--logits", tmp_path / "z.npy", "-o", tmp_path / "sa.npy",
        )  # fmt: skip
        assert code == 0
        self._run(
            capsys, "predict", "--calibration", tmp_path / "b.json",
            "--probs", tmp_path / "p.npy", "-o", tmp_path / "sb.npy",
        )  # fmt: skip
        np.testing.assert_array_equal(np.load(tmp_path / "sa.npy"), np.load(tmp_path / "sb.npy"))

    def test_unseeded_output_does_not_say_seeded_and_misuse_is_one_line(self, tmp_path, capsys):
        z, y = _logit_data(500)
        np.save(tmp_path / "z.npy", z)
        np.savetxt(tmp_path / "y.csv", y, fmt="%d")
        args = ["--labels", tmp_path / "y.csv", "--alpha", 0.1, "--epsilon", 2]
        code, out, _ = self._run(
            capsys, "calibrate", "--logits", tmp_path / "z.npy", *args, "-o", tmp_path / "c.json"
        )
        assert code == 0 and "seeded (--seed)" not in out
        assert not json.loads((tmp_path / "c.json").read_text())["seeded"]
        code, _, err = self._run(
            capsys, "calibrate", "--logits", tmp_path / "z.npy", "--temperature", 0,
            *args, "-o", tmp_path / "d.json",
        )  # fmt: skip
        assert code == 2 and "--temperature" in err and len(err.strip().splitlines()) == 1


def test_torch_and_pandas_through_the_estimators():
    torch = pytest.importorskip("torch")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 2))
    y = X[:, 0] + 0.3 * rng.normal(size=600)
    net = torch.nn.Linear(2, 1)
    with torch.no_grad():
        net.weight[:] = torch.tensor([[1.0, 0.0]])
        net.bias[:] = 0.0

    def predict(X):  # returns a tensor that requires grad
        return net(torch.tensor(np.array(X), dtype=torch.float32))[:, 0]

    reg = dpuq.PrivateConformalRegressor(predict, epsilon=2.0, bound=2.0, random_state=0)
    iv = reg.conformalize(pd.DataFrame(X[:400]), pd.Series(y[:400])).predict_interval(X[400:]).sets
    assert np.all(np.isfinite(iv)) and np.mean((iv[:, 0] <= y[400:]) & (y[400:] <= iv[:, 1])) > 0.8
    stumps = dpuq.DecisionStumps(np.linspace(-2, 2, 9), n_features=2)
    clf = dpuq.PrivateERMClassifier(stumps, epsilon=2.0, random_state=0)
    clf.fit(torch.tensor(X), pd.Series((X[:, 0] > 0).astype(int)))
    assert clf.score(pd.DataFrame(X), torch.tensor((X[:, 0] > 0).astype(int))) > 0.8
