"""Random number generators for mechanisms.

``random_state=None`` (the default everywhere) draws fresh OS entropy: use it for real
releases. An int or a :class:`numpy.random.Generator` makes a run reproducible: use it for
experiments and tests only, since anyone who knows the seed can undo the noise.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from dpuq._validation import check_random_state_setting
from dpuq.privacy.ledger import charge

__all__ = [
    "RandomState",
    "bootstrap_weights",
    "check_estimator_random_state",
    "check_random_state",
    "derive_seed",
    "derived_generator",
    "mark_seeded",
    "release_generator",
    "row_uniforms",
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
    check_random_state_setting(random_state)
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(int(random_state))


def release_generator(
    random_state: RandomState, ledger, dataset: str | None, cost, *, what: str, settings: dict
) -> np.random.Generator:
    """The generator of a release, handed out only after its cost is charged.

    The last step of every mechanism before its noise: checks ``random_state``, then charges
    ``cost`` (ε, or a :class:`~dpuq.privacy.report.PrivacyReport`) to ``dataset`` through
    :func:`dpuq.privacy.ledger.charge` (which may refuse the release), then returns the generator.
    Call it after every other setting is checked. ``seeded`` is recorded from ``random_state``.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        None (the mechanisms' default) uses OS entropy: use it for releases. A seed (or a
        Generator) makes a run reproducible: for experiments and tests only, since anyone who
        knows it can undo the noise; the ledger records the release as seeded.
    ledger : dpuq.Ledger, path or None
        Charge ``cost`` to ``dataset``'s budget, or refuse the release
        (:class:`~dpuq.privacy.ledger.BudgetExceededError`): :func:`dpuq.privacy.ledger.charge`.
    dataset : str or None
        The name of the data set released about (alone: the default ledger).
    cost : float or PrivacyReport
        ε of the release (its total), or its report.
    what, settings :
        The release's name and public settings, kept in the ledger's history.

    Examples
    --------
    >>> rng = release_generator(0, None, None, 1.0, what="a count", settings={})
    >>> isinstance(rng, np.random.Generator)
    True
    """
    rng = check_random_state(random_state)
    charge(ledger, dataset, cost, what=what, random_state=random_state, settings=settings)
    return rng


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

    ``release`` is a :class:`~dpuq.privacy.report.PrivacyReport` or a frozen dataclass with a
    ``privacy_report`` field (None is left alone). A seeded release is reproducible by anyone
    who knows the seed, so its report must say so.
    """
    import dataclasses

    from dpuq.privacy.report import PrivacyReport

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


# ------------------------------------------------------------------ derived generators
def derive_seed(rng: np.random.Generator) -> int:
    """One 63-bit seed drawn from ``rng``: the root of a family of derived generators.

    Work that is split into pieces (subsets of a bootstrap, chunks of a Dask array) draws its
    randomness from :func:`derived_generator` ``(seed, key...)``, one generator per piece, so
    that the draws do not depend on where or in which order the pieces run: the same seed
    gives the same numbers in memory and on a Dask cluster. Distinct keys give independent
    streams (NumPy's ``SeedSequence`` spawning), so the law is that of one generator.

    Examples
    --------
    >>> a = derive_seed(np.random.default_rng(0))
    >>> a == derive_seed(np.random.default_rng(0))
    True
    """
    return int(rng.integers(2**63))


def derived_generator(seed: int, *key: int) -> np.random.Generator:
    """The generator of piece ``key`` under ``seed`` (see :func:`derive_seed`).

    Examples
    --------
    >>> g1, g2 = derived_generator(5, 0), derived_generator(5, 1)
    >>> float(g1.random()) != float(g2.random())
    True
    """
    return np.random.default_rng([int(seed), *(int(k) for k in key)])


def bootstrap_weights(seed: int, group: int, n: int, b: int, t: int) -> np.ndarray:
    """``t`` bag-of-little-bootstraps weight rows ``Multinomial(n, (1/b, ..., 1/b))`` of one
    weight group, shape ``(t, b)``, from :func:`derived_generator` ``(seed, group)``.

    Resampling weights, not privacy noise: they are drawn before and independently of the data
    values (the privacy arguments condition on them). Derived per group so that a Dask worker
    draws the group it needs where the subsets are, equal to the in-memory draw.

    Examples
    --------
    >>> w = bootstrap_weights(1, 0, n=10, b=4, t=3)
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 4), [10.0, 10.0, 10.0])
    """
    gen = derived_generator(seed, group)
    return gen.multinomial(int(n), np.full(int(b), 1.0 / int(b)), size=int(t)).astype(float)


#: Rows per block of :func:`row_uniforms` (a public grid, independent of any chunking).
UNIFORM_BLOCK = 1 << 20


def row_uniforms(seed: int, start: int, stop: int) -> np.ndarray:
    """Uniform[0, 1) draws for the rows ``start..stop-1`` of a data set, one per row.

    Row ``i``'s draw is element ``i mod B`` of block ``i // B``'s stream
    (:func:`derived_generator` ``(seed, i // B)``, ``B =`` :data:`UNIFORM_BLOCK`), so it does not
    depend on how the rows are chunked: a Dask worker scoring rows ``start..stop-1`` draws
    exactly what the in-memory scoring draws for them (randomised APS/RAPS scores).

    Examples
    --------
    >>> u = row_uniforms(3, 0, 10)
    >>> bool((row_uniforms(3, 4, 7) == u[4:7]).all())
    True
    """
    start, stop = int(start), int(stop)
    out = np.empty(max(0, stop - start))
    for j in range(start // UNIFORM_BLOCK, (stop - 1) // UNIFORM_BLOCK + 1 if stop > start else 0):
        lo = j * UNIFORM_BLOCK
        draws = derived_generator(seed, j).random(min(UNIFORM_BLOCK, stop - lo))
        a, b = max(start, lo), min(stop, lo + UNIFORM_BLOCK)
        out[a - start : b - start] = draws[a - lo : b - lo]
    return out
