"""`dpuq interval` with the general path's ready-made statistics (issue 33)."""

import json
import warnings

import numpy as np
import pytest

import dpuq
from dpuq.cli import main
from dpuq.inference import statistics
from dpuq.privacy.ledger import Ledger


def run_cli(capsys, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # --seed's warning; a release's own caution
        code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def interval(capsys, data, *args, out, seed=None):
    """``dpuq interval --data DATA ARGS --alpha 0.1 --epsilon 1 [--seed S] -o OUT``."""
    seeded = () if seed is None else ("--seed", seed)
    return run_cli(capsys, "interval", "--data", data, *args, "--alpha", 0.1, "--epsilon", 1,
                   *seeded, "-o", out)  # fmt: skip


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    d = tmp_path_factory.mktemp("cohort")
    rng = np.random.default_rng(0)
    n = 3000
    age = rng.uniform(20, 80, n)
    sbp = 100 + 0.5 * age + rng.normal(0, 12, n)
    sepsis = (rng.random(n) < 1 / (1 + np.exp(-(sbp - 140) / 10))).astype(float)
    crp = rng.lognormal(1 + 0.5 * sepsis, 0.8)
    table = np.column_stack([age, sbp, crp, sepsis])
    np.save(d / "cohort.npy", table)
    with open(d / "cohort.csv", "w") as fh:
        fh.write("age,sbp,crp,sepsis\n")
        fh.writelines(",".join(repr(float(v)) for v in row) + "\n" for row in table)
    return d, table


CASES = [
    (
        "sd",
        ["--column", "2", "--clip", "0", "10"],
        (0, 5),
        statistics.clipped(statistics.standard_deviation(0), {0: (0.0, 10.0)}),
        [2],
    ),
    (
        "ols-slope",
        ["--columns", "0", "1", "--clip", "30", "70", "--clip-second", "90", "160"],
        (-5, 5),
        statistics.ols_slope(0, 1, x_bounds=(30, 70), y_bounds=(90, 160)),
        [0, 1],
    ),
    ("ols-slope", ["--columns", "0", "1"], (-5, 5), statistics.ols_slope(0, 1), [0, 1]),
    ("auc", ["--columns", "2", "3"], (0, 1), statistics.auc(0, 1), [2, 3]),
    ("sd", ["--column", "1"], (0, 100), statistics.standard_deviation(0), [1]),
    (
        "logistic-slope",
        ["--columns", "1", "3", "--center", "130", "--scale", "15"],
        (-5, 5),
        statistics.logistic_slope(0, 1, center=130.0, scale=15.0),
        [1, 3],
    ),
]


@pytest.mark.parametrize(
    "name, flags, bounds, f, cols", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_the_command_releases_what_python_releases(
    cohort, tmp_path, capsys, name, flags, bounds, f, cols
):
    d, table = cohort
    out = tmp_path / "ci.json"
    code, printed, err = interval(capsys, d / "cohort.npy", "--statistic", name, *flags,
                                  "--statistic-bounds", *bounds, seed=5, out=out)  # fmt: skip
    assert code == 0, err
    rec = json.loads(out.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ci = dpuq.private_confidence_interval(
            table[:, cols],
            statistic=f,
            statistic_bounds=bounds,
            vectorized=True,
            alpha=0.1,
            epsilon=1.0,
            random_state=5,
        )
    assert (rec["lower"], rec["upper"]) == (ci.lower, ci.upper)
    assert rec["statistic"] == name and rec["method"] == "ensemble"
    assert rec["statistic_bounds"] == [float(b) for b in bounds]
    assert rec["privacy"]["epsilon"] == 1.0 and f"interval for the {name}" in printed


def test_header_names_and_the_population_value(cohort, tmp_path, capsys):
    d, _ = cohort
    out = tmp_path / "slope.json"
    code, _, err = interval(capsys, d / "cohort.csv", "--statistic", "ols-slope", "--columns",
                            "age", "sbp", "--statistic-bounds", -5, 5, seed=1, out=out)  # fmt: skip
    assert code == 0, err
    rec = json.loads(out.read_text())
    assert rec["columns"] == ["age", "sbp"] and rec["informative"] is True
    assert rec["lower"] < 0.5 < rec["upper"]  # the law's slope (one seeded release)
    # informative: a tenth of the bounds' span (seeds 0-29 of this release: 0.12-0.80)
    assert rec["upper"] - rec["lower"] < 1.0


AUC = "--statistic auc --columns 2 3 --statistic-bounds 0 1"
BAD = [  # (the options after --data, split on spaces; what the one error line says)
    (f"{AUC} --bounds 0 1", "--statistic-bounds"),
    ("--statistic auc --columns 2 3", "--statistic-bounds LO HI"),
    ("--statistic auc --columns 2 0 --statistic-bounds 0 1", "0 and 1"),
    ("--statistic sd --columns 0 1 --statistic-bounds 0 9", "--column"),
    ("--statistic correlation --column 0 --statistic-bounds -1 1", "--columns X Y"),
    ("--statistic auc --columns 2 3 --statistic-bounds 1 0", "LO < HI"),
    (f"{AUC} --clip-second 0 1", "--clip-second: --statistic auc has no continuous column 2"),
    ("--statistic logistic-slope --columns 1 3 --statistic-bounds -5 5", "--center"),
    (f"{AUC} --center 1 --scale 1", "--center and --scale"),
    ("--statistic mean --column 0 --bounds 0 100 --statistic-bounds 0 1",
     "--statistic-bounds applies to the other statistics"),
    ("--statistic auc --columns crp sepsis --statistic-bounds 0 1", "0-based indices"),
    ("--statistic auc --columns 2 7 --statistic-bounds 0 1", "has 4 column(s)"),
    # an outside probe (eighth session): the same column twice ran at full cost
    ("--statistic correlation --columns 0 00 --statistic-bounds -1 1", "two different columns"),
    ("--statistic log-odds-ratio --columns 3 3 --statistic-bounds -5 5", "two different"),
]  # fmt: skip


@pytest.mark.parametrize("extra, match", BAD)
def test_refusals_are_one_line_and_cost_nothing(cohort, tmp_path, capsys, extra, match):
    d, _ = cohort
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("cohort", epsilon=5.0)
    ledger = ("--ledger", tmp_path / "l.sqlite", "--dataset", "cohort")
    code, _, err = interval(
        capsys, d / "cohort.npy", *extra.split(), *ledger, out=tmp_path / "x.json"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and match in err, err
    assert led.releases("cohort") == [] and not (tmp_path / "x.json").exists()


def test_columns_by_header_name_first_then_by_index(tmp_path, capsys):
    """Numeric header names win over indices; an index reads one column of a file with a
    text column (review findings)."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=600), rng.normal(size=600)
    with open(tmp_path / "t.csv", "w") as fh:
        fh.write("1,0,site\n")  # the column named "1" is the first one
        fh.writelines(
            f"{float(u)!r},{float(v)!r},ward{i % 3}\n"
            for i, (u, v) in enumerate(zip(a, b, strict=True))
        )
    from dpuq.commands.interval import read_column

    np.testing.assert_array_equal(read_column(tmp_path / "t.csv", "1"), a)
    np.testing.assert_array_equal(read_column(tmp_path / "t.csv", "0"), b)
    with open(tmp_path / "u.csv", "w") as fh:
        fh.write("x,y,site\n")
        fh.writelines(
            f"{float(u)!r},{float(v)!r},ward{i % 3}\n"
            for i, (u, v) in enumerate(zip(a, b, strict=True))
        )
    np.testing.assert_array_equal(read_column(tmp_path / "u.csv", "1"), b)
    with open(tmp_path / "pandas.csv", "w") as fh:  # df.to_csv(): an unnamed index column
        fh.write(",x,y\n")
        fh.writelines(f"{i},{float(u)!r},{float(v)!r}\n" for i, (u, v) in
                      enumerate(zip(a, b, strict=True)))  # fmt: skip
    np.testing.assert_array_equal(read_column(tmp_path / "pandas.csv", "0"), a)  # not 0, 1, ..
    np.testing.assert_array_equal(read_column(tmp_path / "pandas.csv", "y"), b)
    with pytest.raises(ValueError, match="--columns 5: no such column"):
        read_column(tmp_path / "u.csv", "5", flag="--columns")


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--statistic", "sd", "--column", "1", "--statistic-bounds", "0", "50", "--trim", "0.3"],
         "--trim applies to --statistic trimmed-mean only"),
        (["--statistic", "mean", "--column", "0", "--bounds", "0", "100", "--trim", "0.2"],
         "--trim applies"),
        (["--statistic", "logistic-slope", "--columns", "1", "3", "--statistic-bounds", "-5", "5",
          "--center", "130", "--scale", "0"], "--scale finite and > 0"),
    ],
)  # fmt: skip
def test_options_that_do_not_apply_are_refused(cohort, tmp_path, capsys, extra, match):
    d, _ = cohort
    code, _, err = interval(capsys, d / "cohort.npy", *extra, out=tmp_path / "x.json")
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1, err


def test_a_general_release_charges_once_with_its_settings(cohort, tmp_path, capsys):
    d, _ = cohort
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("cohort", epsilon=5.0)
    ledger = ("--ledger", tmp_path / "l.sqlite", "--dataset", "cohort")
    code, _, err = interval(capsys, d / "cohort.csv", "--statistic", "correlation", "--columns",
                            "age", "sbp", "--statistic-bounds", -1, 1, *ledger,
                            out=tmp_path / "r.json")  # fmt: skip
    assert code == 0, err
    (row,) = led.releases("cohort")
    assert row.epsilon == 1.0 and row.settings["columns"] == ["age", "sbp"]
    assert row.settings["statistic_bounds"] == [-1.0, 1.0] and row.settings["n"] == 3000


def test_an_ambiguous_header_name_is_refused_and_errors_name_the_flag(tmp_path, capsys):
    """An outside probe (eighth session): a header naming a column twice silently took the
    first; a missing name under --columns was reported as --column's."""
    rng = np.random.default_rng(1)
    table = np.column_stack([rng.uniform(20, 80, 400), rng.normal(size=400), rng.normal(size=400)])
    np.savetxt(tmp_path / "dup.csv", table, delimiter=",", header="age,age,crp", comments="")
    out = tmp_path / "x.json"
    for extra, match in (("--columns age crp", "names 'age' more than once"),
                         ("--columns crp nope", "--columns: no column 'nope'")):  # fmt: skip
        code, _, err = interval(capsys, tmp_path / "dup.csv", "--statistic", "correlation",
                                *extra.split(), "--statistic-bounds", -1, 1, out=out)  # fmt: skip
        assert code == 2 and len(err.strip().splitlines()) == 1 and match in err, err
    assert not out.exists()


def test_a_name_and_an_index_of_the_same_column_are_refused(tmp_path, capsys):
    """``--columns age 0`` read one column twice and released its correlation with itself at
    full cost (left open in the eighth session): the two are resolved, then compared, before
    anything is charged."""
    rng = np.random.default_rng(2)  # 3000 rows: enough for an informative release at ε = 1
    table = np.column_stack([rng.uniform(20, 80, 3000), rng.normal(size=(3000, 2))])
    np.savetxt(tmp_path / "t.csv", table, delimiter=",", header="age,crp,sbp", comments="")
    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("t", epsilon=5.0)
    ledger = ("--ledger", tmp_path / "l.sqlite", "--dataset", "t")
    out = tmp_path / "x.json"
    for pair in (("age", "0"), ("1", "crp")):
        code, _, err = interval(capsys, tmp_path / "t.csv", "--statistic", "correlation",
                                "--columns", *pair, "--statistic-bounds", -1, 1, *ledger,
                                out=out)  # fmt: skip
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "are the same column" in err and led.releases("t") == [] and not out.exists()
    code, _, err = interval(capsys, tmp_path / "t.csv", "--statistic", "correlation",
                            "--columns", "age", "1", "--statistic-bounds", -1, 1, *ledger,
                            out=out)  # fmt: skip
    assert code == 0 and len(led.releases("t")) == 1, err


def test_negative_bounds_in_exponent_notation_are_numbers(tmp_path, capsys):
    """argparse read ``-1e3`` as an unknown option ("expected 2 arguments", left open in the
    eighth session): a negative number in exponent notation is now the same float, exactly."""
    x = np.random.default_rng(3).uniform(-100, 5, 2000)
    np.savetxt(tmp_path / "x.csv", x, header="v", comments="")
    for lo, value in (("-1e3", -1000.0), ("-1.5E2", -150.0), ("-.6e3", -600.0)):
        out = tmp_path / f"{lo}.json"
        code, _, err = interval(capsys, tmp_path / "x.csv", "--statistic", "mean", "--bounds",
                                lo, "5", seed=1, out=out)  # fmt: skip
        assert code == 0, err
        assert json.loads(out.read_text())["bounds"] == [value, 5.0]


def test_only_numeric_options_have_their_values_rewritten():
    """A second reader found ``--dataset -1e3`` charged a budget named ``-1000``: only the
    values of options that take numbers are rewritten, and that list matches the parsers."""
    from dpuq.cli import NUMERIC_OPTIONS, _positional_negatives, build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    numeric = {o for p in sub.choices.values() for a in p._actions
               if getattr(a.type, "__name__", "") in ("float", "float_arg", "levels_arg")
               for o in a.option_strings}  # fmt: skip
    assert numeric == NUMERIC_OPTIONS
    argv = ["interval", "--bounds", "-1e3", "-2E1", "--dataset", "-1e3", "-o", "-1e3",
            "--epsilon", "-1e-3", "--alpha=0.1"]  # fmt: skip
    assert _positional_negatives(argv) == [
        "interval", "--bounds", "-1000", "-20", "--dataset", "-1e3", "-o", "-1e3",
        "--epsilon", "-0.001", "--alpha=0.1",
    ]  # fmt: skip


def test_dpuq_pilot_prints_the_pilot_check_and_charges_and_writes_nothing(capsys, cohort, tmp_path):
    """`dpuq pilot` is pilot_check on a public file: the same numbers as the Python call with
    the same seed, no file written, no ledger touched (not a release)."""
    d, table = cohort
    before = sorted(p.name for p in d.iterdir())
    code, out, _ = run_cli(capsys, "pilot", "--data", d / "cohort.csv", "--n", 1000,
                           "--statistic", "ols-slope", "--columns", "age", "sbp",
                           "--statistic-bounds", -5, 5, "--alpha", 0.1, "--epsilon", 1,
                           "--reps", 4, "--seed", 3)  # fmt: skip
    assert code == 0
    pc = dpuq.pilot_check(statistics.ols_slope(0, 1), table[:, :2], statistic_bounds=(-5, 5),
                          n=1000, epsilon=1.0, alpha=0.1, vectorized=True, reps=4,
                          random_state=3)  # fmt: skip
    assert out.strip() == f"ols-slope: {pc.summary()}"
    assert sorted(p.name for p in d.iterdir()) == before
    assert not (tmp_path / "ledger.sqlite").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--statistic", "mean", "--bounds", "0", "1"], "invalid choice: 'mean'"),
        (["--statistic", "sd", "--statistic-bounds", "0", "5", "--n", "3"], "--n must be at"),
        (["--statistic", "sd", "--statistic-bounds", "0", "5", "--reps", "1"], "--reps must be"),
        (["--statistic", "sd", "--n", "0"], "expected an integer >= 1"),
    ],
)
def test_dpuq_pilot_refuses_bad_settings_in_one_line(capsys, cohort, args, message):
    d, _ = cohort
    base = ["pilot", "--data", d / "cohort.csv", "--column", "age", "--alpha", 0.1,
            "--epsilon", 1]  # fmt: skip
    if "--n" not in args:
        base += ["--n", 100]
    try:
        code, _, err = run_cli(capsys, *base, *args)
    except SystemExit as exc:
        code, err = exc.code, capsys.readouterr().err
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1
