"""Every command-line input is checked at the boundary: one line on stderr, exit code 2, no traceback,
before anything large is read or allocated. Also: --help/--version without the solver stack."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import datasets as datasets_module
from experiments.runner.cli import main

REPO = Path(__file__).resolve().parents[1]
GRID = ["--datasets", "example_5_1", "--backends", "clarabel", "--layers", "cvxpy", "--no-figures", "-q"]


def _refused(capsys, argv: list[str], *words: str) -> str:
    """main(argv) must return 2 with exactly one line on stderr holding every word, and no traceback."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("argv, words", [
    (["--kernel", "rbf", "--gamma", "abc"], ["--gamma", "'abc' is not a number"]),
    (["--kernel", "poly", "--degree", "x"], ["--degree", "'x' is not a whole number"]),
    (["--kernel", "poly", "--degree", "2.5"], ["--degree", "'2.5' is not a whole number"]),
    (["--C", "1e400"], ["--C", "'1e400' is too large", "infinity"]),
    (["--C", "1,1e999"], ["--C", "'1e999' is too large"]),
    (["--C", "1,-1"], ["--C: C must be > 0", "-1.0"]),
    (["--C", "0"], ["--C: C must be > 0", "0.0"]),
    (["--gamma", "1e400", "--kernel", "rbf"], ["--gamma", "too large"]),
    (["--kernel", "precomputed"], ["precomputed", "Gram matrix", "solvers.api.solve"]),
    (["--timeout", "nan"], ["--timeout", "finite", "nan"]),
    (["--timeout", "inf"], ["--timeout", "finite", "inf"]),
    (["--timeout", "0"], ["--timeout", "> 0"]),
    (["--timeout", "-3"], ["--timeout", "> 0"]),
    (["--seed", "-1"], ["--seed", ">= 0", "-1"]),
    (["--label-column", "kind"], ["--label-column", "--data"]),
    (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:1"], ["--scheduler tcp://127.0.0.1:1",
                                                                  "no Dask scheduler answers"]),
])
def test_bad_options_are_one_line_errors(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    _refused(capsys, GRID + argv, *words)
    assert not (tmp_path / "results").exists()  # refused before any output folder was made


@pytest.mark.parametrize("spec, words", [
    ("overlapping(n=50,seed='abc')", ["seed", "must be an integer", "'abc'"]),
    ("overlapping(n=50,seed=-1)", ["seed", "integer >= 0", "-1"]),
    ("separable(n=50,seed=1.5)", ["seed", "must be an integer", "1.5"]),
])
def test_bad_seed_in_a_dataset_spec(capsys, tmp_path, spec, words):
    _refused(capsys, ["--datasets", spec, "--C", "1", "--out", str(tmp_path / "o"), "--no-figures", "-q"], *words)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("spec, words", [
    ("overlapping(n=[1])", ["overlapping", "n must be an integer", "[1]", "list"]),
    ("overlapping(n=30,d={1: 2})", ["overlapping", "d must be an integer", "dict"]),
    ("separable(n=30,margin='wide')", ["separable", "margin must be a number", "'wide'"]),
    ("separable(n=30,margin=True)", ["separable", "margin must be a number", "True"]),
    ("perceptron_slides(order=(1,))", ["perceptron_slides", "order must be one of 'slides', 'notebook'"]),
    ("gendata(n_pos=10,n_neg=None)", ["gendata", "n_neg must be an integer", "None"]),
])
def test_dataset_parameters_are_checked_by_type(capsys, tmp_path, spec, words):
    _refused(capsys, ["--datasets", spec, "--C", "1", "--out", str(tmp_path / "o"), "--no-figures", "-q"], *words)
    assert not (tmp_path / "o").exists()


def test_a_huge_dataset_is_refused_before_its_generator_runs(capsys, tmp_path, monkeypatch):
    calls = []
    original = datasets_module.DATASETS["overlapping"]

    @functools.wraps(original)  # same signature, so the runner's parameter handling is unchanged
    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setitem(datasets_module.DATASETS, "overlapping", spy)
    line = _refused(capsys, ["--datasets", "overlapping(n=1000000000)", "--C", "1", "--out", str(tmp_path / "o"),
                             "-q"], "overlapping(n=1,000,000,000, d=2)", "GiB", "memory budget")
    assert calls == [], "the generator ran before the size was refused"
    assert "59.6 GiB" in line  # 1e9 points x 2 features x 32 bytes at the generator's peak


def test_the_memory_budget_decides_and_a_fitting_dataset_is_generated(capsys, tmp_path, monkeypatch):
    """The same estimate lets a data set through when the budget holds it (n = 1000, d = 2: 64,000 bytes)."""
    from experiments.runner.cli import check_dataset_size

    monkeypatch.setenv("SVM_MEMORY_BUDGET", "64000")
    check_dataset_size("overlapping", {"n": 1000})
    monkeypatch.setenv("SVM_MEMORY_BUDGET", "63999")
    with pytest.raises(Exception, match="memory budget"):
        check_dataset_size("overlapping", {"n": 1000})


@pytest.mark.parametrize("content, words", [
    (b"", ["the file is empty"]),
    (b"x1,x2,label\n1,2,A\n3,4,B,5\n5,6,A\n", ["not a well-formed CSV", "line 3"]),
    ("x1,x2,label\n1,2,Ä\n3,4,B\n".encode("latin-1"), ["not UTF-8", "0xc4", "UTF-8"]),
    # pandas would rename the second a to a.1 and run on it
    (b"a,a,label\n1,2,A\n3,4,B\n5,6,A\n", ["column name 'a' appears 2 times", "columns 1, 2"]),
    (b"x1,label,label\n1,A,A\n3,B,B\n", ["column name 'label' appears 2 times", "columns 2, 3"]),
])
def test_bad_csv_files(capsys, tmp_path, content, words):
    path = tmp_path / "data.csv"
    path.write_bytes(content)
    _refused(capsys, ["--data", str(path), "--label-column", "label", "--C", "1", "--out", str(tmp_path / "o"),
                      "-q"], str(path), *words)
    assert not (tmp_path / "o").exists()


def test_a_directory_as_data(capsys, tmp_path):
    _refused(capsys, ["--data", str(tmp_path), "--label-column", "label", "--C", "1", "-q"],
             str(tmp_path), "not a file")


def test_out_that_is_a_file_or_under_a_file(capsys, tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder")
    _refused(capsys, GRID + ["--C", "inf", "--out", str(a_file)], str(a_file), "is not a directory")
    _refused(capsys, GRID + ["--C", "inf", "--out", str(a_file / "run")], str(a_file), "is a file")
    assert a_file.read_text() == "not a folder"


def _as_a_user(argv: list[str]) -> list[str]:
    """argv to run the command as root without its override of file permissions (CAP_DAC_OVERRIDE), so that the
    OS refuses a read-only folder to it as to any user: CI runs as root, where chmod alone refuses nothing."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")  # util-linux
    assert setpriv, "running as root, this test needs setpriv (util-linux) to drop root's file-permission override"
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *argv]


def _refused_process(argv: list[str], *words: str) -> str:
    """The real command (a process): exit code 2, one line on stderr holding every word, no traceback."""
    proc = subprocess.run(_as_a_user([sys.executable, "-m", "experiments.run", *argv]), cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.slow  # a whole command line run: with the heavier tests
def test_out_that_is_read_only(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        _refused_process(GRID + ["--C", "inf", "--formulations", "hard_primal", "--out", str(locked / "run")],
                         str(locked / "run"), "cannot write there", "Permission denied")
    finally:
        locked.chmod(0o700)
    assert list(locked.iterdir()) == []


def test_out_where_the_kernel_refuses_writes(capsys):
    """/sys takes no new folder, from root either: the OS's refusal itself, with no change of permissions."""
    _refused(capsys, GRID + ["--C", "inf", "--formulations", "hard_primal", "--out", "/sys/svm-duality-run"],
             "/sys/svm-duality-run", "cannot write there")


def test_out_that_refuses_writes_is_one_line(capsys, tmp_path, monkeypatch):
    """Whatever the OS says when the folder cannot be written (read-only, full, ...) becomes the one line."""
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_text", refuse)
    _refused(capsys, GRID + ["--C", "inf", "--formulations", "hard_primal", "--out", str(tmp_path / "run")],
             str(tmp_path / "run"), "cannot write there", "Permission denied")


def test_a_bad_input_through_python_m_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "experiments.run", "--datasets", "example_5_1", "--kernel", "poly",
                           "--degree", "2.5"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --degree: '2.5' is not a whole number"


# ------------------------------------------------------------------ --help, --version, lazy imports


def _heavy_modules_after(argv: list[str], expect: str, heavy: tuple[str, ...]) -> str:
    """Run experiments.run's main(argv) in a fresh interpreter; return its output's check and which of
    `heavy` got imported ("[]" when none): the deferral of those imports is on purpose."""
    code = ("import sys, contextlib, io\n"
            "import experiments.run as run\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n"
            f"        run.main({argv!r})\n"
            "    except SystemExit:\n"
            "        pass\n"
            f"assert {expect}, out.getvalue()\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_help_and_version_do_not_import_the_solver_stack():
    """Parsing --help loads neither cvxpy nor Pyomo (nor pandas, nor scikit-learn)."""
    assert _heavy_modules_after(["--help"], "'--resume' in out.getvalue()", ("cvxpy", "pyomo", "pandas", "sklearn")) \
        == "[]"


def test_list_names_every_backend_without_importing_the_solver_stack():
    """--list shows all 16 (layer, backend) pairs from a package look-up: no cvxpy, no Pyomo import."""
    assert _heavy_modules_after(["--list"], "out.getvalue().count(' installed') >= 16", ("cvxpy", "pyomo")) == "[]"


def test_version_console_script_and_license():
    import tomllib
    from importlib import import_module
    from importlib.metadata import version

    import experiments
    import formulations

    proc = subprocess.run([sys.executable, "-m", "experiments.run", "--version"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"svm-duality {version('svm-duality')}"
    import solvers

    assert experiments.__version__ == formulations.__version__ == solvers.__version__ == version("svm-duality")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for script, target in project["scripts"].items():
        module, _, function = target.partition(":")
        assert callable(getattr(import_module(module), function)), script
    assert project["scripts"]["svm-duality"] == "experiments.run:main"
    licence = (REPO / "LICENSE").read_text()
    assert project["license"] == {"text": "MIT"} and licence.startswith("MIT License")


@pytest.mark.parametrize("argv, words", [
    (["-q", "-v"], ["not allowed with argument"]),
    (["--workers", "abc"], ["--workers", "invalid int value: 'abc'"]),
    (["--seed", "1.5"], ["--seed", "invalid int value: '1.5'"]),
    (["--timeout", "soon"], ["--timeout", "invalid float value: 'soon'"]),
    (["--nosuch"], ["unrecognized arguments: --nosuch"]),
])
def test_argparse_errors_are_one_line_too(capsys, argv, words):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    for word in words:
        assert word in err


def test_verbose_prints_a_line_per_solve_and_quiet_only_the_folder(capsys, tmp_path):
    opts = ["--datasets", "example_5_1", "--C", "inf", "--formulations", "hard_primal,dual", "--backends", "clarabel",
            "--layers", "cvxpy", "--no-figures"]
    assert main(opts + ["--out", str(tmp_path / "v"), "-v"]) == 0
    err = capsys.readouterr().err
    solved = [line for line in err.splitlines() if re.match(r"\[[12]/2\] optimal: example_5_1\|", line)]
    assert len(solved) == 2, err
    assert main(opts + ["--out", str(tmp_path / "q"), "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"results: {tmp_path / 'q'}" and captured.err == ""
    rows = [json.loads(line) for line in (tmp_path / "q" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 2
