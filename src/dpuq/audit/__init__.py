"""Empirical privacy auditing: evidence a data steward can run (docs/how-to/audit.md).

* :func:`epsilon_lower_bound`: a black-box lower bound on ε from draws on two neighbouring
  data sets (an event chosen on held-out draws, Clopper–Pearson on the rest);
* neighbour generators for dpuq's data shapes (:mod:`dpuq.audit.neighbours`) and
  :func:`audit_release`, the worst bound over generators and data sets;
* :func:`audit_training`: one-run canary audit of private training (Steinke, Nasr and
  Jagielski 2023).

A lower bound above the claimed ε proves the claim false (with the stated confidence); a
bound below it proves nothing about the claim.
"""

from dpuq.audit.bounds import (
    clopper_pearson,
    epsilon_from_counts,
    one_run_epsilon_lower_bound,
    one_run_p_value,
)
from dpuq.audit.lower_bound import AuditResult, epsilon_lower_bound
from dpuq.audit.neighbours import (
    GENERATORS,
    Neighbours,
    labelled_score_neighbours,
    loss_neighbours,
    row_neighbours,
    score_neighbours,
    training_set_neighbours,
    worst_case_data,
)
from dpuq.audit.release_audit import ReleaseAudit, audit_release
from dpuq.audit.training_audit import TrainingAudit, audit_training, random_canaries

__all__ = [
    "GENERATORS",
    "AuditResult",
    "Neighbours",
    "ReleaseAudit",
    "TrainingAudit",
    "audit_release",
    "audit_training",
    "clopper_pearson",
    "epsilon_from_counts",
    "epsilon_lower_bound",
    "labelled_score_neighbours",
    "loss_neighbours",
    "one_run_epsilon_lower_bound",
    "one_run_p_value",
    "random_canaries",
    "row_neighbours",
    "score_neighbours",
    "training_set_neighbours",
    "worst_case_data",
]
