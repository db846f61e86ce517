"""`check_point`: any claimed solution judged by the closing step every solve goes through.

A student hands in w, b (and xi) for a primal, or alpha (and b, w) for a dual. The point becomes a
`Solution` whose "solver" claims an optimum, and solvers.closing.close judges it exactly as it judges a
backend's answer: the duality gap, the KKT residuals on their own scales, the optimum proved from the
point's active set. Nothing here decides optimality a second way; this module only

    derives    what the given fields determine: w from alpha, b's interval, xi from w and b, and the
               multipliers of a primal point (solvers.checks.estimate_multipliers, on the margin to `tol`)
    explains   each condition with the point where it is worst and why (solvers.checks.kkt_by_point)
    measures   the distance to the optimum of a tight solve of the same problem (solvers.api.solve,
               profile "high"), relative to the optimum's size

Points are numbered from 1 in the messages, as the notes number them (i = 1..l, row i of the data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

import formulations
from formulations import kernels, penalty, recovery, validation
from formulations.errors import SVMInputError, plain
from formulations.model import DUAL, HARD_PRIMAL, KERNEL_DUAL, PRIMAL_FORMULATIONS, SOFT_PRIMAL
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution
from solvers.api import solve
from solvers.checks import estimate_multipliers, kkt_by_point
from solvers.closing import close, resolve_C
from solvers.profiles import Profile

#: The tolerance a point is judged to when none is given: a hand-computed answer printed to 4 decimals moves each
#: f(x_i) by up to 5e-5 (|x_i| + 1) (9.3e-4 on Example 5.1), so its bar is 1e-3; pass tol=TIGHT (the `high`
#: profile's) to ask for a solver's precision. experiments.grading.rubric.DEFAULT_TOLERANCE is the same.
HAND_ROUNDED = 1e-3
#: How a condition on multipliers the checks estimated from a w, b answer says so.
ESTIMATED = " (alpha estimated from w, b: the points on their margin to the tolerance)"
#: Why a w, b answer's multipliers' conditions are not met where no multipliers could be estimated from it.
NO_MULTIPLIERS = ("no multipliers: no point is on its margin (|y f - 1| <= {tol:g}), so none could be estimated from "
                  "w, b")
#: The conditions that a w, b answer's multipliers decide (estimated where it handed in none).
MULTIPLIER_CONDITIONS = ("dual feasibility", "balance", "stationarity", "complementarity", "duality gap")
TIGHT = 1e-6
#: The tight solve that gives the optimum a point is measured against.
REFERENCE = {"layer": "cvxpy", "backend": "clarabel", "profile": "high"}
#: The conditions, in the order a report lists them (the rubric's weights are keyed by these names).
CONDITIONS = ("primal feasibility", "dual feasibility", "balance", "stationarity", "complementarity",
              "duality gap", "slacks", "objective", "optimum", "closing checks")


@dataclass
class Condition:
    """One condition of optimality at the claimed point: its residual on its own scale (solvers.checks)."""

    name: str
    value: float  # nan: not computable from what was given
    holds: bool
    point: int | None = None  # where it is worst (1-based), or None for a condition of the whole point
    why: str = ""
    estimated: bool = False  # judged on multipliers estimated from the given w, b (not handed in)


@dataclass
class PointCheck:
    """What check_point found. `verdict` is the closing step's status of the point (optimal only when proved)."""

    formulation: str
    verdict: str
    tol: float
    conditions: list[Condition]
    derived: dict  # what the given fields determine (w, b's interval, xi, alpha), as lists and numbers
    distance: dict  # relative distance to the optimum of a tight solve, per quantity; {} without one
    checks: dict  # the closing checks' own record (solvers.checks.Checks.as_dict)
    message: str = ""
    optimum: dict = field(default_factory=dict)  # the tight solve's w*, b*, alpha*, objective
    # each pointwise condition's residual at every point (solvers.checks.kkt_by_point; "slacks" if xi was given)
    by_point: dict = field(default_factory=dict)

    @property
    def optimal(self) -> bool:
        return self.verdict == OPTIMAL

    @property
    def failed(self) -> list[Condition]:
        return [c for c in self.conditions if not c.holds]

    def summary(self) -> str:
        """One line: the verdict, and the first failed condition's reason, one on what was handed in first (a w, b
        answer's margins, gap or distance before the multipliers the checks estimated from it)."""
        failed = sorted(self.failed, key=lambda c: c.estimated)
        return self.verdict if not failed else f"{self.verdict}: {failed[0].why}"


