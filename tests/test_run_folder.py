"""The run folder: task identity from exact parameters and the data's content hash, options
recorded and reused by --resume (a difference refused by name), a lock, a journal reader that skips
lines that are not rows."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.runner import results_table
from experiments.datasets import example_5_1
from experiments.runner.cli import build_datasets, build_parser, main, problems_from
from experiments.runner.folder import LOCK_FILE
from experiments.runner.lock import RunFolderLock
from experiments.runner.sweep import make_tasks

ONE_BACKEND = [("cvxpy", "clarabel")]
SMALL = ["--datasets", "example_5_1", "--C", "inf", "--formulations", "hard_primal", "--backends", "clarabel",
         "--layers", "cvxpy", "--no-figures", "-q"]


def _tasks(argv: list[str]):
    args = build_parser().parse_args(argv)
    _, problems = problems_from(args)
    datasets, maps = build_datasets(problems, args)
    return make_tasks(problems, datasets, ONE_BACKEND, suite="custom", label_maps=maps)


def _csv_of_example_5_1(path, rows=None):
    ds = example_5_1()
    keep = slice(None) if rows is None else rows
    frame = pd.DataFrame(ds.X[keep], columns=["x1", "x2"]).assign(label=ds.y[keep].astype(int))
    frame.to_csv(path, index=False)
    return path


# ------------------------------------------------------------------ task identity


@pytest.mark.parametrize("argv, first, second", [
    (["--datasets", "example_5_1", "--C", "1,1.0000001", "--formulations", "soft_primal"], "|C=1|", "|C=1.0000001|"),
    (["--datasets", "exercise_5_5", "--kernel", "rbf", "--gamma", "0.1,0.1000001", "--C", "1"],
     "rbf(gamma=0.1)", "rbf(gamma=0.1000001)"),
    (["--datasets", "separable(n=20,margin=0.5),separable(n=20,margin=0.5000001)", "--C", "1",
      "--formulations", "soft_primal"], "margin=0.5)|", "margin=0.5000001)|"),
])
def test_values_that_print_alike_are_two_tasks(argv, first, second):
    tasks = _tasks(argv)
    assert len(tasks) == 2
    assert first in tasks[0].key and second in tasks[1].key  # readable keys that say which is which


def test_a_csv_named_like_a_builtin_set_is_its_own_task(tmp_path):
    csv = _csv_of_example_5_1(tmp_path / "example_5_1.csv", rows=[0, 1, 2, -3, -2, -1])
    tasks = _tasks(["--datasets", "example_5_1", "--data", str(csv), "--label-column", "label", "--C", "inf",
                    "--formulations", "hard_primal"])
    assert len(tasks) == 2
    builtin, mine = tasks
    assert (builtin.dataset, mine.dataset) == ("example_5_1", "example_5_1.csv")
    assert builtin.X.shape[0] == example_5_1().n and mine.X.shape == (6, 2)  # each solved on its own data
    assert builtin.key.split("|data=")[1] != mine.key.split("|data=")[1]


def test_the_same_data_under_two_spellings_is_one_task():
    """overlapping(n=30) and overlapping(n=30,d=2) are the same numbers: solved once."""
    tasks = _tasks(["--datasets", "overlapping(n=30),overlapping(n=30,d=2)", "--C", "1",
                    "--formulations", "soft_primal"])
    assert len(tasks) == 1


def test_csv_and_builtin_rows_end_to_end(tmp_path):
    csv = _csv_of_example_5_1(tmp_path / "example_5_1.csv", rows=[0, 1, 2, -3, -2, -1])
    out = tmp_path / "run"
    assert main(SMALL + ["--data", str(csv), "--label-column", "label", "--out", str(out)]) == 0
    df = results_table.load(out).set_index("dataset")
    assert list(df.index) == ["example_5_1", "example_5_1.csv"]
    assert df.loc["example_5_1", "n"] == example_5_1().n and df.loc["example_5_1.csv", "n"] == 6
    saved = json.loads((out / "run.json").read_text())["datasets"]
    assert np.load(out / saved["example_5_1.csv"]["file"])["X"].shape == (6, 2)
    assert np.load(out / saved["example_5_1"]["file"])["X"].shape == (example_5_1().n, 2)


# ------------------------------------------------------------------ resume remembers


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("resume") / "run"
    assert main(SMALL + ["--out", str(out)]) == 0
    return out


def _copy(run, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(run, dest)
    return dest


def test_resume_with_no_options_reuses_the_recorded_ones(small_run, tmp_path, capsys):
    out = _copy(small_run, tmp_path)
    before = (out / "rows.jsonl").read_text()
    meta = json.loads((out / "run.json").read_text())
    assert meta["options"]["datasets"] == "example_5_1" and meta["options"]["backends"] == "clarabel"
    assert main(["--resume", "--out", str(out), "--no-figures"]) == 0
    err = capsys.readouterr().err
    assert "1 solves (1 problems x 1 layer/backend pairs" in err and "1 already done" in err
    assert (out / "rows.jsonl").read_text() == before  # nothing solved again, nothing of the default suite added
    assert json.loads((out / "run.json").read_text())["options"] == meta["options"]


def test_resume_refuses_an_option_that_differs(small_run, tmp_path, capsys):
    out = _copy(small_run, tmp_path)
    assert main(["--resume", "--out", str(out), "--C", "1,10"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--C 'inf'" in err and "'1,10'" in err and "drop --C" in err
    # the same option, written again, is no difference
    assert main(["--resume", "--out", str(out), "--backends", "clarabel", "--no-figures", "-q"]) == 0


def test_resume_refuses_a_changed_csv(tmp_path, capsys):
    csv = _csv_of_example_5_1(tmp_path / "points.csv")
    out = tmp_path / "run"
    opts = ["--data", str(csv), "--label-column", "label", "--C", "inf", "--formulations", "hard_primal",
            "--backends", "clarabel", "--layers", "cvxpy", "--no-figures", "-q"]
    assert main(opts + ["--out", str(out)]) == 0
    capsys.readouterr()
    _csv_of_example_5_1(csv, rows=[0, 1, 2, -3, -2, -1])
    assert main(["--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the data of points.csv changed" in err and "content hash" in err
    assert len(results_table.load(out)) == 1


def test_resume_of_a_folder_without_a_run(tmp_path, capsys):
    assert main(["--resume", "--out", str(tmp_path)]) == 2
    assert "holds no run" in capsys.readouterr().err


# ------------------------------------------------------------------ the lock


def test_a_second_run_on_a_locked_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with RunFolderLock(out):
        assert main(SMALL + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"is in use by another run (pid {os.getpid()})" in err
    assert not (out / "rows.jsonl").exists()


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILE).write_text(dead.stdout)  # what a killed run leaves behind
    assert main(SMALL + ["--out", str(out)]) == 0
    assert len(results_table.load(out)) == 1


# ------------------------------------------------------------------ the journal reader


def test_journal_skips_and_reports_lines_that_are_not_rows(small_run, tmp_path, capsys):
    out = _copy(small_run, tmp_path)
    journal = results_table.Journal(out)
    good = journal.rows()
    with (out / "rows.jsonl").open("a") as fh:
        fh.write('[]\n{}\nnull\n{"task_key": null}\n{"task_key": "x", "sta')
    assert journal.rows() == good
    assert len(journal.skipped) == 5
    assert journal.skipped[0] == "line 2: not a row ([])"
    assert journal.skipped[-1].startswith("line 6: not JSON")
    assert main(["--resume", "--out", str(out), "--no-figures"]) == 0
    err = capsys.readouterr().err
    assert "skipped 5 line(s) that are not rows" in err
    df = results_table.load(out)
    assert len(df) == 1 and df.task_key.notna().all() and (df.status == "optimal").all()


# ------------------------------------------------------------------ the run folder under faults

FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _one_line_exit_2(capsys, argv: list[str], *words: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err + captured.out, captured.err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _files(out) -> dict:
    """Every file of a run folder and its bytes (but the lock's: the pid of the last run that took it)."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != LOCK_FILE}


def test_a_full_disk_while_writing_the_tables_keeps_what_was_there(small_run, tmp_path, capsys, monkeypatch):
    """ENOSPC in analysis.write_tables: one line naming the file, and the previous duality.csv is still whole."""
    out = _copy(small_run, tmp_path)
    before = _files(out)
    original = pd.DataFrame.to_csv

    def full_disk(self, path=None, *args, **kwargs):
        if "duality.csv" in str(path):
            with open(path, "w") as fh:  # part of the table got out before the disk was full
                fh.write("formulation,")
            raise FULL
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    _one_line_exit_2(capsys, ["--resume", "--out", str(out), "--no-figures", "-q"],
                     f"cannot write {out / 'duality.csv'}", "No space left on device")
    after = _files(out)
    for name in ("duality.csv", "rows.jsonl", "results.parquet", "results.csv"):
        assert after[name] == before[name], name
    assert not [name for name in after if name.endswith(".tmp")]


class _FullDiskFile:
    """A lock file on a full disk: it opens (and locks), but no byte can be written to it."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, _text):
        raise FULL

    def flush(self):
        raise FULL

    def __getattr__(self, name):
        return getattr(self._fh, name)


def test_a_full_disk_when_taking_the_lock(tmp_path, capsys, monkeypatch):
    """ENOSPC in RunFolderLock.__enter__ (1 KB free: the lock's few bytes do not fit)."""
    original = Path.open

    def open_on_a_full_disk(self, mode="r", *args, **kwargs):
        fh = original(self, mode, *args, **kwargs)
        return _FullDiskFile(fh) if self.name == LOCK_FILE else fh

    monkeypatch.setattr(Path, "open", open_on_a_full_disk)
    out = tmp_path / "run"
    _one_line_exit_2(capsys, SMALL + ["--out", str(out)], f"cannot write {out / LOCK_FILE}",
                     "No space left on device")
    assert not (out / "rows.jsonl").exists()
    monkeypatch.undo()
    assert main(SMALL + ["--out", str(out)]) == 0  # the lock was let go: the next run takes it


def test_a_full_disk_mid_sweep_keeps_the_rows_before_it(tmp_path, capsys, monkeypatch):
    """The journal's fsync of the second row fails: the first row stays, and the line says how to go on."""
    calls = []
    original = os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise FULL
        return original(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "run"
    argv = ["--datasets", "example_5_1", "--C", "inf", "--formulations", "hard_primal,dual", "--backends", "clarabel",
            "--layers", "cvxpy", "--workers", "1", "--no-figures", "-q", "--out", str(out)]
    _one_line_exit_2(capsys, argv, f"cannot write {out / 'rows.jsonl'}", "No space left on device",
                     f"--resume --out {out}")
    monkeypatch.undo()
    assert len(results_table.Journal(out).rows()) >= 1
    assert main(["--resume", "--out", str(out), "--no-figures", "-q"]) == 0
    assert len(results_table.load(out)) == 2


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.run", *args], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[1])


def _assert_refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize("change, words", [
    ({"status": 3}, ["line 1", "column status must be string or null, got integer 3"]),
    ({"n": "sixty"}, ["line 1", "column n must be integer or null, got string 'sixty'"]),
    # the other types in the slow suite: each case starts the CLI (2 s)
    pytest.param({"C": [1.0]}, ["line 1", "column C must be number or null, got array"], marks=pytest.mark.slow),
    pytest.param({"separable": "yes"}, ["line 1", "column separable must be boolean or null"], marks=pytest.mark.slow),
    pytest.param({"solve_server_start_s": {"s": 1}}, ["line 1", "column solve_server_start_s", "object"],
                 marks=pytest.mark.slow),
])
def test_a_journal_row_of_wrong_types_is_named_by_its_line(small_run, tmp_path, change, words):
    out = _copy(small_run, tmp_path)
    row = json.loads((out / "rows.jsonl").read_text().splitlines()[0])
    (out / "rows.jsonl").write_text(json.dumps({**row, **change}) + "\n")
    before = _files(out)
    _assert_refused(_cli("--resume", "--out", str(out), "--no-figures"), str(out / "rows.jsonl"), *words)
    assert _files(out) == before  # refused before anything was written


def _set(value, path: str, new):
    """`value` (JSON) with the item at the dotted `path` set to `new` ("" for the whole)."""
    if not path:
        return new
    head, _, rest = path.partition(".")
    return {**value, head: _set(value.get(head, {}), rest, new)}


# each case a whole command line run (3 s): two in the default run, the others with the slow tests
@pytest.mark.parametrize("file, path, new, words", [
    ("run.json", "datasets", [], ["run.json", "datasets must be object, got array"]),
    pytest.param("run.json", "runs", "20261127", ["run.json", "runs must be array, got string"],
                 marks=pytest.mark.slow),
    pytest.param("run.json", "options.seed", "zero", ["run.json", "options.seed must be integer, got string 'zero'"],
                 marks=pytest.mark.slow),
    pytest.param("run.json", "datasets.example_5_1.n", "60",
                 ["run.json", "datasets.example_5_1.n must be integer, got string"], marks=pytest.mark.slow),
    pytest.param("run.json", "datasets.example_5_1", {"n": 60},
                 ["run.json", "datasets.example_5_1 must contain ['file']"], marks=pytest.mark.slow),
    pytest.param("run.json", "", [], ["run.json", "the whole file must be object, got array"],
                 marks=pytest.mark.slow),
    ("separability.json", "example_5_1.separable", "yes",
     ["separability.json", "example_5_1.separable must be boolean or null, got string 'yes'"]),
])
def test_a_run_file_of_wrong_types_is_one_line(small_run, tmp_path, file, path, new, words):
    out = _copy(small_run, tmp_path)
    (out / file).write_text(json.dumps(_set(json.loads((out / file).read_text()), path, new)))
    before = _files(out)
    _assert_refused(_cli("--resume", "--out", str(out), "--no-figures"), *words)
    assert _files(out) == before
    proc = subprocess.run([sys.executable, "-m", "experiments.report", str(out), "--no-figures"], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    _assert_refused(proc, file)
