r"""L2-loss (squared hinge) SVM: LIBLINEAR's default loss, primal and dual (notes' notation, 001 (8) with xi_i^2).

Primal (params["intercept"]: "free", a bias b, as the lecture notes' C-SVM; "none", no b, as LIBLINEAR without -B;
"regularized", LIBLINEAR's -B: no b, and a constant feature appended to X, formulations.family.liblinear):

    min_{w, b, xi}  1/2 ||w||^2 + C sum_i xi_i^2
    s.t.            y_i (w' x_i + b) >= 1 - xi_i            i = 1..l   [margin, multipliers alpha_i]

No xi_i >= 0: at the optimum xi_i = max(0, 1 - y_i f(x_i)) anyway (a negative xi_i only adds xi_i^2), and
without the bound the dual loses its upper bound on alpha. Lagrangian stationarity:

    w = sum_i alpha_i y_i x_i,    sum_i alpha_i y_i = 0 (with b),    2 C xi_i = alpha_i   (the multipliers' meaning)

Dual (LIBLINEAR's "Q + D, D_ii = 1/(2C)": the hinge's box 0 <= alpha <= C becomes alpha >= 0 and the
Hessian gains I/(2C)):

    max_{alpha}  sum_i alpha_i - 1/2 || sum_i alpha_i y_i x_i ||^2 - 1/(4C) sum_i alpha_i^2
    s.t.         sum_i alpha_i y_i = 0                           [balance, multiplier b; only with intercept]
                 alpha_i >= 0

written, like formulations.dual, with the lifted w = sum_i alpha_i y_i x_i [lift]: l + d variables and an
l x d matrix, never the l x l matrix X X'.

Optimality conditions (`conditions`), from the point: f_i = w'x_i + b, xi_i = max(0, 1 - y_i f_i),

    P = 1/2 ||w||^2 + C sum xi_i^2,   D = sum alpha_i - 1/2 ||X'(y alpha)||^2 - 1/(4C) sum alpha_i^2
    dual feasibility   max(0, -alpha_i) / max alpha
    balance            |y'alpha| / sum alpha                       (with a free b only)
    stationarity       ||w - X'(y alpha)|| / ||w||                 (formulations.family.common.stationarity)
    multipliers        max |alpha_i - 2 C xi_i| / max alpha        (the multipliers' meaning; it holds complementarity)
    bias               |b_multiplier - b| / max |f|                 (a dual's balance row, where the solver returns it)
    the point          w, b, f and the objective against the optimum proved by the finite Newton method (`optimum`):
                       the active set A = {y_i f_i < 1} gives one linear system, and its solution is the optimum when
                       its own active set is A again; else the gap's bound (formulations.family.liblinear)

A dual point's b is the one that minimises P for its w (`best_bias`); the solver's multiplier of `balance` must be
that b (bias residual, relative to max |f|).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.data_matrix import absolute
from formulations.family.common import Conditions, FamilyData, stationarity, top
from formulations.family.liblinear import EPS, features, gap_bound, point_errors
from formulations.family.names import PRIMAL, SQUARED_HINGE_LINEAR_DUAL, SQUARED_HINGE_PRIMAL
from formulations.model import CvxpyModel, lifted_rows, linear_sum, matrix_rows, new_pyomo_model, signed

_TINY = np.finfo(float).tiny
#: The proof solves a (d + 1) x (d + 1) system; beyond this d the conditions take the gap's bound instead.
PROOF_MAX_D = 5_000


def _free_bias(params: dict) -> bool:
    return params.get("intercept", "free") == "free"


def build_primal_pyomo(X, y: np.ndarray, params: dict) -> pyo.ConcreteModel:
    X = features(X, params)
    n, d = X.shape
    C = float(params["C"])
    m = new_pyomo_model(SQUARED_HINGE_PRIMAL, n, d)
    m.w = pyo.Var(m.J)
    m.xi = pyo.Var(m.I)  # free: see the module docstring
    columns = [sp.csr_matrix(signed(y, X))]
    variables = list(m.w.values())
    if _free_bias(params):
        m.b = pyo.Var()
        columns.append(sp.csr_matrix(y[:, None]))
        variables.append(m.b)
    rows = sp.hstack([*columns, sp.identity(n, format="csr")], format="csr")  # [Y X, y, I] (w, b, xi) >= 1
    m.margin = matrix_rows(rows, [*variables, *m.xi.values()], lower=1.0)
    m.obj = pyo.Objective(expr=0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J)
                          + C * pyo.quicksum(m.xi[i] ** 2 for i in m.I), sense=pyo.minimize)
    return m


def build_primal_cvxpy(X, y: np.ndarray, params: dict) -> CvxpyModel:
    X = features(X, params)
    n, d = X.shape
    w = cp.Variable(d, name="w")
    xi = cp.Variable(n, name="xi")
    variables = {"w": w, "xi": xi}
    f_signed = signed(y, X) @ w  # y_i w'x_i
    if _free_bias(params):
        b = variables["b"] = cp.Variable(name="b")
        f_signed = f_signed + y * b
    margin = f_signed >= 1 - xi  # y_i (w'x_i + b) >= 1 - xi_i
    objective = 0.5 * cp.sum_squares(w) + float(params["C"]) * cp.sum_squares(xi)
    return CvxpyModel(SQUARED_HINGE_PRIMAL, cp.Problem(cp.Minimize(objective), [margin]), variables,
                      {"margin": margin})


def build_linear_dual_pyomo(X, y: np.ndarray, params: dict) -> pyo.ConcreteModel:
    X = features(X, params)
    n, d = X.shape
    m = new_pyomo_model(SQUARED_HINGE_LINEAR_DUAL, n, d)
    m.alpha = pyo.Var(m.I, bounds=(0.0, None))  # no upper bound: the squared hinge's dual
    m.w = pyo.Var(m.J)
    alpha = list(m.alpha.values())
    m.lift = matrix_rows(lifted_rows(y, X), [*alpha, *m.w.values()], lower=0.0, upper=0.0)  # w = X'(y alpha)
    if _free_bias(params):
        m.balance = matrix_rows(y[None, :], alpha, lower=0.0, upper=0.0)  # sum_i alpha_i y_i = 0: m.balance[0]
    m.obj = pyo.Objective(
        expr=linear_sum(1.0, alpha) - 0.5 * pyo.quicksum(m.w[j] ** 2 for j in m.J)
        - (0.25 / float(params["C"])) * pyo.quicksum(m.alpha[i] ** 2 for i in m.I),
        sense=pyo.maximize,
    )
    return m


def build_linear_dual_cvxpy(X, y: np.ndarray, params: dict) -> CvxpyModel:
    X = features(X, params)
    n, d = X.shape
    alpha = cp.Variable(n, name="alpha", bounds=[0.0, None])
    w = cp.Variable(d, name="w")
    lift = w == signed(y, X).T @ alpha  # w = sum_i alpha_i y_i x_i
    constraints = {"lift": lift}
    if _free_bias(params):
        constraints["balance"] = y @ alpha == 0
    objective = cp.sum(alpha) - 0.5 * cp.sum_squares(w) - (0.25 / float(params["C"])) * cp.sum_squares(alpha)
    problem = cp.Problem(cp.Maximize(objective), list(constraints.values()))
    return CvxpyModel(SQUARED_HINGE_LINEAR_DUAL, problem, {"alpha": alpha, "w": w}, constraints)


# --------------------------------------------------------------------------- optimality conditions


def dual_objective(X, y: np.ndarray, C: float, alpha: np.ndarray) -> float:
    """D(alpha) = sum alpha - 1/2 ||X'(y alpha)||^2 - 1/(4C) ||alpha||^2."""
    w = np.asarray(X.T @ (y * alpha), dtype=float).ravel()
    return float(alpha.sum()) - 0.5 * float(w @ w) - 0.25 / C * float(alpha @ alpha)


