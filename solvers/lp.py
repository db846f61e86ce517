r"""`solve_lp`: the LP formulations (separability, convex hull, 1-norm SVM and its dual).

They go through the same registry adapters as the QPs (an adapter's
`solve(model, options, time_limit)` loads the point and the multipliers into
the model), but they get an entry point of their own rather than a place in
`formulations.FORMULATIONS`: `solvers.api.solve` reads back and checks the
2-norm SVM (1/2 ||w||^2, w = sum alpha_i y_i x_i), which is wrong for these
LPs. Here the read-back is by constraint name, and the checks are the LPs' own:

    1-norm SVM   P(w, b)   = ||w||_1 + C sum_i max(0, 1 - y_i (w'x_i + b))
                 D(alpha)  = sum_i alpha_i   over |sum_i alpha_i y_i x_ij| <= 1,
                             sum_i alpha_i y_i = 0, 0 <= alpha <= C

Each solve returns both: a primal solve's `alpha` are the multipliers of its
margin rows, a dual solve's (w, b) the multipliers of its lift (or corr_upper/corr_lower)
and balance rows. Weak duality D(alpha) <= P(w, b) holds for any feasible pair,
so a zero gap with both feasible proves both optimal.

HiGHS runs its LP solver as one of two named methods (HiGHS's option `solver`):
"simplex" (HiGHS picks the variant; dual simplex on these LPs) and "ipm"
(HiGHS's interior point method IPX, followed by crossover to a vertex, as HiGHS
does by default). The method is recorded in
`Solution.extras["method"]` and `extras["setting"]` ("highs-simplex").

Multipliers are returned in Pyomo's convention in both layers, d objective* /
d rhs in the objective's own sense; cvxpy's signs are converted from the
constraint kinds that the formulation records in `CvxpyModel.info`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np
import pyomo.environ as pyo

import formulations
from formulations import recovery, scaling, separability, validation
from formulations.data_matrix import column_bounds
from formulations.recovery import AT_BOUND, ZERO, classify
from formulations.errors import SVMInputError
from formulations.names import HULL_INTERSECTION, L1_DUAL, L1_PRIMAL, LP_FORMULATIONS, SEPARABILITY
from solvers import isolation
from solvers.solution import RawResult, Solution, TIME_LIMIT
from solvers.backends import RECORDS, get_record, ranked
from solvers.closing import HAS_POINT, answered, close_lp
from solvers.deadline import Deadline
from solvers.errors import BackendError, UnsupportedModelError
from solvers.profiles import get_profile, native_options
from solvers.registry import LAYERS, availability, check_time_limit, get_backend

# Named LP methods by backend, from the records (today HiGHS's simplex and ipm).
LP_METHODS = {name: record.lp_methods for name, record in RECORDS.items() if record.lp_methods}
# Every LP method by name: the choices of the runner's `highs_methods`.
HIGHS_METHODS = {method: options for methods in LP_METHODS.values() for method, options in methods.items()}

# Backends that accept an LP (a QP with P = 0) in this project, in preference order (their
# records' `preference["lp"]`, with the measurements behind it).
LP_BACKENDS = ranked("lp", [name for name, record in RECORDS.items() if record.takes_lp])

# Default threshold for counting w_j as nonzero: |w_j| > NZ_REL_TOL * max_k |w_k|.
NZ_REL_TOL = 1e-6


def setting_label(backend: str, method: str | None) -> str:
    """One name per solver setting for tables: "highs-simplex", "highs-ipm", "clarabel"."""
    return f"{backend}-{method}" if method else backend


def parse_setting(setting: str) -> tuple[str, str | None]:
    """"highs-simplex" -> ("highs", "simplex"); "clarabel" -> ("clarabel", None) (inverse of setting_label)."""
    backend, _, method = setting.partition("-")
    if method and method not in LP_METHODS.get(backend, {}):
        raise SVMInputError(f"unknown setting {setting!r}; the LP methods are "
                            f"{', '.join(setting_label(b, m) for b, ms in LP_METHODS.items() for m in ms)}")
    return backend, method or None


def lp_settings(layers=LAYERS, backends=LP_BACKENDS,
                highs_methods=tuple(HIGHS_METHODS)) -> list[tuple[str, str, str | None]]:
    """(layer, backend, method) for every available LP setting; HiGHS once per method."""
    pairs = [(layer, backend) for layer in layers for backend in backends if availability(layer, backend)[0]]
    return with_methods(pairs, highs_methods)


def with_methods(pairs, highs_methods=tuple(HIGHS_METHODS)) -> list[tuple[str, str, str | None]]:
    """(layer, backend) pairs as LP settings (layer, backend, method): a backend with LP methods
    (HiGHS) once per method of `highs_methods` it has, in order."""
    out = []
    for layer, backend in pairs:
        if backend in LP_METHODS:
            out.extend((layer, backend, method) for method in highs_methods if method in LP_METHODS[backend])
        else:
            out.append((layer, backend, None))
    return out


def method_options(layer: str, backend: str, method: str | None) -> dict:
    """Native options that select `method` (the backend's record holds them, and how cvxpy takes them)."""
    if method is None:
        return {}
    if backend not in LP_METHODS:
        titles = " and ".join(RECORDS[name].title for name in LP_METHODS) or "no backend"
        raise SVMInputError(f"method {method!r} applies to {titles} only; backend {backend!r} has no methods here")
    try:
        return get_record(backend).method_options(layer, method)
    except KeyError:
        raise SVMInputError(f"unknown {get_record(backend).title} method {method!r}; choose one of {list(LP_METHODS[backend])}") from None


def build_lp(formulation: str, layer: str, X: np.ndarray, y: np.ndarray, C: float | None = None,
             abs_form: str = "bound", corr_form: str = "lift"):
    """Build one LP formulation in one layer from already-validated data (formulations.build)."""
    if formulation not in LP_FORMULATIONS:
        raise SVMInputError(f"unknown LP formulation {formulation!r}; choose one of {list(LP_FORMULATIONS)}")
    return formulations.build(formulation, layer, X=X, y=y, C=C, abs_form=abs_form, corr_form=corr_form)


# ----------------------------------------------------------------- read-back


def _pyomo_values(component) -> np.ndarray:
    return np.array([pyo.value(component[k], exception=False) for k in component], dtype=float)


def read_values(model, layer: str) -> dict[str, np.ndarray | float]:
    """Variable values by name (b as a float)."""
    out: dict = {}
    if layer == "pyomo":
        for name in ("w", "t", "w_plus", "w_minus", "b", "xi", "alpha", "corr", "lam", "mu"):
            comp = getattr(model, name, None)
            if comp is None:
                continue
            vals = _pyomo_values(comp)
            out[name] = float(vals[0]) if name == "b" else vals
    else:
        for name, var in model.variables.items():
            if var.value is None:
                continue
            out[name] = float(var.value) if name == "b" else np.asarray(var.value, dtype=float).ravel()
    return out


def _cvxpy_sign(sense: str, kind: str) -> float:
    """cvxpy dual -> d objective*/d rhs. cvxpy's inequality duals are >= 0 whatever the sense;
    its equality duals are -d f*/d rhs for a minimisation and +d f*/d rhs for a maximisation."""
    s = 1.0 if sense == "min" else -1.0
    if kind == "==":
        return -s
    return s if kind == ">=" else -s


def read_multipliers(model, layer: str) -> dict[str, np.ndarray]:
    """Multipliers of every named constraint, in Pyomo's convention, as arrays (NaN if missing)."""
    out: dict = {}
    if layer == "pyomo":
        for con in model.component_objects(pyo.Constraint, active=True):
            vals = [model.dual.get(con[k]) for k in con]
            out[con.local_name] = np.array([math.nan if v is None else v for v in vals], dtype=float)
        return out
    sense, kinds = model.info["sense"], model.info["kinds"]
    for name, con in model.constraints.items():
        if con.dual_value is None:
            continue
        out[name] = _cvxpy_sign(sense, kinds[name]) * np.atleast_1d(np.asarray(con.dual_value, dtype=float)).ravel()
    return out


# ----------------------------------------------------------------- checks


@dataclass
class LPChecks:
    """What the project recomputes at a returned point (independent of the solver's claims)."""

    primal_objective: float = math.nan
    dual_objective: float = math.nan
    duality_gap: float = math.nan
    rel_duality_gap: float = math.nan
    primal_infeasibility: float = math.nan
    dual_infeasibility: float = math.nan
    complementarity: float = math.nan
    n_sv: int = 0
    n_bound_sv: int = 0
    nnz_w: int = 0
    train_accuracy: float = math.nan
    verified: bool = False
    verdict: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _size(value) -> float:
    """A scale to divide by: the value itself, kept off zero."""
    return max(float(value), np.finfo(float).tiny)


def count_nonzero(w: np.ndarray, rel_tol: float = NZ_REL_TOL) -> int:
    """Number of w_j with |w_j| > rel_tol * max_k |w_k| (0 for w = 0)."""
    w = np.asarray(w, dtype=float)
    scale = float(np.abs(w).max()) if w.size else 0.0
    return int(np.sum(np.abs(w) > rel_tol * scale)) if scale > 0 else 0


def l1_objectives(X, y, C, w, b, alpha) -> dict:
    """P(w, b), D(alpha) and how far alpha is from dual feasibility."""
    f = X @ w + b
    hinge = np.maximum(0.0, 1.0 - y * f)
    primal = float(np.abs(w).sum() + C * hinge.sum())
    out = {"primal": primal, "decision": f, "hinge": hinge}
    if alpha is None:
        return out
    corr = X.T @ (y * alpha)  # sum_i alpha_i y_i x_ij
    out.update(
        dual=float(alpha.sum()),
        corr=corr,
        # each on its own scale: |corr_j| <= 1 is dimensionless, alpha against max alpha and C
        dual_infeasibility=float(max(0.0, np.abs(corr).max() - 1.0, -alpha.min() / _size(np.abs(alpha).max()),
                                     (alpha - C).max() / C,
                                     abs(float(y @ alpha)) / _size(np.abs(alpha).sum()))),
    )
    return out


def l1_checks(X, y, C: float, w, b: float, alpha, tol: float, nz_rel_tol: float = NZ_REL_TOL) -> LPChecks:
    """Gap, feasibility and complementarity of the pair (w, b), alpha for the 1-norm SVM LPs.

    The primal point is made feasible with xi = hinge (the smallest slacks), so
    its infeasibility is zero by construction; complementarity is
    alpha_i (y_i f_i - 1 + xi_i), (C - alpha_i) xi_i and |w_j| - w_j corr_j, all
    zero at an optimal pair. Each residual is relative to the size of what it compares
    (the gap to P > 0, alpha's terms to max alpha and C, w's to max |w_j|), never to
    max(1, .), so one tol serves any C and any units of X.
    """
    out = LPChecks()
    if w is None or not np.all(np.isfinite(w)) or not math.isfinite(b):
        out.verdict = "no primal point"
        return out
    obj = l1_objectives(X, y, C, w, b, alpha)
    f, hinge = obj["decision"], obj["hinge"]
    out.primal_objective = obj["primal"]
    out.primal_infeasibility = 0.0
    out.nnz_w = count_nonzero(w, nz_rel_tol)
    out.train_accuracy = float(np.mean(np.sign(f) == y))
    if alpha is None or not np.all(np.isfinite(alpha)):
        out.verdict = "no multipliers"
        return out
    out.dual_objective = obj["dual"]
    out.dual_infeasibility = obj["dual_infeasibility"]
    out.duality_gap = out.primal_objective - out.dual_objective
    out.rel_duality_gap = abs(out.duality_gap) / _size(max(out.primal_objective, abs(out.dual_objective)))
    out.complementarity = max(
        float(np.abs(alpha * (y * f - 1.0 + hinge)).max()) / _size(np.abs(alpha).max()),
        float(np.abs((C - alpha) * hinge).max()) / C,
        float(np.abs(np.abs(w) - w * obj["corr"]).max()) / _size(np.abs(w).max()),
    )
    codes = classify(alpha, y, f, C)
    out.n_sv = int(np.sum(codes != ZERO))
    out.n_bound_sv = int(np.sum(codes == AT_BOUND))
    scaled = {"relative duality gap": out.rel_duality_gap, "dual feasibility": out.dual_infeasibility,
              "complementarity": out.complementarity}
    failed = {k: v for k, v in scaled.items() if not v <= tol}
    out.verified = not failed
    out.verdict = "verified" if not failed else "; ".join(f"{k} {v:.2e} > {tol:.0e}" for k, v in failed.items())
    return out


def _feasibility_checks(X, y, w, b, tol: float) -> LPChecks:
    out = LPChecks()
    if w is None or not np.all(np.isfinite(w)) or not math.isfinite(b):
        out.verdict = "no point"
        return out
    f = X @ w + b
    out.primal_infeasibility = float(max(0.0, (1.0 - y * f).max()))
    out.train_accuracy = float(np.mean(np.sign(f) == y))
    out.nnz_w = count_nonzero(w)
    out.verified = out.primal_infeasibility <= tol
    out.verdict = "verified" if out.verified else f"margin violation {out.primal_infeasibility:.2e} > {tol:.0e}"
    return out


def _hull_checks(X, y, lam, mu, tol: float) -> tuple[LPChecks, dict]:
    out = LPChecks()
    if lam is None or mu is None or not (np.all(np.isfinite(lam)) and np.all(np.isfinite(mu))):
        out.verdict = "no point"
        return out, {}
    XA, XB, _, _ = separability.split_classes(X, y)
    # each coordinate of the gap in the column's range: on data in other units an absolute 1e-4 would let hulls
    # 1e-6 apart meet, and against max|x_j| an offset (data not centred: a sparse X never is) would hide the gap.
    # The offset's own part, low_j (sum lam - sum mu), is the sums' residual below; a constant column separates
    # nothing.
    low, high = column_bounds(X)
    size = high - low
    gap = XA.T @ lam - XB.T @ mu - low * (lam.sum() - mu.sum())
    residual = float(max((np.abs(gap) / np.where(size > 0, size, np.inf)).max(), abs(lam.sum() - 1.0),
                         abs(mu.sum() - 1.0), max(0.0, -lam.min()), max(0.0, -mu.min())))
    out.primal_infeasibility = residual
    out.verified = residual <= tol
    out.verdict = "verified" if out.verified else f"hull residual {residual:.2e} > {tol:.0e}"
    return out, {"lam": lam, "mu": mu, "point": XA.T @ lam}


# ----------------------------------------------------------------- solve


def solve_lp(
    formulation: str,
    X,
    y,
    *,
    layer: str,
    backend: str,
    C: float | None = None,
    method: str | None = None,
    abs_form: str = "bound",
    corr_form: str = "lift",
    profile: str = "default",
    time_limit: float | None = None,
    options: dict | None = None,
    nz_rel_tol: float = NZ_REL_TOL,
) -> Solution:
    """Solve one LP formulation with one (layer, backend[, HiGHS method]); return a `Solution`.

    formulation: "separability", "hull_intersection", "l1_primal" or "l1_dual".
    C (> 0) is needed by the 1-norm SVM LPs only. `method` ("simplex" / "ipm")
    picks HiGHS's LP method; None leaves HiGHS's default ("choose").
    `abs_form` ("bound" / "split") and `corr_form` ("lift" / "rows") choose how
    l1_primal writes |w_j| and l1_dual writes |sum_i alpha_i y_i x_ij| <= 1. The
    Solution carries w, b, xi, alpha and the decision values for the 1-norm
    LPs (whichever of them came as multipliers); for `hull_intersection`,
    extras hold `lam`, `mu` and the common `point`. All multipliers, by
    constraint name, are in `extras["multipliers"]`.

    time_limit: seconds from this call's start to its return, as in solvers.api.solve: the backend is given what
    remains after the model's build, and the call runs in a process of the solve server (solvers.isolation) killed
    shortly past the limit, so that a backend without a time limit of its own (PIQP, ProxQP) or a step that does
    not stop by itself (the model's load) ends there too; the row is then `time_limit` and says where it stopped.
    """
    began = time.perf_counter()
    if formulation not in LP_FORMULATIONS:
        raise SVMInputError(f"unknown LP formulation {formulation!r}; choose one of {list(LP_FORMULATIONS)}")
    X, y, labels = validation.check_data(X, y)
    if formulation in (L1_PRIMAL, L1_DUAL):
        if C is None:
            raise SVMInputError(f"formulation {formulation!r} needs C (C > 0)")
        C = validation.check_C(C)
    time_limit = validation.check_time_limit(time_limit)
    if not isolation.ISOLATE:  # no solve server to kill a backend that cannot stop itself
        check_time_limit(layer, backend, time_limit)
    prof = get_profile(profile)
    opts = native_options(backend, prof, options, method_options(layer, backend, method))
    get_backend(layer, backend)  # BackendUnavailableError naming the available ones, before any work
    deadline = Deadline(time_limit, began=began)  # the user's promise runs from the call's start
    extras = {"labels": labels.as_dict(), "method": method or "default", "setting": setting_label(backend, method),
              "C": C, "n": X.shape[0], "d": X.shape[1]}
    if formulation == L1_PRIMAL:
        extras["abs_form"] = abs_form
    if formulation == L1_DUAL:
        extras["corr_form"] = corr_form
    centering = None
    if scaling.far_from_origin(X):  # every LP here is translation invariant: solved centered, mapped back (_uncentered)
        centering = scaling.Standardizer.centering(X)
        X, extras["centered"] = centering.transform(X), centering.mean.tolist()
    row = dict(formulation=formulation, layer=layer, backend=backend, profile=prof.name, deadline=deadline)
    work = partial(_solve_lp, X, y, C, row=row, extras=extras, opts=opts, abs_form=abs_form, corr_form=corr_form,
                   tol=prof.check_tol, nz_rel_tol=nz_rel_tol, centering=centering)
    # with a limit, in a process of the solve server killed past it, as solvers.api.solve
    sol = isolation.run_solve(deadline, work, lambda ended: close_lp(answered(ended, **row, extras=extras), None,
                                                                     C=None))
    return sol


def _solve_lp(X, y, C, *, row: dict, extras: dict, opts: dict, abs_form: str, corr_form: str, tol: float,
              nz_rel_tol: float, centering: scaling.Standardizer | None = None) -> Solution:
    """solve_lp's model, backend call and closing, in the time that remains of row["deadline"]."""
    formulation, layer, backend, deadline = row["formulation"], row["layer"], row["backend"], row["deadline"]
    l1 = formulation in (L1_PRIMAL, L1_DUAL)
    isolation.stage(f"the {layer} model's build")
    start = time.perf_counter()
    model = build_lp(formulation, layer, X, y, C, abs_form=abs_form, corr_form=corr_form)
    row = {**row, "build_s": time.perf_counter() - start}
    if deadline.passed():  # the model took the time: no backend starts past the limit
        raw = RawResult(TIME_LIMIT, "not started",
                           message=deadline.stopped("before the backend was called (building the model)"))
        return close_lp(answered(raw, **row, extras=extras), None, C=None)
    given = deadline.for_backend()
    isolation.stage(f"the call to {layer}/{backend}" + (f", given the {given:.3g} s left" if given is not None else ""))
    try:
        raw = get_backend(layer, backend).solve(model, opts, given)
    except (BackendError, UnsupportedModelError) as exc:
        return close_lp(answered(exc, **row, extras=extras), None, C=None)
    sol = answered(raw, **row, given=given, extras=extras)
    if raw.status not in HAS_POINT:
        # the 1-norm LPs are feasible and bounded for any data and C > 0 (w = 0, b = 0, xi = 1 and
        # alpha = 0 are feasible; the objectives lie between 0 and C l): close_lp refutes such claims
        return close_lp(sol, None, C=C if l1 else None)
    isolation.stage("the closing checks")
    checks = _read_and_check(sol, model, formulation, layer, X, y, C, tol, raw.has_duals, nz_rel_tol)
    if centering is not None:
        _uncentered(sol, centering)
    return close_lp(sol, checks, C=C if l1 else None)


def _uncentered(sol: Solution, centering: scaling.Standardizer) -> None:
    """A point checked on X - mean in the data's units: b absorbs w'mean (w, alpha, xi and the decision values
    stay), the hulls' common point moves by mean (lam and mu stay)."""
    if sol.w is not None and np.all(np.isfinite(sol.w)) and math.isfinite(sol.b):
        sol.b = centering.weights_to_original(sol.w, sol.b)[1]
    if "point" in sol.extras:
        sol.extras["point"] = sol.extras["point"] + centering.mean


def _read_and_check(sol: Solution, model, formulation, layer, X, y, C, tol, has_duals, nz_rel_tol) -> dict:
    """Read the point and the multipliers into `sol` by constraint name, and the LP's own checks."""
    if layer == "cvxpy":  # split the adapter's time into cvxpy's compilation and the solver's own
        stats = model.problem.solver_stats
        sol.extras["compile_s"] = getattr(model.problem, "compilation_time", None)
        sol.extras["solver_s"] = getattr(stats, "solve_time", None) if stats is not None else None
    values = read_values(model, layer)
    mults = read_multipliers(model, layer) if has_duals else {}
    sol.extras["multipliers"] = mults
    if formulation == SEPARABILITY:
        sol.w, sol.b, sol.b_rule = values.get("w"), values.get("b", math.nan), "primal_variable"
        checks = _feasibility_checks(X, y, sol.w, sol.b, tol)
        if sol.w is not None and np.all(np.isfinite(sol.w)):
            sol.decision = X @ sol.w + sol.b
    elif formulation == HULL_INTERSECTION:
        checks, hull = _hull_checks(X, y, values.get("lam"), values.get("mu"), tol)
        sol.extras.update(hull)
    else:
        _l1_readback(sol, formulation, X, y, values, mults)
        checks = l1_checks(X, y, C, sol.w, sol.b, sol.alpha, tol, nz_rel_tol)
        if sol.w is not None and np.all(np.isfinite(sol.w)) and math.isfinite(sol.b):
            sol.decision = X @ sol.w + sol.b
            sol.xi = recovery.slacks(y, sol.decision)
    return checks


def _finite(a) -> bool:
    return a is not None and np.all(np.isfinite(a))


def _l1_readback(sol: Solution, formulation: str, X, y, values: dict, mults: dict) -> None:
    """Fill w, b, alpha from the variables of one LP and the multipliers of the other's rows."""
    if formulation == L1_PRIMAL:
        sol.w, sol.b, sol.b_rule = values.get("w"), values.get("b", math.nan), "primal_variable"
        alpha = mults.get("margin")
        sol.alpha = alpha if _finite(alpha) else None
        p, q = mults.get("abs_pos"), mults.get("abs_neg")
        if sol.alpha is not None and _finite(p) and _finite(q):
            # stationarity in w: p_j - q_j = sum_i alpha_i y_i x_ij
            sol.extras["corr_multiplier_mismatch"] = float(np.abs((p - q) - X.T @ (y * sol.alpha)).max())
        return
    sol.alpha = values.get("alpha")
    balance = mults.get("balance")
    if "lift" in mults:
        w = mults["lift"]  # d max / d rhs of corr_j = sum_i alpha_i y_i x_ij: w_j
    elif "corr_upper" in mults and "corr_lower" in mults:
        w = mults["corr_upper"] + mults["corr_lower"]  # w+ = dual(upper) >= 0, w- = -dual(lower) >= 0
    else:
        w = None
    if _finite(w) and _finite(balance):
        sol.w = w
        sol.b = sol.b_multiplier = float(balance[0])
        sol.b_rule = "multiplier"
        cap = mults.get("cap")
        if _finite(cap):
            hinge = np.maximum(0.0, 1.0 - y * (X @ sol.w + sol.b))
            sol.extras["xi_multiplier_mismatch"] = float(np.abs(cap - hinge).max())
