"""The privacy budget ledger in one process: budgets, refusals, composition, relations, and the
``ledger=``/``dataset=`` arguments of every releasing function. Real SQLite files, no mocks."""

import math
import sqlite3

import numpy as np
import pytest

import dpuq
from dpuq.privacy.ledger import (
    SCHEMA_VERSION,
    BudgetError,
    BudgetExceededError,
    Ledger,
    charge,
    compose_costs,
    default_ledger_path,
)
from dpuq.privacy.report import PrivacyReport, Relation


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "ledger.sqlite")
    led.create_budget("icu", epsilon=3.0)
    return led


class TestBudget:
    def test_file_is_wal_with_a_schema_version(self, tmp_path):
        led = Ledger(tmp_path / "l.sqlite")
        con = sqlite3.connect(led.path)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == (
            SCHEMA_VERSION
        )
        con.close()
        Ledger(led.path)  # reopening migrates nothing and adds no version row
        con = sqlite3.connect(led.path)
        assert con.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        con.close()

    def test_newer_schema_is_refused_with_version_in_the_message(self, tmp_path):
        led = Ledger(tmp_path / "l.sqlite")
        con = sqlite3.connect(led.path)
        con.execute("INSERT INTO schema_version VALUES (?, 'later')", (SCHEMA_VERSION + 1,))
        con.commit()
        con.close()
        with pytest.raises(BudgetError, match="schema version"):
            Ledger(led.path)

    def test_other_files_are_not_ledgers(self, tmp_path):
        other = tmp_path / "other.db"
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
        with pytest.raises(BudgetError, match="not a dpuq ledger"):
            Ledger(other, create=False)
        con = sqlite3.connect(other)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # left untouched
        con.close()
        text = tmp_path / "notes.txt"
        text.write_text("hello, this is not a database at all" * 10)
        with pytest.raises(OSError, match="not a database"):
            Ledger(text)

    def test_budget_is_set_once_and_checked(self, ledger):
        with pytest.raises(BudgetError, match="already has a privacy budget"):
            ledger.create_budget("icu", epsilon=10.0)
        for bad in (0.0, -1.0, math.inf, math.nan):
            with pytest.raises(BudgetError, match="budget epsilon"):
                ledger.create_budget("other", epsilon=bad)
        with pytest.raises(BudgetError, match="budget delta"):
            ledger.create_budget("other", epsilon=1.0, delta=1.0)
        with pytest.raises(ValueError, match="relation"):
            ledger.create_budget("other", epsilon=1.0, relation="swap-two")
        assert ledger.datasets() == ["icu"]

    def test_missing_ledger_or_budget_is_an_error_naming_budget(self, tmp_path, ledger):
        with pytest.raises(BudgetError, match="no ledger"):
            Ledger(tmp_path / "nope.sqlite", create=False)
        assert not (tmp_path / "nope.sqlite").exists()
        with pytest.raises(BudgetError, match="no privacy budget for data set 'other'"):
            ledger.reserve("other", 0.1, what="x")

    def test_spend_until_refused_and_refusal_records_nothing(self, ledger):
        for _ in range(3):
            ledger.reserve("icu", 1.0, what="threshold")
        st = ledger.status("icu")
        assert (st.spent_epsilon, st.remaining_epsilon, st.n_releases) == (3.0, 0.0, 3)
        with pytest.raises(BudgetExceededError, match="budget") as info:
            ledger.reserve("icu", 1e-9, what="one more")
        assert isinstance(info.value, ValueError)
        assert ledger.status("icu").n_releases == 3

    def test_decimal_costs_add_up_exactly_to_the_budget(self, tmp_path):
        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=1.0)
        for _ in range(10):
            led.reserve("d", 0.1, what="tenth")
        with pytest.raises(BudgetExceededError):
            led.reserve("d", 1e-6, what="over")

    def test_spend_context_records_outcome_and_keeps_cost_on_failure(self, ledger, tmp_path):
        with ledger.spend("icu", 0.5, what="ok") as receipt:
            receipt.attach(tmp_path / "out.json")
        with pytest.raises(RuntimeError), ledger.spend("icu", 0.5, what="crashes"):
            raise RuntimeError("release failed after the noise was drawn")
        rows = ledger.releases("icu")
        assert [(r.what, r.status) for r in rows] == [("ok", "released"), ("crashes", "failed")]
        assert rows[0].output == str((tmp_path / "out.json").resolve())
        assert ledger.status("icu").spent_epsilon == 1.0  # the failed one still counts

    def test_release_rows_hold_version_time_and_seeded(self, ledger):
        ledger.reserve("icu", 0.25, what="seeded run", seeded=True)
        (row,) = ledger.releases("icu")
        assert row.seeded is True and row.dpuq_version == dpuq.__version__
        assert row.reserved_at.endswith("+00:00") and row.status == "reserved"

    def test_bad_costs(self, ledger):
        with pytest.raises(BudgetExceededError, match="non-private"):
            ledger.reserve("icu", math.inf, what="sgd")
        with pytest.raises(ValueError, match="epsilon of a release"):
            ledger.reserve("icu", -0.1, what="x")
        with pytest.raises(ValueError, match="dataset"):
            ledger.reserve("", 0.1, what="x")
        assert ledger.status("icu").n_releases == 0


