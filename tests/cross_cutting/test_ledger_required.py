"""Nothing bypasses the ledger: every release takes ``ledger=``/``dataset=`` and charges through
``dpuq.privacy.ledger.charge``; ``DPUQ_REQUIRE_LEDGER=1`` refuses a release without one before any
noise; a settings error costs nothing; composite releases charge once; a second release from the
same fitted estimator warns."""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from noise_paths import CallGraph, public_callables

import dpuq
from cli_helpers import run_cli
from dpuq import inference
from dpuq._estimator import RepeatedReleaseWarning
from dpuq.conformal.calibration import UninformativeReleaseWarning
from dpuq.mechanisms.joint_quantiles import joint_quantiles
from dpuq.mechanisms.quantile import private_quantile_from_counts
from dpuq.mechanisms.risk import risk_selection
from dpuq.mechanisms.selection import private_selection
from dpuq.privacy.ledger import Ledger, LedgerRequiredError
from dpuq.training.temperature import private_temperature_scaling

RNG = np.random.default_rng(7)
X01 = RNG.uniform(size=200)
PROBS = RNG.dirichlet(np.ones(3), size=300)
LABELS = RNG.integers(0, 3, size=300)
XR = RNG.uniform(-1, 1, size=(300, 2))
YR = XR[:, 0] + 0.1 * RNG.normal(size=300)


def _first_column(X):
    return X[:, 0]


def _identity(X):
    return X


def _s(k, **defaults):
    """A call's keyword arguments: its ``defaults``, overridden by the test's ``k`` (a ledger,
    or an invalid setting)."""
    return {**defaults, **k}


def _settings(k):
    return {key: v for key, v in k.items() if key not in ("ledger", "dataset")}


def _charged_to(k):
    return {key: v for key, v in k.items() if key in ("ledger", "dataset")}


