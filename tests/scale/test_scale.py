"""Dask and out-of-core inputs: the same releases as in memory, chunk-wise validation.

A real ``dask.distributed.LocalCluster`` (2 worker processes, 1 thread each) runs once for the
module; everything skips with the reason when the ``dask`` extra is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dpuq
from dpuq.scale import ChunkedScores, summarize_chunk

da = pytest.importorskip(
    "dask.array", reason="Dask support needs the extra: pip install dpuq[dask]"
)
distributed = pytest.importorskip(
    "dask.distributed", reason="Dask support needs the extra: pip install dpuq[dask]"
)

SRC = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "src")


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            memory_limit="1GiB",
        )
        c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_import_dpuq_does_not_import_dask():
    code = "import sys, dpuq; dpuq.calibrate([0.1] * 50, alpha=0.5, epsilon=50.0, random_state=0);"
    code += "print('dask' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        check=True,
    )
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------- calibrate
def _edge_scores(rng, n, m):
    """Scores with many values exactly on the bin edges j/m, at 0 and at 1."""
    x = rng.uniform(size=n)
    on_edge = rng.random(n) < 0.3
    x[on_edge] = rng.integers(0, m + 1, size=int(on_edge.sum())) / m
    return x


@pytest.mark.parametrize("n_bins", [50, "auto"])
def test_calibrate_dask_equals_memory(client, n_bins):
    rng = np.random.default_rng(0)
    x = _edge_scores(rng, 20_011, 50)
    for seed in range(3):
        ref = dpuq.calibrate(x, alpha=0.1, epsilon=1.0, n_bins=n_bins, random_state=seed)
        for chunks in (997, 5_000):
            got = dpuq.calibrate(
                da.from_array(x, chunks=chunks),
                alpha=0.1,
                epsilon=1.0,
                n_bins=n_bins,
                random_state=seed,
            )
            assert got == ref


def test_bin_counts_match_memory_exactly():
    rng = np.random.default_rng(1)
    m = 37
    x = _edge_scores(rng, 5_000, m)
    edges = dpuq.mechanisms.quantile.bin_edges(m)
    ref_bins, ref_counts = np.unique(
        dpuq.mechanisms.quantile.bin_index(x, edges), return_counts=True
    )
    src = ChunkedScores(lambda: iter(np.array_split(x, 13)), n=x.size)
    bins, counts = src.bin_counts(m)
    np.testing.assert_array_equal(bins, ref_bins)
    np.testing.assert_array_equal(counts, ref_counts)
    assert summarize_chunk(x, m).counts.sum() == x.size


def test_different_scores_change_counts():
    """Negative control: the chunked counts do see the data."""
    x = np.full(1000, 0.1)
    y = x.copy()
    y[0] = 0.9
    a = ChunkedScores(lambda: iter([x]), n=x.size).bin_counts(10)
    b = ChunkedScores(lambda: iter([y]), n=y.size).bin_counts(10)
    assert not np.array_equal(a[0], b[0])


@pytest.mark.parametrize(
    ("bad", "value"),
    [("nan", np.nan), ("inf", np.inf), ("range", 1.5), ("negative", -0.2)],
)
def test_validation_errors_are_chunkwise_and_identical(client, bad, value):
    x = np.random.default_rng(2).uniform(size=3_000)
    x[[5, 1_500, 2_999]] = value
    with pytest.raises(ValueError) as ref:
        dpuq.calibrate(x, alpha=0.1, epsilon=1.0, random_state=0)
    with pytest.raises(ValueError) as got:
        dpuq.calibrate(da.from_array(x, chunks=700), alpha=0.1, epsilon=1.0, random_state=0)
    assert str(got.value) == str(ref.value)


def test_validation_runs_even_when_uninformative(client):
    x = np.array([0.5] * 9 + [np.nan])
    with pytest.raises(ValueError, match="non-finite"):
        dpuq.calibrate(da.from_array(x, chunks=3), alpha=0.1, epsilon=0.1)


def test_non_numeric_dask_scores_are_refused():
    x = da.from_array(np.array(["0.1", "0.2"]), chunks=1)
    with pytest.raises(ValueError, match="scores must be numeric"):
        dpuq.calibrate(x, alpha=0.1, epsilon=1.0)


# ----------------------------------------------------------------- confidence intervals
@pytest.mark.parametrize("clip", [False, True])
def test_mean_interval_dask_equals_memory(client, clip):
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, size=30_000) * (1.2 if clip else 1.0)
    kw = {"alpha": 0.05, "epsilon": 1.0, "bounds": (0.0, 1.0), "clip": clip}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpuq.inference.ClippingWarning)
        ref = dpuq.private_confidence_interval(x, random_state=11, **kw)
        got = dpuq.private_confidence_interval(
            da.from_array(x, chunks=9_001), random_state=11, **kw
        )
    # the release is equal; internal simulation figures agree to rounding (summation order)
    assert got.interval == ref.interval and got.estimate == ref.estimate
    assert got.privacy_report == ref.privacy_report
    for key, value in ref.details.items():
        if value is None:
            assert got.details[key] is None, key
        else:
            np.testing.assert_allclose(got.details[key], value, rtol=1e-9, err_msg=key)
    other = dpuq.private_confidence_interval(x, random_state=12, **kw) if not clip else None
    assert other is None or other != ref  # negative control: the seed matters


def test_interval_validation_errors_match(client):
    x = np.random.default_rng(4).uniform(size=1_000)
    x[3] = 2.0
    kw = {"alpha": 0.05, "epsilon": 1.0, "bounds": (0.0, 1.0)}
    with pytest.raises(ValueError) as ref:
        dpuq.private_confidence_interval(x, **kw)
    with pytest.raises(ValueError) as got:
        dpuq.private_confidence_interval(da.from_array(x, chunks=300), **kw)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize(
    ("statistic", "method", "kw"),
    [
        ("median", "ensemble", {}),
        ("trimmed_mean", "ensemble", {"symmetric": False}),
        ("mean", "ensemble_cdf", {"epsilon": 100.0, "n_subsets": 60, "n_resamples": 40}),
        ("median", "ensemble_cdf", {"epsilon": 100.0, "n_subsets": 60, "n_resamples": 40}),
        ("trimmed_mean", "ensemble_cdf", {"epsilon": 100.0, "n_subsets": 60, "n_resamples": 40}),
    ],
)
def test_every_interval_dask_equals_memory(client, statistic, method, kw):
    x = np.random.default_rng(8).beta(2, 5, size=12_000)
    kw = {"alpha": 0.2, "epsilon": 1.0, "bounds": (0.0, 1.0), "n_resamples": 60, **kw}
    kw.update(statistic=statistic, method=method)
    ref = dpuq.private_confidence_interval(x, random_state=5, **kw)
    got = dpuq.private_confidence_interval(da.from_array(x, chunks=2_501), random_state=5, **kw)
    assert ref.informative  # informative, so the per-subset work is compared
    assert got.interval == ref.interval and got.estimate == ref.estimate
    assert got.privacy_report == ref.privacy_report
    other = dpuq.private_confidence_interval(x, random_state=6, **kw)
    assert other.interval != ref.interval  # negative control: the seed matters


def test_trimmed_mean_selection_is_exact_with_ties_and_negatives():
    from dpuq.inference._dask import DaskIntervalData
    from dpuq.inference._data import parse_statistic
    from dpuq.inference._tiles import ArrayData, exact_statistic

    rng = np.random.default_rng(9)
    x = np.round(rng.normal(size=5_000), 1)  # many ties, both signs, -0.0 and 0.0
    x[:7] = -0.0
    stat = parse_statistic("trimmed_mean", 0.2)
    with __import__("dask").config.set(scheduler="synchronous"):
        dx = DaskIntervalData(da.from_array(x, chunks=999), (-10.0, 10.0), False)
        xs = np.sort(x)
        assert dx.order_statistics([0, 123, 4_999]) == [xs[0], xs[123], xs[4_999]]
        got = exact_statistic(dx, stat, None)
    assert got == exact_statistic(ArrayData(x), stat, None)
    np.testing.assert_allclose(got, stat.of_sorted(np.sort(x)), rtol=1e-12)


def test_naive_interval_on_dask_refuses_with_the_reason():
    x = da.from_array(np.linspace(0, 1, 100), chunks=50)
    with pytest.raises(ValueError, match="random reads across all chunks"):
        dpuq.private_confidence_interval(x, alpha=0.05, epsilon=1.0, bounds=(0, 1), method="naive")


# ----------------------------------------------------------------- scoring on the workers
def test_classifier_conformalize_on_dask_equals_memory(client):
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4_000, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=4_000) > 0).astype(int)
    model = sklearn.LogisticRegression().fit(X[:1_000], y[:1_000])
    Xc, yc = X[1_000:], y[1_000:]
    for score, params in (("lac", None), ("aps", {"randomized": False})):
        kw = {"epsilon": 1.0, "conformity_score": score, "score_params": params, "random_state": 3}
        ref = dpuq.PrivateConformalClassifier(model, **kw)
        ref.conformalize(Xc, yc)
        got = dpuq.PrivateConformalClassifier(model, **kw)
        got.conformalize(da.from_array(Xc, chunks=(700, 3)), da.from_array(yc, chunks=700))
        assert got.calibration_ == ref.calibration_
    # randomised APS/RAPS (the private default): U drawn per row on the workers, the same
    # numbers as in memory; class-conditional thresholds from chunk-wise (class, bin) counts
    for kw in (
        {"conformity_score": "aps"},
        {"conformity_score": "raps", "class_conditional": True},
        {"conformity_score": "lac", "class_conditional": True},
    ):
        ref = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=3, **kw)
        ref.conformalize(Xc, yc)
        got = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=3, **kw)
        got.conformalize(da.from_array(Xc, chunks=(700, 3)), da.from_array(yc, chunks=700))
        assert got.calibration_ == ref.calibration_, kw
    scores = dpuq.score_partitions(
        model, da.from_array(Xc, chunks=(500, 3)), da.from_array(yc, chunks=500)
    )
    np.testing.assert_array_equal(scores.compute(), dpuq.lac_scores(model.predict_proba(Xc), yc))


def test_regressor_conformalize_on_dask_equals_memory(client):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3_000, 2))
    y = X @ np.array([1.0, -2.0]) + rng.normal(size=3_000)

    def model(a):
        return a @ np.array([1.0, -2.0])

    ref = dpuq.PrivateConformalRegressor(model, epsilon=1.0, bound=5.0, random_state=4)
    ref.conformalize(X, y)
    got = dpuq.PrivateConformalRegressor(model, epsilon=1.0, bound=5.0, random_state=4)
    got.conformalize(da.from_array(X, chunks=(800, 2)), da.from_array(y, chunks=800))
    assert got.calibration_ == ref.calibration_
    groups = (X[:, 0] > 0).astype(int)
    kw = {"epsilon": 1.0, "bound": 5.0, "n_groups": 2, "random_state": 4}
    ref = dpuq.PrivateConformalRegressor(model, **kw).conformalize(X, y, groups)
    got = dpuq.PrivateConformalRegressor(model, **kw).conformalize(
        da.from_array(X, chunks=(800, 2)),
        da.from_array(y, chunks=800),
        da.from_array(groups, chunks=900),
    )
    assert got.calibration_ == ref.calibration_
    with pytest.raises(ValueError, match="needs groups="):
        dpuq.PrivateConformalRegressor(model, **kw).conformalize(
            da.from_array(X, chunks=(800, 2)), da.from_array(y, chunks=800)
        )


def test_dask_conformalize_refuses_malformed_input_before_the_charge(client, tmp_path):
    """Regression: on Dask input the estimators charged the ledger before the lazy scores and
    labels were computed, so a malformed label cost ε on Dask but not in memory. Now one
    chunk-wise validation pass runs before the charge: the same error, nothing spent."""
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(2_600, 2))
    y = (X[:, 0] > 0).astype(int)
    model = sklearn.LogisticRegression().fit(X[:600], y[:600])
    Xc, yc = X[600:], y[600:].copy()
    yc[1_500] = 5  # not a class, in the third of five row blocks
    ledger = dpuq.Ledger(tmp_path / "ledger.sqlite")
    ledger.create_budget("cal", epsilon=10.0)

    def lazy(*arrays):
        return [da.from_array(a, chunks=(400, *a.shape[1:])) for a in arrays]

    def refused(make, args) -> str:
        with pytest.raises(ValueError) as err:
            make().conformalize(*args, ledger=ledger, dataset="cal")
        assert ledger.status("cal").spent_epsilon == 0.0  # nothing charged
        return str(err.value)

    for kw in ({}, {"class_conditional": True}, {"confidence_level": [0.8, 0.9]}):

        def clf(kw=kw):
            return dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0, **kw)

        in_memory = refused(clf, (Xc, yc))
        assert refused(clf, lazy(Xc, yc)) == in_memory, kw
        assert "5" not in in_memory.replace("0..", "")  # the bad value is not shown
    # regressor: a group outside 0..n_groups-1, and a non-finite outcome
    Xr, yr = X[600:], X[600:] @ np.array([1.0, -1.0])
    groups = (Xr[:, 1] > 0).astype(int)
    groups[900] = 2

    def reg():
        return dpuq.PrivateConformalRegressor(
            lambda a: a @ np.array([1.0, -1.0]), epsilon=1.0, bound=3.0, n_groups=2
        )

    in_memory = refused(reg, (Xr, yr, groups))
    assert refused(reg, lazy(Xr, yr, groups)) == in_memory
    y_nan = yr.copy()
    y_nan[1_234] = np.nan

    def plain():
        return dpuq.PrivateConformalRegressor(lambda a: a[:, 0], epsilon=1.0, bound=3.0)

    # the same refusal, in the same words, as in memory
    assert refused(plain, lazy(Xr, y_nan)) == refused(plain, (Xr, y_nan))
    # positive control: well-formed Dask input is released and charged once
    good = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
    good.conformalize(*lazy(Xc, y[600:]), ledger=ledger, dataset="cal")
    assert ledger.status("cal").spent_epsilon == pytest.approx(1.0)


def test_calibrate_by_class_on_dask_equals_memory_and_validates(client):
    rng = np.random.default_rng(10)
    labels = rng.integers(0, 3, size=9_000)
    scores = rng.uniform(size=9_000) * (1 + labels) / 3
    kw = {"alpha": 0.1, "epsilon": 1.0, "random_state": 2}
    ref = dpuq.calibrate_by_class(scores, labels, 3, **kw)
    ds, dl = da.from_array(scores, chunks=2_000), da.from_array(labels, chunks=1_500)
    assert dpuq.calibrate_by_class(ds, dl, 3, **kw) == ref
    assert dpuq.calibrate_by_class(ds, dl, 3, **{**kw, "random_state": 3}) != ref
    for bad_scores, bad_labels in ((scores.copy(), labels), (scores, labels.copy())):
        bad_scores[5], bad_labels[5] = 1.5, 7
        with pytest.raises(ValueError) as want:
            dpuq.calibrate_by_class(bad_scores, bad_labels, 3, **kw)
        with pytest.raises(ValueError) as got:
            dpuq.calibrate_by_class(
                da.from_array(bad_scores, chunks=2_000),
                da.from_array(bad_labels, chunks=2_000),
                3,
                **kw,
            )
        assert str(got.value) == str(want.value)


def test_calibrate_by_class_beyond_the_dense_schedule_dask_equals_memory(client):
    """Classes of ~10^5 points: the rank schedule is sparse knots and the mechanism samples
    class by class; the Dask release still equals the in-memory one (issue 38)."""
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 2, size=220_000)
    scores = rng.beta(2.0, 5.0, size=labels.size) * (1 + labels) / 2
    kw = {"alpha": 0.1, "epsilon": 1.0, "n_bins": 5_000}
    for seed in (0, 1, 2):
        ref = dpuq.calibrate_by_class(scores, labels, 2, **kw, random_state=seed)
        got = dpuq.calibrate_by_class(
            da.from_array(scores, chunks=50_000),
            da.from_array(labels, chunks=70_000),
            2,
            **kw,
            random_state=seed,
        )
        assert got == ref
    assert len({dpuq.calibrate_by_class(scores, labels, 2, **kw, random_state=s).thresholds
                for s in range(6)}) > 1  # fmt: skip


def test_dask_dataframe_column_is_accepted(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    x = np.random.default_rng(7).uniform(size=5_000)
    ddf = dd.from_pandas(pd.DataFrame({"score": x}), npartitions=4)
    got = dpuq.calibrate(ddf["score"], alpha=0.1, epsilon=1.0, random_state=9)
    assert got == dpuq.calibrate(x, alpha=0.1, epsilon=1.0, random_state=9)


def test_private_erm_on_dask_equals_memory(client):
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(5_000, 2))
    y = (X[:, 1] > 0.4).astype(int)
    concepts = dpuq.DecisionStumps(np.linspace(0, 1, 21), n_features=2)
    ref = dpuq.PrivateERMClassifier(concepts, epsilon=1.0, random_state=2).fit(X, y)
    got = dpuq.PrivateERMClassifier(concepts, epsilon=1.0, random_state=2).fit(
        da.from_array(X, chunks=(1_100, 2)), da.from_array(y, chunks=1_100)
    )
    assert got.concept_index_ == ref.concept_index_
    assert got.privacy_report_ == ref.privacy_report_


# ----------------------------------------------------------------- out of core in one process
_PEAK = """
import resource, sys
from dpuq.cli import main
rc = main(sys.argv[1:])
print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(rc)
"""


def _cli_peak_kb(tmp_path, scores_file, out_name):
    out = tmp_path / out_name
    args = ["calibrate", "--scores", str(scores_file), "--column", "score"]
    args += ["--alpha", "0.1", "--epsilon", "1", "--seed", "3", "-o", str(out)]
    res = subprocess.run(
        [sys.executable, "-c", _PEAK, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"},
    )
    assert res.returncode == 0, res.stderr
    peak = int(res.stdout.split("PEAK_KB")[1].split()[0])
    return peak, json.loads(out.read_text())


def test_cli_calibrates_parquet_larger_than_its_memory_budget(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = 6_000_000  # 48 MB of float64 scores
    rng = np.random.default_rng(10)
    x = rng.uniform(size=n)
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"score": x}), big, row_group_size=1 << 20)
    small = tmp_path / "small.parquet"
    pq.write_table(pa.table({"score": x[:1000]}), small)
    # the chunked release equals the in-memory one (tested above on smaller data)
    src = ChunkedScores(lambda: iter(np.array_split(x, 6)), n=n)
    ref = dpuq.calibrate(src, alpha=0.1, epsilon=1.0, random_state=3)
    base_kb, _ = _cli_peak_kb(tmp_path, small, "small.json")
    peak_kb, record = _cli_peak_kb(tmp_path, big, "big.json")
    budget_kb = 24 * 1024  # half the data: a whole-file read could not fit
    assert peak_kb - base_kb < budget_kb, (peak_kb, base_kb)
    assert record["n"] == n
    assert record["threshold"] == ref.threshold


def test_chunked_csv_and_npy_readers(tmp_path):
    from dpuq.scale.readers import open_scores

    x = np.random.default_rng(11).uniform(size=3_001)
    np.save(tmp_path / "s.npy", x)
    (tmp_path / "s.csv").write_text(
        "id,score\n" + "".join(f"{i},{float(v)!r}\n" for i, v in enumerate(x))
    )
    ref = dpuq.calibrate(x, alpha=0.1, epsilon=1.0, random_state=1)
    for src in (
        open_scores(tmp_path / "s.npy", chunk_rows=500),
        open_scores(tmp_path / "s.csv", column="score", chunk_rows=500),
    ):
        assert dpuq.calibrate(src, alpha=0.1, epsilon=1.0, random_state=1) == ref
    with pytest.raises(ValueError, match="no column 'x'"):
        open_scores(tmp_path / "s.csv", column="x")
    (tmp_path / "bad.csv").write_text("score\n0.1\nnan\n0.3\n")
    with pytest.raises(ValueError, match="has non-finite"):
        open_scores(tmp_path / "bad.csv", column="score")


def test_bootstrap_cdf_estimators_dask_equal_memory(client):
    x = np.random.default_rng(12).beta(2, 5, size=8_000)
    dx = da.from_array(x, chunks=3_001)
    kw = {"epsilon": 1.0, "bounds": (0, 1), "n_resamples": 50, "random_state": 4}
    t = np.array([-0.5, 0.0, 0.7])
    for fn, extra in (
        (dpuq.private_bootstrap_cdf, {"statistic": "median"}),
        (dpuq.private_studentized_cdf, {}),
    ):
        ref, got = fn(x, t, **kw, **extra), fn(dx, t, **kw, **extra)
        np.testing.assert_array_equal(got.noisy, ref.noisy)
        assert got.privacy_report == ref.privacy_report
    ref = dpuq.private_bootstrap_cdf_grid(x, **kw, statistic="trimmed_mean")
    got = dpuq.private_bootstrap_cdf_grid(dx, **kw, statistic="trimmed_mean")
    np.testing.assert_array_equal(got.noisy, ref.noisy)
    with pytest.raises(ValueError, match="random reads across all chunks"):
        dpuq.private_bootstrap_cdf(dx, 0.0, epsilon=1.0, bounds=(0, 1), method="naive")


def test_parquet_example_releases_calibration_interval_and_class_thresholds(client, tmp_path):
    """The docs/how-to/scale.md example on a tiny partitioned Parquet data set: the same releases
    as in memory from the same rows."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(11)
    n = 6_000
    label = rng.integers(0, 3, size=n)
    frame = pd.DataFrame(
        {
            "score": rng.uniform(size=n) * (1 + label) / 3,
            "label": label,
            "stay": np.round(rng.gamma(2.0, 4.0, size=n).clip(0, 365), 1),
        }
    )
    dd.from_pandas(frame, npartitions=4).to_parquet(tmp_path / "calibration")
    assert len(list((tmp_path / "calibration").glob("*.parquet"))) == 4

    df = dd.read_parquet(tmp_path / "calibration")  # read on the workers
    kw = {"epsilon": 1.0, "random_state": 3}
    cal = dpuq.calibrate(df["score"], alpha=0.1, **kw)
    by_class = dpuq.calibrate_by_class(df["score"], df["label"], 3, alpha=0.1, **kw)
    ci = dpuq.private_confidence_interval(
        df["stay"], alpha=0.05, bounds=(0, 365), statistic="median", **kw
    )

    assert cal == dpuq.calibrate(frame["score"].to_numpy(), alpha=0.1, **kw)
    ref = dpuq.calibrate_by_class(
        frame["score"].to_numpy(), frame["label"].to_numpy(), 3, alpha=0.1, **kw
    )
    assert by_class == ref
    ref_ci = dpuq.private_confidence_interval(
        frame["stay"].to_numpy(), alpha=0.05, bounds=(0, 365), statistic="median", **kw
    )
    assert ci.interval == ref_ci.interval and ci.estimate == ref_ci.estimate


def test_point_estimates_on_dask_equal_memory(client):
    from dpuq.inference import estimates

    x = np.random.default_rng(13).beta(2, 5, size=7_000)
    dx = da.from_array(x, chunks=2_000)
    kw = {"epsilon": 1.0, "bounds": (0, 1), "random_state": 2}
    for fn in (
        estimates.private_mean,
        estimates.private_median,
        estimates.private_trimmed_mean,
        estimates.private_variance,
    ):
        assert fn(dx, **kw) == fn(x, **kw), fn.__name__
    ref = estimates.private_median_log_distribution(x, epsilon=1.0, bounds=(0, 1))
    got = estimates.private_median_log_distribution(dx, epsilon=1.0, bounds=(0, 1))
    np.testing.assert_array_equal(got[1], ref[1])
    kw = {"alpha": 0.1, "epsilon": 1.0, "bounds": (0, 1), "random_state": 2}
    ref = dpuq.normal_approximation_interval(x, **kw)
    assert dpuq.normal_approximation_interval(dx, **kw) == ref
    with pytest.raises(TypeError, match="not private"):  # reads resampled values directly
        dpuq.percentile_bootstrap_interval(dx, alpha=0.1)
