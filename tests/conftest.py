"""Shared fixtures: the backend registry as pytest parameters, and per-backend tolerances."""

from __future__ import annotations

import importlib.metadata as md
import warnings

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
