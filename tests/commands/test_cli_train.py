"""`dpuq train` and `dpuq outputs`: private models from the command line (issue 35, item 1)."""

import json
import pickle
import warnings

import numpy as np
import pytest

from dpuq.cli import main
from dpuq.privacy.ledger import Ledger

pytest.importorskip("opacus")


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Digits split into training, calibration and test people, as a user's files."""
    from sklearn.datasets import load_digits

    d = tmp_path_factory.mktemp("train")
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    tr, cal, te = order[:800], order[800:1300], order[1300:]
    np.savetxt(d / "tr_x.csv", x[tr], delimiter=",", fmt="%d")
    np.savetxt(d / "tr_y.csv", y[tr], fmt="%d")
    np.save(d / "cal_x.npy", x[cal])
    np.save(d / "cal_y.npy", y[cal])
    np.save(d / "te_x.npy", x[te])
    np.save(d / "te_y.npy", y[te])
    return d


def _ledger(tmp_path) -> tuple:
    """``--ledger PATH --dataset clinic`` for a ledger in ``tmp_path``."""
    return ("--ledger", tmp_path / "l.sqlite", "--dataset", "clinic")


def _outputs(capsys, model, features, out, *extra):
    """``dpuq outputs``; returns the exit status (0 expected)."""
    args = ("outputs", "--model", model, "--features", features, "-o", out, *extra)
    return run_cli(capsys, *args)[0]


