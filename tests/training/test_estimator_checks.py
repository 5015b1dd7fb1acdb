"""scikit-learn's estimator checks on DPClassifier and DPRegressor (no expected failures).

Small settings keep each fit short: the GDP accountant (the fast one) and a few epochs. The
accuracy checks of scikit-learn (``check_classifiers_train``: 0.83 on blobs; R² 0.5) run at
ε = 8, where DP-SGD's noise leaves the easy problems learnable.
"""

from __future__ import annotations

import logging
import warnings

import pytest
import torch
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpuq.training.estimators import DPClassifier, DPRegressor

SMALL = dict(
    epsilon=8.0, delta=1e-5, accountant="gdp", epochs=3, show_progress=False, random_state=0
)


@pytest.fixture(autouse=True)
def _quiet_and_one_thread():
    """No accountant chatter; one torch thread (tiny models, a shared machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
    torch.set_num_threads(before)


@parametrize_with_checks([DPClassifier(**SMALL), DPRegressor(**SMALL)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
