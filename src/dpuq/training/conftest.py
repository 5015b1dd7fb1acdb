"""pytest: skip this subpackage's doctests when the optional torch extra is not installed."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("torch") is None or importlib.util.find_spec("opacus") is None:
    collect_ignore = [
        "_dp_estimator.py",
        "auto_model.py",
        "estimators.py",
        "models.py",
        "optimizer.py",
        "train.py",
    ]
