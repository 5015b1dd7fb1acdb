"""Many releases at once: the batched private quantile and the vectorised split evaluation.

The batched sampler must have, row by row, exactly the law of ``private_quantile`` (hence be
ε-DP per row); the split evaluation must agree with the one-split functions it vectorises.
"""

import math

import numpy as np
import pytest
from scipy import stats

import dpuq
from dpuq.experiments.evaluation import (
    ScorePool,
    count_at_most,
    evaluate_thresholds,
    private_thresholds,
    random_splits,
    split_conformal_thresholds,
)
from dpuq.mechanisms.quantile import private_quantiles

# Each goodness-of-fit test rejects a correct sampler with probability 1e-3 (fixed seeds make
# the suite deterministic; a failure means the law is wrong, not bad luck at this rate).
GOF_LEVEL = 1e-3


def _chi_square_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    """Pearson's test with cells of expected count < 5 pooled into one."""
    keep = expected >= 5
    if (~keep).any():
        observed = np.append(observed[keep], observed[~keep].sum())
        expected = np.append(expected[keep], expected[~keep].sum())
    if expected.size < 2:
        return 1.0
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


def _law_fit(scores_row, level, epsilon, n_bins, draws, seed) -> float:
    """p-value of ``draws`` batched releases (identical rows) against the exact law."""
    thresholds, probs = dpuq.private_quantile_distribution(scores_row, level, epsilon, n_bins)
    rows = np.repeat(np.asarray(scores_row, dtype=float)[None, :], draws, axis=0)
    released = private_quantiles(rows, level, epsilon, n_bins, random_state=seed)
    index = np.searchsorted(thresholds, released)
    assert np.all(thresholds[index] == released), "a release off the grid j/m"
    observed = np.bincount(index, minlength=thresholds.size)
    return _chi_square_pvalue(observed, probs * draws)


class TestBatchedPrivateQuantileLaw:
    @pytest.mark.parametrize(
        ("n", "level", "epsilon", "n_bins", "seed"),
        [
            (20, 0.8, 1.0, 10, 1),  # mass spread over many bins
            (50, 0.9, 5.0, 40, 2),  # concentrated law, many empty bins (gaps)
            (8, 0.6, 0.3, 1000, 3),  # m >> n: gaps dominate
            (200, 0.95, 20.0, 25, 4),  # very peaked law
        ],
    )
    def test_matches_exact_law(self, n, level, epsilon, n_bins, seed):
        scores = np.random.default_rng(seed).uniform(size=n)
        assert _law_fit(scores, level, epsilon, n_bins, 40_000, seed) > GOF_LEVEL

    @pytest.mark.parametrize("n_bins", [4, 8, 100])  # 100 > 4 (n + 1): runs of empty bins
    def test_ties_and_edge_values(self, n_bins):
        scores = np.array([0.0, 0.0, 0.25, 0.25, 0.25, 0.5, 1.0, 1.0, 0.75, 0.5])
        assert _law_fit(scores, 0.7, 2.0, n_bins, 40_000, n_bins) > GOF_LEVEL

    def test_rows_are_released_independently_with_their_own_law(self):
        rng = np.random.default_rng(7)
        a, b = rng.uniform(0.0, 0.5, size=30), rng.uniform(0.5, 1.0, size=30)
        rows = np.array([a, b] * 20_000)
        released = private_quantiles(rows, 0.8, 2.0, 20, random_state=8)
        for row, got in ((a, released[0::2]), (b, released[1::2])):
            t, p = dpuq.private_quantile_distribution(row, 0.8, 2.0, 20)
            obs = np.bincount(np.searchsorted(t, got), minlength=t.size)
            assert _chi_square_pvalue(obs, p * got.size) > GOF_LEVEL
        # independence across rows: the pair (row 0, row 1) does not co-vary
        r = stats.spearmanr(released[0::2], released[1::2]).statistic
        assert abs(r) < 4 / math.sqrt(20_000)

    def test_fast_binning_is_exactly_searchsorted(self):
        from dpuq.mechanisms.quantile import _bin_index_fast, bin_edges, bin_index

        rng = np.random.default_rng(10)
        for m in (2, 3, 7, 10, 1559, 30_000, 999_983, 10_000_000):
            edges = bin_edges(m)
            at = edges[rng.integers(m, size=2000)]
            s = np.concatenate([
                rng.uniform(size=5000), at, np.nextafter(at, 0.0), np.nextafter(at, 2.0),
                np.arange(1, 200) / m, [0.0, 1.0, 5e-324, np.nextafter(1.0, 0.0)],
            ])  # fmt: skip
            s = s[(s >= 0.0) & (s <= 1.0)]
            assert np.array_equal(_bin_index_fast(s, edges), bin_index(s, edges)), m

    def test_uninformative_level_gives_full_sets_without_sampling(self):
        rows = np.random.default_rng(0).uniform(size=(5, 10))
        assert private_quantiles(rows, 1.3, 1.0, 10, random_state=0).tolist() == [1.0] * 5
        got = private_quantiles(rows, 1.0, 1.0, 10, random_state=0, utility="weighted")
        assert got.tolist() == [1.0] * 5

    def test_same_seed_same_draws(self):
        rows = np.random.default_rng(0).uniform(size=(50, 100))
        a = private_quantiles(rows, 0.9, 1.0, 100, random_state=3)
        b = private_quantiles(rows, 0.9, 1.0, 100, random_state=3)
        assert np.array_equal(a, b)

    @pytest.mark.parametrize(
        ("bad", "match"),
        [
            (np.array([0.1, 0.2]), "2-dimensional"),
            (np.array([[0.1, 1.5]]), "outside"),
            (np.array([[0.1, np.nan]]), "non-finite"),
        ],
    )
    def test_bad_scores(self, bad, match):
        with pytest.raises(ValueError, match=match):
            private_quantiles(bad, 0.9, 1.0, 10)

    def test_bad_privacy_parameter(self):
        with pytest.raises(ValueError, match="epsilon"):
            private_quantiles(np.full((2, 3), 0.5), 0.9, 0.0, 10)


