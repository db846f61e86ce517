r"""1-norm vs 2-norm SVM on the same data, and the LP timings.

    1-norm SVM (an LP, solvers.lp):   min ||w||_1 + C sum_i xi_i
    2-norm SVM (a QP, solvers.api):   min 1/2 ||w||^2 + C sum_i xi_i
    both s.t. y_i (w'x_i + b) >= 1 - xi_i, xi >= 0.

The 1-norm penalty puts the optimum at a vertex where most w_j are exactly 0
(features dropped); the 2-norm penalty shrinks every w_j but zeroes none.
`compare_l1_l2` returns one row per model: accuracy, nonzero weights (counted
as |w_j| > nz_rel_tol * max_k |w_k|), support vectors (alpha_i not at 0 by the LP checks'
bound classification, solvers.lp.l1_checks, for the LP; the project's support tolerance for the QP) and times.

`lp_timings` measures build and solve times of the two LPs through HiGHS
(simplex and interior point) in both layers, for the scaling benchmark.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.datasets import load_dataset
from experiments.progress import Progress
from formulations import validation
from formulations.errors import SVMInputError
from formulations.l1_svm import L1_DUAL, L1_PRIMAL
from solvers.api import solve
from solvers.lp import NZ_REL_TOL, setting_label, solve_lp

COLUMNS = ["dataset", "model", "formulation", "layer", "setting", "status", "C", "n", "d", "objective",
           "nnz_w", "n_sv", "train_accuracy", "test_accuracy", "build_s", "solve_s", "rel_duality_gap",
           "kept_features"]


def _accuracy(X, y, w, b) -> float:
    if X is None or w is None or not np.all(np.isfinite(w)):
        return math.nan
    return float(np.mean(np.sign(X @ w + b) == y))


def _test_signs(y_test, labels, n: int) -> np.ndarray:
    """Test labels mapped to -1/+1 with the training set's label map."""
    arr = np.asarray(y_test).ravel()
    if arr.shape[0] != n:
        raise SVMInputError(f"X_test has {n} rows but y_test has {arr.shape[0]} labels")
    unknown = set(np.unique(arr).tolist()) - {labels.negative, labels.positive}
    if unknown:
        raise SVMInputError(
            f"y_test has labels {sorted(unknown)} not seen in training ({labels.negative}, {labels.positive})")
    return np.where(arr == labels.positive, 1.0, -1.0)