class TestComposition:
    def test_basic_composition(self):
        assert compose_costs([]) == (0.0, 0.0)
        assert compose_costs([(1.0, 1e-6)] * 3) == (3.0, 3e-6)
        assert compose_costs([(0.0, 0.6), (0.0, 0.6)]) == (0.0, 1.0)

    def test_approximate_dp_adds_delta_and_refuses_delta_over_budget(self, tmp_path):
        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=10.0, delta=1e-5)
        led.reserve("d", 1.0, 6e-6, what="a")
        with pytest.raises(BudgetExceededError, match="delta"):
            led.reserve("d", 1.0, 6e-6, what="b")
        led.reserve("d", 1.0, 4e-6, what="c")
        st = led.status("d")
        assert st.spent_epsilon == 2.0 and st.spent_delta == pytest.approx(1e-5, rel=1e-12)

    def test_pure_budget_refuses_any_delta(self, ledger):
        with pytest.raises(BudgetExceededError, match="delta"):
            ledger.reserve("icu", 0.1, 1e-9, what="gaussian")

    def test_add_remove_cost_converted_to_replace_one_budget(self, tmp_path):
        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=10.0, delta=1e-3)
        led.reserve("d", 1.0, 1e-5, Relation.ADD_REMOVE, what="dp-sgd")
        (row,) = led.releases("d")
        want = PrivacyReport("x", 1.0, 1e-5, Relation.ADD_REMOVE).under(Relation.REPLACE_ONE)
        assert (row.epsilon, row.delta, row.relation) == (want.epsilon, want.delta, "replace-one")
        assert (row.stated_epsilon, row.stated_delta, row.stated_relation) == (
            1.0,
            1e-5,
            "add/remove-one",
        )
        assert led.status("d").spent_epsilon == 2.0

    def test_replace_one_cost_refused_by_add_remove_budget(self, tmp_path):
        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=10.0, relation="add/remove-one")
        with pytest.raises(ValueError, match="cannot convert"):
            led.reserve("d", 1.0, what="threshold")
        assert led.status("d").n_releases == 0


class TestCharge:
    def test_nothing_without_ledger_and_dataset(self):
        assert charge(None, None, 1.0, what="x") is None

    def test_ledger_needs_dataset(self, ledger):
        with pytest.raises(ValueError, match="dataset="):
            charge(ledger, None, 1.0, what="x")

    def test_path_and_report(self, ledger):
        report = PrivacyReport("m", 0.5, seeded=True)
        receipt = charge(str(ledger.path), "icu", report, what="via path")
        assert receipt.epsilon == 0.5
        (row,) = ledger.releases("icu")
        assert row.seeded and row.status == "spent"

    def test_dataset_alone_uses_the_default_ledger(self, tmp_path, monkeypatch):
        monkeypatch.delenv("DPUQ_LEDGER", raising=False)
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
        path = default_ledger_path()
        assert path == tmp_path / "xdg" / "dpuq" / "ledger.sqlite"
        with pytest.raises(BudgetError, match="no ledger"):
            charge(None, "d", 1.0, what="x")
        Ledger().create_budget("d", epsilon=1.0)
        assert path.exists()
        charge(None, "d", 1.0, what="x")
        assert Ledger(path).status("d").remaining_epsilon == 0.0


