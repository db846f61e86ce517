"""The SVM family's solves: data -> checked input -> model -> backend -> the member's own checks -> `Solution`.

`solve(formulation, X, y, ...)` is solvers.api.solve for the family's members (formulations.family): the same
backends and layers (solvers.registry), profiles, time limits (solvers.deadline; with a limit, in a process of
the solve server, killed past it: solvers.isolation), and the same one constructor of a row from a backend's
answer (solvers.closing.answered). Every row then goes through `close`, whatever produced its point:

    read back   the member's variables and its rows' multipliers by their names (alpha, alpha_star, w, b, rho,
                eps; margin, upper, lower, balance, total)
    conditions  the member's optimality conditions recomputed from the point (formulations.family.<member>
                .conditions): the primal and dual objectives, every residual on its own scale (the bounds relative
                to the bound, the equalities to their size, complementarity in the units of the margin or the
                tube, stationarity relative to ||w||), and what the multipliers mean (rho, eps, the fractions
                nu bounds, the tube)
    verdict     `optimal` only when the solver claimed an optimum AND the gap |P - D| (relative to the size of
                the objectives' terms) and every residual are within the profile's check_tol, AND the solver's
                objective is the one recomputed at its point; a claim the problem cannot have (the checked
                inputs make every member feasible and bounded) is an `error` row; no point is reported as a
                result without a verified or claimed optimum (solvers.checks.withhold_unverified)

The kernel duals of the one-class SVM, epsilon-SVR, nu-SVC and nu-SVR can also be solved by the compiled SMO
(method "smo", and "auto" from AUTO_SMO_MIN_N points: solvers.family_smo); its point is closed the same way.

The member-specific values go in `Solution.extras` (rho, epsilon, the fractions, alpha_star, coef: f(x) =
sum_i coef_i k(x_i, x) + b); `Solution.alpha` is alpha (alpha_star is in extras for the regressions).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from functools import partial

import numba
import numpy as np

from formulations import family, kernels, validation
from formulations.family import validation as family_validation
from formulations.family.common import FamilyData
from formulations.family.names import EPS_SVR, KERNEL_DUAL, NU_SVC, PRIMAL
from solvers import family_units, isolation
from solvers.solution import (
    ERROR, INFEASIBLE, OPTIMAL, OPTIMAL_INACCURATE, RawResult, Solution, TIME_LIMIT, UNBOUNDED
)
from solvers.checks import withhold_unverified
from solvers.closing import HAS_POINT, answered, mercer, note_indefinite
from solvers.deadline import Deadline
from solvers.family_proof import TubeLPFailed, hard_tube_width, prove, second_order
from solvers.family_smo import SMO_MEMBERS, solve_dual
from solvers.reference import Gram
from solvers.errors import BackendError, UnsupportedModelError
from solvers.profiles import PROFILES, get_profile, native_options
from solvers.registry import BACKEND_NAMES, LAYERS, available_backends, check_time_limit, get_backend

#: The rows whose multipliers are a member's alpha and alpha* in a primal (d objective / d right-hand side of a
#: >= row of a minimisation: >= 0 in both layers), and the dual rows whose multipliers the solver also reports.
PRIMAL_ROWS = {"margin": "alpha", "upper": "alpha", "lower": "alpha_star"}
DUAL_ROWS = ("balance", "total")
VARIABLES = ("w", "b", "rho", "eps", "alpha", "alpha_star")
#: solve(method=...): the whole QP as one model through the layer's backend ("full"), the compiled SMO for the
#: kernel duals of solvers.family_smo.SMO_MEMBERS ("smo": LIBSVM's methods, the row's layer "direct" and backend
#: "smo"), or "auto": SMO for those from AUTO_SMO_MIN_N points on, where the whole QP through a layer is the
#: slower (docs/family.md); below it the layer and backend asked for, the showcase's own models.
METHODS = ("full", "smo", "auto")
AUTO_SMO_MIN_N = 500
#: the (layer, backend) an SMO row names: the solver alone, no modelling layer
SMO_ROW = ("direct", "smo")


def solve(formulation: str, X, y=None, *, layer: str, backend: str, C=None, nu=None, epsilon=None, kernel=None,
          K=None, profile: str = "default", time_limit: float | None = None, options: dict | None = None,
          memory_budget: float | None = None, intercept: str | None = None,
          intercept_scaling: float | None = None, sample_weight=None, allow_indefinite: bool = False,
          method: str = "auto") -> Solution:
    """Solve one family formulation (formulations.family.formulations()) with one (layer, backend).

    X: n x d (dense or scipy.sparse); y: two labels (nu-SVC, squared hinge), two or more (Crammer-Singer), real
    targets (the regressions), None (one-class). C, nu, epsilon, intercept, intercept_scaling: the member's
    parameters (formulations.family.MEMBERS[...].parameters; the bias's conventions in formulations.family
    .liblinear), checked first, and one it does not take is refused. sample_weight: one weight > 0 per point for
    the LIBSVM members (LIBSVM's W_i: each point's bound in the dual scaled, formulations.family.<member>).
    kernel (a formulations.kernels.Kernel or a name) or a precomputed K: the kernel duals only; the primals and
    nu-SVC's linear dual are linear. method: METHODS (extras["method"] says the one used). Every input is checked
    before the Gram matrix or any model is made (an SVMInputError naming the bad one). A kernel not positive semidefinite by
    theorem (sigmoid, a precomputed K) is tested on its Gram matrix and refused where indefinite
    (IndefiniteKernelError), unless allow_indefinite: then the dual is non-convex, and its row is never `optimal`
    (`close`). The row is `optimal` only when verified (module docstring); extras hold the member's values.
    """
    began = time.perf_counter()
    member, kind = family.member_of(formulation)
    validation.check_choice("layer", layer, LAYERS)
    validation.check_choice("backend", backend, BACKEND_NAMES)
    validation.check_choice("profile", profile, PROFILES)
    validation.check_choice("method", method, METHODS)
    time_limit = validation.check_time_limit(time_limit)
    options = validation.check_options(options)
    params = family_validation.check_parameters(member, {"C": C, "nu": nu, "epsilon": epsilon, "intercept": intercept,
                                                         "intercept_scaling": intercept_scaling})
    X, y, labels = _checked_data(member, kind, X, y, kernel, K)
    weights = family_validation.check_sample_weight(member, sample_weight, X.shape[0])
    if member.name == NU_SVC:
        family_validation.check_nu_balance(params["nu"], y, weights)
    if kind == KERNEL_DUAL:
        kernel = None if K is not None else validation.check_kernel(kernel)
    method = choose_method(formulation, X.shape[0], method, kernel,
                           bounded=weights is None and math.isfinite(float(params.get("C") or 0.0)),
                           backend_options=bool(options))
    if method == "smo":
        options = _smo_options(options)
    if kind == KERNEL_DUAL:  # the layer's model of alpha and alpha* is a 2n x 2n form; SMO keeps K and its rows
        size = X.shape[0] * (2 if member.task == family.REGRESSION and method == "full" else 1)
        validation.check_memory(size, f"{formulation}'s Gram matrix", layer=layer, budget=memory_budget,
                                kernel_form="dense" if method == "full" else "rows")
    if not isolation.ISOLATE and method == "full":
        check_time_limit(layer, backend, time_limit)
    get_backend(layer, backend)  # an unavailable backend names the available ones, before any work
    deadline = Deadline(time_limit, began=began)
    extras = {"member": member.name, "kind": kind, "parameters": params, "method": method}
    if labels is not None:
        extras["labels"] = labels.as_dict()
    if weights is not None:  # the models and checks read them with the parameters; the row says they were given
        extras["weighted"] = True
        params = {**params, "sample_weight": weights}
    work = partial(_solve_model, formulation, X, y, params, kernel, K, layer=layer, backend=backend, profile=profile,
                   deadline=deadline, options=options, extras=extras, method=method,
                   allow_indefinite=allow_indefinite)
    row_layer, row_backend = SMO_ROW if method == "smo" else (layer, backend)  # the row names what ran
    sol = isolation.run_solve(deadline, work, partial(_unanswered, formulation=formulation, layer=row_layer,
                                                      backend=row_backend, profile=profile, deadline=deadline,
                                                      extras=extras))
    elapsed = time.perf_counter() - began
    sol.build_s = elapsed - sol.solve_s if math.isfinite(sol.solve_s) else elapsed
    return sol


def choose_method(formulation: str, n: int, method: str = "auto", kernel=None, bounded: bool = True,
                  backend_options: bool = False) -> str:
    """The method a solve of `formulation` on n points with `kernel` (a checked Kernel; None: a precomputed K)
    uses (METHODS): `method` itself unless "auto" ("full" where options for the backend are given: they are
    the backend's, not SMO's); "smo" where the formulation has none, for a kernel not positive semidefinite by
    theorem (sigmoid), or where the dual is not in SMO's form (bounded False: weighted points or C = inf), is an
    SVMInputError saying why."""
    validation.check_choice("method", method, METHODS)
    member, kind = family.member_of(formulation)
    has_smo = kind == KERNEL_DUAL and member.name in SMO_MEMBERS
    if method == "smo" and not has_smo:
        raise validation.SVMInputError(f"method 'smo' is for the kernel duals of {', '.join(SMO_MEMBERS)}; "
                                       f"{formulation} has none: use method 'full'")
    # an indefinite K makes the dual nonconvex: SMO stops at a point whose KKT conditions hold locally only
    indefinite = kernel is not None and not kernel.mercer_by_theorem
    if method == "smo" and indefinite:
        raise validation.SVMInputError(f"method 'smo' needs a positive semidefinite kernel: the {kernel.name} kernel's "
                                       "K is indefinite in general, and SMO's point would be a local optimum the "
                                       "checks cannot tell from the optimum; use method 'full'")
    # solvers.family_smo sets up one bound for every point, and a finite one
    if method == "smo" and not bounded:
        raise validation.SVMInputError("method 'smo' takes neither sample weights nor C = inf (the hard tube): "
                                       "use method 'full'")
    has_smo = has_smo and not indefinite and bounded and not backend_options
    if method == "auto":
        return "smo" if has_smo and n >= AUTO_SMO_MIN_N else "full"
    return method


def _smo_options(options: dict) -> dict:
    """SMO's options: {"max_iter": steps at most} or none (LIBSVM's cap: solvers.family_smo); another is refused."""
    unknown = sorted(set(options) - {"max_iter"})
    if unknown:
        raise validation.SVMInputError(f"method 'smo' takes the option max_iter only, not {', '.join(unknown)}")
    steps = options.get("max_iter")
    if steps is not None and not (isinstance(steps, (int, np.integer)) and not isinstance(steps, bool) and steps >= 1):
        raise validation.SVMInputError(f"options max_iter must be an integer >= 1 (SMO's steps), got {steps!r}")
    return options


def _checked_data(member, kind: str, X, y, kernel, K):
    """(X, y, labels): X checked (a precomputed K's own checks for the kernel duals), y for the member's task."""
    if kind != KERNEL_DUAL and (K is not None or (kernel is not None
                                                  and validation.check_kernel(kernel).name != "linear")):
        raise validation.SVMInputError(f"a kernel or a precomputed K is for the kernel duals; {member.name}_{kind} "
                                       "is linear")
    if K is not None and X is None:  # K's own checks (square, finite, symmetric, one row per y) name a bad one
        n = len(y) if y is not None and np.ndim(y) >= 1 else (np.shape(K)[0] if np.ndim(K) == 2 else 0)
        validation.check_gram(K, n)
        X = np.zeros((n, 0))
    else:
        X = validation.check_X(X)
    y, labels = family_validation.check_y(member, X, y)
    return X, y, labels


def _solve_model(formulation, X, y, params, kernel, K, *, layer, backend, profile, deadline, options, extras,
                 method="full", allow_indefinite=False):
    """The model built, solved by the backend in the time left (or the kernel dual by SMO), and closed."""
    member, kind = family.member_of(formulation)
    prof = get_profile(profile)
    adapter = get_backend(layer, backend)
    if kind == KERNEL_DUAL:
        isolation.stage("the Gram matrix")
        if K is not None:
            K = validation.check_gram(K, X.shape[0])
            extras["kernel"] = "precomputed"
        else:
            K = kernels.gram(kernel, X)
            extras["kernel"] = kernel.label
        linear = kernel is not None and kernel.name == "linear"  # w = sum_i coef_i x_i is then reported too
        convex = _mercer(K, kernel, extras, allow_indefinite)
        data = FamilyData(y, X if linear else None, K, convex=convex)
        units = family_units.plan(member, kind, X, y, kernel, K)
        problem = (K, y, params) if units is None else family_units.kernel_problem(units, K, X, kernel, y, params)
        if method == "smo" and convex:
            return _solve_smo(formulation, member, problem, data, params, prof, deadline, extras,
                              options.get("max_iter"), units)
        extras["method"] = "full"  # a K found indefinite (allowed) is the layer's: SMO would stop at a local point
    else:
        data = FamilyData(y, X)
        isolation.stage(f"the {layer} model's build")
        units = family_units.plan(member, kind, X, y, None, None)
        problem = (X, y, params) if units is None else family_units.linear_problem(units, X, y, params)
    model = family.builder(formulation, layer)(*problem)
    raw, given = _call(adapter, model, native_options(backend, prof, options), deadline, layer, backend)
    sol = answered(raw, formulation=formulation, layer=layer, backend=backend, profile=prof.name,
                   deadline=deadline, given=given, backend_version=adapter.version(), extras=extras)
    isolation.stage("the closing checks")
    if sol.status == ERROR:
        sol.message = failure_advice(sol, member, params)
    values = read_model(model, layer, kind) if _has_point(raw) else None
    return _close_in_user_units(sol, values, units, data, params, kind, member, prof.check_tol)


def _solve_smo(formulation, member, problem: tuple, data: FamilyData, params, prof, deadline: Deadline, extras,
               max_steps: int | None = None, units=None) -> Solution:
    """The kernel dual (K, y, parameters in the solve's units: `problem`) by the compiled SMO (solvers.family_smo,
    at most max_steps steps), its point mapped to the user's units and closed there as any backend's."""
    isolation.stage("the SMO steps")
    K, y, solve_params = problem
    variables = K.shape[0] * (2 if member.task == family.REGRESSION else 1)
    values, raw = solve_dual(member.name, K, y, solve_params, prof.check_tol, deadline,
                             proved=variables <= PROOF_MAX_SIZE, max_steps=max_steps)
    sol = answered(raw, formulation=formulation, layer=SMO_ROW[0], backend=SMO_ROW[1], profile=prof.name,
                   deadline=deadline, backend_version=f"solvers.algorithms.smo (numba {numba.__version__})",
                   extras=extras)
    isolation.stage("the closing checks")
    values = values if _has_point(raw) else None
    return _close_in_user_units(sol, values, units, data, params, KERNEL_DUAL, member, prof.check_tol)


def _close_in_user_units(sol: Solution, values: dict | None, units, data: FamilyData, params: dict, kind: str,
                         member, tol: float) -> Solution:
    """The row closed (`close`) in the user's units: a row solved in well-conditioned ones (solvers.family_units,
    units not None) has its objective and point mapped back first."""
    if units is not None:
        sol.extras["solved_in_units"] = units.describe()
        sol.objective = family_units.objective_to_user(units, sol.objective)
        values = family_units.to_user(units, values) if values else values
    return close(sol, values, data, params, kind, member, tol)


def _mercer(K: np.ndarray, kernel, extras: dict, allow_indefinite: bool) -> bool:
    """Whether K is positive semidefinite: by theorem (Kernel.mercer_by_theorem), else tested on K (an indefinite
    K refused unless allowed), in the C-SVM's words (solvers.closing); extras say how."""
    condition = mercer(K, kernel, extras["kernel"], allow_indefinite)
    extras.update(condition)
    return bool(condition["psd"])


