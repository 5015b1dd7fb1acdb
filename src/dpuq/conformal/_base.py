"""What the private conformal estimators share: parameter checks, randomness, stored state."""

from __future__ import annotations

import numpy as np

from dpuq._validation import NotFittedError, check_alpha
from dpuq.mechanisms.randomness import check_random_state


class _PrivateConformalBase:
    """Mixin for estimators with ``confidence_level``, ``random_state`` and ``threshold_``."""

    #: what ``_check_conformalized`` tells the user to call conformalize before
    _predict_verb = "predicting"

    def _alpha(self) -> float:
        cl = self.confidence_level
        if isinstance(cl, bool) or not isinstance(cl, int | float | np.floating):
            raise TypeError(f"confidence_level must be a number, got {cl!r}")
        if not 0.5 <= float(cl) < 1.0:
            raise ValueError(f"confidence_level must be in [0.5, 1), got {cl!r}")
        return check_alpha(1.0 - float(cl), "1 - confidence_level")

    def _rng(self) -> np.random.Generator:
        if not hasattr(self, "_rng_"):
            self._rng_ = check_random_state(self.random_state)
        return self._rng_

    def _check_conformalized(self) -> None:
        if not hasattr(self, "threshold_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not conformalized yet: call "
                f"conformalize(X_cal, y_cal) before {self._predict_verb}"
            )

    def save_release(self, path, *, overwrite: bool = False) -> None:
        """Write the released state (threshold, settings, privacy report; not the model) to
        ``path`` in the JSON format of ``dpuq calibrate -o``, atomically; ``dpuq predict``
        reads it. Without ``overwrite`` an existing file is an error."""
        from dpuq.conformal.release_io import estimator_record, write_calibration

        write_calibration(path, estimator_record(self), overwrite=overwrite)

    @classmethod
    def load_release(cls, path, estimator):
        """The estimator wrapping ``estimator`` (the model) in the released state read from
        ``path`` (written by :meth:`save_release` or ``dpuq calibrate -o``); no privacy cost."""
        from dpuq.conformal.release_io import read_calibration, restore_estimator

        return restore_estimator(cls, read_calibration(path, "path"), estimator)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_rng_", None)  # generator state is not a released value
        return state
