import tracemalloc

import numpy as np
import pytest


def pytest_ignore_collect(collection_path, config):
    # `--doctest-modules` would import every conftest.py as a module named `conftest`; the
    # folders' conftest files share that name, so they are loaded as plugins only.
    return True if collection_path.name == "conftest.py" else None


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def _peak_bytes(fn) -> int:
    """Peak bytes traced while ``fn()`` runs (tracemalloc sees numpy's allocations)."""
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


@pytest.fixture
def peak_bytes():
    """:func:`_peak_bytes`: a call's peak traced memory, for the tests of allocation caps."""
    return _peak_bytes
