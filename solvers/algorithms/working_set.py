r"""Working-set decomposition of the kernel dual (SVMlight's scheme around a general QP solver).

In minimisation form, with Q = Y K Y and the gradient g = Q alpha - 1,

    min  f(alpha) = 1/2 alpha' Q alpha - 1' alpha    s.t.  y' alpha = 0,  0 <= alpha_i <= C_i,

with C_i = C (the notes' one C) or each point's own bound (sample or class weights,
formulations.penalty; below, "alpha_i < C" reads C_i, and every function takes either).
alpha is optimal exactly when no pair of indices gives a feasible descent
direction (the KKT conditions of 001 Exercise 5.3 written with the bias as the
multiplier of y'alpha = 0):

    m(alpha) = max_{i in I_up} -y_i g_i  <=  M(alpha) = min_{i in I_low} -y_i g_i,
    I_up  = {i : y_i = +1, alpha_i < C} u {i : y_i = -1, alpha_i > 0},
    I_low = {i : y_i = +1, alpha_i > 0} u {i : y_i = -1, alpha_i < C}.

Each outer step picks a working set B (`select_block`: by default the second-order choice of
Fan, Chen and Lin 2005 for blocks; "first_order" is SVMlight's q/2 most violating from each
side), growing with the free points, and solves the kernel dual restricted to B with the
others fixed,

    min  1/2 a' Q_BB a + (g_B - Q_BB alpha_B)' a    s.t.  y_B' a = -y_N' alpha_N,  0 <= a <= C,

with one of the project's backends, through the solver alone ("direct"), cvxpy
or Pyomo, in s = a / t (t = alpha_scale: C, or the largest alpha where that is smaller), then made
exact on its active set (`_polish_block`). The
gradient is updated with the rows of K whose alpha changed (O(n q)); K is the Gram
matrix or rows computed on demand through a bounded cache (solvers.algorithms.kernel_rows), so
nothing n x n is needed. The loop stops when m - M <= tol (the maximal KKT violation)
and the relative duality gap, computed from the gradient in O(n), is <= gap_tol; then
the point is recovered and checked like any other. Points at a bound that cannot be part
of a violating pair are shrunk out of the selection and rechecked at the end.

Warm start (a C path, experiments.c_path): any feasible alpha0 (0 <= alpha0 <= C,
y'alpha0 = 0) may start the loop instead of alpha = 0; the gradient is then
g = Q alpha0 - 1, computed once from the rows of K where alpha0 != 0 (O(n |S|)
instead of g = -1). Along a path C_prev -> C_new, alpha_prev * C_new / C_prev is
feasible for C_new (the bounds and y'alpha = 0 scale with it) and keeps the
support vectors and which of them sit at the bound C (`scaled_warm_start`).

Split start (`split_start`, when no alpha0 is given and n >= split_from): predicted margins
y_i f(x_i) for every point come from the soft primal on Nystrom features of LANDMARKS random points
(`nystrom_margins`: f restricted to the landmarks' span, but every point's hinge in the objective),
minimised smoothed by L-BFGS (solvers.algorithms.primal_working_set.smoothed_start); the points within
band of the margin form one restricted dual, the others with margin <= 1 start at alpha_i = C (the
rest at alpha = 0: a feasible point), and the loop starts there. MEASURED on the benchmark's data
(Gaussian kernel, PIQP, q = 500, machine idle; loop steps and seconds without the checks), against the
former start from a sample's kernel dual (max(500, n / 10) points, its decision function out of
sample: margins off by 0.36 on average at n = 5,000, C = 1, and 519 points put at C that belong at 0,
against 82 here):
  n = 5,000, C = 1: 6 steps, 0.14 s (direct), 0.17 s (Pyomo), 0.23 s (cvxpy) against 12 steps,
  0.24 / 0.29 / 0.43 s; 30, 80 and 120 landmarks: 9, 7 and 6 steps, 0.16-0.18 s; bands 0.05, 0.2, 0.3:
  0.15, 0.15, 0.21 s. C = 10: 9-13 steps, 1.1-1.4 s against 16, 1.7 s. C = 100: 17 steps both, 4.5-5.2 s.
  n = 50,000, C = 1: 58 steps, 18-22 s against 100 steps, 28 s.

When a subproblem moves no point by more than bound_tol * alpha_scale (an interior point stops
about eps / z_i off a bound whose multiplier z_i is small, and the same step repeats),
exact two-point steps along y_i e_i - y_j e_j on the maximal violating pair (SMO,
`_smo_steps`) put such points on their bounds before the next working set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.linalg

from formulations import penalty, validation
from formulations.kernel_dual import dual_matrix, psd_constant
from formulations.model import (
    DUAL,
    KERNEL_DUAL,
    linear_sum,
    matrix_rows,
    pyomo_alpha_bounds,
)
from formulations.quadratic_form import QuadraticForm
from formulations.recovery import recover_bias
from solvers import blas, isolation
from solvers import solution as st
from solvers.adapters.base import status_warnings
from solvers.adapters.cvxpy_layer import solve_kwargs
from solvers.adapters.pyomo_qp import solve_standard_qp
from solvers.algorithms.direct import standard_qp
from solvers.algorithms.kernel_rows import FullGram, KernelRows, LinearRows
from solvers.algorithms import smo_dual
from solvers.algorithms.primal_working_set import smoothed_start
from solvers.backends import get_record
from solvers.checks import decision_size, gap_rounding
from solvers.closing import close, unanswered
from solvers.deadline import NEVER, Deadline
from solvers.profiles import get_profile, native_options
from solvers.reference import Gram, polish
from solvers.registry import get_backend, subproblem_stop


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
    polished: int = 0  # subproblems solved exactly on their active set (_polish_block)
    unshrinks: int = 0  # times the shrunk points came back for the final recheck
    min_active: int = 0  # fewest points left in the selection by shrinking
    rows_computed: int = 0  # kernel rows evaluated (a KernelRows source; 0 for a full Gram matrix)
    gap: float = math.nan  # relative duality gap where the loop stopped (relative_gap)
    timed_out: bool = False  # stopped at time_limit (its Deadline: solvers.deadline)
    stopped_in: str = ""  # where the time limit stopped it ("" between two steps)
    failure: str = ""  # why a subproblem stopped the loop ("" when none did)
    proved_at: int = 0  # the step at which the active-set proof finished the loop (_finished_by_proof; 0: none)


def check_alpha0(alpha0, y: np.ndarray, C, rtol: float = 1e-9) -> np.ndarray:
    """alpha0 as a feasible float array for the kernel dual at C (one number or one C_i per point), or a
    ValueError naming the problem.

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
    lo = float(alpha0.min(initial=0.0))
    if lo < -rtol * penalty.largest(C):
        raise ValueError(f"alpha0 is infeasible: min alpha0_i = {lo:.3g} < 0 (need 0 <= alpha0 <= C)")
    over = alpha0 - C * (1 + rtol)
    if over.size and over.max() > 0:
        i = int(np.argmax(over))
        raise ValueError(f"alpha0 is infeasible: alpha0[{i}] = {alpha0[i]:.6g} > C = {penalty.at(C, i):.6g} "
                         "(need 0 <= alpha0 <= C)")
    balance = float(y @ alpha0)
    if abs(balance) > rtol * float(np.abs(alpha0).sum()):
        raise ValueError(f"alpha0 is infeasible: y'alpha0 = {balance:.3g}, not 0 (the balance constraint)")
    return np.clip(alpha0, 0.0, C)


def scaled_warm_start(alpha_prev: np.ndarray, C_prev: float, C_new: float) -> np.ndarray:
    """alpha_prev * C_new / C_prev: feasible for C_new when alpha_prev is feasible for C_prev."""
    if not (C_prev > 0 and C_new > 0 and math.isfinite(C_prev) and math.isfinite(C_new)):
        raise ValueError(f"scaling a warm start needs finite C_prev, C_new > 0 (got {C_prev!r}, {C_new!r})")
    return np.clip(np.asarray(alpha_prev, dtype=float) * (C_new / C_prev), 0.0, C_new)


def as_rows(K) -> Gram:
    """K as a row source (solvers.algorithms.kernel_rows): a FullGram around an array, or the source itself."""
    return K if isinstance(K, (FullGram, KernelRows)) else FullGram(K)


