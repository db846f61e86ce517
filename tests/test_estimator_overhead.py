"""What the estimator's speed-ups rest on, checked as numbers, not as timings:

- solvers.blas: one BLAS thread through a controller made once, restored on exit;
- the full kernel dual takes Mercer's condition by theorem for linear, rbf and poly (as the
  working set does) and still checks sigmoid and a precomputed K on their eigenvalues;
- the proved optimum (solvers.reference.polish) settles on the breast-cancer folds where a free
  point was held on a bound by the bounded least-squares fallback, and it is SVC's optimum;
- the estimator's predictions do not depend on the BLAS thread count.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_info

import experiments.estimator as estimator_module
from experiments.bench import estimator_vs_svc as estimator_bench
from experiments.estimator import SVMClassifier
from formulations.errors import IndefiniteKernelError
from formulations.kernels import Kernel, gram
from solvers import blas
from solvers.solution import OPTIMAL
from solvers.api import solve
from solvers.reference import Gram, polish


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def _breast_cancer_folds(n_folds: int = 2):
    """The first folds of the estimator benchmark's 5-fold split (experiments.bench.estimator_vs_svc)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    for k, (train, _) in enumerate(cv.split(X, y)):
        if k == n_folds:
            return
        yield X[train], np.where(y[train] == 1, 1.0, -1.0)


# ----------------------------------------------------------------------------- solvers.blas


def test_one_thread_limits_blas_and_restores_it():
    blas.refresh()
    before = _blas_threads()
    assert before, "no BLAS library found by threadpoolctl"
    with blas.one_thread():
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before
    assert blas.controller() is blas.controller()  # made once, not at every call


def test_one_thread_if_leaves_blas_alone_when_not_small():
    before = _blas_threads()
    with blas.one_thread_if(False):
        assert _blas_threads() == before
    with blas.one_thread_if(True):
        assert max(_blas_threads()) == 1


# ----------------------------------------------------------------------------- Mercer by theorem


@pytest.mark.parametrize("kernel", [Kernel("rbf", gamma=0.5), Kernel("poly", gamma=0.5, degree=3, coef0=1.0),
                                    Kernel("linear")])
def test_full_kernel_dual_takes_mercer_by_theorem_and_is_verified(kernel):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    sol = solve("kernel_dual", X, y, layer="pyomo", backend="piqp", C=1.0, kernel=kernel, method="full")
    assert sol.extras["method"] == "full"
    assert sol.extras["psd"] is True
    assert sol.extras["mercer_method"] == f"by theorem ({kernel.name})"
    assert "min_eigenvalue" not in sol.extras
    assert sol.status == OPTIMAL
    # the theorem holds numerically: the smallest eigenvalue is rounding, far inside the check's 1e-10
    eigenvalues = np.linalg.eigvalsh(gram(kernel, X))
    assert eigenvalues[0] >= -1e-12 * eigenvalues[-1]


def test_sigmoid_and_precomputed_are_still_checked_on_their_eigenvalues():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1.0, -1.0)
    with pytest.raises(IndefiniteKernelError, match="-21.8"):
        solve("kernel_dual", X, y, layer="pyomo", backend="piqp", C=1.0, kernel=Kernel("sigmoid", gamma=1, coef0=-1),
              method="full")
    K = gram(Kernel("rbf", gamma=0.5), X)
    sol = solve("kernel_dual", None, y, layer="pyomo", backend="piqp", C=1.0, K=K, method="full")
    assert sol.extras["mercer_method"] == "eigvalsh"
    assert sol.extras["min_eigenvalue"] == pytest.approx(np.linalg.eigvalsh(K)[0], abs=1e-12)


# ----------------------------------------------------------------------------- the proved optimum


@pytest.mark.parametrize("fold", [0, 1])
def test_polish_proves_the_optimum_where_the_fallback_held_points_on_a_bound(fold):
    """RBF, C = 0.1, gamma = 0.1: the free points' system gave alphas outside [0, C]; the bounded
    least-squares fallback held them on a bound and the sets never changed (12 rounds, then the
    weaker gap bound: fold 1 ended optimal_inaccurate). Now: proved, and equal to LIBSVM's optimum."""
    X, y = list(_breast_cancer_folds())[fold]
    C, kernel = 0.1, Kernel("rbf", gamma=0.1)
    sol = solve("kernel_dual", X, y, layer="pyomo", backend="piqp", C=C, kernel=kernel, method="full")
    assert sol.status == OPTIMAL
    assert sol.checks["reference"] == "proved optimum"
    assert sol.checks["err_objective"] <= 1e-4 and sol.checks["err_decision"] <= 1e-4

    K = gram(kernel, X)
    ref = polish(Gram(None, K), y, C, sol.alpha, sol.decision)
    assert ref.ok and ref.rounds <= 3
    svc = SVC(kernel="precomputed", C=C, tol=1e-10).fit(K, y)
    u = np.zeros(len(y))
    u[svc.support_] = svc.dual_coef_[0]
    libsvm_dual = np.abs(u).sum() - 0.5 * u @ K @ u
    assert ref.objective == pytest.approx(libsvm_dual, rel=1e-7)
    assert np.all(ref.alpha >= 0) and np.all(ref.alpha <= C * (1 + 1e-12))
    assert abs(ref.alpha @ y) <= 1e-10 * ref.alpha.sum()


