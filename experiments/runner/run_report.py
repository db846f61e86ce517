"""report.md of a run, rebuilt from the saved table alone: ``python -m experiments.report DIR``.

Reads DIR/results.parquet (or results.csv, or the rows.jsonl journal), run.json,
environment.json, separability.json, l1_vs_l2.csv and the data saved under DIR/data,
recomputes the derived tables (duality.csv, agreement.csv, multipliers.csv,
l1_duality.csv), redraws the figures and writes DIR/report.md and DIR/report.html
(the same content, self-contained: tables as HTML, figures embedded as base64 PNG).

Every table renders as Markdown: a problem is named by columns (data, kernel, C,
profile), never by a label holding `|`, and `md` escapes any `|` left in a cell.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.runner import analysis
from experiments.runner.analysis import result_from_record
from experiments.runner.figures import make_figures, separability_figure_name
from experiments.runner.folder import RunFolderError, write_text
from experiments.runner.results_table import from_json, load
from experiments.runner.suites import L1_VS_L2
from experiments.separability import format_certificate
from experiments.typeset import write_html

#: The lecture notes behind the project (/work/shared/seeds), cited by what they are, not by file name.
NOTES = {
    "000_db8fc39a57f8f78a.txt": "A. Vedaldi's MATLAB SVM demo notes",
    "001_e078ff43bd63a81d.txt": "the lecture notes (Mastroeni, Passacantando: Support Vector Machines, "
                                "ch. 5, University of Pisa)",
    "002_725cbac91910d465.txt": "the machine-learning slides (F. S. Bao, CS 474/574, Iowa State)",
    "003_d4549e80cd166927.txt": "the notes on linear SVM, duality and kernels",
}
PISA = "lecture notes ch. 5"  # short form, after NOTES has named them once

#: Published numbers the w*/b* table is held against.
LECTURE = {"example_5_1": {"w": [-0.9229, 0.7627], "b": 1.1976, "source": f"{PISA}, Example 5.1 (quadprog)"}}

#: The 2-norm formulations in the notes' notation (points x^i, labels y^i in {-1, +1}, multipliers lambda_i,
#: i = 1..l), with their equation numbers in ch. 5; the runner calls lambda `alpha`.
EQUATIONS = {  # LaTeX in mathtext's subset (experiments.typeset draws it in report.html)
    "hard_primal": ("hard-margin primal (4)",
                    r"\min_{w,b}\ \frac{1}{2}\|w\|^2 \quad \mathrm{s.t.} \quad 1 - y^i (w^\top x^i + b) \leq 0,"
                    r"\ i = 1, \dots, l"),
    "soft_primal": ("soft-margin primal (8)",
                    r"\min_{w,b,\xi}\ \frac{1}{2}\|w\|^2 + C \sum_i \xi_i \quad \mathrm{s.t.} \quad "
                    r"1 - y^i (w^\top x^i + b) \leq \xi_i,\ \xi_i \geq 0"),
    "dual": ("dual (6) / (11)",
             r"\max_{\lambda}\ \sum_i \lambda_i - \frac{1}{2} \sum_i \sum_j y^i y^j (x^i)^\top x^j \lambda_i \lambda_j"
             r" \quad \mathrm{s.t.} \quad \sum_i \lambda_i y^i = 0,\ 0 \leq \lambda_i \leq C"
             r"\ \ (C = \infty\mathrm{:\ (6),}\ \lambda \geq 0)"),
    "kernel_dual": ("kernel dual",
                    r"\max_{\lambda}\ \sum_i \lambda_i - \frac{1}{2} \sum_i \sum_j y^i y^j k(x^i, x^j) \lambda_i "
                    r"\lambda_j \quad \mathrm{s.t.} \quad \sum_i \lambda_i y^i = 0,\ 0 \leq \lambda_i \leq C;\quad "
                    r"f(x) = \sum_i \lambda_i y^i k(x^i, x) + b"),
}


def cite(text) -> str:
    """`text` with the notes' file names replaced by what they are."""
    text = "" if text is None else str(text)
    for name, what in NOTES.items():
        text = text.replace(f"seed ``{name}``", what).replace(f"`{name}`", what).replace(name, what)
    return text