def check_point(formulation: str, X, y, *, C=None, kernel=None, w=None, b=None, xi=None, alpha=None,
                objective=None, tol: float = HAND_ROUNDED, reference: bool = True) -> PointCheck:
    """Judge a claimed solution of `formulation` on (X, y) with the project's closing checks.

    Give what the formulation determines: w and b for a primal (alpha, xi optional; alpha alone also
    determines them), alpha for a dual (b, w optional: judged as handed in, not recovered). `objective`:
    the value the answer claims, checked like a solver's claim (default: the point's own). `tol`: the bar of
    every residual (HAND_ROUNDED, 1e-3: what an answer printed to 4 decimals deserves, docs/grading.md; TIGHT,
    1e-6, the `high` profile's, for a solver's output). `reference`: also solve the problem tightly and measure the distance to its optimum.
    A bad field raises SVMInputError naming it (length, NaN, text, a w for the kernel dual).
    """
    X, y, C, kern, K = _problem(formulation, X, y, C, kernel)
    n, d = X.shape
    given = _given_fields(formulation, n, d, w=w, b=b, xi=xi, alpha=alpha)
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and 0 < tol < 1):
        raise SVMInputError(f"tol must be a number in (0, 1), got {plain(tol)!r}")
    values, derived = _claimed_values(formulation, X, y, C, given, tol)
    sol = Solution(formulation=formulation, layer="claimed", backend="answer", status=OPTIMAL,
                      solver_status=OPTIMAL, raw_status="handed in")
    sol.objective = _objective(formulation, X, y, C, K, values) if objective is None else float(objective)
    close(sol, values, X=X, y=y, C=C, profile=Profile("grading", None, tol, "a claimed point"),
          K=K, kernel=kern if formulation == KERNEL_DUAL else None, alpha_claimed="alpha" in given)
    _derived_after(sol, X, y, derived)
    conditions = _conditions(sol, X, y, C, given, tol, claimed_objective=objective is not None)
    by_point = _by_point(sol, y, C, given)
    distance, optimum = _distance(formulation, X, y, C, kern, sol) if reference else ({}, {})
    if reference:
        d_max = max((v for v in distance.values() if math.isfinite(v)), default=math.nan)
        holds = bool(distance) and d_max <= tol
        why = (f"within {d_max:.1e} of the proved optimum (relative to its size)" if holds else
               "no proved optimum to compare with" if not distance else
               f"{_farthest(distance)} away from the proved optimum (relative to its size) > {tol:.0e}")
        conditions.append(Condition("optimum", d_max, holds, None, why))
    if sol.status != OPTIMAL and all(c.holds for c in conditions):  # what else the closing checks refused
        conditions.append(Condition("closing checks", math.nan, False, None, sol.checks.get("verdict", "")))
    verdict = sol.status
    if verdict == OPTIMAL and any(not c.holds for c in conditions):  # a handed-in xi, or far from the optimum
        verdict = OPTIMAL_INACCURATE
    return PointCheck(formulation, "optimal" if verdict == OPTIMAL else "not optimal", tol, conditions,
                      derived, distance, sol.checks, sol.checks.get("verdict", ""), optimum, by_point)


# ------------------------------------------------------------------ the problem and the answer's fields


def _problem(formulation, X, y, C, kernel):
    """(X, y in -1/+1, C, kernel, K) checked as solve() checks them."""
    if formulation not in formulations.QP_FORMULATIONS:
        raise SVMInputError(f"unknown formulation {formulation!r}; choose one of {list(formulations.QP_FORMULATIONS)}")
    X, y, _ = validation.check_data(X, y)
    C = resolve_C(formulation, C, n=len(y))
    if formulation == KERNEL_DUAL:
        kern = validation.check_kernel(kernel)
        return X, y, C, kern, kernels.gram(kern, X)
    if kernel is not None and validation.check_kernel(kernel).name != "linear":
        raise SVMInputError(f"a kernel is used by the 'kernel_dual' formulation only, not by {formulation!r}")
    return X, y, C, None, None


def _vector(name: str, value, length: int, what: str) -> np.ndarray:
    arr = validation.check_array_numeric(value, name).reshape(-1) if np.ndim(value) else None
    if arr is None:
        raise SVMInputError(f"{name} must be a vector of {length} numbers ({what}), got one number")
    if arr.size != length:
        raise SVMInputError(f"{name} has {arr.size} entries but needs {length} ({what})")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise SVMInputError(f"{name} entry {bad[0] + 1} is {arr[bad[0]]} (not a finite number)")
    return arr


