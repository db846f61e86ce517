r"""The working-set loop (SVMlight's scheme around a general QP solver): `decompose`.

Each outer step picks a block B (selection.choose_block), growing with the free points, solves the kernel
dual restricted to B with the others fixed (subproblems.solve_block), and updates the gradient
g = Q alpha - 1 with the rows of K whose alpha changed (O(n q)); K is the Gram matrix or rows computed on
demand through a bounded cache (solvers.algorithms.kernel_rows), so nothing n x n is needed. The loop stops
when m - M <= tol (the maximal KKT violation, optimality) and the relative duality gap, computed from the
gradient in O(n), is <= gap_tol. Subproblems that move nothing or a violation that stops falling are
followed by exact two-point steps (pair_steps); in the tail the optimum proved from the active set may end
the loop (proof).
"""

from __future__ import annotations

import math

import numpy as np

from formulations import penalty
from solvers import blas, isolation
from solvers.algorithms.working_set.optimality import (alpha_scale, as_rows, extremes, gradient, max_violation,
                                                       relative_gap, snap)
from solvers.algorithms.working_set.pair_steps import smo_steps
from solvers.algorithms.working_set.proof import finished_by_proof, settle
from solvers.algorithms.working_set.selection import choose_block, shrinkable
from solvers.algorithms.working_set.start import check_alpha0, split_point
from solvers.algorithms.working_set.state import LoopState, WorkingSetOptions, WorkingSetResult
from solvers.algorithms.working_set.subproblems import SUBSOLVERS, solve_block
from solvers.deadline import NEVER, Deadline
from solvers.profiles import native_options
from solvers.registry import subproblem_stop

#: The loop's violation is never tightened below this (the gradient's own rounding).
MIN_TOL = 1e-12


def decompose(K, y, C, **kwargs) -> WorkingSetResult:
    """_decompose with BLAS on one thread: its dense work is small (q x q blocks, q rows), and BLAS threads
    spin against other processes on a shared machine (LIBSVM, the peer, is single-threaded too).

    The loop's tuning is WorkingSetOptions' fields as keywords (q=..., tol=...); the rest are _decompose's."""
    tuning = {key: kwargs.pop(key) for key in list(kwargs) if key in WorkingSetOptions.__dataclass_fields__}
    settings = WorkingSetOptions(**tuning)
    with blas.one_thread():
        return _decompose(K, y, C, settings=settings, **kwargs)


def _start(src, y, C, layer, backend, opts, alpha0, settings: WorkingSetOptions,
           deadline: Deadline = NEVER) -> LoopState:
    """The starting point: alpha0 (checked), the split start from settings.split_from points, or alpha = 0.
    The loop keeps `deadline` (its stages stop at it)."""
    n = len(y)
    sub_s, how, Ku = 0.0, "zero" if alpha0 is None else "alpha0", None
    if alpha0 is None and settings.split_from and n >= settings.split_from:
        isolation.stage("the split start")
        alpha0, sub_s, how, Ku = split_point(src, y, C, SUBSOLVERS[layer], backend, opts,
                                             landmarks=settings.landmarks, band=settings.band, deadline=deadline)
        if alpha0 is None:
            how += "; started at zero"
    if alpha0 is None:
        loop = LoopState(np.zeros(n), -np.ones(n), how)  # g = Q alpha - 1 at alpha = 0
    elif Ku is not None:  # the split start's point is feasible by construction
        loop = LoopState(alpha0, y * Ku - 1.0, how)
    else:
        alpha = check_alpha0(alpha0, y, C)
        loop = LoopState(alpha, gradient(src, y, alpha), how)  # once, O(n |S|); then updated by the changed rows
    loop.sub_s, loop.min_active, loop.deadline, loop.layer = sub_s, n, deadline, layer
    if deadline.passed() and how.startswith("split start"):  # its restricted QP was cut: the loop starts at zero
        loop.stopped_in = "in the split start"
    return loop


