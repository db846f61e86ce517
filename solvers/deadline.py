"""When a solve must return: its `time_limit` as one clock that runs from the call's start to the row.

A time limit is the user's promise of when the call returns, not a budget for the backend alone: a limit
checked between subproblems only is overrun by the step in progress (a subproblem with no limit of its own, a
block's polish). So every stage that can take long looks at the same Deadline (solvers.api starts it with the
call; a working set called on its own starts its own): each subproblem is given the time that remains (a
backend with a time limit of its own stops there) and its point is not taken if it ran into the limit (the
split start's restricted dual is one); the soft primal's smoothed start, the blocks' polish, the SMO steps and
the proofs stop between their steps; the closing checks do not prove what the time is up for (the row is then
`time_limit`, never `optimal`). How closely calls keep their limits: docs/benchmarks.md.
What can still run past the limit is one piece of work that cannot be interrupted: a backend's setup (OSQP's
factorization of a large block), a model's build, a block's kernel rows, one round of a proof (an SVD of the
free points' rows), or the whole last subproblem of a backend
without a time limit of its own (PIQP, ProxQP), which the row's message then names. solvers.api runs a solve with
a limit in a process killed shortly past it (solvers.isolation), so that such a step ends there too.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Deadline:
    """A time limit in seconds from `began` (the clock's time now unless given) on `clock` (time.perf_counter
    unless a test gives its own); limit None: no limit (remaining() is then None and passed() never true)."""

    def __init__(self, limit: float | None, clock: Callable[[], float] = time.perf_counter,
                 began: float | None = None):
        self.limit, self.clock = limit, clock
        self.began = clock() if began is None else began
        self.server_start_s = 0.0  # of the time so far, the wait for the solve server's start (solvers.isolation)

    @classmethod
    def of(cls, time_limit: Deadline | float | None) -> Deadline:
        """A running Deadline as it is (the caller's clock started first), or a new one from seconds or None."""
        return time_limit if isinstance(time_limit, Deadline) else cls(time_limit)

    def elapsed(self) -> float:
        return self.clock() - self.began

    def remaining(self) -> float | None:
        """Seconds left (0 once passed), None without a limit."""
        return None if self.limit is None else max(0.0, self.limit - self.elapsed())

    def passed(self) -> bool:
        return self.limit is not None and self.elapsed() >= self.limit

    def for_backend(self) -> float | None:
        """The time limit to hand a backend that starts now: what remains, but at least MIN_BACKEND_LIMIT (OSQP
        refuses a time limit of 0, SCS reads 0 as none), None without a limit. The working sets start no
        subproblem once passed(); a whole QP given the least limit stops at its first check (solvers.api
        does not start it either)."""
        left = self.remaining()
        return None if left is None else max(left, MIN_BACKEND_LIMIT)

    def stopped(self, where: str) -> str:
        """How a row stopped by it says so: the limit, where, and how long the call ran by then."""
        return f"stopped at the time limit ({self.limit:g} s) {where}, {self.elapsed():.3g} s in all"

    def stopped_after(self, done: str, where: str = "") -> str:
        """What a working set stopped by it says: what it had `done`, `where` it stopped ("" between two steps;
        registry.subproblem_stop's words in one), and how long the call ran by then. Between two steps, it says so
        (a message "after 15 steps, 20 s in all" named no place)."""
        where = where or ("before the first" if done.startswith("0 ") else "between two of them")
        return self.stopped(f"after {done}, {where}")


#: The least time limit handed to a backend (Deadline.for_backend): a positive number every backend accepts.
MIN_BACKEND_LIMIT = 1e-3

#: No limit, for the functions that take an optional Deadline.
NEVER = Deadline(None)