def _given_fields(formulation, n, d, *, w, b, xi, alpha) -> dict:
    """The answer's fields, each checked (shape, numbers, finite), or an SVMInputError naming the field."""
    if formulation == KERNEL_DUAL and w is not None:
        raise SVMInputError("w: the kernel dual has no w in the input space (w lives in the feature space); "
                            "hand in alpha (and b)")
    out = {}
    if w is not None:
        out["w"] = _vector("w", w, d, f"one per feature, d = {d}")
    if alpha is not None:
        out["alpha"] = _vector("alpha", alpha, n, f"one per point, n = {n}")
    if xi is not None:
        out["xi"] = _vector("xi", xi, n, f"one per point, n = {n}")
    if b is not None:
        if np.ndim(b):
            raise SVMInputError(f"b must be one number, got {np.size(b)} values")
        value = validation.check_array_numeric(b, "b")
        if not np.isfinite(value):
            raise SVMInputError(f"b is {float(value)} (not a finite number)")
        out["b"] = float(value)
    primal = formulation in PRIMAL_FORMULATIONS
    if primal and "alpha" not in out and not ("w" in out and "b" in out):
        raise SVMInputError(f"{formulation}: hand in w and b (or alpha); given: {', '.join(out) or 'nothing'}")
    if not primal and "alpha" not in out:
        raise SVMInputError(f"{formulation}: hand in alpha (b and w are optional); given: {', '.join(out) or 'nothing'}")
    return out


def _claimed_values(formulation, X, y, C, given: dict, tol: float) -> tuple[dict, dict]:
    """The values closing.close reads (its names), and what was derived to get them."""
    derived = {}
    if formulation not in PRIMAL_FORMULATIONS:
        values = {"alpha": given["alpha"]}
        if "b" in given:
            values["claimed_b"] = given["b"]
        if "w" in given:
            values["claimed_w"] = given["w"]
        return values, derived
    w, b = given.get("w"), given.get("b")
    if w is None:
        w = recovery.weights_from_alpha(X, y, given["alpha"])
        derived["w (from alpha)"] = w.tolist()
    if b is None:
        bias = recovery.recover_bias(given["alpha"], y, X @ w, C)
        b = bias.b
        derived["b (from alpha)"] = b
    alpha = given.get("alpha")
    if alpha is None:  # on the margin to the answer's own accuracy (tol), as the checks would estimate them
        alpha = estimate_multipliers(X, y, w, X @ w + b, C, band=tol)
        derived["alpha (estimated from w, b)"] = alpha.tolist()
    return {"w": w, "b": b, "alpha": alpha}, derived


def _objective(formulation, X, y, C, K, values) -> float:
    """The point's own objective (the primal's P(w, b), a dual's D(alpha)): what an answer claims by default."""
    if formulation in PRIMAL_FORMULATIONS:
        w = values["w"]
        if formulation == HARD_PRIMAL or penalty.is_hard(C):
            return 0.5 * float(w @ w)
        return recovery.primal_objective(X, y, w, values["b"], C)
    u = y * values["alpha"]
    uKu = float(u @ (K @ u)) if K is not None else float(np.sum((X.T @ u) ** 2))
    return float(values["alpha"].sum()) - 0.5 * uKu


def _derived_after(sol: Solution, X, y, derived: dict) -> None:
    """What the closing step derived: w from alpha, b's interval, xi from w and b."""
    if sol.formulation == DUAL and sol.alpha is not None:
        derived["w (from alpha)"] = recovery.weights_from_alpha(X, y, sol.alpha).tolist()
    if "b_lower" in sol.extras:  # a dual's alpha bounds b (recovery.kkt_interval)
        derived["b interval (from alpha)"] = [sol.extras["b_lower"], sol.extras["b_upper"]]
    if math.isfinite(sol.checks.get("b_lower", math.nan)):
        derived["b interval (proved optimum)"] = [sol.checks["b_lower"], sol.checks["b_upper"]]
    if sol.xi is not None:
        derived["xi (from w, b)"] = sol.xi.tolist()


# ------------------------------------------------------------------ each condition, where and why


