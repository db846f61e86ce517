"""The working-set loop's settings (WorkingSetOptions), its running state (LoopState) and what it returns
(WorkingSetResult)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.algorithms.working_set.optimality import SNAP
from solvers.algorithms.working_set.selection import SELECTIONS
from solvers.algorithms.working_set.start import LANDMARKS
from solvers.deadline import NEVER, Deadline


def block_size(n: int) -> int:
    """q for n points, as the benchmark and the C path use it (figures: docs/benchmarks.md)."""
    return 500 if n >= 2000 else (200 if n > 400 else 50)


@dataclass(frozen=True)
class WorkingSetOptions:
    """How the working-set loop runs (decompose takes each one as a keyword too).

    q: the smallest block; it grows to `growth` times the free points, at most max_q and at most the rows
    a KernelRows cache holds (selection.choose_block).
    tol, gap_tol: the loop stops when m - M <= tol and (P - D) / P <= gap_tol (optimality.relative_gap); if
    the gap is not closed, tol falls tenfold. max_outer: the most steps.
    max_stall, stall_floor: below stall_floor's violation, max_stall steps without a 1% fall stop the
    loop (the subproblem solver's precision; with the polished subproblems it is seldom reached).
    bound_tol: alpha within bound_tol * alpha_scale of a bound counts as on it (polished subproblems and SMO
    steps put points exactly on their bounds).
    split_from, band, landmarks: the split start (start.split_start) when n >= split_from (0: never).
    selection: "second_order" (selection.select_block) or "first_order". shrinking: every shrink_every steps
    the points selection.shrinkable names leave the selection; when the violation on the others is below
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

    def __post_init__(self):
        if self.q < 2:
            raise ValueError(f"the working set needs q >= 2 points (got {self.q})")
        if self.selection not in SELECTIONS:
            raise ValueError(f"unknown working-set selection {self.selection!r}; choose one of {SELECTIONS}")


@dataclass
class LoopState:
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
    tail_gap: float = math.inf  # the gap at the last try of proof.finished_by_proof
    proved_at: int = 0  # the step at which proof.finished_by_proof proved the optimum (0: none)
    deadline: Deadline = NEVER  # the solve's time limit (solvers.deadline), which every stage below looks at
    stopped_in: str = ""  # where the deadline stopped the loop ("" between two steps)
    layer: str = "direct"  # the subproblems' layer (what a stop in one says: registry.subproblem_stop)


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
    polished: int = 0  # subproblems solved exactly on their active set (polish.polish_block)
    unshrinks: int = 0  # times the shrunk points came back for the final recheck
    min_active: int = 0  # fewest points left in the selection by shrinking
    rows_computed: int = 0  # kernel rows evaluated (a KernelRows source; 0 for a full Gram matrix)
    gap: float = math.nan  # relative duality gap where the loop stopped (optimality.relative_gap)
    timed_out: bool = False  # stopped at time_limit (its Deadline: solvers.deadline)
    stopped_in: str = ""  # where the time limit stopped it ("" between two steps)
    failure: str = ""  # why a subproblem stopped the loop ("" when none did)
    proved_at: int = 0  # the step at which the active-set proof finished the loop (proof.finished_by_proof; 0: none)