def _train(capsys, files, out, *extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # --seed's warning
        return run_cli(
            capsys,
            "train",
            "--features",
            files / "tr_x.csv",
            "--feature-bounds",
            0,
            16,
            "--epsilon",
            3,
            "--delta",
            1e-5,
            "--seed",
            0,
            "-o",
            out,
            *extra,
        )


def test_train_outputs_calibrate_predict_pipeline(files, tmp_path, capsys):
    model = tmp_path / "m.pkl"
    code, out, err = _train(capsys, files, model, "--labels", files / "tr_y.csv", "--n-classes", 10)
    assert code == 0, err
    assert "epsilon = 3" in out and "delta = 1e-05" in out and "declared (--n-classes)" in out
    record = pickle.loads(model.read_bytes())
    assert record["format"] == "dpuq-model" and record["task"] == "classification"
    assert record["privacy"]["epsilon"] <= 3.0 and record["privacy"]["delta"] == 1e-5
    est = record["estimator"]
    # the file holds released values and declared settings only: no array of the people
    n_train = 800
    for name, value in vars(est).items():
        assert not (isinstance(value, np.ndarray) and value.shape[:1] == (n_train,)), name
    logits = tmp_path / "cal_logits.npy"
    assert _outputs(capsys, model, files / "cal_x.npy", logits) == 0
    z = np.load(logits)
    y_cal = np.load(files / "cal_y.npy")
    assert z.shape == (500, 10)
    assert np.mean(z.argmax(1) == y_cal) > 0.8  # a model that learnt (0.1 by chance)
    cal = tmp_path / "cal.json"
    code, _, err = run_cli(
        capsys,
        "calibrate",
        "--logits",
        logits,
        "--labels",
        files / "cal_y.npy",
        "--alpha",
        0.1,
        "--epsilon",
        1,
        "-o",
        cal,
    )
    assert code == 0, err
    test_logits = tmp_path / "te_logits.npy"
    assert _outputs(capsys, model, files / "te_x.npy", test_logits) == 0
    sets = tmp_path / "sets.csv"
    code, out, err = run_cli(
        capsys, "predict", "--calibration", cal, "--logits", test_logits, "-o", sets
    )
    assert code == 0, err
    rows = np.loadtxt(sets, delimiter=",", skiprows=1, dtype=int)
    y_te = np.load(files / "te_y.npy")
    covered = rows[np.arange(len(y_te)), y_te] if rows.shape[1] == 10 else None
    assert covered is not None and covered.mean() > 0.8  # nominal 0.9 on 497 people


def test_probabilities_match_the_estimator_and_seeds_reproduce(files, tmp_path, capsys):
    a, b = tmp_path / "a.pkl", tmp_path / "b.pkl"
    for path in (a, b):
        assert _train(capsys, files, path, "--labels", files / "tr_y.csv")[0] == 0
    for path in (a, b):
        assert _outputs(capsys, path, files / "te_x.npy", path.with_suffix(".csv"), "--probs") == 0
    pa = np.loadtxt(a.with_suffix(".csv"), delimiter=",", skiprows=1)
    pb = np.loadtxt(b.with_suffix(".csv"), delimiter=",", skiprows=1)
    np.testing.assert_array_equal(pa, pb)  # the same seed, the same release
    est = pickle.loads(a.read_bytes())["estimator"]
    np.testing.assert_allclose(pa, est.predict_proba(np.load(files / "te_x.npy")), rtol=1e-12)
    np.testing.assert_allclose(pa.sum(1), 1.0)


def test_images_and_a_regressor(files, tmp_path, capsys):
    img = tmp_path / "img.pkl"
    code, out, err = _train(
        capsys, files, img, "--labels", files / "tr_y.csv", "--image-shape", 8, 8
    )
    assert code == 0, err
    assert "(features, dpsgd)" in out  # the image rule: fixed features + a linear head
    code, _, err = run_cli(
        capsys,
        "outputs",
        "--model",
        img,
        "--features",
        files / "te_x.npy",
        "-o",
        tmp_path / "x.npy",
    )
    assert code == 2 and "--image-shape" in err and len(err.strip().splitlines()) == 1
    reg = tmp_path / "r.pkl"
    code, out, err = _train(
        capsys, files, reg, "--targets", files / "tr_y.csv", "--target-bounds", 0, 9
    )
    assert code == 0, err
    assert "DPRegressor" in out
    pred = tmp_path / "pred.csv"
    assert _outputs(capsys, reg, files / "te_x.npy", pred) == 0
    values = np.loadtxt(pred, delimiter=",", skiprows=1)
    assert values.shape == (497,) and values.min() >= 0.0 and values.max() <= 9.0  # clipped
    y_te = np.load(files / "te_y.npy")
    # R² (0.22 here; ~0.5 for least squares without privacy, <= 0 for a model that learnt nothing)
    assert 1.0 - np.mean((values - y_te) ** 2) / np.var(y_te) > 0.1


def test_classes_read_from_the_labels_are_said_so(files, tmp_path, capsys):
    model = tmp_path / "m.pkl"
    assert _train(capsys, files, model, "--labels", files / "tr_y.csv")[0] == 0
    notes = pickle.loads(model.read_bytes())["estimator"].privacy_report_.notes
    assert any("largest label in --labels" in note for note in notes)
    assert not any(note.startswith("classes_ declared") for note in notes)


BAD = [
    (["--labels", "Y", "--targets", "Y"], "exactly one of --labels"),
    (["--labels", "Y", "--target-bounds", "0", "1"], "--target-bounds applies"),
    (["--labels", "Y", "--n-classes", "5"], "class indices in 0..4"),
    (["--labels", "Y", "--model", "cnn"], "needs images"),
    (["--labels", "Y", "--image-shape", "7", "7"], "needs 49 columns"),
    (["--labels", "Y", "--epochs", "0"], "--epochs"),
    (["--labels", "Y", "--delta", "2"], "delta"),
    (["--labels", "Y", "--epsilon", "-1"], "epsilon"),
    (["--labels", "Y", "--feature-bounds", "3", "1"], "--feature-bounds must satisfy"),
    (["--labels", "Y", "--epsilon", "50"], "exceeded"),
    (["--labels", "Y", "--n-classes", "100000000"], "--n-classes must be in 2..1000"),
    (["--labels", "Y", "--image-shape", "4", "4", "4", "--model", "cnn"], "cannot take inputs"),
    (["--labels", "HUGE"], "beyond 2^53"),  # was a cast warning, then a wrong message
]


@pytest.mark.parametrize("extra, match", BAD)
def test_refusals_are_one_line_and_cost_nothing(files, tmp_path, capsys, extra, match):
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("clinic", epsilon=10.0, delta=1e-4)
    huge = tmp_path / "huge.csv"
    np.savetxt(huge, np.r_[1e30, np.loadtxt(files / "tr_y.csv")[1:]])
    extra = [{"Y": str(files / "tr_y.csv"), "HUGE": str(huge)}.get(a, a) for a in extra]
    args = ["train", "--features", files / "tr_x.csv", "--epsilon", 1, "--delta", 1e-5,
            *_ledger(tmp_path), "-o", tmp_path / "m.pkl"]  # fmt: skip
    code, _, err = run_cli(capsys, *args, *extra)  # later flags win: --epsilon 50, --delta 2
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and match in err, err
    assert led.releases("clinic") == []
    assert not (tmp_path / "m.pkl").exists()


def test_the_command_line_trains_under_replace_one_only(files, tmp_path, capsys):
    """n is printed and stored (public under replace-one only): no --relation flag."""
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--features", str(files / "tr_x.csv"), "--labels",
              str(files / "tr_y.csv"), "--epsilon", "1", "--delta", "1e-5", "--relation",
              "add/remove-one", "-o", str(tmp_path / "m.pkl")])  # fmt: skip
    assert exit_.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