class TestReleasingFunctions:
    """Every releasing function charges before drawing noise and is refused when spent."""

    def test_calibrate(self, ledger, rng):
        scores = rng.uniform(size=500)
        cal = dpuq.calibrate(scores, alpha=0.1, epsilon=2.0, ledger=ledger, dataset="icu")
        assert not cal.privacy_report.seeded
        assert ledger.status("icu").spent_epsilon == 2.0
        with pytest.raises(BudgetExceededError, match="budget"):
            dpuq.calibrate(scores, alpha=0.1, epsilon=2.0, ledger=ledger, dataset="icu")
        # invalid input is refused before anything is charged
        with pytest.raises(ValueError):
            dpuq.calibrate(scores + 2, alpha=0.1, epsilon=0.5, ledger=ledger, dataset="icu")
        assert ledger.status("icu").n_releases == 1

    def test_conformal_estimators(self, ledger, rng):
        from sklearn.linear_model import LinearRegression, LogisticRegression

        X = rng.normal(size=(600, 3))
        y = (X[:, 0] > 0).astype(int)
        model = LogisticRegression().fit(X[:200], y[:200])
        clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
        clf.conformalize(X[200:], y[200:], ledger=ledger, dataset="icu")
        yr = X @ np.array([1.0, 2.0, 0.0]) + rng.normal(size=600)
        reg = dpuq.PrivateConformalRegressor(LinearRegression().fit(X[:200], yr[:200]),
                                             epsilon=1.5, bound=10.0)  # fmt: skip
        reg.conformalize(X[200:], yr[200:], ledger=ledger, dataset="icu")
        with pytest.raises(BudgetExceededError):
            reg.conformalize(X[200:], yr[200:], ledger=ledger, dataset="icu")
        rows = ledger.releases("icu")
        assert [(r.what, r.epsilon, r.seeded) for r in rows] == [
            ("PrivateConformalClassifier.conformalize", 1.0, True),
            ("PrivateConformalRegressor.conformalize", 1.5, False),
        ]

    def test_private_confidence_interval_charges_its_total(self, ledger, rng):
        x = rng.uniform(0, 1, 400)
        ci = dpuq.private_confidence_interval(x, alpha=0.1, epsilon=2.0, bounds=(0, 1),
                                              ledger=ledger, dataset="icu")  # fmt: skip
        assert ledger.status("icu").spent_epsilon == ci.privacy_report.epsilon == 2.0
        with pytest.raises(BudgetExceededError):
            dpuq.private_confidence_interval(x, alpha=0.1, epsilon=1.5, bounds=(0, 1),
                                             ledger=ledger, dataset="icu")  # fmt: skip
        dpuq.normal_approximation_interval(x, alpha=0.1, epsilon=1.0, bounds=(0, 1),
                                           ledger=ledger, dataset="icu")  # fmt: skip
        assert ledger.status("icu").remaining_epsilon == 0.0

    def test_naive_interval_charges_its_approximate_dp_cost(self, tmp_path, rng):
        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=100.0, delta=1e-3)
        x = rng.uniform(0, 1, 400)
        ci = dpuq.private_confidence_interval(x, alpha=0.1, epsilon=1.0, bounds=(0, 1),
                                              method="naive", ledger=led, dataset="d")  # fmt: skip
        (row,) = led.releases("d")
        assert (row.epsilon, row.delta) == (ci.privacy_report.epsilon, ci.privacy_report.delta)

    def test_private_erm(self, ledger, rng):
        from dpuq.learning import Thresholds

        x = rng.uniform(size=200)
        y = (x > 0.5).astype(int)
        clf = dpuq.PrivateERMClassifier(Thresholds(np.linspace(0, 1, 11)), epsilon=3.0)
        clf.fit(x, y, ledger=ledger, dataset="icu")
        with pytest.raises(BudgetExceededError):
            clf.fit(x, y, ledger=ledger, dataset="icu")
        assert ledger.releases("icu")[0].what == "PrivateERMClassifier.fit"

    def test_train_classifier_charges_add_remove_converted(self, tmp_path):
        torch = pytest.importorskip("torch")
        pytest.importorskip("opacus")
        from dpuq.training import train_classifier

        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=3.0, delta=1e-4)
        gen = np.random.default_rng(0)
        X = torch.as_tensor(gen.normal(size=(64, 2)), dtype=torch.float32)
        y = torch.as_tensor((gen.uniform(size=64) > 0.5).astype(np.int64))
        common = dict(epochs=1, batch_size=16, random_state=0, show_progress=False, ledger=led,
                      accountant="rdp", relation="add/remove-one",
                      dataset="d")  # fmt: skip
        with pytest.raises(BudgetExceededError, match="non-private"):
            train_classifier(torch.nn.Linear(2, 2), (X, y), method="sgd", **common)
        with pytest.raises(BudgetExceededError, match="converted"):  # 2 x 2 > 3
            train_classifier(torch.nn.Linear(2, 2), (X, y), method="dpsgd", epsilon=2.0,
                             delta=1e-6, **common)  # fmt: skip
        assert led.status("d").n_releases == 0
        res = train_classifier(torch.nn.Linear(2, 2), (X, y), method="dpsgd", epsilon=1.0,
                               delta=1e-6, **common)  # fmt: skip
        (row,) = led.releases("d")
        assert row.stated_relation == "add/remove-one" and row.relation == "replace-one"
        assert row.epsilon == 2.0 and res.privacy_report.epsilon <= 1.0 + 1e-9
        common["relation"] = "replace-one"  # the default: charged as stated, no conversion
        res = train_classifier(torch.nn.Linear(2, 2), (X, y), method="dpsgd", epsilon=0.5,
                               delta=1e-6, **common)  # fmt: skip
        row = led.releases("d")[-1]
        assert row.stated_relation == "replace-one" == row.relation and row.epsilon == 0.5


