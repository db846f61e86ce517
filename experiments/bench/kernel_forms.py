r"""The kernel dual's two forms measured: dense Q = Y K Y vs a factor K ~ L L'.

    python -m experiments.bench.kernel_forms                 # timings, a few n and ranks
    python -m experiments.bench.kernel_forms --low-rank      # a low-rank factor's effect on the optimum

`low_rank_effect`: what a truncated factor (rank r < rank K) does to the optimum.
With L from a pivoted Cholesky, E = K - L L' is positive semidefinite (a Schur
complement), so for every alpha the truncated objective
D_r(alpha) = sum alpha - 1/2 ||L'(y*alpha)||^2 is >= the true one, and

    D*  <=  D_r*  <=  D* + 1/2 (y*alpha_r)' E (y*alpha_r),

alpha_r the truncated problem's solution. Each row reports D*, D_r*, their
difference, that bound, ||E||_F / ||K||_F, the true objective at alpha_r and how
the decision values change; the tests assert the inequalities hold.

`time_forms`: wall time of `solvers.api.solve` for the dense form and for factors
of chosen ranks (a factor of rank r is forced with max_rank=r; the full factor is
the one `factorize` picks at rtol 1e-10). These numbers set
formulations.kernel_dual.FACTOR_RANK_FRACTION.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import formulations
from experiments.datasets import nonlinear, overlapping
from formulations.kernels import Kernel, factorize, gram
from formulations.model import KERNEL_DUAL
from formulations.validation import check_labels
from solvers.api import solve
from solvers.closing import close_model, read_model
from solvers.profiles import backend_options, get_profile
from solvers.registry import get_backend


def _solve_form(K, y, C, layer: str, backend: str, profile: str, form: str = "factor", L=None):
    """(alpha*, build seconds, solve seconds, status) of the kernel dual in `form` (a factor: the given L). The
    status is the project's checked one (solvers.closing.close_model, as every solve path), on the Gram matrix of
    the problem solved: K, or L L' (a truncated factor's point is checked as the optimum of the truncated problem;
    low_rank_effect measures how far that is from K's)."""
    start = time.perf_counter()
    model = formulations.build(KERNEL_DUAL, layer, y=y, C=C, K=K, kernel_form=form, L=L)
    build_s = time.perf_counter() - start
    prof = get_profile(profile)
    start = time.perf_counter()
    raw = get_backend(layer, backend).solve(model, backend_options(backend, prof))
    seconds = time.perf_counter() - start
    alpha = read_model(model, layer, KERNEL_DUAL, has_duals=False).get("alpha", np.full(len(y), np.nan))
    solved_K = K if form == "dense" else L @ L.T
    sol = close_model(raw, model, formulation=KERNEL_DUAL, layer=layer, backend=backend, X=np.zeros((len(y), 0)),
                      y=y, C=C, K=solved_K, profile=prof)
    return alpha, build_s, seconds, sol.status