def _call(adapter, model, opts, deadline: Deadline, layer: str, backend: str):
    """The backend's answer (a RawResult or the exception it raised) and the seconds it was given."""
    if deadline.passed():
        return RawResult(TIME_LIMIT, "not started",
                            message=deadline.stopped("before the backend was called (building the model)")), None
    given = deadline.for_backend()
    isolation.stage(f"the call to {layer}/{backend}")
    try:
        return adapter.solve(model, opts, given), given
    except (BackendError, UnsupportedModelError) as exc:
        return exc, given


def failure_advice(sol: Solution, member, params: dict) -> str:
    """A backend's own failure (cvxpy's "Solver 'CLARABEL' failed...") said with the member and backend it hit,
    and what may help: the same checked problem goes through every other backend of the layer available here
    (solvers.registry, in the layer's preference order). The hard tube (C = inf) may have no point at all."""
    others = ", ".join(name for _, name in available_backends(sol.layer) if name != sol.backend) or "none here"
    C = float(params.get("C") or 0.0)
    head = f"{sol.formulation} ({member.name}) via {sol.layer}/{sol.backend} failed: {sol.message or sol.raw_status}"
    if math.isinf(C):  # feasible only where some f passes within epsilon of every target
        return (f"{head} -- try another backend ({others}), another profile, or a finite C (the hard tube, C = inf, "
                "has a point only where some f passes within epsilon of every target)")
    large_C = " or a smaller C" if C >= 1e8 else ""
    return f"{head} -- the problem is feasible and bounded, so try another backend ({others}), another profile{large_C}"