# every public release: name -> call(rng, **ledger kwargs or setting overrides)
RELEASES = {
    "calibrate": lambda r, **k: dpuq.calibrate(
        X01, **_s(k, alpha=0.1, epsilon=1.0, random_state=r)
    ),
    "calibrate_by_class": lambda r, **k: dpuq.calibrate_by_class(
        PROBS[:, 0], LABELS, 3, **_s(k, alpha=0.1, epsilon=1.0, random_state=r)
    ),
    "private_quantile": lambda r, **k: dpuq.private_quantile(
        X01, **_s(k, level=0.9, epsilon=1.0, n_bins=20, random_state=r)
    ),
    "private_quantiles": lambda r, **k: dpuq.private_quantiles(
        X01[None], **_s(k, level=0.9, epsilon=1.0, n_bins=20, random_state=r)
    ),
    "private_quantile_from_counts": lambda r, **k: private_quantile_from_counts(
        np.array([5, 90, 5]), **_s(k, level=0.5, epsilon=1.0, random_state=r)
    ),
    "exponential_mechanism": lambda r, **k: dpuq.exponential_mechanism(
        [0.0, 1.0], **_s(k, epsilon=1.0, sensitivity=1.0, random_state=r)
    ),
    "permute_and_flip": lambda r, **k: dpuq.permute_and_flip(
        [0.0, 1.0], **_s(k, epsilon=1.0, sensitivity=1.0, random_state=r)
    ),
    "online_conformal_thresholds": lambda r, **k: dpuq.online_conformal_thresholds(
        X01, **_s(k, alpha=0.1, epsilon=1.0, random_state=r)
    ),
    "laplace_mechanism": lambda r, **k: dpuq.laplace_mechanism(
        0.5, **_s(k, sensitivity=1.0, epsilon=1.0, random_state=r)
    ),
    "private_mean": lambda r, **k: inference.private_mean(
        X01, **_s(k, epsilon=1.0, bounds=(0, 1), random_state=r)
    ),
    "private_median": lambda r, **k: inference.private_median(
        X01, **_s(k, epsilon=1.0, bounds=(0, 1), random_state=r)
    ),
    "private_trimmed_mean": lambda r, **k: inference.private_trimmed_mean(
        X01, **_s(k, epsilon=1.0, bounds=(0, 1), random_state=r)
    ),
    "private_variance": lambda r, **k: inference.private_variance(
        X01, **_s(k, epsilon=1.0, bounds=(0, 1), random_state=r)
    ),
    "normal_approximation_interval": lambda r, **k: dpuq.normal_approximation_interval(
        X01, **_s(k, alpha=0.1, epsilon=1.0, bounds=(0, 1), random_state=r)
    ),
    "private_bootstrap_cdf": lambda r, **k: dpuq.private_bootstrap_cdf(
        X01, 0.5, **_s(k, epsilon=1.0, bounds=(0, 1), random_state=r)
    ),
    "private_confidence_interval": lambda r, **k: dpuq.private_confidence_interval(
        np.random.default_rng(5).uniform(size=4000),
        **_s(k, alpha=0.1, epsilon=1.0, bounds=(0, 1), random_state=r),
    ),
    "private_confidence_interval(statistic=f)": lambda r, **k: dpuq.private_confidence_interval(
        np.random.default_rng(5).uniform(size=(4000, 1)),
        statistic=lambda rows, w: float(np.average(rows[:, 0], weights=w)),
        statistic_bounds=(0, 1),
        **_s(k, alpha=0.1, epsilon=1.0, random_state=r),
    ),
    "calibrate(alpha=[...])": lambda r, **k: dpuq.calibrate(
        PROBS[:, 0], **_s(k, alpha=[0.1, 0.2], epsilon=1.0, random_state=r)
    ),
    "risk_control": lambda r, **k: dpuq.risk_control(
        np.tile([1.0, 0.5, 0.1, 0.0], (300, 1)), **_s(k, alpha=0.2, epsilon=1.0, random_state=r)
    ),
    "private_temperature_scaling": lambda r, **k: private_temperature_scaling(
        np.log(PROBS), LABELS, **_s(k, epsilon=1.0, random_state=r)
    ),
    "public_bound": lambda r, **k: dpuq.public_bound(
        _first_column,
        XR,
        YR,
        **_s(k, cv=None, held_out=True, epsilon=1.0, upper=2.0, random_state=r),
    ),
    # estimators take a seed, never a Generator: r is not theirs
    "PrivateConformalClassifier": lambda r, **k: dpuq.PrivateConformalClassifier(
        _identity, **_s(_settings(k), epsilon=1.0, random_state=0)
    ).conformalize(PROBS, LABELS, **_charged_to(k)),
    "PrivateConformalRegressor": lambda r, **k: dpuq.PrivateConformalRegressor(
        _first_column, **_s(_settings(k), epsilon=1.0, bound=2.0, random_state=0)
    ).conformalize(XR, YR, **_charged_to(k)),
    "private_selection": lambda r, **k: private_selection(
        ["a", "b"],
        lambda c, b, rng: (
            dpuq.laplace_mechanism(1.0, sensitivity=1.0, epsilon=b, random_state=rng),
            c,
        ),
        **_s(k, epsilon=1.0, distribution="geometric", expected_runs=2, random_state=r),
    ),  # the runs charge nothing: the selection charged its total
    "DPClassifier.fit": lambda r, **k: dpuq.DPClassifier(
        **_s(
            _settings(k),
            epsilon=1.0,
            delta=1e-5,
            accountant="gdp",
            epochs=1,
            show_progress=False,
            random_state=0,
        )
    ).fit(XR, (XR[:, 0] > 0).astype(int), **_charged_to(k)),
    "joint_quantiles": lambda r, **k: joint_quantiles(
        np.bincount((X01 * 10).astype(int), minlength=10),
        **_s(k, ranks=[150.0, 180.0], epsilon=1.0, random_state=r),
    ),
    "risk_selection": lambda r, **k: risk_selection(
        np.tile([1.0, 0.5, 0.1, 0.0], (300, 1)), **_s(k, target=60.0, epsilon=1.0, random_state=r)
    ),
    "PrivateERMClassifier.fit": lambda r, **k: dpuq.learning.PrivateERMClassifier(
        dpuq.Thresholds(np.linspace(0, 1, 11)), **_s(_settings(k), epsilon=1.0, random_state=0)
    ).fit(X01, (X01 > 0.5).astype(int), **_charged_to(k)),
}

