"""Experiments and demos (never imported by privacy-critical code)."""
