"""Private ERM over finite concept classes: error counts, exact ε-DP, sampler, PAC, API."""

import itertools
import math
import pickle

import numpy as np
import pytest
from scipy import stats

import dpuq
from dpuq import NotFittedError
from dpuq.learning import (
    ConceptList,
    DecisionStumps,
    Intervals,
    PrivateERMClassifier,
    TabulatedConcepts,
    Thresholds,
    pac_sample_complexity,
)
from dpuq.mechanisms.exponential import exponential_mechanism_accuracy_bound

P_MIN = 1e-3  # false-positive rate of each goodness-of-fit test


def brute_force_counts(concepts, X, y):
    """Errors of every concept from its own predict(), one concept at a time."""
    y = np.asarray(y)
    return np.array([np.count_nonzero(concepts.predict(k, X) != y) for k in range(len(concepts))])


def make_classes():
    """One instance of every concept class, with data of the right shape."""
    rng = np.random.default_rng(0)
    grid = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    x_ties = rng.choice(np.concatenate([grid, [-1.0, 0.25, 0.75, 3.0]]), size=60)
    X2 = np.column_stack([x_ties, rng.choice(grid, size=60), rng.normal(size=60)])
    callables = [
        lambda X: np.asarray(X)[:, 0] > 0.5,
        lambda X: np.asarray(X)[:, 1] <= 1.0,
        lambda X: np.zeros(len(X), dtype=int),
    ]
    table = rng.integers(0, 2, size=(7, 5))
    return [
        ("thresholds above", Thresholds(grid), x_ties),
        ("thresholds below", Thresholds(grid, feature=1, positive="below"), X2),
        ("stumps shared grid", DecisionStumps(grid, n_features=3), X2),
        ("stumps 2-d grid", DecisionStumps(np.vstack([grid, grid + 0.1, grid * 2])), X2),
        ("stumps ragged", DecisionStumps([grid, [0.5], [-1.0, 0.0, 1.0]]), X2),
        ("intervals", Intervals(grid, feature=0), X2),
        ("concept list", ConceptList(callables), X2),
        ("tabulated", TabulatedConcepts(table), rng.integers(0, 5, size=60)),
    ]


CLASSES = make_classes()
IDS = [name for name, _, _ in CLASSES]


# ----------------------------------------------------------------------------- error counts


class TestErrorCounts:
    @pytest.mark.parametrize("name, concepts, X", CLASSES, ids=IDS)
    def test_vectorised_counts_match_each_concepts_predictions(self, name, concepts, X):
        rng = np.random.default_rng(1)
        y = rng.integers(0, 2, size=len(X))
        counts = concepts.error_counts(X, y)
        assert counts.shape == (len(concepts),)
        np.testing.assert_array_equal(counts, brute_force_counts(concepts, X, y))
        np.testing.assert_allclose(concepts.empirical_errors(X, y), counts / len(X))

    def test_points_on_a_threshold_are_below_it(self):
        c = Thresholds([1.0])
        assert c.predict(0, [1.0, np.nextafter(1.0, 2.0)]).tolist() == [0, 1]
        iv = Intervals([0.0, 1.0])  # (0, 1]
        assert iv.predict(0, [0.0, 1.0]).tolist() == [0, 1]

    def test_stumps_large_case_matches_brute_force(self):
        rng = np.random.default_rng(2)
        X = np.round(rng.normal(size=(3000, 4)), 1)  # many ties with the grid
        y = (X[:, 2] + 0.3 * rng.normal(size=3000) > 0.2).astype(int)
        stumps = DecisionStumps(np.round(np.linspace(-2, 2, 41), 1), n_features=4)
        np.testing.assert_array_equal(stumps.error_counts(X, y), brute_force_counts(stumps, X, y))

    def test_stump_indexing_and_description(self):
        stumps = DecisionStumps([[0.1, 0.2], [5.0]])
        assert stumps.n_concepts == 6
        described = [stumps.describe(k) for k in range(6)]
        assert [(d["feature"], d["threshold"], d["sign"]) for d in described] == [
            (0, 0.1, 1),
            (0, 0.2, 1),
            (1, 5.0, 1),
            (0, 0.1, -1),
            (0, 0.2, -1),
            (1, 5.0, -1),
        ]


