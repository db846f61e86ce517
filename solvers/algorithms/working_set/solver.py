"""`solve`: the working-set loop as one of the project's solves: input validated, run in the solve server's
process under its time limit (solvers.isolation), and its point recovered and checked (solvers.closing) into
a Solution row like solvers.api.solve's."""

from __future__ import annotations

import time
from functools import partial

import numpy as np

from formulations import validation
from formulations.model import DUAL, KERNEL_DUAL
from solvers import blas, isolation
from solvers.solution import ERROR, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, Solution, TIME_LIMIT
from solvers.algorithms.kernel_rows import FullGram, KernelRows, gram_formed
from solvers.algorithms.working_set.loop import decompose
from solvers.algorithms.working_set.optimality import as_rows
from solvers.backends import RECORDS
from solvers.closing import close, unanswered
from solvers.deadline import Deadline
from solvers.profiles import get_profile


def solve(K, y, C, *, backend: str = "clarabel", layer: str = "direct", q: int = 200, tol: float = 1e-6,
          profile: str = "high", options: dict | None = None, time_limit: Deadline | float | None = None,
          validate: bool = True, alpha0: np.ndarray | None = None, stall_floor: float = 1e-3,
          split_from: int = 2000, selection: str = "second_order", shrinking: bool = True,
          linear_X: np.ndarray | None = None, engine: str = "smo") -> Solution:
    """The kernel dual by working sets, recovered and checked like solvers.api.solve's result.

    K: the Gram matrix or a row source (solvers.algorithms.kernel_rows); the checks use it as it is.
    C: one number, or one bound C_i per point (formulations.penalty).
    alpha0: a feasible warm start (decompose); the profile sets the subproblem solver's options.
    linear_X: the data of a linear kernel K = X X'; the result is then the linear dual's (w from alpha),
    closed once with X.
    engine: "smo" (the compiled SMO, then one block through the layer: solvers.algorithms.smo_dual) or "blocks"
    (the loop of blocks); state.ENGINES.
    time_limit: seconds, or a running solvers.deadline.Deadline (decompose); the closing checks stop at it
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


def _unanswered(y, C, ended, *, backend, layer, profile, deadline, linear_X) -> Solution:
    """solve's row when its process gave no answer (solvers.isolation.run_solve)."""
    y, labels = validation.check_labels(y)
    linear = linear_X is not None
    return unanswered(ended, formulation=DUAL if linear else KERNEL_DUAL, layer=layer, backend=backend,
                      X=linear_X if linear else np.zeros((len(y), 0)), y=y, C=validation.check_sample_C(C, len(y)),
                      profile=get_profile(profile), deadline=deadline,
                      extras={"labels": labels.as_dict(), "method": "working_set"})


def _versions(backend: str, engine: str) -> str:
    """The row's backend_version: the subproblems' backend's (as an unanswered row names it), and numba's where the
    compiled SMO takes the steps (as the family's SMO rows name it)."""
    own = RECORDS[backend].version() if backend in RECORDS else ""
    if engine != "smo":
        return own
    import numba  # loaded already: the compiled SMO runs on it

    return "; ".join(filter(None, [own, f"solvers.algorithms.smo (numba {numba.__version__})"]))


def _solve(K, y, C, *, backend, layer, q, tol, profile, options, time_limit, validate, alpha0, stall_floor,
           split_from, selection, shrinking, linear_X, engine="smo") -> Solution:
    """solve, in this process."""
    y, labels = validation.check_labels(y)
    # validate=False: K comes from formulations.kernels already (the O(n^2) checks are not repeated).
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
    status = (OPTIMAL if res.converged else TIME_LIMIT if res.timed_out else OPTIMAL_INACCURATE
              if res.stalled else ERROR if res.failure else ITERATION_LIMIT)
    # the steps done: the one the limit stopped in (or before) is not
    done = f"{res.outer_iterations - 1} steps"
    linear = linear_X is not None
    sol = Solution(
        formulation=DUAL if linear else KERNEL_DUAL, layer=layer, backend=backend, status=status, solver_status=status,
        raw_status=f"working_set: violation {res.violation:.2e}, relative gap {res.gap:.2e} after "
                   f"{res.outer_iterations} steps",
        objective=res.objective, build_s=total - res.subproblem_s, solve_s=res.subproblem_s,
        iterations=res.outer_iterations, profile=prof.name, backend_version=_versions(backend, engine),
        message=deadline.stopped_after(done, res.stopped_in) if res.timed_out else res.failure,
        extras={"labels": labels.as_dict(), **({} if linear else {"kernel_form": "working_set"}), "q": q,
                "kkt_violation": res.violation,
                "warm_start": alpha0 is not None, "smo_steps": res.smo_steps, "start": res.start,
                "polished_blocks": res.polished, "unshrinks": res.unshrinks, "min_active": res.min_active,
                "kernel_rows_computed": res.rows_computed, "selection": selection, "loop_gap": res.gap,
                "proved_at_step": res.proved_at,
                "row_source": type(K).__name__, "gram_formed": gram_formed(K)},
    )
    with blas.one_thread():  # as the loop (decompose): the proved optimum's free-point system is small
        if linear:
            return close(sol, {"alpha": res.alpha}, X=linear_X, y=y, C=C, profile=prof, deadline=deadline)
        return close(sol, {"alpha": res.alpha}, X=np.zeros((len(y), 0)), y=y, C=C, K=K, Ku=res.Ku, profile=prof,
                     deadline=deadline)
