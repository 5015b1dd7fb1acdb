"""The exponential mechanism and permute-and-flip: exact privacy, exact laws, samplers, accuracy.

Privacy is checked exactly: enumerate neighbouring utility vectors (or neighbouring data sets)
and compare exact output laws. Samplers are checked against the exact laws with chi-square
goodness-of-fit tests at a fixed false-positive rate (seeded, p > 1e-3).
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scripted_bits import ScriptedBits

import dpuq
from dpuq.learning import PrivateERMClassifier, Thresholds
from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_accuracy_bound,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    permute_and_flip,
    permute_and_flip_log_probabilities,
    permute_and_flip_probabilities,
    sample_permute_and_flip,
)

P_MIN = 1e-3  # false-positive rate of each goodness-of-fit test


def chi_square_pvalue(draws: np.ndarray, probs: np.ndarray) -> float:
    """Pearson chi-square of draws against a law; cells with expected count < 5 are pooled."""
    observed = np.bincount(draws, minlength=probs.size).astype(float)
    expected = probs * draws.size
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    assert obs[~keep].sum() == 0, "a draw landed on a candidate of probability 0"
    obs, exp = obs[keep], exp[keep]
    exp *= obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def brute_force_pf(u, epsilon, sensitivity):
    """Permute-and-flip's law by averaging over every order of the candidates."""
    u = np.asarray(u, float)
    q = np.exp(epsilon * (u - u.max()) / (2 * sensitivity))
    law = np.zeros(u.size)
    for order in itertools.permutations(range(u.size)):
        survive = 1.0
        for r in order:
            law[r] += survive * q[r]
            survive *= 1 - q[r]
    return law / math.factorial(u.size)


def max_log_ratio(lp_a, lp_b) -> float:
    return float(np.max(np.abs(lp_a - lp_b)))


# ----------------------------------------------------------------------------- exact laws


class TestExactLaws:
    def test_exponential_law_is_proportional_to_weights(self):
        u = np.array([0.3, -1.2, 2.0, 2.0])
        p = exponential_mechanism_probabilities(u, epsilon=0.7, sensitivity=0.5)
        w = np.exp(0.7 * u / (2 * 0.5))
        np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)
        pm = exponential_mechanism_probabilities(u, epsilon=0.7, sensitivity=0.5, monotone=True)
        wm = np.exp(0.7 * u / 0.5)
        np.testing.assert_allclose(pm, wm / wm.sum(), rtol=1e-12)

    @pytest.mark.parametrize("size", [1, 2, 3, 5, 6])
    def test_permute_and_flip_law_matches_enumeration_of_orders(self, size):
        rng = np.random.default_rng(size)
        u = rng.normal(scale=2.0, size=size)
        if size > 2:
            u[1] = u[2]  # ties
        np.testing.assert_allclose(
            permute_and_flip_probabilities(u, epsilon=1.3, sensitivity=0.7),
            brute_force_pf(u, 1.3, 0.7),
            rtol=1e-9,
            atol=1e-15,
        )

    def test_permute_and_flip_matches_report_noisy_max_with_exponential_noise(self):
        # Ding et al. 2021: PF = argmax(u + Exp(2Δ/ε)); an independent sampler for the law.
        u = np.array([0.0, -0.5, -1.0, -3.0, -0.2])
        rng = np.random.default_rng(3)
        noise = rng.exponential(scale=2.0 / 1.0, size=(60_000, u.size))
        draws = np.argmax(u + noise, axis=1)
        law = permute_and_flip_probabilities(u, epsilon=1.0, sensitivity=1.0)
        assert chi_square_pvalue(draws, law) > P_MIN

    def test_tiny_probabilities_stay_positive_in_log_space(self):
        u = np.array([0.0, -2000.0, -4000.0])
        lp = exponential_mechanism_log_probabilities(u, epsilon=1.0, sensitivity=1.0)
        assert np.all(np.isfinite(lp))
        np.testing.assert_allclose(lp[1] - lp[0], -1000.0, rtol=1e-12)
        lpf = permute_and_flip_log_probabilities(u[:2], epsilon=1.0, sensitivity=1.0)
        # P(1) = q ∫_0^1 (1 - t) dt = q / 2 with q = exp(-1000)
        np.testing.assert_allclose(lpf[1], -1000.0 - math.log(2.0), rtol=1e-12)

    def test_permute_and_flip_is_at_least_as_good_in_expectation(self):
        rng = np.random.default_rng(7)
        for _ in range(20):
            u = rng.normal(scale=3.0, size=8)
            em = exponential_mechanism_probabilities(u, epsilon=1.0, sensitivity=1.0)
            pf = permute_and_flip_probabilities(u, epsilon=1.0, sensitivity=1.0)
            assert pf @ u >= em @ u - 1e-12


