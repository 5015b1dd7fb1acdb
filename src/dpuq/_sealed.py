"""A release's hidden work, sealed: nothing it prints, logs or warns gets out, and the global
random states are as they were before.

Inside a release, code that dpuq does not own runs on the data or on hidden draws: a user's
``run`` or ``model_fn`` (once per run of a private selection, whose number of runs is secret),
a third-party accountant that logs "failed to converge" on every call, a model that warns. Any
of it could count what must stay hidden: a line per run on stderr, a record per run in a log,
a warning, a step of torch's global generator per model built. :func:`sealed` closes these
channels for the duration of the hidden work:

- stdout and stderr (Python level) go to a buffer that is dropped;
- logging is disabled (every logger, every level, custom levels above ``CRITICAL`` too:
  records are never created);
- warnings are ignored;
- the global random states (Python's ``random``, NumPy's legacy ``np.random``, torch's CPU
  generator and its initialised CUDA generators, when torch is imported) are saved on entry
  and restored on exit (CUDA generators that start inside are reseeded as a lazy start
  seeds them), so what the release leaves in them does not depend on the data or on
  the hidden draws. Inside, :func:`reseed_global_states` starts each hidden run from a fresh
  seed spawned from the release's generator, so that runs are independent draws even for
  code that uses the global generators (seeded releases stay reproducible).

Not covered: writes that bypass Python's ``sys.stdout``/``sys.stderr`` (C code writing to
file descriptors 1 and 2, ``os.write``, ``sys.__stdout__``), and the wall time (said in the
privacy reports' "not covered" list).
"""

from __future__ import annotations

import contextlib
import io
import logging
import random
import sys
import warnings
from collections.abc import Iterator

import numpy as np

__all__ = ["child_generator", "reseed_global_states", "sealed", "silenced"]


def _global_states() -> list:
    states: list = [("random", random.getstate()), ("numpy", np.random.get_state())]  # noqa: NPY002
    torch = sys.modules.get("torch")
    if torch is not None:
        states.append(("torch", torch.get_rng_state()))
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_initialized():
            states.append(("cuda", cuda.get_rng_state_all()))
        else:  # CUDA may start inside: its generators are then seeded as at a lazy start
            states.append(("cuda-unstarted", torch.initial_seed()))
    return states


def _restore(states: list) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and all(kind != "torch" for kind, _ in states):
        # imported inside: a fresh seed from the OS, as torch takes at import (not the last
        # reseed inside, nor whether that came before the import or after)
        torch.seed()
    for kind, seed in states:
        cuda = getattr(torch, "cuda", None)
        if kind == "cuda-unstarted" and cuda is not None and cuda.is_initialized():
            cuda.manual_seed_all(seed)  # started inside: its draws (one per run) forgotten
    for kind, state in states:
        if kind == "random":
            random.setstate(state)
        elif kind == "numpy":
            np.random.set_state(state)  # noqa: NPY002
        elif kind == "torch":
            sys.modules["torch"].set_rng_state(state)
        elif kind == "cuda":
            sys.modules["torch"].cuda.set_rng_state_all(state)


def child_generator(rng: np.random.Generator) -> np.random.Generator:
    """An independent child of ``rng`` (``Generator.spawn``, which leaves ``rng``'s own stream
    as it was); for a generator without a spawnable seed sequence (one built on a legacy
    ``RandomState``'s bit generator), a generator seeded by one draw of ``rng``.

    >>> child = child_generator(np.random.default_rng(0))
    >>> int(child.integers(100)) == int(child_generator(np.random.default_rng(0)).integers(100))
    True
    >>> legacy = np.random.Generator(np.random.RandomState(0)._bit_generator)
    >>> isinstance(child_generator(legacy), np.random.Generator)
    True
    """
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError):  # a generator without a seed sequence
        return np.random.default_rng(rng.integers(2**63))


def reseed_global_states(rng: np.random.Generator) -> None:
    """Seed the global random states (``random``, ``np.random``, torch's when imported) from a
    child of ``rng``, leaving ``rng``'s own stream as it was (``Generator.spawn``).

    Called inside :func:`sealed` before each hidden run: the runs of a private selection must
    be independent draws, but a ``model_fn`` that initialises its weights from torch's global
    generator would otherwise start run ``j`` from the ``j``-th stretch of a stream whose start
    anyone may know (``torch.manual_seed(0)`` in a script), so the released model would tell
    which run was the best (a lower bound on the secret number of runs).

    >>> import random
    >>> with sealed():
    ...     reseed_global_states(np.random.default_rng(0))
    ...     a = random.random()
    ...     reseed_global_states(np.random.default_rng(0))
    ...     b = random.random()
    >>> a == b
    True
    """
    seed = int(child_generator(rng).integers(2**63))
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


@contextlib.contextmanager
def sealed() -> Iterator[None]:
    """Run a release's hidden work with no output and no trace in global random states.

    >>> import random
    >>> before = random.getstate()
    >>> with sealed():
    ...     print("one line per hidden run")
    ...     _ = random.random()
    >>> random.getstate() == before
    True
    """
    states = _global_states()
    try:
        with silenced():
            yield
    finally:
        _restore(states)


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Swallow what code we call could emit: warnings, stdout, stderr, log records.

    The output half of :func:`sealed`, also used alone around a user's statistic
    (:mod:`dpuq.inference.general`). ``logging.disable`` is process-wide: log records of other
    threads are dropped too meanwhile (the previous level is restored afterwards).

    >>> with silenced():
    ...     print("not shown")
    """
    previous_disable = logging.root.manager.disable
    sink = io.StringIO()
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(sink),
            contextlib.redirect_stderr(sink),
        ):
            warnings.simplefilter("ignore")
            logging.disable(sys.maxsize)  # every level: custom levels above CRITICAL too
            yield
    finally:
        logging.disable(previous_disable)