def _has_point(raw) -> bool:
    return isinstance(raw, RawResult) and raw.status in HAS_POINT


def _unanswered(ended, *, formulation, layer, backend, profile, deadline, extras) -> Solution:
    """The row of a solve whose process gave no answer (killed past the limit, or dead): no point."""
    sol = answered(ended, formulation=formulation, layer=layer, backend=backend, profile=profile, deadline=deadline,
                   extras=extras)
    withhold_unverified(sol)
    return sol


# --------------------------------------------------------------------------- read back


def read_model(model, layer: str, kind: str) -> dict:
    """The member's variables and multipliers by name: {"alpha": ..., "w": ..., "solver_balance": ...}; a primal's
    alpha (and alpha_star) are its rows' multipliers."""
    if layer == "pyomo":
        values, rows = _read_pyomo(model)
    else:
        values, rows = _read_cvxpy(model)
    if kind == PRIMAL:
        for row, name in PRIMAL_ROWS.items():
            if row in rows:
                values[name] = rows[row]
    for row in DUAL_ROWS:
        if row in rows:
            values[f"solver_{row}"] = float(np.ravel(rows[row])[0])
    return values


def _read_pyomo(model) -> tuple[dict, dict]:
    import pyomo.environ as pyo  # deferred: only a Pyomo row reads a Pyomo model

    values, rows = {}, {}
    for name in VARIABLES:
        component = getattr(model, name, None)
        if component is None:
            continue
        if component.is_indexed():
            values[name] = np.array([v.value for v in component.values()], dtype=float)
        else:
            value = pyo.value(component, exception=False)
            values[name] = math.nan if value is None else float(value)
    for name in (*PRIMAL_ROWS, *DUAL_ROWS):
        component = getattr(model, name, None)
        if component is None:
            continue
        duals = [model.dual.get(component[i]) for i in component]
        if all(d is not None for d in duals):
            rows[name] = np.array(duals, dtype=float)
    return values, rows


