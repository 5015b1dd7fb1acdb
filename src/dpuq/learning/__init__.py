"""Private PAC learning over finite concept classes (Nikolov's notes).

:class:`PrivateERMClassifier` releases one concept of a finite public class with the
exponential mechanism on empirical error (ε-DP, replace-one with ``n`` public);
:func:`pac_sample_complexity` gives the sample size of the lecture notes' theorem. Concept
classes compute the errors of all their concepts at once (no loop over concepts).
"""

from dpuq.learning.concepts import (
    ConceptClass,
    ConceptList,
    DecisionStumps,
    Intervals,
    TabulatedConcepts,
    Thresholds,
    as_concept_class,
)

# the learner subclasses scikit-learn's BaseEstimator: imported on first use, so that
# `import dpuq` (and every CLI call) does not pay for importing scikit-learn
_LAZY = ("PrivateERMClassifier", "pac_sample_complexity")


def __getattr__(name: str):
    if name in _LAZY:
        from dpuq.learning import erm

        return getattr(erm, name)
    raise AttributeError(f"module 'dpuq.learning' has no attribute {name!r}")


__all__ = [
    "ConceptClass",
    "ConceptList",
    "DecisionStumps",
    "Intervals",
    "PrivateERMClassifier",
    "TabulatedConcepts",
    "Thresholds",
    "as_concept_class",
    "pac_sample_complexity",
]
