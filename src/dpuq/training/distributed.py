"""Private training across processes: ``train_classifier(..., world_size=k)``.

:func:`dpuq.training.train_classifier` with ``world_size=k > 1`` starts ``k`` local processes
(``torch.multiprocessing``, start method "spawn"), joins them in one ``torch.distributed``
process group (gloo on CPU, NCCL on CUDA devices), trains in every one of them and returns
rank 0's model and report. Under ``torchrun`` (several machines), the process group already
exists: every rank calls ``train_classifier(..., world_size=dist.get_world_size())`` itself
(docs/how-to/training.md, "Several processes or machines").

Privacy argument (the accounting is that of one process with the global batch):

- **sampling**: the ``N`` examples are split into ``k`` fixed shards (example ``i`` on rank
  ``i mod k``); each rank includes each example of its shard with probability ``p = B / N``,
  with its own generator (seeded from the caller's seed and the rank: independent streams).
  Every example is thus included independently with probability ``p``: the union of the
  ranks' batches is exactly a Poisson sample of rate ``p`` from the ``N`` examples, the
  sampling of single-process DP-SGD. Every rank steps every step, empty batches included
  (no rank skips a step, so the collective calls stay matched);
- **clipping**: each rank clips its own per-example gradients to ``C`` (Opacus), so the global
  sum of clipped gradients has the sensitivity of one process (``C``, ``2C`` for replace-one);
- **noise**: Opacus' :class:`~opacus.optimizers.DistributedDPOptimizer` adds the Gaussian
  noise ``N(0, σ² C² I)`` on rank 0 only, before the all-reduce: the summed update is
  ``(Σ_batch clip(g_i) + noise) / B``, one noise draw per global step, exactly the update of
  single-process DP-SGD (DP-SGLD: ``σ_t`` from the global ``B`` and ``N``). The noise is
  Opacus' floating-point Gaussian, as in one process
  (:data:`dpuq.training.privacy.FLOATING_POINT_NOTE`);
- **accounting**: the same sampling rate ``p = B/N``, the same ``σ_t`` and the same number of
  steps, hence the same ε (computed identically on every rank from public quantities).

The model is broadcast from rank 0 before training (Opacus'
``DifferentiallyPrivateDistributedDataParallel``) and every rank applies the same all-reduced
update, so the released weights are identical on every rank; this is checked at the end (a
digest of the weights gathered from every rank), and only rank 0 charges the ledger.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import os
import pickle
import socket
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "ProcessGroup",
    "check_world_size",
    "distributed_optimizers",
    "join_group",
    "launch",
    "resolve_device",
    "shard_batches",
    "to_device",
]


def resolve_device(device) -> torch.device:
    """``"auto"``: CUDA when available, else the CPU; otherwise ``torch.device(device)``.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}"
        ) from exc
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: CUDA is not available on this machine")
    return dev


def to_device(model: torch.nn.Module, x: torch.Tensor, device=None):
    """Model and inputs on ``device`` (default: where the model's parameters are), each moved
    once; for prediction.

    Examples
    --------
    >>> net, x = to_device(torch.nn.Linear(2, 1), torch.zeros(3, 2), "auto")
    >>> x.device == next(net.parameters()).device
    True
    """
    if device is None:
        first = next(model.parameters(), None)
        dev = first.device if first is not None else torch.device("cpu")
    else:
        dev = resolve_device(device)
    return model.to(dev), x.to(dev)


def check_world_size(world_size) -> int:
    """``world_size``: an int >= 1 (the number of training processes)."""
    if isinstance(world_size, bool) or not isinstance(world_size, int | np.integer):
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    if int(world_size) < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    return int(world_size)


@dataclass(frozen=True)
class ProcessGroup:
    """This process's place in an initialised ``torch.distributed`` group."""

    rank: int
    world_size: int

    def generator(self, base: torch.Generator) -> torch.Generator:
        """This rank's generator: seeded from one draw of ``base`` (the caller's seed, the same
        on every rank) and the rank, so the ranks' streams are distinct."""
        draw = int(torch.randint(2**62, (1,), generator=base))
        seed = np.random.SeedSequence([draw, self.rank]).generate_state(1, np.uint64)[0]
        g = torch.Generator(device=base.device)
        g.manual_seed(int(seed) & (2**63 - 1))
        return g

    def check_identical(self, model: torch.nn.Module) -> None:
        """Raise unless every rank holds the same weights (a digest of the state dict)."""
        h = hashlib.sha256()
        for key, value in model.state_dict().items():
            h.update(key.encode())
            h.update(value.detach().cpu().contiguous().numpy().tobytes())
        digests: list = [None] * self.world_size
        torch.distributed.all_gather_object(digests, h.hexdigest())
        if len(set(digests)) != 1:  # pragma: no cover - a broken collective
            raise RuntimeError("distributed training: the ranks' final weights differ")


def join_group(world_size: int) -> ProcessGroup | None:
    """The current process group when ``world_size > 1`` (it must exist and have that size:
    :func:`launch` or ``torchrun`` made it); None for one process."""
    if world_size == 1:
        return None
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("world_size > 1 needs an initialised torch.distributed process group")
    if dist.get_world_size() != world_size:
        raise ValueError(
            f"world_size={world_size} but the process group has {dist.get_world_size()} ranks"
        )
    return ProcessGroup(dist.get_rank(), world_size)