# ----------------------------------------------------------------------------- privacy


def neighbour_laws(clf, X, y, x_values, labels=(0, 1)):
    """Yield (base law, neighbour law) for every single-example change of (X, y)."""
    base = clf.selection_log_probabilities(X, y)
    for i in range(len(y)):
        for x_new, y_new in itertools.product(x_values, labels):
            X2, y2 = np.array(X, copy=True), np.array(y, copy=True)
            X2[i], y2[i] = x_new, y_new
            yield base, clf.selection_log_probabilities(X2, y2)


class TestExactPrivacy:
    """Every single-example change of tiny data sets; exact laws compared."""

    @pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
    def test_thresholds_all_data_sets_of_three(self, epsilon):
        domain = [0.0, 1.0, 2.0, 3.0]
        clf = PrivateERMClassifier(Thresholds([0.5, 1.5, 2.5]), epsilon=epsilon)
        examples = list(itertools.product(domain, [0, 1]))
        worst = 0.0
        for data in itertools.combinations_with_replacement(examples, 3):
            X = np.array([x for x, _ in data])
            y = np.array([label for _, label in data])
            for a, b in neighbour_laws(clf, X, y, domain):
                worst = max(worst, float(np.max(np.abs(a - b))))
        assert worst <= epsilon * (1 + 1e-9)
        assert worst > 0.6 * epsilon  # the enumeration gets close to the bound

    @pytest.mark.parametrize(
        "concepts, X, x_values",
        [
            (
                DecisionStumps([0.5, 1.5], n_features=2),
                np.array([[0.0, 2.0], [1.0, 1.0], [2.0, 0.0], [1.0, 2.0]]),
                [np.array(v, float) for v in itertools.product([0, 1, 2], repeat=2)],
            ),
            (
                Intervals([0.0, 1.0, 2.0, 3.0]),
                np.array([0.5, 1.5, 2.5, 1.0]),
                [-1.0, 0.5, 1.0, 1.5, 2.5, 4.0],
            ),
            (
                TabulatedConcepts(np.array([[0, 0, 1], [0, 1, 1], [1, 1, 0], [1, 0, 1]])),
                np.array([0, 1, 2, 2]),
                [0, 1, 2],
            ),
            (
                ConceptList([lambda X: np.asarray(X) > 1, lambda X: np.asarray(X) % 2 == 0]),
                np.array([0, 1, 2, 3]),
                [0, 1, 2, 3, 4],
            ),
        ],
        ids=["stumps", "intervals", "tabulated", "concept list"],
    )
    def test_other_classes(self, concepts, X, x_values):
        epsilon = 0.8
        clf = PrivateERMClassifier(concepts, epsilon=epsilon)
        rng = np.random.default_rng(3)
        worst = 0.0
        for _ in range(6):  # several label vectors on the same points
            y = rng.integers(0, 2, size=len(X))
            for a, b in neighbour_laws(clf, X, y, x_values):
                worst = max(worst, float(np.max(np.abs(a - b))))
        assert worst <= epsilon * (1 + 1e-9)

    def test_law_is_the_lecture_notes_formula(self):
        rng = np.random.default_rng(4)
        X = rng.uniform(size=(40, 2))
        y = (X[:, 0] > 0.3).astype(int) ^ (rng.random(40) < 0.2)
        stumps = DecisionStumps(np.linspace(0, 1, 9), n_features=2)
        eps = 0.7
        p = PrivateERMClassifier(stumps, epsilon=eps).selection_probabilities(X, y)
        w = np.exp(-eps * 40 * stumps.empirical_errors(X, y) / 2)
        np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)


# ----------------------------------------------------------------------------- sampling