class TestSplitEvaluation:
    @pytest.fixture
    def pool_and_probs(self):
        rng = np.random.default_rng(11)
        probs = rng.dirichlet(np.full(6, 0.4), size=300)
        probs[:10] = np.round(probs[:10], 1)  # ties inside rows
        probs[:10] /= probs[:10].sum(axis=1, keepdims=True)
        labels = rng.integers(6, size=300)
        return ScorePool.from_probs(probs, labels), probs, labels

    def test_count_at_most_matches_brute_force(self):
        rng = np.random.default_rng(0)
        s = np.sort(rng.choice([0.0, 0.1, 0.5, 0.5, 0.9, 1.0], size=(40, 7)), axis=1)
        rows = rng.integers(40, size=500)
        t = rng.choice([0.0, 0.05, 0.1, 0.5, 0.7, 1.0, math.inf], size=500)
        expected = (s[rows] <= t[:, None]).sum(axis=1)
        assert np.array_equal(count_at_most(s, rows, t), expected)

    def test_metrics_match_one_split_functions(self, pool_and_probs):
        pool, probs, labels = pool_and_probs
        cal, test = random_splits(300, 100, 150, 12, random_state=1)
        t = split_conformal_thresholds(pool.true_scores[cal], 0.2)
        m = evaluate_thresholds(pool, test, t)
        for s in range(12):
            sets = dpuq.prediction_sets(dpuq.lac_scores(probs[test[s]]), t[s])
            assert t[s] == dpuq.split_conformal_threshold(pool.true_scores[cal[s]], 0.2)
            assert m.coverage[s] == dpuq.coverage(sets, labels[test[s]])
            sizes = dpuq.set_sizes(sets)
            assert m.mean_size[s] == pytest.approx(sizes.mean(), abs=1e-12)
            assert m.singleton[s] == pytest.approx(np.mean(sizes == 1), abs=1e-12)
            assert m.empty[s] == pytest.approx(np.mean(sizes == 0), abs=1e-12)
        assert m.size_counts.sum() == 12 * 150

    def test_infinite_threshold_gives_full_sets(self, pool_and_probs):
        pool = pool_and_probs[0]
        _, test = random_splits(300, 295, None, 3, random_state=2)
        t = split_conformal_thresholds(pool.true_scores[test[:, :3]], 0.1)  # n=3: k > n
        assert np.all(np.isinf(t))
        m = evaluate_thresholds(pool, test, t)
        assert np.all(m.coverage == 1.0) and np.all(m.mean_size == 6)

    def test_splits_are_disjoint_permutations(self):
        cal, test = random_splits(50, 20, 25, 30, random_state=0)
        both = np.concatenate([cal, test], axis=1)
        assert all(np.unique(r).size == 45 for r in both)
        assert both.min() >= 0 and both.max() < 50
        assert not np.array_equal(cal[0], cal[1])

    def test_split_sizes_checked(self):
        with pytest.raises(ValueError, match="exceeds"):
            random_splits(10, 8, 5, 2, random_state=0)

    def test_private_thresholds_cover_over_many_splits(self):
        """Coverage >= 1 - α on average over splits (Theorem 2), within 3 standard errors."""
        rng = np.random.default_rng(5)
        probs = rng.dirichlet(np.full(5, 0.5), size=4000)
        labels = np.array([rng.choice(5, p=p) for p in probs])  # the model is calibrated
        pool = ScorePool.from_probs(probs, labels)
        cal, test = random_splits(4000, 1000, 3000, 200, random_state=rng)
        rel = private_thresholds(pool.true_scores[cal], alpha=0.1, epsilon=1.0, random_state=6)
        assert rel.informative and rel.level > 0.9
        m = evaluate_thresholds(pool, test, rel.thresholds)
        se = m.coverage.std(ddof=1) / math.sqrt(m.coverage.size)
        assert m.coverage.mean() >= 0.9 - 3 * se
