"""A backend is one record: the records drive the registry, the profiles and the adapters, and a
new backend is its record plus a tiny adapter (registered, solved through solvers.api, removed)."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from scipy.optimize import LinearConstraint, minimize

from experiments.datasets import example_5_1
from solvers import registry
from solvers.solution import (
    ERROR, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, RawResult, Solution, TIME_LIMIT, UNBOUNDED
)
from solvers.api import solve
from solvers.backends import DENSE, DENSE_IF_DENSE, RECORDS, Backend, BackendRecord, ranked
from solvers.bridge.pyomo_standard_form import from_pyomo, load_into_pyomo
from solvers.errors import BackendUnavailableError
from solvers.profiles import backend_options
from tests.conftest import skip_unless_available

# The notes' Example 5.1, to the digits the notes print (seed 001).
W_5_1 = np.array([-0.9229, 0.7627])
B_5_1 = 1.1976


@dataclasses.dataclass
class ScipyAdapter:
    """A tiny Pyomo adapter: the standard-form bridge, then SciPy's SLSQP (no multipliers: the
    project's checks estimate them, as for cvxpy's Ipopt)."""

    record: BackendRecord
    layer: str = "pyomo"
    calls: int = 0

    @property
    def name(self) -> str:
        return self.record.name

    def installed(self):
        return True, "installed"

    def availability(self):
        return True, "available"

    def version(self):
        return "test"

    def solve(self, model, options, time_limit=None):
        self.calls += 1
        qp = from_pyomo(model)
        P = qp.P.toarray() if hasattr(qp.P, "toarray") else np.asarray(qp.P)
        constraints = [LinearConstraint(qp.G.toarray(), -np.inf, qp.h)] if qp.G.shape[0] else []
        if qp.A.shape[0]:
            constraints.append(LinearConstraint(qp.A.toarray(), qp.b, qp.b))
        start = time.perf_counter()
        res = minimize(lambda x: 0.5 * x @ P @ x + qp.q @ x, np.zeros(qp.n), jac=lambda x: P @ x + qp.q,
                       constraints=constraints, bounds=list(zip(qp.lb, qp.ub)), method="SLSQP",
                       options={"ftol": options.get("ftol", 1e-14), "maxiter": 500})
        load_into_pyomo(qp, model, res.x, None, None)
        return RawResult(status=OPTIMAL if res.success else ERROR, raw_status=str(res.message),
                            objective=qp.objective(res.x), iterations=int(res.nit),
                            solve_s=time.perf_counter() - start, has_duals=False)


FAKE = BackendRecord("scipy_slsqp", "SciPy SLSQP", distribution="scipy", module="scipy", cvxpy_name=None,
                     qpsolvers_name=None, pyomo_route=None, direct=False,
                     tolerances=lambda tol: {"ftol": tol * 1e-3}, quirks="a test's backend")


@pytest.fixture
def fake_backend():
    adapter = ScipyAdapter(FAKE)
    registry.register(FAKE, {"pyomo": adapter})
    try:
        yield adapter
    finally:
        registry.unregister(FAKE.name)


def test_a_registered_backend_solves_example_5_1_through_the_api(fake_backend):
    assert isinstance(fake_backend, Backend)
    ds = example_5_1()
    sol = solve("hard_primal", ds.X, ds.y, layer="pyomo", backend=FAKE.name, profile="high")
    assert fake_backend.calls == 1
    assert sol.status == OPTIMAL, sol.message  # the project's checks verified the point
    assert sol.backend == FAKE.name
    np.testing.assert_allclose(sol.w, W_5_1, atol=5e-5)  # half a unit of the notes' last digit
    assert sol.b == pytest.approx(B_5_1, abs=5e-5)
    assert sol.checks["rel_duality_gap"] <= 1e-6
    reference = solve("hard_primal", ds.X, ds.y, layer="pyomo", backend="clarabel", profile="high")
    np.testing.assert_allclose(sol.w, reference.w, rtol=1e-6)
    assert sol.b == pytest.approx(reference.b, rel=1e-6)


def test_unregister_removes_every_trace(fake_backend):
    assert ("pyomo", FAKE.name) in registry.BACKENDS and FAKE.name in registry.BACKEND_NAMES
    assert backend_options(FAKE.name, "high") == {"ftol": pytest.approx(1e-12)}
    registry.unregister(FAKE.name)
    assert FAKE.name not in RECORDS and FAKE.name not in registry.BACKEND_NAMES
    assert all(name != FAKE.name for _, name in registry.BACKENDS)
    with pytest.raises(BackendUnavailableError, match="scipy_slsqp"):
        registry.get_backend("pyomo", FAKE.name)
    ds = example_5_1()
    with pytest.raises(Exception, match="scipy_slsqp"):
        solve("hard_primal", ds.X, ds.y, layer="pyomo", backend=FAKE.name)


def test_register_refuses_a_duplicate_and_a_non_adapter():
    with pytest.raises(ValueError, match="already registered"):
        registry.register(RECORDS["clarabel"])
    with pytest.raises(TypeError, match="Backend protocol"):
        registry.register(FAKE, {"pyomo": object()})
    assert FAKE.name not in RECORDS


def test_every_registered_adapter_provides_the_protocol_and_reads_its_record():
    for (layer, name), adapter in registry.BACKENDS.items():
        assert isinstance(adapter, Backend), (layer, name)
        assert adapter.name == name and adapter.layer == layer
        assert layer in RECORDS[name].layers


def test_the_records_keep_the_preference_orders():
    assert [name for layer, name in registry.BACKENDS if layer == "pyomo"] == list(ranked("pyomo"))
    assert ranked("pyomo")[:2] == ("highs", "ipopt")
    assert ranked("cvxpy")[0] == "clarabel"


def test_the_dense_or_sparse_choice_is_the_records():
    assert RECORDS["daqp"].matrices == DENSE and RECORDS["daqp"].wants_dense(False)
    assert RECORDS["piqp"].matrices == DENSE_IF_DENSE
    assert RECORDS["piqp"].wants_dense(True) and not RECORDS["piqp"].wants_dense(False)
    assert RECORDS["piqp"].cvxpy_matrix_backend(True) == {"backend": "dense"}
    assert RECORDS["proxqp"].cvxpy_matrix_backend(True) == {}  # cvxpy's sparse ProxQP call fails
    assert RECORDS["clarabel"].cvxpy_matrix_backend(True) == {}


def test_time_limits_and_profiles_come_from_the_records():
    assert not registry.takes_time_limit("pyomo", "piqp") and not registry.takes_time_limit("cvxpy", "proxqp")
    assert registry.takes_time_limit("pyomo", "highs")
    assert RECORDS["scs"].time_limit(2) == {"time_limit_secs": 2.0}
    assert RECORDS["piqp"].time_limit(2) == {}
    assert backend_options("ipopt", "high")["bound_relax_factor"] == 0.0
    assert backend_options("osqp", "scale")["max_iter"] == 20_000
    assert backend_options("osqp", "default") == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        RECORDS["osqp"].name = "x"
    with pytest.raises(TypeError):
        RECORDS["osqp"].scale_overrides["max_iter"] = 1  # read-only all the way down


def test_cvxpys_user_limit_is_a_time_limit_where_the_solve_ran_to_one():
    """cvxpy says "user_limit" for an iteration limit and a time limit alike; cvxpy/HiGHS stopped by a
    time_limit of 10 s was reported as an iteration limit."""
    from solvers.adapters.cvxpy_layer import project_status

    assert project_status("user_limit", 10.0, 10.02) == TIME_LIMIT
    assert project_status("user_limit", 10.0, 3.0) == ITERATION_LIMIT  # stopped by its iteration cap
    assert project_status("user_limit", None, 60.0) == ITERATION_LIMIT
    assert project_status("optimal", 10.0, 12.0) == OPTIMAL
    assert project_status("no such status", None, 1.0) == ERROR


def test_a_status_that_names_a_limit_is_that_limit_in_both_layers():
    """SCS stopped by its time limit says "unbounded (inaccurate - reached time_limit_secs)" (qpsolvers: read as
    unbounded, an error row) or "solved (inaccurate - ...)" (cvxpy: optimal_inaccurate, the limit unnamed)."""
    from solvers.adapters.cvxpy_layer import project_status
    from solvers.adapters.pyomo_qp import map_raw_status

    for raw in ("unbounded (inaccurate - reached time_limit_secs)", "solved (inaccurate - reached time_limit_secs)",
                "infeasible (inaccurate - reached time_limit_secs)"):
        assert map_raw_status(raw, True) == TIME_LIMIT
        assert project_status("optimal_inaccurate", 2.0, 2.1, raw) == TIME_LIMIT
    assert map_raw_status("solved (inaccurate - reached max_iters)", True) == ITERATION_LIMIT
    assert project_status("optimal_inaccurate", None, 1.0, "solved (inaccurate - reached max_iters)") \
        == ITERATION_LIMIT
    # the statuses without a limit keep their meaning
    assert map_raw_status("unbounded", True) == UNBOUNDED and map_raw_status("solved", True) == OPTIMAL
    assert map_raw_status("solved (inaccurate)", True) == OPTIMAL_INACCURATE
    assert project_status("optimal", None, 1.0, "Solved") == OPTIMAL


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
@pytest.mark.parametrize("backend", sorted(RECORDS))
def test_every_backend_takes_the_tightest_tolerance_the_project_asks(layer, backend):
    """The primal working set's settling step asks each backend for SETTLE_TOL = 1e-12; HiGHS refuses feasibility
    tolerances below 1e-10 and raised (cvxpy) on it, so its record clamps them. Every backend accepts what its
    record gives at that tolerance, and solves Example 5.1's soft margin with it."""
    from solvers.algorithms.primal_working_set import SETTLE_TOL
    from solvers.profiles import tolerance_options

    skip_unless_available(layer, backend)
    ds = example_5_1()
    sol = solve("soft_primal", ds.X, ds.y, layer=layer, backend=backend, C=1.0, method="full",
                options=tolerance_options(backend, SETTLE_TOL))
    assert sol.status in (OPTIMAL, OPTIMAL_INACCURATE, ITERATION_LIMIT), (sol.status, sol.message)
    assert "refus" not in sol.message and "kError" not in sol.message


