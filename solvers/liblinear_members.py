"""`solve_member`: the LIBLINEAR members (squared hinge, Crammer-Singer) from data to a verified `Solution`.

The same road as solvers.api.solve: every argument checked before any model is built, the model built by its
formulation (formulations/family/), handed to a registered (layer, backend), its point and multipliers read back
by name, and the row closed by the member's own checks (solvers.liblinear_checks): `optimal` only when proved.

The bias, stated once for both members (LIBLINEAR's conventions, docs/family.md):
    intercept="free"         b unregularized, as the lecture notes' C-SVM (the squared hinge only: LIBLINEAR's
                             Crammer-Singer has no bias of its own)
    intercept="none"         no bias (LIBLINEAR without -B)
    intercept="regularized"  LIBLINEAR's -B / scikit-learn's fit_intercept: a constant feature `intercept_scaling`
                             appended to X, so 1/2 ||w||^2 includes (b / intercept_scaling)^2
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from formulations import validation
from formulations.family import crammer_singer, squared_hinge
from formulations.model import CvxpyModel
from solvers import solution as st
from solvers.checks import withhold_unverified
from solvers.closing import answered
from solvers.errors import BackendError, UnsupportedModelError
from solvers.liblinear_checks import MemberChecks, best_bias, check_crammer_singer, check_squared_hinge
from solvers.profiles import PROFILES, get_profile, native_options
from solvers.registry import BACKEND_NAMES, LAYERS, get_backend

SQUARED_HINGE = "squared_hinge"
CRAMMER_SINGER = "crammer_singer"
MODULES = {SQUARED_HINGE: squared_hinge, CRAMMER_SINGER: crammer_singer}
FORMS = ("primal", "dual")
INTERCEPTS = {SQUARED_HINGE: ("free", "none", "regularized"), CRAMMER_SINGER: ("none", "regularized")}


def solve_member(member: str, form: str, X, y, *, C, layer: str, backend: str, intercept: str | None = None,
                 intercept_scaling: float = 1.0, profile: str = "default", options: dict | None = None) -> st.Solution:
    """Solve one LIBLINEAR member's `form` ("primal" or "dual") with (layer, backend), verified.

    X: n x d numbers (dense or scipy.sparse), y: two labels (squared hinge) or two or more (Crammer-Singer), C > 0.
    intercept: module doc (default "free" for the squared hinge, "none" for Crammer-Singer). The point's values:
    w (k x d for Crammer-Singer), b (nan for Crammer-Singer; its biases under "regularized" in extras["intercepts"]),
    xi, alpha (n x k for Crammer-Singer, LIBLINEAR's alpha_i^m) and the decision values (n x k). Every bad
    argument raises SVMInputError naming it, before any model is built."""
    began = time.perf_counter()
    X, y, C, intercept, extras = _checked(member, form, X, y, C=C, layer=layer, backend=backend,
                                          intercept=intercept, intercept_scaling=intercept_scaling,
                                          profile=profile, options=options)
    prof = get_profile(profile)
    adapter = get_backend(layer, backend)
    scaling = float(intercept_scaling)
    data = _with_constant(X, scaling) if intercept == "regularized" else X
    module = MODULES[member]
    make = getattr(module, f"build_{form}_{layer}")
    if member == SQUARED_HINGE:
        model = make(data, y, C, intercept=intercept == "free")
    else:
        model = make(data, y, extras["n_classes"], C)
    formulation = module.PRIMAL if form == "primal" else module.DUAL
    try:
        raw = adapter.solve(model, native_options(backend, prof, options), None)
    except (BackendError, UnsupportedModelError) as exc:
        raw = exc
    sol = answered(raw, formulation=formulation, layer=layer, backend=backend, profile=prof.name,
                   backend_version=adapter.version(), extras=extras)
    if not isinstance(raw, BaseException) and raw.status in (st.OPTIMAL, st.OPTIMAL_INACCURATE, st.ITERATION_LIMIT,
                                                             st.TIME_LIMIT):
        values = read_values(model, layer, raw.has_duals)
        checks = (_close_squared_hinge(sol, values, data, y, C, intercept == "free", form, prof.check_tol)
                  if member == SQUARED_HINGE else _close_crammer_singer(sol, values, data, y, C, form, prof.check_tol))
        _settle(sol, checks, form, prof.check_tol)
    if intercept == "regularized" and sol.w is not None:
        _split_constant(sol, member, scaling)
    withhold_unverified(sol)
    sol.build_s = time.perf_counter() - began - (sol.solve_s if math.isfinite(sol.solve_s) else 0.0)
    return sol


def _checked(member, form, X, y, *, C, layer, backend, intercept, intercept_scaling, profile, options):
    """(X, y or class codes, C, intercept, extras) checked, or the SVMInputError naming the bad argument."""
    validation.check_choice("member", member, tuple(MODULES))
    validation.check_choice("form", form, FORMS)
    validation.check_choice("layer", layer, LAYERS)
    validation.check_choice("backend", backend, BACKEND_NAMES)
    validation.check_choice("profile", profile, PROFILES)
    validation.check_options(options)
    intercept = intercept or ("free" if member == SQUARED_HINGE else "none")
    if intercept not in INTERCEPTS[member]:
        why = " (LIBLINEAR's Crammer-Singer has no bias of its own)" if member == CRAMMER_SINGER else ""
        raise validation.SVMInputError(f"intercept {intercept!r} is not available for {member}{why}; choose one of "
                                       f"{list(INTERCEPTS[member])}")
    scaling = _positive(intercept_scaling, "intercept_scaling") if intercept == "regularized" else None
    C = _positive(C, "C")
    X = validation.check_X(X)
    if member == SQUARED_HINGE:
        y, labels = validation.check_labels(y, n=X.shape[0])
        extras = {"labels": labels.as_dict()}
    else:
        y, classes = validation.check_classes(y, n=X.shape[0])
        extras = {"classes": classes, "n_classes": len(classes)}
    extras.update(member=member, form=form, intercept=intercept, C=C)
    if scaling is not None:
        extras["intercept_scaling"] = scaling
    return X, y, C, intercept, extras


def _positive(value, name: str) -> float:
    """A number > 0 and finite (C's rule, formulations.validation.check_C, in this parameter's name)."""
    try:
        value = validation.check_C(value, allow_infinite=True)
    except validation.SVMInputError as exc:
        raise validation.SVMInputError(str(exc).replace("C must", f"{name} must", 1)) from None
    if math.isinf(value):
        raise validation.SVMInputError(f"{name} must be finite, got {value}")
    return value


def _with_constant(X, value: float):
    """X with a constant column `value` appended (LIBLINEAR's bias feature)."""
    column = np.full((X.shape[0], 1), value)
    return sp.hstack([X, column], format="csr") if sp.issparse(X) else np.hstack([X, column])


def read_values(model, layer: str, has_duals: bool = True) -> dict:
    """The point's variables and the named constraints' multipliers of a solved model of either layer, as arrays
    (Pyomo's sign convention, d objective / d right-hand side, in both layers)."""
    out: dict = {}
    if layer == "cvxpy":
        assert isinstance(model, CvxpyModel)
        for name, var in model.variables.items():
            if var.value is not None:
                out[name] = np.asarray(var.value, dtype=float).ravel()
        for name, con in model.constraints.items():
            if has_duals and con.dual_value is not None:
                out[f"dual_{name}"] = np.asarray(con.dual_value, dtype=float).ravel()
        return out
    for name in ("w", "b", "xi", "alpha"):
        if hasattr(model, name):
            values = [v.value for v in getattr(model, name).values()]
            if all(v is not None for v in values):
                out[name] = np.array(values, dtype=float)
    for name in ("margin", "balance", "coupling"):
        rows = getattr(model, name, None)
        if rows is not None:
            duals = [model.dual.get(rows[i]) for i in rows]
            if duals and all(v is not None for v in duals):
                out[f"dual_{name}"] = np.array(duals, dtype=float)
    return out


def _close_squared_hinge(sol, values, X, y, C, intercept: bool, form: str, tol: float) -> MemberChecks | None:
    """The squared hinge's point from `values` (w, b from the primal; alpha and w = X'(y alpha) from the dual, b the
    best for that w: solvers.liblinear_checks.best_bias), then its checks."""
    if form == "primal":
        if "w" not in values:
            return None
        w, b = values["w"], float(values["b"][0]) if intercept and "b" in values else 0.0
        alpha = values.get("dual_margin")
        b_multiplier = math.nan
    else:
        if "alpha" not in values:
            return None
        alpha = values["alpha"]
        w = np.asarray(X.T @ (y * alpha), dtype=float).ravel()
        g = np.asarray(X @ w, dtype=float).ravel()
        b = best_bias(g, y) if intercept else 0.0
        b_multiplier = float(values["dual_balance"][0]) if "dual_balance" in values else math.nan
        sol.b_multiplier = b_multiplier
    sol.w, sol.b, sol.alpha = w, b, alpha
    sol.b_rule = "primal_variable" if form == "primal" else ("best for w" if intercept else "none")
    sol.decision = np.asarray(X @ w, dtype=float).ravel() + b
    sol.xi = np.maximum(0.0, 1.0 - y * sol.decision)
    return check_squared_hinge(X, y, C, w=w, b=b, alpha=alpha, intercept=intercept, primal=form == "primal", tol=tol,
                               b_multiplier=b_multiplier)


def _close_crammer_singer(sol, values, X, codes, C, form: str, tol: float) -> MemberChecks | None:
    """Crammer-Singer's point: W from the primal's w with alpha = C [y_i = m] - beta from the margin rows'
    multipliers; from the dual, alpha and W = alpha'X. Then its checks."""
    n, k = len(codes), sol.extras["n_classes"]
    own = np.zeros((n, k))
    own[np.arange(n), codes] = 1.0
    if form == "primal":
        if "w" not in values:
            return None
        W = values["w"].reshape(k, -1)
        beta = values.get("dual_margin")
        alpha = None if beta is None else C * own - beta.reshape(n, k)
    else:
        if "alpha" not in values:
            return None
        alpha = values["alpha"].reshape(n, k)
        W = np.asarray(alpha.T @ X, dtype=float)
    sol.w, sol.alpha = W, alpha
    sol.b_rule = "none"
    sol.decision = np.asarray(X @ W.T, dtype=float)
    checks = check_crammer_singer(X, codes, C, W=W, alpha=alpha, primal=form == "primal", tol=tol)
    sol.xi = np.max(sol.decision + (1.0 - own) - sol.decision[np.arange(n), codes][:, None], axis=1)
    return checks


def _settle(sol: st.Solution, checks: MemberChecks | None, form: str, tol: float) -> None:
    """The status from the checks: `optimal` only when claimed and verified; a claimed objective that differs from
    the one recomputed at the point is a false claim (optimal_inaccurate, and the row says so)."""
    if checks is None:
        sol.status = st.OPTIMAL_INACCURATE if sol.solver_status == st.OPTIMAL else sol.solver_status
        sol.message = "; ".join(filter(None, [sol.message, "no point returned"]))
        return
    sol.checks = checks.as_dict()
    sol.extras["proved_optimum"] = {key: np.asarray(v).tolist() for key, v in checks.optimum.items()}
    own = checks.primal_objective if form == "primal" else checks.dual_objective
    scale = max(abs(checks.primal_objective), abs(checks.dual_objective), np.finfo(float).tiny)
    claim_ok = math.isfinite(sol.objective) and abs(sol.objective - own) <= tol * scale
    if sol.solver_status in (st.OPTIMAL, st.OPTIMAL_INACCURATE):
        sol.status = st.OPTIMAL if (sol.solver_status == st.OPTIMAL and checks.verified and claim_ok) \
            else st.OPTIMAL_INACCURATE
    if not claim_ok and math.isfinite(own):
        sol.message = "; ".join(filter(None, [sol.message, f"the solver's objective {sol.objective:.6g} differs from "
                                              f"the recomputed {own:.6g}"]))
    if sol.status != st.OPTIMAL and checks.verdict != "verified":
        sol.message = "; ".join(filter(None, [sol.message, f"not verified: {checks.verdict}"]))


def _split_constant(sol: st.Solution, member: str, scaling: float) -> None:
    """Under intercept="regularized" the last weight belongs to the constant feature: b = intercept_scaling * w_last
    (scikit-learn's intercept_), and w keeps the data's d features."""
    if member == SQUARED_HINGE:
        sol.b, sol.w = scaling * float(sol.w[-1]), sol.w[:-1]
        sol.b_rule = "regularized (constant feature)"
    else:
        sol.extras["intercepts"] = (scaling * sol.w[:, -1]).tolist()
        sol.w = sol.w[:, :-1]
