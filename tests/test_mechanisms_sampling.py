"""The log-space sampler never gives a candidate with positive probability probability 0."""

import numpy as np

from dpuq.mechanisms.exponential import sample_log_weights


class _ScriptedRandom:
    """A randomness source with scripted uniforms (duck-types numpy.random.Generator)."""

    def __init__(self, uniforms, exponentials=()):
        self._u = list(uniforms)
        self._e = list(exponentials)

    def random(self, size=None):
        return self._u.pop(0)

    def standard_exponential(self, size=None):
        return np.array([self._e.pop(0) for _ in range(size)])


def test_underflowing_candidates_are_reachable():
    # exp(-800) underflows to 0 in linear space; the tiny group has relative mass ~2e-348.
    lw = np.array([0.0, -800.0, -801.0])
    # The tiny group is chosen with probability exp(-~800), checked as 27 factors exp(-30):
    # uniforms all below exp(-30) select it; then Gumbel-max (exponential variates) inside it.
    picked = sample_log_weights(lw, _ScriptedRandom([1e-14] * 27, [0.1, 5.0]))
    assert picked == 1
    picked = sample_log_weights(lw, _ScriptedRandom([1e-14] * 27, [5.0, 0.1]))
    assert picked == 2
    # an ordinary uniform selects the dominant candidate
    assert sample_log_weights(lw, _ScriptedRandom([0.5])) == 0


def test_impossible_candidates_are_never_drawn():
    lw = np.array([-np.inf, 0.0, -np.inf, 0.0])
    rng = np.random.default_rng(1)
    draws = {sample_log_weights(lw, rng) for _ in range(500)}
    assert draws == {1, 3}


def test_huge_log_weights_do_not_overflow():
    lw = np.array([1e6, 1e6 - np.log(3.0)])
    rng = np.random.default_rng(2)
    draws = np.array([sample_log_weights(lw, rng) for _ in range(4000)])
    # P(0) = 3/4: binomial 5-sigma band
    assert abs(np.mean(draws == 0) - 0.75) < 5 * np.sqrt(0.75 * 0.25 / 4000)
