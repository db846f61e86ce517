"""A student's answer file, read into the fields solvers.grading.check_point takes.

JSON: one object, e.g. {"student": "Ada", "formulation": "hard_primal", "w": [-0.9229, 0.7627], "b": 1.1976}.
CSV: one field a line, its name then its value(s), as a spreadsheet saves it:

    formulation,hard_primal
    w,-0.9229,0.7627
    b,1.1976

Fields: formulation, w, b, xi, alpha, objective, y (the labels the student solved with: they must be the
data's), C, kernel ("rbf" or {"name": "rbf", "gamma": 1}), student. Numbers stay as written until
check_point checks them; a value that is not a number is refused here with the field's name.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from formulations.errors import SVMInputError

VECTORS = ("w", "xi", "alpha", "y")
NUMBERS = ("b", "objective", "C")
TEXTS = ("formulation", "student", "kernel")
FIELDS = VECTORS + NUMBERS + TEXTS
SUFFIXES = (".json", ".csv")


class AnswerError(SVMInputError):
    """An answer file that cannot be graded: one line naming the field."""


def read_answer(path: Path) -> dict:
    """The answer's fields by name (vectors as lists of floats), or an AnswerError naming the bad one."""
    if path.suffix.lower() not in SUFFIXES:
        raise AnswerError(f"{path.name}: an answer is a .json or .csv file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnswerError(f"{path.name}: not UTF-8 text") from None
    return parse_answer(path.name, text)


def parse_answer(name: str, text: str) -> dict:
    """The fields of an answer's text; `name` (a file name) says JSON or CSV by its suffix, and names errors."""
    if not name.lower().endswith(SUFFIXES):
        raise AnswerError(f"{name}: an answer is a .json or .csv file")
    raw = _from_json(name, text) if name.lower().endswith(".json") else _from_csv(name, text)
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise AnswerError(f"{name}: unknown field {unknown[0]!r}; fields: {', '.join(FIELDS)}")
    out = {}
    for field, value in raw.items():
        if field in VECTORS:
            out[field] = _numbers(name, field, value if isinstance(value, list) else [value])
        elif field in NUMBERS:
            values = value if isinstance(value, list) else [value]
            if len(values) != 1:
                raise AnswerError(f"{name}: {field} must be one number, got {len(values)} values")
            out[field] = _numbers(name, field, values)[0]
        else:
            out[field] = value[0] if isinstance(value, list) and len(value) == 1 else value
    return out


def _from_json(name: str, text: str) -> dict:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"{name}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise AnswerError(f"{name}: a JSON answer is one object of fields, e.g. {{\"w\": [...], \"b\": ...}}")
    return raw


def _from_csv(name: str, text: str) -> dict:
    raw = {}
    for line, row in enumerate(csv.reader(text.splitlines()), start=1):
        row = [cell.strip() for cell in row]
        while row and row[-1] == "":
            row.pop()
        if not row or row[0].startswith("#"):
            continue
        if len(row) < 2:
            raise AnswerError(f"{name}: line {line} ({row[0]!r}) has a field name but no value")
        if row[0] in raw:
            raise AnswerError(f"{name}: field {row[0]!r} appears twice (line {line})")
        raw[row[0]] = row[1:]
    return raw


def _numbers(file: str, field: str, values: list) -> list[float]:
    """Floats, or an AnswerError naming the field and the entry (counted from 1) that is not a number."""
    out = []
    for k, value in enumerate(values, start=1):
        where = f"{field} entry {k}" if len(values) > 1 or field in VECTORS else field
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise AnswerError(f"{file}: {where} is {value!r}, not a number")
        try:
            number = float(value)
        except ValueError:
            raise AnswerError(f"{file}: {where} is {value!r}, not a number") from None
        if not math.isfinite(number):
            raise AnswerError(f"{file}: {where} is {value!r}, not a finite number")
        out.append(number)
    return out


def answer_files(path: Path) -> list[Path]:
    """One answer, or a class's: the .json and .csv files of a folder, by name."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
    return [path]