def _read_cvxpy(model) -> tuple[dict, dict]:
    values, rows = {}, {}
    for name, var in model.variables.items():
        if name in VARIABLES and var.value is not None:
            value = np.asarray(var.value, dtype=float)
            values[name] = float(value) if value.ndim == 0 else value.ravel()
    for name, constraint in model.constraints.items():
        if constraint.dual_value is not None:
            rows[name] = np.asarray(constraint.dual_value, dtype=float).ravel()
    return values, rows



# --------------------------------------------------------------------------- the closing step

#: what each kind of formulation must return for its conditions to be computed
NEEDS = {PRIMAL: ("w", "alpha"), "linear_dual": ("alpha",), KERNEL_DUAL: ("alpha",)}
IMPOSSIBLE = (INFEASIBLE, UNBOUNDED)
_TINY = np.finfo(float).tiny


def close(sol: Solution, values: dict | None, data: FamilyData, params: dict, kind: str, member,
          tol: float) -> Solution:
    """The member's conditions at the point (module docstring), the verdict, the claims refuted, and nothing
    unverified reported as a result. Every path that has a backend's answer for a family member ends here."""
    missing = _missing(values, kind, member)
    if missing:
        sol.checks = {"verified": False, "verdict": missing}
    else:
        module = family.module(member)
        cond = module.conditions(values, data, params, kind)
        free_b = member.name in family_units.TRANSLATION_INVARIANT
        reference = _reference(module, cond, values, data, params, kind, tol, free_b)
        if reference.get("floor"):  # a degenerate optimum: the point judged again on the floor's scale
            cond = module.conditions(values, replace(data, floor=reference["floor"]), params, kind)
        _fill(sol, cond, values)
        _judge(sol, cond, kind, tol, reference)
    claimed = sol.solver_status
    if not data.convex:
        note_indefinite(sol)
    if claimed in (OPTIMAL, OPTIMAL_INACCURATE):
        sol.status = OPTIMAL if sol.checks.get("verified") else OPTIMAL_INACCURATE
        if sol.status != OPTIMAL:
            note = f"not verified: {sol.checks['verdict']}"
            sol.message = f"{sol.message}; {note}" if sol.message else note
        if not data.convex and sol.checks.get("kkt_conditions") == "hold":  # as closing.mark_indefinite's rows
            sol.extras["kkt_verified"] = True
    elif claimed in IMPOSSIBLE and member.name == EPS_SVR and math.isinf(params["C"]):
        _judge_hard_tube(sol, claimed, data, params)
    elif claimed in IMPOSSIBLE:
        sol.status = ERROR
        note = (f"backend failure: it reported {claimed}, but {member.name} with checked parameters is feasible and "
                "bounded (its dual's box and equalities have a point, and its primal objective is bounded below)")
        sol.extras["false_status"] = note
        sol.message = f"{note}; {sol.message}" if sol.message else note
    withhold_unverified(sol)
    return sol


