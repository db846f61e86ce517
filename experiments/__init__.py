"""The experiments: data sets, suites, the sweep runner (``python -m experiments.run``) and its reports."""

from formulations import __version__  # one version for the three packages, read from the installed metadata

__all__ = ["__version__"]
