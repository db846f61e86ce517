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
import warnings
from functools import partial

import numpy as np

import formulations
from formulations import family, kernels, penalty, scaling, validation
from formulations.model import DUAL, HARD_PRIMAL, KERNEL_DUAL, SOFT_PRIMAL
from solvers import isolation
from solvers.adapters.pyomo_qp import PyomoQPBackend
from solvers.solution import RawResult, Solution, TIME_LIMIT
from solvers.algorithms import primal_working_set, working_set
from solvers.algorithms.compiled_gram import let_go
from solvers.algorithms.kernel_rows import ROWS_FROM_N, FullGram, row_source
from solvers.backends import RECORDS, ranked
from solvers.closing import (close_model, linear_kernel_w, mark_indefinite, mercer, mercer_by_theorem, mercer_extras,
                             resolve_C, to_original_units, unanswered)
from solvers.deadline import Deadline
from solvers.errors import BackendError, UnsupportedModelError
from solvers.methods import METHODS, WORKING_SET_FORMULATIONS
from solvers.profiles import PROFILES, get_profile, native_options
from solvers.registry import BACKEND_NAMES, LAYERS, check_time_limit, get_backend


def _gram(X, y, kernel, K, allow_indefinite: bool) -> tuple[np.ndarray, dict]:
    if K is not None:
        K = validation.check_gram(K, len(y))
        return K, {"kernel": "precomputed", **mercer(K, None, "precomputed", allow_indefinite)}
    kernel = validation.check_kernel(kernel)
    K = kernels.gram(kernel, X)
    return K, {"kernel": kernel.label, **mercer(K, kernel, kernel.label, allow_indefinite)}


#: The layers a working set can put its subproblems through: the two modelling layers, or the
#: solver alone (matrices to qpsolvers; the full problem's solver-alone path is solvers.algorithms.direct.solve).
WORKING_SET_LAYERS = LAYERS + ("direct",)
#: The smallest n at which `method="auto"` takes the working set, per (formulation, layer): where it is
#: faster than the whole QP in that layer (the ratios: docs/benchmarks.md). The linear `dual` never takes it:
#: its whole QP is the lifted O(n d) one, while the working set's linear-kernel rows are O(n^2). The soft
#: primal's rule is primal_working_set.pays (n and d). The solver alone ("direct") has no full path in
#: solve(): always the working set.
AUTO_MIN_N = {
    (KERNEL_DUAL, "cvxpy"): 500, (KERNEL_DUAL, "pyomo"): 1_000, (KERNEL_DUAL, "direct"): 0,
    (SOFT_PRIMAL, "direct"): 0,
    (DUAL, "cvxpy"): math.inf, (DUAL, "pyomo"): math.inf, (DUAL, "direct"): 0,
}