def _judge_hard_tube(sol: Solution, claimed: str, data: FamilyData, params: dict) -> None:
    """The hard tube (epsilon-SVR, C = inf) has a point only where some f passes within epsilon of every target: a
    claim that it has none (primal infeasible, dual unbounded) is kept where an independent LP finds the narrowest
    such tube wider than epsilon (solvers.family_proof.hard_tube_width), and is a backend failure where it does not;
    where that LP has no answer the claim is kept, said to be unverified, with the LP's failure."""
    eps = float(params["epsilon"])
    try:
        width = hard_tube_width(data, data.y)
    except TubeLPFailed as exc:  # neither confirmed nor refuted: the backend's claim, said to be unchecked
        sol.status = claimed
        sol.extras["hard_tube_epsilon"] = math.nan
        note = f"the backend reported {claimed} for the hard tube (C = inf), not verified: {exc}"
        sol.message = f"{note}; {sol.message}" if sol.message else note
        return
    sol.extras["hard_tube_epsilon"] = width
    spread = float(np.max(np.abs(data.y - data.y.mean())))
    if width > eps + 1e-7 * max(spread, eps, _TINY):
        sol.status = claimed
        note = (f"no f of this kernel passes within epsilon = {eps:g} of every target (the hard tube, C = inf): the "
                f"narrowest such tube has epsilon = {width:.6g} (an LP); give a larger epsilon or a finite C")
    else:
        sol.status = ERROR
        note = (f"backend failure: it reported {claimed}, but the hard tube (C = inf) has a point: an LP finds f "
                f"within {width:.6g} <= epsilon = {eps:g} of every target")
        sol.extras["false_status"] = note
    sol.message = f"{note}; {sol.message}" if sol.message else note