def escape_cell(text: str) -> str:
    """A table cell that renders as one cell: `|` escaped, line breaks as spaces."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


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
        if out[col].dtype.kind == "f" or not pd.api.types.is_numeric_dtype(out[col]):  # pandas 3: str dtype
            out[col] = [escape_cell(_fmt(v, s)) for v in out[col]]
    out.columns = [escape_cell(c) for c in out.columns]
    if index:
        out.index = pd.Index([escape_cell(_fmt(v)) for v in out.index], name=out.index.name)
    return out.to_markdown(index=index) if numparse else out.to_markdown(index=index, disable_numparse=True)


def _C_text(C) -> str:
    return "inf" if math.isinf(C) else format(float(C), ".10g")


def problems(df: pd.DataFrame) -> pd.DataFrame:
    """Per group (analysis.with_groups): the problem as columns data, kernel (or LP family), C, profile."""
    g = analysis.with_groups(df).drop_duplicates("group")
    family = [analysis.FAMILY.get(f, k) for f, k in zip(g.formulation, g.kernel)]
    return pd.DataFrame({"data": list(g.dataset), "kernel": family, "C": [_C_text(c) for c in g.C],
                         "profile": list(g.profile)}, index=pd.Index(g.group, name="group"))


def by_problem(table: pd.DataFrame, lookup: pd.DataFrame) -> pd.DataFrame:
    """`table` with its `group` column replaced by the problem's columns (data, kernel, C, profile)."""
    if table is None or table.empty or "group" not in table.columns:
        return table
    cols = lookup.reindex(table.group).reset_index(drop=True)
    return pd.concat([cols, table.drop(columns="group").reset_index(drop=True)], axis=1)


def problem_title(first: pd.Series) -> str:
    family = analysis.FAMILY.get(first.formulation, first.kernel)
    return f"{first.dataset}: {family}, C = {_C_text(first.C)}, profile {first.profile}"


def _solver_list(solvers: tuple[str, ...], every: list[str]) -> str:
    """`solvers` in words: "all 16 layer/backend pairs", "all 16 but cvxpy/osqp", or the list."""
    missing = [s for s in every if s not in solvers]
    if not missing and len(every) > 2:
        return f"all {len(every)} layer/backend pairs"
    if len(every) > 6 and len(missing) <= 3:
        return f"all {len(every)} but {', '.join(missing)}"
    return ", ".join(solvers)


def distinct_results(rows: pd.DataFrame, result, columns: list[str]) -> pd.DataFrame:
    """Each distinct result of a problem once, with the solves that agree on it.

    `result(row)` -> {column: formatted value} for `columns`, of a verified row (rounded as the table shows
    it, so solves equal to that many digits share a line); rows not verified optimal are grouped by status
    with the result blank. Verified results first, the most agreed-on first."""
    every = list(dict.fromkeys(rows.solver))
    found: dict[tuple, dict] = {}
    for r in rows.itertuples():
        cells = result(r) if r.status == "optimal" else dict.fromkeys(columns, "")
        cells = {**cells, "status": r.status}
        entry = found.setdefault(tuple(cells.items()), {**cells, "solves": {}})
        entry["solves"].setdefault(r.formulation, []).append(r.solver)
    out = []
    for entry in found.values():
        by_form = entry.pop("solves")
        by_solvers: dict[tuple, list[str]] = {}  # formulations solved by the same backends share a clause
        for form, solvers in by_form.items():
            by_solvers.setdefault(tuple(solvers), []).append(form)
        entry["agreeing solves"] = "; ".join(f"{', '.join(forms)}: {_solver_list(solvers, every)}"
                                             for solvers, forms in by_solvers.items())
        entry["n"] = sum(len(v) for v in by_form.values())
        out.append(entry)
    out.sort(key=lambda e: (e["status"] != "optimal", -e["n"]))
    table = pd.DataFrame(out, columns=columns + ["status", "n", "agreeing solves"], dtype=object)
    table["n"] = table["n"].astype(str)
    return table