#: invalid values of the settings every release takes (its level: alpha or confidence_level)
INVALID = {
    "random_state": ["42", -1, 1.5, True],
    "epsilon": [-1.0, 0.0, float("nan"), "1"],
    "alpha": [0.0, -0.1, 1.5, float("nan"), "0.1"],
    "confidence_level": [0.0, 1.5, float("nan"), "0.9"],
}
_LEVEL = {
    **dict.fromkeys(
        ["calibrate", "calibrate_by_class", "normal_approximation_interval",
         "private_confidence_interval", "private_confidence_interval(statistic=f)",
         "calibrate(alpha=[...])", "risk_control"],
        "alpha",
    ),
    "PrivateConformalClassifier": "confidence_level",
    "PrivateConformalRegressor": "confidence_level",
}  # fmt: skip


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.create_budget("d", epsilon=100.0, delta=1e-3)  # δ for the DP-SGD fit
    return led


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_every_invalid_setting_is_refused_before_the_charge(name, ledger):
    """Issue 34, item 2: each release, each invalid setting: refused, the ledger untouched."""
    settings = ("random_state", "epsilon", *([_LEVEL[name]] if name in _LEVEL else []))
    for setting in settings:
        for value in INVALID[setting]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises((ValueError, TypeError)):
                    RELEASES[name](0, ledger=ledger, dataset="d", **{setting: value})
            assert ledger.releases("d") == [], f"{name}: {setting}={value!r} was charged"
    assert ledger.status("d").spent_epsilon == 0.0


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_required_ledger_refuses_before_any_noise(name, monkeypatch):
    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(LedgerRequiredError, match="ledger"):
        RELEASES[name](rng)
    assert rng.bit_generator.state == state  # nothing was drawn


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_every_release_charges_once_with_its_settings(name, ledger, monkeypatch):
    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UninformativeReleaseWarning)
        RELEASES[name](0, ledger=ledger, dataset="d")
    (row,) = ledger.releases("d")  # composite releases charge their total once
    assert row.epsilon == 1.0
    assert isinstance(row.settings, dict) and row.settings


def test_the_require_switch_reads_only_true_values(monkeypatch):
    for off in ("", "0", "false", "no"):
        monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", off)
        RELEASES["laplace_mechanism"](0)


def test_settings_errors_cost_nothing(ledger):
    clf = dpuq.PrivateConformalClassifier(
        _identity, epsilon=1.0, method="paper", class_conditional=True, random_state=0
    )
    for _ in range(3):
        with pytest.raises(ValueError, match="certified"):
            clf.conformalize(PROBS, LABELS, ledger=ledger, dataset="d")
    with pytest.raises(ValueError, match="labels"):
        dpuq.calibrate_by_class(
            PROBS[:, 0], np.full(300, 5), 3, alpha=0.1, epsilon=1.0, ledger=ledger, dataset="d"
        )
    with pytest.raises(ValueError):
        inference.private_median(
            X01, epsilon=1.0, bounds=(0, 1), n_candidates=0, ledger=ledger, dataset="d"
        )
    assert ledger.releases("d") == []


def test_a_second_release_from_the_same_estimator_warns():
    clf = dpuq.PrivateConformalClassifier(_identity, epsilon=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedReleaseWarning)
        clf.conformalize(PROBS, LABELS)
    with pytest.warns(RepeatedReleaseWarning, match="spends epsilon = 1 again"):
        clf.conformalize(PROBS, LABELS)
    erm = dpuq.learning.PrivateERMClassifier(dpuq.Thresholds([0.5]), epsilon=1.0).fit(
        X01, (X01 > 0.5).astype(int)
    )
    with pytest.warns(RepeatedReleaseWarning):
        erm.fit(X01, (X01 > 0.5).astype(int))


def test_cli_requires_a_ledger_and_records_settings_and_note(tmp_path, capsys, monkeypatch):
    np.savetxt(tmp_path / "s.csv", X01)
    base = ["calibrate", "--scores", tmp_path / "s.csv", "--alpha", 0.1, "--epsilon", 1]
    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    code, _, err = run_cli(capsys, *base, "-o", tmp_path / "a.json")
    assert code == 2 and "ledger" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "a.json").exists()
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("icu", epsilon=5.0)
    code, _, err = run_cli(
        capsys, *base, "-o", tmp_path / "a.json", "--ledger", tmp_path / "l.sqlite",
        "--dataset", "icu", "--note", "quarterly report",
    )  # fmt: skip
    assert code == 0, err
    (row,) = led.releases("icu")
    assert row.note == "quarterly report"
    assert row.settings["alpha"] == 0.1 and row.settings["n"] == 200
    rec = json.loads((tmp_path / "a.json").read_text())
    trail = rec["trail"]
    assert trail["dataset"] == "icu" and trail["ledger"]["entry"] == row.id
    assert trail["ledger"]["remaining epsilon"] == pytest.approx(4.0)
    assert trail["dpuq_version"] == dpuq.__version__ and trail["released_at"]
    assert "hash" not in json.dumps(rec).lower()


