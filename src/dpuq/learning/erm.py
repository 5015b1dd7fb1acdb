"""Private empirical risk minimisation over a finite concept class (Nikolov's notes).

The learner of the lecture notes: release a concept ``c`` with probability
``∝ exp(-ε n L_X(c) / 2)``, the exponential mechanism with utility ``u(X, c) = -L_X(c)``
(the empirical error) and sensitivity ``Δu = 1/n``.

Privacy
-------
Input: ``n`` labelled examples ``(x_i, y_i)``, labels in {0, 1}; a finite concept class fixed
before seeing the data (its grids and callables are public).
Neighbouring relation: replace-one (swap) with ``n`` public — two training sets of the same
size that differ in one labelled example.
Sensitivity: changing one example changes each concept's error count ``n L_X(c)`` by at most
1, so ``Δu = 1/n`` for ``u = -L_X``. The utilities are not monotone (one concept's error can go
up while another's goes down), so the factor 2 stays.
Guarantee: ε-DP, δ = 0 (McSherry and Talwar 2007): see :mod:`dpuq.mechanisms.exponential`.
The code computes the equivalent weights ``exp(-ε · count / 2)`` from integer error counts
(utility ``-n L_X`` with sensitivity 1), so no rounding of ``1/n`` enters the law.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin

from dpuq._estimator import NotFittedError, PrivateEstimator, RepeatedReleaseWarning
from dpuq._validation import check_epsilon, check_in_open_unit, check_positive_int
from dpuq.learning.concepts import ConceptClass, as_concept_class, check_binary_labels
from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
)
from dpuq.mechanisms.randomness import RandomState
from dpuq.privacy.ledger import CALLER_CHARGED, charge
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = ["PrivateERMClassifier", "pac_sample_complexity"]

REPLACE_ONE_EXAMPLE = (
    "replace-one (swap): two training sets of the same public size n that differ in one "
    "labelled example (x, y)"
)


class PrivateERMClassifier(ClassifierMixin, PrivateEstimator):
    """ε-DP learner over a finite concept class: the exponential mechanism on empirical error.

    ``fit`` releases one concept ``c`` with probability ``∝ exp(-ε n L_X(c) / 2)``.
    With ``n >= pac_sample_complexity(|C|, α, β, ε)`` i.i.d. examples labelled by a concept
    of the class, its population error is at most ``α`` with probability at least ``1 - β``.

    Privacy: ε-DP (δ = 0) with respect to the training set under replace-one with ``n``
    public; sensitivity of the empirical error ``1/n``. The concept class must be public (grids
    chosen without the private data). The fitted object keeps only the released concept, its
    index and the privacy report — never the data or the error counts — so it can be shared.

    Parameters
    ----------
    concepts : ConceptClass, list of callables, or ndarray
        The finite class: :class:`~dpuq.learning.Thresholds`,
        :class:`~dpuq.learning.DecisionStumps`, :class:`~dpuq.learning.Intervals`, a list of
        callables (:class:`~dpuq.learning.ConceptList`) or a 0/1 predictions matrix over a
        finite domain (:class:`~dpuq.learning.TabulatedConcepts`).
    epsilon : float
        Privacy parameter, > 0 (keyword-only, no default).
    random_state : None or int
        None (default) draws fresh OS entropy at every release: use it for real releases. An
        int seed gives the same release at every call on the same data (experiments and tests
        only; the report then says "seeded"). A Generator is refused: it would be copied into
        clones and pickles (see :mod:`dpuq._estimator`).

    Attributes
    ----------
    concept_index_ : int
        Index of the released concept in the class.
    concept_ : dict
        The released concept's parameters (e.g. feature, threshold, sign).
    concepts_ : ConceptClass
        What the learner keeps of the class to predict: the public grid class itself, or
        (for :class:`TabulatedConcepts` and :class:`ConceptList`) the released concept alone.
        Pickles hold no table or callables beyond it: the ``concepts`` parameter of those two
        classes is left out of a pickle (set it again with ``set_params`` to refit).
    classes_ : ndarray
        ``array([0, 1])``.
    privacy_report_ : PrivacyReport

    Examples
    --------
    >>> import numpy as np
    >>> from dpuq.learning import DecisionStumps
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(500, 3))
    >>> y = (X[:, 1] > 0.4).astype(int)
    >>> stumps = DecisionStumps(np.linspace(0, 1, 11), n_features=3)
    >>> clf = PrivateERMClassifier(stumps, epsilon=1.0, random_state=0).fit(X, y)
    >>> clf.concept_
    {'concept': 'stump', 'feature': 1, 'threshold': 0.4, 'sign': 1}
    >>> clf.score(X, y)
    1.0
    """

    def __init__(self, concepts: Any, *, epsilon: float, random_state: RandomState = None):
        self.concepts = concepts
        self.epsilon = epsilon
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _counts(self, X, y) -> tuple[ConceptClass, np.ndarray, int]:
        cc = as_concept_class(self.concepts)
        if is_dask_collection(X):  # error counts summed over row blocks on the workers
            from dpuq.scale._dask import dask_error_counts

            return (cc, *dask_error_counts(cc, X, y))
        Xc, yc = cc.check_data(X, y)
        return cc, cc._error_counts(Xc, yc), int(yc.size)

    # ------------------------------------------------------------------ API
    def fit(self, X, y, *, ledger=None, dataset=None) -> PrivateERMClassifier:
        """Release one concept with ε-DP from the training data; returns self.

        With ``ledger``/``dataset`` (:class:`dpuq.Ledger` or its path, and a data set name) ε
        is charged to the data set's budget before any noise is drawn, or the fit is refused.

        Raises
        ------
        ValueError
            Empty concept class, ``epsilon <= 0``, ``X``/``y`` with different numbers of
            samples, non-finite features or labels that are not 0/1.
        """
        epsilon = check_epsilon(self.epsilon)
        if hasattr(self, "concept_index_"):  # the estimator's own state, never the data
            warnings.warn(
                "this PrivateERMClassifier already holds a release: fit again spends "
                f"epsilon = {epsilon:g} again on the training people (the costs add up)",
                RepeatedReleaseWarning,
                stacklevel=2,
            )
        rng = self._release_rng()  # fresh per release, never stored
        cc, counts, n = self._counts(X, y)
        what = "PrivateERMClassifier.fit"
        charge(
            ledger,
            dataset,
            epsilon,
            what=what,
            random_state=self.random_state,
            settings={"n": n, "n_concepts": int(cc.n_concepts)},
        )
        index = exponential_mechanism(
            -counts.astype(float),
            epsilon=epsilon,
            sensitivity=1.0,
            random_state=rng,
            ledger=CALLER_CHARGED,
        )
        # a fitted learner keeps only what was released: for a table or a list of
        # callables, the released concept alone (TabulatedConcepts.released)
        self.concepts_, self._position = cc.released(index)
        if getattr(X, "ndim", None) == 2:
            self.n_features_in_ = int(X.shape[1])
        self.concept_index_ = int(index)
        self.concept_ = cc.describe(index)
        self.classes_ = np.array([0, 1])
        self.n_concepts_ = cc.n_concepts
        self.privacy_report_ = PrivacyReport(
            mechanism="exponential mechanism over a finite concept class (private ERM)",
            epsilon=epsilon,
            delta=0.0,
            relation=Relation.REPLACE_ONE,
            sensitivity="utility -L_X(c) (empirical error): Δu = 1/n",
            details={
                "concept class": repr(cc),
                "n_concepts": cc.n_concepts,
                "n_samples (public)": n,
                "weights": "exp(-ε n L_X(c) / 2)",
            },
            seeded=self.random_state is not None,
        )
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "concept_index_"):
            raise NotFittedError("this PrivateERMClassifier is not fitted yet: call fit(X, y)")

    def predict(self, X) -> np.ndarray:
        """Labels (0/1) given by the released concept."""
        self._check_fitted()
        return self.concepts_.predict(getattr(self, "_position", self.concept_index_), X)

    def score(self, X, y) -> float:
        """Accuracy of the released concept on ``(X, y)``."""
        pred = self.predict(X)
        labels = check_binary_labels(y, pred.size)
        return float(np.mean(pred == labels))

    def selection_log_probabilities(self, X, y) -> np.ndarray:
        """Exact log law of the released concept index on data ``(X, y)``, shape (|C|,)."""
        epsilon = check_epsilon(self.epsilon)
        _, counts, _ = self._counts(X, y)
        return exponential_mechanism_log_probabilities(
            -counts.astype(float), epsilon=epsilon, sensitivity=1.0
        )

    def selection_probabilities(self, X, y) -> np.ndarray:
        """Exact law over concepts, ``P(c) ∝ exp(-ε n L_X(c) / 2)``, shape (|C|,).

        For audits and experiments: it is a function of the private data, not a release.

        Examples
        --------
        >>> from dpuq.learning import Thresholds
        >>> clf = PrivateERMClassifier(Thresholds([0.5, 1.5]), epsilon=2.0)
        >>> p = clf.selection_probabilities([0.0, 1.0], [0, 1])  # errors 0 and 1
        >>> round(float(p[0] / p[1]), 6) == round(float(np.exp(1.0)), 6)
        True
        """
        return np.exp(self.selection_log_probabilities(X, y))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # labels are 0/1
        return tags

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        from dpuq.learning.finite_concepts import ConceptList, TabulatedConcepts

        if isinstance(state.get("concepts"), TabulatedConcepts | ConceptList):
            # a table or callables may hold more than the release: never pickled
            state["concepts"] = None
        return state


def pac_sample_complexity(n_concepts: int, alpha: float, beta: float, epsilon: float) -> int:
    """Sample size at which the private learner PAC-learns a finite class (Nikolov's notes).

    ``n >= max{4 ln(2|C|/β) / (ε α), 2 ln(2|C|/β) / α²}``. Realizable case: with ``n`` i.i.d.
    examples labelled by a concept of ``C``, :class:`PrivateERMClassifier` outputs a concept
    with population error at most ``α`` with probability at least ``1 - β``.
    Argument (the lecture notes): the exponential mechanism's tail bound with ``OPT = 0`` and
    ``Δu = 1/n`` gives ``L_X <= α/2`` with probability ``>= 1 - β/2`` at the first term;
    Hoeffding with a union bound over ``C`` gives ``L_D - L_X <= α/2`` for every concept with
    probability ``>= 1 - β/2`` at the second.

    Parameters
    ----------
    n_concepts : int
        ``|C| >= 1``.
    alpha : float
        Target population error, in (0, 1).
    beta : float
        Failure probability, in (0, 1).
    epsilon : float
        Privacy parameter, > 0.

    Returns
    -------
    int
        The smallest integer ``n`` satisfying the bound.

    Examples
    --------
    >>> pac_sample_complexity(100, 0.1, 0.05, 1.0)
    1659
    """
    k = check_positive_int(n_concepts, "n_concepts")
    a = check_in_open_unit(alpha, "alpha")
    b = check_in_open_unit(beta, "beta")
    eps = check_epsilon(epsilon)
    log_term = math.log(2.0 * k) - math.log(b)
    bound = max(4.0 * log_term / (eps * a), 2.0 * log_term / (a * a))
    return math.ceil(bound)