def _missing(values: dict | None, kind: str, member) -> str:
    """Why the point cannot be judged ("" when it can): no point, or a part of it absent or not finite."""
    if not values:
        return "no point returned"
    needs = NEEDS[kind] + (("alpha_star",) if member.task == family.REGRESSION else ())
    absent = [name for name in needs if name not in values or not np.all(np.isfinite(values[name]))]
    if absent:
        what = "multipliers" if set(absent) & {"alpha", "alpha_star"} else "variables"
        return f"no {what} ({', '.join(absent)}) returned"
    return ""


def _fill(sol: Solution, cond, values: dict) -> None:
    """The point as the row reports it: w, b, alpha, the decision values, and the member's values in extras."""
    sol.w, sol.b, sol.decision = cond.w, cond.b, cond.decision
    sol.alpha = values["alpha"] if cond.alpha is None else cond.alpha
    sol.b_rule = "primal_variable" if "b" in values or "rho" in values else "multiplier_fit"
    sol.extras.update(cond.meaning)
    sol.extras["coef"] = cond.coef
    if "alpha_star" in values:
        sol.extras["alpha_star"] = values["alpha_star"]
    for row in DUAL_ROWS:  # the solver's own multipliers of the dual's equalities, beside the recovered ones
        if f"solver_{row}" in values:
            sol.extras[f"solver_{row}_multiplier"] = values[f"solver_{row}"]


#: the proof of the optimum solves a dense system in the free coordinates of a matrix this large at most
PROOF_MAX_SIZE = 6_000


def _reference(module, cond, values: dict, data: FamilyData, params: dict, kind: str, tol: float,
               free_b: bool = False) -> dict:
    """How far the point is from the optimum: proved from its active set (solvers.family_proof.prove), the
    objective and the decision values' kernel part f - b compared with the proved optimum's; where no optimum is
    proved, a bound from the gap: the objectives are 1-strongly convex in w, so ||w - w*||^2 <= 2 |P - D| and
    |(f - b)(x_i) - (f* - b*)(x_i)| <= sqrt(2 |P - D| K_ii). Each relative to the margin's or tube's size."""
    own_reference = getattr(module, "reference", None)  # a member whose dual is not a box QP proves its own
    if own_reference is not None:
        return own_reference(cond, data, params, kind)
    start = getattr(module, "proof_start", None)  # a member may move the point to an equivalent one first
    a = start(values) if start else np.concatenate([values["alpha"], values.get("alpha_star", np.zeros(0))])
    centered = family_units.proof_data(data) if free_b else data  # the same optimum, a well-conditioned K
    proved = module.box_qp(centered, params) if len(a) <= PROOF_MAX_SIZE else None
    x = prove(proved, a) if proved is not None else None
    if not data.convex:  # a non-convex dual: no strong convexity, no gap bound, a KKT point at best
        return _kkt_reference(module, cond, x, proved, values, data, params, kind, tol)
    if x is None:
        why = "no active set proved" if proved is not None else f"more than {PROOF_MAX_SIZE:,} multipliers"
        return {"reference": f"gap bound ({why})", "decision values (bound)": _gap_bound(cond, centered)}
    point = _split(x, len(values["alpha"]))
    best = module.conditions(point, data, params, KERNEL_DUAL)
    note = getattr(module, "DEGENERATE", None)
    floor = degenerate_floor(best.coef, data) if note else 0.0
    if floor:
        data = replace(data, floor=floor)
        best = module.conditions(point, data, params, KERNEL_DUAL)
    unmet = unconfirmed(best, tol)
    if unmet:
        return {"reference": f"gap bound (the active set's solution fails its own conditions: {unmet})",
                "decision values (bound)": _gap_bound(cond, centered)}
    out = {"reference": "proved optimum", **_distance(cond, best, kind, free_b),
           "multipliers outside the optimal interval": _outside_intervals(cond, best, free_b),
           "proved": _optimum(best, point)}
    if floor:
        out["degenerate"], out["floor"] = note, floor
    return out


