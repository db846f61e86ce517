"""The experiments: what is run. At the entrance the library interface (``datasets``, the
scikit-learn ``estimator``, ``separability``); the rooms ``runner/`` (``python -m experiments.run``),
``bench/`` (``python -m experiments.bench``), ``coursework/``, ``explore/`` and ``grading/``
(``python -m experiments.grade``)."""

from formulations import __version__  # one version for the three packages, read from the installed metadata

__all__ = ["__version__"]