# ----------------------------------------------------------------------------- the estimator


def test_predictions_do_not_depend_on_the_blas_thread_count(monkeypatch):
    X, y = next(_breast_cancer_folds(1))
    limited = SVMClassifier(kernel="rbf", gamma=0.1).fit(X, y)
    f_limited = limited.decision_function(X)
    monkeypatch.setattr(estimator_module, "ONE_BLAS_THREAD_UP_TO", 0)  # BLAS's own thread count
    free = SVMClassifier(kernel="rbf", gamma=0.1).fit(X, y)
    f_free = free.decision_function(X)
    assert limited.solution_.status == free.solution_.status == OPTIMAL
    assert np.max(np.abs(f_limited - f_free)) <= 1e-6 * np.max(np.abs(f_free))
    np.testing.assert_array_equal(limited.predict(X), free.predict(X))


def test_one_blas_limit_per_fit_where_the_fit_is_small_and_one_per_pair_above(monkeypatch):
    """A fit of few samples limits BLAS once for all its pairs (a threadpoolctl context is not free); a fit above
    ONE_BLAS_THREAD_UP_TO still puts each small pair on one thread."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    limits = []
    real = blas.one_thread
    monkeypatch.setattr(blas, "one_thread", lambda: limits.append(1) or real())
    monkeypatch.setattr(estimator_module, "ONE_BLAS_THREAD_FROM", 100)  # the fit (150) and its pairs (100) in range
    SVMClassifier().fit(X, y)  # 3 pairs
    assert len(limits) == 1
    limits.clear()
    monkeypatch.setattr(estimator_module, "ONE_BLAS_THREAD_UP_TO", 120)  # the fit (150) above, each pair (100) below
    SVMClassifier().fit(X, y)
    assert len(limits) == 3


def test_a_fit_of_fewer_samples_than_one_blas_thread_from_never_scans_the_libraries(monkeypatch):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    assert len(y) < estimator_module.ONE_BLAS_THREAD_FROM
    monkeypatch.setattr(blas, "_controller", None)
    model = SVMClassifier().fit(X, y)
    assert blas._controller is None  # no threadpoolctl scan was made
    assert model.score(X, y) >= 0.95


# ----------------------------------------------------------------------------- the benchmark


@pytest.mark.parametrize("weighted", [False, True])
def test_estimator_bench_single_fit_rows_and_ratios(weighted):
    rows = estimator_bench.single_fit(200, repeat=2, weighted=weighted)
    assert [row["what"].split(", ")[-1] for row in rows] == ["SVC (tol 1e-3)", "SVC (tol 1e-6)",
                                                              "SVMClassifier (pyomo/piqp)"]
    assert all(("sample weights" in row["what"]) == weighted for row in rows)
    assert rows[0]["x SVC"] == 1.0
    for row in rows:
        assert row["seconds"] > 0 and row["x SVC"] == pytest.approx(row["seconds"] / rows[0]["seconds"], rel=1e-12)
    # the estimator's decision values are LIBSVM's at tol 1e-6, to the solver's default accuracy
    assert rows[2]["max |f - f_SVC 1e-6| / max |f|"] <= 1e-4


@pytest.mark.parametrize("argv,message", [(["--repeat", "0"], "--repeat must be at least 1, got 0"),
                                          (["--n", "5"], "--n must be at least 10, got 5"),
                                          (["--fresh", "--pairs", "0"], "--pairs must be at least 1, got 0"),
                                          (["--one-core"], "--one-core goes with --fresh")])
def test_estimator_bench_refuses_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        estimator_bench.main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_estimator_bench_small_and_hard_rows():
    """--small: one row each for SVC and the estimator per case, the ratio run by run (1.0 for SVC itself), and the
    estimator's decision values SVC's at tol 1e-6 to the default profile's accuracy (digits, iris, the hard family)."""
    rows = estimator_bench.small_and_hard(repeat=1, n_hard=300)
    cases = ["digits", "iris", "hard family n = 300", "grid search 4 x 3 x 5 folds, breast cancer"]
    assert [row["what"] for row in rows] == [f"{case}, {name}" for case in cases for name in ("SVC", "SVMClassifier")]
    for svc, ours in zip(rows[::2], rows[1::2]):
        assert svc["x SVC"] == 1.0 and svc["seconds"] > 0
        assert ours["x SVC"] == pytest.approx(ours["seconds"] / svc["seconds"], rel=1e-12)
    for ours in rows[1:6:2]:
        assert ours["max |f - f_SVC 1e-6| / max |f|"] <= 1e-4
    X, y = estimator_bench.hard_family(500)
    assert X.shape == (500, 10) and abs(np.mean(y > 0) - 0.4) < 0.06 and np.allclose(X.mean(axis=0), 0, atol=1e-12)


