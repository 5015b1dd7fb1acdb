"""Metrics: coverage and size of prediction sets."""

from dpuq.metrics.coverage import coverage, coverage_by_set_size, set_sizes

__all__ = ["coverage", "coverage_by_set_size", "set_sizes"]
