"""The (K, m) table of class-conditional counts is capped by the library's work cap
(``MAX_WORK``), by name, before the ledger is charged and before anything is allocated: in
:func:`dpuq.calibrate_by_class`, its Dask path, the estimators' ``class_conditional`` and
``n_groups`` releases and the command line (probe defect D2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpuq
import dpuq._validation
from dpuq._validation import MAX_WORK
from dpuq.conformal.class_levels import MIN_AUTO_BINS, auto_class_bins
from dpuq.mechanisms.class_thresholds import class_thresholds

pytestmark = pytest.mark.filterwarnings("ignore::dpuq.UninformativeReleaseWarning")

RNG = np.random.default_rng(0)
SCORES = RNG.uniform(size=1000)
LABELS = RNG.integers(0, 1000, size=1000)


@pytest.fixture
def ledger(tmp_path):
    led = dpuq.Ledger(tmp_path / "l.db")
    led.create_budget("d", epsilon=50, delta=0.5)
    return led


@pytest.mark.parametrize(
    ("n_classes", "n_bins", "n"),
    [(1000, 10**6, 1000), (50, 10**7, 1000), (10**8, "auto", 100)],
    ids=["1000 classes x 10^6 bins", "50 classes x 10^7 bins", "10^8 classes, auto bins"],
)
def test_the_probes_tables_are_refused_by_name_before_the_charge(
    ledger, peak_bytes, n_classes, n_bins, n
):
    labels = LABELS[:n] % min(n_classes, 1000)

    def run():
        with pytest.raises(ValueError, match=r"n_classes x n_bins \(.*\) needs .* cells"):
            dpuq.calibrate_by_class(SCORES[:n], labels, n_classes, alpha=0.1, epsilon=1.0,
                                    n_bins=n_bins, ledger=ledger, dataset="d")  # fmt: skip

    assert peak_bytes(run) < 20_000_000
    assert ledger.status("d").spent_epsilon == 0.0


def test_the_cap_is_the_librarys_work_cap(ledger, monkeypatch):
    """At a lowered MAX_WORK a table that fits in memory is refused as well: one cap."""
    monkeypatch.setattr(dpuq._validation, "MAX_WORK", 10_000)
    labels = LABELS % 10
    with pytest.raises(ValueError, match=r"\(10 x 2,000\) needs 20,000 cells.*cap of 10,000"):
        dpuq.calibrate_by_class(SCORES, labels, 10, alpha=0.1, epsilon=1.0, n_bins=2000,
                                ledger=ledger, dataset="d")  # fmt: skip
    assert ledger.status("d").spent_epsilon == 0.0
    with pytest.raises(ValueError, match="n_classes x n_bins"):  # the mechanism itself too
        class_thresholds(SCORES, labels, 10, epsilon=1.0, n_bins=2000, schedule=[5], pad=5)
    cal = dpuq.calibrate_by_class(SCORES, labels, 10, alpha=0.1, epsilon=1.0, n_bins=1000,
                                  random_state=0, ledger=ledger, dataset="d")  # fmt: skip
    assert cal.n_bins == 1000 and ledger.status("d").spent_epsilon == pytest.approx(1.0)


def test_n_bins_beyond_max_bins_is_refused_as_everywhere():
    with pytest.raises(ValueError, match="n_bins must be <= 10,000,000"):
        dpuq.calibrate_by_class(SCORES, LABELS % 2, 2, alpha=0.1, epsilon=1.0, n_bins=10**8)


def test_auto_bins_stay_within_the_cap():
    """The search never picks a table the release would refuse (it picked 107,433 bins for
    1000 classes of 10^6 points: 1.07 x 10^8 cells)."""
    m = auto_class_bins(10**9, 1000, 0.1, 1.0)
    assert MIN_AUTO_BINS <= m and 1000 * m <= MAX_WORK
    assert auto_class_bins(10**9, MAX_WORK // MIN_AUTO_BINS, 0.1, 1.0) == MIN_AUTO_BINS
    with pytest.raises(ValueError, match="n_classes x n_bins"):
        auto_class_bins(10**9, MAX_WORK // MIN_AUTO_BINS + 1, 0.1, 1.0)


class _Uniform:
    """A public model: equal probabilities for ``k`` classes."""

    def __init__(self, k):
        self.classes_ = np.arange(k)

    def predict_proba(self, X):
        return np.full((len(X), self.classes_.size), 1.0 / self.classes_.size)


def test_estimators_refuse_the_table_before_their_charge(ledger, monkeypatch):
    monkeypatch.setattr(dpuq._validation, "MAX_WORK", 10_000)
    X, y = RNG.normal(size=(600, 2)), RNG.integers(0, 10, size=600)
    clf = dpuq.PrivateConformalClassifier(_Uniform(10), epsilon=1.0, class_conditional=True,
                                          n_bins=2000)  # fmt: skip
    with pytest.raises(ValueError, match="n_classes x n_bins"):
        clf.conformalize(X, y, ledger=ledger, dataset="d")
    reg = dpuq.PrivateConformalRegressor(lambda X: X[:, 0], epsilon=1.0, bound=3.0, n_groups=10,
                                         n_bins=2000)  # fmt: skip
    with pytest.raises(ValueError, match="n_classes x n_bins"):
        reg.conformalize(X, RNG.normal(size=600), groups=y, ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == 0.0
    assert not ledger.releases("d")


def test_estimator_settings_refused_by_the_release_cost_nothing(ledger):
    """The class schedule's own checks (here its alpha floor) come before the charge too."""
    X, y = RNG.normal(size=(300, 2)), RNG.integers(0, 3, size=300)
    clf = dpuq.PrivateConformalClassifier(
        _Uniform(3), epsilon=1.0, class_conditional=True, confidence_level=1 - 1e-9
    )
    with pytest.raises(ValueError, match="alpha must be at least"):
        clf.conformalize(X, y, ledger=ledger, dataset="d")
    assert ledger.status("d").spent_epsilon == 0.0