def choose_method(formulation: str, n: int, layer: str, C: float = 1.0, method: str = "auto",
                  d: int | None = None, backend: str | None = None) -> str:
    """The method a solve uses: `method` itself unless "auto"; then the working set for a formulation
    that has one (finite C) from AUTO_MIN_N[(formulation, layer)] points on, else the full problem.
    The kernel dual takes the kernel dual's thresholds whatever its kernel (the linear one too: its whole
    QP is the dense n x n one). The soft primal (d features) takes it where primal_working_set.pays(n, d), and
    where every point can lie on its margin (on_the_margin: d >= n, the whole QP then verified only by the proof),
    except through a cvxpy `backend` that returns no duals (Ipopt): its restricted QPs' multipliers are the
    alpha the proof needs (the checks would read nan where the full QP is verified).
    An explicit "working_set" where there is none is an SVMInputError naming why."""
    validation.check_choice("method", method, METHODS)
    # one C or per-sample bounds C_i (sample or class weights): every working set takes both
    eligible = formulation in WORKING_SET_FORMULATIONS and not penalty.is_hard(C)
    no_duals = (formulation == SOFT_PRIMAL and layer == "cvxpy" and backend in RECORDS
                and not RECORDS[backend].cvxpy_duals)
    if method == "working_set" and not eligible:
        why = ("the hard margin (C = inf) has no bounds to decompose" if formulation in WORKING_SET_FORMULATIONS
               else f"choose one of {list(WORKING_SET_FORMULATIONS)} with a finite C")
        raise validation.SVMInputError(f"method 'working_set' is not available for {formulation!r}: {why}")
    if method == "working_set" and no_duals:
        raise validation.SVMInputError(
            f"method 'working_set' is not available for {formulation!r}: cvxpy returns no duals for {backend}, and "
            "the restricted QPs' duals are the alpha that proves the optimum: use method 'full' or another backend")
    if method != "auto":
        return method
    if formulation == SOFT_PRIMAL and layer != "direct":
        fits = primal_working_set.pays(n, d) or primal_working_set.on_the_margin(n, d)
        return "working_set" if eligible and not no_duals and fits else "full"
    return "working_set" if eligible and n >= AUTO_MIN_N[(formulation, layer)] else "full"


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
    method: str = "auto",
) -> Solution:
    """Solve one SVM formulation with one (layer, backend) and return a `Solution`.

    X (n x d: an array, or a scipy.sparse matrix, taken as CSR and never densified; standardize=True then scales
    it without centring) and y (any two labels) are checked first; `C` is one number or one bound
    per sample (a length-n array: 0 <= alpha_i <= C_i, the weighted hinge sum_i C_i xi_i,
    formulations.penalty); `kernel` (a
    formulations.kernels.Kernel or a kernel name) or a precomputed Gram matrix
    `K` is used by `kernel_dual` only. `options` are native solver options
    applied on top of the profile's.

    Every argument is checked before any model is built (formulations.validation);
    a bad one raises SVMInputError naming it. As scikit-learn's SVC (and experiments.estimator): numbers
    written as text in X are read as the numbers they are (other text is refused, naming its entry), and a
    column y of shape (n, 1) is taken as y.ravel() with a DataConversionWarning (shape (1, n) is refused). Feature scales that differ by more
    than scaling.SCALE_RATIO_WARN give a BadScalingWarning; `standardize=True`
    solves on standardized features and reports w*, b* in the original units.
    An O(n^2) Gram matrix is refused (MemoryBudgetError) if it would exceed
    `memory_budget` bytes (default: $SVM_MEMORY_BUDGET or half the free memory).
    The returned status is `optimal` only for a verified point. An `optimal_inaccurate` one (a solver's claimed
    optimum the checks could not verify) keeps its w*, b* and objective, marked unverified by that status; any
    other status reports none (solvers.checks.review, withhold_unverified).

    method: "full" (the whole QP as one model), "working_set" (the kernel or linear dual by
    solvers.algorithms.working_set, the soft primal by solvers.algorithms.primal_working_set: small subproblems, each a
    model of `layer` solved by `backend`), or "auto" (choose_method: the working set from the
    n where it is faster, AUTO_MIN_N). layer "direct" (the solver alone) runs the working sets only. The method
    used is in `sol.extras["method"]`.

    Times: `sol.solve_s` is the time inside the backend's calls, `sol.build_s` everything else from the
    data to the verified answer (the checks of the input, the Gram matrix or kernel rows, the models, the
    read-back and the closing checks), by either method: build_s + solve_s is the whole call.

    time_limit: seconds from this call's start to its return (solvers.deadline). The backend, or each
    subproblem of a working set, is given what remains; the working sets' own stages and the closing
    checks' proof stop at it; the row is then `time_limit` and its message says where it stopped. The
    solve runs in a process of the solve server (solvers.isolation), killed KILL_GRACE_S past the limit if
    it is still in a step that does not stop by itself (a model's build, a backend's setup), which the
    message then names. The solve server's start (once per process: imports, and numba's compile of the SMO
    functions where its cache is empty) counts against the limit (extras["solve_server_start_s"]); a limit that
    comes during it is a `time_limit` row that says so.
    """
    began = time.perf_counter()
    X, y, labels, C, kernel, time_limit, options = _checked_inputs(
        formulation, X, y, layer=layer, backend=backend, C=C, kernel=kernel, K=K, kernel_form=kernel_form,
        profile=profile, time_limit=time_limit, options=options, standardize=standardize, method=method)
    method = _method_for(formulation, X, y, layer=layer, backend=backend, C=C, method=method, time_limit=time_limit)
    deadline = Deadline(time_limit, began=began)  # the user's promise runs from the call's start
    run = _solve_working_set if method == "working_set" else partial(_solve_full, kernel_form=kernel_form)
    work = partial(run, formulation, X, y, labels, layer=layer, backend=backend, C=C, kernel=kernel, K=K,
                   allow_indefinite=allow_indefinite, profile=profile, deadline=deadline, options=options,
                   standardize=standardize, memory_budget=memory_budget)
    # with a limit, in a process killed past it: a model's build or a backend's setup does not stop by itself
    sol = isolation.run_solve(deadline, work, partial(
        unanswered, formulation=formulation, layer=layer, backend=backend, X=X, y=y, C=C, profile=get_profile(profile),
        deadline=deadline, extras={"labels": labels.as_dict(), "method": method}))
    # the whole call less the backend's, so that both methods count the Gram matrix and the closing checks
    elapsed = time.perf_counter() - began
    sol.build_s = elapsed - sol.solve_s if math.isfinite(sol.solve_s) else elapsed
    return sol


