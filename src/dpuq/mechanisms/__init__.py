"""Privacy-critical building blocks: the exponential and Laplace mechanisms, randomness."""

from dpuq.mechanisms import laplace as _laplace
from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    sample_log_weights,
    sample_log_weights_rows,
)
from dpuq.mechanisms.laplace import *  # noqa: F403 (the Laplace names, laplace.__all__)
from dpuq.mechanisms.randomness import check_random_state
from dpuq.mechanisms.selection import SelectionResult, private_selection

__all__ = [
    "SelectionResult",
    "check_random_state",
    "exponential_mechanism",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "private_selection",
    "sample_log_weights",
    "sample_log_weights_rows",
    *_laplace.__all__,
]