def feasible_alpha(alpha: np.ndarray, y: np.ndarray, free_bias: bool) -> np.ndarray:
    """alpha >= 0, and with a free b the class with the larger sum scaled down until sum alpha_i y_i = 0: a dual
    feasible point near the solver's, whose D bounds P* from below."""
    alpha = np.maximum(alpha, 0.0)
    if free_bias:
        plus, minus = float(alpha[y > 0].sum()), float(alpha[y < 0].sum())
        if plus > minus:
            alpha = np.where(y > 0, alpha * (minus / plus), alpha)
        elif minus > plus:
            alpha = np.where(y < 0, alpha * (plus / minus), alpha)
    return alpha


def best_bias(g: np.ndarray, y: np.ndarray) -> float:
    """The b that minimises sum_i max(0, 1 - y_i (g_i + b))^2 for fixed g = X w: where the points inside the
    margin, A, balance, b = mean_A (y_i - g_i) (sum_i alpha_i y_i = 0 with alpha_i = 2C xi_i). Its derivative
    2 sum_A (b - c_i), c_i = y_i - g_i, increases with b: bisection finds the piece, then the mean is exact."""
    c = y - g

    def inside(b: float) -> np.ndarray:
        return (y > 0) & (b < c) | (y < 0) & (b > c)

    lo, hi = float(c.min()) - 1.0, float(c.max()) + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.sum(mid - c[inside(mid)]) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 4 * EPS * max(abs(lo), abs(hi)):
            break
    mid = 0.5 * (lo + hi)
    A = inside(mid)
    return float(c[A].mean()) if A.any() else mid