def _method_for(formulation: str, X, y, *, layer: str, backend: str, C, method: str, time_limit) -> str:
    """The method the solve runs (choose_method), refused where the layer cannot run it, with the time-limit
    check and the stall warning that a backend given the whole QP needs."""
    method = choose_method(formulation, len(y), layer, C, method, d=X.shape[1], backend=backend)
    # the working sets stop between subproblems; one whole QP needs the backend to stop, or the solve server's kill
    if method == "full" and not isolation.ISOLATE:
        check_time_limit(layer, backend, time_limit)
    _warn_if_it_stalls(backend, formulation, method, len(y), time_limit)
    if method == "full" and layer == "direct":
        raise validation.SVMInputError(
            "layer 'direct' (the solver alone) runs the working sets only: use method='working_set' or "
            "'auto', a layer 'pyomo' or 'cvxpy', or solvers.algorithms.direct.solve for the whole QP")
    return method


class StallWarning(UserWarning):
    """The backend's QP solver is known to stall on problems of this size, and no time limit was given."""


def _warn_if_it_stalls(backend: str, formulation: str, method: str, n: int, time_limit: float | None) -> None:
    """Warn a call without a time limit that its backend's QP solver stalls on this formulation, by this method, at
    this n (its record's stalls_from): such a call may not return."""
    stalls_from = RECORDS[backend].stalls_from(formulation, method)
    if time_limit is None and stalls_from is not None and n >= stalls_from:
        fastest = ranked("speed")[0]
        warnings.warn(f"{RECORDS[backend].title}'s QP solver stalls on SVM {formulation} problems from n = "
                      f"{stalls_from:,} (here n = {n:,}): this call may not return; pass time_limit=... or choose "
                      f"backend={fastest!r}", StallWarning, stacklevel=3)


def _checked_inputs(formulation, X, y, *, layer, backend, C, kernel, K, kernel_form, profile, time_limit, options,
                    standardize, method):
    """Every argument of `solve` checked before any model is built: (X, y, labels, C, kernel, time_limit,
    options), or an SVMInputError naming the bad one."""
    if formulation in family.formulations():  # the family's members take nu, epsilon: their own entry point
        raise validation.SVMInputError(
            f"{formulation!r} is a member of the SVM family: solve it with solvers.family.solve(formulation, X, y, "
            "layer=..., backend=..., nu=..., C=..., epsilon=...)")
    if formulation not in formulations.QP_FORMULATIONS:
        raise validation.SVMInputError(
            f"unknown formulation {formulation!r}; choose one of {list(formulations.QP_FORMULATIONS)}"
        )
    validation.check_choice("layer", layer, WORKING_SET_LAYERS)
    validation.check_choice("method", method, METHODS)
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
    return X, y, labels, resolve_C(formulation, C, n=len(y)), kernel, time_limit, options


