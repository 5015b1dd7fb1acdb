"""select_and_train: DP-SGD hyperparameter selection end to end on tiny data (seconds)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from dpuq.privacy.accounting import rdp_curve, rdp_epsilon  # noqa: E402
from dpuq.training import select_and_train  # noqa: E402

torch.set_num_threads(1)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype("float32")
    return x, (x[:, 0] + 0.3 * x[:, 1] > 0).astype("int64")


def _model(c):
    torch.manual_seed(0)
    return torch.nn.Linear(2, 2)


CANDS = [
    {"epochs": 2, "batch_size": 60, "learning_rate": 0.5},
    {"epochs": 1, "batch_size": 30, "learning_rate": 1e-6},  # learns nothing
]


def test_end_to_end_total_budget_and_ledger(tmp_path):
    from dpuq.privacy.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("people", 5.0, 1e-5)
    res = select_and_train(
        _model, _data(), CANDS, epsilon=4.0, delta=1e-5, expected_runs=2, random_state=3,
        ledger=led, dataset="people",
    )  # fmt: skip
    rep = res.privacy_report
    assert rep.epsilon <= 4.0 and rep.delta == 1e-5 and rep.relation.value == "replace-one"
    assert abs(led.status("people").spent_epsilon - rep.epsilon) < 1e-9
    assert res.candidate in CANDS and isinstance(res.artifact, torch.nn.Module)
    assert rep.details["validation people"] == 60 and rep.details["training people"] == 240
    assert "runs" not in " ".join(str(v) for v in rep.details.values() if isinstance(v, int))


def test_bad_candidates_refused_before_charging(tmp_path):
    from dpuq.privacy.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    led.create_budget("people", 5.0, 1e-5)
    bad = [
        ({"batch_size": 30}, "epochs"),
        ({"epochs": 1, "batch_size": 30, "noise_multiplier": 1.0}, "noise_multiplier"),
        ({"epochs": 1, "batch_size": 10_000}, "batch_size"),
        ({"epochs": 0, "batch_size": 30}, "epochs"),
    ]
    for cand, word in bad:
        with pytest.raises(ValueError, match=word):
            select_and_train(_model, _data(), [cand], epsilon=2.0, delta=1e-5, ledger=led,
                             dataset="people")  # fmt: skip
    with pytest.raises(ValueError, match="dpsgd"):
        select_and_train(_model, _data(), CANDS, method="dpsgld", epsilon=2.0, delta=1e-5)
    with pytest.raises(ValueError, match="cannot be trained privately"):
        select_and_train(lambda c: torch.nn.Sequential(torch.nn.Linear(2, 2),
                                                       torch.nn.BatchNorm1d(2)),
                         _data(), CANDS, epsilon=2.0, delta=1e-5)  # fmt: skip
    x, y = _data()
    with pytest.raises(ValueError, match="labels outside"):
        select_and_train(_model, (x, y + 5), CANDS, epsilon=2.0, delta=1e-5, ledger=led,
                         dataset="people")  # fmt: skip
    with pytest.raises(ValueError, match="validation_data"):
        select_and_train(_model, (x, y), CANDS, epsilon=2.0, delta=1e-5,
                         relation="add/remove-one")  # fmt: skip
    assert led.status("people").spent_epsilon == 0.0


def test_replace_one_rdp_curve_is_a_valid_bound():
    """One full-batch Gaussian step: the exact replace-one RDP is λ (2C)²/(2σ²C²) = 2λ/σ²."""
    orders = np.array([1.5, 2.0, 4.0, 16.0])
    for sigma in (0.8, 2.0):
        bound = rdp_curve(1.0, sigma, 1, orders)
        assert np.all(bound >= 2 * orders / sigma**2 - 1e-12)
    # subsampled: converted ε is at least the (tighter) group-privacy RDP figure's order of size
    from dpuq.mechanisms.selection import rdp_to_epsilon

    o = np.array([1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64])
    e_curve = rdp_to_epsilon(o, rdp_curve(0.1, 1.5, 100, o), 1e-5)
    e_add_remove = rdp_epsilon(0.1, [1.5] * 100, 1e-5, relation="add/remove-one")
    assert e_add_remove < e_curve < 3 * e_add_remove


def test_add_remove_curve_matches_dp_accounting_public_accountant():
    """rdp_curve uses dp-accounting's sampled-Gaussian RDP; pin it to the public accountant."""
    import dp_accounting as dpa

    from dpuq.mechanisms.selection import rdp_to_epsilon

    o = np.array([1.5, 2, 3, 4, 8, 16, 32, 64])
    acc = dpa.rdp.RdpAccountant(orders=list(o))
    acc.compose(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(1.3)), 500)
    ours = rdp_to_epsilon(o, rdp_curve(0.02, 1.3, 500, o, relation="add/remove-one"), 1e-5)
    assert abs(ours - acc.get_epsilon(1e-5)) < 1e-9