def test_estimator_bench_large_c_rows(capsys, monkeypatch):
    """--large-c: one row each for SVC and the estimator per C, the ratio run by run, the estimator's pairs
    `optimal` (past SMO's budget by the solver alone), and a progress line a C."""
    monkeypatch.setitem(estimator_bench.LARGE_C_DATA, "n_samples", 300)
    rows = estimator_bench.large_c(repeat=1, Cs=(1.0, 1e4))
    assert [row["what"] for row in rows] == [f"noisy moons n = 300, C = {C}, {name}" for C in ("1", "10000")
                                             for name in ("SVC", "SVMClassifier")]
    for svc, ours in zip(rows[::2], rows[1::2]):
        assert svc["x SVC"] == 1.0 and ours["x SVC"] == pytest.approx(ours["seconds"] / svc["seconds"], rel=1e-12)
    assert rows[1]["pairs"] == "optimal via direct/smo" and rows[3]["pairs"].startswith("optimal via direct/")
    assert rows[3]["pairs"] != "optimal via direct/smo"
    assert capsys.readouterr().err.count("x SVC") == 2


@pytest.mark.slow
def test_estimator_bench_fresh_first_fits(capsys, monkeypatch):
    """--fresh: one row a case, the seconds each child process printed, the median pair-by-pair ratio within their
    range, and a progress line a case."""
    monkeypatch.setattr(estimator_bench, "BUILD_WAIT", 0)  # one untimed pair, built or not
    rows = estimator_bench.fresh_first_fits(pairs=2, cases=("iris", "digits, whole set"))
    assert [row["what"] for row in rows] == ["first fit in a fresh process, iris",
                                             "first fit in a fresh process, digits, whole set"]
    assert [row["samples"] for row in rows] == [105, 1797]  # iris's 70% split; digits whole
    for row in rows:
        low, high = (float(v) for v in row["x SVC min-max"].split("-"))
        assert row["pairs"] == 2 and 0 < row["seconds"] < 60 and 0 < row["SVC seconds"] < 60
        assert row["ahead-of-time build"] in ("0 of 2", "1 of 2", "2 of 2")
        assert round(low, 2) - 0.01 <= row["x SVC"] <= round(high, 2) + 0.01
    assert capsys.readouterr().err.count("x SVC over 2 pairs") == 2


def test_one_core_pins_each_fresh_child_to_one_core():
    """--one-core's children start on one core: the program they run sees one (as the estimator's threads and BLAS
    count them), whatever the parent may use."""
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("no core to pin to here: one core only, or a platform without affinities")
    seen = subprocess.run([sys.executable, "-c", "import os; print(len(os.sched_getaffinity(0)))"], capture_output=True,
                          text=True, check=True, preexec_fn=estimator_bench._on_one_core).stdout
    assert seen.strip() == "1"


def test_a_failing_fresh_fit_names_its_case(monkeypatch):
    monkeypatch.setitem(estimator_bench.FRESH_CASES, "nowhere", ("load_nowhere", False, True))
    with pytest.raises(RuntimeError, match=r"the fresh fit of nowhere \(SVMClassifier\) failed: AttributeError"):
        estimator_bench.fresh_first_fits(pairs=1, cases=("nowhere",))


def test_interleaved_warms_each_fit_once_untimed():
    """interleaved(warm=True): each fit once before the timed rounds (a process's first fit loads compiled code),
    then `repeat` timed calls of each in turn, A B A B."""
    from experiments.bench.interleaved import interleaved

    calls = []
    times = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 2, warm=True)
    assert calls == ["a", "b", "a", "b", "a", "b"]
    assert {name: len(seconds) for name, seconds in times.items()} == {"a": 2, "b": 2}