def test_a_training_charges_its_epsilon_and_delta_once(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    base = [
        "train",
        "--features",
        files / "tr_x.csv",
        "--labels",
        files / "tr_y.csv",
        "--feature-bounds",
        0,
        16,
        "--epsilon",
        1,
        "--delta",
        1e-5,
    ]
    code, _, err = run_cli(capsys, *base, "-o", tmp_path / "m.pkl")
    assert code == 2 and "ledger" in err and not (tmp_path / "m.pkl").exists()
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("clinic", epsilon=5.0, delta=1e-4)
    code, _, err = run_cli(capsys, *base, *_ledger(tmp_path), "-o", tmp_path / "m.pkl")
    assert code == 0, err
    (row,) = led.releases("clinic")
    assert row.epsilon == pytest.approx(1.0, abs=1e-3) and row.delta == 1e-5
    assert row.settings["n"] == 800 and row.settings["task"] == "classification"
    record = pickle.loads((tmp_path / "m.pkl").read_bytes())
    assert record["trail"]["ledger"]["entry"] == row.id
    assert json.dumps(record["privacy"])  # the report is plain data


def test_outputs_refuses_files_that_are_not_dpuq_models(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
    (tmp_path / "other.pkl").write_bytes(pickle.dumps({"format": "something else"}))
    head = {"format": "dpuq-model", "format_version": 1}  # forged or incomplete records
    (tmp_path / "bare.pkl").write_bytes(pickle.dumps(head))
    (tmp_path / "forty.pkl").write_bytes(pickle.dumps({**head, "estimator": 42,
                                                       "task": "classification"}))  # fmt: skip
    for model, match in (
        (tmp_path / "bare.pkl", "no fitted dpuq estimator"),
        (tmp_path / "forty.pkl", "no fitted dpuq estimator"),
        (tmp_path / "none.pkl", "no such file"),
        (tmp_path / "junk.pkl", "cannot read a dpuq model"),
        (tmp_path / "other.pkl", "not a model file written by dpuq train"),
        (tmp_path / "x.npy", "ends in .pkl"),
    ):
        code, _, err = run_cli(
            capsys,
            "outputs",
            "--model",
            model,
            "--features",
            tmp_path / "x.npy",
            "-o",
            tmp_path / "o.npy",
        )
        assert code == 2 and match in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.npy").exists()
