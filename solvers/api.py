"""`solve`: data -> validated problem -> model -> backend -> `Solution`.

This is the one function the runner, the estimator and the tests call. It checks
the input before any model is built, times the model's construction and the
solve separately, reads the point and the multipliers back through the
formulation's named components, and recovers w*, b*, xi* and alpha* the way the
lecture notes do (formulations.recovery).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyomo.environ as pyo

import formulations
from formulations import recovery, scaling, validation
from formulations.model import DUAL, HARD_PRIMAL, KERNEL_DUAL, SOFT_PRIMAL, CvxpyModel
from solvers import solution as st
from solvers.checks import compute_checks, review, verified_status, withhold_unverified
from solvers.errors import BackendError, UnsupportedModelError
from solvers.profiles import PROFILES, backend_options, get_profile
from solvers.registry import BACKEND_NAMES, LAYERS, get_backend


def _check_C(formulation: str, C) -> float:
    if formulation == HARD_PRIMAL:
        return math.inf
    if C is None:
        if formulation == DUAL:
            return math.inf  # the hard-margin dual (Example 5.2)
        raise validation.SVMInputError(f"formulation {formulation!r} needs C (C > 0)")
    return validation.check_C(C, allow_infinite=formulation in (DUAL, KERNEL_DUAL))


def _gram(X, y, kernel, K, allow_indefinite: bool) -> tuple[np.ndarray, dict]:
    from formulations.kernels import gram, mercer_check

    if K is not None:
        K = validation.check_gram(K, len(y))
        label = "precomputed"
    else:
        kernel = validation.check_kernel(kernel)
        K = gram(kernel, X)
        label = kernel.label
    report = mercer_check(K, kernel_label=label, allow_indefinite=allow_indefinite)
    return K, {"kernel": label, "min_eigenvalue": report.min_eigenvalue, "psd": report.is_psd,
               "max_eigenvalue": report.max_eigenvalue, "mercer_tolerance": report.tolerance,
               "mercer_method": report.method}


def _values(component) -> np.ndarray:
    """The values of an indexed variable in index order (None -> nan), one attribute read each."""
    return np.array([v.value for v in component.values()], dtype=float)


def _read_pyomo(model, formulation: str) -> dict:
    out = {}
    for name in ("w", "xi", "alpha"):
        if hasattr(model, name):
            out[name] = _values(getattr(model, name))
    if hasattr(model, "b"):
        value = pyo.value(model.b, exception=False)
        out["b"] = math.nan if value is None else float(value)  # b* = 0 is a valid answer
    if formulation in (HARD_PRIMAL, SOFT_PRIMAL):
        duals = [model.dual.get(model.margin[i]) for i in model.I]
        if all(d is not None for d in duals):
            out["alpha"] = np.array(duals, dtype=float)  # d obj / d rhs of a >= row of a min: alpha_i >= 0
    balance = getattr(model, "balance", None)
    if balance is not None:
        row = balance[0] if balance.is_indexed() else balance  # a one-row matrix_rows, or a Constraint
        if model.dual.get(row) is not None:
            out["b_multiplier"] = float(model.dual[row])  # d max / d rhs of sum alpha_i y_i = 0: b*
    return out


def _read_cvxpy(model: CvxpyModel, formulation: str, has_duals: bool) -> dict:
    out = {}
    for name, var in model.variables.items():
        if var.value is not None:
            out[name] = float(var.value) if name == "b" else np.asarray(var.value, dtype=float).ravel()
    if has_duals:
        margin = model.constraints.get("margin")
        if margin is not None and margin.dual_value is not None:
            out["alpha"] = np.asarray(margin.dual_value, dtype=float).ravel()
        balance = model.constraints.get("balance")
        if balance is not None and balance.dual_value is not None:
            out["b_multiplier"] = float(np.asarray(balance.dual_value).ravel()[0])
    return out


def _recover(sol: st.Solution, values: dict, formulation: str, X, y, K, C, *,
             Ku: np.ndarray | None = None) -> np.ndarray | None:
    """Fill w, b, xi, alpha and the decision values from what the solver returned.

    For the kernel dual, f(x_i) - b = (K u)_i with u = y * alpha; `Ku` is that
    vector if the caller has it already (else it is computed here). Returns K u
    (None for the other formulations or without a point), for compute_checks(Ku=...).
    """
    if formulation in (HARD_PRIMAL, SOFT_PRIMAL):
        if "w" not in values or not np.all(np.isfinite(values["w"])):
            return None
        sol.w, sol.b, sol.b_rule = values["w"], values["b"], "primal_variable"
        sol.decision = X @ sol.w + sol.b
        sol.alpha = values.get("alpha")
        sol.xi = recovery.slacks(y, sol.decision)
        return None
    alpha = values.get("alpha")
    if alpha is None or not np.all(np.isfinite(alpha)):
        return None
    sol.alpha = alpha
    sol.b_multiplier = values.get("b_multiplier", math.nan)
    if formulation == DUAL:
        sol.w = recovery.weights_from_alpha(X, y, alpha)
        g = X @ sol.w
    else:
        g = K @ (y * alpha) if Ku is None else Ku
    bias = recovery.recover_bias(alpha, y, g, C)
    sol.b, sol.b_rule = bias.b, bias.rule
    sol.extras.update(b_lower=bias.lower, b_upper=bias.upper, n_free_sv=bias.n_free)
    sol.decision = g + sol.b
    sol.xi = recovery.slacks(y, sol.decision)
    return g if formulation == KERNEL_DUAL else None


def solve(
    formulation: str,
    X,
    y,
    *,
    layer: str,
    backend: str,
    C: float | None = None,
    kernel=None,
    K=None,
    kernel_form: str = "dense",
    allow_indefinite: bool = False,
    profile: str = "default",
    time_limit: float | None = None,
    options: dict | None = None,
    standardize: bool = False,
    memory_budget: float | None = None,
) -> st.Solution:
    """Solve one SVM formulation with one (layer, backend) and return a `Solution`.

    X (n x d) and y (any two labels) are checked first; `kernel` (a
    formulations.kernels.Kernel or a kernel name) or a precomputed Gram matrix
    `K` is used by `kernel_dual` only. `options` are native solver options
    applied on top of the profile's.

    Every argument is checked before any model is built (formulations.validation);
    a bad one raises SVMInputError naming it. Feature scales that differ by more
    than scaling.SCALE_RATIO_WARN give a BadScalingWarning; `standardize=True`
    solves on standardized features and reports w*, b* in the original units.
    An O(n^2) Gram matrix is refused (MemoryBudgetError) if it would exceed
    `memory_budget` bytes (default: $SVM_MEMORY_BUDGET or half the free memory).
    The returned status is `optimal` only for a verified point; otherwise no w*,
    b* or objective is reported (solvers.checks.review, withhold_unverified).
    """
    if formulation not in formulations.FORMULATIONS:
        raise validation.SVMInputError(
            f"unknown formulation {formulation!r}; choose one of {list(formulations.FORMULATIONS)}"
        )
    validation.check_choice("layer", layer, LAYERS)
    validation.check_choice("backend", backend, BACKEND_NAMES)
    validation.check_choice("profile", profile, PROFILES)
    validation.check_choice("kernel_form", kernel_form, ("dense", "factor", "auto"))
    time_limit = validation.check_time_limit(time_limit)
    options = validation.check_options(options)
    if formulation == KERNEL_DUAL and K is None:
        kernel = validation.check_kernel(kernel)
    elif formulation != KERNEL_DUAL and (K is not None or (kernel is not None and validation.check_kernel(kernel).name != "linear")):
        raise validation.SVMInputError(
            f"a kernel or a precomputed K is used by the 'kernel_dual' formulation only, not by {formulation!r}"
        )
    if K is not None and X is None:
        if standardize:
            raise validation.SVMInputError("standardize=True needs X; it cannot be applied to a precomputed K")
        X = np.zeros((len(y), 0))
        y, labels = validation.check_labels(y)
    else:
        X, y, labels = validation.check_data(X, y)
    C = _check_C(formulation, C)
    if formulation == KERNEL_DUAL:
        validation.check_memory(len(y), "the kernel dual's n x n Gram matrix", layer=layer,
                                kernel_form="dense" if kernel_form == "auto" else kernel_form, budget=memory_budget)
    prof = get_profile(profile)
    adapter = get_backend(layer, backend)
    extras: dict = {"labels": labels.as_dict()}
    standardizer = factor_L = None
    if X.shape[1]:
        extras["scale_ratio"] = scaling.check_scaling(X, warn=not standardize)
    if standardize:
        standardizer = scaling.Standardizer.fit(X)
        X = standardizer.transform(X)
        extras["standardized"] = standardizer.as_dict()
    if formulation == KERNEL_DUAL:
        K, kernel_info = _gram(X, y, kernel, K, allow_indefinite)
        if kernel_form == "auto":  # the faster form for this K, and why (formulations.kernel_dual)
            choice = formulations.kernel_dual.choose_form(K)
            kernel_form, factor_L = choice.form, choice.L
            extras.update(choice.as_dict())
        extras.update(kernel_info, kernel_form=kernel_form)

    start = time.perf_counter()
    model = formulations.build(formulation, layer, X=X, y=y, C=C, K=K, kernel_form=kernel_form, L=factor_L)
    build_s = time.perf_counter() - start
    if formulation == KERNEL_DUAL:  # the form used, and a factor's rank and ||K - L L'|| / ||K||
        extras.update(formulations.kernel_dual.model_info(model))

    sol = st.Solution(
        formulation=formulation, layer=layer, backend=backend, status=st.ERROR, solver_status=st.ERROR,
        raw_status="", build_s=build_s, backend_version=adapter.version(), profile=prof.name, extras=extras,
    )
    opts = {**backend_options(backend, prof), **(options or {})}
    try:
        raw = adapter.solve(model, opts, time_limit)
    except (BackendError, UnsupportedModelError) as exc:
        sol.message = str(exc)
        sol.raw_status = type(exc).__name__
        withhold_unverified(sol)
        _mark_indefinite(sol)
        return sol
    sol.solver_status = sol.status = raw.status
    sol.raw_status, sol.iterations, sol.solve_s, sol.message = raw.raw_status, raw.iterations, raw.solve_s, raw.message
    sol.objective = raw.objective
    Ku = None  # K (y * alpha) of the kernel dual: computed once, for the recovery and the checks
    if raw.status in (st.OPTIMAL, st.OPTIMAL_INACCURATE, st.ITERATION_LIMIT, st.TIME_LIMIT):
        values = _read_pyomo(model, formulation) if layer == "pyomo" else _read_cvxpy(model, formulation, raw.has_duals)
        Ku = _recover(sol, values, formulation, X, y, K, C)
    checks = compute_checks(sol, X, y, C, K, tol=prof.check_tol, Ku=Ku)
    sol.checks = checks.as_dict()
    sol.status = verified_status(raw.status, checks)
    candidate = None
    if sol.status != st.OPTIMAL and (formulation == HARD_PRIMAL or math.isinf(C)):
        candidate = _certificate_candidate(model, layer, formulation)
    review(sol, checks, X, y, C, K if formulation == KERNEL_DUAL else None, tol=prof.check_tol, candidate=candidate)
    if standardizer is not None and sol.w is not None:
        # The classifier found on standardized data, expressed in the original units.
        sol.extras.update(w_standardized=sol.w.tolist(), b_standardized=sol.b)
        sol.w, sol.b = standardizer.weights_to_original(sol.w, sol.b)
    withhold_unverified(sol)
    _mark_indefinite(sol)
    return sol


def _mark_indefinite(sol: st.Solution) -> None:
    """A kernel dual solved with allow_indefinite=True on a non-PSD K says so."""
    if sol.formulation != KERNEL_DUAL or sol.extras.get("psd", True):
        return
    sol.extras["indefinite_kernel"] = True
    note = (f"INDEFINITE KERNEL (allow_indefinite=True): {sol.extras.get('kernel')} has min eigenvalue "
            f"{sol.extras.get('min_eigenvalue'):.6g}, so the dual QP is not convex and this point is not "
            f"certified as a global optimum")
    sol.message = f"{note}; {sol.message}" if sol.message else note


def _certificate_candidate(model, layer: str, formulation: str):
    """What the backend left for a hard margin without an optimum: the margin rows'
    multipliers of the primal (a Farkas certificate) or alpha of the dual (a ray)."""
    try:
        if layer == "pyomo":
            if formulation == HARD_PRIMAL:
                values = [model.dual.get(model.margin[i]) for i in model.I]
                return None if any(v is None for v in values) else np.array(values, dtype=float)
            values = _values(model.alpha)
        elif formulation == HARD_PRIMAL:
            values = model.constraints["margin"].dual_value
        else:
            values = model.variables["alpha"].value
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if values is None:
        return None
    values = np.asarray(values, dtype=float).ravel()
    return values if np.all(np.isfinite(values)) else None
