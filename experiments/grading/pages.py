"""The grader's reports: one Markdown page per answer, and the class's table (summary.csv and .parquet, summary.md
and .html).

Tables render through the runner's `md` (experiments.runner.run_report), so a grade reads like a run's report.
"""

from __future__ import annotations

import math

import pandas as pd

from experiments.runner.run_report import escape_cell, md
from experiments.grading.rubric import Rubric

SUMMARY_COLUMNS = ["answer", "student", "formulation", "verdict", "credit", "points", "failed", "first failure",
                   "duality gap", "multipliers", "distance to optimum", "error"]


def answer_page(name: str, answer: dict, result, rubric: Rubric, problem: str) -> str:
    """The report of one answer: the verdict, each condition (holds or not, within what tolerance), the
    credit, what the fields determine, and the distance to the proved optimum."""
    credit = rubric.credit(result.conditions)
    lines = [f"# {name}: {result.verdict}", "",
             f"- student: {answer.get('student', '(not given)')}",
             f"- problem: {problem}; formulation {result.formulation}; fields handed in: "
             f"{', '.join(k for k in ('w', 'b', 'xi', 'alpha', 'objective') if k in answer)}",
             f"- tolerance: {rubric.tolerance:g} (rubric: {rubric.source}); every residual on its own scale "
             "(docs/grading.md)",
             f"- credit: {credit:.4g} / {rubric.points:g}",
             f"- the closing checks' verdict: {result.message or '(none)'}"
             + (" (on alpha = 0: no multipliers could be estimated, so the conditions below leave theirs blank)"
                if _multipliers(result).startswith("none") else ""), "",
             "## Conditions", ""]
    rows = pd.DataFrame([{"condition": c.name, "holds": "yes" if c.holds else "NO",
                          "residual": c.value, "tolerance": rubric.tolerance,
                          "weight": rubric.weights.get(c.name, 1.0), "worst point": c.point or "",
                          "why": c.why} for c in result.conditions])
    lines += [md(rows, spec=".2e", index=False, specs={"weight": "g", "tolerance": "g"}), ""]
    lines += ["## Derived from what was handed in", ""]
    for key, value in result.derived.items():
        lines.append(f"- {key}: {_short(value)}")
    lines += ["", "## Distance to the proved optimum", ""]
    if result.distance:
        dist = pd.DataFrame([{"quantity": k, "relative distance": v} for k, v in result.distance.items()])
        lines += [md(dist, spec=".2e", index=False), "",
                  "Relative to the optimum's size: w to ||w*||, b (to the interval of optimal b's) and the decision "
                  "values to max_i |f*(x_i)|, the objective to the optimal value."]
    else:
        lines.append("No optimum was proved for this problem: the distance is not measured.")
    return "\n".join(lines) + "\n"


def _short(value) -> str:
    if isinstance(value, list):
        shown = ", ".join(_short(v) for v in value[:8])
        return f"[{shown}{', ...' if len(value) > 8 else ''}] ({len(value)} values)" if len(value) > 8 else f"[{shown}]"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def summary_row(name: str, answer: dict, result, rubric: Rubric) -> dict:
    failed = sorted(result.failed, key=lambda c: c.estimated)  # as PointCheck.summary: what was handed in first
    return {"answer": name, "student": answer.get("student", ""), "formulation": result.formulation,
            "verdict": result.verdict, "credit": rubric.credit(result.conditions), "points": rubric.points,
            "failed": ", ".join(c.name for c in failed), "first failure": failed[0].why if failed else "",
            "duality gap": next((c.value for c in result.conditions if c.name == "duality gap"), math.nan),
            "multipliers": _multipliers(result),
            "distance to optimum": next((c.value for c in result.conditions if c.name == "optimum"), math.nan),
            "error": ""}


def _multipliers(result) -> str:
    """Whose alpha the gap and the other multipliers' conditions were judged on (a w, b answer hands in none)."""
    estimated = [c for c in result.conditions if c.estimated]
    if not estimated:
        return "handed in"
    return "none: no point on its margin" if all(math.isnan(c.value) for c in estimated) else "estimated from w, b"


def error_row(name: str, message: str, rubric: Rubric) -> dict:
    """An answer that could not be graded: its row says why, and it gets no credit."""
    return {"answer": name, "student": "", "formulation": "", "verdict": "not graded", "credit": 0.0,
            "points": rubric.points, "failed": "", "first failure": "", "duality gap": math.nan,
            "multipliers": "", "distance to optimum": math.nan, "error": message}


def summary_page(table: pd.DataFrame, problem: str, rubric: Rubric) -> str:
    graded = table[table.error == ""]
    lines = ["# Grades", "",
             f"- problem: {problem}", f"- answers: {len(table)} ({len(graded)} graded, "
             f"{int((graded.verdict == 'optimal').sum())} optimal, {len(table) - len(graded)} not graded)",
             f"- tolerance: {rubric.tolerance:g}; points: {rubric.points:g} (rubric: {rubric.source})", ""]
    shown = table.drop(columns=["points"])
    lines += [md(shown, spec=".3g", index=False), ""]
    if len(graded):
        counts = {}
        for failed in graded.failed:
            for name in filter(None, failed.split(", ")):
                counts[name] = counts.get(name, 0) + 1
        if counts:
            lines += ["## Conditions most often failed", ""]
            lines += [f"- {escape_cell(k)}: {v} of {len(graded)}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines) + "\n"