def _block_step(src, y, C, eps, loop: LoopState, active, subsolve, backend, opts, settings: WorkingSetOptions,
                target: float):
    """Select a block, solve it (to the loop's tolerance `target` when it is the last block again:
    polish.POLISH_TOL), update alpha and the gradient: (moved, tiny_step, polished)."""
    alpha, g = loop.alpha, loop.g
    B = choose_block(src, y, alpha, g, C, eps, active, loop.previous, settings)
    rhs = float(y[B] @ alpha[B])  # = -y_N' alpha_N: the balance with the others fixed
    loop.repeated = loop.previous is not None and np.array_equal(B, loop.previous)
    left = loop.deadline.remaining()
    what = f"the subproblem of step {loop.it} ({len(B):,} points)"
    isolation.stage(f"{what} or its polish")
    new, elapsed, polished = solve_block(src, y, alpha, g[B], B, rhs, C, subsolve, backend, opts,
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


def _finish(src, y, C, loop: LoopState, violation, converged, stall_stop,
            settings: WorkingSetOptions) -> WorkingSetResult:
    """Snap the points a hair off their bounds onto them, settle (proof.settle), and the objective from the
    exact gradient."""
    alpha, g = loop.alpha, loop.g
    snapped = snap(alpha, y, C, settings.bound_tol)
    Ku = y * (g + 1.0)  # y_i (K u)_i = g_i + 1: no product with K (rounding ~1e-14 of |g|)
    moved = np.flatnonzero(snapped != alpha)
    if moved.size:
        Ku += src.combination(moved, y[moved] * (snapped[moved] - alpha[moved]))
    alpha = snapped
    if violation <= settings.tol and not loop.timed_out:  # only a point the loop brought there: a failed
        # solver's alpha = 0 is no point to settle (the proof from it could find the optimum alone)
        alpha, Ku, settled = settle(src, y, C, alpha, Ku, settings.gap_tol, loop.deadline)
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


def _decompose(K, y: np.ndarray, C, *, settings: WorkingSetOptions, backend: str = "clarabel",
               layer: str = "direct", options: dict | None = None, time_limit: Deadline | float | None = None,
               profile: str = "high", alpha0: np.ndarray | None = None) -> WorkingSetResult:
    """Solve the kernel dual by working sets of at most settings.q points (WorkingSetOptions).

    K: the n x n Gram matrix, or a row source (solvers.algorithms.kernel_rows.KernelRows: rows on demand
    through a bounded cache, no n x n matrix).
    profile: the subproblem solver's options (solvers.profiles; `options` go on top).
    alpha0: a feasible starting point (warm start: start.check_alpha0); None starts at alpha = 0,
    or from the split start (settings.band, settings.landmarks) when n >= settings.split_from.
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
    loop = _start(src, y, C, layer, backend, opts, alpha0, settings, Deadline.of(time_limit))
    violation, converged, stall_stop = _iterate(src, y, C, loop, SUBSOLVERS[layer], backend, opts, settings)
    return _finish(src, y, C, loop, violation, converged, stall_stop, settings)


def _iterate(src, y, C, loop: LoopState, subsolve, backend, opts, settings: WorkingSetOptions):
    """The loop's steps from its start until it converges, stalls, stops at the deadline or its subproblem
    fails: (violation, converged, stalled). loop.alpha and loop.g change in place."""
    alpha, g, deadline = loop.alpha, loop.g, loop.deadline
    tol_now = settings.tol
    active = np.ones(len(y), dtype=bool)
    violation, converged = math.inf, False
    best, stalled, stall_stop = math.inf, 0, False
    tiny_step = False  # the last subproblem moved no point by more than eps
    polished = False  # the last subproblem was solved exactly (polish.polish_block)
    smo_tried = False  # exact steps were taken at a stall: a second stall ends the loop
    for loop.it in range(1, settings.max_outer + 1):
        # A point within bound_tol of a bound counts as at the bound (the checks' own rule), relative
        # to alpha's size (alpha_scale)
        eps = settings.bound_tol * alpha_scale(alpha, C)
        m, M, minus_yg = extremes(alpha, g, y, C, eps, active)
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
            # m - M <= tol is not the optimum's objective to gap_tol when C sum xi is large: tighten until
            # the gap is closed too.
            tol_now = violation / 10
            if tol_now < MIN_TOL:  # every pair holds to rounding and the gap stays open (an indefinite K does
                stall_stop = True  # this: a local point); a stop at the loop's precision, for the checks to judge
                break
        # A polished step solved its block exactly: the violation of a block method may rise for a
        # while without any stall of the solver. The same block again without a new low is a stall
        # wherever the violation is (it was solved already).
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
            loop.smo_steps += smo_steps(src, y, alpha, g, C, eps, settings.tol, 10 * settings.q, deadline)
            smo_tried = stalled >= settings.max_stall
            tiny_step, stalled = False, 0
            continue
        if settings.shrinking and loop.it % settings.shrink_every == 0:
            active &= ~shrinkable(alpha, minus_yg, y, C, eps, m, M)
            loop.min_active = min(loop.min_active, int(active.sum()))
        if finished_by_proof(src, y, C, eps, loop, settings.gap_tol):
            violation, converged = max_violation(alpha, g, y, C, eps), True
            break
        moved, tiny_step, polished = _block_step(src, y, C, eps, loop, active, subsolve, backend, opts, settings,
                                                 tol_now)
        if not moved:
            break
    return violation, converged, stall_stop
