"""Bad input is refused at the boundary, with a clear message, before any model or solver runs.

One table of bad inputs drives the tests of the Python API (`solvers.api.solve`)
and of the CLI (`python -m experiments.run`, through CSV files). For every case
the exception type, the key words of the message, and that nothing was built or
solved are asserted; for the CLI the exit code and the absence of a traceback.
"""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import formulations
import formulations.kernels
from formulations import validation
from formulations.errors import IndefiniteKernelError, MemoryBudgetError, SVMInputError
from solvers import api, registry

ROOT = Path(__file__).resolve().parents[1]

# A small well-posed problem that each case spoils in one way.
X_OK = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 0.5], [3.0, 1.5], [4.0, 3.0], [5.0, 0.0]])
Y_OK = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])


def _with(A: np.ndarray, where: tuple, value) -> np.ndarray:
    A = np.array(A, dtype=object if isinstance(value, str) or value is None else float)
    A[where] = value
    return A


def _gram_ok() -> np.ndarray:
    return X_OK @ X_OK.T


@dataclass
class Bad:
    """One bad input: the keyword arguments of `solve` and what the refusal must say."""

    id: str
    kwargs: dict
    error: type = SVMInputError
    words: tuple = ()
    fields: dict = field(default_factory=dict)

    def call(self):
        args = {"formulation": "soft_primal", "X": X_OK, "y": Y_OK, "layer": "cvxpy",
                "backend": "clarabel", "C": 1.0, **self.kwargs}
        formulation, X, y = args.pop("formulation"), args.pop("X"), args.pop("y")
        return api.solve(formulation, X, y, **args)


def _asym() -> np.ndarray:
    K = _gram_ok()
    K[0, 1] += 1.0
    return K


def _indefinite() -> np.ndarray:
    K = _gram_ok()
    K[5, 5] = -1e3  # K_55 = ||phi(x_5)||^2 cannot be negative: not PSD
    return K


