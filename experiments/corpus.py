"""The verification corpus: does `optimal` mean "within the profile's tolerance of the optimum"?

Sixteen small problems chosen to break scale-dependent checks (features in other units,
C from 1e-5 to 1e4, d >> n, kernels at tiny and large C, the hard margin on rescaled data),
each solved by every available (layer, backend) under the `default` and `high` profiles:
512 solves with all sixteen pairs. Each row is compared with a tight reference: Clarabel at
`high` through cvxpy, polished to the proved optimum (solvers.reference.polish), whose
decision values and objective are exact to rounding. A row marked `optimal` must be within
the profile's check tolerance of it in objective, w, b (the interval of optimal b's) and
decision values; `python -m experiments.corpus` prints the table, tests/ asserts it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from experiments.datasets import example_5_1, exercise_5_4, gendata, nonlinear, overlapping, sparse_features
from formulations.kernels import Kernel, gram
from formulations.scaling import BadScalingWarning
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution
from solvers.checks import decision_scale, w_scale
from solvers.api import solve
from solvers.profiles import get_profile
from solvers.reference import Gram, Reference, polish
from solvers.registry import available_backends, takes_time_limit

PROFILES = ("default", "high")


@dataclass(frozen=True)
class Problem:
    name: str
    formulation: str
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    C: float | None = None
    kernel: Kernel | None = None


def problems() -> list[Problem]:
    e51, e54 = example_5_1(), exercise_5_4()
    ov, sp = overlapping(30, seed=3), sparse_features(20, d=200, seed=1)
    nl, gd = nonlinear(30, seed=2), gendata(12, 12, seed=4)
    rbf = Kernel("rbf", gamma=1.0)
    return [
        Problem("ex5.1 hard", "hard_primal", e51.X, e51.y),
        Problem("ex5.1 x1e3 hard", "hard_primal", 1e3 * e51.X, e51.y),
        Problem("ex5.1 x1e-3 hard", "hard_primal", 1e-3 * e51.X, e51.y),
        Problem("ex5.2 dual", "dual", e51.X, e51.y),
        Problem("ex5.2 x1e3 dual", "dual", 1e3 * e51.X, e51.y),
        Problem("ex5.4 C=10", "soft_primal", e54.X, e54.y, 10.0),
        Problem("ex5.4 x1e-3 dual C=10", "dual", 1e-3 * e54.X, e54.y, 10.0),
        Problem("overlap C=1e-5", "soft_primal", ov.X, ov.y, 1e-5),
        Problem("overlap dual C=1e-5", "dual", ov.X, ov.y, 1e-5),
        Problem("overlap C=1e4", "soft_primal", ov.X, ov.y, 1e4),
        Problem("overlap x1e3 dual C=1e4", "dual", 1e3 * ov.X, ov.y, 1e4),
        Problem("d>>n C=1", "soft_primal", sp.X, sp.y, 1.0),
        Problem("d>>n dual C=1", "dual", sp.X, sp.y, 1.0),
        Problem("rbf C=1", "kernel_dual", nl.X, nl.y, 1.0, rbf),
        Problem("rbf C=1e-5", "kernel_dual", nl.X, nl.y, 1e-5, rbf),
        Problem("rbf gendata C=100", "kernel_dual", gd.X, gd.y, 100.0, Kernel("rbf", gamma=0.5)),
    ]


#: Seconds a solve may take where the backend has a time limit: HiGHS's QP solver can stall for
#: minutes even on a 6-point soft margin at a tiny C (seen with highspy 1.16).
TIME_LIMIT = 20.0


def _solve(p: Problem, layer: str, backend: str, profile: str) -> Solution:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BadScalingWarning)
        return solve(p.formulation, p.X, p.y, layer=layer, backend=backend, C=p.C, kernel=p.kernel,
                     profile=profile, time_limit=TIME_LIMIT if takes_time_limit(layer, backend) else None)


def reference(p: Problem) -> Reference:
    """The proved optimum of `p`, polished from a tight Clarabel solve (raises if none is proved)."""
    sol = _solve(p, "cvxpy", "clarabel", "high")
    C = math.inf if p.C is None else p.C
    alpha = sol.alpha if sol.alpha is not None else sol.extras.get("unverified", {}).get("alpha")
    K = gram(p.kernel, p.X) if p.formulation == "kernel_dual" else None
    ref = polish(Gram(None if K is not None else p.X, K), p.y, C, np.asarray(alpha), sol.decision)
    if not ref.ok:
        raise RuntimeError(f"no proved optimum for {p.name}: {ref.reason}")
    return ref


def errors(sol: Solution, ref: Reference, p: Problem) -> dict:
    """The row's distance to the reference: objective (relative), w (relative to solvers.checks.w_scale),
    b and f (relative to max |f*|, solvers.checks.decision_scale)."""
    if sol.decision is None or not math.isfinite(sol.b):
        return {"err_objective": math.nan, "err_w": math.nan, "err_b": math.nan, "err_f": math.nan}
    scale = decision_scale(ref.g + ref.b)
    err_b = max(ref.b_lower - sol.b, sol.b - ref.b_upper, 0.0) / scale
    w_ref = ref.weights(p.X, p.y) if p.formulation != "kernel_dual" else None
    return {
        "err_objective": abs(sol.objective - ref.objective) / ref.objective,
        "err_w": float(np.linalg.norm(sol.w - w_ref)) / w_scale(w_ref, p.X, scale) if w_ref is not None else math.nan,
        "err_b": err_b,
        "err_f": float(np.max(np.abs(sol.decision - sol.b - ref.g))) / scale + err_b,
    }


def run_problem(p: Problem, pairs=None) -> pd.DataFrame:
    """Every (layer, backend, profile) on `p`, with each row's errors against the reference."""
    ref = reference(p)
    rows = []
    for layer, backend in pairs or available_backends():
        for profile in PROFILES:
            sol = _solve(p, layer, backend, profile)
            rows.append({"problem": p.name, "formulation": p.formulation, "layer": layer, "backend": backend,
                         "profile": profile, "tol": get_profile(profile).check_tol, "status": sol.status,
                         "claimed": sol.solver_status, **errors(sol, ref, p)})
    return pd.DataFrame(rows)