def test_highs_banner_stays_off_the_console():
    """HiGHS prints "Running HiGHS ..." on stdout at a process's first Highs(), which cvxpy and qpsolvers make at
    each solve: a fresh process solving through both says nothing on stdout."""
    import subprocess
    import sys

    script = ("from experiments.datasets import example_5_1\n"
              "from solvers.api import solve\n"
              "ds = example_5_1()\n"
              "for layer, method in (('cvxpy', 'full'), ('direct', 'working_set')):\n"
              "    solve('dual', ds.X, ds.y, layer=layer, backend='highs', C=1.0, method=method)\n"
              "print('done')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == "done\n"


def test_a_call_without_a_limit_is_warned_where_its_backend_stalls(monkeypatch):
    """HiGHS's QP solver stalls on the SVM QPs from n = 1,000 (its record): a call there without a time limit
    may not return, and says so; with a limit, or below that n, or with another backend, nothing is said. ProxQP's
    stall on the linear dual is said for the dual only."""
    import warnings

    from experiments.datasets import overlapping
    from solvers import api

    from solvers import isolation

    monkeypatch.setattr(isolation, "ISOLATE", False)  # the stand-in below is in this process
    monkeypatch.setattr(api, "_solve_full", lambda *args, **kwargs: Solution(
        formulation="soft_primal", layer="cvxpy", backend="highs", status=ERROR, solver_status=ERROR,
        raw_status="not run"))  # the stalling solve itself is not run here
    ds = overlapping(RECORDS["highs"].stalls_from("soft_primal"), d=3, seed=0)
    with pytest.warns(api.StallWarning,
                      match=r"stalls on SVM soft_primal problems from n = 1,000 \(here n = 1,000\).*'piqp'"):
        solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="highs", C=1.0, method="full")
    with warnings.catch_warnings():
        warnings.simplefilter("error", api.StallWarning)
        solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="highs", C=1.0, method="full", time_limit=600.0)
        solve("soft_primal", ds.X[:999], ds.y[:999], layer="cvxpy", backend="highs", C=1.0, method="full")
        solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, method="full")
    # a stall named for one formulation (ProxQP's on the linear dual) is said for that formulation only
    wide = overlapping(RECORDS["proxqp"].stalls_from("dual"), d=3, seed=0)
    with pytest.warns(api.StallWarning, match=r"ProxQP's QP solver stalls on SVM dual problems from n = 1,500"):
        solve("dual", wide.X, wide.y, layer="pyomo", backend="proxqp", C=1.0, method="full")
    with warnings.catch_warnings():
        warnings.simplefilter("error", api.StallWarning)
        solve("soft_primal", wide.X, wide.y, layer="pyomo", backend="proxqp", C=1.0, method="full")
        solve("dual", wide.X, wide.y, layer="direct", backend="proxqp", C=1.0, method="working_set")  # small QPs