def compare_l1_l2(
    X,
    y,
    C: float,
    *,
    X_test=None,
    y_test=None,
    layer: str = "pyomo",
    l1_backend: str = "highs",
    method: str | None = "simplex",
    l1_formulation: str = L1_PRIMAL,
    l2_layer: str | None = None,
    l2_backend: str = "clarabel",
    l2_formulation: str = "soft_primal",
    nz_rel_tol: float = NZ_REL_TOL,
    profile: str = "default",
    time_limit: float | None = None,
    dataset: str = "",
) -> pd.DataFrame:
    """Fit the 1-norm and the 2-norm linear SVM with the same C on the same data; one row each.

    The 2-norm model defaults to Clarabel (HiGHS's QP solver does not scale to
    large n); `l2_layer` defaults to `layer`.
    """
    X, y, labels = validation.check_data(X, y)
    if (X_test is None) != (y_test is None):
        raise SVMInputError("give both X_test and y_test, or neither")
    if X_test is not None:
        X_test = validation.check_X(X_test, "X_test")
        if X_test.shape[1] != X.shape[1]:
            raise SVMInputError(f"X_test has {X_test.shape[1]} features but X has {X.shape[1]}")
        y_test = _test_signs(y_test, labels, X_test.shape[0])
    n, d = X.shape
    rows = []
    l1 = solve_lp(l1_formulation, X, y, layer=layer, backend=l1_backend, C=C, method=method, profile=profile,
                  time_limit=time_limit, nz_rel_tol=nz_rel_tol)
    l2 = solve(l2_formulation, X, y, layer=l2_layer or layer, backend=l2_backend, C=C, profile=profile,
               time_limit=time_limit)
    for model, sol, setting in (("1-norm SVM", l1, setting_label(l1_backend, method)), ("2-norm SVM", l2, l2_backend)):
        w = sol.w
        ok = w is not None and np.all(np.isfinite(w))
        kept = np.flatnonzero(np.abs(w) > nz_rel_tol * np.abs(w).max()).tolist() if ok and np.abs(w).max() > 0 else []
        rows.append({
            "dataset": dataset, "model": model, "formulation": sol.formulation, "layer": sol.layer, "setting": setting,
            "status": sol.status, "C": float(C), "n": n, "d": d, "objective": sol.objective,
            "nnz_w": len(kept) if ok else -1,
            "n_sv": int(sol.checks.get("n_sv", -1)) if sol.checks else -1,
            "train_accuracy": _accuracy(X, y, w, sol.b), "test_accuracy": _accuracy(X_test, y_test, w, sol.b),
            "build_s": sol.build_s, "solve_s": sol.solve_s,
            "rel_duality_gap": sol.checks.get("rel_duality_gap", math.nan) if sol.checks else math.nan,
            "kept_features": kept,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def compare_on_dataset(name: str, C: float, *, test_fraction: float = 0.3, seed: int = 0, dataset_params=None,
                       **kwargs) -> pd.DataFrame:
    """`compare_l1_l2` on a registered data set, with a stratified train/test split (seeded)."""
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise SVMInputError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    ds = load_dataset(name, **(dataset_params or {}))
    X_tr, X_te, y_tr, y_te = train_test_split(ds.X, ds.y, test_size=test_fraction, random_state=seed, stratify=ds.y)
    return compare_l1_l2(X_tr, y_tr, C, X_test=X_te, y_test=y_te, dataset=ds.name, **kwargs)


def lp_timings(
    ns=(1_000, 10_000, 100_000),
    d: int = 20,
    *,
    C: float = 1.0,
    layers=("pyomo", "cvxpy"),
    methods=("simplex", "ipm"),
    formulations=(L1_PRIMAL, L1_DUAL),
    n_informative: int = 3,
    seed: int = 0,
    time_limit: float | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Build and solve times of the 1-norm LPs through HiGHS on `sparse_features(n, d)`.

    One row per (n, layer, method, formulation); `objective` lets the primal and
    dual rows of one (n, layer, method) be compared (`rel_duality_gap` is the
    project's gap at the returned pair). `solve_s` is the adapter's time: for
    Pyomo it includes handing the model to HiGHS, for cvxpy its compilation.
    """
    jobs = [(n, layer, method, f) for n in ns for layer in layers for method in methods for f in formulations]
    rows = []
    data = {}
    bar = Progress(len(jobs), enabled=progress, unit="solve", desc="LP timings")
    for n, layer, method, f in jobs:
        if n not in data:
            data[n] = load_dataset("sparse_features", n=n, d=d, n_informative=n_informative, seed=seed)
        ds = data[n]
        sol = solve_lp(f, ds.X, ds.y, layer=layer, backend="highs", method=method, C=C, time_limit=time_limit)
        rows.append({
            "n": n, "d": d, "C": C, "layer": layer, "setting": setting_label("highs", method), "formulation": f,
            "status": sol.status, "raw_status": sol.raw_status, "objective": sol.objective,
            "rel_duality_gap": sol.checks.get("rel_duality_gap", math.nan) if sol.checks else math.nan,
            "nnz_w": sol.checks.get("nnz_w", -1) if sol.checks else -1,
            "build_s": sol.build_s, "solve_s": sol.solve_s,
        })
        bar.done(f"{f} {layer}/highs {method} n={n}: {sol.status} ({sol.solve_s:.2f} s)")
    bar.close()
    return pd.DataFrame(rows)
