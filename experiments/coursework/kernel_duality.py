r"""Strong duality across a nonlinear kernel: the soft primal on Phi(X) vs the kernel dual.

For a kernel with a finite feature map (poly: formulations.feature_maps), the
soft-margin primal on the mapped data

    P* = min 1/2 ||w||^2 + C sum_i xi_i   s.t.  y_i (w' Phi(x_i) + b) >= 1 - xi_i, xi >= 0

and the kernel dual with the matching kernel

    D* = max sum_i alpha_i - 1/2 (y*alpha)' K (y*alpha)   s.t.  y'alpha = 0, 0 <= alpha <= C

are a primal-dual pair (K = Phi Phi'). So P* = D*, the two b* agree, and so do the
decision values f(x) = w' Phi(x) + b = sum_i alpha_i y_i K(x_i, x) + b on the
training points and on any new points. `explicit_map_duality` solves both and
returns one row with the numbers; `kernel_duality_rows` does it for several cases.

The rows carry the columns of the runner's duality table
(experiments.runner.analysis.duality_pairs: group, dataset, kernel, C, profile,
primal_/dual_ formulation, layer, backend, P_star, D_star, gap, rel_gap), with
primal_formulation = "soft_primal[Phi]", plus what only this comparison has:
n_features (columns of Phi), b_primal, b_dual, b_diff, max_decision_diff (training
points), max_decision_diff_new (new points, when given), and both statuses.

For a kernel without a finite map (rbf) there is no primal to solve; the gap is
still reported per solve, from alpha* through K (solvers.checks.compute_checks).

Usage (the runner): pd.concat([pairs, pd.DataFrame(kernel_duality_rows(cases))]).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from formulations.feature_maps import feature_map
from formulations.kernels import Kernel, decision_function
from formulations.scaling import BadScalingWarning
from formulations.validation import check_labels
from solvers.api import solve

PRIMAL_LABEL = "soft_primal[Phi]"

COLUMNS = [
    "group", "dataset", "kernel", "C", "profile",
    "primal_formulation", "primal_layer", "primal_backend",
    "dual_formulation", "dual_layer", "dual_backend",
    "P_star", "D_star", "gap", "rel_gap",
    "n_features", "b_primal", "b_dual", "b_diff", "max_decision_diff", "max_decision_diff_new",
    "primal_status", "dual_status",
]


def explicit_map_duality(
    X,
    y,
    kernel: Kernel,
    C: float,
    *,
    dataset: str = "",
    primal: tuple[str, str] = ("cvxpy", "clarabel"),
    dual: tuple[str, str] = ("cvxpy", "clarabel"),
    profile: str = "high",
    X_new=None,
) -> dict:
    """Solve the soft primal on Phi(X) and the kernel dual with `kernel`; one row of numbers.

    primal, dual: (layer, backend) of each solve. P_star is the primal's objective
    and D_star the dual's, both recomputed by the project at the returned points
    (Solution.checks); gap = P_star - D_star, rel_gap = |gap| / P_star (P_star > 0 for
    every SVM with both classes).
    Decision values: Phi(x) w + b from the primal, sum_i alpha_i y_i K(x_i, x) + b
    from the dual (support vectors only), at X and at X_new if given.
    """
    X = np.asarray(X, dtype=float)
    y_arr, _ = check_labels(y, n=X.shape[0])  # both solves see the same -1/+1 labels
    Phi = feature_map(kernel, X)
    with warnings.catch_warnings():
        # Phi has a constant column and columns of every degree: its scales differ by
        # design, and the kernel dual (which sees only K) is the reference here.
        warnings.simplefilter("ignore", BadScalingWarning)
        p = solve("soft_primal", Phi, y_arr, layer=primal[0], backend=primal[1], C=C, profile=profile)
    d = solve("kernel_dual", X, y_arr, layer=dual[0], backend=dual[1], C=C, kernel=kernel, profile=profile)

    P_star = p.checks.get("primal_objective", math.nan) if p.status == "optimal" else math.nan
    D_star = d.checks.get("dual_objective", math.nan) if d.status == "optimal" else math.nan
    gap = P_star - D_star
    row = {
        "group": f"{dataset} | {kernel.label} | C={C:g} | {profile}",
        "dataset": dataset, "kernel": kernel.label, "C": float(C), "profile": profile,
        "primal_formulation": PRIMAL_LABEL, "primal_layer": primal[0], "primal_backend": primal[1],
        "dual_formulation": "kernel_dual", "dual_layer": dual[0], "dual_backend": dual[1],
        "P_star": P_star, "D_star": D_star, "gap": gap,
        "rel_gap": abs(gap) / abs(P_star) if math.isfinite(gap) and P_star != 0 else math.nan,
        "n_features": Phi.shape[1], "b_primal": p.b, "b_dual": d.b, "b_diff": abs(p.b - d.b),
        "max_decision_diff": math.nan, "max_decision_diff_new": math.nan,
        "primal_status": p.status, "dual_status": d.status,
    }
    if p.status == "optimal" and d.status == "optimal":
        row["max_decision_diff"] = float(np.max(np.abs(p.decision - d.decision)))
        if X_new is not None:
            X_new = np.asarray(X_new, dtype=float)
            f_primal = feature_map(kernel, X_new) @ p.w + p.b
            row["max_decision_diff_new"] = float(np.max(np.abs(f_primal - dual_decision(d, X, y_arr, kernel, X_new))))
    return row


def dual_decision(sol, X, y_pm, kernel: Kernel, X_new) -> np.ndarray:
    """f(x) = sum_{i in SV} alpha_i y_i K(x_i, x) + b for a kernel-dual Solution, y_pm in {-1, +1}."""
    sv = sol.alpha > 0
    coef = sol.alpha[sv] * np.asarray(y_pm, dtype=float)[sv]
    return decision_function(kernel, np.asarray(X, dtype=float)[sv], coef, sol.b, X_new)


@dataclass(frozen=True)
class Case:
    """One comparison: data, a kernel with a finite map, C, and the two solvers."""

    dataset: str
    X: np.ndarray
    y: np.ndarray
    kernel: Kernel
    C: float
    primal: tuple[str, str] = ("cvxpy", "clarabel")
    dual: tuple[str, str] = ("cvxpy", "clarabel")


def kernel_duality_rows(cases, profile: str = "high", X_new=None) -> list[dict]:
    """explicit_map_duality for every Case: rows for the runner's duality table (COLUMNS)."""
    return [
        explicit_map_duality(c.X, c.y, c.kernel, c.C, dataset=c.dataset, primal=c.primal, dual=c.dual,
                             profile=profile, X_new=X_new)
        for c in cases
    ]
