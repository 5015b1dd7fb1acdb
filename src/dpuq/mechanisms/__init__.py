"""Privacy-critical building blocks: the exponential and Laplace mechanisms, randomness."""

from dpuq.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    sample_log_weights,
    sample_log_weights_rows,
)
from dpuq.mechanisms.laplace import (
    discrete_laplace_log_pmf,
    laplace_cdf,
    laplace_lattice,
    laplace_log_density,
    laplace_mechanism,
    laplace_noise,
    laplace_quantile,
    laplace_release,
    laplace_scale,
    laplace_tail_bound,
)
from dpuq.mechanisms.randomness import check_random_state

__all__ = [
    "check_random_state",
    "discrete_laplace_log_pmf",
    "exponential_mechanism",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "laplace_cdf",
    "laplace_lattice",
    "laplace_log_density",
    "laplace_mechanism",
    "laplace_noise",
    "laplace_quantile",
    "laplace_release",
    "laplace_scale",
    "laplace_tail_bound",
    "sample_log_weights",
    "sample_log_weights_rows",
]