def _solve_full(formulation, X, y, labels, *, layer, backend, C, kernel, K, kernel_form, allow_indefinite, profile,
                deadline, options, standardize, memory_budget) -> Solution:
    """solve(method="full"): the whole QP as one model of `layer`, solved by `backend` in the time that remains
    of `deadline` (solvers.deadline), then closed."""
    if formulation == KERNEL_DUAL:
        validation.check_memory(len(y), "the kernel dual's n x n Gram matrix", layer=layer,
                                kernel_form="dense" if kernel_form == "auto" else kernel_form, budget=memory_budget)
    prof = get_profile(profile)
    adapter = get_backend(layer, backend)
    X, standardizer, scale_extras = _scaled(X, standardize, _translation_invariant(formulation, kernel, K))
    extras: dict = {"labels": labels.as_dict(), "method": "full", **scale_extras}
    factor_L = None
    made_by = kernel if formulation == KERNEL_DUAL and K is None else None  # K from X: the checks recompute some
    if formulation == KERNEL_DUAL:
        isolation.stage("the Gram matrix")
        K, kernel_info = _gram(X, y, kernel, K, allow_indefinite)
        if kernel_form == "auto":  # the faster form for this K, and why (formulations.kernel_dual)
            choice = formulations.kernel_dual.choose_form(K)
            kernel_form, factor_L = choice.form, choice.L
            extras.update(choice.as_dict())
        extras.update(kernel_info, kernel_form=kernel_form)

    isolation.stage(f"the {layer} model's build")
    model = formulations.build(formulation, layer, X=X, y=y, C=C, K=K, kernel_form=kernel_form, L=factor_L)
    if formulation == KERNEL_DUAL:  # the form used, and a factor's rank and ||K - L L'|| / ||K||
        extras.update(formulations.kernel_dual.model_info(model))

    opts = native_options(backend, prof, options)
    closing = dict(formulation=formulation, layer=layer, backend=backend, X=X, y=y, C=C, K=K, profile=prof,
                   deadline=deadline, standardizer=standardizer, backend_version=adapter.version(), extras=extras,
                   kernel=made_by)
    if deadline.passed():  # the Gram matrix and the model took the time: no backend starts past the limit
        raw = RawResult(TIME_LIMIT, "not started",
                           message=deadline.stopped("before the backend was called (building the model)"))
        return close_model(raw, None, **closing)
    given = deadline.for_backend()
    share = f", given the {given:.3g} s left" if given is not None else ""
    isolation.stage(f"the call to {layer}/{backend} (the layer's compilation or load of the model, then the solver)"
                    + share)
    try:
        raw = adapter.solve(model, opts, given)
    except (BackendError, UnsupportedModelError) as exc:
        raw = exc
    isolation.stage("the closing checks")
    return close_model(raw, model, given=given, **closing)