@dataclass
class Optimum:
    ok: bool
    w: np.ndarray | None = None
    b: float = 0.0
    objective: float = math.nan
    rounds: int = 0
    reason: str = ""


def optimum(X, y: np.ndarray, C: float, free_bias: bool, inside: np.ndarray, max_rounds: int = 50) -> Optimum:
    """The optimum proved from an active set (the finite Newton method of Mangasarian and Keerthi-DeCoste).

    For A = `inside` the objective is 1/2 ||w||^2 + C sum_A (y_i - x_i'w - b)^2, minimised by one linear system
    (R/(2C) + Z'Z) theta = Z'y_A, Z = [X_A, 1], R = diag(1, .., 1, 0). The solution is the optimum when its own
    active set is A again (points within their f's rounding of the margin count either way: their terms and
    gradients are 0 to that rounding); else A moves to it and the system is solved again."""
    d = X.shape[1]
    if d > PROOF_MAX_D:
        return Optimum(False, reason=f"d = {d:,} > {PROOF_MAX_D:,}: no (d + 1) x (d + 1) system")
    ridge = np.full(d + free_bias, 0.5 / C)
    if free_bias:
        ridge[-1] = 0.0
    for rounds in range(1, max_rounds + 1):
        if not inside.any():
            return Optimum(False, rounds=rounds, reason="no point inside the margin")
        Z = X[inside]
        if free_bias:
            ones = np.ones((Z.shape[0], 1))
            Z = sp.hstack([Z, ones], format="csr") if sp.issparse(Z) else np.hstack([Z, ones])
        gram = Z.T @ Z
        gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
        try:
            theta = np.linalg.solve(gram + np.diag(ridge), np.asarray(Z.T @ y[inside], dtype=float).ravel())
        except np.linalg.LinAlgError:
            return Optimum(False, rounds=rounds, reason="singular system (one class inside the margin)")
        w, b = theta[:d], (float(theta[d]) if free_bias else 0.0)
        f = np.asarray(X @ w, dtype=float).ravel() + b
        rounding = 64 * EPS * (np.asarray(absolute(X) @ np.abs(w), dtype=float).ravel() + abs(b) + 1.0)
        slack = 1.0 - y * f
        now = slack > 0
        if np.all(now == inside | (np.abs(slack) <= rounding)):
            xi = np.maximum(0.0, slack)
            return Optimum(True, w, b, 0.5 * float(w @ w) + C * float(xi @ xi), rounds)
        inside = now
    return Optimum(False, rounds=max_rounds, reason=f"active set not settled in {max_rounds} rounds")


