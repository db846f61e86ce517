"""The family's input checks: one clear error naming the problem, before any Gram matrix or model is made.

    parameters  check_parameters: each member's own (nu in (0, 1], C > 0 finite or epsilon-SVR's inf, epsilon >= 0
                finite; the LIBLINEAR members' bias, check_intercept), nothing it does not take; check_nu_balance:
                nu-SVC's dual is feasible only for nu <= 2 min(l_+, l_-)/l; check_sample_weight: one weight > 0
                per point, for the LIBSVM members
    data        check_targets (regression: real, finite, one per row), check_novelty_set (one-class: two points
                at least); the labels (two, or two or more for Crammer-Singer) and X through formulations.validation
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from formulations import validation
from formulations.errors import SVMInputError
from formulations.family import CLASSIFICATION, MEMBERS, MULTICLASS, NOVELTY, REGRESSION, Member
from formulations.family.names import EPS_SVR, NU_SVR, SQUARED_HINGE


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise SVMInputError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if math.isnan(value):
        raise SVMInputError(f"{name} is NaN: give a number")
    return value


def check_nu(nu) -> float:
    """0 < nu <= 1: nu bounds a fraction (of margin errors from above, of support vectors from below)."""
    if nu is None:
        raise SVMInputError("nu is missing: give 0 < nu <= 1 (the fraction of support vectors it bounds from below)")
    nu = _number(nu, "nu")
    if not 0.0 < nu <= 1.0:
        raise SVMInputError(f"nu must be in (0, 1], got {nu:g}: it bounds a fraction of the points")
    return nu


def check_epsilon(epsilon) -> float:
    """The tube's half-width: finite, >= 0."""
    if epsilon is None:
        raise SVMInputError("epsilon is missing: give the tube's half-width, epsilon >= 0")
    epsilon = _number(epsilon, "epsilon")
    if not (0.0 <= epsilon < math.inf):
        raise SVMInputError(f"epsilon must be finite and >= 0 (the tube's half-width), got {epsilon:g}")
    return epsilon


CHECKS = {"nu": check_nu, "epsilon": check_epsilon, "C": lambda C: validation.check_C(C)}
#: the members whose C may be inf: epsilon-SVR's hard tube (every target within epsilon; scikit-learn's SVR(C=inf))
INFINITE_C = (EPS_SVR,)

#: The bias of the LIBLINEAR members, the first the default (docs/family.md): "free" (unregularized, the notes'
#: C-SVM's), "none" (LIBLINEAR without -B), "regularized" (LIBLINEAR's -B, scikit-learn's fit_intercept: a constant
#: feature intercept_scaling appended to X). Crammer-Singer has no free bias in LIBLINEAR, nor here.
INTERCEPTS = {SQUARED_HINGE: ("free", "none", "regularized")}
INTERCEPTS_MULTICLASS = ("none", "regularized")


def check_intercept(member: Member, intercept, scaling) -> dict:
    """{"intercept": the bias's convention, "intercept_scaling": its constant feature (regularized only)}."""
    allowed = INTERCEPTS.get(member.name, INTERCEPTS_MULTICLASS)
    intercept = allowed[0] if intercept is None else intercept
    if intercept not in allowed:
        why = " (LIBLINEAR's Crammer-Singer has no bias of its own)" if member.task == MULTICLASS else ""
        raise SVMInputError(f"intercept {intercept!r} is not available for {member.name}{why}; choose one of "
                            f"{list(allowed)}")
    if intercept != "regularized":
        if scaling is not None:
            raise SVMInputError(f"intercept_scaling is the regularized bias's constant feature; {member.name} has "
                                f"intercept={intercept!r}: pass intercept='regularized' or no intercept_scaling")
        return {"intercept": intercept, "intercept_scaling": None}
    scaling = 1.0 if scaling is None else _number(scaling, "intercept_scaling")
    if not 0.0 < scaling < math.inf:
        raise SVMInputError(f"intercept_scaling must be finite and > 0 (the constant feature), got {scaling:g}")
    return {"intercept": intercept, "intercept_scaling": scaling}


def check_parameters(member: Member, given: dict) -> dict:
    """The member's parameters checked; one it does not take, given, is an error too (a typo never passes)."""
    extra = sorted(name for name, value in given.items() if value is not None and name not in member.parameters)
    if extra:
        raise SVMInputError(f"{member.name} takes {', '.join(member.parameters)}, not {', '.join(extra)}")
    checks = {**CHECKS, "C": _check_C_of(member)}
    checked = {name: checks[name](given.get(name)) for name in member.parameters if name in checks}
    if "intercept" in member.parameters:
        checked.update(check_intercept(member, given.get("intercept"), given.get("intercept_scaling")))
    return checked


def _check_C_of(member: Member):
    """C's check for `member`: finite, or inf where it has a meaning (INFINITE_C)."""
    if member.name in INFINITE_C:
        return lambda C: validation.check_C(C, allow_infinite=True)
    if member.name == NU_SVR:
        return lambda C: _finite_nu_svr_C(C)
    return lambda C: validation.check_C(C)