def test_fit_releases_concepts_with_the_exact_law():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=30)
    y = (X > 0.45).astype(int) ^ (rng.random(30) < 0.2)
    concepts = Thresholds(np.linspace(0.05, 0.95, 10))
    clf = PrivateERMClassifier(concepts, epsilon=0.5, random_state=6)
    law = clf.selection_probabilities(X, y)
    # one seed per release (a seed gives the same release at every call)
    draws = np.array([clf.set_params(random_state=k).fit(X, y).concept_index_ for k in range(5000)])
    observed = np.bincount(draws, minlength=law.size)
    expected = law * draws.size
    pooled = expected < 5
    obs = np.append(observed[~pooled], observed[pooled].sum())
    exp = np.append(expected[~pooled], expected[pooled].sum())
    keep = exp > 0
    assert stats.chisquare(obs[keep], exp[keep] * obs.sum() / exp[keep].sum()).pvalue > P_MIN


def test_seeded_fits_are_reproducible_and_default_is_fresh_entropy():
    rng = np.random.default_rng(6)
    X = rng.uniform(size=50)
    y = rng.integers(0, 2, size=50)
    concepts = Thresholds(np.linspace(0, 1, 200))
    a = [PrivateERMClassifier(concepts, epsilon=0.1, random_state=s).fit(X, y) for s in range(8)]
    b = [PrivateERMClassifier(concepts, epsilon=0.1, random_state=s).fit(X, y) for s in range(8)]
    assert [c.concept_index_ for c in a] == [c.concept_index_ for c in b]
    fresh = {PrivateERMClassifier(concepts, epsilon=0.1).fit(X, y).concept_index_ for _ in range(8)}
    assert len(fresh) > 1  # near-uniform law over 200 concepts: 8 equal draws is ~1e-18


# ----------------------------------------------------------------------------- accuracy, PAC


def test_empirical_error_within_the_accuracy_bound():
    """Agnostic data: P(L_X(out) > min L_X + g) <= β with g from the mechanism's bound."""
    rng = np.random.default_rng(7)
    n, beta, eps, trials = 300, 0.2, 0.5, 600
    X = rng.uniform(size=(n, 3))
    y = ((X[:, 1] > 0.6) ^ (rng.random(n) < 0.15)).astype(int)
    stumps = DecisionStumps(np.linspace(0, 1, 33), n_features=3)
    errors = stumps.empirical_errors(X, y)
    gap = exponential_mechanism_accuracy_bound(
        stumps.n_concepts, epsilon=eps, sensitivity=1 / n, beta=beta
    )
    clf = PrivateERMClassifier(stumps, epsilon=eps)
    seeds = rng.integers(2**32, size=trials)  # one seed per release
    released = np.array([errors[clf.set_params(random_state=int(s)).fit(X, y).concept_index_]
                         for s in seeds])  # fmt: skip
    failure = np.mean(released >= errors.min() + gap)
    assert failure <= beta + 3 * math.sqrt(beta * (1 - beta) / trials)
    # the exact law agrees
    law = clf.selection_probabilities(X, y)
    assert law[errors >= errors.min() + gap].sum() <= beta


class TestSampleComplexity:
    def test_smallest_n_satisfying_both_conditions(self):
        for k, a, b, e in [(100, 0.1, 0.05, 1.0), (2, 0.3, 0.5, 0.05), (10**6, 0.01, 1e-3, 10)]:
            n = pac_sample_complexity(k, a, b, e)
            log_term = math.log(2 * k / b)

            first, second = 4 * log_term / (e * a), 2 * log_term / a**2
            assert n >= first and n >= second
            assert n - 1 < first or n - 1 < second

    def test_monotone_in_each_argument(self):
        base = pac_sample_complexity(50, 0.1, 0.1, 0.5)
        assert pac_sample_complexity(500, 0.1, 0.1, 0.5) > base
        assert pac_sample_complexity(50, 0.05, 0.1, 0.5) > base
        assert pac_sample_complexity(50, 0.1, 0.01, 0.5) > base
        assert pac_sample_complexity(50, 0.1, 0.1, 0.05) > base

    def test_realizable_failure_rate_is_below_beta_at_the_bound(self):
        """Thresholds on U[0, 1], target in the class: P(population error > α) <= β."""
        rng = np.random.default_rng(8)
        grid = np.linspace(0, 1, 65)[1:-1]
        concepts = Thresholds(grid)
        target = 20
        alpha, beta, eps, trials = 0.1, 0.1, 0.5, 300

        def failure_rate(n):
            clf = PrivateERMClassifier(concepts, epsilon=eps)
            fails = 0
            for _ in range(trials):
                x = rng.uniform(size=n)
                clf.set_params(random_state=int(rng.integers(2**32)))
                out = clf.fit(x, concepts.predict(target, x)).concept_index_
                fails += abs(grid[out] - grid[target]) > alpha  # exact population error
            return fails / trials

        n = pac_sample_complexity(concepts.n_concepts, alpha, beta, eps)
        assert failure_rate(n) <= beta + 3 * math.sqrt(beta * (1 - beta) / trials)
        assert failure_rate(10) > beta  # the check can fail: far below the bound it does

    @pytest.mark.parametrize(
        "args, match",
        [
            ((0, 0.1, 0.1, 1.0), "n_concepts"),
            ((10, 0.0, 0.1, 1.0), "alpha"),
            ((10, 1.0, 0.1, 1.0), "alpha"),
            ((10, 0.1, 0.0, 1.0), "beta"),
            ((10, 0.1, 0.1, 0.0), "epsilon"),
            ((10, 0.1, 0.1, -1.0), "epsilon"),
        ],
    )
    def test_bad_arguments(self, args, match):
        with pytest.raises(ValueError, match=match):
            pac_sample_complexity(*args)


