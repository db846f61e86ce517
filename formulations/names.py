"""The formulations' names, QPs and LPs alike, used in tables, the CLI and the tests.

Kept apart from `formulations.model` (which imports Pyomo) so that reading a name, as the
command line's ``--help`` and ``--list`` do, costs no solver-stack import.
"""

HARD_PRIMAL = "hard_primal"
SOFT_PRIMAL = "soft_primal"
DUAL = "dual"
KERNEL_DUAL = "kernel_dual"

SEPARABILITY = "separability"  # the feasibility LP y_i (w'x_i + b) >= 1 (formulations.separability)
HULL_INTERSECTION = "hull_intersection"  # its certificate: a point of conv(A) and conv(B)
L1_PRIMAL = "l1_primal"  # the 1-norm SVM (formulations.l1_svm)
L1_DUAL = "l1_dual"  # its LP dual

PRIMAL_FORMULATIONS = (HARD_PRIMAL, SOFT_PRIMAL)
DUAL_FORMULATIONS = (DUAL, KERNEL_DUAL)
QP_FORMULATIONS = (HARD_PRIMAL, SOFT_PRIMAL, DUAL, KERNEL_DUAL)
LP_FORMULATIONS = (SEPARABILITY, HULL_INTERSECTION, L1_PRIMAL, L1_DUAL)
L1_FORMULATIONS = (L1_PRIMAL, L1_DUAL)
