"""Exceptions raised when the data or the parameters handed to a formulation are wrong.

Every message names the problem in words a student understands (which row, which
parameter, which value), so callers can show it as it is.
"""


class SVMInputError(ValueError):
    """The data or a parameter cannot define an SVM problem."""


class IndefiniteKernelError(SVMInputError):
    """A Gram matrix fails Mercer's condition (it is not positive semidefinite)."""


class MemoryBudgetError(SVMInputError):
    """An O(n^2) object would not fit in the memory budget."""
