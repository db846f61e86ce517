"""How it is solved: backends, the Pyomo bridge, the checks and the closing step (docs/architecture.md)."""

from formulations import __version__  # one version for the three packages, read from the installed metadata

__all__ = ["__version__"]