BAD_INPUTS = [
    # X
    Bad("X NaN", {"X": _with(X_OK, (2, 1), np.nan)}, words=("NaN", "row 2", "column 1")),
    Bad("X +inf", {"X": _with(X_OK, (0, 0), np.inf)}, words=("infinity", "row 0", "column 0")),
    Bad("X -inf", {"X": _with(X_OK, (4, 1), -np.inf)}, words=("infinity", "row 4", "column 1")),
    Bad("X beyond float64's products", {"X": 1e160 * X_OK}, words=("x'x overflows", "rescale X")),
    Bad("X empty", {"X": np.zeros((0, 2)), "y": np.array([])}, words=("empty",)),
    Bad("X no features", {"X": np.zeros((6, 0))}, words=("empty",)),
    Bad("X 1-D", {"X": X_OK[:, 0]}, words=("two-dimensional", "shape (6,)")),
    Bad("X 3-D", {"X": X_OK[:, :, None]}, words=("two-dimensional", "(6, 2, 1)")),
    Bad("X non-numeric", {"X": _with(X_OK, (1, 0), "abc")}, words=("numeric", "row 1, column 0", "abc")),
    Bad("X ragged", {"X": [[1.0, 2.0], [3.0]], "y": [1, -1]}, words=("rectangular",)),
    Bad("X complex", {"X": X_OK + 1j}, words=("real",)),
    Bad("X None", {"X": None}, words=("missing",)),
    Bad("lengths differ", {"y": Y_OK[:-1]}, words=("6 rows", "5 labels")),
    # y
    Bad("y NaN", {"y": _with(Y_OK, (3,), np.nan)}, words=("non-finite", "row 3")),
    Bad("y inf", {"y": _with(Y_OK, (5,), np.inf)}, words=("non-finite", "row 5")),
    Bad("y None label", {"y": _with(Y_OK, (1,), None)}, words=("missing", "row 1")),
    Bad("one class", {"y": np.ones(6)}, words=("class", "found 1")),
    Bad("three classes", {"y": np.array([0, 1, 2, 0, 1, 2])}, words=("class", "found 3")),
    Bad("y 2-D", {"y": np.ones((6, 2))}, words=("one-dimensional",)),
    Bad("y a row", {"y": Y_OK[None, :]}, words=("one-dimensional", "(1, 6)")),  # as SVC: only a column is taken
    Bad("y empty", {"X": X_OK, "y": np.array([])}, words=("6 rows", "0 labels")),
    # C
    Bad("C zero", {"C": 0.0}, words=("C must be > 0",)),
    Bad("C negative", {"C": -1.0}, words=("C must be > 0",)),
    Bad("C nan", {"C": math.nan}, words=("C must be > 0", "nan")),
    Bad("C inf soft", {"C": math.inf}, words=("finite", "hard_primal")),
    Bad("C string", {"C": "ten"}, words=("C must be a number", "ten")),
    Bad("C bool", {"C": True}, words=("C must be a number",)),
    Bad("C missing", {"C": None}, words=("needs C",)),
    # kernels
    Bad("gamma zero", {"formulation": "kernel_dual", "kernel": {"name": "rbf", "gamma": 0.0}}, words=("gamma", "> 0")),
    Bad("gamma negative", {"formulation": "kernel_dual", "kernel": {"name": "rbf", "gamma": -1.0}}, words=("gamma",)),
    Bad("degree 0", {"formulation": "kernel_dual", "kernel": {"name": "poly", "degree": 0}}, words=("degree", "positive integer")),
    Bad("degree 2.5", {"formulation": "kernel_dual", "kernel": {"name": "poly", "degree": 2.5}}, words=("degree", "2.5")),
    Bad("coef0 < 0 poly", {"formulation": "kernel_dual", "kernel": {"name": "poly", "coef0": -1.0}}, words=("coef0", ">= 0")),
    Bad("unknown kernel", {"formulation": "kernel_dual", "kernel": "laplace"}, words=("unknown kernel", "laplace")),
    Bad("kernel dict typo", {"formulation": "kernel_dual", "kernel": {"name": "rbf", "gama": 1.0}}, words=("gama",)),
    Bad("kernel on linear", {"kernel": "rbf"}, words=("kernel_dual",)),
    # precomputed K
    Bad("K not square", {"formulation": "kernel_dual", "K": _gram_ok()[:, :5]}, words=("square", "(6, 5)")),
    Bad("K wrong size", {"formulation": "kernel_dual", "K": np.eye(4)}, words=("4 x 4", "6 labels")),
    Bad("K not symmetric", {"formulation": "kernel_dual", "K": _asym()}, words=("not symmetric", "K[0,1]")),
    Bad("K NaN", {"formulation": "kernel_dual", "K": _with(_gram_ok(), (2, 3), np.nan)}, words=("NaN", "row 2", "column 3")),
    Bad("K non-numeric", {"formulation": "kernel_dual", "K": _with(_gram_ok(), (0, 0), "x")}, words=("numeric",)),
    Bad("K indefinite", {"formulation": "kernel_dual", "K": _indefinite()}, error=IndefiniteKernelError,
        words=("not positive semidefinite", "Mercer")),
    Bad("memory budget", {"formulation": "kernel_dual", "kernel": "rbf", "memory_budget": 1e3},
        error=MemoryBudgetError, words=("memory budget", "n = 6", "O(n^2)")),
    # names and options
    Bad("unknown formulation", {"formulation": "nu_svm"}, words=("formulation", "nu_svm")),
    Bad("unknown layer", {"layer": "jump"}, words=("layer", "jump", "pyomo")),
    Bad("unknown backend", {"backend": "gurobi"}, words=("backend", "gurobi", "clarabel")),
    Bad("unknown profile", {"profile": "fast"}, words=("profile", "fast")),
    Bad("kernel_form", {"formulation": "kernel_dual", "kernel_form": "sparse"}, words=("kernel_form", "sparse")),
    Bad("time_limit", {"time_limit": -1}, words=("time_limit",)),
    Bad("options", {"options": ["eps_abs", 1e-3]}, words=("options",)),
    Bad("standardize precomputed", {"formulation": "kernel_dual", "X": None, "K": _gram_ok(), "standardize": True},
        words=("standardize",)),
]


@pytest.fixture
def no_solver(monkeypatch):
    """Record every model build, Gram matrix and backend solve (none may happen)."""
    calls = []

    def recorder(what):
        def record(*args, **kwargs):
            calls.append(what)
            raise AssertionError(f"{what} was called for a bad input")
        return record

    for key, adapter in registry.BACKENDS.items():
        monkeypatch.setattr(adapter, "solve", recorder(f"solve {key}"))
    monkeypatch.setattr(api.formulations, "build", recorder("formulations.build"))
    monkeypatch.setattr(formulations.kernels, "gram", recorder("kernels.gram"))
    return calls


