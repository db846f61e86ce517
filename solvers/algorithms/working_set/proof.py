r"""The optimum proved from a point's active set (solvers.reference.polish: primal-dual active-set rounds,
each one solve for the free points), where it ends the working-set loop early (`finished_by_proof`, in the
tail) or settles its last point (`settle`).

The blocks' polish is exact per block, but the gradient is updated over many steps and the final snap
restores the balance by moving the free alphas: at a very large C, C times the free points' rounding off
their margins can keep the gap above gap_tol, which the proof from the active set closes.
"""

from __future__ import annotations

import numpy as np

from solvers.algorithms.kernel_rows import LinearRows
from solvers.algorithms.working_set.optimality import gap_and_decision
from solvers.algorithms.working_set.state import LoopState
from solvers.deadline import NEVER, Deadline
from solvers.reference import polish

#: The tail: from TAIL_MIN_FREE free points on, and once the relative gap is within TAIL_GAP, the optimum
#: proved from the point's active set ends the loop. With fewer free points the loop's steps are cheaper than
#: the proof's rounds (figures: docs/benchmarks.md).
TAIL_GAP = 0.2
TAIL_MIN_FREE = 1000


def finished_by_proof(src, y, C, eps, loop: LoopState, gap_tol: float, least_squares: bool = False) -> bool:
    """Whether the loop's point, where it is in the tail (TAIL_GAP, TAIL_MIN_FREE), gives way to the optimum
    proved from its active set (loop.alpha and loop.g are then that optimum's). Tried again only after the
    gap has fallen tenfold, and only where K's products are cheap: a Gram matrix in memory, the linear
    kernel's X, or a cache that holds every row (each round forms K u over the points at C).
    least_squares: a singular system solved by least squares (else given up at once)."""
    alpha, g = loop.alpha, loop.g
    if int(np.count_nonzero((alpha > eps) & (alpha < C - eps))) < TAIL_MIN_FREE:
        return False
    if not products_cheap(src, len(y)):
        return False
    Ku = y * (g + 1.0)
    gap, f = gap_and_decision(alpha, Ku, y, C, src.max_diagonal())
    if f is None or not gap_tol < gap <= min(TAIL_GAP, loop.tail_gap / 10):
        return False
    loop.tail_gap = gap
    # by default a singular system (duplicated points) gives up at once: its least squares cost more than the steps
    proved, Ku, settled = _proved(src, y, C, alpha, Ku, gap, f, gap_tol, least_squares, deadline=loop.deadline)
    if not settled:
        if loop.deadline.passed():  # the proof's rounds stopped at it: the loop stops before its next block
            loop.stopped_in = f"in the proof of step {loop.it} (the tail's)"
        return False
    alpha[:] = proved
    g[:] = y * Ku - 1.0
    loop.proved_at = loop.it
    return True


def products_cheap(src, n: int) -> bool:
    """Whether K's products over n points are cheap enough for the tail's proof: the linear kernel's X, or every
    row in memory (a FullGram holds every row)."""
    return isinstance(src, LinearRows) or src.capacity >= n


def settle(src, y, C, alpha, Ku, gap_tol, deadline: Deadline = NEVER):
    """(alpha, K u, settled): the optimum proved from the point's active set where the point's gap is above
    gap_tol and the proof's is within it (module docstring). At an ordinary C the loop's point is within
    gap_tol already and nothing is solved."""
    gap, f = gap_and_decision(alpha, Ku, y, C, src.max_diagonal())
    if gap <= gap_tol or f is None:
        return alpha, Ku, False
    return _proved(src, y, C, alpha, Ku, gap, f, gap_tol, deadline=deadline)


def _proved(src, y, C, alpha, Ku, gap, f, gap_tol, least_squares: bool = True, deadline: Deadline = NEVER):
    """settle's answer for a point whose gap and decision values f are known: the proof's optimum where its gap
    is smaller than `gap`, settled where that is within gap_tol (the proof's rounds stop at the deadline)."""
    ref = polish(src, y, C, alpha, f, least_squares=least_squares, deadline=deadline)
    if not ref.ok:
        return alpha, Ku, False
    settled_gap = gap_and_decision(ref.alpha, ref.g, y, C, src.max_diagonal())[0]
    if settled_gap >= gap:
        return alpha, Ku, False
    return ref.alpha, ref.g, settled_gap <= gap_tol
