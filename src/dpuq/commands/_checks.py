"""Up-front checks of the numeric options of the long-running commands (demo, reproduce).

Every option is checked before any data is loaded or any model trained, so a typo fails in
milliseconds with one line naming the option, never after minutes of work. Counts are
capped (the cap and its reason are in the message).
"""

from __future__ import annotations

import argparse

from dpuq._validation import check_alpha, check_epsilon, check_in_open_unit, check_size

__all__ = ["check_options"]

#: Count options (attribute -> (cap, reason)).
_COUNTS = {
    "n_calibration": (10_000_000, "calibration points held in memory"),
    "n_test": (10_000_000, "test points held in memory"),
    "splits": (1_000_000, "random splits; the Monte Carlo error is long negligible"),
    "models": (10_000, "models trained one after another"),
    "points": (10_000, "points per curve"),
    "classes": (100_000, "classes of the synthetic logits (memory: points x classes)"),
    "epochs": (100_000, "training epochs"),
    "train_size": (100_000_000, "training points held in memory"),
}
_EPSILONS = ("epsilon", "train_epsilon", "calibration_epsilon")
_DELTAS = ("delta", "train_delta")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_options(args: argparse.Namespace) -> None:
    """Validate the numeric options present on ``args`` (None means "the default")."""
    values = vars(args)
    if values.get("alpha") is not None:
        check_alpha(values["alpha"], "--alpha")
    for name in _EPSILONS:
        if values.get(name) is not None:
            check_epsilon(values[name], _flag(name))
    for name in _DELTAS:
        if values.get(name) is not None:
            check_in_open_unit(values[name], _flag(name))
    for name, (cap, reason) in _COUNTS.items():
        if values.get(name) is not None:
            check_size(values[name], _flag(name), maximum=cap, reason=reason)
