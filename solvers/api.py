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

import formulations
from formulations import penalty, scaling, validation
from formulations.model import HARD_PRIMAL, KERNEL_DUAL
from solvers import solution as st
from solvers.closing import HAS_POINT, certificate_candidate, close, read_model, resolve_C
from solvers.errors import BackendError, UnsupportedModelError
from solvers.profiles import PROFILES, backend_options, get_profile
from solvers.registry import BACKEND_NAMES, LAYERS, check_time_limit, get_backend


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

    X (n x d) and y (any two labels) are checked first; `C` is one number or one bound
    per sample (a length-n array: 0 <= alpha_i <= C_i, the weighted hinge sum_i C_i xi_i,
    formulations.penalty); `kernel` (a
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
    check_time_limit(layer, backend, time_limit)
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
    C = resolve_C(formulation, C, n=len(y))
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
        return close(sol, None, X=X, y=y, C=C, K=K, profile=prof)
    sol.solver_status = sol.status = raw.status
    sol.raw_status, sol.iterations, sol.solve_s, sol.message = raw.raw_status, raw.iterations, raw.solve_s, raw.message
    sol.objective = raw.objective
    values = read_model(model, layer, formulation, raw.has_duals) if raw.status in HAS_POINT else None
    candidate = None
    if formulation == HARD_PRIMAL or penalty.is_hard(C):  # a Farkas certificate or ray, if there is no optimum
        candidate = certificate_candidate(model, layer, formulation)
    return close(sol, values, X=X, y=y, C=C, K=K, profile=prof, candidate=candidate, standardizer=standardizer)
