r"""Working-set decomposition of the kernel dual (SVMlight's scheme around a general QP solver).

In minimisation form, with Q = Y K Y and the gradient g = Q alpha - 1,

    min  f(alpha) = 1/2 alpha' Q alpha - 1' alpha    s.t.  y' alpha = 0,  0 <= alpha_i <= C_i,

with C_i = C (the notes' one C) or each point's own bound (sample or class weights, formulations.penalty).
Each outer step solves the kernel dual restricted to a block of points, the others fixed, with one of the
project's backends; the loop stops when no pair of points violates the KKT conditions by more than tol and
the duality gap is closed; then the point is recovered and checked like any other.

One module per job:

- optimality:  the gradient, the violating pairs m(alpha) - M(alpha), the duality gap, the snap onto bounds
- subproblems: a block's QP through the solver alone, cvxpy or Pyomo (its models:
               formulations.kernel_dual.build_block_cvxpy / build_block_pyomo), scaled, polished, snapped
- polish:      a block's exact solution from its active set (a primal active-set method)
- pair_steps:  exact two-point (SMO) steps on the maximal violating pair
- start:       where the loop starts: a checked warm start alpha0, or the split start from Nystrom margins
- selection:   which points form the next block, and shrinking
- proof:       the optimum proved from the active set (the tail's early end, the final settle)
- state:       the loop's settings, running state and result
- loop:        the loop itself, `decompose`
- solver:      `solve`: the loop's point as a checked Solution row, in the solve server's process
"""

from solvers.algorithms.working_set.loop import decompose
from solvers.algorithms.working_set.optimality import kkt_violation
from solvers.algorithms.working_set.solver import solve
from solvers.algorithms.working_set.start import check_alpha0, scaled_warm_start
from solvers.algorithms.working_set.state import WorkingSetOptions, WorkingSetResult, block_size

__all__ = ["solve", "decompose", "WorkingSetOptions", "WorkingSetResult", "block_size", "check_alpha0",
           "scaled_warm_start", "kkt_violation"]