def conditions(values: dict, data: FamilyData, params: dict, kind: str) -> Conditions:
    """The point judged by the squared hinge's optimality conditions (module docstring): w, b from the primal's
    variables and alpha from its margin multipliers; from the dual, alpha, w = X'(y alpha) and the best b."""
    C, free = float(params["C"]), _free_bias(params)
    X, y = features(data.X, params), data.y
    alpha = np.asarray(values["alpha"], dtype=float)
    w_alpha = np.asarray(X.T @ (y * alpha), dtype=float).ravel()
    if kind == PRIMAL:
        w, b = values["w"], float(values["b"]) if free else 0.0
    else:
        w = w_alpha
        b = best_bias(np.asarray(X @ w, dtype=float).ravel(), y) if free else 0.0
    f = np.asarray(X @ w, dtype=float).ravel() + b
    xi = np.maximum(0.0, 1.0 - y * f)
    primal = 0.5 * float(w @ w) + C * float(xi @ xi)
    dual = dual_objective(X, y, C, alpha)
    size = max(top(alpha), _TINY)
    residuals = {"dual feasibility": max(0.0, -float(alpha.min())) / size,
                 "stationarity": stationarity(w, w_alpha, X, f),
                 "multipliers (alpha = 2C xi)": float(np.max(np.abs(alpha - 2.0 * C * xi))) / size}
    if free:
        residuals["balance"] = abs(float(y @ alpha)) / max(float(np.abs(alpha).sum()), _TINY)
        if "solver_balance" in values:  # the dual's multiplier of the balance row is b
            residuals["bias (balance multiplier)"] = abs(values["solver_balance"] - b) / max(top(f), _TINY)
    meaning = {"n_sv": int(np.sum(alpha > 0)), "n_inside_margin": int(np.sum(xi > 0)), "intercept": params["intercept"]}
    if params["intercept"] == "regularized":  # b is the constant feature's weight times intercept_scaling
        b, w = float(params["intercept_scaling"]) * float(w[-1]), w[:-1]
    return Conditions(primal, dual, max(primal, abs(dual)), residuals, f, y * alpha, b=float(b), w=w,
                      meaning=meaning, size=max(top(f), _TINY))


def reference(cond: Conditions, data: FamilyData, params: dict, kind: str) -> dict:
    """The point against the optimum proved from its active set (`optimum`), or the gap's bound where none is
    proved (formulations.family.liblinear), in solvers.family's terms: "reference", the errors, the proved alpha, b."""
    C, free = float(params["C"]), _free_bias(params)
    X, y = features(data.X, params), data.y
    w, f = cond.w, cond.decision
    if params["intercept"] == "regularized":  # w as solved: with the constant feature's weight b / intercept_scaling
        w = np.append(w, cond.b / float(params["intercept_scaling"]))
    xi = np.maximum(0.0, 1.0 - y * f)
    proof = optimum(X, y, C, free, inside=xi > 0)
    if not proof.ok:
        alpha = feasible_alpha(y * cond.coef, y, free)
        bound = gap_bound(cond.primal_objective, dual_objective(X, y, C, alpha), w, X, f)
        return {"reference": f"gap bound (no proved optimum: {proof.reason})", "w error (bound from the gap)": bound}
    f_opt = np.asarray(X @ proof.w, dtype=float).ravel() + proof.b
    own = cond.primal_objective if kind == PRIMAL else cond.dual_objective
    errors = point_errors(own, proof.objective, w, proof.w, X, f, f_opt)
    b = proof.b if free else (float(params["intercept_scaling"]) * float(proof.w[-1])
                              if params["intercept"] == "regularized" else 0.0)
    proved = {"alpha": 2.0 * C * np.maximum(0.0, 1.0 - y * f_opt), "b": b, "w": proof.w[: data.X.shape[1]],
              "decision": f_opt, "primal_objective": proof.objective, "rounds": proof.rounds}
    return {"reference": f"proved optimum ({proof.rounds} round{'s' * (proof.rounds > 1)})", **errors,
            "b error": abs(cond.b - b) / max(top(f_opt), _TINY), "proved": proved}
