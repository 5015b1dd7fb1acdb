"""Random number generators for mechanisms.

``random_state=None`` (the default everywhere) draws fresh OS entropy: use it for real
releases. An int or a :class:`numpy.random.Generator` makes a run reproducible: use it for
experiments and tests only, since anyone who knows the seed can undo the noise.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = [
    "RandomState",
    "check_estimator_random_state",
    "check_random_state",
    "mark_seeded",
    "simulated_sorted_uniforms",
]

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


def check_estimator_random_state(random_state, name: str = "random_state") -> int | None:
    """Check an estimator's ``random_state``: ``None`` or a non-negative int, never a Generator.

    Estimators keep their parameters (``get_params``, ``clone``, pickles): a Generator stored
    there would carry its state into every copy and pickle, and whoever holds one could replay
    the noise. So estimators take a seed (an int) or ``None`` and derive a fresh generator at
    each release (scikit-learn's convention); functions may still take a Generator.

    Examples
    --------
    >>> check_estimator_random_state(3)
    3
    >>> check_estimator_random_state(np.random.default_rng(0))
    Traceback (most recent call last):
    ...
    TypeError: random_state of an estimator must be None or a non-negative int ...
    """
    if random_state is None:
        return None
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"{name} must be a non-negative int, got {random_state}")
        return int(random_state)
    raise TypeError(
        f"{name} of an estimator must be None or a non-negative int (a seed), got "
        f"{type(random_state).__name__}: a Generator would be kept in copies and pickles of "
        "the estimator, where anyone could replay its noise"
    )


def mark_seeded(release, random_state):
    """``release`` with its privacy report flagged ``seeded=True`` if ``random_state`` is not None.

    ``release`` is a :class:`~dpuq.report.PrivacyReport` or a frozen dataclass with a
    ``privacy_report`` field (None is left alone). A seeded release is reproducible by anyone
    who knows the seed, so its report must say so.
    """
    import dataclasses

    from dpuq.report import PrivacyReport

    if random_state is None or release is None:
        return release
    if isinstance(release, PrivacyReport):
        return dataclasses.replace(release, seeded=True)
    report = getattr(release, "privacy_report", None)
    if report is None:
        return release
    return dataclasses.replace(release, privacy_report=dataclasses.replace(report, seeded=True))


def simulated_sorted_uniforms(n_vectors: int, n: int, seed: int) -> np.ndarray:
    """``n_vectors`` sorted Uniform(0, 1) vectors of length ``n`` from a public fixed ``seed``.

    For data-free planning simulations only (the paper's choice of bins): releases nothing, so
    it needs no privacy argument and no exact sampler. Exact in law: normalised cumulative sums
    of ``n + 1`` standard exponential gaps are the order statistics of ``n`` uniforms.

    Examples
    --------
    >>> s = simulated_sorted_uniforms(2, 5, seed=0)
    >>> s.shape, bool((s[:, 1:] >= s[:, :-1]).all())
    ((2, 5), True)
    """
    gaps = np.random.default_rng(seed).standard_exponential((n_vectors, n + 1))
    cums = np.cumsum(gaps, axis=1)
    return cums[:, :n] / cums[:, n:]
