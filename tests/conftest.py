"""Shared fixtures: the backend registry as pytest parameters, and per-backend tolerances."""

from __future__ import annotations

import warnings

import pytest

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


def backend_params():
    """Every registered (layer, backend), skipped with its reason when unavailable."""
    params = []
    for layer, name in BACKENDS:
        ok, reason = availability(layer, name)
        marks = [] if ok else [pytest.mark.skip(reason=f"{layer}/{name}: {reason}")]
        params.append(pytest.param(layer, name, id=f"{layer}-{name}", marks=marks))
    return params


@pytest.fixture(autouse=True)
def _quiet_solver_warnings():
    # qpsolvers warns when it converts sparse matrices for dense solvers; not a test failure.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Cc]onvert.*")
        yield
