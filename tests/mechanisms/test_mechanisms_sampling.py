"""The log-space sampler never gives a candidate with positive probability probability 0."""

import numpy as np
from scripted_bits import ScriptedBits

from dpuq.mechanisms.exponential import sample_log_weights


def test_underflowing_candidates_are_reachable():
    # exp(-800) underflows to 0 in linear space; its relative mass is ~2e-348.
    lw = np.array([0.0, -800.0, -801.0])
    w0 = int(np.ceil(2.0**52 * (1 + 2.0**-40)))  # integer proposal weight of candidate 0
    # proposal v = w0 picks candidate 1 (weight 1); its acceptance e^-800 2^52 ~ 2^-1102 is
    # undecided by floats for a first word 0, then decided exactly: all-zero bits accept it
    assert sample_log_weights(lw, ScriptedBits(words=[0], ints=[w0])) == 1
    assert sample_log_weights(lw, ScriptedBits(words=[0], ints=[w0 + 1])) == 2
    # a non-zero word rejects it; the next proposal (v = 0) picks candidate 0, accepted
    assert sample_log_weights(lw, ScriptedBits(words=[5, 0], ints=[w0, 0])) == 0
    # an ordinary draw selects the dominant candidate
    assert sample_log_weights(lw, ScriptedBits(words=[7], ints=[123])) == 0


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
