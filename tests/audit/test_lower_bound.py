"""Black-box audits: negative controls are caught, dpuq's core releases are not (fast suite).

The broken mechanisms live here, in test code; their noise comes from dpuq's exact samplers.
"""

import numpy as np
import pytest

from dpuq.audit import (
    audit_release,
    epsilon_lower_bound,
    row_neighbours,
    score_neighbours,
    worst_case_data,
)
from dpuq.conformal.calibration import calibrate
from dpuq.inference.estimates import private_mean
from dpuq.mechanisms.exponential import exponential_mechanism
from dpuq.mechanisms.laplace import laplace_mechanism, laplace_noise
from dpuq.mechanisms.quantile import private_quantiles

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def laplace_batch(scale):
    """A vectorised 'release' of data[0] + Laplace(scale), one draw per seed."""

    def release_batch(data, seeds):
        rng = np.random.default_rng(int(seeds[0]))
        return float(data[0]) + laplace_noise(scale, size=seeds.size, random_state=rng)

    return release_batch


def test_half_the_claimed_noise_is_caught():
    """Claims ε = 1 for a sensitivity-1 query but adds Laplace(1/2) (that is ε = 2)."""
    res = epsilon_lower_bound(
        None, [0.0], [1.0], n_samples=6000, random_state=0, release_batch=laplace_batch(0.5)
    )
    assert res.epsilon > 1.0, res


def test_goal_noise_of_eps_4_claiming_1_gives_more_than_1_5_from_20000_draws():
    res = epsilon_lower_bound(
        None, [0.0], [1.0], n_samples=10_000, random_state=1, release_batch=laplace_batch(0.25)
    )
    assert res.epsilon > 1.5, res
    assert res.epsilon <= 4.0 + 1e-9  # and it is a lower bound: never above the truth here


def test_the_honest_laplace_mechanism_is_not_accused():
    def release(data, seed):
        return laplace_mechanism(float(data[0]), sensitivity=1.0, epsilon=1.0, random_state=seed)

    res = epsilon_lower_bound(release, [0.0], [1.0], n_samples=1500, random_state=2)
    assert 0.2 < res.epsilon <= 1.0, res  # informative, and below the claim


def test_audit_is_deterministic_for_a_random_state_and_uses_distinct_seeds():
    seen = []

    def release(data, seed):
        seen.append(seed)
        return laplace_mechanism(float(data[0]), sensitivity=1.0, epsilon=1.0, random_state=seed)

    a = epsilon_lower_bound(release, [0.0], [1.0], n_samples=200, random_state=5)
    b = epsilon_lower_bound(release, [0.0], [1.0], n_samples=200, random_state=5)
    assert a == b
    assert len(set(seen[:400])) == 400  # every draw, on D and on D', has its own seed
    c = epsilon_lower_bound(release, [0.0], [1.0], n_samples=200, random_state=6)
    assert c.counts != a.counts


class RunningBlockMean:
    """A block statistic that forgets to reset its running sum between blocks (the leak)."""

    def __init__(self, leaky: bool):
        self.leaky = leaky
        self.total = 0.0

    def __call__(self, block):
        if not self.leaky:
            self.total = 0.0
        self.total += float(np.sum(block))
        return self.total / block.size


def subsample_and_aggregate(x, seed, *, leaky, k=10, epsilon=1.0):
    """Mean of k disjoint block means of x in [0, 1], + Laplace(1/(n ε)): ε-DP claimed (one
    person is in one block, whose mean moves by k/n: the average by 1/n)."""
    x = np.asarray(x, dtype=float)
    statistic = RunningBlockMean(leaky)
    means = [statistic(block) for block in np.array_split(x, k)]
    return laplace_mechanism(
        float(np.mean(means)), sensitivity=1.0 / x.size, epsilon=epsilon, random_state=seed
    )


def test_a_statistic_that_leaks_across_subsets_is_caught_and_the_fixed_one_is_not():
    data = worst_case_data("rows", 40, bounds=(0.0, 1.0))[0]  # all at 0.5
    leaky = audit_release(
        lambda x, s: subsample_and_aggregate(x, s, leaky=True),
        data,
        neighbours="rows",
        neighbour_options={"bounds": (0.0, 1.0), "quantiles": [0.0]},
        n_samples=400,
        claimed_epsilon=1.0,
        random_state=0,
    )
    assert leaky.violated and leaky.epsilon > 2.0, leaky
    fixed = audit_release(
        lambda x, s: subsample_and_aggregate(x, s, leaky=False),
        data,
        neighbours="rows",
        neighbour_options={"bounds": (0.0, 1.0), "quantiles": [0.0]},
        n_samples=400,
        claimed_epsilon=1.0,
        random_state=0,
    )
    assert not fixed.violated, fixed