def test_estimator_release_is_charged_once_under_its_own_name(ledger):
    X, y = RNG.normal(size=(600, 2)), RNG.integers(0, 3, size=600)
    clf = dpuq.PrivateConformalClassifier(_Uniform(3), epsilon=0.5, class_conditional=True,
                                          random_state=0)  # fmt: skip
    clf.conformalize(X, y, ledger=ledger, dataset="d")
    (release,) = ledger.releases("d")
    assert release.what == "PrivateConformalClassifier.conformalize"
    assert release.epsilon == 0.5 and release.seeded
    assert release.settings["class_conditional"] is True
    assert clf.release_trail_ is not None


def test_cli_refuses_the_table_before_the_charge(tmp_path, capsys, monkeypatch):
    from dpuq.cli import main

    monkeypatch.setattr(dpuq._validation, "MAX_WORK", 10_000)
    probs = np.full((300, 10), 0.1)
    np.save(tmp_path / "p.npy", probs)
    np.savetxt(tmp_path / "y.csv", np.arange(300) % 10, fmt="%d")
    led = dpuq.Ledger(tmp_path / "l.db")
    led.create_budget("d", epsilon=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["calibrate", "--probs", str(tmp_path / "p.npy"), "--labels",
                     str(tmp_path / "y.csv"), "--alpha", "0.1", "--epsilon", "1",
                     "--class-conditional", "--bins", "2000", "--ledger", str(tmp_path / "l.db"),
                     "--dataset", "d", "-o", str(tmp_path / "c.json")])  # fmt: skip
    assert code != 0 and "n_classes x n_bins" in capsys.readouterr().err
    assert led.status("d").spent_epsilon == 0.0
    assert not (tmp_path / "c.json").exists()


def test_dask_path_refuses_the_table_before_the_counts(ledger, monkeypatch):
    da = pytest.importorskip("dask.array")
    monkeypatch.setattr(dpuq._validation, "MAX_WORK", 10_000)
    ds, dl = da.from_array(SCORES, chunks=250), da.from_array(LABELS % 10, chunks=250)
    with pytest.raises(ValueError, match="n_classes x n_bins"):
        dpuq.calibrate_by_class(ds, dl, 10, alpha=0.1, epsilon=1.0, n_bins=2000,
                                ledger=ledger, dataset="d")  # fmt: skip
    assert ledger.status("d").spent_epsilon == 0.0