def test_cli_temperature_takes_a_ledger(tmp_path, capsys):
    np.save(tmp_path / "z.npy", np.log(PROBS))
    np.savetxt(tmp_path / "y.csv", LABELS, fmt="%d")
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("held-out", epsilon=1.5)
    args = ["temperature", "--logits", tmp_path / "z.npy", "--labels", tmp_path / "y.csv",
            "--epsilon", 1, "--ledger", tmp_path / "l.sqlite", "--dataset", "held-out"]  # fmt: skip
    assert run_cli(capsys, *args, "-o", tmp_path / "t.json")[0] == 0
    code, _, err = run_cli(capsys, *args, "-o", tmp_path / "t2.json")
    assert code == 2 and "exceeded" in err
    assert len(led.releases("held-out")) == 1


def test_cli_class_conditional_refuses_paper_before_the_charge(tmp_path, capsys):
    np.save(tmp_path / "p.npy", PROBS)
    np.savetxt(tmp_path / "y.csv", LABELS, fmt="%d")
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=1.0)
    code, _, err = run_cli(
        capsys, "calibrate", "--probs", tmp_path / "p.npy", "--labels", tmp_path / "y.csv",
        "--alpha", 0.1, "--epsilon", 1, "--class-conditional", "--method", "paper",
        "-o", tmp_path / "c.json", "--ledger", tmp_path / "l.sqlite", "--dataset", "d",
    )  # fmt: skip
    assert code == 2 and "certified" in err
    assert led.releases("d") == []


# --------------------------------------------------------------------------- prediction time
def test_predict_refuses_a_score_input_mismatch(tmp_path, capsys):
    np.save(tmp_path / "z.npy", np.log(PROBS))
    np.save(tmp_path / "p.npy", PROBS)
    np.savetxt(tmp_path / "y.csv", LABELS, fmt="%d")
    common = ["--labels", tmp_path / "y.csv", "--alpha", 0.1, "--epsilon", 1]
    assert run_cli(capsys, "calibrate", "--logits", tmp_path / "z.npy", "--temperature", 2,
                   *common, "-o", tmp_path / "l.json")[0] == 0  # fmt: skip
    assert run_cli(capsys, "calibrate", "--probs", tmp_path / "p.npy", *common,
                   "-o", tmp_path / "p.json")[0] == 0  # fmt: skip
    rec = json.loads((tmp_path / "p.json").read_text())
    assert rec["input"] == "probabilities" and rec["classes"] == [0, 1, 2]
    assert rec["format_version"] == 2
    for cal, flag, data, needle in [
        ("l.json", "--probs", "p.npy", "calibrated on logits (softmax temperature 2)"),
        ("p.json", "--logits", "z.npy", "calibrated on probabilities"),
    ]:
        code, _, err = run_cli(capsys, "predict", "--calibration", tmp_path / cal, flag,
                               tmp_path / data, "-o", tmp_path / "s.npy")  # fmt: skip
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "s.npy").exists()
    # a version-1 file from probabilities has no "input": still read as probabilities
    old = {k: v for k, v in rec.items() if k not in ("input", "trail")}
    old["format_version"] = 1
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert run_cli(capsys, "predict", "--calibration", tmp_path / "old.json", "--probs",
                   tmp_path / "p.npy", "-o", tmp_path / "s.npy")[0] == 0  # fmt: skip
    # the Python loader refuses a logits release for an estimator scoring probabilities
    with pytest.raises(ValueError, match="calibrated on logits"):
        dpuq.PrivateConformalClassifier.load_release(tmp_path / "l.json", _identity)


def test_predict_refuses_a_score_input_mismatch_for_several_levels(tmp_path, capsys):
    np.save(tmp_path / "z.npy", np.log(PROBS))
    np.save(tmp_path / "p.npy", PROBS)
    np.savetxt(tmp_path / "y.csv", LABELS, fmt="%d")
    assert run_cli(capsys, "calibrate", "--logits", tmp_path / "z.npy", "--temperature", 2,
                   "--labels", tmp_path / "y.csv", "--alpha", "0.1,0.2", "--epsilon", 1,
                   "-o", tmp_path / "l.json")[0] == 0  # fmt: skip
    code, _, err = run_cli(capsys, "predict", "--calibration", tmp_path / "l.json", "--probs",
                           tmp_path / "p.npy", "-o", tmp_path / "s.csv")  # fmt: skip
    assert code == 2 and "calibrated on logits (softmax temperature 2)" in err
    assert not (tmp_path / "s.csv").exists()