def _gap_bound(cond, data: FamilyData) -> float:
    """sqrt(2 |P - D| max_i K_ii) in the margin's or tube's units: how far f - b can be from the optimum's."""
    reach = math.sqrt(data.max_diagonal())
    return math.sqrt(2.0 * abs(cond.primal_objective - cond.dual_objective)) * reach / max(cond.size, _TINY)


def unconfirmed(best, tol: float) -> str:
    """Why the active set's solution is no optimum ("" when it is one): its own gap and residuals, recomputed in
    the user's units, must pass the row's bar. The proof's rounding allowance is relative to the size of K's
    entries, which data far from the origin inflate far beyond the margin's differences: there a wrong active set
    passes the proof."""
    scaled = {"relative duality gap": best.gap, **best.residuals}
    failed = {name: value for name, value in scaled.items() if not value <= tol}
    return "; ".join(f"{name} {value:.2e} > {tol:.0e}" for name, value in failed.items())


def _split(x: np.ndarray, n: int) -> dict:
    """The proof's a as the member's alpha (and alpha*)."""
    return {"alpha": x[:n], **({"alpha_star": x[n:]} if len(x) > n else {})}


def _distance(cond, best, kind: str, free_b: bool = False) -> dict:
    """The row's objective and decision values' kernel part f - b against the reference point's, each relative to
    the reference's own scale (the objectives' terms, the margin's or tube's size); with a free b, f - b up to the
    constant b takes back (family_units.kernel_part_error)."""
    own, target = ((cond.primal_objective, best.primal_objective) if kind == PRIMAL
                   else (cond.dual_objective, best.dual_objective))
    kernel_part = family_units.kernel_part_error((cond.decision - cond.b) - (best.decision - best.b), free_b)
    return {"objective error": abs(own - target) / max(best.scale, _TINY),
            "decision value error": float(kernel_part) / max(best.size, _TINY)}


def _optimum(best, point: dict) -> dict:
    """The reference point as a row reports it (extras["proved"], extras["kkt_point"])."""
    return {"decision": best.decision, "coef": best.coef, "b": best.b, "primal_objective": best.primal_objective,
            "dual_objective": best.dual_objective, **best.meaning, **point}


def _kkt_reference(module, cond, x, qp, values: dict, data: FamilyData, params: dict, kind: str,
                   tol: float) -> dict:
    """A non-convex dual's point against the KKT point prove() finds from its active set (the same first-order
    conditions, which here certify a stationary point, not the optimum; whether its reduced Hessian is positive
    semidefinite on its face, a local minimum's necessary condition, is said beside it), kept only where that
    point meets its own conditions at `tol` (`unconfirmed`). Never verified: the `nonconvex` note fails the verdict
    whatever the numbers."""
    note = ("the dual is non-convex (K is indefinite): a point meeting the KKT conditions is not certified as the "
            "global optimum")
    if x is None:
        return {"reference": "none (non-convex dual: no gap bound, and no KKT point from the point's active set)",
                "nonconvex": note}
    point = _split(x, len(values["alpha"]))
    best = module.conditions(point, data, params, KERNEL_DUAL)
    unmet = unconfirmed(best, tol)
    if unmet:
        return {"reference": f"none (non-convex dual: the active set's KKT point fails its own conditions: {unmet})",
                "nonconvex": note}
    kkt = {**_optimum(best, point), "second_order": second_order(qp, x)}
    return {"reference": "KKT point (non-convex dual)", **_distance(cond, best, kind), "kkt_point": kkt,
            "nonconvex": note}


