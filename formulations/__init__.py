"""What is solved: the SVM formulations, QPs and LPs, as pure functions from data to model.

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
    HULL_INTERSECTION,
    KERNEL_DUAL,
    L1_DUAL,
    L1_PRIMAL,
    LP_FORMULATIONS,
    PRIMAL_FORMULATIONS,
    QP_FORMULATIONS,
    SEPARABILITY,
    SOFT_PRIMAL,
)
from formulations.errors import SVMInputError

# The one registry of formulations, QPs and LPs alike: name -> (module, prefix of its builders
# `<prefix>pyomo` and `<prefix>cvxpy`). The modules import Pyomo and cvxpy (several seconds), so
# they are loaded on first use (PEP 562), on purpose: `formulations.errors`, `.kernels`, `.names`
# stay cheap to import, and the command line's --help never pays for the solver stack.
REGISTRY = {
    HARD_PRIMAL: ("hard_primal", "build_"),
    SOFT_PRIMAL: ("soft_primal", "build_"),
    DUAL: ("dual", "build_"),
    KERNEL_DUAL: ("kernel_dual", "build_"),
    SEPARABILITY: ("separability", "build_"),
    HULL_INTERSECTION: ("separability", "build_hull_"),
    L1_PRIMAL: ("l1_svm", "build_primal_"),
    L1_DUAL: ("l1_svm", "build_dual_"),
}


def __getattr__(name: str):
    if name == "FORMULATIONS":  # the QPs' modules (each holds both layers' builders side by side)
        return {form: importlib.import_module(f"formulations.{REGISTRY[form][0]}") for form in QP_FORMULATIONS}
    if name == "CvxpyModel":
        from formulations.model import CvxpyModel  # deferred on purpose: Pyomo and cvxpy (see REGISTRY)

        return CvxpyModel
    raise AttributeError(f"module 'formulations' has no attribute {name!r}")


def builder(formulation: str, layer: str):
    """The function that builds `formulation` (any name of REGISTRY) in `layer` ("pyomo" or "cvxpy")."""
    if formulation not in REGISTRY:
        raise SVMInputError(f"unknown formulation {formulation!r}; choose one of {list(REGISTRY)}")
    if layer not in ("pyomo", "cvxpy"):
        raise SVMInputError(f"unknown layer {layer!r}; choose 'pyomo' or 'cvxpy'")
    module, prefix = REGISTRY[formulation]
    return getattr(importlib.import_module(f"formulations.{module}"), f"{prefix}{layer}")


def build(formulation: str, layer: str, *, X=None, y=None, C=None, K=None, kernel_form="dense", L=None,
          abs_form: str = "bound", corr_form: str = "lift"):
    """Build `formulation` (a QP or an LP) in `layer` ("pyomo" or "cvxpy") from already-validated data.

    kernel_form and L are the kernel dual's; abs_form (l1_primal) and corr_form (l1_dual) the LPs'."""
    make = builder(formulation, layer)
    if formulation in (HARD_PRIMAL, SEPARABILITY, HULL_INTERSECTION):
        return make(X, y)
    if formulation == KERNEL_DUAL:
        return make(K, y, C, form=kernel_form, L=L)
    if formulation == L1_PRIMAL:
        return make(X, y, C, abs_form=abs_form)
    if formulation == L1_DUAL:
        return make(X, y, C, corr_form=corr_form)
    return make(X, y, C)


__all__ = [
    "__version__", "FORMULATIONS", "REGISTRY", "build", "builder", "CvxpyModel", "QP_FORMULATIONS", "LP_FORMULATIONS",
    "HARD_PRIMAL", "SOFT_PRIMAL", "DUAL", "KERNEL_DUAL", "PRIMAL_FORMULATIONS", "DUAL_FORMULATIONS",
]
