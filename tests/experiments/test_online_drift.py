"""The drifting-stream experiment of docs/how-to/online.md: the streams drift, the private tracker
keeps its coverage on them, and the figure and numbers are written."""

import json

import numpy as np
import pytest

from dpuq.experiments import online_drift


@pytest.mark.slow
def test_streams_drift_and_the_private_tracker_keeps_coverage():
    res = online_drift.run_stream("covariate shift", n_seeds=2)
    summ = res.summary()
    assert summ["fixed split (first 1,000)"]["coverage_late"] < 0.6  # the fixed threshold fails
    for eps in ("0.5", "1", "3"):
        assert abs(summ[f"private ε={eps}"]["coverage"] - 0.9) < 0.02
    assert summ["private ε=1"]["mean_size"] < 1.15 * summ["ACI (γ=0.005, non-private)"]["mean_size"]


def test_unknown_stream_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        online_drift.drifting_stream("seasonal")


def test_main_writes_figure_and_numbers(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(online_drift, "N_STREAM", 2000)
    monkeypatch.setattr(online_drift, "N_CALIBRATION", 300)
    monkeypatch.setattr(online_drift, "WINDOW", 200)
    online_drift.main(["--out", str(tmp_path), "--seeds", "1"])
    assert (tmp_path / "online_drift.png").stat().st_size > 10_000
    numbers = json.loads((tmp_path / "online_drift.json").read_text())
    assert set(numbers["results"]) == {"label shift", "covariate shift"}
    assert "| stream | method |" in capsys.readouterr().out
    assert np.isfinite(numbers["results"]["label shift"]["private ε=1"]["coverage"])
