"""Group-level checks derived from the results table (never from a solver's claims).

A *group* is one SVM problem: (dataset, kernel, C, profile). Inside a group every
formulation, layer and backend solves the same problem, so:

* strong duality across formulations: for every verified primal solve (hard or
  soft primal) and every verified dual solve (dual, kernel_dual), P* from the
  primal's point, D* from the dual's point (both recomputed by solvers.checks),
  gap = P* - D*. Weak duality says gap >= 0 up to round-off; strong duality says
  it is ~0 (``duality_pairs``, written to duality.csv);
* agreement: the spread (max - min) of the objective, w* and b* over the group's
  verified rows, and the distance to scikit-learn's SVC (libsvm) on the same
  data, kernel and C (hard margin: C = 1e8) (``agreement``);
* the primal's margin-constraint multipliers against the dual's alpha*
  (``multipliers``). alpha* need not be unique (degenerate problems), so a
  difference here is a finding, not automatically an error.

The LP formulations form groups of their own (the 1-norm SVM is another problem
than the 2-norm SVM, and separability has no optimum to compare): the group's
second field is ``l1-norm`` or ``separability`` instead of the kernel. The 1-norm
pairs join the strong-duality table (P* of l1_primal against D* of l1_dual);
``l1_pairs`` holds, per LP setting, both optima and the multipliers of one LP
against the solution of the other, computed from the sweep's rows;
``separability_verdicts`` the separability rows.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.runner.folder import read_run_meta, read_separability, write_whole
from experiments.runner.results_table import from_json
from experiments.runner.suites import L1_DUAL, L1_FORMULATIONS, L1_PRIMAL, LP_FORMULATIONS, SEPARABILITY
from experiments.separability import SeparabilityResult
from formulations.kernels import Kernel, exact_number, gram
from formulations.model import DUAL_FORMULATIONS as QP_DUALS
from formulations.model import PRIMAL_FORMULATIONS as QP_PRIMALS
from solvers.lp import l1_objectives

PRIMAL_FORMULATIONS = QP_PRIMALS + (L1_PRIMAL,)
DUAL_FORMULATIONS = QP_DUALS + (L1_DUAL,)
FAMILY = {L1_PRIMAL: "l1-norm", L1_DUAL: "l1-norm", SEPARABILITY: "separability"}

HARD_MARGIN_SVC_C = 1e8  # libsvm has no C = inf; a C no alpha_i reaches gives the hard margin
SVC_MAX_ITER = 1_000_000  # about a second here; an infeasible hard margin would otherwise run for ever
#: The largest n given an SVC reference: libsvm at tol 1e-10 is O(n) per iteration, and at large n the
#: reference alone takes longer than every solve of the run together (docs/benchmarks.md). Above it the
#: report says so (the benchmark compares with LIBSVM).
SVC_REFERENCE_MAX_N = 10_000
#: Rows of the support vectors' kernel matrix formed at a time for the reference's dual objective.
_KERNEL_BLOCK = 1_000
OPTIMAL = "optimal"


def with_groups(df: pd.DataFrame) -> pd.DataFrame:
    """Add `group` (the problem) and `solver` (layer/backend, with HiGHS's LP method: layer/highs-simplex).

    A frame that has both already (this function's output, or rows of it) is returned as it is,
    not copied: a report groups its table once and hands the result to every table and figure.
    """
    if "group" in df.columns and "solver" in df.columns:
        return df
    df = df.copy()
    family = [FAMILY.get(f, k) for f, k in zip(df.formulation, df.kernel)]
    df["group"] = [f"{d} | {k} | C={exact_number(c)} | {p}" for d, k, c, p in zip(df.dataset, family, df.C, df.profile)]
    method = df["method"].fillna("").astype(str) if "method" in df.columns else pd.Series("", index=df.index)
    df["solver"] = df.layer + "/" + df.backend + np.where(method != "", "-" + method, "")
    if "method_used" in df.columns:  # the report says which method produced each row
        df["solver"] += np.where(df["method_used"].fillna("").astype(str) == "working_set", " (working set)", "")
    return df


def verdict(value) -> bool | None:
    """A `separable` cell (True / False / NA, numpy or pandas) as True / False / None."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value)


def separable_mask(df: pd.DataFrame, value: bool) -> pd.Series:
    """Rows whose `separable` cell is `value` (NA counts as neither)."""
    if "separable" not in df.columns:
        return pd.Series(False, index=df.index)
    return df["separable"].map(lambda v: verdict(v) is value).astype(bool)


def qp_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The 2-norm SVM rows (the QP formulations), without the LP ones."""
    return df[~df.formulation.isin(LP_FORMULATIONS)]


def _group_order(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df.sort_values("order").group))


# ------------------------------------------------------------------ data of a run


def load_meta(out_dir: str | Path) -> dict:
    """A run folder's run.json ({} without one; folder.RunFolderError if it is not as the runner writes it)."""
    return read_run_meta(Path(out_dir))


def load_data(out_dir: str | Path, meta: dict | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{dataset name: (X, y)} from the copies a run saves under data/ (meta: run.json, if already read)."""
    out = Path(out_dir)
    meta = load_meta(out) if meta is None else meta
    data = {}
    for name, info in meta.get("datasets", {}).items():
        path = out / info["file"]
        if path.exists():
            with np.load(path) as npz:
                data[name] = (npz["X"], npz["y"])
    return data


@dataclass(frozen=True)
class DataNames:
    """How the user named a data set's columns and classes (x1, x2, ... and A (+1) / B (-1) by default)."""

    features: tuple[str, ...]
    positive: str = "A (+1)"
    negative: str = "B (-1)"

    def feature(self, j: int) -> str:
        return self.features[j] if j < len(self.features) else f"x{j + 1}"


def _csv_feature_columns(source: str, label_map: dict, d: int) -> list[str] | None:
    """The feature columns of the CSV a run read (its header, without the label column), if it is still there
    and still has d of them: run.json keeps the CSV's path and label map, not its column names."""
    path = Path(source or "")
    if path.suffix.lower() != ".csv" or not path.is_file():
        return None
    try:
        head = pd.read_csv(path, nrows=200)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    keys = set(map(str, label_map))
    # the label column: the one whose values are the label map's names (unique, or the names stay x1, x2, ...)
    labels = [c for c in head.columns if keys and set(head[c].astype(str)) <= keys]
    if len(labels) != 1 or head.shape[1] - 1 != d:
        return None
    return [str(c) for c in head.columns if c != labels[0]]


def data_names(meta: dict) -> dict[str, DataNames]:
    """{dataset: DataNames} from run.json's `datasets` entries: the label map's two names (a CSV's own
    labels), and the feature names (a `features` list if the entry has one, else the CSV's header)."""
    names = {}
    for name, info in (meta.get("datasets") or {}).items():
        if not isinstance(info, dict):
            continue
        d = int(info.get("d") or 0)
        label_map = info.get("label_map") or {}
        features = (info.get("features") or _csv_feature_columns(info.get("source", ""), label_map, d)
                    or [f"x{j + 1}" for j in range(d)])
        by_sign = {int(v): str(k) for k, v in label_map.items()}
        own = label_map and set(by_sign) == {-1, 1} and set(label_map) != {"-1", "1", "-1.0", "1.0"}
        names[name] = DataNames(tuple(map(str, features)),
                                positive=f"{by_sign[1]} (+1)" if own else "A (+1)",
                                negative=f"{by_sign[-1]} (-1)" if own else "B (-1)")
    return names


def load_names(out_dir: str | Path) -> dict[str, DataNames]:
    """data_names of a run folder's run.json ({} without one)."""
    return data_names(load_meta(out_dir))


def load_separability(out_dir: str | Path) -> dict:
    """{dataset: record} of the run's separability check (experiments.run writes it), {} without one."""
    return read_separability(Path(out_dir))


def result_from_record(rec: dict):
    """experiments.runner.sweep.certificate_record -> a SeparabilityResult (for format_certificate / plot_certificate)."""
    def arr(v):
        return None if v is None else np.asarray(v, dtype=float)

    res = SeparabilityResult(separable=rec.get("separable"), layer=rec.get("layer", ""),
                             backend=rec.get("backend", ""), method=rec.get("method"), feasibility=None,
                             w=arr(rec.get("w")), b=math.nan if rec.get("b") is None else rec["b"],
                             min_margin=math.nan if rec.get("min_margin") is None else rec["min_margin"],
                             point=arr(rec.get("point")), message=rec.get("message", ""),
                             certificate={k: (math.nan if v is None else v)
                                          for k, v in (rec.get("certificate") or {}).items()})
    for name, rows_attr in (("lam", "rows_a"), ("mu", "rows_b")):
        if f"{name}_idx" not in rec:
            continue
        weights = np.zeros(rec[f"n_{name}"])
        rows = np.full(rec[f"n_{name}"], -1, dtype=int)  # only the rows with a positive weight are kept
        weights[rec[f"{name}_idx"]] = rec[f"{name}_val"]
        rows[rec[f"{name}_idx"]] = rec[f"{name}_rows"]
        setattr(res, name, weights)
        setattr(res, rows_attr, rows)
    return res

# ------------------------------------------------------------------ strong duality


def duality_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (group, verified primal solve, verified dual solve): P*, D*, gap."""
    df = with_groups(df)
    ok = df[df.status == OPTIMAL]
    rows = []
    for group in _group_order(df):
        g = ok[ok.group == group]
        primal = g[g.formulation.isin(PRIMAL_FORMULATIONS)]
        dual = g[g.formulation.isin(DUAL_FORMULATIONS)]
        for p in primal.itertuples():
            for d in dual.itertuples():
                gap = p.primal_objective - d.dual_objective
                rows.append({
                    "group": group, "dataset": p.dataset, "kernel": p.kernel, "C": p.C, "profile": p.profile,
                    "primal_formulation": p.formulation, "primal_layer": p.layer, "primal_backend": p.backend,
                    "dual_formulation": d.formulation, "dual_layer": d.layer, "dual_backend": d.backend,
                    "P_star": p.primal_objective, "D_star": d.dual_objective, "gap": gap,
                    "rel_gap": _relative(gap, p.primal_objective),
                    "primal_solver": p.solver, "dual_solver": d.solver,
                })
    return pd.DataFrame(rows, columns=[
        "group", "dataset", "kernel", "C", "profile", "primal_formulation", "primal_layer", "primal_backend",
        "dual_formulation", "dual_layer", "dual_backend", "P_star", "D_star", "gap", "rel_gap", "primal_solver",
        "dual_solver"])


def _relative(difference: float, scale: float) -> float:
    """|difference| / |scale| (an SVM optimum is > 0: 0 only without both classes); 0 / 0 -> 0."""
    return abs(difference) / abs(scale) if scale else (0.0 if difference == 0 else math.inf)


def duality_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per group: how many primal x dual pairs, the smallest and largest P* - D*, the largest relative gap."""
    if pairs.empty:
        return pd.DataFrame(columns=["group", "pairs", "min_gap", "max_gap", "max_rel_gap"])
    out = pairs.groupby("group", sort=False).agg(
        pairs=("gap", "size"), min_gap=("gap", "min"), max_gap=("gap", "max"), max_rel_gap=("rel_gap", "max"))
    return out.reset_index()


def gap_matrix(pairs: pd.DataFrame) -> pd.DataFrame:
    """Largest |P* - D*| / |P*| over all groups, primal solver (rows) x dual solver (columns)."""
    if pairs.empty:
        return pd.DataFrame()
    p = pairs.assign(primal=pairs.primal_solver, dual=pairs.dual_solver)  # layer/backend[-LP method]
    return p.pivot_table(index="primal", columns="dual", values="rel_gap", aggfunc="max")


# ------------------------------------------------------------------ agreement


def _svc_reference(X, y, kernel: str, gamma, degree, coef0, C: float) -> dict:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC


    name = kernel.split("(")[0]
    k = Kernel(name, gamma=None if gamma is None or (isinstance(gamma, float) and math.isnan(gamma)) else gamma,
               degree=int(degree) if degree is not None and not pd.isna(degree) else 3,
               coef0=0.0 if coef0 is None or pd.isna(coef0) else coef0)
    C_svc = HARD_MARGIN_SVC_C if math.isinf(C) else C
    gamma_svc = k.resolved_gamma(X.shape[1])
    svc = SVC(C=C_svc, kernel=name, gamma=gamma_svc, degree=k.degree, coef0=k.coef0, tol=1e-10,
              max_iter=SVC_MAX_ITER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(X, y)
    if int(np.max(svc.n_iter_)) >= SVC_MAX_ITER:  # e.g. a hard margin that does not exist: libsvm never stops
        return {"svc_note": f"SVC stopped at max_iter={SVC_MAX_ITER} without converging (no reference)"}
    u = np.ravel(svc.dual_coef_[0])  # u_i = alpha_i y_i on the support (classes_ = [-1, +1], so the sign is ours)
    dual = float(np.abs(u).sum() - 0.5 * _quadratic_form(k, X[svc.support_], u))
    return {
        "svc_objective": dual,
        "svc_w": svc.coef_[0].tolist() if name == "linear" else None,
        "svc_b": float(svc.intercept_[0]),
        "svc_n_sv": int(len(svc.support_)),
        "svc_C": C_svc,
    }


def _quadratic_form(kernel: Kernel, X: np.ndarray, u: np.ndarray) -> float:
    """u' K u for K = k(X, X), a block of rows at a time: never the whole n x n matrix."""
    return float(sum(u[i:i + _KERNEL_BLOCK] @ (gram(kernel, X[i:i + _KERNEL_BLOCK], X) @ u)
                     for i in range(0, len(u), _KERNEL_BLOCK)))


def sklearn_reference(df: pd.DataFrame, data: dict) -> pd.DataFrame:
    """scikit-learn SVC on each group's problem (skipped, with a note, when the data are not saved)."""
    df = with_groups(df)
    rows = []
    for group in _group_order(df):
        first = df[df.group == group].iloc[0]
        row = {"group": group}
        if first.formulation in LP_FORMULATIONS:
            row["svc_note"] = "LP (no SVC reference)"
        elif first.dataset not in data:
            row["svc_note"] = "data not saved with the run"
        elif len(data[first.dataset][1]) > SVC_REFERENCE_MAX_N:
            row["svc_note"] = (f"n = {len(data[first.dataset][1]):,} > {SVC_REFERENCE_MAX_N:,}: no SVC reference "
                               "(libsvm at tol 1e-10 would take longer than the solves; python -m experiments.bench "
                               "compares with LIBSVM and LIBLINEAR at large n)")
        else:
            X, y = data[first.dataset]
            gamma = first.gamma if first.kernel != "linear" else None
            try:
                row["svc_note"] = "hard margin as C = 1e8" if math.isinf(first.C) else ""
                row.update(_svc_reference(X, y, first.kernel, gamma, first.degree, first.coef0, float(first.C)))
            except Exception as exc:  # a reference must not break the report
                row["svc_note"] = f"SVC failed: {type(exc).__name__}: {exc}"
        rows.append(row)
    return pd.DataFrame(rows)


def _w_matrix(rows: pd.DataFrame) -> np.ndarray | None:
    ws = [from_json(w) for w in rows.w]
    ws = [w for w in ws if w is not None]
    return np.array(ws) if ws else None


def agreement(df: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group: spread of objective, w*, b* over verified rows, and the largest distance to SVC."""
    df = with_groups(df)
    ref = {} if reference is None or reference.empty else reference.set_index("group").to_dict("index")
    df = df[df.formulation != SEPARABILITY]  # any separating hyperplane: nothing to agree on
    rows = []
    for group in _group_order(df):
        g = df[df.group == group]
        ok = g[g.status == OPTIMAL]
        row = {"group": group, "rows": len(g), "optimal": len(ok)}
        if len(ok):
            W = _w_matrix(ok)
            row.update(
                objective=float(ok.objective.median()),
                objective_spread=float(ok.objective.max() - ok.objective.min()),
                w_spread=float((W.max(axis=0) - W.min(axis=0)).max()) if W is not None else math.nan,
                b_spread=float(ok.b.max() - ok.b.min()),
            )
            r = ref.get(group, {})
            if r.get("svc_objective") is not None and not pd.isna(r.get("svc_objective")):
                row["svc_objective"] = r["svc_objective"]
                row["max_obj_vs_svc"] = float((ok.objective - r["svc_objective"]).abs().max())
                row["max_b_vs_svc"] = float((ok.b - r["svc_b"]).abs().max())
                svc_w = r.get("svc_w")
                if W is not None and svc_w is not None and not (isinstance(svc_w, float) and math.isnan(svc_w)):
                    row["max_w_vs_svc"] = float(np.abs(W - np.asarray(svc_w)).max())
            if r.get("svc_note"):
                row["note"] = r["svc_note"]
        rows.append(row)
    cols = ["group", "rows", "optimal", "objective", "objective_spread", "w_spread", "b_spread", "svc_objective",
            "max_obj_vs_svc", "max_w_vs_svc", "max_b_vs_svc", "note"]
    out = pd.DataFrame(rows)
    for c in cols:
        if c not in out.columns:
            out[c] = np.nan if c != "note" else ""
    out["note"] = out["note"].fillna("")
    return out[cols]


# ------------------------------------------------------------------ multipliers vs alpha


def multipliers(df: pd.DataFrame) -> pd.DataFrame:
    """Per group and verified primal solve: max_i |alpha_i(primal multipliers) - alpha_i(dual)| over the
    group's verified dual solves (median and max over those), with the scale max_i alpha_i."""
    df = with_groups(df)
    ok = df[(df.status == OPTIMAL) & (df.alpha != "")]
    rows = []
    for group in _group_order(df):
        g = ok[ok.group == group]
        duals = [np.asarray(from_json(a)) for a in g[g.formulation.isin(DUAL_FORMULATIONS)].alpha]
        if not duals:
            continue
        for p in g[g.formulation.isin(PRIMAL_FORMULATIONS)].itertuples():
            a = np.asarray(from_json(p.alpha))
            diffs = [float(np.abs(a - d).max()) for d in duals if d.shape == a.shape]
            if not diffs:
                continue
            rows.append({"group": group, "solver": p.solver, "alpha_source": p.alpha_source, "duals": len(diffs),
                         "alpha_max": float(a.max()), "median_diff": float(np.median(diffs)),
                         "max_diff": float(max(diffs))})
    return pd.DataFrame(rows, columns=["group", "solver", "alpha_source", "duals", "alpha_max", "median_diff",
                                       "max_diff"])


def multipliers_summary(mult: pd.DataFrame) -> pd.DataFrame:
    if mult.empty:
        return mult
    return mult.groupby("group", sort=False).agg(
        primal_solves=("solver", "size"), alpha_max=("alpha_max", "max"), median_diff=("median_diff", "median"),
        max_diff=("max_diff", "max")).reset_index()


# ------------------------------------------------------------------ per-row tables


def wb_table(df: pd.DataFrame, max_d: int = 5) -> pd.DataFrame:
    """w* and b* per (dataset, formulation, layer, backend) for the linear problems with d <= max_d."""
    df = with_groups(qp_rows(df))
    lin = df[(df.kernel == "linear") & (df.d <= max_d)]
    rows = []
    for r in lin.itertuples():
        w = from_json(r.w)
        row = {"group": r.group, "dataset": r.dataset, "kernel": r.kernel, "C": r.C, "profile": r.profile,
               "formulation": r.formulation, "layer": r.layer,
               "backend": r.backend, "status": r.status}
        for j in range(int(r.d)):
            row[f"w{j + 1}"] = w[j] if w is not None else math.nan
        row.update(b=r.b, objective=r.objective, n_sv=r.n_sv, b_rule=r.b_rule)
        rows.append(row)
    return pd.DataFrame(rows)


def status_counts(df: pd.DataFrame) -> pd.DataFrame:
    df = with_groups(df)
    return pd.crosstab(df.solver, df.status, margins=True, margins_name="total")


def kkt_table(df: pd.DataFrame) -> pd.DataFrame:
    """Largest relative gap and KKT residuals per solver, over its verified rows and over all rows with a point."""
    df = with_groups(df)
    cols = ["rel_duality_gap", "kkt_stationarity", "kkt_balance", "kkt_primal_feasibility",
            "kkt_dual_feasibility", "kkt_complementarity"]
    ok = df[df.status == OPTIMAL].groupby("solver")[cols].max()
    ok.columns = [c.replace("kkt_", "") for c in cols]
    worst = df.groupby("solver")["rel_duality_gap"].max().rename("rel_gap_all_rows")
    return ok.join(worst, how="outer")


def timing_table(df: pd.DataFrame) -> pd.DataFrame:
    df = with_groups(df)
    t = df.groupby("solver").agg(solves=("task_key", "size"), build_median_s=("build_s", "median"),
                                 solve_median_s=("solve_s", "median"), solve_max_s=("solve_s", "max"),
                                 wall_total_s=("wall_s", "sum"))
    by_form = df.pivot_table(index="solver", columns="formulation", values="solve_s", aggfunc="median")
    by_form.columns = [f"solve_median_s[{c}]" for c in by_form.columns]
    return t.join(by_form)


def failures(df: pd.DataFrame) -> pd.DataFrame:
    """Rows not verified optimal; a separability row that proved the data not separable is an answer, not a
    failure, and is left out."""
    proven = (df.formulation == SEPARABILITY) & (df.status == "infeasible") & separable_mask(df, False)
    bad = df[(df.status != OPTIMAL) & ~proven]
    method = bad["method"] if "method" in bad.columns else ""
    return bad.assign(method=method)[["dataset", "formulation", "kernel", "C", "layer", "backend", "method", "status",
                                      "error"]].reset_index(drop=True)


# ------------------------------------------------------------------ LP tables


def _max_abs_diff(a, b) -> float:
    if a is None or b is None or len(a) != len(b):
        return math.nan
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def l1_pairs(df: pd.DataFrame, data: dict | None = None) -> pd.DataFrame:
    """One row per (1-norm group, LP setting) holding both l1_primal and l1_dual.

    P* (l1_primal's optimum), D* (l1_dual's), rel_objective_diff = |P* - D*| / |P*|;
    the multipliers of one LP against the solution of the other: alpha_mult_vs_dual =
    max_i |dual(margin_i) of l1_primal - alpha_i of l1_dual|, w_mult_vs_primal =
    max_j |dual(lift_j) of l1_dual - w_j of l1_primal|, b_mult_vs_primal; and, with the
    data, cross_primal = P at l1_dual's (w, b) and cross_dual = D at l1_primal's alpha,
    which equal P* and D* even where the LP's solution is not unique. Verified rows only
    for the numbers; the statuses say which.
    """
    df = with_groups(df[df.formulation.isin(L1_FORMULATIONS)])
    cols = ["group", "dataset", "C", "n", "d", "layer", "backend", "method", "setting", "primal_status",
            "dual_status", "P_star", "D_star", "rel_objective_diff", "primal_rel_gap", "dual_rel_gap",
            "alpha_mult_vs_dual", "w_mult_vs_primal", "b_mult_vs_primal", "cross_primal", "cross_dual", "nnz_w",
            "n_sv", "solve_s_primal", "solve_s_dual"]
    rows = []
    for (group, solver), g in df.groupby(["group", "solver"], sort=False):
        p = g[g.formulation == L1_PRIMAL]
        d = g[g.formulation == L1_DUAL]
        if p.empty or d.empty:
            continue
        p, d = p.iloc[0], d.iloc[0]
        P, D = p.objective, d.objective
        row = {"group": group, "dataset": p.dataset, "C": p.C, "n": p.n, "d": p.d, "layer": p.layer,
               "backend": p.backend, "method": p.method, "setting": solver.split("/", 1)[1],
               "primal_status": p.status, "dual_status": d.status, "P_star": P, "D_star": D,
               "rel_objective_diff": _relative(P - D, P) if pd.notna(P) and pd.notna(D) else math.nan,
               "primal_rel_gap": p.rel_duality_gap, "dual_rel_gap": d.rel_duality_gap,
               "nnz_w": p.nnz_w, "n_sv": p.n_sv, "solve_s_primal": p.solve_s, "solve_s_dual": d.solve_s}
        wp, wd = from_json(p.w), from_json(d.w)
        ap, ad = from_json(p.alpha), from_json(d.alpha)
        row.update(alpha_mult_vs_dual=_max_abs_diff(ap, ad), w_mult_vs_primal=_max_abs_diff(wd, wp),
                   b_mult_vs_primal=abs(d.b - p.b) if pd.notna(d.b) and pd.notna(p.b) else math.nan)
        if data and p.dataset in data and wd is not None and ap is not None:
            X, y = data[p.dataset]
            cross = l1_objectives(X, y, float(p.C), np.asarray(wd), float(d.b), np.asarray(ap))
            row.update(cross_primal=cross["primal"], cross_dual=cross["dual"])
        rows.append(row)
    out = pd.DataFrame(rows)
    for c in cols:
        if c not in out.columns:
            out[c] = np.nan
    return out[cols]


def separability_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """The separability rows: per data set and LP setting, the verified verdict and the size of its proof
    (min_i y_i (w'x_i + b) for a hyperplane, the largest verification residual for a common point)."""
    df = with_groups(df[df.formulation == SEPARABILITY])
    rows = []
    for r in df.itertuples():
        cert = json.loads(r.certificate) if r.certificate else {}
        sep = verdict(r.separable)
        point = cert.get("point")
        rows.append({
            "dataset": r.dataset, "solver": r.solver, "status": r.status,
            "separable": {True: "yes", False: "no"}.get(sep, "undecided"),
            "min_margin": cert.get("min_margin") if sep is True else math.nan,
            "certificate_residual": (cert.get("certificate") or {}).get("max_residual") if sep is False else math.nan,
            "common_point": "(" + ", ".join(f"{v:.6g}" for v in point) + ")" if sep is False and point else "",
            "solve_s": r.solve_s, "error": "" if sep is not None else r.error,
        })
    return pd.DataFrame(rows, columns=["dataset", "solver", "status", "separable", "min_margin",
                                       "certificate_residual", "common_point", "solve_s", "error"])


def write_tables(out_dir: str | Path, df: pd.DataFrame, data: dict | None = None) -> dict[str, pd.DataFrame]:
    """duality.csv, agreement.csv, multipliers.csv (and l1_duality.csv) in out_dir; returns every derived table."""
    out = Path(out_dir)
    data = load_data(out) if data is None else data
    df = with_groups(df)  # once for every table below
    pairs = duality_pairs(df)
    ref = sklearn_reference(df, data)
    tables = {
        "duality": pairs,
        "duality_summary": duality_summary(pairs),
        "gap_matrix": gap_matrix(pairs),
        "reference": ref,
        "agreement": agreement(df, ref),
        "multipliers": multipliers(df),
    }
    tables["multipliers_summary"] = multipliers_summary(tables["multipliers"])
    tables["l1_pairs"] = l1_pairs(df, data)
    files = {"duality.csv": pairs, "agreement.csv": tables["agreement"], "multipliers.csv": tables["multipliers"]}
    if not tables["l1_pairs"].empty:
        files["l1_duality.csv"] = tables["l1_pairs"]
    for name, table in files.items():  # a failed write (a full disk) names its file and keeps the previous one
        write_whole(out / name, lambda tmp, table=table: table.to_csv(tmp, index=False))
    return tables
