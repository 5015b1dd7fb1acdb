"""Fixtures shared by the conformal estimators' tests."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression


@pytest.fixture(scope="session")
def digits_model() -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    """Digits ``X, y`` and a logistic model fitted on the first 600 rows only.

    Rows from 600 on are the model's unseen data: calibrate and test on those.
    """
    X, y = load_digits(return_X_y=True)
    return X, y, LogisticRegression(max_iter=2000).fit(X[:600], y[:600])