def test_regressor_warns_at_a_released_threshold_of_one_and_takes_a_public_bound():
    bound = dpuq.public_bound(_first_column, XR, YR, cv=None, held_out=True)
    reg = dpuq.PrivateConformalRegressor(_first_column, epsilon=1.0, bound=bound, random_state=0)
    reg.conformalize(XR, YR)
    assert reg.bound_ == bound.bound
    tiny = dpuq.PrivateConformalRegressor(_first_column, epsilon=1.0, bound=1e-6, random_state=0)
    with pytest.warns(UninformativeReleaseWarning, match="threshold is 1"):
        tiny.conformalize(XR, YR)
    assert tiny.threshold_ == 1.0
    assert np.all(np.isinf(tiny.predict_interval(XR[:3]).sets))


def test_experiments_run_under_a_required_ledger(monkeypatch):
    from dpuq.privacy.ledger import _simulation, ledger_required

    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    assert ledger_required()
    with _simulation():  # dpuq reproduce / dpuq demo: measured, never published
        assert not ledger_required()
        RELEASES["laplace_mechanism"](0)
    assert ledger_required()


_U = np.random.default_rng(9).uniform(size=4000)


@pytest.mark.parametrize(
    ("release", "match"),
    [
        (lambda k: dpuq.PrivateConformalClassifier(_identity, epsilon=1.0, n_bins=1)
            .conformalize(PROBS, LABELS, **k), "n_bins"),
        (lambda k: dpuq.PrivateConformalClassifier(
            _identity, epsilon=1.0, n_bins=1, class_conditional=True)
            .conformalize(PROBS, LABELS, **k), "n_bins"),
        (lambda k: dpuq.private_confidence_interval(
            _U, alpha=0.1, epsilon=1.0, bounds=(0, 1), method="ensemble_cdf", n_grid=0, **k),
            "n_grid"),
        (lambda k: dpuq.private_confidence_interval(
            _U, alpha=0.1, epsilon=1.0, bounds=(0, 1), n_subsets=3000, **k), "n_subsets"),
        (lambda k: dpuq.private_studentized_cdf(
            _U, 0.5, epsilon=1.0, bounds=(0, 1), half_width="wide", **k), "half_width"),
        (lambda k: dpuq.private_studentized_cdf(
            _U, 0.5, epsilon=1.0, bounds=(0, 1), median_share=1.5, **k), "median_share"),
    ],
)  # fmt: skip
def test_settings_checked_late_before_this_wave_now_cost_nothing(release, match, ledger):
    with pytest.raises((ValueError, TypeError), match=match):
        release({"ledger": ledger, "dataset": "d"})
    assert ledger.releases("d") == []


def test_class_thresholds_is_a_release_that_charges(ledger, monkeypatch):
    from dpuq.conformal.class_levels import class_rank_schedule
    from dpuq.mechanisms.class_thresholds import class_thresholds

    schedule, pad = class_rank_schedule(300, alpha=0.1, epsilon=1.0, n_bins=10)
    kw = {"epsilon": 1.0, "n_bins": 10, "schedule": schedule, "pad": pad, "random_state": 0}
    monkeypatch.setenv("DPUQ_REQUIRE_LEDGER", "1")
    with pytest.raises(LedgerRequiredError):
        class_thresholds(PROBS[:, 0], LABELS, 3, **kw)
    class_thresholds(PROBS[:, 0], LABELS, 3, ledger=ledger, dataset="d", **kw)
    (row,) = ledger.releases("d")
    assert row.epsilon == 1.0


# --------------------------------------------------------------------------- the public surface
#: The exact samplers: each draws from a law its caller states (log-weights, a noise scale, a
#: probability, public repetition parameters) and takes no epsilon; they are not releases
#: (docs/how-to/ledger.md), and every release built on them charges first.
SAMPLERS = {
    "dpuq.mechanisms.discrete_laplace.laplace_noise",
    "dpuq.mechanisms.discrete_laplace.laplace_release",
    "dpuq.mechanisms.discrete_laplace.sample_discrete_laplace",
    "dpuq.mechanisms.exact.bernoulli_certified",
    "dpuq.mechanisms.exact.bernoulli_constant",
    "dpuq.mechanisms.exact.uniform_below",
    "dpuq.mechanisms.exact.uniform_bits",
    "dpuq.mechanisms.log_weights.bernoulli_exp_neg",
    "dpuq.mechanisms.log_weights.sample_log_weights",
    "dpuq.mechanisms.log_weights.sample_log_weights_rows",
    "dpuq.mechanisms.permute_and_flip.sample_permute_and_flip",
    "dpuq.mechanisms.repetitions.bernoulli_rational",
    "dpuq.mechanisms.repetitions.sample_repetitions",
    "dpuq.mechanisms.repetitions.uniform_index",
    "dpuq.mechanisms.repetitions.uniform_permutation",
    "dpuq.mechanisms.windowed.bernoulli_exp_neg",
    "dpuq.mechanisms.windowed.sample_segments",
    "dpuq.mechanisms.windowed.windowed_exponential_mechanism",
}
#: Applications that repeat releases over splits to measure them, inside ``ledger._simulation``,
#: and publish none (``dpuq reproduce``, ``dpuq demo``; docs/how-to/ledger.md).
SIMULATIONS = ("dpuq.experiments.", "dpuq.commands.demo.", "dpuq.commands.reproduce.")
SRC = Path(dpuq.__file__).parent


