"""pytest: skip the Dask back end's doctests when the optional dask extra is not installed."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
    collect_ignore = ["_dask.py", "intervals.py"]
