import numpy as np
import pytest


def pytest_ignore_collect(collection_path, config):
    # `--doctest-modules` would import every conftest.py as a module named `conftest`; the
    # folders' conftest files share that name, so they are loaded as plugins only.
    return True if collection_path.name == "conftest.py" else None


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
