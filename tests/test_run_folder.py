"""The run folder (issue 16): task identity from exact parameters and the data's content hash, options
recorded and reused by --resume (a difference refused by name), a lock, a journal reader that skips
lines that are not rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from experiments.runner import results_table
from experiments.datasets import example_5_1
from experiments.runner.cli import LOCK_FILE, RunFolderLock, build_datasets, build_parser, main, problems_from
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