# ----------------------------------------------------------------------------- estimator API


class TestEstimator:
    def setup_method(self):
        rng = np.random.default_rng(9)
        self.X = rng.uniform(size=(400, 3))
        self.y = (self.X[:, 2] <= 0.7).astype(int)
        self.stumps = DecisionStumps(np.linspace(0, 1, 11), n_features=3)

    def test_fit_predict_score(self):
        clf = PrivateERMClassifier(self.stumps, epsilon=5.0, random_state=0)
        assert clf.fit(self.X, self.y) is clf
        grid_07 = float(np.linspace(0, 1, 11)[7])
        assert clf.concept_ == {"concept": "stump", "feature": 2, "threshold": grid_07, "sign": -1}
        assert clf.concept_ == self.stumps.describe(clf.concept_index_)
        pred = clf.predict(self.X)
        assert pred.shape == (400,) and set(np.unique(pred)) <= {0, 1}
        np.testing.assert_array_equal(pred, self.stumps.predict(clf.concept_index_, self.X))
        assert clf.score(self.X, self.y) == 1.0
        assert clf.classes_.tolist() == [0, 1]
        assert clf.n_concepts_ == 66
        report = clf.privacy_report_
        assert report.epsilon == 5.0 and report.pure
        assert "replace-one" in report.neighbouring and "1/n" in report.sensitivity

    def test_accepts_lists_of_callables_and_prediction_matrices(self):
        callables = [lambda X: np.asarray(X)[:, 2] <= 0.7, lambda X: np.asarray(X)[:, 0] > 0.5]
        clf = PrivateERMClassifier(callables, epsilon=20.0, random_state=0).fit(self.X, self.y)
        assert clf.concept_index_ == 0
        table = np.array([[0, 1, 1, 0], [1, 1, 0, 0]])
        clf = PrivateERMClassifier(table, epsilon=20.0, random_state=0)
        clf.fit(np.repeat(np.arange(4), 20), np.repeat([0, 1, 1, 0], 20))
        assert clf.concept_index_ == 0
        assert clf.predict([1, 3]).tolist() == [1, 0]

    def test_not_fitted(self):
        with pytest.raises(NotFittedError, match="not fitted"):
            PrivateERMClassifier(self.stumps, epsilon=1.0).predict(self.X)

    def test_fitted_object_keeps_no_data(self):
        """Two different data sets that release the same concept give identical pickles."""
        rng = np.random.default_rng(10)
        X2 = rng.uniform(size=(400, 3))
        y2 = (X2[:, 2] <= 0.7).astype(int)
        a = PrivateERMClassifier(self.stumps, epsilon=50.0, random_state=1).fit(self.X, self.y)
        b = PrivateERMClassifier(self.stumps, epsilon=50.0, random_state=1).fit(X2, y2)
        assert a.concept_index_ == b.concept_index_
        assert pickle.dumps(a) == pickle.dumps(b)
        restored = pickle.loads(pickle.dumps(a))
        np.testing.assert_array_equal(restored.predict(X2), a.predict(X2))

    def test_params(self):
        clf = PrivateERMClassifier(self.stumps, epsilon=1.0, random_state=3)
        assert clf.get_params() == {"concepts": self.stumps, "epsilon": 1.0, "random_state": 3}
        assert clf.set_params(epsilon=2.0).epsilon == 2.0
        with pytest.raises(ValueError, match="Invalid parameter"):
            clf.set_params(alpha=1)

    def test_top_level_exports(self):
        for name in [
            "PrivateERMClassifier",
            "DecisionStumps",
            "Thresholds",
            "Intervals",
            "ConceptList",
            "TabulatedConcepts",
            "pac_sample_complexity",
        ]:
            assert name in dpuq.__all__ and hasattr(dpuq, name)