def gradient(K, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """g = Q alpha - 1 with Q = Y K Y, from the rows of K where alpha != 0 (K symmetric)."""
    return y * as_rows(K).times(y * alpha) - 1.0


def kkt_violation(K, y: np.ndarray, alpha: np.ndarray, C, bound_tol: float = 1e-6) -> float:
    """m(alpha) - M(alpha) (module docstring) at a point, with its own gradient (O(n |S|))."""
    y = np.asarray(y, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    return _max_violation(alpha, gradient(K, y, alpha), y, C, bound_tol * alpha_scale(alpha, C))


def _violation(alpha, g, y, C, eps=0.0):
    minus_yg = -y * g
    up = ((y > 0) & (alpha < C - eps)) | ((y < 0) & (alpha > eps))
    low = ((y > 0) & (alpha > eps)) | ((y < 0) & (alpha < C - eps))
    return up, low, minus_yg


# Each subproblem solver takes the seconds its backend may run (time_limit: what remains of the solve's Deadline;
# None: no limit) and hands them to a backend that has a time limit of its own (BackendRecord.time_limit).


def _subproblem_direct(Q_BB, p, y_B, rhs, C, backend, options, time_limit=None):
    nb = len(p)
    qp = standard_qp(Q_BB, p, y_B[None, :], [rhs], None, None, np.zeros(nb), penalty.upper_bounds(C, nb), sense=1)
    start = time.perf_counter()
    record = get_record(backend)
    sol = solve_standard_qp(qp, record, record.with_time_limit(options, time_limit))
    return sol.x, time.perf_counter() - start


def _subproblem_cvxpy(Q_BB, p, y_B, rhs, C, backend, options, time_limit=None):
    # 0 <= a <= C are bounds, which PIQP and ProxQP take natively (as constraints a >= 0, a <= C the
    # solve of a block of 500 took 0.15 s against 0.04 s). The model is rebuilt per step; what was tried to
    # compile it faster or once: formulations.kernel_dual.psd_constant.
    import cvxpy as cp

    a = cp.Variable(len(p), bounds=[0.0, C])
    objective = 0.5 * cp.quad_form(a, cp.psd_wrap(psd_constant(Q_BB))) + p @ a
    problem = cp.Problem(cp.Minimize(objective), [y_B @ a == rhs])
    start = time.perf_counter()
    record = get_record(backend)
    try:  # a block's "Solution may be inaccurate" is not for the user: the loop polishes and checks its point
        with status_warnings(backend):
            problem.solve(solver=record.cvxpy_name, **solve_kwargs(record, dense=True, options=options,
                                                                   time_limit=time_limit))
    except cp.error.SolverError:  # as in the cvxpy adapter: a failed solve is no point, not a crash
        return None, time.perf_counter() - start
    return (None if a.value is None else np.asarray(a.value, dtype=float)), time.perf_counter() - start


def _subproblem_pyomo(Q_BB, p, y_B, rhs, C, backend, options, time_limit=None):
    import pyomo.environ as pyo

    nb = len(p)
    m = pyo.ConcreteModel()
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    m.I = pyo.RangeSet(0, nb - 1)
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(C))
    # One CSR row, as the kernel dual's own model (formulations.kernel_dual): the bridge reads its arrays;
    # as a Constraint expression it went through Pyomo's standard-form compiler, ~4 ms a block.
    m.balance = matrix_rows(y_B[None, :], m.alpha, lower=rhs, upper=rhs)
    # a' Q_BB a kept as the matrix (formulations.quadratic_form): the bridge reads it as an array.
    m.quad = QuadraticForm(Q_BB, m.alpha)
    m.obj = pyo.Objective(expr=linear_sum(p, m.alpha) + 0.5 * m.quad)
    start = time.perf_counter()
    get_backend("pyomo", backend).solve(m, options, time_limit)
    values = np.array([v.value for v in m.alpha.values()], dtype=float)  # index order, no lookup per index
    return (None if np.any(np.isnan(values)) else values), time.perf_counter() - start


def _smo_steps(src, y, alpha, g, C, eps, tol, max_steps, deadline: Deadline = NEVER):
    """Exact two-point steps (SMO, maximal violating pair) on alpha and g in place; returns their number.

    Along u = y_i e_i - y_j e_j (i the most violating in I_up, j in I_low; y'u = 0) f falls
    at the rate m - M; the step t = (m - M) / (K_ii + K_jj - 2 K_ij) is clipped at the first
    bound, which it then hits exactly, and g += t y * (K_i - K_j). Each step is complete: they stop
    at the deadline between two (up to 10 q of them, two kernel rows each).
    """
    diag = src.diagonal()
    for step in range(max_steps):
        if deadline.passed():
            return step
        up, low, minus_yg = _violation(alpha, g, y, C, eps)
        if not up.any() or not low.any():
            return step
        i = np.flatnonzero(up)[np.argmax(minus_yg[up])]
        j = np.flatnonzero(low)[np.argmin(minus_yg[low])]
        gap = minus_yg[i] - minus_yg[j]
        if gap <= tol:
            return step
        K_i, K_j = src.rows([i, j])
        t = gap / max(diag[i] + diag[j] - 2.0 * K_i[j], 1e-12)
        C_i, C_j = penalty.at(C, i), penalty.at(C, j)
        room_i = C_i - alpha[i] if y[i] > 0 else alpha[i]
        room_j = alpha[j] if y[j] > 0 else C_j - alpha[j]
        t = min(t, room_i, room_j)
        if t <= 0:
            return step
        alpha[i] = C_i if t == room_i and y[i] > 0 else (0.0 if t == room_i else alpha[i] + y[i] * t)
        alpha[j] = 0.0 if t == room_j and y[j] > 0 else (C_j if t == room_j else alpha[j] - y[j] * t)
        g += t * y * (K_i - K_j)
    return max_steps


def alpha_scale(alpha: np.ndarray, C) -> float:
    """What "near 0" in alpha is relative to: min(C, max_i alpha_i), or C where every alpha is 0 (per-sample
    C: its largest C_i).

    Not C alone: where no alpha reaches C (separable data at a large C) the alphas are far below it;
    breast cancer (rbf, standardized) at C = 1e6 has max alpha 94, and with every tolerance relative
    to C (the solver's, the polish's, SNAP's) the loop polished no block and ran into its iteration
    limit (231 s) at the default profile. C is still the upper bound's scale (a point at C is at C)."""
    top, C_top = (float(alpha.max()) if alpha.size else 0.0), penalty.largest(C)
    return min(C_top, top) if top > 0 else C_top


def _snap(alpha, y, C, bound_tol):
    """Put the points within bound_tol of a bound on it (relative to alpha_scale at 0, to C at C), and
    restore y'alpha = 0 on the free ones."""
    near_zero = alpha < bound_tol * alpha_scale(alpha, C)
    alpha = np.where(alpha > C * (1 - bound_tol), C, alpha)
    alpha[near_zero] = 0.0
    free = np.flatnonzero((alpha > 0) & (alpha < C))
    if free.size:
        residual = float(y @ alpha)
        alpha[free] = np.clip(alpha[free] - y[free] * residual / free.size, 0.0, penalty.at(C, free))
    return balance_classes(alpha, y)


def balance_classes(alpha: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y'alpha = 0 exactly (to rounding) by lowering the heavier class's largest alphas: stays in [0, C].

    A subproblem solver leaves the balance off by its absolute tolerance (~1e-9), which is
    large next to sum alpha at a small C (C = 1e-5: 2,000 points sum to 0.02); the split
    start's alpha0 was then refused as infeasible. The residual is taken from as few points
    as possible: scaling the whole class instead moved thousands of points a hair off C, each
    then a violating pair with no room to move (n = 1,000, C = 1e-5: 600 steps).
    """
    residual = float(y @ alpha)
    if residual == 0.0:
        return alpha
    heavy = np.flatnonzero(y > 0 if residual > 0 else y < 0)
    heavy = heavy[np.argsort(-alpha[heavy], kind="stable")]
    taken = np.minimum(alpha[heavy], np.maximum(abs(residual) - (np.cumsum(alpha[heavy]) - alpha[heavy]), 0.0))
    alpha[heavy] -= taken
    return alpha


def block_size(n: int) -> int:
    """q for n points, as the benchmark and the C path use it: 500 from n = 2,000 (at n = 5,000 from
    alpha = 0: 53 steps and 5.1 s against 203 steps and 6.9 s with q = 200; from the split start,
    through cvxpy, whose compile grows with q^2: q = 400, 500, 600 within 15%)."""
    return 500 if n >= 2000 else (200 if n > 400 else 50)


#: Relative distance to a bound under which alpha_i is put on it (the loop's default bound_tol).
SNAP = 1e-10


#: The polish's proximal term, relative to max|Q_BB|: each step minimises f(x + d) + delta/2 ||d||^2, so
#: its system Q_FF + delta I has a Cholesky factor even where Q_FF is singular (moons, n = 2,000, rbf
#: gamma = 0.5: K has numerical rank 114, and a 32-point Q_FF solved for alpha_F gave values of 7e5 at C = 1,000).
POLISH_PROX = 1e-9
#: The polish's tolerance on the multipliers' signs, relative to the gradient's scale (max|Q| alpha's size
#: + max|p|). When the loop gets the same block back (_Loop.repeated), at most a tenth of the loop's own
#: tolerance, unless the gradient's rounding (POLISH_ROUNDING times eps times max_i |Q_i| |x| + |p_i|) is
#: larger. Relative alone, it was 0.05 where the data are in other units (make_classification, 3,000 x 10,
#: class_sep 2, X x 1e3, linear kernel, C = 1: max|Q| 3.4e7): a block of 12 free points, two of them 4.5e-3
#: apart, was "stationary", and the loop repeated it to its iteration limit (3.4 s); now 4 steps, 0.04 s.
#: Not on every block: at X x 1e3 and C = 100 (C max|Q| ~ 3e9, where the whole QP is refused too) the tight
#: tolerance made the polish fail on blocks of 2,000 points after 20 factors, 4 s a step (190 s in all);
#: relative first, the loop stops at its stall in 2-3 s (the iteration limit in 8-18 s before either).
POLISH_TOL = 1e-9
POLISH_ROUNDING = 100
#: Most releases of a bound point (and new factors) before the polish gives up.
POLISH_CHANGES = 200
#: Most proximal steps between two points reaching a bound (each a pair of triangular solves).
POLISH_STEPS = 30
#: Most points put on a bound through one factor (a Schur complement of that size) before a new factor.
MAX_FIXED = 100


def _polish_block(Q, p, y_B, rhs, C, a, bound_tol=1e-7, alpha_size=None, target=math.inf, deadline: Deadline = NEVER):
    """The subproblem's exact solution from the active set of the solver's point a, or None.

    An interior-point solver stops ~1e-9 off the optimum; at C = 100 that is ~1e-7 in alpha and the
    outer loop's violation stalled at 2.8e-4 (C = 10) or hit its iteration limit (C = 100). As OSQP's
    polish, points within bound_tol of a bound are put on it (near 0: relative to alpha_size, alpha_scale's
    value, default C; near C: relative to C); then a primal active-set method
    (Nocedal and Wright 2006, 16.5) from that point: proximal steps on the free points (_steps_on_set)
    until they are stationary or one reaches a bound, which then joins the bound set; a bound point
    whose multiplier has the wrong sign is released, the most wrong first. Every step lowers f (the
    first may also mend the solver's balance residual), so no active set comes back: the method
    cannot cycle, which the primal-dual rounds it replaces did where Q_FF is singular: their free
    values, solved for from scratch, were noise along Q_FF's null space (moons at C = 1,000: 699 of
    735 blocks given up). The proximal steps move from the solver's point to a nearby exact optimum,
    which a singular Q does not disturb. A release that the next step undoes at once (no descent)
    is barred until f falls again. Kept only when every KKT sign holds, it is in [0, C] and its
    objective is no worse than the solver's (to rounding). C: one number, or the block's C_i.
    target: the outer loop's violation tolerance when the block came back (math.inf: the relative tolerance
    alone); the multipliers' signs are then held to a tenth of it, or to the gradient's rounding (POLISH_TOL).
    deadline: where it passes, the polish gives up (None: the block keeps the solver's point), before a new
    factor or a step (one polish took up to 2.4 s on blocks of 1,600 points: moons, n = 2,000, C = 1e6).
    """
    alpha_size = penalty.largest(C) if alpha_size is None else alpha_size
    x = np.clip(a, 0.0, C)
    x[x <= bound_tol * alpha_size] = 0.0
    x = np.where(x >= C * (1 - bound_tol), C, x)
    free = (x > 0.0) & (x < C)
    q_max = max(float(np.abs(Q).max()), np.finfo(float).tiny)
    tol = _polish_tol(Q, p, x, q_max * alpha_size + float(np.abs(p).max()), target)
    balance_tol = 1e-12 * alpha_size * len(a)
    barred = np.zeros(len(a), dtype=bool)
    released = -1
    for _ in range(POLISH_CHANGES):
        g = Q @ x + p  # afresh at each change: the steps' updates of g do not pile up rounding
        outcome, value, moved = _steps_on_set(Q, x, g, free, y_B, rhs, C, POLISH_PROX * q_max, tol, balance_tol,
                                              deadline)
        if moved:
            barred[:] = False
        if outcome == "stuck":
            return None
        if released >= 0 and not free[released] and not moved:
            barred[released] = True  # the steps put it straight back on its bound
        if outcome == "refactor":
            continue
        if value is None and abs(float(y_B @ x) - rhs) > balance_tol:
            return None  # no free point, and the bound ones do not balance
        reduced = g + (_bound_nu(g, x, y_B, C) if value is None else value) * y_B  # >= 0 at 0, <= 0 at C
        wrong = ~free & ~barred & (((x == 0.0) & (reduced < -tol)) | ((x == C) & (reduced > tol)))
        if not wrong.any():
            if barred.any():
                return None  # a wrong sign that no step can mend
            aQa = float(a @ Q @ a)
            objective, before = 0.5 * x @ Q @ x + p @ x, 0.5 * aQa + p @ a
            scale = 0.5 * abs(aQa) + abs(p) @ a + np.finfo(float).tiny
            return x if objective <= before + 1e-12 * scale else None
        released = int(np.argmax(np.where(wrong, np.abs(reduced), -np.inf)))
        free[released] = True
    return None


def _polish_tol(Q, p, x, scale, target):
    """How far from 0 the polish takes a multiplier's sign as right and a step as stationary, in the
    gradient's units (POLISH_TOL's comment)."""
    if math.isinf(target):  # a new block: the relative tolerance alone (no |Q| |x| product on every block)
        return POLISH_TOL * scale
    rounding = POLISH_ROUNDING * np.finfo(float).eps * float(np.max(np.abs(Q) @ np.abs(x) + np.abs(p)))
    return min(POLISH_TOL * scale, max(0.1 * target, rounding))


def _steps_on_set(Q, x, g, free, y_B, rhs, C, delta, tol, balance_tol, deadline: Deadline = NEVER):
    """Proximal steps on the free points, the bound ones fixed; x, g = Q x + p and free change in place.

    Each step d minimises 1/2 d'(Q_FF + delta I) d + g_F'd subject to y_F'd = 0 (F the free points),
    plus y_F r / |F| for the balance's residual r = rhs - y_B'x (the solver's, on the first step), and
    is cut at the first bound it meets; that point then stays on its bound (leaves `free`) and the
    steps go on. One factor serves them all (_ProjectedSteps): the points a step puts on a bound are
    constraints d_k = 0 through a small Schur complement, not a new factor (n = 5,000, C = 100: blocks of
    1,500 free points had up to five points reach a bound, each a 0.1 s factor). The balance's multiplier
    is nu = -y_F'g_F / |F|, the least-squares one. Returns (outcome, nu, moved): "stationary" when
    |g_F + nu y_F| <= tol to rounding and the balance holds (nu None: no free point left), "refactor"
    after MAX_FIXED points reached a bound, "stuck" when there is no factor, the steps did not settle or the
    deadline passed; moved says whether x changed.
    """
    F = np.flatnonzero(free)
    if F.size == 0:
        return "stationary", None, False
    if deadline.passed():
        return "stuck", None, False
    try:
        steps = _ProjectedSteps(Q[np.ix_(F, F)], y_B[F], delta)
    except np.linalg.LinAlgError:
        return "stuck", None, False
    Q_F = Q[:, F]
    C_F = penalty.upper_bounds(C, len(x))[F]
    moved, last, since_block = False, math.inf, 0
    while since_block < POLISH_STEPS:
        if deadline.passed():
            return "stuck", None, moved
        if len(steps.fixed) >= MAX_FIXED:
            return "refactor", None, moved
        on = free[F]
        if not on.any():
            return "stationary", None, moved
        residual = rhs - float(y_B @ x)
        y_on, g_on = y_B[F[on]], g[F[on]]
        nu = -float(y_on @ g_on) / y_on.size
        now = float(np.abs(g_on + nu * y_on).max())
        # stationary to rounding, not just to tol: the loop's violation falls to 1e-12 only through
        # blocks solved that far (stopped at tol, every block was polished and the loop stood still)
        if abs(residual) <= balance_tol and now <= tol and (now > 0.5 * last or now <= 1e-6 * tol):
            return "stationary", nu, moved
        last, since_block = now, since_block + 1
        # the step depends on g_F only through g_F + nu y_F on the free points (y_F'd = 0, d = 0 on the
        # fixed ones): passed as that, which falls to 0 at the optimum, its solve's rounding falls with it
        # (g_F itself gave steps of 1e-7 that never settled once points were fixed)
        d = np.where(on, steps.step(np.where(on, g[F] + nu * y_B[F], 0.0)), 0.0)
        # y_F'd = r exactly: the factor's rounding along the directions it scales by 1 / delta left
        # |y_F'd| ~ 1e-8, and with one free point the balance was never restored
        d[on] += y_on * (residual - float(y_on @ d[on])) / y_on.size
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(~on, np.inf, np.where(d < 0, -x[F] / d, np.where(d > 0, (C_F - x[F]) / d, np.inf)))
        k = int(np.argmin(room))
        t = min(1.0, float(room[k]))
        if t > 0:
            x[F] += t * d
            g += Q_F @ (t * d)
            moved = True
        if room[k] <= 1.0:
            x[F[k]] = 0.0 if d[k] < 0 else C_F[k]
            np.clip(x, 0.0, C, out=x)
            free[F[k]] = False
            steps.fix(k)
            last, since_block = math.inf, 0
    return "stuck", None, moved


class _ProjectedSteps:
    """The polish's steps on a set F through one Cholesky factor, with points of F fixed along the way.

    With P = I - y y' / |F| (y_i = +-1) and H = Q_FF + delta I, M = P H P + h y y' / |F| (h: H's mean
    diagonal) is positive definite, and M d = -P g gives the step with y'd = 0 (y' M = h y'). (The
    balance's multiplier from a Schur complement of H instead cancelled two values of size 1 / delta: on
    a rank-one Q its error was above tol and the steps never settled.) A fixed point k adds the
    constraint d_k = 0 with the column M^-1 P e_k: d = -M^-1 P (g + E mu) with E'd = 0.
    """

    def __init__(self, Q_FF, y, delta):
        self.y, self.size = y, y.size
        H = Q_FF + delta * np.eye(y.size)
        H_y = H @ y
        M = H - (np.outer(y, H_y) + np.outer(H_y, y)) / self.size
        M += ((y @ H_y) / self.size + np.trace(H) / self.size) / self.size * np.outer(y, y)
        self.factor = scipy.linalg.cho_factor(M, check_finite=False)
        self.fixed: list[int] = []
        self.columns = np.zeros((y.size, 0))  # M^-1 P e_k for the fixed k

    def _solve(self, v):
        return scipy.linalg.cho_solve(self.factor, v - self.y * (self.y @ v) / self.size, check_finite=False)

    def fix(self, k: int) -> None:
        self.fixed.append(k)
        unit = np.zeros(self.size)
        unit[k] = 1.0
        self.columns = np.column_stack([self.columns, self._solve(unit)])

    def step(self, g_F):
        d = -self._solve(g_F)
        if self.fixed:
            mu = np.linalg.solve(self.columns[self.fixed], -d[self.fixed])
            d += self.columns @ mu
            d[self.fixed] = 0.0
        return d


def _bound_nu(g, x, y_B, C):
    """The balance's multiplier with every point at a bound: the middle of the nu that keep the signs
    (g_i + nu y_i >= 0 at 0, <= 0 at C), which is the one breaking them least when there is none."""
    lower = np.concatenate([-g[(x == 0.0) & (y_B > 0)], g[(x == C) & (y_B < 0)]])
    upper = np.concatenate([g[(x == 0.0) & (y_B < 0)], -g[(x == C) & (y_B > 0)]])
    lo, hi = lower.max(initial=-np.inf), upper.min(initial=np.inf)
    if math.isfinite(lo) and math.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if math.isfinite(lo) else hi if math.isfinite(hi) else 0.0


def _solve_block(src, y, alpha, g_B, B, rhs, C, subsolve, backend, options, target=math.inf,
                 deadline: Deadline = NEVER):
    """The kernel dual over alpha_B with the others fixed (module docstring), polished on its active
    set (_polish_block), else clipped to [0, C] and snapped onto the bounds the interior-point solvers
    leave a hair inside; (alpha_B or None, seconds, polished or not).

    g_B: the gradient Q alpha - 1 on B; rhs: -y_N' alpha_N, the balance left to B; target: the loop's
    violation tolerance (_polish_block). deadline: the subproblem is given the time that remains; None where
    the deadline passed before it or during it (deadline.passed() tells that from a solver's failure).
    """
    if deadline.passed():
        return None, 0.0, False
    Q_BB = dual_matrix(src.submatrix(B, B), y[B])
    p = g_B - Q_BB @ alpha[B]
    # Solved in s = a / t in [0, C / t] with the objective divided by t^2 max|Q_BB|, t = alpha_scale
    # (C, or the largest alpha where that is smaller): the solvers' absolute tolerances (~1e-9) were
    # 1e-4 of alpha at C = 1e-5 (t = C), too far for _polish_block's active set, and at C = 1e6 with
    # alpha <= 94 (t = C) 1e-3 of alpha. (Dividing by the linear term's size instead left Q ~ C: DAQP
    # failed on it at C = 1e-3.)
    # With every alpha at 0 there is no size yet: the block's own, |p| / max|Q| (a one-point block's
    # optimum), is within a few orders of alpha's (at C = 1e11, t = C put alpha ~ 1 below PIQP's 1e-9,
    # the answer was all-zero); an s far above 1 is no harm to the solvers, one far below 1 is.
    q_max = max(float(np.abs(Q_BB).max()), np.finfo(float).tiny)
    C_B = penalty.at(C, B)
    t = alpha_scale(alpha, C) if alpha.any() else min(penalty.largest(C_B), float(np.abs(p).max()) / q_max)
    size = t * q_max
    s, elapsed = subsolve(Q_BB * (t / size), p / size, y[B], rhs / t, C_B / t, backend, options,
                          deadline.for_backend())
    # a point a backend left at its time limit is no solution of the subproblem (nor its balance held)
    if s is None or not np.all(np.isfinite(s)) or deadline.passed():
        return None, elapsed, False
    new = np.clip(s * t, 0.0, C_B)
    polished = _polish_block(Q_BB, p, y[B], rhs, C_B, new, alpha_size=t, target=target, deadline=deadline)
    if polished is not None:
        new = polished
    # A point left within SNAP * t of 0 or of C goes on the bound: with less room than that a violating
    # pair cannot move (the loop counts it as on the bound, bound_tol = SNAP), and the same
    # block came back 10,000 times at C = 1, n = 1,000 moving 1e-10.
    new[new < SNAP * t] = 0.0
    new = np.where(new > C_B * (1 - SNAP), C_B, new)
    return new, elapsed, polished is not None


#: Largest restricted dual the split start solves (a dense |W| x |W| QP: 2,000 -> 32 MB), and at most one
#: point in SPLIT_BLOCK_SHARE. At n = 50,000, C = 1 the band holds more than 2,000 points: 58 steps with
#: |W| = 2,000 against 109 with 1,000; where the margins are flat (C = 1e-5) the band holds nearly every
#: point, and on make_classification's 4,000 points |W| = 2,000 took 1.1 s against 0.24 s with 1,000.
MAX_SPLIT_BLOCK = 2000
SPLIT_BLOCK_SHARE = 4
#: The split start's landmarks (nystrom_margins) and the eigenvalues of K_SS it keeps (relative to the largest).
LANDMARKS = 50
NYSTROM_RCOND = 1e-10
#: The split's band reaches this many times further below the margin than above it. Confined to the
#: landmarks' span, the Nystrom model underfits: its margins hardly change from C = 1 to C = 100 (the points
#: within 0.1: 333, 357, 364 at C = 1, 10, 100), while the optimum's free points go from 397 to 1,647, the
#: extra ones below its margin. Measured on the benchmark's data over 5 landmark draws (direct, PIQP): C = 1
#: 0.155 / 0.153 / 0.166 s with 1, 2, 3; C = 100 4.9 / 4.5 / 4.2 s.
BAND_BELOW = 2.0


def split_start(K, y, C, subsolve, backend, options, *, landmarks: int = LANDMARKS, band: float = 0.1,
                seed: int = 0) -> tuple[np.ndarray | None, float, str]:
    """A feasible alpha near the optimum from Nystrom margins (module docstring).

    K: the Gram matrix or a row source (solvers.algorithms.kernel_rows). Returns (alpha or None when the
    restricted QP fails, time inside the subproblem call, a description).
    """
    alpha, sub_s, how, _ = _split_start(as_rows(K), y, C, subsolve, backend, options,
                                        landmarks=landmarks, band=band, seed=seed)
    return alpha, sub_s, how


def _split_start(src, y, C, subsolve, backend, options, *, landmarks, band, seed=0, deadline: Deadline = NEVER):
    """split_start, and K (y * alpha) at its point (None with no point): the loop's first gradient
    without another product with K (at n = 50,000 one costs as many kernel rows as alpha has nonzeros)."""
    margins = nystrom_margins(src, y, C, landmarks, seed)
    return _split_from_margins(src, y, C, margins, band, subsolve, backend, options,
                               f"Nystrom {min(len(y), landmarks)}", deadline)


def _split_from_margins(src, y, C, margins, band, subsolve, backend, options, source, deadline: Deadline = NEVER):
    """The split start's point from predicted margins y_i f(x_i) (`source` names where they came from): the
    points within band of 1 (below it, BAND_BELOW times band; at most MAX_SPLIT_BLOCK and n / SPLIT_BLOCK_SHARE,
    the nearest) form one restricted dual W, the others with margin <= 1 start at C, the rest at 0; (alpha or
    None, seconds, description, K (y * alpha)). Its restricted dual is a block like the loop's (_solve_block),
    given the time that remains of `deadline`."""
    n = len(y)
    # the band reaches BAND_BELOW times as far below the margin as above it (BAND_BELOW's comment)
    distance = np.where(margins < 1.0, (1.0 - margins) / BAND_BELOW, margins - 1.0)
    size = min(MAX_SPLIT_BLOCK, n // SPLIT_BLOCK_SHARE, int(np.count_nonzero(distance < band)))
    W = np.sort(np.argsort(distance, kind="stable")[:size])
    in_W = np.zeros(n, dtype=bool)
    in_W[W] = True
    L = np.flatnonzero((margins <= 1.0) & ~in_W)
    rhs = -penalty.weighted_sum(penalty.at(C, L), y[L])  # y_W' a = -y_L' alpha_L with alpha_L = C_L
    yW, C_W = y[W], penalty.at(C, W)
    if W.size < 2 or not (-penalty.weighted_sum(C_W, yW < 0) <= rhs <= penalty.weighted_sum(C_W, yW > 0)):
        return None, 0.0, f"split start: the restricted dual on {W.size} points is infeasible", None
    alpha = np.zeros(n)
    alpha[L] = penalty.at(C, L)
    Ku = src.times(y * alpha)  # from alpha_L = C alone
    a_W, elapsed, _ = _solve_block(src, y, alpha, yW * Ku[W] - 1.0, W, rhs, C, subsolve, backend, options,
                                   deadline=deadline)
    if a_W is None:
        why = "stopped at the time limit" if deadline.passed() else "returned no point"
        return None, elapsed, f"split start: the restricted QP {why}", None
    alpha[W] = a_W
    snapped = _snap(alpha, y, C, 1e-10)
    Ku = src.times(y * snapped)  # from the last product: W, and the few points the balance repair moved
    return snapped, elapsed, f"split: {source}, |W| {W.size}, |L| {L.size}", Ku


def nystrom_margins(src, y, C, landmarks: int, seed: int = 0) -> np.ndarray:
    """Predicted margins y_i f(x_i) for every point from the soft primal on Nystrom features
    (Williams and Seeger 2001): z(x) = Lambda^-1/2 U' k_S(x) for `landmarks` random points S with
    K_SS = U Lambda U', minimized smoothed (primal_working_set.smoothed_start: Huber's hinge, L-BFGS).

    f is the kernel SVM's with w restricted to the span of the landmarks, but every point's hinge in
    the objective; O(n |S|) kernel values and O(n |S|) a step."""
    n = len(y)
    S = np.sort(np.random.default_rng(seed).choice(n, min(n, landmarks), replace=False))
    K_nS = src.rows(S).T  # K symmetric: the landmarks' rows are the columns
    lam, U = scipy.linalg.eigh(K_nS[S])
    keep = lam > NYSTROM_RCOND * lam[-1]  # K_SS's numerical range (duplicates, a rank-d linear kernel)
    Z = K_nS @ (U[:, keep] / np.sqrt(lam[keep]))
    w, b = smoothed_start(Z, y, C)
    return y * (Z @ w + b)


SUBSOLVERS = {"direct": _subproblem_direct, "cvxpy": _subproblem_cvxpy, "pyomo": _subproblem_pyomo}
SELECTIONS = ("second_order", "first_order")
#: "smo": the compiled SMO with one block through the layer at the end (solvers.algorithms.smo_dual) where the row
#: source allows it; "blocks": this module's loop of blocks.
ENGINES = ("smo", "blocks")


def select_block(src, y, alpha, g, C, eps, q, candidates, selection="second_order") -> np.ndarray:
    """The working set: at most q points, half from each side of the violation, among `candidates`.

    first_order (SVMlight): the q/2 largest -y_i g_i in I_up and the q/2 smallest in I_low.
    second_order (Fan, Chen and Lin 2005, LIBSVM's WSS2, for blocks): i the most violating point
    of I_up and j of I_low as before; every other point t of I_low is scored by the decrease of f
    that a two-point step on (i, t) alone would give, b_it^2 / a_it with b_it = m + y_t g_t > 0 and
    a_it = K_ii + K_tt - 2 K_it, and symmetrically every t in I_up against j; the q/2 best of each
    side join i and j. Costs the two rows K_i, K_j (usually cached: they are kept in the block).
    """
    up, low, minus_yg = _violation(alpha, g, y, C, eps)
    up_idx = np.flatnonzero(up & candidates)
    low_idx = np.flatnonzero(low & candidates)
    half = max(1, q // 2)
    if selection == "first_order":
        top_up = up_idx[np.argsort(-minus_yg[up_idx], kind="stable")[:half]]
        top_low = low_idx[np.argsort(minus_yg[low_idx], kind="stable")[:half]]
        return np.union1d(top_up, top_low)
    i = up_idx[np.argmax(minus_yg[up_idx])]
    j = low_idx[np.argmin(minus_yg[low_idx])]
    m, M = minus_yg[i], minus_yg[j]
    K_i, K_j = src.rows([i, j])
    diag = src.diagonal()

    def best(idx, partner_diag, K_partner, gain_b):
        keep = gain_b > 0
        idx, gain_b = idx[keep], gain_b[keep]
        curvature = np.maximum(partner_diag + diag[idx] - 2.0 * K_partner[idx], 1e-12)
        return idx[np.argsort(-(gain_b ** 2) / curvature, kind="stable")[:half]]

    top_low = best(low_idx, diag[i], K_i, m - minus_yg[low_idx])
    top_up = best(up_idx, diag[j], K_j, minus_yg[up_idx] - M)
    return np.union1d(np.union1d(top_up, top_low), [i, j])


def _shrinkable(alpha, minus_yg, y, C, eps, m, M) -> np.ndarray:
    """Points at a bound that no violating pair can use while m and M hold (LIBSVM's be_shrunk):
    in I_up only with -y_i g_i < M, or in I_low only with -y_i g_i > m. Free points are never shrunk."""
    at_lower = alpha <= eps
    at_upper = alpha >= C - eps
    up_only = ((y > 0) & at_lower) | ((y < 0) & at_upper)
    low_only = ((y > 0) & at_upper) | ((y < 0) & at_lower)
    return (up_only & (minus_yg < M)) | (low_only & (minus_yg > m))


#: The loop's violation is never tightened below this (the gradient's own rounding).
MIN_TOL = 1e-12


def relative_gap(alpha: np.ndarray, g: np.ndarray, y: np.ndarray, C, max_diagonal: float = 0.0) -> float:
    """(P - D) / P at alpha from its gradient g = Q alpha - 1, in O(n) without K, less the gap's own
    rounding (solvers.checks.gap_rounding; max_diagonal: K's, 0 for none), as the checks measure it.

    With y_i (K u)_i = g_i + 1 (u = y alpha): u'Ku = alpha'(g + 1), the decision values without b
    are y (g + 1), b is the closing step's (formulations.recovery.recover_bias), and
    P - D = alpha'g + sum_i C_i max(0, -g_i - y_i b).
    """
    return _gap_and_decision(alpha, y * (g + 1.0), y, C, max_diagonal)[0]


def _gap_and_decision(alpha, Ku, y, C, max_diagonal):
    """relative_gap from K u (u = y alpha), and the decision values f = K u + b it was measured at
    (None where no b is recovered)."""
    b = recover_bias(alpha, y, Ku, C).b
    if not math.isfinite(b):
        return math.inf, None
    f = Ku + b
    hinge = penalty.weighted_sum(C, np.maximum(0.0, 1.0 - y * f))  # sum_i C_i xi_i
    yKu = y * Ku  # g + 1
    primal = 0.5 * float(alpha @ yKu) + hinge
    if not primal > 0:
        return math.inf, f
    rounding = gap_rounding(C, alpha, y, f, decision_size(max_diagonal, alpha, b))
    return max(0.0, abs(float(alpha @ yKu) - float(alpha.sum()) + hinge) - rounding) / primal, f


@dataclass(frozen=True)
class WorkingSetOptions:
    """How the working-set loop runs (decompose takes each one as a keyword too).

    q: the smallest block; it grows to `growth` times the free points, at most max_q and at most the rows
    a KernelRows cache holds (_block_step's comment).
    tol, gap_tol: the loop stops when m - M <= tol and (P - D) / P <= gap_tol (relative_gap); if the
    gap is not closed, tol falls tenfold. max_outer: the most steps.
    max_stall, stall_floor: below stall_floor's violation, max_stall steps without a 1% fall stop the
    loop (the subproblem solver's precision; with the polished subproblems it is seldom reached).
    bound_tol: alpha within bound_tol * alpha_scale of a bound counts as on it (polished subproblems and SMO
    steps put points exactly on their bounds).
    split_from, band, landmarks: the split start (`_split_start`) when n >= split_from (0: never).
    selection: "second_order" (select_block) or "first_order". shrinking: every shrink_every steps
    the points _shrinkable names leave the selection; when the violation on the others is below
    tol, all come back and the loop goes on unless it holds for all (the gradient is kept exact
    for every point, so the recheck costs nothing).
    """

    q: int = 200
    tol: float = 1e-6
    gap_tol: float = 1e-8
    max_outer: int = 10_000
    max_stall: int = 5
    stall_floor: float = 1e-3
    bound_tol: float = SNAP
    split_from: int = 2000
    band: float = 0.1
    landmarks: int = LANDMARKS
    selection: str = "second_order"
    shrinking: bool = True
    shrink_every: int = 10
    max_q: int = 2000
    growth: float = 2.0
    engine: str = "smo"

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"unknown working-set engine {self.engine!r}; choose one of {ENGINES}")
        if self.q < 2:
            raise ValueError(f"the working set needs q >= 2 points (got {self.q})")
        if self.selection not in SELECTIONS:
            raise ValueError(f"unknown working-set selection {self.selection!r}; choose one of {SELECTIONS}")


@dataclass
class _Loop:
    """The loop's state: its point, gradient and counters (the counters go into the WorkingSetResult)."""

    alpha: np.ndarray
    g: np.ndarray  # Q alpha - 1, kept exact for every point
    start: str  # how the loop started ("zero", "alpha0", the split start's account)
    it: int = 0
    sub_s: float = 0.0
    smo_steps: int = 0
    polished: int = 0
    unshrinks: int = 0
    min_active: int = 0
    gap: float = math.nan
    timed_out: bool = False
    previous: np.ndarray | None = None  # the last block
    repeated: bool = False  # the last block was the one before it again
    failure: str = ""  # a subproblem that returned no point (it ends the loop)
    tail_gap: float = math.inf  # the gap at the last try of _finished_by_proof
    proved_at: int = 0  # the step at which _finished_by_proof proved the optimum (0: none)
    deadline: Deadline = NEVER  # the solve's time limit (solvers.deadline), which every stage below looks at
    stopped_in: str = ""  # where the deadline stopped the loop ("" between two steps)
    layer: str = "direct"  # the subproblems' layer (what a stop in one says: registry.subproblem_stop)


def decompose(K, y, C, **kwargs) -> WorkingSetResult:
    """_decompose with BLAS on one thread: its dense work is small (q x q blocks, q rows), and on the
    shared 2-core machine OpenBLAS's two threads spun against other processes: a 501 x 501 solve took
    93 ms instead of 2 ms, the kernel dual at n = 5,000, C = 10 took 21.4 s instead of 3.9 s (LIBSVM,
    the peer, is single-threaded too).

    The loop's tuning is WorkingSetOptions' fields as keywords (q=..., tol=...); the rest are _decompose's."""
    tuning = {key: kwargs.pop(key) for key in list(kwargs) if key in WorkingSetOptions.__dataclass_fields__}
    settings = WorkingSetOptions(**tuning)
    with blas.one_thread():
        return _decompose(K, y, C, settings=settings, **kwargs)


def _start(src, y, C, layer, backend, opts, alpha0, settings: WorkingSetOptions, deadline: Deadline = NEVER) -> _Loop:
    """The starting point: alpha0 (checked), the split start from settings.split_from points, or alpha = 0.
    The loop keeps `deadline` (its stages stop at it)."""
    n = len(y)
    sub_s, how, Ku = 0.0, "zero" if alpha0 is None else "alpha0", None
    if alpha0 is None and settings.split_from and n >= settings.split_from:
        isolation.stage("the split start")
        alpha0, sub_s, how, Ku = _split_start(src, y, C, SUBSOLVERS[layer], backend, opts,
                                              landmarks=settings.landmarks, band=settings.band, deadline=deadline)
        if alpha0 is None:
            how += "; started at zero"
    if alpha0 is None:
        loop = _Loop(np.zeros(n), -np.ones(n), how)  # g = Q alpha - 1 at alpha = 0
    elif Ku is not None:  # the split start's point is feasible by construction
        loop = _Loop(alpha0, y * Ku - 1.0, how)
    else:
        alpha = check_alpha0(alpha0, y, C)
        loop = _Loop(alpha, gradient(src, y, alpha), how)  # once, O(n |S|); then updated by the changed rows
    loop.sub_s, loop.min_active, loop.deadline, loop.layer = sub_s, n, deadline, layer
    if deadline.passed() and how.startswith("split start"):  # its restricted QP was cut: the loop starts at zero
        loop.stopped_in = "in the split start"
    return loop


#: Where even the largest block cannot hold every free point, its steps zig-zag among them at O(q^3) each. When
#: the free points are weakly coupled (K near I on them: a kernel row's mass over the free points off its
#: diagonal is at most WEAK_COUPLING times the diagonal, the median of SAMPLED_ROWS rows), the base q does the
#: same at a fraction of the cost. MEASURED (blobs, n = 3,000, d = 10, C = 100, direct / PIQP): rbf gamma = 10,
#: every point free, 2.9 s (99 steps) against 16.2 s (29 steps); gamma = 1, 2,977 free, 4.3 s against 19.9 s;
#: X x 1e3 with gamma = 0.1, 2.6 s against 16.3 s. Strongly coupled free points keep the largest block: at
#: n = 50,000, C = 1 (1,525 free, a cache of 1,342 rows, gamma = 0.1) the base q without this test took 415
#: steps and 27 s against 49-58 steps and 14-17 s; with it, the same 49 steps as before.
WEAK_COUPLING = 1.0
SAMPLED_ROWS = 5


def _weakly_coupled(src, free: np.ndarray) -> bool:
    """Whether the free points' kernel rows are diagonally dominant over the free points (WEAK_COUPLING)."""
    F = np.flatnonzero(free)
    sample = F[np.linspace(0, F.size - 1, min(SAMPLED_ROWS, F.size)).astype(int)]
    rows = src.rows(sample)
    diagonal = rows[np.arange(sample.size), sample]
    off = np.abs(rows[:, F]).sum(axis=1) - np.abs(diagonal)
    return bool(np.median(off / np.maximum(np.abs(diagonal), np.finfo(float).tiny)) <= WEAK_COUPLING)


def _block_step(src, y, C, eps, loop: _Loop, active, subsolve, backend, opts, settings: WorkingSetOptions,
                target: float):
    """Select a block, solve it (to the loop's tolerance `target` when it is the last block again: POLISH_TOL),
    update alpha and the gradient: (moved, tiny_step, polished)."""
    alpha, g = loop.alpha, loop.g
    # The block grows with the free points (growth times them, up to max_q) and is filled with all of
    # them: when there are more free points than the block holds, blocks zig-zag among them (n = 5,000,
    # C = 100, 1,647 free at the optimum: with blocks of 1.2 times the free points, at most 1,200, and
    # filled from the last block only, 97 steps; filled from every free point, growth 2 and at most
    # 2,000, 22 steps and 6.6 s against 20.7 s, side by side, machine shared).
    free_now = (alpha > eps) & (alpha < C - eps)
    n_free = int(np.count_nonzero(free_now))
    # At most the rows the cache holds (KernelRows.capacity): a bigger block's rows were recomputed each
    # step, and at n = 50,000 2,000 rows are 800 MB.
    largest = min(max(settings.q, settings.max_q), src.capacity)
    q_now = int(min(max(settings.q, settings.growth * n_free), largest))
    if n_free > largest and _weakly_coupled(src, free_now):
        q_now = settings.q  # WEAK_COUPLING's comment
    B = select_block(src, y, alpha, g, C, eps, q_now, active, settings.selection)
    if len(B) < q_now:  # fill with free points, the last set's first: fewer zig-zags
        is_free = free_now & active
        is_free[B] = False
        free = np.flatnonzero(is_free)
        if loop.previous is not None:
            free = free[np.argsort(~np.isin(free, loop.previous), kind="stable")]
        B = np.union1d(B, free[: q_now - len(B)])
    rhs = float(y[B] @ alpha[B])  # = -y_N' alpha_N: the balance with the others fixed
    loop.repeated = loop.previous is not None and np.array_equal(B, loop.previous)
    left = loop.deadline.remaining()
    what = f"the subproblem of step {loop.it} ({len(B):,} points)"
    isolation.stage(f"{what} or its polish")
    new, elapsed, polished = _solve_block(src, y, alpha, g[B], B, rhs, C, subsolve, backend, opts,
                                          target if loop.repeated else math.inf, loop.deadline)
    loop.sub_s += elapsed
    loop.polished += polished
    if new is None and loop.deadline.passed():  # the block's point is not taken: the loop keeps the last one
        loop.timed_out = True
        loop.stopped_in = loop.stopped_in or (subproblem_stop(loop.layer, backend, what, left) if elapsed
                                              else f"before {what}")
        return False, False, polished
    if new is None:
        loop.failure = f"the subproblem solver returned no point for a block of {len(B)} points (step {loop.it})"
        return False, False, polished
    delta = new - alpha[B]
    changed = np.flatnonzero(np.abs(delta) > 0)
    if changed.size == 0:
        return False, False, polished
    Bc = B[changed]
    g += y * src.combination(Bc, y[Bc] * delta[changed])
    alpha[Bc] = new[changed]
    loop.previous = B
    return True, float(np.abs(delta).max()) <= eps, polished


#: The tail (_finished_by_proof): from TAIL_MIN_FREE free points on, and once the relative gap is within TAIL_GAP,
#: the optimum proved from the point's active set (solvers.reference.polish: primal-dual active-set rounds, each
#: one solve for the free points) ends the loop. MEASURED on the benchmark's kernel dual (n = 5,000, C = 100,
#: direct/PIQP; 16 steps, the last 5 on blocks of 1,650-1,850 points at 0.46-0.71 s each): from step 11 (gap
#: 0.19, 1,430 free) the proof holds after 6 rounds, 0.74 s; step 12 (gap 0.019) 4 rounds, 0.54 s; step 13, 3
#: rounds; from gap 0.89 (step 9) 12 rounds, 2.3 s. At C = 1 (about 400 free points, steps of 13-30 ms) the
#: rounds cost more than the steps they save: 3 rounds, 69 ms against 2 steps, 27 ms.
TAIL_GAP = 0.2
TAIL_MIN_FREE = 1000


def _finished_by_proof(src, y, C, eps, loop: _Loop, gap_tol: float) -> bool:
    """Whether the loop's point, where it is in the tail (TAIL_GAP, TAIL_MIN_FREE), gives way to the optimum
    proved from its active set (loop.alpha and loop.g are then that optimum's). Tried again only after the
    gap has fallen tenfold, and only where K's products are cheap: a Gram matrix in memory, the linear
    kernel's X, or a cache that holds every row (each round forms K u over the points at C)."""
    alpha, g = loop.alpha, loop.g
    if int(np.count_nonzero((alpha > eps) & (alpha < C - eps))) < TAIL_MIN_FREE:
        return False
    if not (isinstance(src, LinearRows) or src.capacity >= len(y)):  # a FullGram holds every row
        return False
    Ku = y * (g + 1.0)
    gap, f = _gap_and_decision(alpha, Ku, y, C, src.max_diagonal())
    if f is None or not gap_tol < gap <= min(TAIL_GAP, loop.tail_gap / 10):
        return False
    loop.tail_gap = gap
    # a singular system (duplicated points) gives up at once: its least squares cost more than the steps
    proved, Ku, settled = _proved(src, y, C, alpha, Ku, gap, f, gap_tol, least_squares=False, deadline=loop.deadline)
    if not settled:
        if loop.deadline.passed():  # the proof's rounds stopped at it: the loop stops before its next block
            loop.stopped_in = f"in the proof of step {loop.it} (the tail's)"
        return False
    alpha[:] = proved
    g[:] = y * Ku - 1.0
    loop.proved_at = loop.it
    return True


def _extremes(alpha, g, y, C, eps, active=None):
    """(m, M, -y g): m and M (module docstring) over the active points (None: every point), both 0 where one
    side has none."""
    up, low, minus_yg = _violation(alpha, g, y, C, eps=eps)
    if active is not None:
        up, low = up & active, low & active
    if not up.any() or not low.any():
        return 0.0, 0.0, minus_yg
    return float(minus_yg[up].max()), float(minus_yg[low].min()), minus_yg


def _max_violation(alpha, g, y, C, eps) -> float:
    """m - M (module docstring) over every point, 0 where one side is empty."""
    m, M, _ = _extremes(alpha, g, y, C, eps)
    return m - M


def _finish(src, y, C, loop: _Loop, violation, converged, stall_stop, settings: WorkingSetOptions) -> WorkingSetResult:
    """Snap the points a hair off their bounds onto them, settle (_settle), and the objective from the
    exact gradient."""
    alpha, g = loop.alpha, loop.g
    snapped = _snap(alpha, y, C, settings.bound_tol)
    Ku = y * (g + 1.0)  # y_i (K u)_i = g_i + 1: no product with K (rounding ~1e-14 of |g|)
    moved = np.flatnonzero(snapped != alpha)
    if moved.size:
        Ku += src.combination(moved, y[moved] * (snapped[moved] - alpha[moved]))
    alpha = snapped
    if violation <= settings.tol and not loop.timed_out:  # only a point the loop brought there: a failed
        # solver's alpha = 0 is no point to settle (the proof from it could find the optimum alone)
        alpha, Ku, settled = _settle(src, y, C, alpha, Ku, settings.gap_tol, loop.deadline)
        converged = converged or settled
        if not converged and loop.deadline.passed():  # the proof's rounds stopped at it
            loop.timed_out, loop.stopped_in = True, "in the proof of the optimum after the loop"
    objective = float(alpha.sum() - 0.5 * ((y * alpha) @ Ku))
    res = WorkingSetResult(alpha, objective, violation, loop.it, loop.sub_s, converged, stall_stop,
                           loop.smo_steps, Ku, loop.start)
    res.polished, res.unshrinks, res.min_active, res.gap = loop.polished, loop.unshrinks, loop.min_active, loop.gap
    res.timed_out, res.failure, res.proved_at = loop.timed_out, loop.failure, loop.proved_at
    res.rows_computed, res.stopped_in = src.rows_computed, loop.stopped_in
    return res


def _settle(src, y, C, alpha, Ku, gap_tol, deadline: Deadline = NEVER):
    """(alpha, K u, settled): the optimum proved from the point's active set (solvers.reference.polish,
    one solve for the free points) where the point's gap is above gap_tol and the proof's is within it.

    The blocks' polish is exact per block, but the gradient is updated over many steps and the snap
    restores the balance by moving the free alphas: at C = 1e6 (breast cancer, rbf) the free points
    ended 5.8e-11 off their margins, C times that on 41 of them put the gap at 2.8e-6 of P, and the
    point was refused at the `high` profile; the proof from its active set is 5.5e-14 off (gap 1.1e-9).
    At an ordinary C the loop's point is within gap_tol already and nothing is solved."""
    gap, f = _gap_and_decision(alpha, Ku, y, C, src.max_diagonal())
    if gap <= gap_tol or f is None:
        return alpha, Ku, False
    return _proved(src, y, C, alpha, Ku, gap, f, gap_tol, deadline=deadline)


def _proved(src, y, C, alpha, Ku, gap, f, gap_tol, least_squares: bool = True, deadline: Deadline = NEVER):
    """_settle's answer for a point whose gap and decision values f are known: the proof's optimum where its gap
    is smaller than `gap`, settled where that is within gap_tol (the proof's rounds stop at the deadline)."""
    ref = polish(src, y, C, alpha, f, least_squares=least_squares, deadline=deadline)
    if not ref.ok:
        return alpha, Ku, False
    settled_gap = _gap_and_decision(ref.alpha, ref.g, y, C, src.max_diagonal())[0]
    if settled_gap >= gap:
        return alpha, Ku, False
    return ref.alpha, ref.g, settled_gap <= gap_tol


def _loop_kit() -> smo_dual.LoopKit:
    """This module's pieces the SMO engine builds on, handed to it (smo_dual cannot import this module, which
    imports it)."""
    return smo_dual.LoopKit(loop=_Loop, check_alpha0=check_alpha0, subsolvers=SUBSOLVERS, solve_block=_solve_block,
                            finish=_finish, violation=_violation, alpha_scale=alpha_scale, relative_gap=relative_gap)


def _decompose(K, y: np.ndarray, C, *, settings: WorkingSetOptions, backend: str = "clarabel",
               layer: str = "direct", options: dict | None = None, time_limit: Deadline | float | None = None,
               profile: str = "high", alpha0: np.ndarray | None = None) -> WorkingSetResult:
    """Solve the kernel dual by working sets of at most settings.q points (WorkingSetOptions).

    K: the n x n Gram matrix, or a row source (solvers.algorithms.kernel_rows.KernelRows: rows on demand
    through a bounded cache, no n x n matrix).
    profile: the subproblem solver's options (solvers.profiles; `options` go on top).
    alpha0: a feasible starting point (warm start, module docstring); None starts at alpha = 0,
    or from `split_start` (settings.band, settings.landmarks) when n >= settings.split_from.
    time_limit: seconds from here, or a running solvers.deadline.Deadline (solvers.api's, from the call's
    start). Each subproblem is given what remains, and the split start, the polish, the SMO steps and the
    proofs stop at it (solvers.deadline): the loop then ends `timed_out`, `stopped_in` saying where.
    """
    if layer not in SUBSOLVERS:
        raise ValueError(f"unknown working-set layer {layer!r}; choose one of {tuple(SUBSOLVERS)}")
    if not penalty.is_finite_positive(C):
        raise ValueError(f"the working-set method needs a finite C > 0 (got {penalty.describe(C)})")
    src = as_rows(K)
    y = np.asarray(y, dtype=float)
    opts = native_options(backend, profile, options)
    subsolve = SUBSOLVERS[layer]
    deadline = Deadline.of(time_limit)
    if settings.engine == "smo" and smo_dual.applies(src):
        return smo_dual.decompose(src, y, C, settings=settings, layer=layer, backend=backend, opts=opts,
                                  deadline=deadline, alpha0=alpha0, kit=_loop_kit())
    loop = _start(src, y, C, layer, backend, opts, alpha0, settings, deadline)
    alpha, g = loop.alpha, loop.g  # updated in place by the steps
    tol_now = settings.tol
    active = np.ones(len(y), dtype=bool)
    violation, converged = math.inf, False
    best, stalled, stall_stop = math.inf, 0, False
    tiny_step = False  # the last subproblem moved no point by more than eps
    polished = False  # the last subproblem was solved exactly (_polish_block)
    smo_tried = False  # exact steps were taken at a stall: a second stall ends the loop
    for loop.it in range(1, settings.max_outer + 1):
        # A point within bound_tol of a bound counts as at the bound (the checks' own rule), relative
        # to alpha's size (alpha_scale: at C = 1e6 with every alpha <= 94, 1e-4 was "0").
        eps = settings.bound_tol * alpha_scale(alpha, C)
        m, M, minus_yg = _extremes(alpha, g, y, C, eps, active)
        violation = m - M
        if deadline.passed():  # first: nothing a step does (SMO steps, the tail's proof, a block) starts past it
            loop.timed_out = True
            break
        if violation <= tol_now:
            if not active.all():
                active[:] = True  # unshrink, and recheck every point with its exact gradient
                loop.unshrinks += 1
                continue
            loop.gap = relative_gap(alpha, g, y, C, src.max_diagonal())
            if loop.gap <= settings.gap_tol:
                converged = True
                break
            # m - M <= tol is not the optimum's objective to gap_tol when C sum xi is large (C = 1000:
            # a gap of 5.7e-3 at a violation of 1e-6): tighten until the gap is closed too.
            tol_now = violation / 10
            if tol_now < MIN_TOL:  # every pair holds to rounding and the gap stays open (an indefinite K does
                stall_stop = True  # this: a local point); a stop at the loop's precision, for the checks to judge
                break
        # A polished step solved its block exactly: the violation of a block method may rise for a
        # while (q = 20, C = 10: 200 steps between new lows) without any stall of the solver. The same
        # block again without a new low is a stall wherever the violation is (it was solved already).
        if violation < best * 0.99 or ((violation > settings.stall_floor or polished) and not loop.repeated):
            best, stalled = min(best, violation), 0
        else:
            stalled += 1
            if stalled >= settings.max_stall and smo_tried:
                stall_stop = True
                break
        if tiny_step or stalled >= settings.max_stall:
            # The last subproblem moved nothing, or the violation stopped falling: exact two-point
            # steps put the points a hair off their bounds on them; then go on.
            loop.smo_steps += _smo_steps(src, y, alpha, g, C, eps, settings.tol, 10 * settings.q, deadline)
            smo_tried = stalled >= settings.max_stall
            tiny_step, stalled = False, 0
            continue
        if settings.shrinking and loop.it % settings.shrink_every == 0:
            active &= ~_shrinkable(alpha, minus_yg, y, C, eps, m, M)
            loop.min_active = min(loop.min_active, int(active.sum()))
        if _finished_by_proof(src, y, C, eps, loop, settings.gap_tol):
            violation, converged = _max_violation(alpha, g, y, C, eps), True
            break
        moved, tiny_step, polished = _block_step(src, y, C, eps, loop, active, subsolve, backend, opts, settings,
                                                 tol_now)
        if not moved:
            break
    return _finish(src, y, C, loop, violation, converged, stall_stop, settings)


def solve(K, y, C, *, backend: str = "clarabel", layer: str = "direct", q: int = 200, tol: float = 1e-6,
          profile: str = "high", options: dict | None = None, time_limit: Deadline | float | None = None,
          validate: bool = True, alpha0: np.ndarray | None = None, stall_floor: float = 1e-3,
          split_from: int = 2000, selection: str = "second_order", shrinking: bool = True,
          linear_X: np.ndarray | None = None, engine: str = "smo") -> st.Solution:
    """The kernel dual by working sets, recovered and checked like solvers.api.solve's result.

    K: the Gram matrix or a row source (solvers.algorithms.kernel_rows); the checks use it as it is.
    C: one number, or one bound C_i per point (formulations.penalty).
    alpha0: a feasible warm start (decompose); the profile sets the subproblem solver's options.
    linear_X: the data of a linear kernel K = X X'; the result is then the linear dual's (w from alpha),
    closed once with X.
    time_limit: seconds, or a running solvers.deadline.Deadline (_decompose); the closing checks stop at it
    too (solvers.closing.close), so a point they could not finish verifying is a `time_limit` row. As in
    solvers.api.solve, a call with a limit runs in a process of the solve server killed shortly past it
    (solvers.isolation): a block's kernel rows or a subproblem's setup do not stop by themselves.
    """
    deadline = Deadline.of(time_limit)
    work = partial(_solve, K, y, C, backend=backend, layer=layer, q=q, tol=tol, profile=profile, options=options,
                   time_limit=deadline, validate=validate, alpha0=alpha0, stall_floor=stall_floor,
                   split_from=split_from, selection=selection, shrinking=shrinking, linear_X=linear_X,
                   engine=engine)
    return isolation.run_solve(deadline, work, partial(_unanswered, y, C, backend=backend, layer=layer,
                                                       profile=profile, deadline=deadline, linear_X=linear_X))


def _unanswered(y, C, ended, *, backend, layer, profile, deadline, linear_X) -> st.Solution:
    """solve's row when its process gave no answer (solvers.isolation.run_solve)."""
    y, labels = validation.check_labels(y)
    linear = linear_X is not None
    return unanswered(ended, formulation=DUAL if linear else KERNEL_DUAL, layer=layer, backend=backend,
                      X=linear_X if linear else np.zeros((len(y), 0)), y=y, C=validation.check_sample_C(C, len(y)),
                      profile=get_profile(profile), deadline=deadline,
                      extras={"labels": labels.as_dict(), "method": "working_set"})


def _solve(K, y, C, *, backend, layer, q, tol, profile, options, time_limit, validate, alpha0, stall_floor,
           split_from, selection, shrinking, linear_X, engine="smo") -> st.Solution:
    """solve, in this process."""
    y, labels = validation.check_labels(y)
    # validate=False: K comes from formulations.kernels already (the O(n^2) checks cost seconds at n = 5,000).
    if validate and not isinstance(K, (FullGram, KernelRows)):
        K = validation.check_gram(K, len(y))
    K = as_rows(K)
    C = validation.check_sample_C(C, len(y))
    prof = get_profile(profile)
    start = time.perf_counter()
    deadline = Deadline.of(time_limit)
    res = decompose(K, y, C, backend=backend, layer=layer, q=q, tol=tol, options=options, time_limit=deadline,
                    profile=prof.name, alpha0=alpha0, stall_floor=stall_floor, split_from=split_from,
                    selection=selection, shrinking=shrinking, engine=engine)
    total = time.perf_counter() - start
    # A stop at the subproblem solver's precision is a claim the project's checks then verify (a stall whose
    # final proof the time limit cut is a time limit: the checks would not have the time either).
    status = (st.OPTIMAL if res.converged else st.TIME_LIMIT if res.timed_out else st.OPTIMAL_INACCURATE
              if res.stalled else st.ERROR if res.failure else st.ITERATION_LIMIT)
    # the steps done: the one the limit stopped in (or before) is not
    done = f"{res.outer_iterations - 1} steps"
    linear = linear_X is not None
    sol = st.Solution(
        formulation=DUAL if linear else KERNEL_DUAL, layer=layer, backend=backend, status=status, solver_status=status,
        raw_status=f"working_set: violation {res.violation:.2e}, relative gap {res.gap:.2e} after "
                   f"{res.outer_iterations} steps",
        objective=res.objective, build_s=total - res.subproblem_s, solve_s=res.subproblem_s,
        iterations=res.outer_iterations, profile=prof.name,
        message=deadline.stopped_after(done, res.stopped_in) if res.timed_out else res.failure,
        extras={"labels": labels.as_dict(), **({} if linear else {"kernel_form": "working_set"}), "q": q, "kkt_violation": res.violation,
                "warm_start": alpha0 is not None, "smo_steps": res.smo_steps, "start": res.start,
                "polished_blocks": res.polished, "unshrinks": res.unshrinks, "min_active": res.min_active,
                "kernel_rows_computed": res.rows_computed, "selection": selection, "loop_gap": res.gap,
                "proved_at_step": res.proved_at,
                "row_source": type(K).__name__},
    )
    with blas.one_thread():  # as the loop (decompose): the proved optimum's free-point system is small
        if linear:
            return close(sol, {"alpha": res.alpha}, X=linear_X, y=y, C=C, profile=prof, deadline=deadline)
        return close(sol, {"alpha": res.alpha}, X=np.zeros((len(y), 0)), y=y, C=C, K=K, Ku=res.Ku, profile=prof,
                     deadline=deadline)