def _vector(values) -> str:
    return f"({', '.join(f'{v:.4f}' for v in values)})"


def wb_section(df: pd.DataFrame, reference: pd.DataFrame, names: dict | None = None) -> list[str]:
    """Per linear low-dimensional problem: each distinct w* / b* once, with the solves (formulation:
    layer/backend) that agree on it, and where scikit-learn's SVC and the notes' published answer fall."""
    g = analysis.with_groups(analysis.qp_rows(df))
    lin = g[(g.kernel == "linear") & (g.d <= 5)]
    ref = {} if reference.empty else reference.set_index("group").to_dict("index")
    lines = []
    for group in dict.fromkeys(lin.sort_values("order").group):
        rows = lin[lin.group == group]
        first = rows.iloc[0]
        table = distinct_results(rows, lambda r: {"w* / b*": f"{_vector(from_json(r.w))} / {r.b:.4f}"},
                                 ["w* / b*"])
        extra = {}
        r = ref.get(group, {})
        if r.get("svc_w") is not None and not (isinstance(r.get("svc_w"), float)):
            extra["scikit-learn SVC"] = f"{_vector(r['svc_w'])} / {r['svc_b']:.4f}"
        pub = LECTURE.get(first.dataset)
        if pub and math.isinf(first.C):
            extra[pub["source"]] = f"{_vector(pub['w'])} / {pub['b']:.4f}"
        table["references"] = ""
        for name, cell in extra.items():  # a reference joins the line it agrees with, or gets its own
            hit = table.index[table.get("w* / b*", pd.Series(dtype=object)) == cell]
            if len(hit):
                table.loc[hit[0], "references"] = ", ".join(filter(None, [table.loc[hit[0], "references"], name]))
            else:
                table.loc[len(table)] = {**dict.fromkeys(table.columns, ""), "w* / b*": cell, "references": name}
        feats = (names or {}).get(first.dataset)
        order = f" w* lists the weights of {', '.join(feats.features)}, in that order." \
            if feats and feats.features[:1] != ("x1",) else ""
        lines += [f"### {problem_title(first)}", "",
                  f"Each distinct w* / b* (4 decimals) once, with the solves that agree on it ({len(rows)} solves)."
                  + order, "", md(table, index=False, numparse=False), ""]
    return lines


