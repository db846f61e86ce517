"""The grader's work once its command line is checked: read the data, judge each answer with
solvers.grading.check_point, write the reports (experiments.grading.pages). A bad answer raises
SVMInputError naming its field; in a batch it becomes a row with its error and the others are graded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from experiments.grading.answers import AnswerError, read_answer
from experiments.grading.pages import SUMMARY_COLUMNS, answer_page, error_row, summary_page, summary_row
from experiments.runner.cli import UsageError as DataError, read_csv_dataset
from experiments.typeset import write_html
from formulations.errors import SVMInputError
from formulations.names import QP_FORMULATIONS
from solvers.grading import check_point


def grade_all(args, files: list[Path], settings: dict, rubric, out: Path, batch: bool) -> None:
    """Every answer of `files` graded, its page and (for a batch) the class's summary written to `out`."""
    try:
        dataset, _ = read_csv_dataset(args.data, args.label_column)
    except DataError as exc:
        raise SVMInputError(str(exc)) from None
    problem = describe(settings)
    rows, pages = [], {}
    for path in files:
        try:
            answer, result = grade_one(path, dataset, settings, rubric)
        except SVMInputError as exc:
            text = " ".join(str(exc).split())
            message = text if text.startswith(f"{path.name}:") else f"{path.name}: {text}"
            if not batch:
                raise SVMInputError(message) from None
            rows.append(error_row(path.name, message, rubric))
            if not args.quiet:
                print(f"{path.name}: not graded: {message}")
            continue
        pages[path.stem] = answer_page(path.name, answer, result, rubric, problem)
        rows.append(summary_row(path.name, answer, result, rubric))
        if not args.quiet:
            print(f"{path.name}: {result.summary()} ({rows[-1]['credit']:.3g} / {rubric.points:g})")
    out.mkdir(parents=True, exist_ok=True)
    for stem, page in pages.items():
        (out / f"{stem}.md").write_text(page)
    if batch:  # the class's table as the runner writes its own: CSV and Parquet, Markdown and a self-contained HTML
        table = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
        table.to_csv(out / "summary.csv", index=False)
        table.to_parquet(out / "summary.parquet", index=False)
        (out / "summary.md").write_text(summary_page(table, problem, rubric))
        write_html(out / "summary.md")
    if not args.quiet:
        print(f"reports in {out}/" + (" (summary.md, summary.html, summary.csv, summary.parquet)" if batch else ""))


def describe(settings: dict) -> str:
    kernel = settings.get("kernel")
    kernel = kernel if isinstance(kernel, str) or kernel is None else ", ".join(f"{k} = {v}" for k, v in kernel.items())
    parts = [settings.get("formulation", ""), f"C = {settings['C']}" if "C" in settings else "", f"kernel {kernel}" if kernel else ""]
    return "; ".join(p for p in parts if p) or "as the answer states"


def grade_one(path: Path, dataset, settings: dict, rubric):
    """(answer, check_point's result) of one answer file; an SVMInputError names what is wrong with it."""
    answer = read_answer(path)
    formulation = answer.get("formulation", settings.get("formulation"))
    if formulation is None:
        raise AnswerError("formulation: neither the answer nor the problem names one "
                          f"({', '.join(QP_FORMULATIONS)})")
    if formulation not in QP_FORMULATIONS:
        raise AnswerError(f"formulation {formulation!r} is not one of {', '.join(QP_FORMULATIONS)}")
    if "y" in answer:
        given = np.asarray(answer["y"])
        if given.size != dataset.n:
            raise AnswerError(f"y has {given.size} labels but the data have {dataset.n} points")
        wrong = np.flatnonzero(given != dataset.y)
        if wrong.size:
            raise AnswerError(f"y: the answer's labels do not match the data's (point {wrong[0] + 1}: "
                              f"{given[wrong[0]]:g} in the answer, {dataset.y[wrong[0]]:g} in the data)")
    C = settings.get("C", answer.get("C"))
    kernel = settings.get("kernel", answer.get("kernel"))
    result = check_point(formulation, dataset.X, dataset.y, C=C,
                         kernel=kernel, w=answer.get("w"), b=answer.get("b"), xi=answer.get("xi"),
                         alpha=answer.get("alpha"), objective=answer.get("objective"), tol=rubric.tolerance)
    return answer, result