@functools.cache
def _graph(package: str, root: Path) -> CallGraph:
    return CallGraph(package, root)


def _uncharged_public(package: str, root: Path, exempt=frozenset(), simulations=()) -> list[str]:
    graph = _graph(package, root)
    uncharged = graph.drawing_uncharged()
    return sorted(
        path
        for qual, path in public_callables(graph).items()
        if qual in uncharged and qual not in exempt and not qual.startswith(simulations)
    )


def test_no_public_function_draws_noise_without_going_through_charge():
    """Issue 34, item 3: every name reachable without an underscore from dpuq and its public
    subpackages either charges (dpuq.privacy.ledger.charge) before its noise or draws none."""
    assert _uncharged_public("dpuq", SRC, SAMPLERS, SIMULATIONS) == []


def test_the_exempt_samplers_draw_and_take_no_epsilon():
    drawing = _graph("dpuq", SRC).drawing()
    for qual in sorted(SAMPLERS):
        module, name = qual.rsplit(".", 1)
        params = inspect.signature(getattr(importlib.import_module(module), name)).parameters
        assert not {"epsilon", "sensitivity", "ledger"} & set(params), qual
        assert qual in drawing, f"{qual} draws nothing: the list is stale"


def test_the_walk_finds_a_bypass(tmp_path, monkeypatch):
    """Negative control: a synthetic package with one honest release, one that draws with no
    charge, one that forges someone else's charge, and one behind an import alias."""
    pkg = tmp_path / "fakepkg"
    (pkg / "mechanisms").mkdir(parents=True)
    (pkg / "privacy").mkdir()
    files = {
        "__init__.py": "from fakepkg.api import honest, leaky\n",
        "privacy/__init__.py": "",
        "privacy/ledger.py": (
            "CALLER_CHARGED = object()\ndef charge(ledger, dataset, cost):\n    pass\n"
        ),
        "mechanisms/__init__.py": "",
        "mechanisms/sampler.py": "def draw(rng):\n    return rng.integers(3)\n",
        "api.py": """
            from fakepkg.privacy.ledger import CALLER_CHARGED, charge
            from fakepkg.mechanisms import sampler as s

            def honest(x, rng, ledger=None):
                charge(ledger, None, 1.0)
                return x + s.draw(rng)

            def leaky(x, rng):
                return x + _helper(rng)

            def _helper(rng):
                return s.draw(rng)

            def forged(x, rng):
                return honest(x, rng, ledger=CALLER_CHARGED)

            def forwards(x, rng, ledger=None):
                return honest(x, rng, ledger=ledger)

            class Estimator:
                def fit(self, x, rng):
                    return _helper(rng)

            import functools

            alias = _helper  # review 34: public names bound by assignment were not walked
            partial = functools.partial(_helper)
            lam = lambda rng: _helper(rng)  # noqa: E731
            TABLE = {"draw": _helper}
            """,
    }
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    found = _uncharged_public("fakepkg", pkg)
    assert found == [
        "fakepkg.api.Estimator.fit",
        "fakepkg.api.TABLE",
        "fakepkg.api.alias",
        "fakepkg.api.forged",
        "fakepkg.api.lam",
        "fakepkg.api.partial",
        "fakepkg.leaky",  # fakepkg.api.leaky, found first at the package's root
        "fakepkg.mechanisms.sampler.draw",
    ]


# --------------------------------------------------------------------------- decided in public
_S250 = np.random.default_rng(3).uniform(size=250)  # alpha = 0.02, epsilon = 1: full sets