# ----------------------------------------------------------------------------- privacy


class TestPrivacy:
    @pytest.mark.parametrize(
        "law",
        [exponential_mechanism_log_probabilities, permute_and_flip_log_probabilities],
        ids=["exponential", "permute_and_flip"],
    )
    def test_every_neighbouring_utility_vector(self, law):
        """Utilities of sensitivity Δ: every move in {-Δ, -Δ/2, 0, Δ/2, Δ}^R, for many bases."""
        eps, sens = 0.9, 0.5
        rng = np.random.default_rng(11)
        moves = np.array(list(itertools.product([-1, -0.5, 0, 0.5, 1], repeat=4))) * sens
        worst = 0.0
        for _ in range(15):
            u = rng.normal(scale=2.0, size=4)
            base = law(u, epsilon=eps, sensitivity=sens)
            for move in moves:
                other = law(u + move, epsilon=eps, sensitivity=sens)
                worst = max(worst, max_log_ratio(base, other))
        assert worst <= eps * (1 + 1e-9)
        assert worst > 0.5 * eps  # the enumeration reaches the neighbourhood of the bound

    def test_monotone_variant_is_private_for_monotone_utilities(self):
        """u_r(X) = #{x in X : x <= r} moves the same way for every r when a point is added."""
        eps = 1.0
        domain = range(4)
        worst = 0.0
        for size in range(0, 4):
            for data in itertools.combinations_with_replacement(domain, size):
                u = np.array([sum(x <= r for x in data) for r in domain], float)
                base = exponential_mechanism_log_probabilities(
                    u, epsilon=eps, sensitivity=1.0, monotone=True
                )
                for x in domain:  # add one point (the reverse is remove one)
                    u2 = u + np.array([x <= r for r in domain], float)
                    other = exponential_mechanism_log_probabilities(
                        u2, epsilon=eps, sensitivity=1.0, monotone=True
                    )
                    worst = max(worst, max_log_ratio(base, other))
        assert worst <= eps * (1 + 1e-9)
        assert worst > 0.5 * eps  # it really uses exp(ε u / Δ), not the halved exponent

    def test_monotone_variant_leaks_on_non_monotone_utilities(self):
        """The private learner's utilities are not monotone under replace-one (one concept's
        error goes down while another's goes up): on every data set of 3 examples over a tiny
        domain, the standard mechanism stays within ε and the monotone variant exceeds it."""
        eps = 1.0
        concepts = Thresholds([0.5, 1.5, 2.5])
        examples = list(itertools.product([0.0, 1.0, 2.0, 3.0], [0, 1]))

        def laws(data):
            X = np.array([x for x, _ in data])
            y = np.array([label for _, label in data])
            u = -concepts.error_counts(X, y).astype(float)
            return (
                exponential_mechanism_log_probabilities(u, epsilon=eps, sensitivity=1.0),
                exponential_mechanism_log_probabilities(
                    u, epsilon=eps, sensitivity=1.0, monotone=True
                ),
            )

        worst_std, worst_mono = 0.0, 0.0
        for data in itertools.combinations_with_replacement(examples, 3):
            std0, mono0 = laws(data)
            for i in range(len(data)):
                for new in examples:
                    std1, mono1 = laws((*data[:i], new, *data[i + 1 :]))
                    worst_std = max(worst_std, max_log_ratio(std0, std1))
                    worst_mono = max(worst_mono, max_log_ratio(mono0, mono1))
        assert worst_std <= eps * (1 + 1e-9)
        assert worst_mono > eps * 1.2

    def test_non_monotone_constructed_case_exceeds_epsilon(self):
        # all candidates tie, then one goes up by Δ and the others down by Δ
        eps, r = 1.0, 50
        u = np.zeros(r)
        u2 = -np.ones(r)
        u2[0] = 1.0
        mono = max_log_ratio(
            exponential_mechanism_log_probabilities(u, epsilon=eps, sensitivity=1, monotone=True),
            exponential_mechanism_log_probabilities(u2, epsilon=eps, sensitivity=1, monotone=True),
        )
        std = max_log_ratio(
            exponential_mechanism_log_probabilities(u, epsilon=eps, sensitivity=1),
            exponential_mechanism_log_probabilities(u2, epsilon=eps, sensitivity=1),
        )
        assert mono > 1.5 * eps
        assert std <= eps * (1 + 1e-9)


