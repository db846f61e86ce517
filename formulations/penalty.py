r"""C as one number or one bound per sample: 0 <= alpha_i <= C_i.

scikit-learn's ``SVC`` weighs samples by ``sample_weight`` and classes by ``class_weight``;
both are per-sample penalties C_i = C * class_weight[y_i] * sample_weight_i in the soft
primal's weighted hinge

    min 1/2 ||w||^2 + sum_i C_i xi_i        <=>      dual bounds 0 <= alpha_i <= C_i.

Every formulation, check and recovery takes C either as a Python float (the lecture notes'
one C; math.inf is the hard margin) or as a float array of length n (validated by
formulations.validation.check_sample_C: all finite and > 0). These helpers are the one
place where the two are told apart, so a scalar C computes exactly what it did before.
"""

from __future__ import annotations

import math

import numpy as np


def per_sample(C) -> bool:
    """True when C holds one bound per sample (an array), False for one number."""
    return isinstance(C, np.ndarray) and C.ndim == 1


def as_float(C):
    """C as the models keep it: the per-sample array as it is, else one Python float."""
    return C if per_sample(C) else float(C)


def is_finite_positive(C) -> bool:
    """C > 0 and finite: the one number, or every C_i (what a working set decomposes)."""
    values = np.asarray(C, dtype=float)
    return bool(np.all(np.isfinite(values)) and np.all(values > 0))


def is_hard(C) -> bool:
    """The hard margin (no upper bound on alpha): C = inf. A per-sample C is always finite."""
    return not per_sample(C) and math.isinf(C)


def at(C, index):
    """C_i for the samples `index` (an index array or mask): C itself when it is one number."""
    return C[index] if per_sample(C) else C


def largest(C) -> float:
    """max_i C_i: the scale of the upper bounds (C itself when it is one number)."""
    return float(C.max()) if per_sample(C) else C


def weighted_sum(C, values: np.ndarray) -> float:
    """sum_i C_i values_i (C sum_i values_i for one C, computed as before)."""
    if per_sample(C):
        return float(C @ values)
    return C * float(np.sum(values))


def upper_bounds(C, n: int) -> np.ndarray:
    """The n upper bounds of alpha as an array (inf for the hard margin)."""
    return np.array(C, dtype=float) if per_sample(C) else np.full(n, float(C))


def hinge_weights(C):
    """Weights of the hinge terms for formulations.recovery.hinge_argmin: None (all equal) for one C."""
    return C if per_sample(C) else None


def describe(C) -> str:
    """C for a message: "1" or "per-sample C in [0.5, 2]"."""
    if per_sample(C):
        return f"per-sample C in [{C.min():g}, {C.max():g}]"
    return f"{C:g}"
