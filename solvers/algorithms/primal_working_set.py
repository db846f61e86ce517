r"""Working-set method for the soft-margin primal: small QPs instead of one with n rows.

The primal (formulations.soft_primal) in its hinge form,

    P(w, b) = 1/2 ||w||^2 + C sum_i max(0, 1 - m_i),    m_i = y_i (w' x_i + b),

splits the points by their margin m_i at the optimum: outside (m_i > 1, alpha_i = 0),
inside (m_i < 1, alpha_i = C, hinge 1 - m_i, linear in (w, b)) and on it (m_i = 1,
0 <= alpha_i <= C). Only the last group needs a row: at n = 1e5 (the benchmark's
blobs) 574 points lie within 0.01 of the margin and 38,222 inside it. Given a split
(W near the margin, L inside, the rest outside), the soft primal restricted to W
with the hinges of L summed into one linear term (``inside=``) is a QP of |W| rows.
Its solution is the full optimum exactly when the split is consistent with it: no
point of L ends with m_i > 1 and no outside point with m_i < 1 (the KKT conditions of
the full problem then hold with alpha_L = C, alpha_outside = 0, alpha_W from the
restricted QP).

The loop:

1. (w, b) from the soft primal with its hinge smoothed (`smoothed_start`: Huber's hinge, minimized
   by L-BFGS, O(n d) a step and no QP; Chapelle, "Training a support vector machine in the
   primal", Neural Computation 19(5), 2007), or, when a sample size is asked for, from the soft
   primal on a random sample of `sample` points with C n / sample (the same empirical risk at the
   sample's scale). Below SMOOTHED_MIN_N points the first QP is the whole problem, and the loop stops there;
2. W = {i : |m_i - 1| < delta}, L = {m_i < 1} outside W; solve the restricted QP with
   the chosen layer and backend;
3. if the split is consistent, stop: (w, b) is optimal. Otherwise move to the QP's
   point along the segment from the current one by an exact line search on P (a
   convex, piecewise quadratic function of the step; the restricted QP's objective
   agrees with P only near the current point), set delta to twice the 99.9% quantile
   of the margins' change in that step (kept within [min_delta, delta]), add the
   points whose side was wrong to W, and repeat.
4. at the consistent split, replace the point by the optimum proved from its active set
   (solvers.reference.polish, the checks' own proof: the crossover of an interior-point method),
   or, where the QP left the set ambiguous, from that of one more QP over the points within
   SETTLE_BAND of their margin solved to SETTLE_TOL (`_settle`). The checks still judge the result.

Where a restricted QP has fewer points than features (wide data: d >= n, whose first QP is every point), its
layer gets the points' coordinates in an orthonormal basis of their span (`in_span`): the same soft primal, on
|rows| + 1 features instead of d.

The smoothed start leaves one restricted QP of a few thousand rows at n = 1e5, where a sample's QP
leaves several times more; the figures behind this module's constants are in docs/benchmarks.md.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.linalg
from scipy.optimize import minimize, minimize_scalar

from formulations import penalty, soft_primal, validation
from formulations.data_matrix import as_data
from formulations.model import SOFT_PRIMAL
from formulations.recovery import primal_objective
from solvers import blas, isolation
from solvers.solution import ERROR, ITERATION_LIMIT, OPTIMAL, Solution, TIME_LIMIT
from solvers.algorithms import direct
from solvers.closing import close, read_cvxpy, read_pyomo, unanswered
from solvers.deadline import NEVER, Deadline
from solvers.profiles import get_profile, native_options, tolerance_options
from solvers.reference import Gram, polish
from solvers.registry import get_backend, subproblem_stop


#: The points of a random sample whose QP starts the loop when decompose is asked for a sample start.
SAMPLE = 10_000
#: The last restricted QP (`_settle`) holds the rows of the points this close to their margin
#: (margin units; a few dozen points at n = 1e5) ...
SETTLE_BAND = 1e-3
#: ... and asks its backend for this tolerance: the large QP's point at 1e-8 can leave a point just off its
#: margin with a small alpha (both sides of complementarity small), one free point too many for the proof of
#: the optimum (solvers.reference.polish); the small band QP settles it cheaply.
SETTLE_TOL = 1e-12


#: From this many points the loop starts from the smoothed primal (smoothed_start), faster than the whole QP
#: from there on; below, its first QP holds every point: the whole problem, solved once (the coursework's sizes).
SMOOTHED_MIN_N = 1_000
#: ... but only where d <= MAX_D_OVER_N n: with d near n most points lie near their margin and the loop takes
#: many restricted QPs of nearly every row, slower than the whole QP from d / n = 0.4 on.
MAX_D_OVER_N = 0.1
#: The smoothed start (`smoothed_start`): the hinge max(0, t) of t = 1 - m_i replaced by Huber's, t^2 / (2 h)
#: for 0 < t < h and t - h / 2 from h on, with h = SMOOTHING (margin units, so the same at any scale of X or
#: C); L-BFGS from (w, b) = 0 stops when the objective changes by less than SMOOTH_FTOL (relative) in a step,
#: or after SMOOTH_MAX_ITER steps. Its margins split the points and the loop's first band is SMOOTHED_BAND
#: around them: wide enough to hold the optimum's free points on the data tried (docs/benchmarks.md).
#: A point the band misses costs one more restricted QP, never the optimum (the loop adds it).
SMOOTHING = 1e-2
SMOOTH_FTOL = 1e-8
SMOOTH_MAX_ITER = 500
SMOOTHED_BAND = 0.05
#: How decompose starts: a sample's QP, or the smoothed start.
STARTS = ("sample", "smoothed")


def smoothed_primal(v, X, y, C, h):
    """The soft primal with Huber's hinge of width h (SMOOTHING's comment) at v = (w, b): value and gradient
    (C: one number, or one C_i per point: the weighted hinge)."""
    w, b = v[:-1], v[-1]
    short = 1.0 - y * (X @ w + b)  # how far each point falls short of its margin
    slope = np.clip(short / h, 0.0, 1.0)  # the smoothed hinge's derivative
    hinge = np.where(short >= h, short - 0.5 * h, np.where(short > 0.0, short * short / (2.0 * h), 0.0))
    pull = C * slope * y
    return 0.5 * w @ w + penalty.weighted_sum(C, hinge), np.concatenate([w - X.T @ pull, [-pull.sum()]])


def smoothed_start(X, y, C, deadline: Deadline = NEVER) -> tuple[np.ndarray, float]:
    """(w, b) near the soft primal's optimum: the smoothed primal's minimizer by L-BFGS from 0 (SMOOTHING).

    BLAS on one thread: L-BFGS-B's own small vector operations otherwise go through a second thread that
    spins against other processes, several times slower. deadline: L-BFGS stops at it after its current
    step (the point so far is returned)."""

    def on_time(_):
        if deadline.passed():
            raise StopIteration  # scipy ends the minimization there, with the last iterate

    with blas.one_thread():
        found = minimize(smoothed_primal, np.zeros(X.shape[1] + 1), args=(X, y, C, SMOOTHING), jac=True,
                         method="L-BFGS-B", options={"maxiter": SMOOTH_MAX_ITER, "ftol": SMOOTH_FTOL, "gtol": 0.0},
                         callback=on_time)
    return found.x[:-1], float(found.x[-1])


def pays(n: int, d: int | None) -> bool:
    """Whether the restricted QPs beat the whole QP on n points of d features (solvers.api's method "auto")."""
    return n >= SMOOTHED_MIN_N and (d is None or d <= MAX_D_OVER_N * n)


def on_the_margin(n: int, d: int | None) -> bool:
    """Whether every one of n points can lie on its margin (d >= n features): then many do, the optimum is
    degenerate, and a solver's whole QP comes back accurate to about the square root of its tolerance in w
    (PIQP and Clarabel 3e-4 to 2e-3 of the decision values at n = 300, d = 3,000): solvers.api's method "auto"
    takes the working set there, whose first QP is then the whole problem (start_settings) and whose proof from
    the active set makes it exact."""
    return d is not None and d >= n


def start_settings(n: int, d: int | None = None) -> dict:
    """How the loop starts on n points of d features (decompose's keywords): below SMOOTHED_MIN_N points, or where
    every point can lie on its margin (`on_the_margin`), one QP of them all, the whole problem; else the smoothed
    start and the band SMOOTHED_BAND."""
    if n >= SMOOTHED_MIN_N and not on_the_margin(n, d):
        return {"start": "smoothed", "delta": SMOOTHED_BAND}
    return {"sample": n}


@dataclass
class PrimalWorkingSetResult:
    w: np.ndarray
    b: float
    alpha: np.ndarray | None  # alpha_W from the last restricted QP, C on L, 0 outside (None without one)
    objective: float  # P(w, b) on all points
    outer_iterations: int  # restricted QPs solved after the sample's
    working_set: int  # |W| of the last restricted QP
    wrong_side: int  # points whose side the last restricted QP got wrong (0: consistent, optimal)
    subproblem_s: float  # time inside the layer's calls (build, solve, read-back)
    converged: bool
    message: str = ""
    timed_out: bool = False  # stopped at time_limit (its Deadline; where: in `message`)
    failed: bool = False  # stopped because a QP returned no point (its status and message in `message`)


def _why(status: str, message: str) -> str:
    """A subproblem's failure as the row says it: the status, and the solver's message when it gave one
    (DAQP at C = 1e12 gave none: the row read "(error: )")."""
    return f"{status}: {message}" if message else f"{status}, no message from the solver"


def _subproblem_direct(X, y, C, inside, backend, options, time_limit):
    asm = direct.assemble(SOFT_PRIMAL, X, y, C, inside=inside)
    res = direct.solve_assembled(asm, backend, options, time_limit)
    return direct.named_values(asm, res), res.status, res.message


def _subproblem_cvxpy(X, y, C, inside, backend, options, time_limit):
    model = soft_primal.build_cvxpy(X, y, C, inside=inside)
    raw = get_backend("cvxpy", backend).solve(model, options, time_limit)
    return read_cvxpy(model, SOFT_PRIMAL, raw.has_duals), raw.status, raw.message


def _subproblem_pyomo(X, y, C, inside, backend, options, time_limit):
    model = soft_primal.build_pyomo(X, y, C, inside=inside)
    raw = get_backend("pyomo", backend).solve(model, options, time_limit)
    return read_pyomo(model, SOFT_PRIMAL), raw.status, raw.message


SUBSOLVERS = {"direct": _subproblem_direct, "cvxpy": _subproblem_cvxpy, "pyomo": _subproblem_pyomo}


def _point(values: dict, d: int):
    w, b = values.get("w"), values.get("b", math.nan)
    if w is None or len(w) != d or not np.all(np.isfinite(w)) or not math.isfinite(b):
        return None
    return np.asarray(w, dtype=float), float(b)


def _line_search(margins, dm, w, dw, C) -> float:
    """argmin over s in [0, 1] of P at (w, b) + s (dw, db), with dm the margins' change at s = 1."""

    def along(s):
        v = w + s * dw
        return 0.5 * v @ v + penalty.weighted_sum(C, np.maximum(0.0, 1.0 - margins - s * dm))

    found = minimize_scalar(along, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-10})
    # Brent's bounded search does not try the end points: the full step may be better.
    return 1.0 if along(1.0) <= found.fun else float(found.x)