# ----------------------------------------------------------------------------- samplers


class TestSamplers:
    def test_exponential_sampler_fits_its_law(self):
        u = np.array([0.0, -0.5, -1.0, -2.0, -4.0, -8.0, -12.0, 0.3, -0.1, -30.0])
        rng = np.random.default_rng(2024)
        draws = np.array(
            [
                exponential_mechanism(u, epsilon=1.0, sensitivity=0.5, random_state=rng)
                for _ in range(20_000)
            ]
        )
        law = exponential_mechanism_probabilities(u, epsilon=1.0, sensitivity=0.5)
        assert chi_square_pvalue(draws, law) > P_MIN

    def test_monotone_sampler_fits_its_law(self):
        u = np.array([0.0, -0.5, -1.0, -2.0, 0.5])
        rng = np.random.default_rng(5)
        draws = np.array(
            [
                exponential_mechanism(
                    u, epsilon=1.0, sensitivity=1.0, monotone=True, random_state=rng
                )
                for _ in range(10_000)
            ]
        )
        law = exponential_mechanism_probabilities(u, epsilon=1.0, sensitivity=1.0, monotone=True)
        assert chi_square_pvalue(draws, law) > P_MIN

    def test_permute_and_flip_sampler_fits_its_law(self):
        u = np.array([0.0, -0.5, -1.0, -2.0, -4.0, 0.0, -0.2, -9.0])
        rng = np.random.default_rng(99)
        draws = np.array(
            [
                permute_and_flip(u, epsilon=1.0, sensitivity=0.5, random_state=rng)
                for _ in range(20_000)
            ]
        )
        law = permute_and_flip_probabilities(u, epsilon=1.0, sensitivity=0.5)
        assert chi_square_pvalue(draws, law) > P_MIN

    def test_permute_and_flip_reaches_candidates_whose_weight_underflows(self):
        """Acceptance of a candidate with q = exp(-1000) (0 in floating point) is exact."""
        lw = np.array([0.0, -1000.0])
        # visit the weak candidate first; words: its acceptance (0 -> undecided by floats, then
        # zeros: U < 2^-1472 < e^-1000 accepts it), the best candidate's word, the extension
        accept = ScriptedBits(words=[0, 0], order=[1, 0])
        assert sample_permute_and_flip(lw, accept) == 1
        # any non-zero first word is above e^-1000: rejected, the best candidate is released
        reject = ScriptedBits(words=[1, 0], order=[1, 0])
        assert sample_permute_and_flip(lw, reject) == 0
        # undecided by floats, then a 1 bit before 2^-1443 ~ e^-1000: rejected exactly
        late = ScriptedBits(words=[0, 0] + [0] * 20 + [1 << 63], order=[1, 0])
        assert sample_permute_and_flip(lw, late) == 0

    def test_seeded_runs_are_reproducible(self):
        u = np.linspace(-3, 0, 40)
        a = [
            exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, random_state=s) for s in range(5)
        ]
        b = [
            exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, random_state=s) for s in range(5)
        ]
        assert a == b


# ----------------------------------------------------------------------------- accuracy