def _solve_working_set(formulation, X, y, labels, *, layer, backend, C, kernel, K, allow_indefinite, profile,
                       deadline, options, standardize, memory_budget) -> Solution:
    """solve(method="working_set"): the data are checked; the working sets close their own Solution (each
    takes `deadline` as its time_limit: the clock that started with the call)."""
    _check_working_set_backend(layer, backend)
    X, standardizer, extras = _scaled(X, standardize, _translation_invariant(formulation, kernel, K))
    if formulation == SOFT_PRIMAL:
        sol = primal_working_set.solve(X, y, C, backend=backend, layer=layer, profile=profile, options=options,
                                       time_limit=deadline)
    else:
        if K is not None:
            K, kernel_info = _gram(X, y, kernel, K, allow_indefinite)
            source = FullGram(K)
            extras.update(kernel_info)
        else:
            kernel = validation.check_kernel(kernel or "linear")
            source = row_source(kernel, X, budget=memory_budget)
            extras["kernel"] = kernel.label
            mercer = mercer_by_theorem(kernel)
            if mercer:
                extras.update(mercer)
            elif isinstance(source, FullGram):  # the Gram matrix fits: Mercer's condition checked on it
                extras.update(mercer_extras(source.K, kernel.label, allow_indefinite))
            else:
                # rows on demand (row_source): below ROWS_FROM_N points only where the n x n matrix does not
                # fit the memory budget; from there on always (the check's eigenvalues would cost O(n^3))
                why = ("does not fit the memory budget" if len(y) < ROWS_FROM_N
                       else f"is not formed from {ROWS_FROM_N:,} points (its eigenvalues would cost O(n^3))")
                if not allow_indefinite:
                    raise validation.SVMInputError(
                        f"the sigmoid kernel is not positive semidefinite in general and its {len(y):,} x "
                        f"{len(y):,} Gram matrix {why} to check it: pass allow_indefinite=True, or a Mercer kernel "
                        "(rbf, poly, linear)")
                extras.update(psd=None, mercer_method=f"not checked: the Gram matrix {why}")
        # the linear dual: the linear kernel's point, closed as the linear dual's (w from alpha)
        sol = working_set.solve(source, y, C, backend=backend, layer=layer, q=working_set.block_size(len(y)),
                                profile=profile, options=options, time_limit=deadline, validate=False,
                                linear_X=X if formulation == DUAL else None)
        held, source = [source], None
        let_go(held, len(y) ** 2)  # the Gram matrix's (or rows') memory freed on another core while the caller goes on
    sol.extras.update(extras, labels=labels.as_dict(), method="working_set")
    mark_indefinite(sol)  # after the kernel's extras: an allowed indefinite kernel says so
    if formulation == KERNEL_DUAL and K is None:
        linear_kernel_w(sol, X, y, kernel)
    if standardizer is not None:  # the working sets closed it on the standardized (or centered) data
        to_original_units(sol, standardizer, X, y)
    return sol


def _scaled(X, standardize: bool, invariant: bool):
    """The features a solve runs on (X; X standardized; or X centered where it sits far from the origin and the
    problem does not depend on the origin), the Standardizer that maps w*, b* back (None without), and the
    extras saying how X is scaled (scaling.check_scaling warns unless it is standardized)."""
    extras: dict = {"scale_ratio": scaling.check_scaling(X, warn=not standardize)} if X.shape[1] else {}
    if standardize:
        standardizer = scaling.Standardizer.fit(X)
        extras["standardized"] = standardizer.as_dict()
    elif invariant and scaling.far_from_origin(X):
        standardizer = scaling.Standardizer.centering(X)
        extras["centered"] = standardizer.mean.tolist()
    else:
        return X, None, extras
    return standardizer.transform(X), standardizer, extras


def _translation_invariant(formulation: str, kernel, K) -> bool:
    """Whether moving every x_i by the same vector changes only b (w*, alpha*, xi* and the objective stay): the
    linear SVMs (b absorbs w'm; the dual's x_i'x_j terms in m cancel on sum_i alpha_i y_i = 0), and the kernel
    dual with the linear kernel. Not poly or sigmoid (functions of x'z); the rbf's rows center themselves."""
    if formulation == KERNEL_DUAL:
        return K is None and kernel is not None and validation.check_kernel(kernel).name == "linear"
    return formulation in (HARD_PRIMAL, SOFT_PRIMAL, DUAL)


def _check_working_set_backend(layer: str, backend: str) -> None:
    """A backend the working set's subproblems can use in `layer`, or an SVMInputError naming the usable ones."""
    if layer == "direct":
        # the qpsolvers route's packages installed (its adapter's `installed`, find_spec), not imported: qpsolvers
        # imports every solver it finds, 7-11 ms before a fresh process's first step; a block's solve imports it
        usable = sorted(name for name, record in RECORDS.items()
                        if record.qpsolvers_name and PyomoQPBackend(record).installed()[0])
        if backend not in usable:
            raise validation.SVMInputError(
                f"backend {backend!r} cannot solve the working set's subproblems alone (qpsolvers); choose one of "
                f"{', '.join(usable)}, or a layer 'pyomo' or 'cvxpy'")
    else:
        get_backend(layer, backend)  # BackendUnavailableError naming the available ones


isolation.warm_where_interactive()  # in a notebook: numba starts while the data load
