"""The formulations' names, used in tables, the CLI and the tests.

Kept apart from `formulations.model` (which imports Pyomo) so that reading a name, as the
command line's ``--help`` and ``--list`` do, costs no solver-stack import.
"""

HARD_PRIMAL = "hard_primal"
SOFT_PRIMAL = "soft_primal"
DUAL = "dual"
KERNEL_DUAL = "kernel_dual"

PRIMAL_FORMULATIONS = (HARD_PRIMAL, SOFT_PRIMAL)
DUAL_FORMULATIONS = (DUAL, KERNEL_DUAL)