def test_core_release_calibrate_exact_sampler_at_calibrates_settings():
    """calibrate's private threshold: its exact sampler, vectorised, at the (n, level, bins)
    calibrate uses, on dpuq's worst-case score sets and every score neighbour (12 pairs)."""
    n, alpha, eps = 200, 0.1, 1.0
    record = calibrate(np.full(n, 0.5), alpha=alpha, epsilon=eps, random_state=0)
    assert record.informative

    def release_batch(scores, seeds):
        rows = np.tile(np.asarray(scores, dtype=float), (seeds.size, 1))
        return private_quantiles(rows, record.level, eps, record.n_bins, random_state=int(seeds[0]))

    audit = audit_release(
        None,
        worst_case_data("scores", n),
        neighbours="scores",
        n_samples=4000,
        claimed_epsilon=eps,
        random_state=0,
        release_batch=release_batch,
    )
    assert not audit.violated, audit
    assert audit.epsilon > 0.2, audit  # the audit sees something


def test_core_releases_private_mean_and_exponential_mechanism():
    def mean(x, seed):
        return private_mean(x, epsilon=1.0, bounds=(0.0, 1.0), random_state=seed).value

    pair = row_neighbours(np.full(20, 0.5), bounds=(0.0, 1.0), quantiles=[0.5])[1]
    res = epsilon_lower_bound(mean, pair.data, pair.neighbour, n_samples=300, random_state=0)
    assert res.epsilon <= 1.0, res

    def em(utilities, seed):
        return exponential_mechanism(utilities, epsilon=1.0, sensitivity=1.0, random_state=seed)

    # two candidates whose utilities swap: P(0) = 1/(1 + e^0.5) vs e^0.5/(1 + e^0.5): ε 0.5 seen
    res = epsilon_lower_bound(
        em, np.array([0.0, 1.0]), np.array([1.0, 0.0]), n_samples=2000, random_state=0
    )
    assert 0.1 < res.epsilon <= 1.0, res


def test_vector_outputs_use_projections_and_classifiers():
    def release_batch(data, seeds):
        rng = np.random.default_rng(int(seeds[0]))
        return np.asarray(data) + laplace_noise(0.5, size=(seeds.size, 3), random_state=rng)

    res = epsilon_lower_bound(
        None, np.zeros(3), np.ones(3), n_samples=2000, random_state=0, release_batch=release_batch
    )
    assert 2.0 < res.epsilon <= 6.0, res  # true ε: 3 coordinates × (1 / 0.5)


def test_bonferroni_share_per_pair():
    audit = audit_release(
        None,
        np.full(30, 0.5),
        neighbours="scores",
        n_samples=100,
        confidence=0.9,
        random_state=0,
        release_batch=lambda d, s: np.full(s.size, float(np.mean(d))),
    )
    assert len(audit.results) == 4
    assert all(r.confidence == pytest.approx(1 - 0.1 / 4) for r in audit.results)
    assert audit.confidence == 0.9 and "4 neighbour pairs" in str(audit)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="n_samples"):
        epsilon_lower_bound(lambda d, s: 0.0, [0], [1], n_samples=10)
    with pytest.raises(TypeError, match="release"):
        epsilon_lower_bound("not callable", [0], [1], n_samples=100)
    with pytest.raises(ValueError, match="one non-zero size"):
        epsilon_lower_bound(
            lambda d, s: np.zeros(s % 2 + 1), [0], [1], n_samples=100, random_state=0
        )
    with pytest.raises(ValueError, match="neighbours must be one of"):
        audit_release(lambda d, s: 0.0, [0.5], neighbours="nope", n_samples=100)


def test_generators_change_one_record_and_leave_the_input_alone():
    scores = np.linspace(0, 1, 11)
    before = scores.copy()
    for pair in score_neighbours(scores):
        assert np.sum(pair.data != pair.neighbour) <= 1
    assert np.array_equal(scores, before)
    rows = np.arange(12.0).reshape(6, 2)
    for pair in row_neighbours(rows, bounds=(0.0, 20.0)):
        assert np.sum(np.any(pair.data != pair.neighbour, axis=1)) == 1
    for losses in worst_case_data("losses", 8, m=5):
        assert np.all(np.diff(losses, axis=1) <= 0) and np.all(losses[:, -1] == 0)


def test_a_release_that_edits_its_input_in_place_gets_fresh_data_every_draw():
    """Regression: the same object handed to every call let one draw's in-place edit change
    the data set of the next ones."""

    def zero_it(data, seed):
        value = float(np.mean(data))
        data[:] = 0.0  # hostile: edits its input
        return value

    res = epsilon_lower_bound(
        zero_it, np.full(5, 1.0), np.full(5, 0.8), n_samples=100, random_state=0
    )
    assert res.counts[0] == 50 and res.counts[2] == 0  # every draw saw its own data set