def _wrong_side(margins, band, held, tol):
    """The points outside `band` that a point's margins put on the other side of 1 by more than tol:
    a held one (alpha = C, margin < 1) above it, another one below it."""
    return ~band & ((held & (margins > 1.0 + tol)) | (~held & (margins < 1.0 - tol)))


def _split(margins, y, C, delta, wrong):
    """(W, L, delta): W the points within delta of their margin and the wrong-side ones, L the others inside it
    (held at alpha = C), with delta doubled until the restricted QP is bounded in b. b is free and L adds
    -s b to its objective (s = sum of C_i y_i over L); the hinges of W's negative points bound it as b grows, its
    positive points as b falls, so it is bounded exactly when -C(W+) <= s <= C(W-), C(.) the sum of C_i (the
    restricted dual's balance y_W' a = -s within 0 <= a <= C). Why: on wide data at X x 1e-3 (n = 12,000, d = 150), the
    band around the loose first QP's margins held too few negative points, and Clarabel called the
    restricted QP unbounded (dual infeasible). W is never empty: a QP without rows leaves b free even where s = 0
    (moons, n = 2,000, C = 1e-5: every point inside its margin, and SCS refused the QP, "m must be a positive
    integer")."""
    distance = np.abs(margins - 1.0)
    while True:
        in_W = (distance < delta) | wrong
        in_L = ~in_W & (margins < 1.0)
        s = penalty.weighted_sum(C, np.where(in_L, y, 0.0))
        bounded = -penalty.weighted_sum(C, in_W & (y > 0)) <= s <= penalty.weighted_sum(C, in_W & (y < 0))
        if in_W.any() and (bounded or not in_L.any()):
            return in_W, in_L, delta
        delta *= 2.0


