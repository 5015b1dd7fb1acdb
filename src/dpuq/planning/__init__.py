"""Levels, bins and sizes of a private calibration: data-free, so free of privacy cost.

Two methods (paper and certified):

- ``method="certified"`` (default): the rank utility of :mod:`dpuq.mechanisms.quantile` at the
  smallest target rank ρ whose coverage certificate
  ``cert(ρ) = (1/(n+1)) Σ_{k=1..n} 1/(1 + r_k)``, ``r_k = (m-1) exp(-(ε/2)(ρ - k + 1))``,
  reaches ``1 - α`` (proof: docs/explanation/calibration.md). Bins: the m minimising the expected
  released
  threshold on jittered uniform reference scores ``(i - 1 + u)/n`` under the exact law.
- ``method="paper"``: Algorithm 3 of Angelopoulos et al. (2022): the inflated level
  ``q̃ = (n+1)(1-α)/(n(1-γα)) + 2 log(m/(γα))/(ε n)``, the γ* that minimises it, and bins
  chosen on simulated uniform scores (:mod:`dpuq.planning._bin_simulation`).

Every function here uses only the public ``n``, ``alpha``, ``epsilon`` and ``n_bins``. The
package is cut along its seams:

- :mod:`dpuq.planning.levels`: levels and certificates (both methods);
- :mod:`dpuq.planning.bins`: the number of bins m* (both methods);
- :mod:`dpuq.planning.sizes`: sample sizes, the smallest ε, and the whole :func:`plan`;
- :mod:`dpuq.planning.online`: the online tracker's block size and coverage bound;
- :mod:`dpuq.planning.joint`: the joint release of several levels (which levels it serves).

Every name is importable from ``dpuq.planning`` itself.
"""

from dpuq.planning.bins import auto_n_bins
from dpuq.planning.joint import joint_plan, joint_served
from dpuq.planning.levels import (
    METHODS,
    TINY_GAMMA,
    certified_level,
    coverage_certificate,
    coverage_upper_bound,
    inflated_level,
    optimal_gamma,
)
from dpuq.planning.online import (
    online_block_size,
    online_coverage_bound,
)
from dpuq.planning.sizes import CalibrationPlan, JointPlan, min_calibration_size, min_epsilon, plan

__all__ = [
    "METHODS",
    "TINY_GAMMA",
    "CalibrationPlan",
    "JointPlan",
    "auto_n_bins",
    "certified_level",
    "coverage_certificate",
    "coverage_upper_bound",
    "inflated_level",
    "joint_plan",
    "joint_served",
    "min_calibration_size",
    "min_epsilon",
    "online_block_size",
    "online_coverage_bound",
    "optimal_gamma",
    "plan",
]
