"""What is solved: the four SVM formulations as pure functions from data to model.

Each formulation module holds its Pyomo and its cvxpy version side by side,
with the maths in its docstring in the lecture notes' notation.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("svm-duality")
except PackageNotFoundError:  # a source tree that was never pip-installed
    __version__ = "0+unknown"

from formulations.names import (
    DUAL,
    DUAL_FORMULATIONS,
    HARD_PRIMAL,
    KERNEL_DUAL,
    PRIMAL_FORMULATIONS,
    SOFT_PRIMAL,
)

# The formulation modules import Pyomo and cvxpy (several seconds), so they are loaded on first
# use (PEP 562), on purpose: `formulations.errors`, `.kernels`, `.names` stay cheap to import,
# and the command line's --help never pays for the solver stack.
_MODULES = {HARD_PRIMAL: "hard_primal", SOFT_PRIMAL: "soft_primal", DUAL: "dual", KERNEL_DUAL: "kernel_dual"}


def __getattr__(name: str):
    if name == "FORMULATIONS":
        return {form: importlib.import_module(f"formulations.{module}") for form, module in _MODULES.items()}
    if name == "CvxpyModel":
        from formulations.model import CvxpyModel

        return CvxpyModel
    raise AttributeError(f"module 'formulations' has no attribute {name!r}")


def build(formulation: str, layer: str, *, X=None, y=None, C=None, K=None, kernel_form="dense", L=None):
    """Build `formulation` in `layer` ("pyomo" or "cvxpy") from already-validated data."""
    if formulation not in _MODULES:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {list(_MODULES)}")
    module = importlib.import_module(f"formulations.{_MODULES[formulation]}")
    builder = getattr(module, f"build_{layer}", None)
    if builder is None:
        raise ValueError(f"unknown layer {layer!r}; choose 'pyomo' or 'cvxpy'")
    if formulation == HARD_PRIMAL:
        return builder(X, y)
    if formulation == SOFT_PRIMAL:
        return builder(X, y, C)
    if formulation == DUAL:
        return builder(X, y, C)
    return builder(K, y, C, form=kernel_form, L=L)


__all__ = [
    "__version__", "FORMULATIONS", "build", "CvxpyModel",
    "HARD_PRIMAL", "SOFT_PRIMAL", "DUAL", "KERNEL_DUAL", "PRIMAL_FORMULATIONS", "DUAL_FORMULATIONS",
]
