"""What every dpuq estimator shares: scikit-learn's contract and randomness per release.

Estimators subclass :class:`sklearn.base.BaseEstimator` (``get_params``/``set_params``,
``clone``, ``repr``), validate nothing in ``__init__`` and store only released values in
fitted attributes. Randomness follows scikit-learn's convention, made strict for privacy:

- ``random_state`` is ``None`` or an int seed; a :class:`numpy.random.Generator` is refused
  (it would be copied by ``clone`` and pickled, and whoever holds a copy could replay its
  noise);
- each release derives a fresh generator from ``random_state``: ``None`` gives fresh OS
  entropy at every call, an int gives the same release at every call on the same data;
- no generator is cached in the fitted object, so changing ``random_state`` (e.g. back to
  ``None`` after a seeded run) takes effect at the next release, and pickles hold no
  generator;
- a release with an int seed is flagged ``seeded=True`` in its privacy report.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

from dpuq import _validation
from dpuq.mechanisms.randomness import check_estimator_random_state, check_random_state

__all__ = ["NotFittedError", "PrivateEstimator", "RepeatedReleaseWarning"]


class RepeatedReleaseWarning(UserWarning):
    """A second release from the same fitted estimator: it spends ε again.

    Decided from the estimator's own state only (whether it already holds a release), never
    from the data.
    """


class NotFittedError(_validation.NotFittedError, _SklearnNotFittedError):
    """The estimators' not-fitted error: both ``dpuq.NotFittedError`` and scikit-learn's."""


class PrivateEstimator(BaseEstimator):
    """Base of the private estimators: randomness per release and seeded reports."""

    def _release_rng(self) -> np.random.Generator:
        """A generator for one release, derived from ``random_state`` now (never cached)."""
        return check_random_state(check_estimator_random_state(self.random_state))

    def _seeded(self, report):
        """``report`` with ``seeded`` set to whether ``random_state`` is a seed (not None)."""
        if report is None:
            return report
        return dataclasses.replace(report, seeded=self.random_state is not None)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        # a generator (refused at release, but settable) is never written into a pickle
        return {
            k: None if isinstance(v, np.random.Generator | np.random.RandomState) else v
            for k, v in state.items()
        }