def _outside_intervals(cond, best, free_b: bool = False) -> float:
    """How far the row's equality multipliers (b, rho, eps as the member groups them) are outside the intervals the
    proved optimum allows them (a free multiplier pins one value; without one every value of the interval is
    optimal, and different backends report different points of it), in the margin's or tube's units. With a free
    b, b moved by the constant its kernel part f - b is off by (family_units.b_compensated)."""
    intervals = best.meaning.get("multiplier_intervals", {})
    own = cond.meaning.get("multipliers", {})
    if free_b:
        own = family_units.b_compensated(own, (cond.decision - cond.b) - (best.decision - best.b))
    gaps = [max(lo - own[name], own[name] - hi, 0.0) for name, (lo, hi) in intervals.items() if name in own]
    return max(gaps, default=0.0) / max(best.size, _TINY)


#: ||w*||^2 at most this fraction of (sum_i |coef_i|)^2 max_i K_ii, the size of its terms, is w* = 0 to rounding
TRIVIAL = 1e-12


def degenerate_floor(coef: np.ndarray, data: FamilyData) -> float:
    """0, or where the optimum's coef make w* = 0 (the margin rho* is then 0 too, and f* and the objectives
    have no size of their own) the size of the terms its f is made of, max_i sum_j |K_ij coef_j|
    (solvers.reference.Gram.magnitudes): what the point's errors are measured against instead."""
    ww = float(coef @ data.times(coef))
    if ww > TRIVIAL * float(np.abs(coef).sum()) ** 2 * data.max_diagonal():
        return 0.0
    gram = Gram(None, data.K) if data.K is not None else Gram(data.X, None)
    return float(np.max(gram.magnitudes(coef)))


def _judge(sol: Solution, cond, kind: str, tol: float, reference: dict) -> None:
    """sol.checks: the objectives, the gap and the residuals, the distance to the optimum, the verdict at `tol`,
    and the objective's claim."""
    proved = reference.pop("proved", None)
    if proved is not None:  # the optimum itself, for comparisons at its accuracy (extras["proved"])
        sol.proved_alpha, sol.proved_b = proved["alpha"], proved["b"]
        sol.extras["proved"] = proved
        for name in ("b", "rho", "epsilon"):  # the optimal intervals, as the C-SVM's b_lower, b_upper
            if f"{name}_interval" in proved:
                sol.extras[f"{name}_lower"], sol.extras[f"{name}_upper"] = proved[f"{name}_interval"]
    if "kkt_point" in reference:  # a non-convex dual's stationary point: not a proved optimum
        sol.extras["kkt_point"] = reference.pop("kkt_point")
    nonconvex = reference.pop("nonconvex", "")
    how = reference.pop("reference")
    degenerate = reference.pop("degenerate", "")
    floor = reference.pop("floor", 0.0)
    scaled = {"relative duality gap": cond.gap, **cond.residuals, **reference}
    recomputed = cond.primal_objective if kind == PRIMAL else cond.dual_objective
    claim = abs(sol.objective - recomputed) / max(cond.scale, np.finfo(float).tiny)
    scaled["objective claimed vs recomputed"] = claim if math.isfinite(claim) else math.inf
    failed = {name: value for name, value in scaled.items() if not value <= tol}
    sol.checks = {
        "primal_objective": cond.primal_objective, "dual_objective": cond.dual_objective,
        "duality_gap": cond.primal_objective - cond.dual_objective, "rel_duality_gap": cond.gap,
        "objective_scale": cond.scale,
        **{f"kkt_{name.replace(' ', '_')}": value for name, value in cond.residuals.items()},
        "reference": how, **{name.replace(" ", "_"): value for name, value in reference.items()},
        "objective_claim": claim, "verified": not (failed or nonconvex), "degenerate": bool(degenerate),
        "degenerate_floor": floor,
        "verdict": "verified" if not failed else "; ".join(f"{k} {v:.2e} > {tol:.0e}" for k, v in failed.items()),
    }
    if nonconvex:
        sol.checks["kkt_conditions"] = "hold" if not failed else "fail"
        sol.checks["verdict"] = nonconvex if not failed else f"{nonconvex}; {sol.checks['verdict']}"
    if degenerate:  # what the numbers above are measured against, and what the optimum means
        sol.extras["degenerate"] = f"{degenerate} (the checks measure f against the size of its terms, {floor:.3g})"
    if degenerate and failed:
        sol.checks["verdict"] = f"{degenerate}; {sol.checks['verdict']}"
