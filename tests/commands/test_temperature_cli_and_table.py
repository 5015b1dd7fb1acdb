"""`dpuq temperature`, the demo's private temperature scaling and the Table 1 experiment."""

import json

import numpy as np
import pytest

from dpuq.cli import main


@pytest.fixture
def heldout(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 600)
    z = rng.normal(size=(600, 5)) * 1.5
    z[np.arange(600), y] += 2.0
    np.save(tmp_path / "logits.npy", 3.0 * z)  # overconfident: T > 1 is right
    np.savetxt(tmp_path / "labels.csv", y, fmt="%d")
    e = np.exp(3.0 * z - (3.0 * z).max(1, keepdims=True))
    np.save(tmp_path / "probs.npy", e / e.sum(1, keepdims=True))
    return tmp_path


class TestTemperatureCommand:
    def test_release_from_logits(self, heldout, capsys):
        out = heldout / "t.json"
        code = main(["temperature", "--logits", str(heldout / "logits.npy"), "--labels",
                     str(heldout / "labels.csv"), "--epsilon", "1", "-o", str(out)])  # fmt: skip
        assert code == 0
        record = json.loads(out.read_text())
        assert record["format"] == "dpuq-temperature"
        assert 1.5 < record["temperature"] < 6.0
        assert record["privacy"]["relation"] == "replace-one"
        assert record["privacy"]["epsilon"] == 1.0 and record["seeded"] is False
        assert "released temperature" in capsys.readouterr().out

    def test_probs_and_seed_reproducible(self, heldout, capsys):
        temps = []
        for name in ("a.json", "b.json"):
            with pytest.warns(UserWarning, match="--seed makes the noise reproducible"):
                code = main(["temperature", "--probs", str(heldout / "probs.npy"), "--labels",
                             str(heldout / "labels.csv"), "--epsilon", "1", "--seed", "3",
                             "--loss", "brier", "-o", str(heldout / name)])  # fmt: skip
            assert code == 0
            record = json.loads((heldout / name).read_text())
            assert record["seeded"] is True
            temps.append(record["temperature"])
        assert temps[0] == temps[1]
        assert "seeded" in capsys.readouterr().out

    @pytest.mark.parametrize(
        "extra, match",
        [
            ([], "exactly one of --logits and --probs"),
            (["--logits", "L", "--probs", "P"], "exactly one"),
            (["--logits", "L", "--grid", "2", "1", "10"], "--grid"),
        ],
    )
    def test_bad_input_one_line(self, heldout, capsys, extra, match):
        extra = [str(heldout / "logits.npy") if a == "L" else a for a in extra]
        extra = [str(heldout / "probs.npy") if a == "P" else a for a in extra]
        code = main(["temperature", "--labels", str(heldout / "labels.csv"), "--epsilon", "1",
                     "-o", str(heldout / "x.json"), *extra])  # fmt: skip
        assert code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and match in err[0]
        assert not (heldout / "x.json").exists()


def test_table_one_smoke(tmp_path):
    """Every row of the fair Table 1 on a tiny digits setting: metrics, privacy, outputs."""
    pytest.importorskip("opacus")
    import torch

    from dpuq.experiments import dpsgld as mod

    torch.set_num_threads(1)
    setting = mod.Setting(**{**mod.asdict(mod.QUICK), "n_train": 600, "n_heldout": 300,
                             "epochs": 1, "n_average": 3, "n_set_splits": 1})  # fmt: skip
    rows = mod.run_seed(setting, 0, log=lambda s: None)
    names = {r["row"] for r in rows}
    assert names == set(mod._order(setting))
    for r in rows:
        assert 0.0 <= r["ece"] <= 1.0 and r["nll"] > 0 and 0 <= r["brier"] <= 2
        if r["private"]:
            assert r["relation"] == "replace-one"
            assert r["epsilon_train"] <= setting.epsilon + 1e-9
        if r["temperature_scaled"]:
            plain = next(
                p for p in rows
                if p["row"] == r["row"].removesuffix(" + private TS") and p["seed"] == r["seed"]
            )  # fmt: skip
            assert r["accuracy"] == plain["accuracy"]  # scaling never changes the argmax
            assert r["epsilon_ts"] == setting.temperature_epsilon
    text = mod.table(rows, setting) + mod.headline(rows, setting)
    assert "DP-SGLD + posterior averaging + private TS" in text
    mod.plot(rows, tmp_path / "rel.png", setting)
    assert (tmp_path / "rel.png").stat().st_size > 0


@pytest.mark.slow
def test_reproduce_dpsgld_quick(tmp_path):
    pytest.importorskip("opacus")
    out = tmp_path / "t1"
    assert main(["reproduce", "dpsgld", "--quick", "--out", str(out), "--no-progress"]) == 0
    for name in ("dpsgld.json", "dpsgld_table.md", "dpsgld_reliability.png"):
        assert (out / name).stat().st_size > 0


class TestDemoTemperatureScaling:
    def test_scaled_rows_and_one_pipeline_figure(self):
        pytest.importorskip("opacus")
        from dpuq.experiments.demo import DemoConfig, run_demo
        from dpuq.experiments.demo_results import privacy_text

        config = DemoConfig(quick=True, seed=2, n_splits=5, epochs=1, temperature_scaling=True,
                            temperature_epsilon=1.0, n_temperature=200)  # fmt: skip
        result = run_demo(config, show_progress=False)
        names = [m.name for m in result.models]
        assert "DP-SGD + private TS" in names and "DP-SGLD + private TS" in names
        assert result.n_train == 1797 - 1000 - 200
        by_name = {m.name: m for m in result.models}
        for base in ("DP-SGD", "DP-SGLD"):
            scaled = by_name[base + " + private TS"]
            np.testing.assert_array_equal(scaled.probs.argmax(1), by_name[base].probs.argmax(1))
            assert scaled.privacy.relation == "replace-one"
            assert scaled.privacy.epsilon == max(by_name[base].privacy.epsilon, 1.0)
        for p in result.pipelines:
            if p.combined is not None:
                assert p.combined.relation == "replace-one"
                assert p.combined.epsilon == pytest.approx(3.0)
        text = " ".join(privacy_text(result))
        assert "one neighbouring relation, replace-one" in text
        assert "Temperature scaling (DP-SGD + private TS)" in text
