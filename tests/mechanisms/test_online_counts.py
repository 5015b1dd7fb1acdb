"""The online tracker's mechanism: exact output law by neighbour enumeration, the sampler
against that law, causality, batch = incremental, and the pathwise coverage bound."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from scipy import stats

from dpuq.mechanisms.online_counts import (
    _block_noise,
    _OnlineTracker,
    _tracker_thresholds,
    block_count_scale,
    noise_max_bound,
    tracker_log_likelihood,
)

TINY = {"alpha": 0.25, "step": 0.2, "block_size": 2, "initial": 0.5}
ALPHABET = (0.1, 0.5, 0.9)
# outcomes of the two released counts: integers and off-integer lattice points
OUTCOMES = (-1.5, -0.25, 0.5, 1.0, 1.75, 3.0)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_neighbour_enumeration_is_epsilon_dp_and_tight(epsilon):
    """Every stream of 5 scores over a 3-letter alphabet (two released counts, the second
    block's threshold moved by the first), every
    replace-one neighbour, every outcome of a grid: |log P_D(o) - log P_D'(o)| <= ε, with
    equality reached (the sensitivity 1 per block is attained)."""
    streams = list(itertools.product(range(len(ALPHABET)), repeat=5))
    index = {s: i for i, s in enumerate(streams)}
    outcomes = list(itertools.product(OUTCOMES, repeat=2))
    logp = np.array(
        [
            [
                tracker_log_likelihood(
                    np.array([ALPHABET[c] for c in s]), o, epsilon=epsilon, **TINY
                )
                for o in outcomes
            ]
            for s in streams
        ]
    )
    assert np.isfinite(logp).all()
    worst = 0.0
    for s in streams:
        for pos in range(5):
            for c in range(len(ALPHABET)):
                if c == s[pos]:
                    continue
                t = (*s[:pos], c, *s[pos + 1 :])
                worst = max(worst, float(np.max(np.abs(logp[index[s]] - logp[index[t]]))))
    assert worst <= epsilon * (1 + 1e-12)
    assert worst >= epsilon * (1 - 1e-9)  # tight: a block's count moves by one


def test_sampler_follows_the_law():
    """The noises of released counts are lattice Laplace of scale 1/ε: a KS test at level
    0.001 (seeded, fixed false-positive rate) on the noise recovered from a run."""
    rng = np.random.default_rng(4)
    scores = rng.uniform(size=40_000)
    t, released = _tracker_thresholds(
        scores, alpha=0.1, epsilon=0.7, step=0.01, block_size=10, initial=0.5, root=11
    )
    blocks = scores[: released.size * 10].reshape(-1, 10)
    counts = (blocks > t[: released.size * 10 : 10, None]).sum(axis=1)
    noise = released - counts
    scale = block_count_scale(0.7)
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    # and a wrong scale is detected (negative control)
    assert stats.kstest(noise, stats.laplace(scale=1.3 * scale).cdf).pvalue < 1e-3


def test_thresholds_are_a_function_of_the_released_counts_only():
    """The premise of the privacy proof: every threshold is the public recursion
    ``q_{k+1} = q_k + η(Ẽ_k - α B)`` of the released (noisy) counts, never of an exact count.
    (The enumeration above checks the law of the released counts; this ties the thresholds
    the code hands out to them. Regression: a tracker stepping on the exact count passed
    every other test.)"""
    rng = np.random.default_rng(7)
    s = rng.uniform(size=1003) * np.linspace(0.5, 1.0, 1003)
    kw = {"alpha": 0.1, "step": 0.02, "block_size": 17, "initial": 0.5}
    t, released = _tracker_thresholds(s, epsilon=1.0, root=12, **kw)
    steps = kw["step"] * (released - kw["alpha"] * kw["block_size"])
    q = np.concatenate(([kw["initial"]], kw["initial"] + np.cumsum(steps)))
    assert released.size == -(-s.size // 17) - 1  # the last block's count is never released
    assert np.allclose(t, np.repeat(q, 17)[: s.size], rtol=0.0, atol=1e-12)
    counts = (s[: released.size * 17].reshape(-1, 17) > t[: released.size * 17 : 17, None]).sum(1)
    assert not np.allclose(released, counts)  # the counts were noised (negative control)


def test_counts_lie_on_the_noise_lattice_for_every_accepted_epsilon():
    """The proof adds integer counts to lattice noise without rounding: that needs the
    lattice step ``γ <= 1`` for every ε the settings accept (it is 2 for ε below ~4.5e-13,
    where odd and even counts would have disjoint supports)."""
    from dpuq.conformal.online import check_online_settings
    from dpuq.mechanisms.discrete_laplace import laplace_lattice

    accepted = 0
    for eps in np.geomspace(1e-13, 1e3, 400):
        try:
            # a given block: the automatic one is capped (10^9 persons) below ε of about 1e-4
            check_online_settings(0.1, float(eps), block_size=100)
        except ValueError:
            continue
        accepted += 1
        gamma, _ = laplace_lattice(block_count_scale(float(eps)))
        assert gamma <= 1.0 and 1.0 / gamma == round(1.0 / gamma)
    assert 300 < accepted < 400  # the smallest values are refused, the rest checked


def test_block_noise_is_chunk_invariant_and_seeded():
    a = _block_noise(3, 0, 600, 1.0)
    assert np.array_equal(a[250:260], _block_noise(3, 250, 260, 1.0))
    assert not np.array_equal(a, _block_noise(4, 0, 600, 1.0))
    assert _block_noise(None, 0, 5, 1.0).shape == (5,)


def test_causal_changing_a_score_changes_nothing_up_to_its_block():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=500)
    kw = {"alpha": 0.1, "epsilon": 1.0, "step": 0.02, "block_size": 20, "initial": 0.5}
    base, _ = _tracker_thresholds(s, root=5, **kw)
    for i in (0, 19, 20, 257, 499):
        s2 = s.copy()
        s2[i] = 1.0 - s2[i]
        other, _ = _tracker_thresholds(s2, root=5, **kw)
        end = (i // 20 + 1) * 20  # the first person after i's block
        assert np.array_equal(base[:end], other[:end])


def test_incremental_tracker_equals_the_batch_function():
    rng = np.random.default_rng(1)
    s = rng.uniform(size=1000) * np.linspace(0.4, 1.0, 1000)
    kw = {"alpha": 0.1, "epsilon": 1.0, "step": 0.01, "block_size": 23, "initial": 0.5}
    batch, _ = _tracker_thresholds(s, root=9, **kw)
    tr = _OnlineTracker(**kw)
    pieces, pos = [], 0
    for size in rng.integers(1, 60, size=200):
        pieces.append(tr.observe(s[pos : pos + size], root=9))
        pos += size
        if pos >= s.size:
            break
    assert np.array_equal(np.concatenate(pieces)[: s.size], batch)


def test_tracker_refuses_to_pickle_an_unreleased_count():
    """The estimators refuse pickling mid-block; the tracker they hold (a public attribute)
    must too, or ``pickle.dumps(clf.tracker_)`` writes the unreleased count."""
    kw = {"alpha": 0.1, "epsilon": 1.0, "step": 0.01, "block_size": 4, "initial": 0.5}
    tr = _OnlineTracker(**kw)
    tr.observe(np.array([0.9, 0.9, 0.1]), root=0)
    with pytest.raises(TypeError, match="incomplete block"):
        pickle.dumps(tr)
    tr.observe(np.array([0.9]), root=0)  # the block is complete: its count is released
    again = pickle.loads(pickle.dumps(tr))
    assert (again.threshold, again.n_seen, again.n_blocks) == (tr.threshold, 4, 1)
    assert again.observe(np.array([0.2]), root=0)[0] == tr.threshold


def _pathwise_bound(released, counts, n, alpha, step, block_size, initial):
    noise_sums = np.concatenate(([0.0], np.cumsum(released - counts)))
    m = float(np.max(np.abs(noise_sums)))
    start = max(
        (1 - initial) / step + (1 - alpha) * block_size, initial / step + alpha * block_size
    )
    return start + m


def test_coverage_bound_holds_exactly_on_every_tiny_stream():
    """Every stream of 5 scores over {0, 0.5, 1} (243 streams), four noise draws each: the
    deviation |sum(err) - α T| never exceeds the pathwise bound of the module docstring.
    A nearly noise-free run (ε = 50) makes the block term ``(1 - α)B`` of the bound matter: the
    test fails without it."""
    kw = {"alpha": 0.25, "step": 0.3, "block_size": 2, "initial": 0.5}
    worst = 0.0
    for combo in itertools.product((0.0, 0.5, 1.0), repeat=5):
        s = np.array(combo)
        for epsilon, seed in ((1.0, 0), (1.0, 1), (1.0, 2), (50.0, 0)):
            t, released = _tracker_thresholds(s, epsilon=epsilon, root=seed, **kw)
            err = s > t
            counts = err[: released.size * 2].reshape(-1, 2).sum(axis=1)
            dev = abs(err.sum() - kw["alpha"] * s.size)
            bound = _pathwise_bound(released, counts, s.size, **kw)
            worst = max(worst, dev / bound)
            assert dev <= bound + 1e-9
    assert worst > 0.3  # the bound is not vacuous on these streams


def test_coverage_bound_against_an_adaptive_adversary():
    """An adversary who sees each threshold and picks the score that errs whenever it can
    (1.0 while t < 1, else 0): the bound still holds pathwise."""
    kw = {"alpha": 0.1, "step": 0.01, "block_size": 23, "initial": 0.5}
    tr = _OnlineTracker(epsilon=1.0, **kw)
    errs, ts = [], []
    for _ in range(5000):
        t = tr.threshold
        s = 1.0 if t < 1.0 else 0.0
        ts.append(tr.observe(np.array([s]), root=3)[0])
        errs.append(s > t)
    dev = abs(sum(errs) - 0.1 * 5000)
    assert dev <= (0.5 / 0.01 + 0.9 * 23) + noise_max_bound(1.0, 5000 // 23, 1e-6)
    assert abs(np.mean(errs) - 0.1) < 0.03


def test_noise_max_bound_is_sane():
    # grows like sqrt(K) (sub-exponential tails), shrinks with ε
    a, b = noise_max_bound(1.0, 100, 0.05), noise_max_bound(1.0, 400, 0.05)
    assert 1.5 < b / a < 2.5
    assert noise_max_bound(2.0, 100, 0.05) < a
    # at least the sd of the final sum (a bound on the max cannot be below it)
    assert a > math.sqrt(2 * 100) * block_count_scale(1.0)
