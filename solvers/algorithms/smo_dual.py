"""The kernel dual by the compiled SMO (solvers.algorithms.smo), made exact by a block through the layer.

SMO, LIBSVM's method, runs from alpha = 0 (or the warm start) to a loose violation (SMO_TOL): most of the work,
two points a step. Its free points, with the bound points within a band of the margin, then form one block: the
kernel dual restricted to them with the others fixed, declared and solved through the layer (the solver alone,
cvxpy or Pyomo) and made exact on its active set by the polish (working_set.subproblems.solve_block, the block
loop's own step). Where a point outside the block still violates, SMO goes on from there to the loop's tolerance and
another block follows (at most ROUNDS). Where a block may hold every point, each run but the last also stops at
a budget of steps (SMO_STALL), where SMO's steps grow with C far past what the block costs. The point is then
finished as the block loop's (snapped, proved from its active set where its gap is open: the block loop's finish,
handed over by working_set.loop, which imports this module) and closed by the same checks.

Where the free points are more than a block holds (max_q), or the block's dense solve would cost more than
finishing by SMO (`block_pays`), no block is solved: SMO runs to the loop's tolerance and the proof from the
active set makes the point exact. With many free points it is tried first at EARLY_PROOF_TOL (`_proved_early`):
SMO's steps from there to the loop's tolerance mostly refine the values of an active set already final, which
the proof's one solve gives exactly.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from formulations import penalty
from solvers import isolation
from solvers.algorithms.compiled_gram import drop_ahead, gram_threads, map_ahead
from solvers.algorithms.kernel_rows import AdaptiveRows, FullGram, KernelRows, LinearRows
from solvers.algorithms.smo import GIVEN, KERNEL_CODES, RowCache, smo
from solvers.algorithms.working_set import subproblems
from solvers.algorithms.working_set.optimality import (alpha_scale, max_violation, relative_gap,
                                                        violating_sets)
from solvers.algorithms.working_set.polish import factor_budget
from solvers.algorithms.working_set.proof import TAIL_MIN_FREE, finished_by_proof, products_cheap
from solvers.algorithms.working_set.start import check_alpha0
from solvers.algorithms.working_set.state import LoopState
from solvers.deadline import Deadline
from solvers.reference import dense_limit
from solvers.registry import subproblem_stop

#: SMO's violation before the first block (LIBSVM's default eps): the block makes the rest exact.
SMO_TOL = 1e-2
#: Bound points whose -y_i g_i lies within BAND times the violation (and the loop's tol) of the margin join the
#: block: those the exact answer may free. The narrowest band that still needed one round (docs/benchmarks.md).
BAND = 1.0
#: Most SMO runs, each followed by a block.
ROUNDS = 4
#: SMO's violation at which the proof from the active set is tried before SMO goes on to the loop's tolerance,
#: where no block pays and the free points are many (proof.TAIL_MIN_FREE). 1e-3, not 1e-4, since a round whose set
#: moved by a few points is solved through the last factor (solvers.reference._bordered_solve): the proof settled
#: from there on all 12 noisy sets measured, in 0.89-1.05 of the time (median 0.93; docs/benchmarks.md).
EARLY_PROOF_TOL = 1e-3
#: The proof's free points may outnumber those SMO had on the way to EARLY_PROOF_TOL: its matrix is mapped ahead
#: for 2% more of them, and at least this many more (on the noisy sets measured, 2 to 11 more came).
AHEAD_MARGIN = 32
#: The band's bound points join the block up to as many as it has free points, and at least this many: where
#: nearly every point is bound and near the margin (a tiny C), a dense block of them all would cost |B|^3 a
#: solver iteration for points that stay bound, where SMO moves the few that do not at a row each.
NEAR_AT_LEAST = 100
#: A block pays where its dense solve, ~|B|^3 (each interior-point iteration factors it), is within BLOCK_PAYS
#: times SMO's work so far (n per step, n d per kernel row computed while its rows come from the data): SMO to the
#: loop's tolerance takes a few times the steps that brought it to SMO_TOL, and the proof that follows factors the
#: free points' system a few times where the solver factors the block's at each of its iterations. 40, not 50: at
#: d = 30, C = 1 blocks of 875-928 points at 0.89-0.95 of 50 times the work cost 6-14% more than SMO's finish on six
#: seeds (figures: docs/benchmarks.md).
BLOCK_PAYS = 40.0
#: A block of at most this many points is solved whatever SMO cost: its dense solve takes hundredths of a second,
#: and the answer is then the layer's solve.
BLOCK_ALWAYS = 500
#: What a block's model adds in its layer, per entry of Q_BB, in block_pays' units (|B|^3: PIQP's solve of blocks
#: of 200-1,200 points took 0.08-0.1 ns per unit; their Pyomo models added 18-19 ns an entry, cvxpy's 64-140 ns).
LAYER_ENTRY_COST = {"direct": 0.0, "pyomo": 200.0, "cvxpy": 800.0}
#: Where a block may hold every point, SMO gives way to a block, in every round but the last, once its steps are
#: SMO_STALL times those at which block_pays would take all n (_smo_budget). SMO's steps grow with C: at C = 1e8 on
#: 300 moons it ran 56 s to SMO_TOL (LIBSVM: 72 s, 352 million iterations) where the block of its 40-60 support
#: vectors is exact in a millisecond. 100: SMO gives way only once it has spent about a hundred times the block's
#: solve (225,000 steps at n = 300, 1e7 at n = 2,000); larger problems keep SMO's runs as they were.
SMO_STALL = 100.0


def applies(src) -> bool:
    """Whether the compiled SMO can take this row source: a Gram matrix in memory, or kernel rows of dense data
    for a kernel it computes (the linear kernel's rows go through X in the block loop: LinearRows)."""
    if isinstance(src, FullGram):
        return True
    return (isinstance(src, KernelRows) and not isinstance(src, LinearRows) and isinstance(src.data, np.ndarray)
            and src.kernel.name in KERNEL_CODES)


def compiled_rows(src, y=None, upper=None) -> RowCache:
    """The compiled SMO's rows for a row source that `applies`, as the source gives them (its row_cache): the same
    Gram matrix, or the same kernel on the same data with a cache as large as the source's (rows that may become
    the matrix: kernel_rows.AdaptiveRows, which the problem's labels and bounds may tell at once)."""
    return src.row_cache(y, upper) if isinstance(src, AdaptiveRows) else src.row_cache()


def decompose(src, y, C, *, settings, layer: str, backend: str, opts: dict, deadline: Deadline, finish: Callable,
              alpha0=None):
    """The kernel dual at C (one number or C_i per point) on a row source that `applies` (module docstring), as a
    working_set.WorkingSetResult; settings: working_set.WorkingSetOptions (tol, gap_tol, bound_tol, max_q);
    finish: the block loop's (working_set.loop._finish: snap, settle, the result)."""
    n = len(y)
    upper = penalty.upper_bounds(C, n)
    rows = compiled_rows(src, y, upper)
    loop = LoopState(np.zeros(n), -np.ones(n), "smo from zero" if alpha0 is None else "smo from alpha0")
    loop.deadline, loop.layer, loop.min_active = deadline, layer, n
    if alpha0 is not None:
        loop.alpha = check_alpha0(alpha0, y, C)
        loop.g = rows.gradient(y, loop.alpha)
    subsolve = subproblems.SUBSOLVERS[layer]
    isolation.warm_after_smo_in_background()  # the closing checks' compiled code, on the other core meanwhile
    violation, converged, tol = math.inf, False, max(SMO_TOL, settings.tol)
    by_smo = False  # no block: SMO to the loop's tol, then the proof
    budget = _smo_budget(src, n, settings)
    for loop.it in range(1, ROUNDS + 1):
        last = by_smo or loop.it == ROUNDS  # SMO to its tolerance: no block follows
        res = _smo_steps(src, rows, y, upper, loop, tol, None if last else budget)
        if res.timed_out:
            break
        violation, converged = _converged(src, y, C, loop, settings)
        if loop.it == 1 and isinstance(src, KernelRows):  # the proof's product over the points at C, ahead
            src.prefetch(np.where(loop.alpha >= upper, y * upper, 0.0))
        # the first round's block always runs where it pays (the answer is then the layer's solve); SMO, once
        # chosen, has reached the loop's tol here and the proof in `finish` does the rest
        if (converged and loop.it > 1) or by_smo:
            break
        limit = min(settings.max_q, src.capacity)
        block = _block(loop.alpha, loop.g, y, upper, res.violation, settings, limit)
        smo_work = n * (loop.smo_steps + rows.rows_computed * _row_cost(src, rows))
        # SMO to the loop's tol, then the proof, where no block pays
        if not (2 <= block.size <= limit and block_pays(block.size, smo_work, layer)):
            by_smo, tol = True, settings.tol
            if _proved_early(src, rows, y, C, upper, loop, settings):
                violation, converged = _converged(src, y, C, loop, settings)
                break
            if loop.timed_out:
                break
            continue
        if not _block_step(src, y, C, loop, block, subsolve, backend, opts, settings):
            break
        violation, converged = _converged(src, y, C, loop, settings)
        if converged:
            break
        tol = settings.tol
    result = finish(src, y, C, loop, violation, converged, False, settings)
    result.rows_computed += rows.rows_computed
    return result


def _smo_budget(src, n: int, settings) -> int | None:
    """The steps after which a round's SMO gives way to a block (SMO_STALL): SMO_STALL times the work at which
    block_pays takes all n points (n^3 / BLOCK_PAYS, at n a step); None where a block cannot hold them all (max_q,
    the rows the source holds)."""
    if n > min(settings.max_q, src.capacity):
        return None
    return int(min(SMO_STALL * float(n) ** 2 / BLOCK_PAYS, 10**9))  # smo's own step limit at most


def _smo_steps(src, rows: RowCache, y, upper, loop, tol: float, budget: int | None = None):
    """SMO from the loop's point to violation tol, or `budget` steps (loop.alpha, loop.g and its step count
    updated); its result."""
    isolation.stage(f"the SMO steps of round {loop.it}")
    try:
        res = smo(rows, y, upper, loop.alpha, loop.g, tol=tol, deadline=loop.deadline,
                  max_iter=10**9 if budget is None else budget)
    finally:  # the matrix SMO did not need is not formed on: the steps below do BLAS work of their own
        if isinstance(src, AdaptiveRows):
            src.drop_background()
    loop.alpha, loop.g = res.alpha, res.grad
    loop.smo_steps += res.iterations
    if res.timed_out:
        loop.timed_out, loop.stopped_in = True, f"in the SMO steps of round {loop.it}"
    return res


def _proved_early(src, rows: RowCache, y, C, upper, loop, settings) -> bool:
    """Whether SMO run to EARLY_PROOF_TOL gives way to the optimum proved from its active set (proof.finished_by_proof:
    many free points, every row in memory; loop.alpha and loop.g are then that optimum's). Otherwise SMO goes on
    from its point to the loop's tolerance, one proof's solve the cost where the set was not yet final."""
    free = int(np.count_nonzero((loop.alpha > 0) & (loop.alpha < upper)))
    if settings.tol >= EARLY_PROOF_TOL or free < TAIL_MIN_FREE:  # a few free points: SMO's run as it was
        return False
    # the proof's K_FF mapped in on the other core meanwhile, where the proof can run (finished_by_proof's rules)
    if gram_threads() >= 2 and free <= dense_limit() and products_cheap(src, len(y)):
        map_ahead((free + max(AHEAD_MARGIN, free // 50)) ** 2)
    try:
        res = _smo_steps(src, rows, y, upper, loop, EARLY_PROOF_TOL)
        if res.timed_out or not res.converged:
            return False
        eps = settings.bound_tol * alpha_scale(loop.alpha, C)
        # by least squares, as the closing checks prove the same sets: their proof then recalls this one's solve
        return finished_by_proof(src, y, C, eps, loop, settings.gap_tol, least_squares=True)
    finally:
        drop_ahead()


def block_pays(size: int, smo_work: float, layer: str = "direct") -> bool:
    """Whether a block of `size` points is solved densely through `layer` rather than SMO run on to the loop's
    tolerance, SMO's work so far being smo_work (BLOCK_PAYS, BLOCK_ALWAYS, LAYER_ENTRY_COST): known before either
    runs, no clock."""
    size = float(size)
    return size <= BLOCK_ALWAYS or size**3 + LAYER_ENTRY_COST[layer] * size**2 <= BLOCK_PAYS * smo_work


def _row_cost(src, rows: RowCache) -> int:
    """What one kernel value of the rows SMO computed from the data stands for in SMO's work to come, in flops: d
    while it still computes them; 0 once its rows come from the whole matrix (rows that became it: AdaptiveRows).
    Why: SMO's steps then only read their rows, and counting the rows computed before would overstate what
    finishing by SMO costs, choosing a dense block of many free points that costs more than SMO's steps."""
    if rows.kind == GIVEN:
        return 0
    data = getattr(src, "data", None)
    return 1 if data is None else max(1, int(data.shape[1]))


def _converged(src, y, C, loop, settings) -> tuple[float, bool]:
    """(m - M over every point, whether it is within the loop's tol and the relative gap within gap_tol)."""
    violation = max_violation(loop.alpha, loop.g, y, C, settings.bound_tol * alpha_scale(loop.alpha, C))
    if violation > settings.tol:
        return violation, False
    loop.gap = relative_gap(loop.alpha, loop.g, y, C, src.max_diagonal())
    return violation, loop.gap <= settings.gap_tol


def _block(alpha, g, y, upper, violation, settings, limit: int) -> np.ndarray:
    """The free points, and the bound points within BAND * max(violation, tol) of the margin (-y_i g_i = b, b
    between M and m), the nearest first: at most max(free points, NEAR_AT_LEAST) of them, and at most `limit`
    points in all (the free ones alone may be more)."""
    free = (alpha > 0) & (alpha < upper)
    up, low, minus_yg = violating_sets(alpha, g, y, upper)
    if not up.any() or not low.any():
        return np.flatnonzero(free)
    m, M = float(minus_yg[up].max()), float(minus_yg[low].min())
    distance = np.abs(minus_yg - 0.5 * (m + M))
    band = 0.5 * abs(m - M) + BAND * max(violation, settings.tol)
    near = np.flatnonzero(~free & (distance <= band))
    free_count = int(np.count_nonzero(free))
    room = max(0, min(limit - free_count, max(free_count, NEAR_AT_LEAST)))
    near = near[np.argsort(distance[near], kind="stable")[:room]]
    return np.union1d(np.flatnonzero(free), near)


def _block_step(src, y, C, loop, B, subsolve, backend, opts, settings) -> bool:
    """The block B solved through the layer and polished (subproblems.solve_block), alpha and g updated; False
    where it returned no point (loop.failure or loop.timed_out say why)."""
    alpha, g = loop.alpha, loop.g
    rhs = float(y[B] @ alpha[B])
    what = f"the block of round {loop.it} ({B.size:,} points)"
    isolation.stage(f"{what} or its polish")
    left = loop.deadline.remaining()
    new, elapsed, polished = subproblems.solve_block(src, y, alpha, g[B], B, rhs, C, subsolve, backend, opts,
                                                     settings.tol, loop.deadline, factor_budget(B.size))
    loop.sub_s += elapsed
    loop.polished += polished
    if new is None:
        if loop.deadline.passed():
            loop.timed_out = True
            loop.stopped_in = subproblem_stop(loop.layer, backend, what, left) if elapsed else f"before {what}"
        else:
            loop.failure = f"the subproblem solver returned no point for {what}"
        return False
    delta = new - alpha[B]
    changed = np.flatnonzero(delta != 0)
    if changed.size:
        Bc = B[changed]
        coef = y[Bc] * delta[changed]
        g += y * src.combination(Bc, coef)  # a Gram matrix's rows read in place (FullGram.combination)
        alpha[Bc] = new[changed]
    return True
