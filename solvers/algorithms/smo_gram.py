r"""The kernel dual of a Gram matrix made from checked data, by the compiled SMO, closed by the project's checks.

The estimator's one-vs-one fit (experiments.estimator) forms one Gram matrix per fit from data it has checked
once, and solves each pair of classes on its block: no per-pair validation, model or Gram matrix. The pair's
point goes through the same closing step as every solve (solvers.closing.close: the residuals, the kernel
values recomputed by another formula from the block's data, the optimum proved from the point's active set,
the review of the solver's claim), so a row is `optimal` here exactly when it would be anywhere else.

SMO stops at a violation m - M <= tol of the KKT conditions (solvers.algorithms.smo). It starts TIGHTEN times
below the profile's check tolerance: the checks measure the decision values relative to their largest, so a
violation at the bar itself often misses it and the point would be closed twice. A point the checks do not
verify is taken on from where it stopped, with the tolerance TIGHTEN times smaller, down to MIN_TOL. What still
is not verified is returned as the checks judged it (`optimal_inaccurate`), for the caller to solve another way.
"""

from __future__ import annotations

import time

import numpy as np

from formulations import penalty
from formulations.model import KERNEL_DUAL
from solvers.solution import ITERATION_LIMIT, OPTIMAL, Solution, TIME_LIMIT
from solvers.algorithms.kernel_rows import FullGram, GramBlock
from solvers.algorithms.smo import smo
from solvers.algorithms.working_set.optimality import max_violation
from solvers.closing import close
from solvers.deadline import NEVER, Deadline
from solvers.profiles import get_profile

#: Each retry's SMO tolerance is this many times smaller than the last one's.
TIGHTEN = 100.0
#: The tightest tolerance SMO is asked for (margin units): beyond it the point's rounding decides, not SMO.
MIN_TOL = 1e-10

LAYER, BACKEND = "direct", "smo"


def first_run(source: FullGram | GramBlock, y: np.ndarray, C, profile: str = "default", max_iter: int | None = None):
    """SMO's first run of `solve` (no deadline): what solve(first=...) takes, made ahead (on another thread while
    the previous pair is closed: SMO's loop holds none of the interpreter's lock)."""
    start = time.perf_counter()
    res = smo(source.row_cache(), y, C, tol=get_profile(profile).check_tol / TIGHTEN,
              max_iter=10**9 if max_iter is None else max_iter)
    return res, time.perf_counter() - start


def solve(source: FullGram | GramBlock, y: np.ndarray, C, *, profile: str = "default", max_iter: int | None = None,
          budget: int | None = None, deadline: Deadline = NEVER, first=None) -> Solution:
    """The kernel dual max sum alpha - 1/2 u'Ku (u = y alpha), y'alpha = 0, 0 <= alpha_i <= C_i, on `source` (the
    Gram matrix and, for the checks' recomputed entries, its kernel and data), y in {-1, +1}, C one finite
    number or one per point. The caller has checked all three. max_iter: SMO's steps in all (SVC's max_iter);
    a fit it stops is an `iteration_limit` row with its point. budget (not with max_iter): the steps after which
    the caller would rather solve the problem another way; SMO stopped there claims the optimum where its
    violation over every point is within the profile's tolerance (TIGHTEN times looser than it aims at), and the
    checks judge that claim as any other; else the row is `iteration_limit` without a point (_handed_back). first:
    a future of first_run's answer for these arguments and step limit (then no deadline), taken as the first run."""
    prof = get_profile(profile)
    tol = prof.check_tol / TIGHTEN
    limit = max_iter if budget is None else budget
    K = None  # the rows SMO reads here (not where the first run was made ahead: it has its own)
    alpha = grad = None
    steps, in_smo, began = 0, 0.0, time.perf_counter()
    while True:
        left = None if limit is None else limit - steps
        if first is not None:  # the run made ahead: its own seconds, not the wait for it
            (res, seconds), first = first.result(), None
        else:
            K = source.row_cache() if K is None else K  # a block read in place, through its rows; a whole K as it is
            start = time.perf_counter()
            res = smo(K, y, C, alpha0=alpha, grad0=grad, tol=tol, max_iter=10**9 if left is None else left,
                      deadline=deadline)
            seconds = time.perf_counter() - start
        in_smo += seconds
        steps += res.iterations
        within_budget = False
        if budget is not None and not (res.converged or res.timed_out):
            violation = max_violation(res.alpha, res.grad, y, C, 0.0)
            if violation > prof.check_tol:
                return _handed_back(violation, steps, in_smo, prof)
            within_budget = True
        sol = _closed(res, source, y, C, prof, steps, tol, in_smo, deadline, within_budget)
        sol.build_s = time.perf_counter() - began - in_smo  # the closing checks
        if sol.status == OPTIMAL or not res.converged or tol <= MIN_TOL:
            return sol
        alpha, grad, tol = res.alpha, res.grad, max(tol / TIGHTEN, MIN_TOL)


def _handed_back(violation: float, steps: int, seconds: float, prof) -> Solution:
    """SMO stopped at the caller's budget short of the profile's tolerance: an `iteration_limit` row with no point,
    not closed (the checks' cost is the caller's to spend on its other way)."""
    said = f"smo: violation {violation:.2e} after {steps} steps, the budget (tol {prof.check_tol:.0e})"
    return Solution(formulation=KERNEL_DUAL, layer=LAYER, backend=BACKEND, status=ITERATION_LIMIT,
                    solver_status=ITERATION_LIMIT, raw_status=said, iterations=steps, solve_s=seconds,
                    profile=prof.name, message=f"{said}: no point kept", extras={"method": "smo"})


def _closed(res, source: FullGram, y, C, prof, steps: int, tol: float, seconds: float, deadline: Deadline,
            within_budget: bool = False):
    """The SMO point as a Solution, closed (solvers.closing.close), SMO claiming its optimum where it converged or
    stopped at its budget within the profile's tolerance (within_budget). Its claimed objective is D(alpha) from
    SMO's own gradient (Q alpha = G + 1), which the checks compare with theirs."""
    status = OPTIMAL if res.converged or within_budget else TIME_LIMIT if res.timed_out else ITERATION_LIMIT
    objective = float(res.alpha.sum() - 0.5 * res.alpha @ (res.grad + 1.0))
    sol = Solution(formulation=KERNEL_DUAL, layer=LAYER, backend=BACKEND, status=status, solver_status=status,
                      raw_status=f"smo: violation {res.violation:.2e} after {steps} steps (tol {tol:.0e})",
                      objective=objective, iterations=steps, solve_s=seconds, profile=prof.name,
                      extras={"method": "smo", "smo_tol": tol, "kernel": source.kernel.label,
                              "psd": True, "mercer_method": f"by theorem ({source.kernel.name})"})
    return close(sol, {"alpha": res.alpha}, X=np.zeros((len(y), 0)), y=y, C=penalty.as_float(C), K=source, profile=prof,
                 deadline=deadline)