def test_a_release_decided_by_public_quantities_charges_nothing(ledger):
    """Issue 34, item 5: alpha = 0.02, epsilon = 1, n = 250 gives full sets whatever the data:
    it charges 0 and says why; strict=True refuses it before any charge."""
    with pytest.warns(UninformativeReleaseWarning):
        cal = dpuq.calibrate(_S250, alpha=0.02, epsilon=1.0, ledger=ledger, dataset="d")
    assert not cal.informative and cal.privacy_report.epsilon == 0.0
    assert any("public quantities" in note for note in cal.privacy_report.notes)
    with pytest.warns(UninformativeReleaseWarning):
        cal = dpuq.calibrate(_S250, alpha=[0.02, 0.03], epsilon=1.0, ledger=ledger, dataset="d")
    assert cal.privacy_report.epsilon == 0.0
    assert [r.epsilon for r in ledger.releases("d")] == [0.0, 0.0]
    for alpha in (0.02, [0.02, 0.2]):
        with pytest.raises(dpuq.UninformativeReleaseError, match="strict"):
            dpuq.calibrate(_S250, alpha=alpha, epsilon=1.0, strict=True, ledger=ledger, dataset="d")
    assert len(ledger.releases("d")) == 2 and ledger.status("d").spent_epsilon == 0.0
    clf = dpuq.PrivateConformalClassifier(_identity, epsilon=1.0, confidence_level=0.98)
    with pytest.warns(UninformativeReleaseWarning):
        clf.conformalize(PROBS[:250], LABELS[:250], ledger=ledger, dataset="d")
    assert clf.privacy_report_.epsilon == 0.0 and ledger.releases("d")[-1].epsilon == 0.0
    assert clf.release_trail_["ledger"]["charged epsilon"] == 0.0


def test_cli_release_files_and_the_ledger_agree_on_epsilon(tmp_path, capsys):
    """Issue 34, item 5 on the command line: an uninformative calibration or quantile interval
    charges 0 (the file says 0); --strict refuses in one line, before the charge."""
    np.savetxt(tmp_path / "s.csv", _S250)
    np.savetxt(tmp_path / "q.csv", X01[:30], header="x", comments="")
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=5.0)
    kw = ["--ledger", tmp_path / "l.sqlite", "--dataset", "d"]
    cal = ["calibrate", "--scores", tmp_path / "s.csv", "--alpha", 0.02, "--epsilon", 1, *kw]
    code, out, err = run_cli(capsys, *cal, "-o", tmp_path / "c.json")
    assert code == 0, err
    assert "charged nothing" in out
    rec = json.loads((tmp_path / "c.json").read_text())
    assert rec["privacy_report"]["epsilon"] == rec["trail"]["ledger"]["charged epsilon"] == 0.0
    code, _, err = run_cli(capsys, *cal, "--strict", "-o", tmp_path / "c2.json")
    assert code == 2 and "strict" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c2.json").exists()
    for n, stat, informative in (
        (30, ["quantile", "--quantile", 0.5], False),
        (200, ["mean"], True),
    ):
        np.savetxt(tmp_path / "q.csv", X01[:n], header="x", comments="")
        before = led.status("d").spent_epsilon
        code, _, err = run_cli(
            capsys, "interval", "--data", tmp_path / "q.csv", "--column", "x", "--statistic",
            *stat, "--bounds", 0, 1, "--alpha", 0.1, "--epsilon", 1, *kw,
            "-o", tmp_path / f"i{n}.json",
        )  # fmt: skip
        assert code == 0, err
        rec = json.loads((tmp_path / f"i{n}.json").read_text())
        assert rec["informative"] is informative
        assert rec["privacy"]["epsilon"] == pytest.approx(led.status("d").spent_epsilon - before)
    assert [r.epsilon for r in led.releases("d")] == [0.0, 1.0]


def test_cli_never_infers_the_score_from_a_file_shape(tmp_path, capsys):
    """Issue 34, item 4: one column with decimal commas ("103,3") reads as two columns; it no
    longer switches to CQR on its own: refused in one line before the charge. calibrate says
    which score it used."""
    rng = np.random.default_rng(4)
    y = rng.uniform(25, 346, size=300)
    pred = y + rng.normal(0, 20, size=300)
    (tmp_path / "pred.csv").write_text("".join(f"{v:.1f}\n".replace(".", ",") for v in pred))
    np.savetxt(tmp_path / "y.csv", y)
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=5.0)
    common = ["calibrate", "--targets", tmp_path / "y.csv", "--bound", 400, "--alpha", 0.1,
              "--epsilon", 1, "--ledger", tmp_path / "l.sqlite", "--dataset", "d"]  # fmt: skip
    code, _, err = run_cli(capsys, *common, "--predictions", tmp_path / "pred.csv",
                           "-o", tmp_path / "c.json")  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--score cqr" in err and not (tmp_path / "c.json").exists()
    assert led.releases("d") == []
    np.savetxt(tmp_path / "p1.csv", pred)
    np.savetxt(tmp_path / "p2.csv", np.c_[pred - 30, pred + 30], delimiter=",")
    for file, extra, score in (("p1.csv", [], "absolute"), ("p2.csv", ["--score", "cqr"], "cqr")):
        code, out, err = run_cli(capsys, *common, "--predictions", tmp_path / file, *extra,
                                 "-o", tmp_path / f"{score}.json")  # fmt: skip
        assert code == 0, err
        assert f"score: {score}" in out


