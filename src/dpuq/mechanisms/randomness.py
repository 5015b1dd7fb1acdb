"""Random number generators for mechanisms.

``random_state=None`` (the default everywhere) draws fresh OS entropy: use it for real
releases. An int or a :class:`numpy.random.Generator` makes a run reproducible: use it for
experiments and tests only, since anyone who knows the seed can undo the noise.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["RandomState", "check_random_state"]

RandomState = None | int | np.random.Generator


def check_random_state(random_state: RandomState = None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        ``None`` seeds a new generator from OS entropy (releases); an int seeds it
        reproducibly (experiments); a Generator is used as is.

    Examples
    --------
    >>> rng = check_random_state(0)
    >>> float(rng.random()) == float(check_random_state(0).random())
    True
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, a non-negative int or a numpy.random.Generator, "
        f"got {type(random_state).__name__}"
    )
