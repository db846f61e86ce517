"""The results table: one tidy row per solve, appended as it finishes, keyed for resume.

Rows go first to an append-only journal (``rows.jsonl``, one JSON object per
line, flushed and fsynced per row), so a killed run keeps every finished solve.
``consolidate`` turns the journal into ``results.parquet`` and ``results.csv``:
one row per task key (the last one written wins), sorted in the sweep's order.

Result columns (objective, w, b, alpha, b_multiplier) are filled only for rows
whose verified status is ``optimal``; what the solver returned otherwise stays in
the ``raw_*`` columns, for diagnosis only.

LP rows: ``method`` is HiGHS's LP method ("simplex" / "ipm"; blank otherwise), so
(layer, backend, method) names one setting; ``nnz_w`` counts the nonzero weights.
``separable`` (True / False / blank) is the verified answer of the separability
check, on the hard-margin rows and on ``separability`` rows, whose ``certificate``
column holds the proof as JSON (the hyperplane, or the common point of both hulls
with lambda, mu and the verification residuals).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd

from experiments.runner.folder import RunFolderError, schema_problem, write_whole, writing

JOURNAL = "rows.jsonl"
PARQUET = "results.parquet"
CSV = "results.csv"

#: Column order of the table (extra columns, if any, follow in alphabetical order).
COLUMNS = [
    "task_key", "suite", "dataset", "n", "d", "formulation", "layer", "backend", "method", "profile",
    "standardized", "kernel", "gamma", "degree", "coef0", "C", "kernel_form",
    "status", "solver_status", "raw_status", "verdict", "separable",
    "objective", "primal_objective", "dual_objective", "duality_gap", "rel_duality_gap",
    "w", "b", "b_rule", "b_multiplier", "n_sv", "n_free_sv", "n_bound_sv", "nnz_w", "margin",
    "kkt_stationarity", "kkt_balance", "kkt_primal_feasibility", "kkt_dual_feasibility",
    "kkt_complementarity", "alpha_source", "train_accuracy",
    "iterations", "build_s", "solve_s", "wall_s", "error", "message",
    "backend_version", "label_map", "alpha", "raw_objective", "raw_w", "raw_b", "certificate",
    "log", "run_id", "order", "fault",
]

#: Columns that must be blank unless the row is verified optimal.
RESULT_COLUMNS = ("objective", "w", "b", "b_multiplier", "alpha")


#: The type of each column in the journal (JSON) and in the table; a column not named here may hold any
#: JSON scalar (the table keeps it as text where its rows disagree).
TEXT_COLUMNS = ("task_key", "suite", "dataset", "formulation", "layer", "backend", "method", "profile", "kernel",
                "kernel_form", "status", "solver_status", "raw_status", "verdict", "w", "b_rule", "alpha_source",
                "error", "message", "backend_version", "label_map", "alpha", "raw_w", "certificate", "log", "run_id",
                "fault", "solve_method", "method_used")
INTEGER_COLUMNS = ("n", "d", "n_sv", "n_free_sv", "n_bound_sv", "nnz_w", "order", "degree")
NUMBER_COLUMNS = ("C", "gamma", "coef0", "objective", "primal_objective", "dual_objective", "duality_gap",
                  "rel_duality_gap", "b", "b_multiplier", "margin", "kkt_stationarity", "kkt_balance",
                  "kkt_primal_feasibility", "kkt_dual_feasibility", "kkt_complementarity", "train_accuracy",
                  "iterations", "build_s", "solve_s", "wall_s", "raw_objective", "raw_b")
BOOLEAN_COLUMNS = ("separable",)

#: One journal row, as the sweep writes it (folder.schema_problem names where a row breaks it).
ROW_SCHEMA = {
    "type": "object",
    "required": ["task_key"],
    "properties": {
        **{col: {"type": ["string", "null"]} for col in TEXT_COLUMNS},
        **{col: {"type": ["integer", "null"]} for col in INTEGER_COLUMNS},
        **{col: {"type": ["number", "null"]} for col in NUMBER_COLUMNS},
        **{col: {"type": ["boolean", "null"]} for col in BOOLEAN_COLUMNS},
        "task_key": {"type": "string", "minLength": 1},
    },
    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
}


def to_json(value) -> str:
    """Compact JSON for list-valued cells (w, alpha); '' for nothing."""
    if value is None:
        return ""
    return json.dumps([float(v) for v in value])


def from_json(cell) -> list[float] | None:
    if cell is None or (isinstance(cell, float) and math.isnan(cell)) or cell == "":
        return None
    return json.loads(cell)


class Journal:
    """Append-only JSON-lines file of finished rows."""

    def __init__(self, out_dir: str | Path):
        self.path = Path(out_dir) / JOURNAL
        #: The lines the last `rows()` skipped, each as "line N: why" (for the runner to report).
        self.skipped: list[str] = []

    def rows(self) -> list[dict]:
        """Every complete row written so far. A line that is not a row (cut short by a kill, not JSON,
        JSON but not an object with a text task_key) is skipped and listed in `skipped`; a row whose
        values have the wrong types (ROW_SCHEMA) is a RunFolderError naming its line: the runner never
        writes one, and skipping it would solve its task again without a word."""
        self.skipped = []
        if not self.path.exists():
            return []
        rows = []
        try:
            with self.path.open("r", encoding="utf-8", errors="replace") as fh:
                lines = list(fh)
        except OSError as exc:
            raise RunFolderError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        for number, line in enumerate(lines, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # the last line of a killed run may be partial
                self.skipped.append(f"line {number}: not JSON ({line[:40]!r})")
                continue
            if not isinstance(row, dict) or not isinstance(row.get("task_key"), str) or not row["task_key"]:
                self.skipped.append(f"line {number}: not a row ({line[:40]})")
                continue
            problem = schema_problem(row, ROW_SCHEMA)
            if problem:
                raise RunFolderError(f"{self.path}, line {number}: column {problem}; the runner writes no such row: "
                                     f"correct or delete that line, then run again with --resume")
            rows.append(row)
        return rows

    def done_keys(self, retry_failed: bool = False) -> set[str]:
        """Task keys already recorded (optionally not counting error / time_limit rows)."""
        keys = set()
        for row in self.rows():
            if retry_failed and row.get("status") in ("error", "time_limit"):
                continue
            keys.add(row["task_key"])
        return keys

    def append(self, row: dict) -> None:
        """One row at the end (a failed write may leave part of a line: the reader skips it, the next row starts
        on a line of its own)."""
        line = json.dumps(row, default=_jsonable)
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with writing(self.path), self.path.open("a+b") as fh:
            # A run killed mid-write may have left a partial line: start on a fresh one.
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
            fh.write(line.encode("utf-8") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())


def _jsonable(value):
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(value)


def frame(rows: list[dict]) -> pd.DataFrame:
    """Rows -> the table: one row per task key (last wins), columns in COLUMNS order, sweep order."""
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.DataFrame(rows)
    df = df.drop_duplicates("task_key", keep="last")
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = pd.NA
    extra = sorted(c for c in df.columns if c not in COLUMNS)
    df = df[COLUMNS + extra]
    for col in (c for c in TEXT_COLUMNS if c in df.columns):  # solve_method, method_used: not in every old row
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    for col in BOOLEAN_COLUMNS:
        df[col] = df[col].map(_as_bool).astype("boolean")
    for col in INTEGER_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    for col in NUMBER_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    for col in (c for c in extra if c not in TEXT_COLUMNS):  # a column the runner does not name: text where
        kinds = {_kind(v) for v in df[col] if not _blank(v)}  # its rows disagree (pyarrow takes one type a column)
        if len(kinds) > 1:
            df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    return df.sort_values(["order", "task_key"], kind="stable").reset_index(drop=True)


def _kind(value) -> str:
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def _blank(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _as_bool(value):
    """True / False from a journal (bool), a CSV ("True"), or nothing (None, NaN, "") -> NA."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return pd.NA
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower(), pd.NA)
    return bool(value)


def consolidate(out_dir: str | Path) -> pd.DataFrame:
    """Journal -> results.parquet + results.csv; returns the table."""
    out = Path(out_dir)
    df = frame(Journal(out).rows())
    write_whole(out / PARQUET, lambda tmp: df.to_parquet(tmp, index=False))
    write_whole(out / CSV, lambda tmp: df.to_csv(tmp, index=False))
    return df


def load(out_dir: str | Path) -> pd.DataFrame:
    """The saved table of a run: results.parquet, else results.csv, else the journal."""
    out = Path(out_dir)
    if (out / PARQUET).exists():
        df = pd.read_parquet(out / PARQUET)
        if set(COLUMNS) - set(df.columns):  # a table written before a column was added: fill it in
            return frame(df.to_dict("records"))
        return df
    if (out / CSV).exists():
        return frame(pd.read_csv(out / CSV, keep_default_na=False, na_values=[""]).to_dict("records"))
    if (out / JOURNAL).exists():
        return frame(Journal(out).rows())
    raise FileNotFoundError(f"no results table in {out} (looked for {PARQUET}, {CSV}, {JOURNAL})")