class TestChargesMatchReports:
    """What the ledger charges is what the release's own report states."""

    @pytest.mark.parametrize(("n", "runs"), [(60, False), (2000, True)])
    def test_ensemble_cdf_charges_only_what_runs(self, tmp_path, n, runs):
        import warnings

        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=100.0)
        x = np.random.default_rng(n).uniform(0, 1, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = dpuq.private_confidence_interval(
                x, alpha=0.5, epsilon=20.0, bounds=(0, 1), method="ensemble_cdf", n_grid=3,
                beta=0.5, n_resamples=50, random_state=0, ledger=led, dataset="d",
            )  # fmt: skip
        (row,) = led.releases("d")
        assert row.epsilon == ci.privacy_report.epsilon == (20.0 if runs else 10.0)

    @pytest.mark.parametrize(
        ("fn", "kwargs"),
        [
            ("private_bootstrap_cdf", {"t": 0.0}),
            ("private_bootstrap_cdf", {"t": 0.0, "method": "naive"}),
            ("private_bootstrap_cdf_grid", {}),
            ("private_studentized_cdf", {"t": 1.0}),
        ],
    )
    @pytest.mark.filterwarnings("ignore:the private median")
    def test_bootstrap_cdfs(self, tmp_path, fn, kwargs):
        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=100.0, delta=1e-3)
        x = np.random.default_rng(0).uniform(0, 1, 2000)
        est = getattr(dpuq, fn)(x, epsilon=1.0, bounds=(0, 1), n_resamples=20, random_state=0,
                                ledger=led, dataset="d", **kwargs)  # fmt: skip
        (row,) = led.releases("d")
        assert (row.epsilon, row.delta) == (est.privacy_report.epsilon, est.privacy_report.delta)
        assert row.seeded


class TestProperties:
    @staticmethod
    def _costs():
        from hypothesis import strategies as st

        eps = st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 1.0, 2.5])
        delta = st.sampled_from([0.0, 0.0, 1e-7, 5e-7])
        return st.lists(st.tuples(eps, delta), max_size=8)

    def test_accepts_exactly_what_fits_and_never_exceeds(self, tmp_path):
        import itertools

        from hypothesis import given, settings

        led = Ledger(tmp_path / "l.sqlite")
        names = (f"d{i}" for i in itertools.count())

        @settings(max_examples=10, deadline=None)
        @given(costs=self._costs())
        def check(costs):
            name = next(names)
            led.create_budget(name, epsilon=2.0, delta=1e-6)
            accepted = []
            for e, dl in costs:
                fits = compose_costs([*accepted, (e, dl)])
                try:
                    led.reserve(name, e, dl, what="x")
                except BudgetExceededError:
                    assert fits[0] > 2.0 * (1 + 1e-12) or fits[1] > 1e-6 * (1 + 1e-12)
                else:
                    accepted.append((e, dl))
                st = led.status(name)
                assert st.spent_epsilon <= 2.0 * (1 + 1e-12)
                assert st.spent_delta <= 1e-6 * (1 + 1e-12)
            assert led.status(name).n_releases == len(accepted)

        check()

    def test_threads_racing_for_the_last_of_the_budget(self, tmp_path):
        from concurrent.futures import ThreadPoolExecutor

        led = Ledger(tmp_path / "l.sqlite")
        led.create_budget("d", epsilon=3.0)

        def attempt(_):
            try:
                Ledger(led.path).reserve("d", 0.5, what="race")
            except BudgetExceededError:
                return False
            return True

        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(attempt, range(16)))
        assert sum(outcomes) == 6
        assert led.status("d").spent_epsilon == 3.0