def _proved(X, y, C, f, alpha, deadline: Deadline = NEVER):
    """The optimum proved from the active set of the point with decision values f (solvers.reference.polish)
    as (w*, b*, alpha*), or None where no proof is found (or the deadline stopped it)."""
    if alpha is None or not np.all(np.isfinite(alpha)):
        return None
    ref = polish(Gram(X, None), y, C, alpha, f, deadline=deadline)
    if not ref.ok:
        return None
    return ref.weights(X, y), ref.b, ref.alpha


def _band_optimum(X, y, C, margins, near, restricted, options, tol, deadline: Deadline = NEVER):
    """The optimum proved from the point of a restricted QP over the `near` points (within SETTLE_BAND of their
    margin), solved to SETTLE_TOL with the points inside the band held at alpha = C, if that point moves no
    point outside the band to the other side by more than tol; else None."""
    held = ~near & (margins < 1.0)
    if not near.any():  # no point at the margin: nothing to settle
        return None
    rows = np.flatnonzero(near)
    values, _, _ = restricted(rows, penalty.at(C, rows), (X[held], y[held], penalty.at(C, held)), options)
    point, alpha_near = _point(values, X.shape[1]), values.get("alpha")
    if point is None or alpha_near is None:
        return None
    f_point = X @ point[0] + point[1]
    if _wrong_side(y * f_point, near, held, tol).any():
        return None
    settled_alpha = np.where(held, C, 0.0)
    settled_alpha[near] = alpha_near
    return _proved(X, y, C, f_point, settled_alpha, deadline)


