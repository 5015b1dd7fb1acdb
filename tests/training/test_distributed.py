"""Private training across processes and devices (issue 38): two gloo processes on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ddp_ranks import data, run_rank
from dpuq.training import predict_proba, train_classifier
from dpuq.training.distributed import ProcessGroup, resolve_device, shard_batches

KW = {
    "method": "dpsgd",
    "epsilon": 2.0,
    "delta": 1e-5,
    "epochs": 3,
    "batch_size": 60,
    "learning_rate": 0.5,
    "random_state": 0,
    "show_progress": False,
}


def test_shards_make_one_poisson_sample_of_the_global_rate():
    """The union of the ranks' batches: each example enters with probability p, the ranks'
    streams differ (a shared stream would tie example i of rank 0 to example i of rank 1)."""
    n, p, steps, k = 300, 0.2, 1500, 2
    base = torch.Generator().manual_seed(5)
    state = base.get_state()
    hits = np.zeros(n)
    masks = []
    for rank in range(k):
        base.set_state(state)  # every rank starts from the caller's same seed
        group = ProcessGroup(rank, k)
        gen = group.generator(base)
        x = torch.arange(n, dtype=torch.float32)[:, None]
        seen = []
        for xb, _ in shard_batches((x, torch.zeros(n)), n, p, steps, gen, group):
            idx = xb[:, 0].long().numpy()
            assert np.all(idx % k == rank)  # its own shard only
            hits[idx] += 1
            seen.append(np.isin(np.arange(rank, n, k), idx))
        masks.append(np.array(seen))
    rate = hits / steps
    assert abs(rate.mean() - p) < 0.005 and np.all(
        np.abs(rate - p) < 5 * np.sqrt(p * (1 - p) / steps)
    )
    # independence across ranks: example j of rank 0 vs example j of rank 1
    both = (masks[0][:, :100] & masks[1][:, :100]).mean()
    assert abs(both - p * p) < 0.01


@pytest.mark.slow  # two spawned processes: 1-2 min on a loaded 2-core machine
def test_two_processes_report_the_epsilon_of_one_and_train():
    X, y = data()
    one_model, one = train_classifier(torch.nn.Linear(5, 2), (X, y), **KW)
    two_model, two = train_classifier(torch.nn.Linear(5, 2), (X, y), world_size=2, **KW)
    assert two.epsilon == one.epsilon  # same rate, σ and steps: the same accounting
    assert two.details["steps"] == one.details["steps"]
    acc = [np.mean(predict_proba(m, X).argmax(1) == y) for m in (one_model, two_model)]
    assert acc[1] > 0.85 and abs(acc[0] - acc[1]) < 0.06


@pytest.mark.slow
def test_torchrun_style_ranks_release_identical_weights(tmp_path):
    """Ranks started by the caller (as under torchrun), with different initial weights:
    every rank ends with the same weights and the same ε."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kw = {**KW, "method": "dpsgld", "temperature": 1.0, "learning_rate": 0.05}
    kw.pop("epsilon"), kw.pop("delta")
    kw.update(epsilon=4.0, delta=1e-5)
    mp.start_processes(run_rank, args=(2, port, str(tmp_path), kw), nprocs=2, start_method="spawn")
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt") for r in range(2))
    assert r0["epsilon"] == r1["epsilon"]
    for key, value in r0["state"].items():
        assert torch.equal(value, r1["state"][key])
    start = torch.nn.Linear(5, 2)
    torch.manual_seed(0)
    start = torch.nn.Linear(5, 2)
    assert not torch.equal(start.weight, r0["state"]["weight"])  # it did train


def test_bad_world_size_and_sgd_are_refused_before_any_process():
    X, y = data(50)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="world_size"):
            train_classifier(torch.nn.Linear(5, 2), (X, y), world_size=bad, **KW)
    with pytest.raises(ValueError, match="private method"):
        train_classifier(
            torch.nn.Linear(5, 2), (X, y), world_size=2, **{**KW, "method": "sgd", "epsilon": None}
        )
    with pytest.raises(ValueError, match="epochs"):  # the settings, checked in the parent
        train_classifier(torch.nn.Linear(5, 2), (X, y), world_size=2, **{**KW, "epochs": -1})


def test_device_auto_is_the_cpu_here_and_changes_nothing():
    if torch.cuda.is_available():  # pragma: no cover - this suite runs on CPU machines
        pytest.skip("checks the CPU fallback")
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device("cuda")
    X, y = data(200)
    torch.manual_seed(0)
    a, ra = train_classifier(torch.nn.Linear(5, 2), (X, y), **KW)
    torch.manual_seed(0)
    b, rb = train_classifier(torch.nn.Linear(5, 2), (X, y), device="auto", **KW)
    assert ra.epsilon == rb.epsilon and torch.equal(a.weight, b.weight)
    np.testing.assert_array_equal(predict_proba(a, X, device="auto"), predict_proba(a, X))


@pytest.mark.slow
def test_empty_local_batches_keep_the_ranks_in_step():
    """p = 0.05 on shards of 20: many steps have an empty batch on one rank; every rank still
    steps (no collective is left unmatched) and ε is that of one process."""
    X, y = data(40)
    kw = {**KW, "batch_size": 2, "epochs": 1, "learning_rate": 0.1, "iterate_averaging": 0}
    one = train_classifier(torch.nn.Linear(5, 2), (X, y), **kw)[1]
    two = train_classifier(torch.nn.Linear(5, 2), (X, y), world_size=2, **kw)[1]
    assert two.epsilon == one.epsilon and two.details["steps"] == one.details["steps"] == 20