# ----------------------------------------------------------------------------- bad input


class TestBadInput:
    def setup_method(self):
        self.X = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
        self.y = np.array([0, 1, 1])
        self.stumps = DecisionStumps([0.25, 0.5], n_features=2)

    def fit(self, concepts=None, X=None, y=None, epsilon=1.0):
        concepts = self.stumps if concepts is None else concepts
        X = self.X if X is None else X
        y = self.y if y is None else y
        return PrivateERMClassifier(concepts, epsilon=epsilon, random_state=0).fit(X, y)

    @pytest.mark.parametrize("empty", [[], ()])
    def test_empty_concept_list(self, empty):
        with pytest.raises(ValueError, match="concepts is empty"):
            self.fit(concepts=empty)
        with pytest.raises(ValueError, match="concepts is empty"):
            ConceptList(empty)

    @pytest.mark.parametrize(
        "make",
        [
            lambda: Thresholds([]),
            lambda: DecisionStumps([], n_features=2),
            lambda: Intervals([1.0]),
            lambda: TabulatedConcepts(np.zeros((0, 3))),
        ],
    )
    def test_empty_built_in_classes(self, make):
        with pytest.raises(ValueError, match=r"empty|at least"):
            make()

    @pytest.mark.parametrize("eps", [0.0, -1.0, np.nan, np.inf])
    def test_bad_epsilon(self, eps):
        with pytest.raises(ValueError, match="epsilon"):
            self.fit(epsilon=eps)
        with pytest.raises(ValueError, match="epsilon"):
            PrivateERMClassifier(self.stumps, epsilon=eps).selection_probabilities(self.X, self.y)

    def test_shape_mismatch(self):
        with pytest.raises(ValueError, match="X has 3 samples but y has 2 labels"):
            self.fit(y=np.array([0, 1]))

    @pytest.mark.parametrize(
        "y", [np.array([0, 1, 2]), np.array([-1, 1, 1]), np.array([0.0, 0.5, 1.0]), ["a", "b", "a"]]
    )
    def test_labels_not_binary(self, y):
        with pytest.raises((ValueError, TypeError), match="binary labels"):
            self.fit(y=y)

    def test_non_finite_features(self):
        X = self.X.copy()
        X[1, 0] = np.nan
        with pytest.raises(ValueError, match="X has non-finite"):
            self.fit(X=X)

    def test_wrong_number_of_features(self):
        with pytest.raises(ValueError, match="X has 3 feature"):
            self.fit(X=np.zeros((3, 3)))
        with pytest.raises(ValueError, match="feature 4"):
            self.fit(concepts=Thresholds([0.5], feature=4))

    def test_empty_data(self):
        with pytest.raises(ValueError, match="X is empty"):
            self.fit(X=np.zeros((0, 2)), y=np.zeros(0))

    def test_grids(self):
        with pytest.raises(ValueError, match="strictly increasing"):
            Thresholds([0.5, 0.2])
        with pytest.raises(ValueError, match="non-finite"):
            DecisionStumps([0.0, np.inf], n_features=1)
        with pytest.raises(ValueError, match="n_features"):
            DecisionStumps([0.0, 1.0])
        with pytest.raises(ValueError, match="positive"):
            Thresholds([0.5], positive="left")

    def test_tabulated_domain_indices(self):
        table = TabulatedConcepts(np.array([[0, 1], [1, 1]]))
        with pytest.raises(ValueError, match="outside the domain"):
            self.fit(concepts=table, X=np.array([0, 1, 2]))
        with pytest.raises(ValueError, match="binary"):
            TabulatedConcepts(np.array([[0, 2]]))

    def test_callable_returning_wrong_shape(self):
        with pytest.raises(ValueError, match="concept 0 returned shape"):
            self.fit(concepts=[lambda X: np.zeros(2)])

    def test_not_a_concept_class(self):
        with pytest.raises(TypeError, match="concepts must be"):
            self.fit(concepts=42)