def _settle(X, y, C, w, b, alpha, restricted, options, tol, deadline: Deadline = NEVER):
    """The exact optimum at a consistent split: the KKT solution of the point's active set where it
    proves the optimum (solvers.reference.polish: the crossover of an interior-point method), else
    that of the band's QP (`_band_optimum`); else the given point, as it is.
    Why both: the QP's point alone was 2.3e-6 off (w, relative) through PIQP at any tolerance on
    overlapping(800, d=3, seed=1), 1.5e-5 through Clarabel at n = 2,000 (the checks refuse both);
    the proof alone failed on the ambiguous points of n = 1e5 (SETTLE_TOL's comment).
    The band's QP goes first where more points lie within SETTLE_BAND of their margin than the d + 1
    unknowns of (w, b): the point's own proof then fails, and slowly (n = 1e5, d = 20, 78 such points:
    12 rounds and 0.55 s, then the band's QP and a proof in one round, 0.05 s). Both stop at the deadline
    (the band's QP is one of `restricted`'s, given the time that remains)."""
    f = X @ w + b
    margins = y * f
    near = np.abs(margins - 1.0) < SETTLE_BAND
    own = partial(_proved, X, y, C, f, alpha, deadline)
    band = partial(_band_optimum, X, y, C, margins, near, restricted, options, tol, deadline)
    for attempt in ((band, own) if np.count_nonzero(near) > X.shape[1] + 1 else (own, band)):
        proved = attempt()
        if proved is not None:
            return proved
    return w, b, alpha


def in_span(X_rows, weight, inside):
    """The restricted QP's data in coordinates of the span of what its optimum can be made of: (X_rows Q, inside with
    X_L Q, Q), Q (d x m, m <= |rows| + 1) an orthonormal basis of the rows and of the held points' sum
    s = sum_L C_j y_j x_j, or None where that saves nothing (m >= d, or sparse rows, left as they are).

    Why it is the same QP: w* = sum_rows alpha_i y_i x_i + s lies in that span, so w = Q u with ||w|| = ||u||, and
    every product the model takes, x_i'w and s'w, is (Q'x_i)'u. The layer's model is the soft primal as ever, on m
    features instead of d: where d >> |rows| (n = 1,000, d = 10,000) its QP shrinks from d + |rows| + 1 variables to
    about 2 |rows|. The caller maps the QP's u back: w = Q u."""
    d = X_rows.shape[1]
    if not isinstance(X_rows, np.ndarray) or X_rows.shape[0] + (inside is not None) >= d:
        return None
    parts = [X_rows]
    if inside is not None:
        s, _, _ = soft_primal.held_terms(inside, d, weight)
        parts.append(s[None, :])
    Q, _ = scipy.linalg.qr(np.vstack(parts).T, mode="economic")  # Householder: an orthonormal Q at any rank
    held = None if inside is None else (np.asarray(inside[0] @ Q), *inside[1:])
    return X_rows @ Q, held, Q


