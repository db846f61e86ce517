"""What the runner says and leaves behind: raw data's scaling (--standardize, the warning once, report.md),
progress in a log file, the busy line, the lock of a finished run, and argument errors before heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from experiments.runner import cli, results_table
from experiments.runner.cli import main
from experiments.runner.folder import LOCK_FILE
from solvers.api import solve

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--datasets", "example_5_1", "--C", "1", "--formulations", "soft_primal,dual", "--backends", "clarabel",
         "--no-figures"]


def _raw_breast_cancer(path: Path, rows: int | None = None) -> Path:
    """Breast cancer as a user's CSV, in its own units (feature scales 2.15e5 apart), labels as words."""
    data = load_breast_cancer(as_frame=True)
    frame = data.frame.drop(columns=["target"])
    frame["diagnosis"] = [data.target_names[t] for t in data.target]
    if rows:
        frame = frame.groupby("diagnosis", group_keys=False).head(rows // 2)
    frame.to_csv(path, index=False)
    return path


def _verified_per_layer(out: Path) -> pd.DataFrame:
    df = results_table.load(out)
    return df.groupby(["formulation", "C", "layer"]).status.apply(lambda s: int((s == "optimal").sum()))


# ------------------------------------------------------------------ raw data: --standardize


def _check_standardized_run(out: Path, csv: Path) -> None:
    verified = _verified_per_layer(out)
    assert (verified >= 1).all(), f"(formulation, C, layer) without a verified row:\n{verified}"
    df = results_table.load(out)
    assert df.standardized.all()
    # w*, b* in the data's own units, as solve(standardize=True) gives them
    frame = pd.read_csv(csv)
    X = frame.drop(columns=["diagnosis"]).to_numpy(float)
    y = np.where(frame.diagnosis == "malignant", 1.0, -1.0)
    mapping = json.loads(df.label_map.iloc[0])
    if mapping.get("malignant", 1) == -1:
        y = -y
    row = df[(df.formulation == "soft_primal") & (df.status == "optimal")].iloc[0]
    w, b = np.asarray(results_table.from_json(row.w)), float(row.b)
    ref = solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0, standardize=True, profile="high")
    f, f_ref = X @ w + b, X @ ref.w + ref.b
    assert np.max(np.abs(f - f_ref)) <= 1e-3 * np.max(np.abs(f_ref))  # the row's tolerance (default profile)
    report = (out / "report.md").read_text()
    assert "**Badly scaled features** in breast_cancer.csv" in report and "solved on standardized features" in report


def test_raw_breast_cancer_with_standardize_is_verified_in_every_layer(tmp_path, capsys):
    """Raw breast cancer left 15 of 54 rows unverified; with --standardize every (formulation, C) of the
    default grid has a verified row in both layers (two backends here; the full grid in the slow test)."""
    csv = _raw_breast_cancer(tmp_path / "breast_cancer.csv")
    out = tmp_path / "run"
    assert main(["--data", str(csv), "--label-column", "diagnosis", "--standardize", "--backends", "clarabel,piqp",
                 "--no-figures", "--out", str(out)]) == 0
    assert "badly scaled" not in capsys.readouterr().err  # standardized: nothing to warn about
    _check_standardized_run(out, csv)


@pytest.mark.slow
def test_raw_breast_cancer_with_standardize_on_every_backend(tmp_path):
    csv = _raw_breast_cancer(tmp_path / "breast_cancer.csv")
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "experiments.run", "--data", str(csv), "--label-column", "diagnosis",
                           "--standardize", "--no-figures", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    _check_standardized_run(out, csv)


