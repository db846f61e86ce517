"""The solve methods of `solvers.api.solve(..., method=...)`, apart from the solver stack: the runner's
command line checks `--method` with them before it reads the data, without importing Pyomo and cvxpy
(importing solvers.api first made a bad CSV's one-line error take seconds)."""

from __future__ import annotations

from formulations.names import DUAL, KERNEL_DUAL, SOFT_PRIMAL

METHODS = ("full", "working_set", "auto")
#: The formulations with a working-set method: the kernel dual and the linear dual (solvers.algorithms.working_set,
#: the linear kernel's rows), the soft primal (solvers.algorithms.primal_working_set). Finite C only.
WORKING_SET_FORMULATIONS = (KERNEL_DUAL, DUAL, SOFT_PRIMAL)