class _RestrictedQPs:
    """The restricted QPs of one decompose, through its layer and backend, each given the time that remains of
    the deadline (none starts once it has passed). They had at least 1 s each, and the settling step's QP and
    proof ran after the limit: at n = 20,000, d = 500 (Pyomo/OSQP), a limit of 1 s returned after 2.3 s.
    sub_s sums the time inside them. `cut`: the last one ran into the deadline (or did not start), its point
    not taken, since a point a backend left at its time limit is no solution of the QP."""

    def __init__(self, X, y, layer, backend, options, deadline: Deadline):
        self.X, self.y, self.layer, self.backend, self.options = X, y, layer, backend, options
        self.subsolve = SUBSOLVERS[layer]
        self.deadline, self.sub_s, self.cut, self.left = deadline, 0.0, False, None

    def __call__(self, rows, weight, inside, options=None):
        """(values, status, message) of the QP over `rows` (their C_i: weight) with the points `inside` held."""
        self.left = self.deadline.remaining()
        self.cut = self.deadline.passed()
        if self.cut:
            return {}, TIME_LIMIT, ""
        begin = time.perf_counter()
        isolation.stage(f"a restricted QP ({len(rows):,} rows)")
        X_rows, span = self.X[rows], in_span(self.X[rows], weight, inside)
        if span is not None:
            X_rows, inside, basis = span
        values, status, message = self.subsolve(X_rows, self.y[rows], weight, inside, self.backend,
                                                self.options if options is None else options,
                                                self.deadline.for_backend())
        if span is not None and values.get("w") is not None:
            values = {**values, "w": basis @ np.asarray(values["w"], dtype=float)}
        self.sub_s += time.perf_counter() - begin
        self.cut = self.deadline.passed()
        return ({}, TIME_LIMIT, message) if self.cut else (values, status, message)

    def where(self, name: str) -> str:
        """Where the deadline cut the last QP, which the row calls `name` (Deadline.stopped_after's `where`)."""
        return subproblem_stop(self.layer, self.backend, name, self.left) if self.left else f"before {name}"


