"""A backend added with solvers.registry.register in the sweep's process is found in the runner's solve processes,
which its fork server starts from the project's records only (the row was a BackendUnavailableError)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from experiments.datasets import example_5_1
from experiments.runner import sweep
from experiments.runner.suites import Problem
from solvers import registry
from solvers.backends import RECORDS
from solvers.solution import OPTIMAL


@pytest.fixture
def clarabel_mine():
    # a lambda for its tolerances, as a user writes one: the registration travels by value
    record = dataclasses.replace(RECORDS["clarabel"], name="clarabel_mine", tolerances=lambda tol: {"tol_gap_abs": tol})
    registry.register(record)
    yield record.name
    registry.unregister(record.name)


@pytest.mark.parametrize("timeout", [None, 600.0])
def test_a_registered_backend_solves_in_the_runners_solve_process(clarabel_mine, timeout):
    ds = example_5_1()
    problem = Problem(dataset="example_5_1", params={}, formulation="soft_primal", C=1.0)
    (task,) = sweep.make_tasks([problem], {sweep.dataset_key("example_5_1", {}): ds}, [("cvxpy", clarabel_mine)],
                               suite="custom", timeout=timeout)
    row = sweep.run_isolated(task)
    assert row["status"] == OPTIMAL, row.get("error")
    assert json.loads(row["w"]) == pytest.approx([-0.9229, 0.7627], abs=5e-4) and row["b"] == pytest.approx(1.1976, abs=5e-4)