def in_process_group() -> bool:
    dist = torch.distributed
    return bool(dist.is_available() and dist.is_initialized())


def shard_batches(tensors, n: int, sample_rate: float, steps: int, gen, group: ProcessGroup):
    """This rank's Poisson batches: example ``i`` of its shard ``rank, rank + k, ...`` enters
    each step with probability ``sample_rate``; one batch per step, even an empty one."""
    x, y = tensors
    shard = torch.arange(group.rank, n, group.world_size)
    for _ in range(steps):
        mask = torch.rand(shard.numel(), generator=gen) < sample_rate
        index = shard[mask].to(x.device)
        yield x[index], y[index]


def distributed_optimizers():
    """DP-SGD and DP-SGLD on Opacus' :class:`~opacus.optimizers.DistributedDPOptimizer`:
    noise on rank 0 only, then an all-reduce of the gradients (sum, divided by the ranks)."""
    from opacus.optimizers import DistributedDPOptimizer

    from dpuq.training.optimizer import DPSGDOptimizer, DPSGLDOptimizer

    class DistributedDPSGDOptimizer(DPSGDOptimizer, DistributedDPOptimizer):
        """:class:`DPSGDOptimizer` across ranks (``expected_batch_size``: the global B)."""

        def __init__(self, optimizer, *, expected_batch_size, **kwargs) -> None:
            super().__init__(optimizer, expected_batch_size=expected_batch_size, **kwargs)
            # each rank divides by B / k, the all-reduce sums and divides by k: (Σ + noise)/B
            self.expected_batch_size = expected_batch_size / self.world_size

    class DistributedDPSGLDOptimizer(DPSGLDOptimizer, DistributedDPOptimizer):
        """:class:`DPSGLDOptimizer` across ranks: σ_t from the global B and N."""

        def __init__(self, optimizer, *, expected_batch_size, **kwargs) -> None:
            super().__init__(optimizer, expected_batch_size=expected_batch_size, **kwargs)
            self.expected_batch_size = expected_batch_size / self.world_size

    return DistributedDPSGDOptimizer, DistributedDPSGLDOptimizer


def wrap_model(model: torch.nn.Module) -> torch.nn.Module:
    """Opacus' DPDDP: broadcast rank 0's weights to every rank (the gradients are reduced by
    the optimizer, after the noise)."""
    from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP

    return DPDDP(model)


# ------------------------------------------------------------------ k local processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank, train, call, world_size, port, threads, out_dir) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(threads)
    dev = resolve_device(call["device"])
    backend = "nccl" if dev.type == "cuda" else "gloo"
    if dev.type == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
    torch.distributed.init_process_group(backend, rank=rank, world_size=world_size)
    try:
        # torch.multiprocessing hands every rank the parent's tensors in shared memory: each
        # rank trains its own copy of the model (the data stay shared, read only)
        call = {**call, "model": copy.deepcopy(call["model"])}
        if rank != 0:  # only rank 0 charges the ledger
            call.update(ledger=None, dataset=None)
        model, report = train(**call)
        if rank == 0:
            same = model is call["model"]
            result = {"same": same, "model": model.state_dict() if same else model}
            torch.save({**result, "report": report}, os.path.join(out_dir, "result.pt"))
    except BaseException as exc:  # handed to the parent, which re-raises it
        with open(os.path.join(out_dir, f"error-{rank}.pkl"), "wb") as f:
            pickle.dump(exc, f)
        raise
    finally:
        torch.distributed.destroy_process_group()


def launch(train, call: dict, world_size: int):
    """Run ``train(**call)`` in ``world_size`` local processes; return rank 0's model and
    report.

    The settings are validated here first (:func:`dpuq.training.settings.resolve_settings`),
    so a bad argument is refused before any process starts. The user's model is trained in
    place as in one process (rank 0's weights are loaded into it); an averaged model is
    returned as rank 0 made it. An exception in a rank is re-raised here unchanged.
    """
    import tempfile

    import torch.multiprocessing as mp

    from dpuq.training.settings import resolve_settings

    if call["method"] == "sgd":
        raise ValueError("world_size > 1 needs a private method ('dpsgd' or 'dpsgld')")
    wanted = inspect.signature(resolve_settings).parameters
    resolve_settings(**{k: v for k, v in call.items() if k in wanted})
    resolve_device(call["device"])
    threads = max(1, torch.get_num_threads() // world_size)
    with tempfile.TemporaryDirectory(prefix="dpuq-ddp-") as out:
        args = (train, call, world_size, _free_port(), threads, out)
        try:
            mp.start_processes(_worker, args=args, nprocs=world_size, start_method="spawn")
        except Exception as failure:
            for rank in range(world_size):  # the lowest rank's own exception, unchanged
                path = os.path.join(out, f"error-{rank}.pkl")
                if os.path.exists(path):
                    with open(path, "rb") as f:
                        raise pickle.load(f) from None
            raise RuntimeError(f"distributed training failed: {failure}") from None
        result = torch.load(os.path.join(out, "result.pt"), weights_only=False)
    model = result["model"]
    if result["same"]:
        call["model"].load_state_dict(model)
        model = call["model"].eval()
    return model, result["report"]
