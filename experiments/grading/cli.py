"""``python -m experiments.grade``: grade claimed SVM solutions with the project's own closing checks.

    python -m experiments.grade --data exercises/hard-7/data.csv --answer ada.json
    python -m experiments.grade --data data.csv --answer answers/ --rubric rubric.toml --out grades/

Per answer a Markdown report (which conditions hold, within what tolerance, the credit by condition, what the
fields determine, the distance to the proved optimum); for a folder also summary.csv and summary.md. The problem
(formulation, C, kernel) is read from problem.json beside the data (python -m experiments.exercise writes one),
the options --formulation/--C/--kernel override it, and an answer may name the formulation it answers.
A bad answer is one line naming the field: exit code 2 for a single answer, a row with its error in a batch.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

# numpy, pandas and the solvers are imported once the command line is checked: --help and a bad argument
# answer at once.
from experiments.grading.answers import answer_files
from experiments.grading.rubric import load_rubric
from experiments.runner.options import UsageError  # the command lines' one bad-input error
from formulations.errors import SVMInputError
from formulations.names import QP_FORMULATIONS

PROBLEM_FILE = "problem.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.grade",
        description="Grade claimed SVM solutions (w, b, xi or alpha) with the checks every solve goes through: "
                    "the verdict, each KKT condition with its worst point, partial credit, a class summary.")
    parser.add_argument("--data", required=True, help="the exercise's data: a CSV with feature columns and a label "
                        "column (problem.json beside it sets formulation, C and kernel)")
    parser.add_argument("--answer", required=True, help="an answer (.json or .csv), or a folder of a class's answers")
    parser.add_argument("--label-column", default="y", help="the data's label column (default: y)")
    parser.add_argument("--formulation", choices=QP_FORMULATIONS, help="the formulation answered "
                        "(default: the answer's, else problem.json's)")
    parser.add_argument("--C", dest="C", help="the penalty C (default: problem.json's; 'inf' for the hard margin)")
    parser.add_argument("--kernel", help="the kernel dual's kernel, e.g. rbf (default: problem.json's)")
    parser.add_argument("--gamma", help="the kernel's gamma")
    parser.add_argument("--rubric", help="a JSON or TOML rubric: tolerance, points, weights per condition")
    parser.add_argument("--out", help="where the reports go (default: grades/<answer's name>)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per answer on stdout")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return run(args)
    except (UsageError, SVMInputError) as exc:  # bad input: one clear line, no traceback
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def _number(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{option}: {text!r} is not a number") from None
    if math.isnan(value):
        raise UsageError(f"{option}: {text!r} is not a number")
    return value


def problem_settings(args) -> dict:
    """formulation, C and kernel: problem.json beside the data, overridden by the command line."""
    settings = {}
    problem = Path(args.data).parent / PROBLEM_FILE
    if problem.is_file():
        try:
            settings = json.loads(problem.read_text())
        except json.JSONDecodeError as exc:
            raise UsageError(f"{problem}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        settings = {k: settings[k] for k in ("formulation", "C", "kernel") if k in settings}
    if args.formulation:
        settings["formulation"] = args.formulation
    C = _number("--C", args.C)
    if C is not None:
        settings["C"] = C
    if args.kernel:
        settings["kernel"] = {"name": args.kernel}
    gamma = _number("--gamma", args.gamma)
    if gamma is not None:
        settings.setdefault("kernel", {"name": "rbf"})
        settings["kernel"] = dict(settings["kernel"], gamma=gamma) if isinstance(settings["kernel"], dict) \
            else {"name": settings["kernel"], "gamma": gamma}
    return settings


def check_paths(args) -> list[Path]:
    """The data file and the answers, checked before anything is read or imported."""
    data = Path(args.data)
    if not data.is_file():
        raise UsageError(f"--data {args.data}: no such file")
    answer = Path(args.answer)
    if not answer.exists():
        raise UsageError(f"--answer {args.answer}: no such file or folder")
    files = answer_files(answer)
    if not files:
        raise UsageError(f"--answer {args.answer}: the folder holds no .json or .csv answer")
    return files


def run(args) -> int:
    files = check_paths(args)
    rubric = load_rubric(args.rubric)
    settings = problem_settings(args)
    batch = Path(args.answer).is_dir()
    out = Path(args.out) if args.out else Path("grades") / Path(args.answer).stem
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")

    # pandas, the runner's CSV reader and the solver stack: only once the command line is checked
    from experiments.grading import marking

    marking.grade_all(args, files, settings, rubric, out, batch)
    return 0
