"""The seal of a release's hidden work (dpuq._sealed): global random states as they were."""

from __future__ import annotations

import types

from dpuq._sealed import sealed


class _FakeCuda:
    """torch.cuda's generator calls, on a machine without a GPU: a counter per device."""

    def __init__(self) -> None:
        self.started, self.offset = False, None

    def is_initialized(self) -> bool:
        return self.started

    def draw(self, seed: int) -> None:  # a draw on the GPU: starts CUDA, steps its generator
        if not self.started:
            self.started, self.offset = True, [seed, 0]
        self.offset[1] += 1

    def get_rng_state_all(self):
        return list(self.offset)

    def set_rng_state_all(self, state) -> None:
        self.offset = list(state)

    def manual_seed_all(self, seed: int) -> None:
        self.offset = [seed, 0]


def _fake_torch():
    torch = types.SimpleNamespace(cuda=_FakeCuda(), state=7)
    torch.get_rng_state = lambda: torch.state
    torch.set_rng_state = lambda s: setattr(torch, "state", s)
    torch.initial_seed = lambda: 42
    torch.manual_seed = lambda s: setattr(torch, "state", s)
    return torch


def test_cuda_started_inside_the_seal_keeps_no_count_of_the_runs(monkeypatch):
    """Review 34: CUDA started by a hidden run (a model moved to the GPU) kept a generator
    stepped once per run, so its state after the release told the secret number of runs."""
    after = []
    for runs in (1, 4):
        torch = _fake_torch()
        monkeypatch.setitem(__import__("sys").modules, "torch", torch)
        with sealed():
            for _ in range(runs):
                torch.cuda.draw(torch.initial_seed())
        after.append(torch.cuda.get_rng_state_all())
    assert after[0] == after[1] == [42, 0]  # as a lazy start would leave it, whatever the runs


def test_cuda_started_before_the_seal_is_restored(monkeypatch):
    torch = _fake_torch()
    monkeypatch.setitem(__import__("sys").modules, "torch", torch)
    torch.cuda.draw(5)
    torch.cuda.draw(5)
    with sealed():
        torch.cuda.draw(5)
    assert torch.cuda.get_rng_state_all() == [5, 2]
