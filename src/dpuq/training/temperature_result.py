"""What private temperature scaling releases: the temperature and its privacy report.

Released values only (what
:func:`dpuq.training.temperature.private_temperature_scaling` returns); usable directly as
the temperature.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from dpuq.privacy.report import PrivacyReport

__all__ = ["TemperatureScalingResult"]


class TemperatureScalingResult(NamedTuple):
    """What :func:`private_temperature_scaling` releases: ``T, report = ...``.

    The result is also usable directly as the temperature: ``float(result)``,
    ``np.asarray(result)``, ``logits / result`` (numpy arrays, torch tensors, numbers),
    ``result * x`` and every dpuq argument that takes a temperature (it counts as a real
    number: :class:`numbers.Real`). Unpacking ``T, report = result`` works as before.

    Attributes
    ----------
    temperature : float
        The released temperature: use ``softmax(logits / temperature)``.
    privacy_report : PrivacyReport
        ε-DP under replace-one for the held-out people (δ = 0).

    Examples
    --------
    >>> from dpuq.privacy.report import PrivacyReport
    >>> result = TemperatureScalingResult(2.0, PrivacyReport("example", epsilon=1.0))
    >>> float(result), (np.array([[4.0, 2.0]]) / result).tolist()
    (2.0, [[2.0, 1.0]])
    """

    temperature: float
    privacy_report: PrivacyReport

    # numpy defers `array / result` to __rtruediv__ below instead of broadcasting over a tuple
    __array_ufunc__ = None

    def __float__(self) -> float:
        return float(self.temperature)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(float(self.temperature), dtype=dtype)

    def __truediv__(self, other):
        return float(self.temperature) / other

    def __rtruediv__(self, other):
        return other / float(self.temperature)

    def __mul__(self, other):
        return float(self.temperature) * other

    def __rmul__(self, other):
        return other * float(self.temperature)


# a released temperature is a real number wherever dpuq checks for one (its `_as_float`)
numbers.Real.register(TemperatureScalingResult)
