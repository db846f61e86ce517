"""What is solved: the four SVM formulations as pure functions from data to model.

Each formulation module holds its Pyomo and its cvxpy version side by side,
with the maths in its docstring in the lecture notes' notation.
"""

from formulations import dual, hard_primal, kernel_dual, soft_primal
from formulations.model import (
    DUAL,
    DUAL_FORMULATIONS,
    HARD_PRIMAL,
    KERNEL_DUAL,
    PRIMAL_FORMULATIONS,
    SOFT_PRIMAL,
    CvxpyModel,
)

FORMULATIONS = {
    HARD_PRIMAL: hard_primal,
    SOFT_PRIMAL: soft_primal,
    DUAL: dual,
    KERNEL_DUAL: kernel_dual,
}


def build(formulation: str, layer: str, *, X=None, y=None, C=None, K=None, kernel_form="dense", L=None):
    """Build `formulation` in `layer` ("pyomo" or "cvxpy") from already-validated data."""
    try:
        module = FORMULATIONS[formulation]
    except KeyError:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {list(FORMULATIONS)}") from None
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
    "FORMULATIONS", "build", "CvxpyModel",
    "HARD_PRIMAL", "SOFT_PRIMAL", "DUAL", "KERNEL_DUAL", "PRIMAL_FORMULATIONS", "DUAL_FORMULATIONS",
]