# ----------------------------------------------------------------------------- experiment


def test_breast_cancer_and_realizable_experiments_run(tmp_path):
    from dpuq.experiments.private_erm import plot, run_breast_cancer, run_realizable

    bc = run_breast_cancer(epsilons=(0.01, 10.0), n_splits=3, show_progress=False)
    assert bc.expected_error.shape == (2, 3) and bc.n_train + bc.n_test == 569
    assert np.all(bc.erm_error < 0.2)  # a stump on the public grid is a good classifier
    # ε = 10 is close to ERM; ε = 0.01 is close to uniform over stumps (much worse)
    assert abs(bc.expected_error[1].mean() - bc.erm_error.mean()) < 0.03
    assert bc.expected_error[0].mean() > 0.3
    assert "| 10 |" in bc.table()
    r = run_realizable(
        concept_class="intervals",
        epsilons=(1.0,),
        fractions=(1.0,),
        n_trials=20,
        show_progress=False,
    )
    assert r.failure_rate.shape == (1, 1) and r.failure_rate[0, 0] <= 0.5
    path = tmp_path / "erm.png"
    plot(bc, [r], str(path))
    assert path.stat().st_size > 10_000


class TestPicklesHoldOnlyTheRelease:
    """A fitted learner's pickle holds no training feature information (issue: a table
    tabulated on the training points rode along in ``concepts_`` and the parameters)."""

    DOMAIN = 12  # a public finite domain: 12 cells of a public grid

    def _fit(self, x, y):
        import pickle

        rng = np.random.default_rng(0)
        table = rng.integers(0, 2, size=(30, self.DOMAIN))
        table[0] = np.arange(self.DOMAIN) >= 6  # the concept that fits the labels
        clf = PrivateERMClassifier(TabulatedConcepts(table), epsilon=50.0, random_state=0)
        clf.fit(x, y)
        return clf, pickle.dumps(clf)

    def test_neighbouring_training_sets_give_identical_pickles(self):
        x = np.repeat(np.arange(self.DOMAIN), 10)
        y = (x >= 6).astype(int)
        x2 = x.copy()
        x2[0] = 11  # replace one person (cell 0, label 0 -> cell 11, label 1)
        y2 = (x2 >= 6).astype(int)
        a, pa = self._fit(x, y)
        b, pb = self._fit(x2, y2)
        assert a.concept_index_ == b.concept_index_ == 0
        assert pa == pb  # byte for byte: nothing of the training data is in the pickle

    def test_the_table_is_not_kept_or_pickled(self):
        import pickle

        x = np.repeat(np.arange(self.DOMAIN), 5)
        clf, raw = self._fit(x, (x >= 6).astype(int))
        assert clf.concepts_.n_concepts == 1  # the released row only
        back = pickle.loads(raw)
        assert back.concepts is None  # the parameter (the whole table) is left out
        np.testing.assert_array_equal(back.predict(np.arange(self.DOMAIN)), np.arange(12) >= 6)
        with pytest.raises((TypeError, ValueError, AttributeError)):
            back.fit(x, (x >= 6).astype(int))  # refitting needs the concepts again

    def test_invalid_labels_error_quotes_no_value_and_no_count(self):
        y = np.array([0, 1, 987654321, 1, 7, 0])
        with pytest.raises(ValueError, match="binary") as err:
            PrivateERMClassifier(Thresholds([0.5]), epsilon=1.0).fit(np.linspace(0, 1, 6), y)
        assert "987654321" not in str(err.value) and "2" not in str(err.value)