class TestAccuracyBound:
    @pytest.mark.parametrize("monotone", [False, True])
    @pytest.mark.parametrize("beta", [0.01, 0.1, 0.5])
    def test_exact_tail_mass_is_below_beta(self, beta, monotone):
        rng = np.random.default_rng(1)
        for r in (2, 10, 300):
            for _ in range(10):
                u = rng.normal(scale=rng.uniform(0.1, 20), size=r)
                g = exponential_mechanism_accuracy_bound(
                    r, epsilon=0.8, sensitivity=0.5, beta=beta, monotone=monotone
                )
                p = exponential_mechanism_probabilities(
                    u, epsilon=0.8, sensitivity=0.5, monotone=monotone
                )
                assert p[u <= u.max() - g].sum() <= beta
                if not monotone:
                    pf = permute_and_flip_probabilities(u, epsilon=0.8, sensitivity=0.5)
                    assert pf[u <= u.max() - g].sum() <= beta * (1 + 1e-9)

    def test_bound_is_nearly_attained(self):
        """One optimum and R - 1 candidates exactly g below it: tail mass ≈ β (R-1)/R."""
        r, beta = 1000, 0.1
        g = exponential_mechanism_accuracy_bound(r, epsilon=1.0, sensitivity=1.0, beta=beta)
        u = np.full(r, -g)
        u[0] = 0.0
        tail = exponential_mechanism_probabilities(u, epsilon=1.0, sensitivity=1.0)[1:].sum()
        assert 0.8 * beta < tail <= beta

    def test_empirical_failure_rate(self):
        rng = np.random.default_rng(8)
        u = np.concatenate([[0.0], rng.uniform(-12, -1, size=199)])
        beta, trials = 0.2, 4000
        g = exponential_mechanism_accuracy_bound(u.size, epsilon=2.0, sensitivity=1.0, beta=beta)
        draws = np.array(
            [
                exponential_mechanism(u, epsilon=2.0, sensitivity=1.0, random_state=rng)
                for _ in range(trials)
            ]
        )
        failure = np.mean(u[draws] <= u.max() - g)
        assert failure <= beta + 3 * math.sqrt(beta * (1 - beta) / trials)

    def test_value(self):
        g = exponential_mechanism_accuracy_bound(50, epsilon=0.5, sensitivity=2.0, beta=0.05)
        assert g == pytest.approx(2 * 2.0 / 0.5 * (math.log(50) + math.log(20)))
        gm = exponential_mechanism_accuracy_bound(
            50, epsilon=0.5, sensitivity=2.0, beta=0.05, monotone=True
        )
        assert gm == pytest.approx(g / 2)


# ----------------------------------------------------------------------------- bad input


class TestBadInput:
    FUNCS = (
        exponential_mechanism,
        exponential_mechanism_probabilities,
        exponential_mechanism_log_probabilities,
        permute_and_flip,
        permute_and_flip_probabilities,
    )

    @pytest.mark.parametrize("fn", FUNCS)
    def test_empty_utilities(self, fn):
        with pytest.raises(ValueError, match="utilities is empty"):
            fn([], epsilon=1.0, sensitivity=1.0)

    @pytest.mark.parametrize("fn", FUNCS)
    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_non_finite_utilities(self, fn, bad):
        with pytest.raises(ValueError, match="utilities has non-finite"):
            fn([0.0, bad], epsilon=1.0, sensitivity=1.0)

    @pytest.mark.parametrize("fn", FUNCS)
    @pytest.mark.parametrize("eps", [0.0, -1.0, np.inf, np.nan])
    def test_bad_epsilon(self, fn, eps):
        with pytest.raises(ValueError, match="epsilon"):
            fn([0.0, 1.0], epsilon=eps, sensitivity=1.0)

    @pytest.mark.parametrize("fn", FUNCS)
    @pytest.mark.parametrize("sens", [0.0, -2.0])
    def test_bad_sensitivity(self, fn, sens):
        with pytest.raises(ValueError, match="sensitivity"):
            fn([0.0, 1.0], epsilon=1.0, sensitivity=sens)

    def test_two_dimensional_utilities(self):
        with pytest.raises(ValueError, match="1-dimensional"):
            exponential_mechanism(np.zeros((2, 2)), epsilon=1.0, sensitivity=1.0)

    @pytest.mark.parametrize(
        "kwargs, match",
        [
            ({"n_candidates": 0}, "n_candidates"),
            ({"beta": 0.0}, "beta"),
            ({"beta": 1.0}, "beta"),
            ({"epsilon": 0.0}, "epsilon"),
            ({"sensitivity": -1.0}, "sensitivity"),
        ],
    )
    def test_accuracy_bound_arguments(self, kwargs, match):
        args = {"n_candidates": 10, "epsilon": 1.0, "sensitivity": 1.0, "beta": 0.1} | kwargs
        with pytest.raises(ValueError, match=match):
            exponential_mechanism_accuracy_bound(**args)


def test_public_api_is_exported():
    assert dpuq.exponential_mechanism is exponential_mechanism
    assert dpuq.permute_and_flip is permute_and_flip
    assert dpuq.exponential_mechanism_accuracy_bound is exponential_mechanism_accuracy_bound
    assert dpuq.PrivateERMClassifier is PrivateERMClassifier
