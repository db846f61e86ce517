"""Exceptions raised when the data or the parameters handed to a formulation are wrong.

Every message names the problem in words a student understands (which row, which
parameter, which value), so callers can show it as it is.
"""

import numpy as np


class SVMInputError(ValueError):
    """The data or a parameter cannot define an SVM problem."""


class IndefiniteKernelError(SVMInputError):
    """A Gram matrix fails Mercer's condition (it is not positive semidefinite)."""


class MemoryBudgetError(SVMInputError):
    """An O(n^2) object would not fit in the memory budget."""


def plain(value):
    """A value as a message shows it: a numpy scalar as its Python value (1.0, not np.float64(1.0), numpy 2's
    repr); labels from object arrays and Python numbers already are."""
    return value.item() if isinstance(value, np.generic) else value