def kernel_section(df: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    """Per kernel problem: each distinct dual optimum, b* and support-vector count once, with its solves."""
    g = analysis.with_groups(df)
    ker = g[g.kernel != "linear"]
    ref = {} if reference.empty else reference.set_index("group").to_dict("index")
    lines = []
    for group in dict.fromkeys(ker.sort_values("order").group):
        rows = ker[ker.group == group]

        def result(r):
            return {"objective": f"{r.objective:.8g}", "b*": f"{r.b:.6f}", "n_sv": _fmt(r.n_sv)}

        table = distinct_results(rows, result, ["objective", "b*", "n_sv"])
        r = ref.get(group, {})
        if r.get("svc_objective") is not None and not pd.isna(r.get("svc_objective")):
            table.loc[len(table)] = {**dict.fromkeys(table.columns, ""), "objective": f"{r['svc_objective']:.8g}",
                                     "b*": f"{r['svc_b']:.6f}", "n_sv": str(r["svc_n_sv"]),
                                     "agreeing solves": "scikit-learn SVC (libsvm, tol 1e-10)"}
        lines += [f"### {problem_title(rows.iloc[0])}", "", md(table, index=False, numparse=False), ""]
    return lines


# ------------------------------------------------------------------ LP sections


def _features(kept: str, d: int, show: int = 10) -> str:
    cols = kept.split()
    if len(cols) == d:
        return f"all {d}"
    return " ".join(cols[:show]) + (f" ... ({len(cols)})" if len(cols) > show else "")


def separability_section(out: Path, df: pd.DataFrame, records: dict | None = None) -> list[str]:
    """The verdict and its proof per data set (separability.json, or its `records` if already read), the
    figure, the hard-margin rows on those data, and the separability rows of every LP setting."""
    records = analysis.load_separability(out) if records is None else records
    verdicts = analysis.separability_verdicts(df)
    if not records and verdicts.empty:
        return []
    L = ["## Linear separability", "",
         "A (+1) and B (-1) are strictly linearly separable exactly when conv(A) and conv(B) do not intersect",
         f"({PISA}). The sweep checks every data set with a hard-margin problem (or a `separability` problem)",
         "once, before those solves: the feasibility LP y_i (w'x_i + b) >= 1 for all i; when it has no verified",
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
    L = []
    if not pairs.empty:
        grouped = analysis.with_groups(df)
        L += ["## 1-norm SVM (LP): primal and LP dual", "",
              "l1_primal: min sum_j |w_j| + C sum_i xi_i s.t. y_i (w'x_i + b) >= 1 - xi_i, xi >= 0;",
              "l1_dual: max sum_i alpha_i s.t. |sum_i alpha_i y_i x_ij| <= 1, sum_i alpha_i y_i = 0,",
              "0 <= alpha_i <= C. Strong duality is exact for LPs: P* = D*. Per LP setting (HiGHS's simplex and",
              "ipm are two settings): both optima, `rel_objective_diff` = |P* - D*| / |P*|, the",
              "multipliers of one LP against the solution of the other (`alpha_mult_vs_dual`: the primal's margin",
              "multipliers vs the dual's alpha; `w_mult_vs_primal`, `b_mult_vs_primal`: the dual's multipliers vs",
              "the primal's w, b; they may differ where the LP's solution is not unique), and `cross_primal` = P",
              "at the dual's (w, b), `cross_dual` = D at the primal's alpha (these equal P* and D* in any case).",
              "Blank numbers: not verified optimal (see the statuses). All pairs in `l1_duality.csv`.", ""]
        for group, g in pairs.groupby("group", sort=False):
            t = g.drop(columns=["group", "dataset", "C", "n", "d", "layer", "backend", "method"])
            t.insert(0, "solver", g.layer + "/" + g.setting)
            t = t.drop(columns=["setting"])
            L += [f"### {g.dataset.iloc[0]}: l1-norm, C = {_C_text(g.C.iloc[0])} (n = {int(g.n.iloc[0])}, "
                  f"d = {int(g.d.iloc[0])})", "",
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
    """Recompute the derived tables (and figures) of a saved run and write out_dir/report.md (and report.html)."""
    return write_report(out_dir, figures)[0]


def data_section(meta: dict, df: pd.DataFrame, names: dict) -> list[str]:
    """The data sets of the run, named as the user named them: classes, features, where they come from."""
    info = meta.get("datasets") or {}
    used = [d for d in dict.fromkeys(df.dataset) if d in info]
    if not used:
        return []
    rows = []
    for name in used:
        entry, n = info[name], names.get(name)
        features = n.features if n else ()
        rows.append({"data": name, "n": entry.get("n", ""), "d": entry.get("d", ""),
                     "classes": f"{n.positive}, {n.negative}" if n else "",
                     "features": ", ".join(features) if len(features) <= 10 else
                     ", ".join(features[:10]) + f", ... ({len(features)})",
                     "what": cite(entry.get("description", "")), "source": cite(entry.get("source", ""))})
    return ["## Data", "", md(pd.DataFrame(rows), index=False, numparse=False), ""] + scaling_notes(info, used, df)


def scaling_notes(info: dict, used: list[str], df: pd.DataFrame) -> list[str]:
    """The BadScalingWarning of each data set whose feature scales are far apart, with what to do about it."""
    lines = []
    for name in used:
        scaling = info[name].get("scaling") or {}
        if not scaling.get("bad"):
            continue
        standardized = "standardized" in df and bool(df.loc[df.dataset == name, "standardized"].fillna(False).any())
        what = (f"**Badly scaled features** in {cite(name)}: {cite(scaling['largest'])} has a scale "
                f"{scaling['ratio']:.3g} times that of {cite(scaling['smallest'])}.")
        if standardized:
            lines += [f"> {what} This run solved on standardized features (`--standardize`): w\\* and b\\* are "
                      "reported in the data's own units, the objectives are those of the standardized problem.", ""]
        else:
            lines += [f"> {what} Solvers may lose accuracy on such data, and rows not verified here may well be "
                      "verified on standardized features: run again with `--standardize` (w\\* and b\\* are "
                      "still reported in the data's own units).", ""]
    return lines


def formulations_section(df: pd.DataFrame) -> list[str]:
    """The problems compared, with their equations in the notes' notation."""
    present = [f for f in EQUATIONS if f in set(df.formulation)]
    if not present:
        return []
    L = ["## The problems compared", "",
         f"In the notation of {NOTES['001_e078ff43bd63a81d.txt']} (equation numbers of ch. 5): points $x^i$ with",
         r"labels $y^i \in \{-1, +1\}$, $i = 1, \dots, l$; the multipliers $\lambda_i$ are the `alpha` of the "
         "tables. A primal and a dual of the same data, kernel and C are one problem: their optima $P^*$ and $D^*$ "
         r"must be equal (strong duality), and $w^* = \sum_i \lambda_i y^i x^i$ links their solutions.", ""]
    L += [f"- **{EQUATIONS[f][0]}** (`{f}`): ${EQUATIONS[f][1]}$" for f in present]
    return L + [""]


def duality_section(tables: dict, lookup: pd.DataFrame) -> list[str]:
    """Strong duality per problem, with why a gap can be slightly negative (computed from this run)."""
    summary = tables["duality_summary"]
    L = ["## Strong duality across formulations", "",
         r"For every verified primal solve ($P^*$ at its $w^*, b^*, \xi^*$) and every verified dual solve ($D^*$ "
         r"at its $\lambda^*$) of the same problem: gap = $P^* - D^*$, `max_rel_gap` = $\max |P^* - D^*| / |P^*|$ "
         "(all pairs in `duality.csv`).", ""]
    L += [r"**Why $P^* - D^*$ can be slightly negative.** Weak duality, $P(w, b, \xi) \geq D(\lambda)$, holds for "
          "points that are *exactly* feasible. A solver's point is feasible only to its tolerance (a margin "
          r"constraint may be violated by about that much, $\sum_i \lambda_i y^i = 0$ may be off by as much), so "
          "$P^* - D^*$ is zero only up to the same tolerance and round-off, and either sign is possible."]
    if not summary.empty and (summary.min_gap < 0).any():
        worst = summary.loc[summary.min_gap.idxmin()]
        L += [f"Here the most negative gap is {worst.min_gap:.1e} ({problem_title_of(worst.group, lookup)}),",
              f"{abs(worst.min_gap) / abs(tables['duality'].P_star[tables['duality'].group == worst.group].max()):.1e}"
              " of $P^*$: round-off and solver tolerance, not a violation of weak duality."]
    elif not summary.empty:
        L += ["Here no gap is negative."]
    L += [""]
    L += [md(by_problem(summary, lookup), spec=".3g", index=False,
             specs={"min_gap": ".2e", "max_gap": ".2e", "max_rel_gap": ".2e"}), "",
          "Gap matrix: largest $|P^* - D^*| / |P^*|$ over all problems, primal solver (rows) x dual solver",
          "(columns).", "", md(tables["gap_matrix"], spec=".0e"), ""]
    return L


def problem_title_of(group: str, lookup: pd.DataFrame) -> str:
    p = lookup.loc[group]
    return f"{p.data}, {p.kernel}, C = {p.C}, profile {p.profile}"


def _summary_lines(meta: dict, df: pd.DataFrame, out: Path) -> list[str]:
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
    return [f"# SVM primal/dual sweep: {info['suite'] or out.name}", "",
            md(pd.DataFrame({"value": [str(v) for v in info.values()]}, index=pd.Index(list(info), name="run")),
               numparse=False), "",
            "Every status is the project's: `optimal` means the solver said so **and** the relative duality gap",
            "and the scaled KKT residuals recomputed from the returned point are below the profile's check",
            "tolerance (default 1e-4, high 1e-6). Result columns (objective, w*, b*) are blank otherwise.", ""]


def _environment_lines(env: dict) -> list[str]:
    if not env:
        return []
    pk = env.get("packages", {})
    L = ["## Environment", "", f"Python {env.get('python', '')} on {env.get('platform', '')}, "
         f"{env.get('cpu_count', '')} CPUs", "",
         md(pd.DataFrame({"version": list(pk.values())}, index=pd.Index(list(pk), name="package"))), ""]
    if env.get("backends"):
        L += ["Backends:", "", md(pd.DataFrame(env["backends"]), index=False), ""]
    return L


def write_report(out_dir: str | Path, figures: bool = True) -> tuple[Path, dict[str, pd.DataFrame | dict]]:
    """`build_report`, also returning the derived tables (analysis.write_tables) for the caller, and under
    "separability" the records of separability.json (a dict, read once here). Writes report.md and its
    self-contained twin report.html."""
    out = Path(out_dir)
    # Grouped once (analysis.with_groups): every table, section and figure below takes this frame.
    df = analysis.with_groups(load(out))
    meta = analysis.load_meta(out)
    env = json.loads((out / "environment.json").read_text()) if (out / "environment.json").exists() else {}
    data = analysis.load_data(out, meta)
    names = analysis.data_names(meta)
    separability = analysis.load_separability(out)
    tables = analysis.write_tables(out, df, data)
    lookup = problems(df)
    fig_paths = []
    if figures:
        try:
            fig_paths = make_figures(out, df, data, separability, names)
        except RunFolderError:  # a full disk or a read-only folder: the report cannot be written either
            raise
        except Exception as exc:  # a figure must not cost the report
            print(f"warning: figures failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    L = _summary_lines(meta, df, out)
    L += data_section(meta, df, names)
    L += formulations_section(df)
    L += ["## Status per layer/backend", "", md(analysis.status_counts(df)), ""]
    wb = wb_section(df, tables["reference"], names)
    if wb:
        L += ["## w* and b* per backend and layer (linear problems)", ""] + wb
    ker = kernel_section(df, tables["reference"])
    if ker:
        L += ["## Kernel problems: b*, dual optimum, support vectors", ""] + ker
    L += separability_section(out, df, separability)
    L += duality_section(tables, lookup)
    L += l1_section(out, df, tables["l1_pairs"])
    L += ["## Agreement across formulations, layers, backends and with scikit-learn", "",
          "Spreads are max - min over the verified rows of a problem; `*_vs_svc` is the largest distance to",
          "scikit-learn's SVC (libsvm, tol 1e-10) on the same data, kernel and C.", "",
          md(by_problem(tables["agreement"], lookup), spec=".3g", index=False), ""]
    L += ["## Primal multipliers vs dual alpha*", "",
          "max_i |alpha_i (multiplier of the primal's margin constraint i) - alpha_i (dual solve)|, median and",
          "max over the problem's dual solves; `estimated` multipliers come from a bounded least-squares fit",
          "(a backend that returns none). alpha* need not be unique when the problem is degenerate.", "",
          md(by_problem(tables["multipliers_summary"], lookup), spec=".3g", index=False), ""]
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
    L += _environment_lines(env)
    path = out / "report.md"
    write_text(path, "\n".join(L))
    write_html(path, write=write_text)  # a full disk: the run folder's one-line error, the old file kept
    tables["separability"] = separability
    return path, tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.report",
                                     description="Rebuild report.md and report.html (and the derived tables and "
                                                 "figures) of a run.")
    parser.add_argument("dir", help="a run directory (holding results.parquet or results.csv)")
    parser.add_argument("--no-figures", action="store_true", help="do not redraw figures/")
    args = parser.parse_args(argv)
    try:
        path = build_report(args.dir, figures=not args.no_figures)
    except (FileNotFoundError, RunFolderError) as exc:  # no table, a full disk, a run.json of wrong types
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(path)
    print(path.with_suffix(".html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
