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
