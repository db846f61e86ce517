"""The project's own exceptions for the solver layer.

Third-party solver exceptions are re-raised as these, so callers never depend on
a solver's exception types (qpsolvers/exceptions.py does the same).
"""


class SolverLayerError(Exception):
    """Base class of the solver layer's errors."""


class BackendUnavailableError(SolverLayerError):
    """The requested (layer, backend) is not registered or cannot be used here."""


class UnsupportedModelError(SolverLayerError):
    """The model is outside the class a backend can solve (e.g. nonlinear constraints)."""


class BackendError(SolverLayerError):
    """A backend failed while solving (a crash, a bad return, an exception inside it)."""
