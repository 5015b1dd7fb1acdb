"""Privacy-critical building blocks: the exponential mechanism and randomness."""

from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    sample_log_weights,
)
from dpuq.mechanisms.randomness import check_random_state

__all__ = [
    "check_random_state",
    "exponential_mechanism",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "sample_log_weights",
]