def low_rank_effect(X, y, kernel: Kernel, C: float, ranks, *, layer: str = "cvxpy", backend: str = "clarabel",
                    profile: str = "high") -> pd.DataFrame:
    """One row per rank r: the optimum and decision values with K replaced by a rank-r factor."""
    y, _ = check_labels(y, n=len(X))
    K = gram(kernel, X)
    full = solve(KERNEL_DUAL, X, y, layer=layer, backend=backend, C=C, K=K, profile=profile)
    if full.status != "optimal":
        raise RuntimeError(f"the full kernel dual did not solve: {full.status} {full.message}")
    D_full = full.checks["dual_objective"]
    f_full = full.decision - full.b  # K (y*alpha*): compared without b, which each side recovers itself
    rows = []
    for r in ranks:
        fac = factorize(K, max_rank=int(r))
        alpha, _, seconds, status = _solve_form(K, y, C, layer, backend, profile, L=fac.L)
        u = y * alpha
        E = K - fac.L @ fac.L.T
        v = fac.L.T @ u
        D_r = float(alpha.sum() - 0.5 * v @ v)  # the truncated problem's optimum
        D_true_at_r = float(alpha.sum() - 0.5 * u @ K @ u)  # the true objective at its solution
        f_r = K @ u
        rows.append({
            "n": len(y), "kernel": kernel.label, "C": C, "layer": layer, "backend": backend,
            "rank_requested": int(r), "rank": fac.rank, "residual_fro": fac.residual,
            "residual_2": float(np.linalg.norm(E, 2)), "status": status, "solve_s": seconds,
            "D_full": D_full, "D_rank": D_r, "D_rank_minus_full": D_r - D_full,
            "bound": 0.5 * float(u @ E @ u), "D_true_at_rank_alpha": D_true_at_r,
            "alpha_max_diff": float(np.max(np.abs(alpha - full.alpha))),
            "decision_max_diff": float(np.max(np.abs(f_r - f_full))),
            "sign_agreement": float(np.mean(np.sign(f_r + full.b) == np.sign(full.decision))),
        })
    return pd.DataFrame(rows)


def time_forms(ns, rank_fractions, *, d: int = 10, gamma: float = 0.1, C: float = 1.0,
               solvers=(("cvxpy", "clarabel"), ("pyomo", "clarabel")), profile: str = "default",
               seed: int = 0) -> pd.DataFrame:
    """Build and solve seconds of the dense form and of factors of rank fraction * n.

    Data: two Gaussian blobs in R^d (experiments.datasets.overlapping) with the
    Gaussian kernel; at d = 10, gamma = 0.1 its Gram matrix has full numerical rank.
    Both forms are timed the same way: model construction, then the backend's call
    (for Pyomo this includes reading the model through the standard-form bridge).
    The Gram matrix, Mercer check and factorisation are common to a case and not counted.
    """
    rows = []
    kernel = Kernel("rbf", gamma=gamma)
    for n in ns:
        ds = overlapping(n, d=d, seed=seed)
        y, _ = check_labels(ds.y)
        K = gram(kernel, ds.X)
        factors = {}
        for fraction in rank_fractions:
            r = max(1, int(round(fraction * n)))
            start = time.perf_counter()
            factors[r] = (factorize(K, max_rank=r), time.perf_counter() - start)
        for layer, backend in solvers:
            cases = [("dense", None, 0.0)] + [("factor", fac, fs) for fac, fs in factors.values()]
            for form, fac, factor_s in cases:
                alpha, build_s, solve_s, status = _solve_form(K, y, C, layer, backend, profile, form,
                                                              None if fac is None else fac.L)
                u = y * alpha
                rows.append({"n": n, "layer": layer, "backend": backend, "form": form,
                             "rank": n if fac is None else fac.rank,
                             "residual_fro": 0.0 if fac is None else fac.residual, "factor_s": factor_s,
                             "build_s": build_s, "solve_s": solve_s, "seconds": build_s + solve_s,
                             "status": status, "objective": float(alpha.sum() - 0.5 * u @ K @ u)})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench.kernel_forms", description=__doc__.splitlines()[0])
    parser.add_argument("--low-rank", action="store_true", help="the low-rank factor's effect on the optimum")
    parser.add_argument("--n", type=int, nargs="*", default=[500, 1000, 2000])
    parser.add_argument("--fractions", type=float, nargs="*", default=[0.02, 0.05, 0.1, 0.25, 1.0])
    args = parser.parse_args(argv)
    pd.set_option("display.width", 200)
    if args.low_rank:
        ds = nonlinear(200, seed=0)
        print(low_rank_effect(ds.X, ds.y, Kernel("rbf", gamma=1.0), 1.0, [5, 10, 20, 40]).to_string())
    else:
        print(time_forms(args.n, args.fractions).to_string())


if __name__ == "__main__":
    main()
