"""report.md of a run, rebuilt from the saved table alone: ``python -m experiments.report DIR``.

Reads DIR/results.parquet (or results.csv, or the rows.jsonl journal), run.json,
environment.json, separability.json, l1_vs_l2.csv and the data saved under DIR/data,
recomputes the derived tables (duality.csv, agreement.csv, multipliers.csv,
l1_duality.csv), redraws the figures and writes DIR/report.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments import analysis
from experiments.results_table import from_json, load

#: Published numbers the w*/b* table is held against.
LECTURE = {"example_5_1": {"w": [-0.9229, 0.7627], "b": 1.1976, "source": "lecture notes (quadprog), Example 5.1"}}


def _fmt(value, spec: str = ".4g") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, (float, np.floating)):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return format(float(value), spec)
    return str(value)


def md(df: pd.DataFrame, spec: str = ".4g", index: bool = True, specs: dict | None = None,
       numparse: bool = True) -> str:
    """DataFrame -> markdown with floats formatted (per-column `specs` override `spec`); numparse=False
    keeps the formatted digits (tabulate would otherwise re-read them as numbers and round to 6 digits)."""
    if df is None or df.empty:
        return "_(none)_"
    out = df.copy()
    for col in out.columns:
        s = (specs or {}).get(col, spec)
        if out[col].dtype.kind == "f" or out[col].dtype == object:
            out[col] = [_fmt(v, s) for v in out[col]]
    return out.to_markdown(index=index) if numparse else out.to_markdown(index=index, disable_numparse=True)


def _wb_cell(row) -> str:
    if row.status != "optimal":
        return f"_{row.status}_"
    w = from_json(row.w)
    return f"({', '.join(f'{v:.4f}' for v in w)}) / {row.b:.4f}"


def wb_section(df: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    """One table per linear low-dimensional problem: rows layer/backend, columns formulations, cells w* / b*."""
    g = analysis.with_groups(analysis.qp_rows(df))
    lin = g[(g.kernel == "linear") & (g.d <= 5)]
    ref = {} if reference.empty else reference.set_index("group").to_dict("index")
    lines = []
    for group in dict.fromkeys(lin.sort_values("order").group):
        rows = lin[lin.group == group]
        cells = rows.assign(cell=[_wb_cell(r) for r in rows.itertuples()])
        table = cells.pivot_table(index="solver", columns="formulation", values="cell", aggfunc="first", sort=False)
        table = table[[f for f in ("hard_primal", "soft_primal", "dual", "kernel_dual") if f in table.columns]]
        extra = {}
        r = ref.get(group, {})
        if r.get("svc_w") is not None and not (isinstance(r.get("svc_w"), float)):
            extra["scikit-learn SVC"] = f"({', '.join(f'{v:.4f}' for v in r['svc_w'])}) / {r['svc_b']:.4f}"
        pub = LECTURE.get(rows.iloc[0].dataset)
        if pub and math.isinf(rows.iloc[0].C):
            extra[pub["source"]] = f"({', '.join(f'{v:.4f}' for v in pub['w'])}) / {pub['b']:.4f}"
        for name, cell in extra.items():  # a reference is one solution, not one per formulation
            table.loc[name] = [cell] + [""] * (len(table.columns) - 1)
        lines += [f"### {group}", "", "cells: w* / b* (blank result when the verified status is not optimal)", "",
                  table.to_markdown(), ""]
    return lines


def kernel_section(df: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    g = analysis.with_groups(df)
    ker = g[g.kernel != "linear"]
    ref = {} if reference.empty else reference.set_index("group").to_dict("index")
    lines = []
    for group in dict.fromkeys(ker.sort_values("order").group):
        rows = ker[ker.group == group]
        t = rows.set_index("solver")[["formulation", "status", "objective", "b", "n_sv", "rel_duality_gap"]]
        r = ref.get(group, {})
        if r.get("svc_objective") is not None and not pd.isna(r.get("svc_objective")):
            t.loc["scikit-learn SVC"] = ["libsvm", "", r["svc_objective"], r["svc_b"], r["svc_n_sv"], np.nan]
        lines += [f"### {group}", "", md(t, specs={"rel_duality_gap": ".1e", "objective": ".8g", "b": ".6f"}), ""]
    return lines


# ------------------------------------------------------------------ LP sections


def result_from_record(rec: dict):
    """experiments.sweep.certificate_record -> a SeparabilityResult (for format_certificate / plot_certificate)."""
    from experiments.separability import SeparabilityResult

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


def _features(kept: str, d: int, show: int = 10) -> str:
    cols = kept.split()
    if len(cols) == d:
        return f"all {d}"
    return " ".join(cols[:show]) + (f" ... ({len(cols)})" if len(cols) > show else "")


def separability_section(out: Path, df: pd.DataFrame, records: dict | None = None) -> list[str]:
    """The verdict and its proof per data set (separability.json, or its `records` if already read), the
    figure, the hard-margin rows on those data, and the separability rows of every LP setting."""
    from experiments.figures import separability_figure_name
    from experiments.separability import format_certificate

    records = analysis.load_separability(out) if records is None else records
    verdicts = analysis.separability_verdicts(df)
    if not records and verdicts.empty:
        return []
    L = ["## Linear separability", "",
         "A (+1) and B (-1) are strictly linearly separable exactly when conv(A) and conv(B) do not intersect",
         "(001). The sweep checks every data set with a hard-margin problem (or a `separability` problem) once,",
         "before those solves: the feasibility LP y_i (w'x_i + b) >= 1 for all i; when it has no verified",
         "solution, the convex-hull LP sum_A lambda_i x_i = sum_B mu_j x_j, sum lambda = sum mu = 1,",
         "lambda, mu >= 0, whose solution is a point of both hulls, verified here (not taken from the solver).", ""]
    hard = df[~df.formulation.isin(analysis.LP_FORMULATIONS)]
    for name, rec in records.items():
        res = result_from_record(rec.get("certificate") or {})
        verdict = {True: "linearly separable", False: "not linearly separable", None: "undecided"}[rec.get("separable")]
        L += [f"### {name} (n = {rec.get('n')}, d = {rec.get('d')}): {verdict}", ""]
        L += [format_certificate(res) if rec.get("certificate") else f"check failed: {rec.get('message', '')}", ""]
        fig = out / "figures" / separability_figure_name(name)
        if fig.exists():
            L += [f"![separability of {name}](figures/{fig.name})", ""]
        rows = hard[(hard.dataset == name) & analysis.separable_mask(hard, False)]
        if len(rows):
            counts = ", ".join(f"{k} {v}" for k, v in rows.status.value_counts().items())
            L += [f"Hard-margin solves on these data: {len(rows)} rows, "
                  f"{int((rows.status == 'optimal').sum())} optimal (statuses: {counts}): the hard margin has no "
                  "solution, so no row may be optimal.", ""]
    if not verdicts.empty:
        L += ["### The separability LPs through every LP setting", "",
              "`min_margin` = min_i y_i (w'x_i + b) of the returned hyperplane (> 0: separable); "
              "`certificate_residual` = the largest residual of the common point's verification (<= 1e-8).", "",
              md(verdicts, index=False, specs={"min_margin": ".6g", "certificate_residual": ".1e",
                                                "solve_s": ".3f"}), ""]
    return L


def l1_section(out: Path, df: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    """1-norm SVM: l1_primal against its LP dual l1_dual (analysis.l1_pairs), per LP setting; then 1-norm vs 2-norm."""
    from experiments.suites import L1_VS_L2

    L = []
    if not pairs.empty:
        grouped = analysis.with_groups(df)
        L += ["## 1-norm SVM (LP): primal and LP dual", "",
              "l1_primal: min sum_j |w_j| + C sum_i xi_i s.t. y_i (w'x_i + b) >= 1 - xi_i, xi >= 0;",
              "l1_dual: max sum_i alpha_i s.t. |sum_i alpha_i y_i x_ij| <= 1, sum_i alpha_i y_i = 0,",
              "0 <= alpha_i <= C. Strong duality is exact for LPs: P* = D*. Per LP setting (HiGHS's simplex and",
              "ipm are two settings): both optima, `rel_objective_diff` = |P* - D*| / max(1, |P*|), the",
              "multipliers of one LP against the solution of the other (`alpha_mult_vs_dual`: the primal's margin",
              "multipliers vs the dual's alpha; `w_mult_vs_primal`, `b_mult_vs_primal`: the dual's multipliers vs",
              "the primal's w, b; they may differ where the LP's solution is not unique), and `cross_primal` = P",
              "at the dual's (w, b), `cross_dual` = D at the primal's alpha (these equal P* and D* in any case).",
              "Blank numbers: not verified optimal (see the statuses). All pairs in `l1_duality.csv`.", ""]
        for group, g in pairs.groupby("group", sort=False):
            t = g.drop(columns=["group", "dataset", "C", "n", "d", "layer", "backend", "method"])
            t.insert(0, "solver", g.layer + "/" + g.setting)
            t = t.drop(columns=["setting"])
            L += [f"### {group} (n = {int(g.n.iloc[0])}, d = {int(g.d.iloc[0])})", "",
                  md(t, index=False, specs={"P_star": ".12g", "D_star": ".12g", "cross_primal": ".12g",
                                            "cross_dual": ".12g", "rel_objective_diff": ".1e",
                                            "primal_rel_gap": ".1e", "dual_rel_gap": ".1e",
                                            "alpha_mult_vs_dual": ".1e", "w_mult_vs_primal": ".1e",
                                            "b_mult_vs_primal": ".1e", "solve_s_primal": ".3f",
                                            "solve_s_dual": ".3f"}, numparse=False), ""]
            ok = grouped[(grouped.group == group) & (grouped.formulation == "l1_primal")
                         & (grouped.status == "optimal")]
            if len(ok) and int(g.d.iloc[0]) <= 5:
                r = ok.iloc[0]
                w = from_json(r.w)
                L += [f"w* = ({', '.join(f'{v:.6g}' for v in w)}), b* = {r.b:.6g} ({r.solver})", ""]
    comp = out / L1_VS_L2
    if comp.exists():
        t = pd.read_csv(comp, keep_default_na=False, na_values=[""], dtype={"kept_features": str})
        first = t.iloc[0]
        t["kept_features"] = [_features(str(k or ""), int(first.d)) for k in t.kept_features.fillna("")]
        L += ["## 1-norm vs 2-norm SVM on the same data", "",
              f"{first.dataset}: n = {first.n} training points (a stratified 70/30 split), d = {first.d}, "
              f"C = {first.C:g}, for both models. The 1-norm SVM (an LP, HiGHS) puts its optimum at a vertex where",
              "most w_j are exactly 0 (features dropped); the 2-norm SVM (a QP, Clarabel) shrinks every w_j but",
              "zeroes none. `nnz_w`: |w_j| > 1e-6 max_k |w_k|; `kept_features`: their columns (0-based).", "",
              md(t.drop(columns=["dataset", "C", "n", "d"]), index=False,
                 specs={"objective": ".8g", "train_accuracy": ".3f", "test_accuracy": ".3f", "build_s": ".3f",
                        "solve_s": ".3f", "rel_duality_gap": ".1e"}), ""]
    return L


def build_report(out_dir: str | Path, figures: bool = True) -> Path:
    """Recompute the derived tables (and figures) of a saved run and write out_dir/report.md."""
    return write_report(out_dir, figures)[0]


def write_report(out_dir: str | Path, figures: bool = True) -> tuple[Path, dict[str, pd.DataFrame | dict]]:
    """`build_report`, also returning the derived tables (analysis.write_tables) for the caller, and under
    "separability" the records of separability.json (a dict, read once here)."""
    out = Path(out_dir)
    # Grouped once (analysis.with_groups): every table, section and figure below takes this frame.
    df = analysis.with_groups(load(out))
    meta = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    env = json.loads((out / "environment.json").read_text()) if (out / "environment.json").exists() else {}
    data = analysis.load_data(out)
    separability = analysis.load_separability(out)
    tables = analysis.write_tables(out, df, data)
    fig_paths = []
    if figures:
        from experiments.figures import make_figures

        try:
            fig_paths = make_figures(out, df, data, separability)
        except Exception as exc:  # a figure must not cost the report
            print(f"warning: figures failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    n_opt = int((df.status == "optimal").sum())
    info = {
        "suite": meta.get("suite", ""),
        "profiles": ", ".join(sorted(df.profile.dropna().unique())),
        "executor": f"{meta.get('executor', '')} (workers {meta.get('workers', '')})",
        "timeout per solve [s]": meta.get("timeout", ""),
        "started": meta.get("started", ""),
        "wall time [s]": _fmt(meta.get("wall_s"), ".1f") if meta.get("wall_s") is not None else "",
        "solves": len(df),
        "verified optimal": n_opt,
        "other statuses": len(df) - n_opt,
        "command": meta.get("command", ""),
    }
    L = [f"# SVM primal/dual sweep: {info['suite'] or out.name}", ""]
    L += [pd.DataFrame({"": list(info.values())}, index=list(info.keys())).to_markdown(), ""]
    L += ["Every status is the project's: `optimal` means the solver said so **and** the relative duality gap",
          "and the scaled KKT residuals recomputed from the returned point are below the profile's check",
          "tolerance (default 1e-4, high 1e-6). Result columns (objective, w*, b*) are blank otherwise.", ""]
    L += ["## Status per layer/backend", "", analysis.status_counts(df).to_markdown(), ""]
    wb = wb_section(df, tables["reference"])
    if wb:
        L += ["## w* and b* per backend and layer (linear problems)", ""] + wb
    ker = kernel_section(df, tables["reference"])
    if ker:
        L += ["## Kernel problems: b*, dual optimum, support vectors", ""] + ker
    L += separability_section(out, df, separability)
    L += ["## Strong duality across formulations", "",
          "For every verified primal solve (P* at its w*, b*, xi*) and every verified dual solve (D* at its",
          "alpha*) of the same problem: gap = P* - D* (all pairs in `duality.csv`).", "",
          md(tables["duality_summary"], spec=".3g", index=False, specs={"min_gap": ".2e", "max_gap": ".2e",
                                                                          "max_rel_gap": ".2e"}), "",
          "Gap matrix: largest |P* - D*| / max(1, |P*|) over all problems, primal solver (rows) x dual solver",
          "(columns).", "", md(tables["gap_matrix"], spec=".0e"), ""]
    L += l1_section(out, df, tables["l1_pairs"])
    L += ["## Agreement across formulations, layers, backends and with scikit-learn", "",
          "Spreads are max - min over the verified rows of a problem; `*_vs_svc` is the largest distance to",
          "scikit-learn's SVC (libsvm, tol 1e-10) on the same data, kernel and C.", "",
          md(tables["agreement"], spec=".3g", index=False), ""]
    L += ["## Primal multipliers vs dual alpha*", "",
          "max_i |alpha_i (multiplier of the primal's margin constraint i) - alpha_i (dual solve)|, median and",
          "max over the problem's dual solves; `estimated` multipliers come from a bounded least-squares fit",
          "(a backend that returns none). alpha* need not be unique when the problem is degenerate.", "",
          md(tables["multipliers_summary"], spec=".3g", index=False), ""]
    L += ["## KKT residuals and duality gap per solver", "",
          "Largest value over the solver's verified rows; `rel_gap_all_rows` includes the rejected ones.", "",
          md(analysis.kkt_table(df), spec=".1e"), ""]
    L += ["## Timings", "", "Seconds per solve: `build` = data -> model; `solve` = the adapter's solve call as it",
          "measures it (for cvxpy this includes cvxpy's own compilation); `wall` = the whole isolated solve.", "",
          md(analysis.timing_table(df), spec=".3g"), ""]
    fails = analysis.failures(df)
    L += [f"## Failures and rejected solves ({len(fails)})", "",
          md(fails.assign(error=fails.error.str.slice(0, 160)), index=False) if len(fails) else "_(none)_", ""]
    fig_paths = [p for p in fig_paths if not p.name.startswith("separability_")]  # shown in their section
    if fig_paths:
        L += ["## Figures", ""] + [f"![{p.stem}](figures/{p.name})" for p in fig_paths] + [""]
    if env:
        pk = env.get("packages", {})
        L += ["## Environment", "", f"Python {env.get('python', '')} on {env.get('platform', '')}, "
              f"{env.get('cpu_count', '')} CPUs", "",
              pd.DataFrame({"version": list(pk.values())}, index=list(pk.keys())).to_markdown(), ""]
        bt = env.get("backends")
        if bt:
            L += ["Backends:", "", pd.DataFrame(bt).to_markdown(index=False), ""]
    path = out / "report.md"
    path.write_text("\n".join(L))
    tables["separability"] = separability
    return path, tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.report",
                                     description="Rebuild report.md (and the derived tables and figures) of a run.")
    parser.add_argument("dir", help="a run directory (holding results.parquet or results.csv)")
    parser.add_argument("--no-figures", action="store_true", help="do not redraw figures/")
    args = parser.parse_args(argv)
    try:
        path = build_report(args.dir, figures=not args.no_figures)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
