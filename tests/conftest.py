"""Shared fixtures: the backend registry as pytest parameters, and per-backend tolerances; under pytest-xdist, numba's
cache filled once before the workers' tests (each worker would otherwise compile the same functions)."""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

from solvers.backends import RECORDS
from solvers.registry import BACKENDS, availability

# Tolerance on objectives (relative) and on w, b (absolute) per backend, at the `high` profile.
# First-order methods (OSQP, SCS) stop on residuals of their own, so they get looser bars.
TOLERANCES = {
    "highs": {"objective": 1e-6, "wb": 5e-5},
    "ipopt": {"objective": 1e-6, "wb": 5e-5},
    "clarabel": {"objective": 1e-7, "wb": 5e-5},
    "piqp": {"objective": 1e-7, "wb": 5e-5},
    "proxqp": {"objective": 1e-7, "wb": 5e-5},
    "daqp": {"objective": 1e-7, "wb": 5e-5},
    "osqp": {"objective": 1e-5, "wb": 5e-5},
    "scs": {"objective": 1e-5, "wb": 5e-5},
}


def installed(name: str) -> bool:
    """Whether the backend's distribution is installed (its record names it)."""
    try:
        md.version(RECORDS[name].distribution)
    except (KeyError, md.PackageNotFoundError):
        return False
    return True


def skip_unless_available(layer: str, name: str) -> None:
    """Skip a test of a backend that is not installed here. One installed but not usable fails with the reason:
    a skip would hide a broken adapter or a broken install (CI installs every backend)."""
    ok, reason = availability(layer, name)
    if ok:
        return
    if installed(name):
        pytest.fail(f"{layer}/{name} is installed but not usable: {reason}")
    pytest.skip(f"{layer}/{name} is not installed: {reason}")


def backend_params():
    """Every registered (layer, backend); skipped, with its reason, only where its packages are not installed
    (one installed but not usable runs, and fails with the reason)."""
    params = []
    for layer, name in BACKENDS:
        ok, reason = availability(layer, name)
        marks = [] if ok or installed(name) else [pytest.mark.skip(reason=f"{layer}/{name}: {reason}")]
        params.append(pytest.param(layer, name, id=f"{layer}-{name}", marks=marks))
    return params


@pytest.fixture(autouse=True)
def _quiet_solver_warnings():
    # qpsolvers warns when it converts sparse matrices for dense solvers; not a test failure.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Cc]onvert.*")
        yield


#: Parametrized cases that run with the slow tests (`python -m pytest -m slow`), each the costly twin of a case of
#: the same test that stays in the default run (the case named after it checks the same behaviour). Listed here,
#: by node id, where the parameters are a product (or generated) and one case cannot carry a mark of its own.
SLOW_CASES = {
    # the pyomo layer's build of the C = 1e12 primal; ProxQP's fault at 1e12 stays through cvxpy
    "tests/test_reliability.py::test_extreme_c_never_optimal_when_wrong[pyomo-proxqp-soft_primal-example_5_1-C1e12]":
        "[cvxpy-proxqp-soft_primal-example_5_1-C1e12]",
    # the sigmoid kernel on the sparse formats other than csr_matrix; each format stays with the other kernels
    **{f"tests/test_sklearn_family_suite.py::test_sparse__sparse_oneclasssvm[{fmt}-sigmoid-X_train2-None-X_test2]":
       "[csr_matrix-sigmoid-X_train2-None-X_test2]" for fmt in ("csr_array", "lil_array", "lil_matrix")},
    **{f"tests/test_sklearn_svc_suite.py::test_sparse__svc[{fmt}-poly-X_train2-y_train2-X_test2]":
       "[csr_matrix-poly-X_train2-y_train2-X_test2]" for fmt in ("csr_array", "lil_array", "lil_matrix")},
    # one L-BFGS step then the loop's correction, through the modelling layers; the direct layer stays, and so do
    # the layers' full smoothed start
    **{f"tests/test_linear_large.py::test_the_smoothed_start_on_wide_data_ends_at_the_reference[{layer}-piqp-1]":
       "[direct-piqp-1]" for layer in ("cvxpy", "pyomo")},
}


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in SLOW_CASES:
            item.add_marker(pytest.mark.slow)


# numba's cache (`@njit(cache=True)`, files beside the sources) is safe to fill from several processes at once
# (formulations/numba_cache.py locks it), but each worker finding it empty would compile the same functions for
# itself. In a distributed run the controller fills it in one process of its own while the workers start and
# collect, and the workers' tests wait for that process (a lock it holds until it exits, however it ends): no worker
# then compiles what a solve uses, and their tests' time is not each a compile's.
WARM_LOCK = "numba_warm_lock"


def _distributed(config) -> bool:
    """Whether this process is the controller of a run on pytest-xdist's workers (xdist's own test)."""
    return (not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"
            and bool(config.getoption("tx", None)) and not config.getoption("collectonly"))


def pytest_configure(config):
    if not _distributed(config):
        return  # a worker, or a run in this one process (which compiles as it goes, alone)
    import fcntl  # here: Linux and macOS only, where the suite runs distributed

    lock = Path(tempfile.mkdtemp(prefix="svm-duality-warm-")) / "lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the child's copy of the descriptor keeps the lock until the child exits
        config._numba_warm = subprocess.Popen(
            [sys.executable, "-c", "from solvers.isolation import warm_compiled; warm_compiled()"],
            cwd=config.rootpath, pass_fds=(held.fileno(),), stdin=subprocess.DEVNULL)
    config._numba_warm_lock = lock


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent under -p no:xdist
def pytest_configure_node(node):
    node.workerinput[WARM_LOCK] = str(node.config._numba_warm_lock)


def pytest_unconfigure(config):
    warm = getattr(config, "_numba_warm", None)
    if warm is not None:
        warm.terminate()  # ended by then, unless the run stopped before its tests (numba's writes are atomic)
        warm.wait()
        os.unlink(config._numba_warm_lock)
        os.rmdir(config._numba_warm_lock.parent)


@pytest.fixture(scope="session", autouse=True)
def _numba_cache_filled(request):
    lock = getattr(request.config, "workerinput", {}).get(WARM_LOCK)
    if lock is None:
        return
    import fcntl

    with open(lock) as waiting:
        fcntl.flock(waiting, fcntl.LOCK_SH)  # blocks until the controller's warming process has exited