def test_cli_release_files_name_the_ledger_only_and_errors_have_one_style(tmp_path, capsys):
    """Issue 34, item 7: a release file stores the ledger's file name (never its absolute
    path); errors read ``dpuq <command>: error: --flag ...``, naming the flag as typed."""
    np.save(tmp_path / "p.npy", PROBS)
    np.savetxt(tmp_path / "y.csv", LABELS, fmt="%d")
    np.savetxt(tmp_path / "bad.csv", np.r_[5, LABELS[1:]], fmt="%d")
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=5.0)
    kw = ["--alpha", 0.1, "--epsilon", 1, "--ledger", tmp_path / "l.sqlite", "--dataset", "d"]
    code, _, err = run_cli(capsys, "calibrate", "--probs", tmp_path / "p.npy", "--labels",
                           tmp_path / "y.csv", *kw, "-o", tmp_path / "c.json")  # fmt: skip
    assert code == 0, err
    text = (tmp_path / "c.json").read_text()
    assert str(tmp_path) not in text
    assert json.loads(text)["trail"]["ledger"]["file"] == "l.sqlite"
    for argv in (
        ["calibrate", "--probs", tmp_path / "p.npy", "--labels", tmp_path / "bad.csv", *kw],
        ["calibrate", "--probs", tmp_path / "p.npy", "--labels", tmp_path / "bad.csv", *kw,
         "--class-conditional"],
        ["temperature", "--logits", tmp_path / "p.npy", "--labels", tmp_path / "bad.csv",
         "--epsilon", 1],
        ["calibrate", "--probs", tmp_path / "p.npy", "--labels", tmp_path / "y.csv",
         "--alpha", 0.7, "--epsilon", 1],
    ):  # fmt: skip
        code, _, err = run_cli(capsys, *argv, "-o", tmp_path / "x.json")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"dpuq {argv[0]}: error: --"), err
    assert len(led.releases("d")) == 1


# --------------------------------------------------------------------------- privacy statements
STATEMENT = ("privacy unit", "neighbouring relation", "measure", "accountant", "outputs covered",
             "outputs not covered", "tuning accounted", "sampling assumption")  # fmt: skip


def _report_of(outcome):
    for name in ("privacy_report", "privacy_report_"):
        if hasattr(outcome, name):
            return getattr(outcome, name)
    return outcome if isinstance(outcome, dpuq.PrivacyReport) else None


def test_every_privacy_report_states_what_a_data_steward_signs():
    """Issue 34, item 8: privacy unit, relation, measure, accountant, outputs covered and not
    (timing, user code's side effects), tuning accounted, sampling assumption."""
    reports = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, release in RELEASES.items():
            report = _report_of(release(0))
            if report is not None:
                reports[name] = report
    assert len(reports) >= 15, sorted(reports)
    for name, report in reports.items():
        statement = report.statement
        assert tuple(statement) == STATEMENT, name
        assert all(isinstance(v, str) and v for v in statement.values()), name
        assert (
            "timing" in statement["outputs not covered"]
            or "wall-clock" in (statement["outputs not covered"])
        )
        assert "user code" in statement["outputs not covered"]
        assert report.to_dict()["statement"] == statement
        assert "privacy unit: one person's record" in str(report)
    assert "accounted" in reports["private_selection"].statement["tuning accounted"]
    assert "pure epsilon-DP" in reports["calibrate"].statement["measure"]


def test_budget_show_states_the_filter_and_the_statement(tmp_path, capsys):
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("d", epsilon=2.0)
    code, out, err = run_cli(capsys, "budget", "show", "--ledger", tmp_path / "l.sqlite",
                             "--dataset", "d")  # fmt: skip
    assert code == 0, err
    for key in STATEMENT:
        assert f"{key}: " in out, key
    assert "Rogers, Roth, Ullman, Vadhan 2016" in out and "privacy filter" in out
    code, out, _ = run_cli(capsys, "budget", "show", "--ledger", tmp_path / "l.sqlite",
                           "--dataset", "d", "--json")  # fmt: skip
    assert tuple(json.loads(out)["statement"]) == STATEMENT