def decompose(X: np.ndarray, y: np.ndarray, C, *, backend: str = "piqp", layer: str = "direct",
              sample: int = SAMPLE, delta: float = 0.3, min_delta: float = 1e-3, tol: float = 1e-8,
              max_outer: int = 50, profile: str = "high", options: dict | None = None,
              time_limit: Deadline | float | None = None, seed: int = 0,
              start: str = "sample") -> PrimalWorkingSetResult:
    """The soft primal's optimum through restricted QPs (module docstring); X, y already validated.

    start: "sample", the loop starts from the QP of a random sample of `sample` points (all points if
    n <= sample: then that QP is the whole solve); "smoothed", from smoothed_start's point.
    delta: the first band |m_i - 1| < delta.
    tol: how far past the margin (in m_i) a point of L or outside may end and still count on its side.
    time_limit: seconds from here, or a running solvers.deadline.Deadline (solvers.api's): each restricted QP is
    given what remains, the smoothed start and the settling step's proof stop at it, and the result is then
    timed_out, its message saying where.
    """
    _check_settings(layer, C, start, sample, delta, min_delta)
    X = as_data(X)  # a sparse X stays sparse: its rows are the restricted QPs' rows
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    deadline = Deadline.of(time_limit)
    restricted = _RestrictedQPs(X, y, layer, backend, native_options(backend, profile, options),
                                deadline)

    stopped = partial(_stopped, X, y, C, restricted)

    def settled(w, b, alpha, outer, size) -> PrimalWorkingSetResult:
        """The result at a consistent split, its point replaced by `_settle`'s where that one holds; a time limit
        where the deadline passed meanwhile (the proof, or the closing checks', had not the time)."""
        tight = {**tolerance_options(backend, SETTLE_TOL), **(options or {})}
        w, b, alpha = _settle(X, y, C, w, b, alpha, restricted, tight, tol, deadline)
        if deadline.passed():
            return stopped(w, b, outer, size, 0, "in the settling step, at a consistent split")
        return PrimalWorkingSetResult(w, b, alpha, primal_objective(X, y, w, b, C), outer, size, 0,
                                      restricted.sub_s, True)

    if start == "smoothed":
        isolation.stage("the smoothed start")
        w, b = smoothed_start(X, y, C, deadline)
        if deadline.passed():
            return stopped(w, b, 0, 0, n, "in the smoothed start")
    else:
        everything = n <= sample
        rows = np.arange(n) if everything else np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))
        values, status, message = restricted(rows, penalty.at(C, rows) * (n / len(rows)), None)
        point = _point(values, d)
        if point is None and restricted.cut:
            return stopped(np.full(d, math.nan), math.nan, 0, len(rows), n, restricted.where("the sample's QP"))
        if point is None:
            return PrimalWorkingSetResult(np.full(d, math.nan), math.nan, None, math.nan, 0, len(rows), n,
                                          restricted.sub_s, False,
                                          f"the sample's QP returned no point ({_why(status, message)})")
        w, b = point
        if everything:
            return settled(w, b, values.get("alpha"), 0, n)
    margins = y * (X @ w + b)
    wrong = np.zeros(n, dtype=bool)
    in_W = wrong
    it = 0
    for it in range(1, max_outer + 1):
        in_W, in_L, delta = _split(margins, y, C, delta, wrong)
        rows = np.flatnonzero(in_W)
        values, status, message = restricted(rows, penalty.at(C, rows), (X[in_L], y[in_L], penalty.at(C, in_L)))
        point = _point(values, d)
        if point is None and restricted.cut:
            return stopped(w, b, it - 1, rows.size, int(wrong.sum()),
                           restricted.where(f"restricted QP {it} ({rows.size:,} rows)"))
        if point is None:
            why = f"restricted QP {it} returned no point ({_why(status, message)})"
            return PrimalWorkingSetResult(w, b, None, primal_objective(X, y, w, b, C), it, int(in_W.sum()), n,
                                          restricted.sub_s, False, why, failed=True)
        dw, db = point[0] - w, point[1] - b
        dm = y * (X @ dw + db)
        wrong = _wrong_side(margins + dm, in_W, in_L, tol)
        if not wrong.any():
            alpha = np.where(in_L, C, 0.0)
            alpha_W = values.get("alpha")
            alpha[in_W] = alpha_W if alpha_W is not None else math.nan
            return settled(point[0], point[1], alpha, it, int(in_W.sum()))
        step = _line_search(margins, dm, w, dw, C)
        w, b, margins = w + step * dw, b + step * db, margins + step * dm
        # The margins moved by about this much: the band that must hold the points still in doubt.
        delta = float(np.clip(2.0 * np.quantile(np.abs(step * dm), 0.999), min_delta, delta))
        if deadline.passed():
            return stopped(w, b, it, int(in_W.sum()), int(wrong.sum()), "")
    return PrimalWorkingSetResult(w, b, None, primal_objective(X, y, w, b, C), it, int(in_W.sum()),
                                  int(wrong.sum()), restricted.sub_s, False, f"stopped after {it} restricted QPs")


def _stopped(X, y, C, restricted: _RestrictedQPs, w, b, done: int, size: int, wrong: int,
             where: str) -> PrimalWorkingSetResult:
    """decompose's result where the deadline stopped it after `done` restricted QPs (`where`: Deadline.stopped_after's)."""
    message = restricted.deadline.stopped_after(f"{done} restricted QPs", where)
    return PrimalWorkingSetResult(w, b, None, primal_objective(X, y, w, b, C), done, size, wrong, restricted.sub_s,
                                  False, message, timed_out=True)