def _finite_nu_svr_C(C) -> float:
    C = validation.check_C(C, allow_infinite=True)
    if math.isinf(C):
        raise SVMInputError("C = inf has no meaning for nu-SVR: its dual's multipliers sum to C nu (give a finite C; "
                            "for every target within a tube, epsilon-SVR with C = inf is the hard tube)")
    return C


def check_nu_balance(nu: float, y: np.ndarray, weights: np.ndarray | None = None) -> None:
    """nu-SVC's dual (sum alpha_i = nu, sum alpha_i y_i = 0, alpha_i <= 1/l, or omega_i / W with weights) has a
    point only when each class can carry nu/2: nu <= 2 min(l_+, l_-)/l (2 min(W_+, W_-)/W, LIBSVM's check)."""
    why = nu_balance_problem(nu, y, weights)
    if why:
        raise SVMInputError(f"nu = {nu:g} is infeasible for this class balance: {why}")


def _class_totals(y: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float]:
    """(the smaller class's total, the total) for labels y (-1/+1): weights' sums, or counts without weights."""
    if weights is None:
        return float(min(np.sum(y > 0), np.sum(y < 0))), float(len(y))
    return float(min(weights[y > 0].sum(), weights[y < 0].sum())), float(weights.sum())


def nu_svc_limit(y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The largest nu nu-SVC's dual has a point for, labels y (-1/+1): 2 min(n+, n-)/n, 2 min(W+, W-)/W with
    weights (check_nu_balance)."""
    smaller, total = _class_totals(y, weights)
    return 2.0 * smaller / total


def nu_balance_problem(nu: float, y: np.ndarray, weights: np.ndarray | None = None) -> str:
    """"" where nu-SVC's dual has a point for labels y (-1/+1) and weights, else the bound nu must keep."""
    smaller, total = _class_totals(y, weights)
    limit = 2.0 * smaller / total
    if nu <= limit:
        return ""
    if weights is not None:
        return (f"weighted nu-SVC needs nu <= 2 min(W+, W-)/W = 2 * {smaller:.6g} / {total:.6g} = {limit:.6g} (W: the "
                "sums of the weights)")
    return f"nu-SVC needs nu <= 2 min(n+, n-)/n = 2 * {int(smaller)} / {int(total)} = {limit:.6g}"


def check_sample_weight(member: Member, weights, n: int) -> np.ndarray | None:
    """One weight omega_i > 0 per point (LIBSVM's W_i), for the members that take them; None stays None."""
    if weights is None:
        return None
    if not member.weighted:
        raise SVMInputError(f"{member.name} takes no sample_weight (the LIBSVM members do: "
                            f"{', '.join(name for name, m in MEMBERS.items() if m.weighted)})")
    arr = validation.check_array_numeric(weights, "sample_weight")
    if arr.shape != (n,):
        raise SVMInputError(f"sample_weight must have shape ({n},) (one weight per point), got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise SVMInputError(f"sample_weight must be finite and > 0 (leave a point of weight 0 out, as LIBSVM does); "
                            f"sample_weight[{i}] = {arr[i]:g}")
    return arr



def check_targets(y, n: int) -> np.ndarray:
    """Regression targets: one real, finite number per row of X."""
    if y is None:
        raise SVMInputError("y is missing: regression needs one real target per row of X")
    validation.refuse_masked(y, "y")
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise SVMInputError(f"y must be one-dimensional (one target per row), got shape {arr.shape}")
    if arr.shape[0] != n:
        raise SVMInputError(f"X has {n} rows but y has {arr.shape[0]} targets: they must match")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise SVMInputError(f"regression targets y must be real numbers, got dtype {arr.dtype}") from None
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argmax(bad))
        kind = "NaN" if np.isnan(arr[row]) else "infinity"
        raise SVMInputError(f"regression targets y contain {kind} at row {row} ({int(bad.sum())} non-finite in all)")
    return arr


def check_novelty_set(X, y) -> None:
    """The one-class SVM takes no labels and needs two points at least (one point is its own region: nothing to
    learn, and LIBSVM's rho is then arbitrary)."""
    if y is not None:
        raise SVMInputError("the one-class SVM takes no y (it learns from unlabelled points): pass y=None")
    if X.shape[0] < 2:
        raise SVMInputError(f"the one-class SVM needs at least 2 points, got {X.shape[0]}")


def check_y(member: Member, X, y):
    """y for the member's task: -1/+1 labels and their LabelMap, real targets, or None; (y, labels or None)."""
    n = X.shape[0]
    if member.task == CLASSIFICATION:
        if y is None:
            raise SVMInputError(f"{member.name} needs labels y of two classes")
        return validation.check_labels(y, n)
    if member.task == MULTICLASS:
        if y is None:
            raise SVMInputError(f"{member.name} needs labels y of two or more classes")
        return validation.check_classes(y, n)
    if member.task == REGRESSION:
        return check_targets(y, n), None
    assert member.task == NOVELTY
    check_novelty_set(X, y)
    return None, None