def wrong_optimal(df: pd.DataFrame) -> pd.DataFrame:
    """Rows marked `optimal` that are more than their profile's tolerance from the reference."""
    ok = df["status"] == OPTIMAL
    worst = df[["err_objective", "err_w", "err_b", "err_f"]].max(axis=1, skipna=True)
    return df[ok & ~(worst <= df["tol"])]


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per profile: solves, claimed optima, verified optima, and how far the others were."""
    def one(g):
        claimed = g["claimed"].isin([OPTIMAL, OPTIMAL_INACCURATE])
        worst = g[["err_objective", "err_w", "err_b", "err_f"]].max(axis=1, skipna=True)
        refused = claimed & (g["status"] != OPTIMAL)
        return pd.Series({"solves": len(g), "claimed optimal": int(claimed.sum()),
                          "verified optimal": int((g["status"] == OPTIMAL).sum()),
                          "refused, off by > tol": int((refused & (worst > g["tol"])).sum()),
                          "refused, within tol": int((refused & (worst <= g["tol"])).sum()),
                          "wrong optimal": len(wrong_optimal(g))})
    return df.groupby("profile").apply(one, include_groups=False)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from tqdm import tqdm

    parser = argparse.ArgumentParser(
        prog="python -m experiments.corpus", description="The verification corpus: 16 problems x every "
        "(layer, backend) x 2 profiles, each row against a proved reference; prints the summary table and any "
        "`optimal` row that is off (exit 1 if there is one). A few minutes on 2 cores.")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    todo = problems()
    df = pd.concat([run_problem(p) for p in tqdm(todo, desc="corpus problems", disable=args.no_progress or None)],
                   ignore_index=True)
    print(summary(df).to_markdown())
    bad = wrong_optimal(df)
    if len(bad):
        print(bad.to_markdown())
    return 1 if len(bad) else 0


if __name__ == "__main__":
    raise SystemExit(main())