def _conditions(sol: Solution, X, y, C, given: dict, tol: float, claimed_objective: bool) -> list[Condition]:
    """The closing checks' residuals as named conditions, each with its worst point and the reason."""
    checks, alpha, f = sol.checks, sol.alpha, sol.decision
    estimated = sol.formulation in PRIMAL_FORMULATIONS and "alpha" not in given  # alpha from the given w, b
    if f is None or alpha is None:
        return [Condition("closing checks", math.nan, False, None, checks.get("verdict", "no point"))]
    hard = sol.formulation == HARD_PRIMAL or penalty.is_hard(C)
    by_point = kkt_by_point(alpha, y, f, C, hard)
    margin = y * f
    out = []

    i = int(np.argmax(by_point["primal feasibility"]))
    out.append(_pointwise("primal feasibility", checks["kkt_primal_feasibility"], tol, i,
                          f"point {i + 1} has y f = {margin[i]:.6g} < 1: the hard margin needs every point on or "
                          "outside its margin" if hard else "the slacks xi_i = max(0, 1 - y_i f_i) take up every point"))

    i = int(np.argmax(by_point["dual feasibility"]))
    bound = penalty.at(C, i) if penalty.per_sample(C) else C
    out.append(_pointwise("dual feasibility", checks["kkt_dual_feasibility"], tol, i,
                          f"alpha = {alpha[i]:.6g} < 0" if alpha[i] < 0 else f"alpha = {alpha[i]:.6g} > C = {bound:.6g}"))

    total = float(np.abs(alpha).sum())
    out.append(_whole("balance", checks["kkt_balance"], tol,
                      f"sum_i alpha_i y_i = {float(y @ alpha):.6g} (sum_i alpha_i = {total:.6g})"))

    out.append(_stationarity(sol, X, y, given, tol))

    i = int(np.argmax(by_point["complementarity"]))
    xi_i = max(0.0, 1.0 - margin[i])
    why = (f"alpha = {alpha[i]:.6g} but its margin is {margin[i]:.6g} (> 1, outside: alpha must be 0)"
           if margin[i] > 1 else f"xi = {xi_i:.6g} (inside the margin) but alpha = {alpha[i]:.6g} < C = {bound:.6g}")
    out.append(_pointwise("complementarity", checks["kkt_complementarity"], tol, i, why))

    primal = sol.formulation in PRIMAL_FORMULATIONS
    gap = checks["rel_duality_gap"] if primal else max(0.0, checks["rel_duality_gap"] - checks["gap_rounding"])
    out.append(_whole("duality gap", gap, tol, f"P = {checks['primal_objective']:.8g}, D = "
                      f"{checks['dual_objective']:.8g}: |P - D| = {gap:.2e} of P"))
    if estimated:  # the multipliers' conditions: on the alpha the checks estimated, not on what was handed in
        # none estimated (no point on its margin): alpha = 0 would meet three of them for nothing, and the gap
        # would read 1 for a near answer and a wild one alike; none is judged met, and the reason says why
        none = not np.any(alpha)
        for k, c in enumerate(out):
            if c.name in MULTIPLIER_CONDITIONS:
                said = ESTIMATED in c.why or c.holds
                out[k] = (Condition(c.name, math.nan, False, None, NO_MULTIPLIERS.format(tol=tol), estimated=True)
                          if none else replace(c, estimated=True, why=c.why if said else c.why + ESTIMATED))

    if "xi" in given:
        derived = np.maximum(0.0, 1.0 - margin)
        miss = np.abs(given["xi"] - derived)
        i = int(np.argmax(miss))
        out.append(_pointwise("slacks", float(miss[i]), tol, i, f"xi = {given['xi'][i]:.6g} but "
                              f"max(0, 1 - y f) = {derived[i]:.6g} at the given w, b"))
    if claimed_objective:
        reason = checks.get("objective_claim", "consistent")
        out.append(Condition("objective", math.nan, reason == "consistent", None,
                             "the claimed objective is the point's own" if reason == "consistent" else reason))
    return out


def _by_point(sol: Solution, y, C, given: dict) -> dict:
    """The pointwise conditions' residuals at every point, for a page that shows them point by point."""
    if sol.decision is None or sol.alpha is None:
        return {}
    hard = sol.formulation == HARD_PRIMAL or penalty.is_hard(C)
    out = {k: v.tolist() for k, v in kkt_by_point(sol.alpha, y, sol.decision, C, hard).items()}
    if "xi" in given:
        out["slacks"] = np.abs(given["xi"] - np.maximum(0.0, 1.0 - y * sol.decision)).tolist()
    return out


def _pointwise(name, value, tol, i, why) -> Condition:
    if value == 0:
        return Condition(name, 0.0, True, None, "holds exactly at every point")
    holds = bool(value <= tol)
    return Condition(name, float(value), holds, i + 1, why if not holds else f"worst at point {i + 1}: {value:.1e}")