class TestBudgetCommand:
    def test_default_location_and_one_line_errors(self, tmp_path, monkeypatch, capsys):
        import json

        from dpuq.cli import main

        monkeypatch.delenv("DPUQ_LEDGER", raising=False)
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
        assert main(["budget", "show", "--dataset", "icu"]) == 2
        assert capsys.readouterr().err.startswith("dpuq budget: error: no ledger at")
        assert main(["budget", "init", "--dataset", "icu", "--epsilon", "2", "--delta",
                     "1e-6"]) == 0  # fmt: skip
        assert (tmp_path / "xdg" / "dpuq" / "ledger.sqlite").exists()
        assert main(["budget", "init", "--dataset", "icu", "--epsilon", "9"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "already has a privacy budget" in err
        np.save(tmp_path / "s.npy", np.random.default_rng(0).uniform(size=500))
        calib = ["calibrate", "--scores", str(tmp_path / "s.npy"), "--alpha", "0.1",
                 "--epsilon", "1.5", "--dataset", "icu"]  # fmt: skip
        assert main([*calib, "-o", str(tmp_path / "a.json")]) == 0
        assert main([*calib, "-o", str(tmp_path / "b.json")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "budget" in err and not (tmp_path / "b.json").exists()
        assert main(["budget", "show", "--dataset", "icu", "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert (info["spent_epsilon"], info["remaining_epsilon"]) == (1.5, 0.5)
        assert [r["output"] for r in info["releases"]] == [str((tmp_path / "a.json").resolve())]
        assert main(["budget", "show", "--dataset", "icu"]) == 0
        out = capsys.readouterr().out
        assert "spent      epsilon 1.5, delta 0 in 1 release(s)" in out
        assert main(["budget", "history", "--json"]) == 0
        assert len(json.loads(capsys.readouterr().out)) == 1
        assert main([*calib[:-2], "--ledger", str(tmp_path / "l.sqlite"), "-o",
                     str(tmp_path / "c.json")]) == 2  # fmt: skip
        assert "--ledger needs --dataset" in capsys.readouterr().err


def test_the_ledger_is_a_privacy_filter_for_adaptively_chosen_costs_exactly(tmp_path):
    """Rogers, Roth, Ullman, Vadhan 2016 ("Privacy odometers and filters"): with a budget fixed
    in advance, each cost chosen after seeing the earlier outputs, and a release refused past
    the budget, the whole interaction is budget-DP. Exact on a small case: two releases of the
    count of 3 bits by the two-sided geometric mechanism (Laplace on the integer grid), the
    second's epsilon chosen from the first output; every replace-one pair enumerated."""
    import itertools
    import math

    from dpuq.privacy.ledger import BudgetExceededError

    budget, eps1 = 1.0, 0.4
    allowed: dict[float, bool] = {}

    def eps2(y1: int) -> float:  # adaptive: 0.4 + 0.9 > budget, the ledger must refuse it
        return 0.6 if y1 >= 1 else 0.9

    def ledger_allows(e2: float) -> bool:  # the real ledger decides
        if e2 not in allowed:
            led = Ledger(tmp_path / f"{e2}.sqlite")
            led.create_budget("d", epsilon=budget)
            led.reserve("d", eps1, what="first count")
            try:
                led.reserve("d", e2, what="second count")
                allowed[e2] = True
            except BudgetExceededError:
                allowed[e2] = False
        return allowed[e2]

    def geometric(y: int, count: int, eps: float) -> float:
        a = math.exp(-eps)
        return (1 - a) / (1 + a) * a ** abs(y - count)

    grid = range(-12, 16)  # beyond it every likelihood ratio repeats the edge's

    def law(count: int, filtered: bool = True) -> dict:
        out = {}
        for y1 in grid:
            p1 = geometric(y1, count, eps1)
            if filtered and not ledger_allows(eps2(y1)):
                out[(y1, None)] = p1  # refused: nothing more is released
                continue
            for y2 in grid:
                out[(y1, y2)] = p1 * geometric(y2, count, eps2(y1))
        return out

    def worst_loss(filtered: bool) -> float:
        worst = 0.0
        for bits in itertools.product((0, 1), repeat=3):
            for i in range(3):  # replace person i's record
                other = list(bits)
                other[i] = 1 - other[i]
                a, b = law(sum(bits), filtered), law(sum(other), filtered)
                worst = max(worst, max(abs(math.log(a[k] / b[k])) for k in a))
        return worst

    assert allowed == {} and ledger_allows(0.6) and not ledger_allows(0.9)
    assert worst_loss(True) == pytest.approx(budget)  # within the budget, and tight
    assert worst_loss(True) <= budget + 1e-12
    assert worst_loss(False) == pytest.approx(eps1 + 0.9)  # negative control: no filter