def _check_settings(layer, C, start, sample, delta, min_delta) -> None:
    """decompose's settings, or a ValueError naming the bad one."""
    if layer not in SUBSOLVERS:
        raise ValueError(f"unknown working-set layer {layer!r}; choose one of {tuple(SUBSOLVERS)}")
    if not penalty.is_finite_positive(C):
        raise ValueError(f"the primal working set needs a finite C > 0 (got {penalty.describe(C)})")
    if start not in STARTS:
        raise ValueError(f"unknown start {start!r}; choose one of {STARTS}")
    if sample < 2 or not (0 < min_delta <= delta):
        raise ValueError(f"need sample >= 2 and 0 < min_delta <= delta (got {sample}, {min_delta}, {delta})")


def solve(X, y, C, *, backend: str = "piqp", layer: str = "direct", sample: int | None = None,
          profile: str = "high", options: dict | None = None, time_limit: Deadline | float | None = None,
          seed: int = 0) -> Solution:
    """The soft-margin primal by working sets, recovered and checked like solvers.api.solve's result.

    sample: the points of a first QP taken at random (decompose's first band); None: start_settings(n, d).
    time_limit: seconds, or a running solvers.deadline.Deadline (decompose); the closing checks stop at it too.

    build_s is the time outside the layer's calls (margins, selection, line searches),
    solve_s the time inside them (the restricted models' build, solve and read-back).

    As in solvers.api.solve, a call with a limit runs in a process of the solve server killed shortly past it
    (solvers.isolation): a restricted QP's setup or a backend without a time limit of its own ends there too.
    """
    deadline = Deadline.of(time_limit)
    work = partial(_solve, X, y, C, backend=backend, layer=layer, sample=sample, profile=profile, options=options,
                   time_limit=deadline, seed=seed)
    return isolation.run_solve(deadline, work, partial(_unanswered, X, y, C, backend=backend, layer=layer,
                                                       profile=profile, deadline=deadline))


def _unanswered(X, y, C, ended, *, backend, layer, profile, deadline) -> Solution:
    """solve's row when its process gave no answer (solvers.isolation.run_solve)."""
    X, y, labels = validation.check_data(X, y)
    return unanswered(ended, formulation=SOFT_PRIMAL, layer=layer, backend=backend, X=X, y=y,
                      C=validation.check_sample_C(C, len(y)), profile=get_profile(profile), deadline=deadline,
                      extras={"labels": labels.as_dict(), "method": "primal_working_set"})


def _solve(X, y, C, *, backend, layer, sample, profile, options, time_limit, seed) -> Solution:
    """solve, in this process."""
    X, y, labels = validation.check_data(X, y)
    C = validation.check_sample_C(C, len(y))
    prof = get_profile(profile)
    start = time.perf_counter()
    start_with = start_settings(len(y), X.shape[1]) if sample is None else {"sample": sample}
    deadline = Deadline.of(time_limit)
    res = decompose(X, y, C, backend=backend, layer=layer, profile=prof.name, options=options,
                    time_limit=deadline, seed=seed, **start_with)
    total = time.perf_counter() - start
    # a time limit first: its point may be none yet (the sample's QP stopped there)
    status = (OPTIMAL if res.converged else TIME_LIMIT if res.timed_out
              else ERROR if res.failed or not np.all(np.isfinite(res.w)) else ITERATION_LIMIT)
    sol = Solution(
        formulation=SOFT_PRIMAL, layer=layer, backend=backend, status=status, solver_status=status,
        # outer_iterations counts the QPs after the first one (the sample's: every point where n <= sample)
        raw_status=f"primal working set: {res.wrong_side} points on the wrong side after "
                   f"{'the smoothed start' if start_with.get('start') == 'smoothed' else 'the first QP'} and "
                   f"{res.outer_iterations} restricted QPs more (last |W| = {res.working_set})",
        objective=res.objective, build_s=total - res.subproblem_s, solve_s=res.subproblem_s,
        iterations=res.outer_iterations, profile=prof.name, message=res.message,
        extras={"labels": labels.as_dict(), "method": "primal_working_set", "start": start_with.get("start", "sample"),
                "sample": start_with.get("sample"),  # the first QP's points (None: the smoothed start, no QP)
                "working_set": res.working_set},
    )
    values = {"w": res.w, "b": res.b} if np.all(np.isfinite(res.w)) else {}
    if values and res.alpha is not None:
        values["alpha"] = res.alpha
    return close(sol, values, X=X, y=y, C=C, profile=prof, deadline=deadline)
