"""report.md of a run, rebuilt from the saved table alone: ``python -m experiments.report DIR``.

Reads DIR/results.parquet (or results.csv, or the rows.jsonl journal), run.json,
environment.json and the data saved under DIR/data, recomputes the derived
tables (duality.csv, agreement.csv, multipliers.csv), redraws the figures and
writes DIR/report.md.
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


def md(df: pd.DataFrame, spec: str = ".4g", index: bool = True, specs: dict | None = None) -> str:
    """DataFrame -> markdown with floats formatted (per-column `specs` override `spec`)."""
    if df is None or df.empty:
        return "_(none)_"
    out = df.copy()
    for col in out.columns:
        s = (specs or {}).get(col, spec)
        if out[col].dtype.kind == "f" or out[col].dtype == object:
            out[col] = [_fmt(v, s) for v in out[col]]
    return out.to_markdown(index=index)


def _wb_cell(row) -> str:
    if row.status != "optimal":
        return f"_{row.status}_"
    w = from_json(row.w)
    return f"({', '.join(f'{v:.4f}' for v in w)}) / {row.b:.4f}"


def wb_section(df: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    """One table per linear low-dimensional problem: rows layer/backend, columns formulations, cells w* / b*."""
    g = analysis.with_groups(df)
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


def build_report(out_dir: str | Path, figures: bool = True) -> Path:
    """Recompute the derived tables (and figures) of a saved run and write out_dir/report.md."""
    out = Path(out_dir)
    df = load(out)
    meta = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    env = json.loads((out / "environment.json").read_text()) if (out / "environment.json").exists() else {}
    data = analysis.load_data(out)
    tables = analysis.write_tables(out, df, data)
    fig_paths = []
    if figures:
        from experiments.figures import make_figures

        try:
            fig_paths = make_figures(out, df, data)
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
    L += ["## w* and b* per backend and layer (linear problems)", ""] + wb_section(df, tables["reference"])
    ker = kernel_section(df, tables["reference"])
    if ker:
        L += ["## Kernel problems: b*, dual optimum, support vectors", ""] + ker
    L += ["## Strong duality across formulations", "",
          "For every verified primal solve (P* at its w*, b*, xi*) and every verified dual solve (D* at its",
          "alpha*) of the same problem: gap = P* - D* (all pairs in `duality.csv`).", "",
          md(tables["duality_summary"], spec=".3g", index=False, specs={"min_gap": ".2e", "max_gap": ".2e",
                                                                          "max_rel_gap": ".2e"}), "",
          "Gap matrix: largest |P* - D*| / max(1, |P*|) over all problems, primal solver (rows) x dual solver",
          "(columns).", "", md(tables["gap_matrix"], spec=".0e"), ""]
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
    return path


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