def test_bad_scaling_is_said_once_on_the_console_and_in_the_report(tmp_path, capsys):
    csv = _raw_breast_cancer(tmp_path / "breast_cancer.csv", rows=60)
    out = tmp_path / "run"
    assert main(["--data", str(csv), "--label-column", "diagnosis", "--backends", "clarabel", "--no-figures",
                 "--formulations", "soft_primal,dual", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "badly scaled features" in line]
    assert len(warned) == 1, err  # four solves, one line
    assert "'worst area'" in warned[0] and "--standardize" in warned[0]
    report = (out / "report.md").read_text()
    assert "**Badly scaled features** in breast_cancer.csv" in report and "run again with `--standardize`" in report


def test_standardize_is_a_recorded_option_that_resume_keeps(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(SMALL + ["--standardize", "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["options"]["standardize"] is True
    assert main(["--resume", "--out", str(out), "--no-figures"]) == 0
    df = results_table.load(out)
    assert len(df) == 4 and df.standardized.all() and df.task_key.str.endswith("|standardized").all()


def test_the_estimator_advises_a_pipeline_once():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from experiments.estimator import SVMClassifier
    from formulations.scaling import BadScalingWarning

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[::4], y[::4]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SVMClassifier(kernel="linear").fit(X, y)
    scaling = [str(w.message) for w in caught if issubclass(w.category, BadScalingWarning)]
    assert len(scaling) == 1, scaling
    assert "make_pipeline(StandardScaler(), SVMClassifier(...))" in scaling[0] and "standardize=True" not in scaling[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BadScalingWarning)
        make_pipeline(StandardScaler(), SVMClassifier(kernel="linear")).fit(X, y)  # the advice, followed: silent


# ------------------------------------------------------------------ progress, the busy line, the lock


def test_progress_in_a_log_is_a_line_per_solve_without_carriage_returns(tmp_path, capsys):
    assert main(SMALL + ["--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err  # not a terminal, as a log file or a pipe
    assert "\r" not in err
    assert [line for line in err.splitlines() if line.startswith("[")][-1].startswith("[4/4] optimal: ")


def test_the_busy_line_is_said_once_and_not_on_a_resume_with_nothing_to_do(tmp_path, capsys, monkeypatch):
    line = "1 solve at a time: the machine is busy (0.0 of 2 CPU cores idle; --workers N to choose)"
    monkeypatch.setattr(cli, "choose_workers", lambda: (1, line))
    out = tmp_path / "run"
    assert main(SMALL + ["--out", str(out)]) == 0
    assert capsys.readouterr().err.count("the machine is busy") == 1
    assert main(["--resume", "--out", str(out), "--no-figures"]) == 0
    assert capsys.readouterr().err.count("the machine is busy") == 0


def test_a_finished_run_leaves_no_lock(tmp_path):
    out = tmp_path / "run"
    assert main(SMALL + ["-q", "--out", str(out)]) == 0
    assert not (out / LOCK_FILE).exists()


# ------------------------------------------------------------------ argument errors before the heavy imports


@pytest.mark.parametrize("argv, message", [(["--bogus"], "unrecognized arguments: --bogus"),
                                           (["--workers", "0"], "--workers must be >= 1"),
                                           (["--retry-failed"], "--retry-failed needs --resume")])
def test_an_argument_error_comes_before_the_heavy_imports(argv, message):
    code = ("import sys\nfrom experiments.run import main\n"
            f"try:\n    code = main({argv!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
            "heavy = [m for m in ('pandas', 'scipy', 'sklearn', 'cvxpy', 'pyomo', 'matplotlib') if m in sys.modules]\n"
            "print(code, heavy)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_estimators_scaling_warning_says_what_bad_scales_do_to_its_kernel():
    """An rbf fit's warning names the kernel's values set by the widest features (its answer is exact: no w to
    lose); a linear one's the solver's accuracy and w = 0."""
    from experiments.estimator import SVMClassifier
    from formulations.scaling import KERNEL_EFFECT, SOLVER_EFFECT, BadScalingWarning

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[::4], y[::4]
    for kernel, effect, other in (("rbf", KERNEL_EFFECT, SOLVER_EFFECT), ("linear", SOLVER_EFFECT, KERNEL_EFFECT)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            SVMClassifier(kernel=kernel).fit(X, y)
        scaling = [str(w.message) for w in caught if issubclass(w.category, BadScalingWarning)]
        assert len(scaling) == 1 and effect in scaling[0] and other not in scaling[0], (kernel, scaling)


def test_the_family_estimators_scaling_warning_names_the_kernels_effect_too():
    """The family's estimators (SVR here) choose the warning's consequence by their kernel as SVMClassifier does."""
    from experiments.family_estimators import SVMRegressor
    from formulations.scaling import KERNEL_EFFECT, SOLVER_EFFECT, BadScalingWarning

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[::4], X[::4, 0]  # a real-valued target
    for kernel, effect in (("rbf", KERNEL_EFFECT), ("linear", SOLVER_EFFECT)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            SVMRegressor(kernel=kernel).fit(X, y)
        scaling = [str(w.message) for w in caught if issubclass(w.category, BadScalingWarning)]
        assert len(scaling) == 1 and effect in scaling[0], (kernel, scaling)
