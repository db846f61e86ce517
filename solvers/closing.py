"""The closing step every solve path shares: read back, recover, check, review, withhold.

Whatever produced the point (a Pyomo or cvxpy model through any backend, the solver-alone
path of solvers.algorithms.direct, a working set, a benchmark or a C path), it becomes a
`Solution` here and only here, so every path gets the same verification:

    answered     the one constructor of a Solution from a backend's answer (its result, its exception, or a
                 solve process that gave none: solvers.isolation), with the time limit's words
    settle       answered + close, for a raw result and the point read from it
    close_model  the model's point, multipliers and certificate read back (model_values) + settle
    read_model   the variables and the named constraints' multipliers of a solved model
    recover      w*, b*, xi*, alpha* and the decision values (formulations.recovery)
    close        compute_checks -> verified_status -> review (false claims refuted)
                 -> w, b back in the original units -> withhold_unverified
    close_lp     the same last steps for the LPs (their own checks, solvers.lp)

A path that cannot be verified says so in its status: `optimal` needs the project's checks.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo

from formulations import kernels, penalty, recovery, validation
from formulations.model import DUAL, HARD_PRIMAL, KERNEL_DUAL, SOFT_PRIMAL, CvxpyModel
from solvers.solution import ERROR, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, Solution, TIME_LIMIT
from solvers.isolation import Ended
from solvers.checks import compute_checks, impossible_claim, review, verified_status, withhold_unverified
from solvers.deadline import NEVER, Deadline
from solvers.profiles import Profile
from solvers.reference import Gram


def resolve_C(formulation: str, C, n: int | None = None):
    """C for a formulation: inf for the hard margin (and the dual without C), else checked > 0.

    With `n` (the number of samples), C may also be one bound per sample (a length-n array,
    formulations.penalty); without it only one number is accepted.
    """
    if formulation == HARD_PRIMAL:
        return math.inf
    if C is None:
        if formulation == DUAL:
            return math.inf  # the hard-margin dual (Example 5.2)
        raise validation.SVMInputError(f"formulation {formulation!r} needs C (C > 0)")
    allow_infinite = formulation in (DUAL, KERNEL_DUAL)
    if n is None:
        return validation.check_C(C, allow_infinite=allow_infinite)
    return validation.check_sample_C(C, n, allow_infinite=allow_infinite)


def _values(component) -> np.ndarray:
    """The values of an indexed variable in index order (None -> nan), one attribute read each."""
    return np.array([v.value for v in component.values()], dtype=float)


def read_pyomo(model, formulation: str) -> dict:
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


def read_cvxpy(model: CvxpyModel, formulation: str, has_duals: bool) -> dict:
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


def read_model(model, layer: str, formulation: str, has_duals: bool = True) -> dict:
    """The point and multipliers of a solved model of either layer, by the formulation's names."""
    return read_pyomo(model, formulation) if layer == "pyomo" else read_cvxpy(model, formulation, has_duals)


