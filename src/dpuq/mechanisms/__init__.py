"""Privacy-critical building blocks: the exponential and Laplace mechanisms, randomness."""

from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    sample_log_weights,
    sample_log_weights_rows,
)
from dpuq.mechanisms.laplace import (
    laplace_cdf,
    laplace_log_density,
    laplace_mechanism,
    laplace_quantile,
    laplace_scale,
    laplace_tail_bound,
)
from dpuq.mechanisms.randomness import check_random_state

__all__ = [
    "check_random_state",
    "exponential_mechanism",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "laplace_cdf",
    "laplace_log_density",
    "laplace_mechanism",
    "laplace_quantile",
    "laplace_scale",
    "laplace_tail_bound",
    "sample_log_weights",
    "sample_log_weights_rows",
]