def _whole(name, value, tol, why) -> Condition:
    holds = bool(value <= tol)
    return Condition(name, float(value), holds, None, why)


def _stationarity(sol: Solution, X, y, given: dict, tol) -> Condition:
    """w = sum_i alpha_i y_i x_i, worst at the feature where the two differ most."""
    value = sol.checks["kkt_stationarity"]
    if sol.formulation == KERNEL_DUAL:
        return Condition("stationarity", 0.0, True, None, "w = sum_i alpha_i y_i phi(x_i) by construction")
    w_alpha = X.T @ (y * sol.alpha)
    k = int(np.argmax(np.abs(sol.w - w_alpha)))
    estimated = sol.formulation in PRIMAL_FORMULATIONS and "alpha" not in given
    source = ESTIMATED if estimated else ""
    holds = bool(value <= tol)
    why = (f"w_{k + 1} = {sol.w[k]:.6g} but sum_i alpha_i y_i x_i{k + 1} = {w_alpha[k]:.6g}{source}"
           if not holds else f"||w - sum_i alpha_i y_i x_i|| = {value:.1e} of ||w||{source}")
    return Condition("stationarity", float(value), holds, None, why)


# ------------------------------------------------------------------ distance to the optimum


def _distance(formulation, X, y, C, kern, sol: Solution) -> tuple[dict, dict]:
    """Relative distances of the point to the optimum of a tight solve ({} where none was proved)."""
    if sol.decision is None:
        return {}, {}
    ref = _reference(formulation, X, y, C, kern)
    if ref is None:
        return _closing_distance(sol.checks), {}
    f_ref = ref.decision
    f_scale = max(float(np.max(np.abs(f_ref))), np.finfo(float).tiny)
    lo, hi = ref.checks.get("b_lower", ref.b), ref.checks.get("b_upper", ref.b)
    lo, hi = (ref.b, ref.b) if not (math.isfinite(lo) and math.isfinite(hi)) else (lo, hi)
    primal = formulation in PRIMAL_FORMULATIONS
    own = sol.checks["primal_objective"] if primal else sol.checks["dual_objective"]
    distance = {"objective": abs(own - ref.objective) / max(abs(ref.objective), np.finfo(float).tiny),
                "b": max(lo - sol.b, sol.b - hi, 0.0) / f_scale,
                "decision values": float(np.max(np.abs(sol.decision - f_ref))) / f_scale}
    if ref.w is not None and sol.w is not None:
        distance["w"] = float(np.linalg.norm(sol.w - ref.w)) / max(float(np.linalg.norm(ref.w)), np.finfo(float).tiny)
    alpha_ref = ref.proved_alpha if ref.proved_alpha is not None else ref.alpha
    optimum = {"objective": ref.objective, "b": ref.b, "b_interval": [lo, hi],
               "alpha": None if alpha_ref is None else alpha_ref.tolist(),
               "w": None if ref.w is None else ref.w.tolist()}
    return distance, optimum


def _reference(formulation, X, y, C, kern) -> Solution | None:
    """The problem's verified optimum: a tight solve of the formulation, else of its primal or dual
    counterpart (the same optimum: at X x 1e3 the hard primal's was not verified, the dual's was)."""
    hard = formulation == HARD_PRIMAL or penalty.is_hard(C)
    forms = {HARD_PRIMAL: (HARD_PRIMAL, DUAL), DUAL: (DUAL, HARD_PRIMAL if hard else SOFT_PRIMAL),
             SOFT_PRIMAL: (SOFT_PRIMAL, DUAL)}.get(formulation, (formulation,))
    for form in forms:
        ref = solve(form, X, y, C=None if form == HARD_PRIMAL else C, kernel=kern, **REFERENCE)
        if ref.status == OPTIMAL:
            return ref
    return None


def _closing_distance(checks: dict) -> dict:
    """Where no tight solve was verified: the closing checks' own distances to the optimum they proved from
    the point's active set (solvers.checks), or their rigorous bound from the gap, if they got that far."""
    if str(checks.get("reference", "")).startswith("gap bound"):
        return {"decision values (bound)": checks["err_decision"]}
    if checks.get("reference") != "proved optimum":
        return {}
    names = {"objective": "err_objective", "b": "err_b", "decision values": "err_decision", "w": "err_w"}
    return {k: checks[v] for k, v in names.items() if math.isfinite(checks.get(v, math.nan))}


def _farthest(distance: dict) -> str:
    name = max(distance, key=lambda k: distance[k] if math.isfinite(distance[k]) else -1.0)
    return f"{name} {distance[name]:.1e}"
