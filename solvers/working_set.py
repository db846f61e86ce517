r"""Working-set decomposition of the kernel dual (SVMlight's scheme around a general QP solver).

In minimisation form, with Q = Y K Y and the gradient g = Q alpha - 1,

    min  f(alpha) = 1/2 alpha' Q alpha - 1' alpha    s.t.  y' alpha = 0,  0 <= alpha_i <= C.

alpha is optimal exactly when no pair of indices gives a feasible descent
direction (the KKT conditions of 001 Exercise 5.3 written with the bias as the
multiplier of y'alpha = 0):

    m(alpha) = max_{i in I_up} -y_i g_i  <=  M(alpha) = min_{i in I_low} -y_i g_i,
    I_up  = {i : y_i = +1, alpha_i < C} u {i : y_i = -1, alpha_i > 0},
    I_low = {i : y_i = +1, alpha_i > 0} u {i : y_i = -1, alpha_i < C}.

Each outer step picks a working set B of at most q indices, the q/2 most
violating from each side (SVMlight's steepest feasible direction), and solves
the kernel dual restricted to B with the others fixed,

    min  1/2 a' Q_BB a + (g_B - Q_BB alpha_B)' a    s.t.  y_B' a = -y_N' alpha_N,  0 <= a <= C,

with one of the project's backends, through the solver alone ("direct"), cvxpy
or Pyomo. The gradient is updated with the q columns of Q that changed
(O(n q)), so no n x n system is ever solved; the loop stops when
m - M <= tol (the maximal KKT violation), which is the optimum to the
tolerance's order, then the point is recovered and checked like any other.

Warm start (a C path, experiments.c_path): any feasible alpha0 (0 <= alpha0 <= C,
y'alpha0 = 0) may start the loop instead of alpha = 0; the gradient is then
g = Q alpha0 - 1, computed once from the rows of K where alpha0 != 0 (O(n |S|)
instead of g = -1). Along a path C_prev -> C_new, alpha_prev * C_new / C_prev is
feasible for C_new (the bounds and y'alpha = 0 scale with it) and keeps the
support vectors and which of them sit at the bound C (`scaled_warm_start`).

Split start (`split_start`, when no alpha0 is given and n >= 4 * sample): the kernel dual
on a random sample of `sample` points gives a decision function f for all points; the
points with margin y_i f(x_i) <= 1 - band start at alpha_i = C, those within band of 1
form one restricted dual (the others at alpha = 0: a feasible point), and the loop
starts there. Its objective is far from the optimum (too many points at C), but its
support is near the optimum's: at n = 5,000 (the benchmark's Gaussian kernel, q = 500)
the loop then takes 14 steps instead of 50, and 0.4 s in all with PIQP on the matrices
against 1.2 s from alpha = 0 (0.8 s against 2.4 s through cvxpy). Measured there: the
sample's C scaled by n / sample (the primal's empirical risk) put even more points at C
and took 19 steps; bands of 0.1 to 0.3 took 11 to 14.

When a subproblem moves no point by more than bound_tol * C (an interior point stops
about eps / z_i off a bound whose multiplier z_i is small, and the same step repeats),
exact two-point steps along y_i e_i - y_j e_j on the maximal violating pair (SMO,
`_smo_steps`) put such points on their bounds before the next working set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from formulations.kernel_dual import dual_matrix
from formulations.model import KERNEL_DUAL
from formulations.recovery import recover_bias
from solvers import solution as st

LAYERS = ("direct", "cvxpy", "pyomo")


@dataclass
class WorkingSetResult:
    alpha: np.ndarray
    objective: float  # D(alpha) = 1' alpha - 1/2 alpha' Q alpha (the dual's own sense)
    violation: float  # m - M at the end
    outer_iterations: int
    subproblem_s: float  # time inside the subproblem solver calls
    converged: bool
    stalled: bool = False  # stopped at the subproblem solver's precision (violation < 1e-3, not falling)
    smo_steps: int = 0  # exact two-point steps taken after subproblems that moved nothing
    Ku: np.ndarray | None = None  # K (y * alpha) at the returned alpha, for the recovery and the checks
    start: str = "zero"  # where the loop started: zero, alpha0, or the split start's sizes


def check_alpha0(alpha0, y: np.ndarray, C: float, rtol: float = 1e-9) -> np.ndarray:
    """alpha0 as a feasible float array for the kernel dual at C, or a ValueError naming the problem.

    Rounding (from scaling a previous point, say) is allowed up to rtol: a bound is violated by at
    most rtol * C and |y'alpha0| <= rtol * sum alpha0; the point is then clipped to [0, C]
    (the final snap restores y'alpha = 0 exactly on the free points).
    """
    try:
        alpha0 = np.asarray(alpha0, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"alpha0 must be an array of numbers: {exc}") from None
    if alpha0.shape != y.shape:
        raise ValueError(f"alpha0 has shape {alpha0.shape}, but there are {len(y)} points (shape {y.shape})")
    if not np.all(np.isfinite(alpha0)):
        raise ValueError(f"alpha0 has {int(np.sum(~np.isfinite(alpha0)))} non-finite entries (NaN or inf)")
    lo, hi = float(alpha0.min(initial=0.0)), float(alpha0.max(initial=0.0))
    if lo < -rtol * C:
        raise ValueError(f"alpha0 is infeasible: min alpha0_i = {lo:.3g} < 0 (need 0 <= alpha0 <= C)")
    if hi > C * (1 + rtol):
        raise ValueError(f"alpha0 is infeasible: max alpha0_i = {hi:.6g} > C = {C:.6g} (need 0 <= alpha0 <= C)")
    balance = float(y @ alpha0)
    if abs(balance) > rtol * float(np.abs(alpha0).sum()):
        raise ValueError(f"alpha0 is infeasible: y'alpha0 = {balance:.3g}, not 0 (the balance constraint)")
    return np.clip(alpha0, 0.0, C)


def scaled_warm_start(alpha_prev: np.ndarray, C_prev: float, C_new: float) -> np.ndarray:
    """alpha_prev * C_new / C_prev: feasible for C_new when alpha_prev is feasible for C_prev."""
    if not (C_prev > 0 and C_new > 0 and math.isfinite(C_prev) and math.isfinite(C_new)):
        raise ValueError(f"scaling a warm start needs finite C_prev, C_new > 0 (got {C_prev!r}, {C_new!r})")
    return np.clip(np.asarray(alpha_prev, dtype=float) * (C_new / C_prev), 0.0, C_new)


def gradient(K: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """g = Q alpha - 1 with Q = Y K Y, from the rows of K where alpha != 0 (K symmetric)."""
    S = np.flatnonzero(alpha)
    if S.size == 0:
        return -np.ones(len(y))
    if 2 * S.size > len(y):  # gathering most rows costs more than the full product
        return y * (K @ (y * alpha)) - 1.0
    return y * ((y[S] * alpha[S]) @ K[S]) - 1.0


def kkt_violation(K: np.ndarray, y: np.ndarray, alpha: np.ndarray, C: float, bound_tol: float = 1e-6) -> float:
    """m(alpha) - M(alpha) (module docstring) at a point, with its own gradient (O(n |S|))."""
    y = np.asarray(y, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    up, low, minus_yg = _violation(alpha, gradient(np.asarray(K, dtype=float), y, alpha), y, C, eps=bound_tol * C)
    if not up.any() or not low.any():
        return 0.0
    return float(minus_yg[up].max() - minus_yg[low].min())


def _violation(alpha, g, y, C, eps=0.0):
    minus_yg = -y * g
    up = ((y > 0) & (alpha < C - eps)) | ((y < 0) & (alpha > eps))
    low = ((y > 0) & (alpha > eps)) | ((y < 0) & (alpha < C - eps))
    return up, low, minus_yg


def _subproblem_direct(Q_BB, p, y_B, rhs, C, backend, options):
    from qpsolvers import Problem, solve_problem

    nb = len(p)
    problem = Problem(P=Q_BB, q=p, A=y_B[None, :], b=np.array([rhs]), lb=np.zeros(nb), ub=np.full(nb, C))
    start = time.perf_counter()
    sol = solve_problem(problem, solver=backend, **options)
    return sol.x, time.perf_counter() - start


def _subproblem_cvxpy(Q_BB, p, y_B, rhs, C, backend, options):
    # Rebuilt per step: a parametrized (DPP) version with Q_BB = G'G as a parameter was measured
    # 15x slower here (cvxpy's parameter tensor for a 200 x 200 matrix dominates). 0 <= a <= C are
    # bounds, which PIQP and ProxQP take natively.
    import cvxpy as cp

    from solvers.cvxpy_layer import CVXPY_SOLVERS, matrix_backend

    a = cp.Variable(len(p), bounds=[0.0, C])
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q_BB)) + p @ a), [y_B @ a == rhs])
    start = time.perf_counter()
    problem.solve(solver=CVXPY_SOLVERS[backend][0], **{**matrix_backend(backend, dense=True), **options})
    return (None if a.value is None else np.asarray(a.value, dtype=float)), time.perf_counter() - start


def _subproblem_pyomo(Q_BB, p, y_B, rhs, C, backend, options):
    import pyomo.environ as pyo

    from formulations.model import linear_sum
    from formulations.quadratic_form import QuadraticForm
    from solvers.registry import get_backend

    nb = len(p)
    m = pyo.ConcreteModel()
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    m.I = pyo.RangeSet(0, nb - 1)
    m.alpha = pyo.Var(m.I, bounds=(0.0, C))
    m.balance = pyo.Constraint(expr=linear_sum(y_B, m.alpha) == rhs)
    # a' Q_BB a kept as the matrix (formulations.quadratic_form): the bridge reads it as an array.
    m.quad = QuadraticForm(Q_BB, m.alpha)
    m.obj = pyo.Objective(expr=linear_sum(p, m.alpha) + 0.5 * m.quad)
    start = time.perf_counter()
    get_backend("pyomo", backend).solve(m, options, None)
    values = np.array([m.alpha[i].value for i in m.I], dtype=float)
    return (None if np.any(np.isnan(values)) else values), time.perf_counter() - start


def _smo_steps(K, y, alpha, g, C, eps, tol, max_steps):
    """Exact two-point steps (SMO, maximal violating pair) on alpha and g in place; returns their number.

    Along u = y_i e_i - y_j e_j (i the most violating in I_up, j in I_low; y'u = 0) f falls
    at the rate m - M; the step t = (m - M) / (K_ii + K_jj - 2 K_ij) is clipped at the first
    bound, which it then hits exactly, and g += t y * (K_i - K_j).
    """
    for step in range(max_steps):
        up, low, minus_yg = _violation(alpha, g, y, C, eps)
        if not up.any() or not low.any():
            return step
        i = np.flatnonzero(up)[np.argmax(minus_yg[up])]
        j = np.flatnonzero(low)[np.argmin(minus_yg[low])]
        gap = minus_yg[i] - minus_yg[j]
        if gap <= tol:
            return step
        t = gap / max(K[i, i] + K[j, j] - 2.0 * K[i, j], 1e-12)
        room_i = C - alpha[i] if y[i] > 0 else alpha[i]
        room_j = alpha[j] if y[j] > 0 else C - alpha[j]
        t = min(t, room_i, room_j)
        if t <= 0:
            return step
        alpha[i] = C if t == room_i and y[i] > 0 else (0.0 if t == room_i else alpha[i] + y[i] * t)
        alpha[j] = 0.0 if t == room_j and y[j] > 0 else (C if t == room_j else alpha[j] - y[j] * t)
        g += t * y * (K[i] - K[j])
    return max_steps


def _snap(alpha, y, C, bound_tol):
    """Put the points within bound_tol * C of a bound on it, and restore y'alpha = 0 on the free ones."""
    alpha = alpha.copy()
    alpha[alpha < bound_tol * C] = 0.0
    alpha[alpha > C * (1 - bound_tol)] = C
    free = np.flatnonzero((alpha > 0) & (alpha < C))
    if free.size:
        residual = float(y @ alpha)
        alpha[free] = np.clip(alpha[free] - y[free] * residual / free.size, 0.0, C)
    return balance_classes(alpha, y)


def balance_classes(alpha: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y'alpha = 0 exactly (to rounding) by scaling down the heavier class: stays in [0, C].

    A subproblem solver leaves the balance off by its absolute tolerance (~1e-9), which is
    large next to sum alpha at a small C (C = 1e-5: 2,000 points sum to 0.02); the split
    start's alpha0 was then refused as infeasible. The scale factor is 1 - O(that residual).
    """
    pos, neg = y > 0, y < 0
    sp, sn = float(alpha[pos].sum()), float(alpha[neg].sum())
    if sp > sn > 0:
        alpha[pos] *= sn / sp
    elif sn > sp > 0:
        alpha[neg] *= sp / sn
    return alpha


def block_size(n: int) -> int:
    """q for n points, as the benchmark and the C path use it: 500 from n = 2,000 (at n = 5,000 from
    alpha = 0: 53 steps and 5.1 s against 203 steps and 6.9 s with q = 200; from the split start,
    through cvxpy, whose compile grows with q^2: q = 400, 500, 600 within 15%)."""
    return 500 if n >= 2000 else (200 if n > 400 else 50)


def _solve_block(K, y, alpha, g_B, B, rhs, C, subsolve, backend, options):
    """The kernel dual over alpha_B with the others fixed (module docstring), clipped to [0, C] and
    snapped onto the bounds the interior-point solvers leave a hair inside; (alpha_B or None, seconds).

    g_B: the gradient Q alpha - 1 on B; rhs: -y_N' alpha_N, the balance left to B.
    """
    Q_BB = dual_matrix(K[np.ix_(B, B)], y[B])
    new, elapsed = subsolve(Q_BB, g_B - Q_BB @ alpha[B], y[B], rhs, C, backend, options)
    if new is None or not np.all(np.isfinite(new)):
        return None, elapsed
    new = np.clip(new, 0.0, C)
    new[new < 1e-10 * C] = 0.0
    new[new > C * (1 - 1e-10)] = C
    return new, elapsed


def split_start(K, y, C, subsolve, backend, options, *, sample: int = 500, band: float = 0.1,
                seed: int = 0) -> tuple[np.ndarray | None, float, str]:
    """A feasible alpha near the optimum from a sample's decision function (module docstring).

    Returns (alpha or None when a step fails, time inside the subproblem calls, a description).
    """
    n = len(y)
    S = np.sort(np.random.default_rng(seed).choice(n, min(n, sample), replace=False))
    yS = y[S]
    if np.all(yS == yS[0]):
        return None, 0.0, "split start: the sample has one class"
    alpha = np.zeros(n)  # the sample's QP with the others at 0, and C (not C n / sample)
    a_S, sub_s = _solve_block(K, y, alpha, -np.ones(len(S)), S, 0.0, C, subsolve, backend, options)
    if a_S is None:
        return None, sub_s, "split start: the sample's QP returned no point"
    Ku = (yS * a_S) @ K[S]  # sum_j alpha_j y_j K(x_j, x_i) for every point i
    b = recover_bias(a_S, yS, Ku[S], C).b
    if not math.isfinite(b):
        return None, sub_s, "split start: no bias from the sample"
    margins = y * (Ku + b)
    W = np.flatnonzero(np.abs(margins - 1.0) < band)
    L = np.flatnonzero(margins <= 1.0 - band)
    rhs = -C * float(y[L].sum())  # y_W' a = -y_L' alpha_L with alpha_L = C
    yW = y[W]
    if W.size < 2 or not (-C * np.sum(yW < 0) <= rhs <= C * np.sum(yW > 0)):
        return None, sub_s, f"split start: the restricted dual on {W.size} points is infeasible"
    alpha[L] = C
    g_W = yW * (K[W] @ (y * alpha)) - 1.0  # the gradient on W, from alpha_L = C alone
    a_W, elapsed = _solve_block(K, y, alpha, g_W, W, rhs, C, subsolve, backend, options)
    sub_s += elapsed
    if a_W is None:
        return None, sub_s, "split start: the restricted QP returned no point"
    alpha[W] = a_W
    return _snap(alpha, y, C, 1e-10), sub_s, f"split: sample {len(S)}, |W| {W.size}, |L| {L.size}"


SUBSOLVERS = {"direct": _subproblem_direct, "cvxpy": _subproblem_cvxpy, "pyomo": _subproblem_pyomo}


def decompose(K: np.ndarray, y: np.ndarray, C: float, *, backend: str = "clarabel", layer: str = "direct",
              q: int = 200, tol: float = 1e-6, max_outer: int = 10_000, max_stall: int = 5, bound_tol: float = 1e-6, options: dict | None = None,
              time_limit: float | None = None, profile: str = "high",
              alpha0: np.ndarray | None = None, stall_floor: float = 1e-3, sample: int = 500,
              band: float = 0.1) -> WorkingSetResult:
    """Solve the kernel dual by working sets of at most q points (K: the n x n Gram matrix).

    profile: the subproblem solver's options (solvers.profiles; `options` go on top).
    alpha0: a feasible starting point (warm start, module docstring); None starts at alpha = 0,
    or from `split_start` (sample, band) when n >= 4 * sample (sample=0: never).
    stall_floor: below this violation, max_stall steps without a 1% fall stop the loop (the
    subproblem solver's precision). Its floor grows with C (alpha ~ C): at n = 2,000, C = 31.6 the
    violation oscillated between 6e-4 and 1.2e-3 for 400 steps with the default 1e-3, so a C path
    passes 1e-3 * max(1, C) (experiments.c_path).
    """
    if layer not in LAYERS:
        raise ValueError(f"unknown working-set layer {layer!r}; choose one of {LAYERS}")
    if not (math.isfinite(C) and C > 0):
        raise ValueError(f"the working-set method needs a finite C > 0 (got {C!r})")
    if q < 2:
        raise ValueError(f"the working set needs q >= 2 points (got {q})")
    from solvers.profiles import backend_options

    K = np.asarray(K, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(y)
    opts = {**backend_options(backend, profile), **(options or {})}
    subsolve = SUBSOLVERS[layer]
    sub_s = 0.0
    start = time.perf_counter()
    how = "zero" if alpha0 is None else "alpha0"
    if alpha0 is None and sample and n >= 4 * sample:
        alpha0, sub_s, how = split_start(K, y, C, subsolve, backend, opts, sample=sample, band=band)
        if alpha0 is None:
            how += "; started at zero"
    if alpha0 is None:
        alpha = np.zeros(n)
        g = -np.ones(n)  # Q alpha - 1 at alpha = 0
    else:
        alpha = check_alpha0(alpha0, y, C)
        g = gradient(K, y, alpha)  # once, O(n |S|); then updated by the changed rows as below
    violation = math.inf
    converged = False
    it = 0
    previous: np.ndarray | None = None
    best, stalled, stall_stop = math.inf, 0, False
    tiny_step = False  # the last subproblem moved no point by more than bound_tol * C
    smo_tried = False  # exact steps were taken at a stall: a second stall ends the loop
    smo_steps = 0
    for it in range(1, max_outer + 1):
        # A point within bound_tol * C of a bound counts as at the bound: the interior-point
        # subproblem solvers leave such points a hair inside, and SMO-exact bounds are not needed
        # for the optimum (its objective changes by at most bound_tol * C * |g_i| per point).
        up, low, minus_yg = _violation(alpha, g, y, C, eps=bound_tol * C)
        if not up.any() or not low.any():
            violation, converged = 0.0, True
            break
        violation = float(minus_yg[up].max() - minus_yg[low].min())
        if violation <= tol:
            converged = True
            break
        # The subproblems are solved to about 1e-9: below that the violation stops falling.
        if violation < best * 0.99 or violation > stall_floor:
            best, stalled = min(best, violation), 0
        else:
            stalled += 1
            if stalled >= max_stall and smo_tried:
                stall_stop = True
                break
        if tiny_step or stalled >= max_stall:
            # The last subproblem moved nothing (interior points stop eps / z_i off a bound: 3e-7
            # at C = 0.3 left a violation of 3.3e-3 that repeated to max_outer warm-started at
            # n = 200), or the violation stopped falling (1.8e-4 for 10 steps at n = 10,000 from
            # the split start). Exact two-point steps put such points on their bounds; then go on.
            smo_steps += _smo_steps(K, y, alpha, g, C, bound_tol * C, tol, 10 * q)
            smo_tried = stalled >= max_stall
            tiny_step, stalled = False, 0
            continue
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        half = max(1, q // 2)
        up_idx = np.flatnonzero(up)
        low_idx = np.flatnonzero(low)
        top_up = up_idx[np.argsort(-minus_yg[up_idx], kind="stable")[:half]]
        top_low = low_idx[np.argsort(minus_yg[low_idx], kind="stable")[:half]]
        B = np.union1d(top_up, top_low)
        if previous is not None and len(B) < q:  # fill with free points of the last set: fewer zig-zags
            free = previous[(alpha[previous] > bound_tol * C) & (alpha[previous] < C * (1 - bound_tol))]
            B = np.union1d(B, free[: q - len(B)])
        rhs = float(y[B] @ alpha[B])  # = -y_N' alpha_N: the balance with the others fixed
        new, elapsed = _solve_block(K, y, alpha, g[B], B, rhs, C, subsolve, backend, opts)
        sub_s += elapsed
        if new is None:
            break
        delta = new - alpha[B]
        changed = np.flatnonzero(np.abs(delta) > 0)
        if changed.size == 0:
            break
        tiny_step = float(np.abs(delta).max()) <= bound_tol * C
        Bc = B[changed]
        # K is symmetric: gather the changed rows (contiguous in memory), not columns.
        g += y * ((y[Bc] * delta[changed]) @ K[Bc])
        alpha[Bc] = new[changed]
        previous = B
    alpha = _snap(alpha, y, C, bound_tol)
    Ku = K @ (y * alpha)
    objective = float(alpha.sum() - 0.5 * ((y * alpha) @ Ku))
    return WorkingSetResult(alpha, objective, violation, it, sub_s, converged, stall_stop, smo_steps, Ku, how)


def solve(K, y, C: float, *, backend: str = "clarabel", layer: str = "direct", q: int = 200, tol: float = 1e-6,
          profile: str = "high", options: dict | None = None, time_limit: float | None = None,
          validate: bool = True, alpha0: np.ndarray | None = None, stall_floor: float = 1e-3,
          sample: int = 500) -> st.Solution:
    """The kernel dual by working sets, recovered and checked like solvers.api.solve's result.

    alpha0: a feasible warm start (decompose); the profile sets the subproblem solver's options.
    """
    from formulations import validation
    from solvers.closing import close
    from solvers.profiles import get_profile

    y, labels = validation.check_labels(y)
    # validate=False: K comes from formulations.kernels already (the O(n^2) checks cost seconds at n = 5,000).
    K = validation.check_gram(K, len(y)) if validate else np.asarray(K, dtype=float)
    C = validation.check_C(C)
    prof = get_profile(profile)
    start = time.perf_counter()
    res = decompose(K, y, C, backend=backend, layer=layer, q=q, tol=tol, options=options, time_limit=time_limit,
                    profile=prof.name, alpha0=alpha0, stall_floor=stall_floor, sample=sample)
    total = time.perf_counter() - start
    # A stop at the subproblem solver's precision is a claim the project's checks then verify.
    status = st.OPTIMAL if res.converged else (st.OPTIMAL_INACCURATE if res.stalled else st.ITERATION_LIMIT)
    sol = st.Solution(
        formulation=KERNEL_DUAL, layer=layer, backend=backend, status=status, solver_status=status,
        raw_status=f"working_set: violation {res.violation:.2e} after {res.outer_iterations} steps",
        objective=res.objective, build_s=total - res.subproblem_s, solve_s=res.subproblem_s,
        iterations=res.outer_iterations, profile=prof.name,
        extras={"labels": labels.as_dict(), "kernel_form": "working_set", "q": q, "kkt_violation": res.violation,
                "warm_start": alpha0 is not None, "smo_steps": res.smo_steps, "start": res.start},
    )
    return close(sol, {"alpha": res.alpha}, X=np.zeros((len(y), 0)), y=y, C=C, K=K, Ku=res.Ku, profile=prof)
