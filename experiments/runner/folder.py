"""The files of a run folder (``results/<run id>/``), each named once: the runner writes them,
the analysis and the report read them (the table's own file is ``results_table.PARQUET``).

Also how they are written and read back, for every writer and reader: a write that fails (a full
disk, a folder made read-only) is a `RunFolderError` naming the file and the OS's reason, and a
file replaced whole (a table, run.json) is written beside it and renamed, so a failed write
leaves the previous version; a JSON file read back is checked against its schema (JSON Schema,
through fastjsonschema), so a file of the right syntax but wrong types is named with where it is
wrong, never a traceback further on.
"""

from __future__ import annotations

import contextlib
import json
import os
import reprlib
from pathlib import Path
from typing import Callable, Iterator

RUN_FILE = "run.json"  # the options that decide the run's tasks, reused by --resume
LOCK_FILE = ".lock"  # held by the live run (its pid), so two runs never write one folder
SEPARABILITY_FILE = "separability.json"  # one separability record per data set


class RunFolderError(Exception):
    """A file of the run folder that cannot be written, or read back as the runner writes it (one line)."""


# ------------------------------------------------------------------ writing


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """An OSError inside (ENOSPC, EACCES, EROFS, ...) becomes a RunFolderError naming `path` and the reason."""
    try:
        yield
    except OSError as exc:
        raise RunFolderError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_whole(path: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)` a new version of `path` beside it, then rename it over `path`: a failure leaves the old one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with writing(path):
        try:
            write(tmp)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_text(path: Path, text: str) -> None:
    write_whole(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: Path, value) -> None:
    write_text(path, json.dumps(value, indent=1))


# ------------------------------------------------------------------ reading back

_STR, _INT, _NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def _optional(schema: dict) -> dict:
    return {"type": [schema["type"], "null"]}


#: run.json as cli.write_run_meta writes it (keys the runner does not know are let through).
RUN_SCHEMA = {
    "type": "object",
    "properties": {
        "suite": _STR, "command": _STR, "executor": _STR, "started": _STR, "finished": _STR,
        "workers": _optional(_INT), "timeout": _optional(_NUM), "seed": _INT, "tasks": _INT, "wall_s": _NUM,
        "runs": {"type": "array", "items": _STR},
        "options": {"type": "object", "properties": {"seed": _INT, "standardize": {"type": "boolean"}},  # others: text
                    "additionalProperties": {"type": ["string", "null"]}},
        "datasets": {"type": "object", "additionalProperties": {
            "type": "object",
            "required": ["file"],
            "properties": {"file": _STR, "n": _INT, "d": _INT, "description": _STR, "source": _STR,
                           "fingerprint": _STR, "label_map": {"type": "object"},
                           "features": {"type": "array", "items": _STR}},
        }},
    },
}

#: separability.json: {dataset: record} (cli.check_separability).
SEPARABILITY_SCHEMA = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {"dataset": _STR, "n": _INT, "d": _INT, "status": _optional(_STR),
                       "separable": {"type": ["boolean", "null"]}, "message": _optional(_STR),
                       "solve_s": _optional(_NUM), "wall_s": _optional(_NUM), "certificate": {"type": "object"}},
    },
}


_VALIDATORS: dict = {}  # id(schema) -> its compiled validator (the schemas are this module's and results_table's)


def schema_problem(value, schema: dict) -> str | None:
    """Where `value` breaks `schema` and how, in one line ("datasets.iris.n must be integer, got string '60'"), or
    None. Compiled once a schema (fastjsonschema turns it into Python): a journal is checked row by row."""
    import fastjsonschema  # lazy: --help and --list stay fast

    validate = _VALIDATORS.get(id(schema))
    if validate is None:
        validate = _VALIDATORS[id(schema)] = fastjsonschema.compile(schema)
    try:
        validate(value)
    except fastjsonschema.JsonSchemaValueException as error:
        where = ".".join(map(str, error.path[1:])) or "the whole file"
        said = error.message.split(" ", 1)[1] if " " in error.message else error.message  # past "data.x"
        got = f", got {_json_type(error.value)} {reprlib.repr(error.value)}" if error.rule == "type" else ""
        return f"{where} {said}{got}"
    return None


def _json_type(value) -> str:
    for kind, types in (("null", type(None)), ("boolean", bool), ("integer", int), ("number", float),
                        ("string", str), ("array", list), ("object", dict)):
        if isinstance(value, types):
            return kind
    return type(value).__name__


def read_json(path: Path, schema: dict, missing=None):
    """The JSON file at `path` checked against `schema` (`missing` if there is none); RunFolderError otherwise."""
    path = Path(path)
    if not path.exists():
        return missing
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path} is not readable JSON ({exc})") from None
    except OSError as exc:
        raise RunFolderError(f"cannot read {path}: {exc.strerror or exc}") from None
    problem = schema_problem(value, schema)
    if problem:
        raise RunFolderError(f"{path} is not as the runner writes it: {problem}; restore it, or start the run "
                             f"again in another folder")
    return value


def read_run_meta(out: Path) -> dict:
    """The run folder's run.json ({} without one), checked."""
    return read_json(Path(out) / RUN_FILE, RUN_SCHEMA, missing={})


def read_separability(out: Path) -> dict:
    """The run folder's separability.json ({} without one), checked."""
    return read_json(Path(out) / SEPARABILITY_FILE, SEPARABILITY_SCHEMA, missing={})