def test_the_table_is_long_enough():
    assert len(BAD_INPUTS) >= 25
    assert len({case.id for case in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize("case", BAD_INPUTS, ids=lambda c: c.id)
def test_api_refuses_bad_input(case, no_solver):
    with pytest.raises(case.error) as info:
        case.call()
    assert isinstance(info.value, SVMInputError)  # one family for every bad input
    message = str(info.value)
    for word in case.words:
        assert word in message, f"{word!r} not in {message!r}"
    assert no_solver == []


def test_string_labels_are_mapped_and_kept():
    """Labels of any type: the sorted first becomes -1, and the mapping is recorded."""
    names = np.where(Y_OK > 0, "spam", "ham")  # "ham" < "spam": ham -> -1, spam -> +1
    by_name = api.solve("soft_primal", X_OK, names, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    by_sign = api.solve("soft_primal", X_OK, Y_OK, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    assert by_name.extras["labels"] == {"ham": -1, "spam": 1}
    assert by_name.status == by_sign.status == "optimal"
    np.testing.assert_allclose(by_name.w, by_sign.w, atol=1e-8)
    assert by_name.b == pytest.approx(by_sign.b, abs=1e-8)
    signs, labels = validation.check_labels(names)
    np.testing.assert_array_equal(labels.inverse(signs), names)
    # the same labels in an object array (as pandas hands them over)
    signs_obj, labels_obj = validation.check_labels(names.astype(object))
    np.testing.assert_array_equal(signs_obj, signs)
    assert labels_obj == labels


def test_memory_check_happens_before_the_gram_matrix(monkeypatch):
    """The estimate is refused first; with a budget that fits, the Gram matrix is built."""
    built = []
    real = formulations.kernels.gram
    monkeypatch.setattr(formulations.kernels, "gram", lambda *a, **k: built.append(1) or real(*a, **k))
    with pytest.raises(MemoryBudgetError):
        api.solve("kernel_dual", X_OK, Y_OK, layer="cvxpy", backend="clarabel", C=1.0, kernel="rbf",
                  memory_budget=100.0)
    assert built == []
    need = validation.gram_bytes(6, "cvxpy", "dense")
    assert need == pytest.approx((32 + 50) * 36)
    sol = api.solve("kernel_dual", X_OK, Y_OK, layer="cvxpy", backend="clarabel", C=1.0, kernel="rbf",
                    memory_budget=10 * need)
    assert built == [1] and sol.status == "optimal"


def test_memory_budget_from_environment(monkeypatch):
    monkeypatch.setenv(validation.MEMORY_BUDGET_ENV, "5e8")
    assert validation.memory_budget() == 5e8
    with pytest.raises(MemoryBudgetError, match="20,000"):
        validation.check_memory(20_000, "the Gram matrix")  # 20000^2 * 82 bytes = 33 GB
    monkeypatch.setenv(validation.MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(SVMInputError, match="SVM_MEMORY_BUDGET"):
        validation.memory_budget()


# --------------------------------------------------------------------------- CLI

# Bad CSV files: (id, file text, extra CLI arguments, words the message must contain).
BAD_CSVS = [
    ("csv NaN", "x1,x2,label\n0,1,a\n1,,a\n3,1,b\n4,3,b\n", [], ("line 3, column 'x2'", "NaN", "empty cell")),  # the file's line
    ("csv inf", "x1,x2,label\n0,1,a\n1,inf,a\n3,1,b\n4,3,b\n", [], ("line 3, column 'x2'", "infinity")),
    ("csv huge", "x1,x2,label\n0,1,a\n1,3e160,a\n3,1,b\n4,3,b\n", [], ("x'x overflows",)),
    ("csv text feature", "x1,x2,label\n0,1,a\n1,high,a\n3,1,b\n4,3,b\n", [], ("numeric",)),
    ("csv one class", "x1,x2,label\n0,1,a\n1,2,a\n3,1,a\n", [], ("class",)),
    ("csv three classes", "x1,x2,label\n0,1,a\n1,2,b\n3,1,c\n", [], ("class",)),
    ("csv missing label", "x1,x2,label\n0,1,a\n1,2,\n3,1,b\n4,3,b\n", [], ("label", "on line 3")),
    ("csv empty", "x1,x2,label\n", [], ("empty",)),
    ("csv no label column", "x1,x2,label\n0,1,a\n3,1,b\n", ["--label-column", "target"], ("target",)),
    ("csv C zero", "x1,x2,label\n0,1,a\n1,2,a\n3,1,b\n4,3,b\n", ["--C", "0"], ("--C: C must be > 0",)),
    ("csv file missing", None, [], ("no_such_file",)),
]


def _cli_args(tmp_path: Path, case) -> list[str]:
    _, text, extra, _ = case
    if text is None:
        path = tmp_path / "no_such_file.csv"
    else:
        path = tmp_path / "data.csv"
        path.write_text(text)
    args = ["--data", str(path), "--label-column", "label", "--out", str(tmp_path / "out")]
    # a later --label-column wins in argparse
    return args + extra


@pytest.mark.parametrize("case", BAD_CSVS, ids=lambda c: c[0])
def test_cli_refuses_bad_csv(case, tmp_path, no_solver, capsys):
    """In-process: exit code, message and no traceback, and no solver called."""
    from experiments.runner import cli as run

    try:
        code = run.main(_cli_args(tmp_path, case))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code not in (0, None)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for word in case[3]:
        assert word in err, f"{word!r} not in {err!r}"
    assert no_solver == []
    # solves run in child processes: that none was started shows as no output directory at all
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", [BAD_CSVS[4]], ids=lambda c: c[0])
def test_cli_process_exit_code(case, tmp_path):
    """The real command: non-zero exit, the message on stderr, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "experiments.run", *_cli_args(tmp_path, case)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    for word in case[3]:
        assert word in proc.stderr


# --------------------------------------------------------------------------- masked arrays


def masked_moons():
    """Overlapping data whose masked cells hold values far off (what np.asarray would use as data)."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1, 1, (20, 2)), rng.normal(1, 1, (20, 2))])
    y = np.repeat([-1.0, 1.0], 20)
    hidden = X.copy()
    hidden[[0, 5, 30], 1] = 1e3
    return np.ma.masked_array(hidden, mask=hidden == 1e3), y


def test_masked_X_and_y_are_refused_by_the_api():
    """A masked array is not data with holes to numpy.asarray: its masked cells were used as data (`optimal`,
    decision values 66% off). Refused in one line that names the problem, by solve, solve_lp and the checks."""
    from solvers.lp import solve_lp

    X, y = masked_moons()
    with pytest.raises(SVMInputError, match=r"^X is a masked array with 3 masked entries: fill or drop them"):
        validation.check_X(X)
    with pytest.raises(SVMInputError, match="X is a masked array with 3 masked entries"):
        api.solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=1.0, kernel="rbf")
    with pytest.raises(SVMInputError, match="X is a masked array with 3 masked entries"):
        solve_lp("l1_primal", X, y, layer="cvxpy", backend="highs", C=1.0)
    y_masked = np.ma.masked_array(y, mask=np.arange(40) == 7)
    with pytest.raises(SVMInputError, match="y is a masked array with 1 masked entry"):
        api.solve("soft_primal", X.filled(0.0), y_masked, layer="cvxpy", backend="clarabel", C=1.0)
    with pytest.raises(SVMInputError, match="C is a masked array with 1 masked entry"):
        validation.check_sample_C(np.ma.masked_array(np.ones(40), mask=np.arange(40) == 3), 40)
    # nothing masked: the values are the data
    assert np.array_equal(validation.check_X(np.ma.masked_array(X.filled(0.0))), X.filled(0.0))


def test_masked_X_and_y_are_refused_by_the_estimator():
    from experiments.estimator import SVMClassifier

    X, y = masked_moons()
    with pytest.raises(SVMInputError, match="X is a masked array with 3 masked entries"):
        SVMClassifier(kernel="rbf").fit(X, y)
    with pytest.raises(SVMInputError, match="y is a masked array with 1 masked entry"):
        SVMClassifier(kernel="rbf").fit(X.filled(0.0), np.ma.masked_array(y, mask=np.arange(40) == 7))
    fitted = SVMClassifier(kernel="rbf").fit(X.filled(0.0), y)
    with pytest.raises(SVMInputError, match="X is a masked array with 3 masked entries"):
        fitted.predict(X)


def test_a_column_y_and_numbers_as_text_are_taken_as_scikit_learn_takes_them():
    """As SVC and experiments.estimator: a column y (n, 1) is y.ravel() with a DataConversionWarning (before, no
    word), and X's numbers written as text are those numbers; the solve is the same as on the plain input."""
    from sklearn.exceptions import DataConversionWarning

    plain = api.solve("soft_primal", X_OK, Y_OK, C=1.0, layer="cvxpy", backend="clarabel")
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        column = api.solve("soft_primal", X_OK, Y_OK[:, None], C=1.0, layer="cvxpy", backend="clarabel")
    text = api.solve("soft_primal", X_OK.astype(str), Y_OK, C=1.0, layer="cvxpy", backend="clarabel")
    for sol in (column, text):
        assert sol.status == "optimal"
        np.testing.assert_allclose(sol.w, plain.w, rtol=0, atol=1e-12 * np.linalg.norm(plain.w))


@pytest.mark.parametrize("call, shown", [
    (lambda: validation.check_C(np.float64(-1.0)), "got -1.0"),
    (lambda: validation.check_labels(np.array([np.float32(2.0)] * 3, dtype=object)), "[2.0]"),
    (lambda: formulations.kernels.Kernel("rbf", gamma=np.float64(-2.0)), "got -2.0"),
    (lambda: __import__("experiments.estimator").estimator.SVMClassifier().fit(X_OK, np.ones(6)), "1 class (1.0)"),
    (lambda: __import__("experiments.estimator").estimator.SVMClassifier(C=np.float64(-1.0)).fit(X_OK, Y_OK),
     "got -1.0"),
])
def test_messages_show_numpy_scalars_as_plain_numbers(call, shown):
    """numpy 2 writes repr(np.float64(1.0)) as 'np.float64(1.0)': a message shows 1.0."""
    with pytest.raises(SVMInputError) as caught:
        call()
    assert shown in str(caught.value) and "np." not in str(caught.value), str(caught.value)