def test_an_installed_backend_that_is_not_usable_fails_the_tests_never_skips(monkeypatch):
    """tests/conftest.py skips a backend only where its packages are not installed: a broken adapter or install
    of one that is (CI installs them all) fails, naming why."""
    import tests.conftest as conftest

    monkeypatch.setattr(conftest, "availability", lambda layer, name: (False, "ImportError: broken adapter"))
    with pytest.raises(pytest.fail.Exception, match="cvxpy/clarabel is installed but not usable: ImportError"):
        conftest.skip_unless_available("cvxpy", "clarabel")
    params = {p.id: p.marks for p in conftest.backend_params()}
    assert not params["cvxpy-clarabel"]  # runs (and fails on the backend), not skipped
    monkeypatch.setattr(conftest, "installed", lambda name: False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        conftest.skip_unless_available("cvxpy", "clarabel")
    assert all(mark.name == "skip" for marks in (p.marks for p in conftest.backend_params()) for mark in marks)


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
def test_highs_cycling_on_a_small_dual_ends_at_its_iteration_cap(layer):
    """40 points (d = 2,000), rbf, C = 1e-6: HiGHS's QP solver cycles (17 million iterations in 20 s, never
    returning without a time limit; at C = 1e-3 it takes 114). Its record caps the QP iterations at every profile
    (always_options): the row is `iteration_limit`, not verified, well inside the time limit that guards this test;
    the user's own cap wins."""
    from formulations.kernels import Kernel
    from solvers.backends import HIGHS_QP_ITERATIONS
    from solvers.profiles import native_options

    rng = np.random.default_rng(521)
    X = rng.normal(size=(40, 2000))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=40) > 0, 1.0, -1.0)
    kernel = Kernel("rbf", gamma=1.0 / (X.var() * X.shape[1]))
    sol = solve("kernel_dual", X, y, C=1e-6, layer=layer, backend="highs", kernel=kernel, method="full",
                time_limit=120)
    assert sol.status == ITERATION_LIMIT and sol.iterations == HIGHS_QP_ITERATIONS + 1
    assert native_options("highs", "default")["qp_iteration_limit"] == HIGHS_QP_ITERATIONS
    assert native_options("highs", "high", {"qp_iteration_limit": 7})["qp_iteration_limit"] == 7
