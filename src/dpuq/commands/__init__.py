"""Sub-commands of the ``dpuq`` command line; each module has ``register(subparsers)``."""