def recover(sol: Solution, values: dict, formulation: str, X, y, K, C, *,
             Ku: np.ndarray | None = None) -> np.ndarray | None:
    """Fill w, b, xi, alpha and the decision values from what the solver returned.

    For the kernel dual, f(x_i) - b = (K u)_i with u = y * alpha; `Ku` is that
    vector if the caller has it already (else it is computed here). A dual point handed in for grading may carry
    its own b and w (values "claimed_b", "claimed_w"): they stand in place of the recovered ones. Returns K u
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
        if Ku is None:  # K: a matrix, or rows on demand (a solvers.reference.Gram, e.g. solvers.algorithms.kernel_rows)
            Ku = K.times(y * alpha) if isinstance(K, Gram) else K @ (y * alpha)
        g = Ku
    bias = recovery.recover_bias(alpha, y, g, C)
    sol.b, sol.b_rule = bias.b, bias.rule
    sol.extras.update(b_lower=bias.lower, b_upper=bias.upper, n_free_sv=bias.n_free)
    if "claimed_b" in values:  # a b handed in with alpha (solvers.grading): judged where it is, not recovered
        sol.b, sol.b_rule = float(values["claimed_b"]), "claimed"
    if "claimed_w" in values and formulation == DUAL:  # a w handed in with alpha: stationarity compares the two
        sol.w = values["claimed_w"]
    sol.decision = g + sol.b
    sol.xi = recovery.slacks(y, sol.decision)
    return g if formulation == KERNEL_DUAL else None


HAS_POINT = (OPTIMAL, OPTIMAL_INACCURATE, ITERATION_LIMIT, TIME_LIMIT)


def answered(raw, *, formulation: str, layer: str, backend: str, profile: str, deadline: Deadline = NEVER,
             given: float | None = None, backend_version: str | None = None, **fields) -> Solution:
    """The Solution of a backend's answer, before the closing checks (close, close_lp): the one place where a raw
    result becomes a row, for every path (solve, solve_lp, the solver alone, the working sets' rows, the benchmarks).

    raw: the backend's result (a RawResult, or solvers.algorithms.direct's DirectResult), the exception it raised
    (an `error` row naming it), or a solvers.isolation.Ended (its process gave no answer: _unanswered_words).
    `given`: the seconds of `deadline` the backend was given; a backend stopped at its own limit then says the
    call's limit. `fields`: the Solution's other fields (extras, build_s, ...)."""
    from solvers.backends import RECORDS  # the version from the record: "direct" has no adapter in the registry

    if backend_version is None:
        backend_version = RECORDS[backend].version() if backend in RECORDS else ""
    sol = Solution(formulation=formulation, layer=layer, backend=backend, status=ERROR, solver_status=ERROR,
                      raw_status="", backend_version=backend_version, profile=profile, **fields)
    if isinstance(raw, Ended):
        sol.status = sol.solver_status = TIME_LIMIT if raw.killed else ERROR
        sol.raw_status = ("server starting" if raw.starting else "killed" if raw.killed else "server died"
                          if raw.server_pid else raw.how)
        sol.message = _unanswered_words(raw, deadline)
    elif isinstance(raw, BaseException):
        sol.raw_status, sol.message = type(raw).__name__, str(raw)
    else:
        sol.status = sol.solver_status = raw.status
        sol.raw_status, sol.iterations, sol.solve_s = raw.raw_status, raw.iterations, raw.solve_s
        sol.objective, sol.message = raw.objective, raw.message
        if raw.status == TIME_LIMIT and given is not None:
            sol.message = _backend_stop(deadline, given, raw.message)
    return sol


def _unanswered_words(ended: Ended, deadline: Deadline) -> str:
    """What a solve whose process gave no answer says: killed past the time limit in a step that does not stop by
    itself, dead by itself (a backend that aborts its process), or ended with the solve server that died."""
    if ended.starting:
        return deadline.stopped(f"while the solve server was starting ({ended.starting}), before the solve: the "
                                "server goes on starting, and a call once it has started is not delayed")
    where = f"in {ended.stage}" if ended.stage else "before any model was built"
    if ended.killed:
        return deadline.stopped(f"{where}, a step that does not stop by itself: the solve's process was killed")
    if ended.server_pid:
        return (f"the solve server (pid {ended.server_pid}) died during the solve ({ended.how}) {where}; the "
                "solve's process was ended with it, and the next call starts a new server")
    return f"the solve's process died ({ended.how}) {where}"


def _backend_stop(deadline: Deadline, given: float, message: str) -> str:
    """What a solve stopped at its backend's share of the limit says: the call's limit, and the share of it the
    backend was given (the cvxpy adapter's own "stopped at the time limit (<given> s)" names only that share)."""
    own = f"stopped at the time limit ({given:g} s)"
    rest = [part for part in message.split("; ") if part and part != own]
    return "; ".join([deadline.stopped(f"in the backend, given the {given:.3g} s left")] + rest)


def unanswered(ended: Ended, *, formulation: str, layer: str, backend: str, X, y, C, profile: Profile,
               deadline: Deadline = NEVER, **fields) -> Solution:
    """The closed row of a solve whose process gave no answer (solvers.isolation.run_solve): no point."""
    sol = answered(ended, formulation=formulation, layer=layer, backend=backend, profile=profile.name,
                   deadline=deadline, **fields)
    return close(sol, None, X=X, y=y, C=C, profile=profile)


def settle(raw, values: dict | None, *, formulation: str, layer: str, backend: str, X, y, C, profile: Profile,
           K=None, Ku=None, deadline: Deadline = NEVER, given: float | None = None, candidate=None,
           standardizer=None, kernel=None, **fields) -> Solution:
    """A backend's answer and the point read from it (`values`, the formulation's names) closed: answered + close.
    What every path that has a raw result calls (solvers.api, the solver alone, the benchmarks)."""
    sol = answered(raw, formulation=formulation, layer=layer, backend=backend, profile=profile.name,
                   deadline=deadline, given=given, **fields)
    return close(sol, values, X=X, y=y, C=C, K=K, Ku=Ku, profile=profile, candidate=candidate,
                 standardizer=standardizer, deadline=deadline, kernel=kernel)


def model_values(raw, model, layer: str, formulation: str, C) -> tuple[dict | None, np.ndarray | None]:
    """What a model solved by `raw` holds for the closing step: its point and multipliers (read_model; None without
    a point) and a hard margin's certificate where there is no optimum (certificate_candidate)."""
    returned = model is not None and not isinstance(raw, (Ended, BaseException))  # None: no backend was called
    values = read_model(model, layer, formulation, raw.has_duals) if returned and raw.status in HAS_POINT else None
    candidate = None
    if returned and (formulation == HARD_PRIMAL or penalty.is_hard(C)):  # a Farkas certificate or ray
        candidate = certificate_candidate(model, layer, formulation)
    return values, candidate


def close_model(raw, model, *, formulation: str, layer: str, backend: str, C, **closing) -> Solution:
    """A solved model of either layer closed: model_values, then settle."""
    values, candidate = model_values(raw, model, layer, formulation, C)
    return settle(raw, values, formulation=formulation, layer=layer, backend=backend, C=C, candidate=candidate,
                  **closing)


def close(sol: Solution, values: dict | None, *, X, y: np.ndarray, C: float, profile: Profile,
          K: np.ndarray | None = None, Ku: np.ndarray | None = None, candidate=None,
          standardizer=None, deadline: Deadline = NEVER, kernel=None, alpha_claimed: bool = False) -> Solution:
    """Recover the point from `values`, check it, refute false claims, and withhold what is unverified.

    `sol` carries the solver's claim (`solver_status`); its `status` becomes `optimal` only when
    the checks pass. `values` are the formulation's named variables and multipliers (read_model,
    or an algorithm's own arrays); None or {} when the solver returned no point. `candidate`:
    a hard-margin Farkas certificate or ray to check when there is no optimum. `standardizer`:
    w*, b* are mapped back to the original units after the checks (on the solved data).
    `deadline`: the solve's time limit (solvers.deadline); a claimed optimum whose proof the checks could not
    finish by then is a `time_limit` row that says so (compute_checks), never `optimal`.
    `kernel`: the kernel dual's formulations.kernels.Kernel, which made K from X: the checks recompute a sample
    of K's entries by another formula (solvers.kernel_audit); a row source K carries its own.
    `alpha_claimed`: the multipliers were handed in with the point and are judged as given (compute_checks).
    """
    kernel_dual = sol.formulation == KERNEL_DUAL
    if values and sol.solver_status in HAS_POINT:
        Ku = recover(sol, values, sol.formulation, X, y, K, C, Ku=Ku)
    checks = compute_checks(sol, X, y, C, K if kernel_dual else None, tol=profile.check_tol, Ku=Ku, deadline=deadline,
                            kernel=kernel, alpha_claimed=alpha_claimed)
    sol.checks, sol.proved_alpha, sol.proved_b = checks.as_dict(), checks.proved_alpha, checks.proved_b
    sol.status = verified_status(sol.solver_status, checks)
    if checks.timed_out and sol.status == OPTIMAL_INACCURATE:  # a claim not judged for want of time
        sol.status = TIME_LIMIT
    review(sol, checks, X, y, C, K if kernel_dual else None, tol=profile.check_tol, candidate=candidate)
    linear_kernel_w(sol, X, y, kernel)
    to_original_units(sol, standardizer, X, y)
    withhold_unverified(sol)
    mark_indefinite(sol)
    return sol


def linear_kernel_w(sol: Solution, X, y, kernel) -> None:
    """w* = sum_i alpha_i y_i x_i of a kernel dual whose kernel is linear (its model has alpha, not w), on the solved
    data, so that to_original_units maps w* and b* back as the linear dual's."""
    if (sol.formulation == KERNEL_DUAL and sol.w is None and sol.alpha is not None and kernel is not None
            and kernel.name == "linear" and X is not None and X.shape[1] > 0):
        sol.w = np.asarray(X.T @ (y * np.asarray(sol.alpha, dtype=float)), dtype=float).ravel()


def to_original_units(sol: Solution, standardizer, X=None, y: np.ndarray | None = None) -> None:
    """The classifier found on standardized (or centered) data (w*, b* kept in extras), expressed in the original
    units, and with it every b the checks report: b's interval at the optimum and the alpha's interval move with
    the point's b (by -w'mean, the solver's w: the point's b is judged against them), the proved b with the proved
    optimum's own w* = X'(y alpha*) (X, y: the solved data). Far from the origin the two w differ by their rounding
    times the mean: 0.04 of max|f| at a spread of 1e-3 around 1e4. Nothing without a standardizer or a w*."""
    if standardizer is None or sol.w is None:
        return
    sol.extras.update(w_standardized=sol.w.tolist(), b_standardized=sol.b)
    b_solved = sol.b
    sol.w, sol.b = standardizer.weights_to_original(sol.w, sol.b)
    shift = sol.b - b_solved
    if not math.isfinite(shift):
        return
    for record in (sol.checks, sol.extras):
        for key in ("b_lower", "b_upper"):
            if isinstance(record.get(key), float) and math.isfinite(record[key]):
                record[key] += shift
    if math.isfinite(sol.proved_b):
        if sol.proved_alpha is not None and X is not None and y is not None:  # by the proved optimum's own w
            shift = standardizer.weights_to_original(recovery.weights_from_alpha(X, y, sol.proved_alpha), 0.0)[1]
        sol.proved_b += shift


def close_lp(sol: Solution, checks, *, C: float | None) -> Solution:
    """The LPs' closing step: impossible claims refuted, `optimal` only when `checks` verified the point."""
    claimed = sol.solver_status
    # the 1-norm SVM LPs (C given) are feasible and bounded for any data and C > 0, like the soft margin
    impossible = impossible_claim(claimed, primal=True, hard=False, C=C) if C is not None else ""
    if impossible:
        sol.status = ERROR
        sol.message = f"backend failure: it reported {claimed}, but {impossible}. {sol.message}".strip()
    elif checks is not None:
        sol.checks = checks.as_dict()
        sol.status = verified_status(claimed, checks)
    withhold_unverified(sol)
    return sol


def mercer_by_theorem(kernel) -> dict:
    """Mercer's condition of a kernel that satisfies it by theorem (Kernel.mercer_by_theorem), as a row's extras;
    {} for one whose Gram matrix must be checked. The eigenvalue check on K cannot fail for these (the kernels' own
    rounding is far below its 1e-10 tolerance) and cost more than the solve (docs/benchmarks.md)."""
    return {"psd": True, "mercer_method": f"by theorem ({kernel.name})"} if kernel.mercer_by_theorem else {}


def mercer_extras(K, label, allow_indefinite) -> dict:
    """Mercer's condition tested on K (formulations.kernels.mercer_check: an indefinite K is refused unless
    allowed), as a row's extras."""
    report = kernels.mercer_check(K, kernel_label=label, allow_indefinite=allow_indefinite)
    return {"min_eigenvalue": report.min_eigenvalue, "psd": report.is_psd, "max_eigenvalue": report.max_eigenvalue,
            "mercer_tolerance": report.tolerance, "mercer_method": report.method}


def mercer(K, kernel, label: str, allow_indefinite: bool) -> dict:
    """Mercer's condition as a row's extras: by theorem for a kernel that has it (kernel None: a precomputed K,
    which has none), else tested on K (mercer_extras)."""
    return (mercer_by_theorem(kernel) if kernel is not None else {}) or mercer_extras(K, label, allow_indefinite)


def mark_indefinite(sol: Solution) -> None:
    """A kernel dual solved with allow_indefinite=True on a non-PSD K says so, and on a K whose Mercer condition
    was not checked (extras["psd"] None: a sigmoid kernel's rows on demand) that it may not be convex. Its point
    is never `optimal`: where the checks passed it is `optimal_inaccurate` with extras["kkt_verified"] (a KKT
    point, maybe local), as the family's (solvers.family.close)."""
    if sol.formulation != KERNEL_DUAL or sol.extras.get("psd", True):
        return
    note_indefinite(sol)
    if sol.status == OPTIMAL:  # the checks hold at a KKT point of a non-convex dual: no proof of the optimum
        sol.status = OPTIMAL_INACCURATE
        sol.extras["kkt_verified"] = True


def note_indefinite(sol: Solution) -> None:
    """extras["indefinite_kernel"], and the message's head saying the dual may not be convex: on a K found
    indefinite (extras["psd"] False, its min eigenvalue) or not checked (extras["psd"] None). Every kernel dual's
    row says it in these words (the C-SVM's mark_indefinite, the family's solvers.family.close)."""
    sol.extras["indefinite_kernel"] = True
    if sol.extras.get("psd") is None:
        note = (f"UNCHECKED KERNEL (allow_indefinite=True): {sol.extras.get('kernel')} is not positive semidefinite "
                f"in general ({sol.extras.get('mercer_method')}), so the dual QP may not be convex and this point "
                "is not certified as a global optimum")
    else:
        note = (f"INDEFINITE KERNEL (allow_indefinite=True): {sol.extras.get('kernel')} has min eigenvalue "
                f"{sol.extras.get('min_eigenvalue', math.nan):.6g}, so the dual QP is not convex and this point is "
                "not certified as a global optimum")
    sol.message = f"{note}; {sol.message}" if sol.message else note


def certificate_candidate(model, layer: str, formulation: str):
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
