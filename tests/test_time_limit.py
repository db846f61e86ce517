"""A time limit is when the call returns (solvers.deadline): every subproblem of the working sets is given the time
that remains, their polish, proofs and starts stop at it, the closing checks do not prove what the time is up for,
and the row is `time_limit`, saying where it stopped (never `optimal` without the checks).

No test here depends on how long a solve takes, nor sleeps: the clock is a stand-in that moves only when a test
moves it (a subproblem "takes" 40 s of it), or a limit that has passed before the first check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.datasets import overlapping
from formulations.kernel_dual import dual_matrix
from formulations.kernels import Kernel, gram
from solvers import api, closing, isolation, profiles, reference, registry
from solvers.solution import OPTIMAL, RawResult, Solution, TIME_LIMIT
from solvers.adapters import pyomo_qp
from solvers.algorithms import primal_working_set as pws
from solvers.algorithms import working_set as ws
from solvers.algorithms.working_set import optimality, pair_steps, polish, state, subproblems
from solvers.algorithms.working_set import loop as ws_loop
from solvers.deadline import MIN_BACKEND_LIMIT, NEVER, Deadline

N = 240


class Clock:
    """A clock that moves only when told."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(autouse=True)
def in_this_process(monkeypatch):
    """These tests are about the deadline's own stops, in this process (stand-ins, spies, a limit of 1e-9): the kill
    of a solve server's child past the limit is tests/test_isolation.py's. With a limit of 1e-9 the kill raced the
    child's own stop on a busy machine (CI, beside another run): the row then named no stage."""
    monkeypatch.setattr(isolation, "ISOLATE", False)


def passed() -> Deadline:
    """A deadline that has passed."""
    return Deadline(1.0, clock=lambda: 2.0, began=0.0)


@pytest.fixture(scope="module")
def data():
    ds = overlapping(N, d=10, seed=3)
    y = ds.y.astype(float)
    return ds.X, y, gram(Kernel("rbf", gamma=0.1), ds.X)


def _taking(monkeypatch, module, layer: str, clock: Clock, seconds: float) -> list:
    """Each subproblem of `module`'s `layer` takes `seconds` on `clock`; returns the list of the time limits they
    were given."""
    given, real = [], module.SUBSOLVERS[layer]

    def subproblem(*args):
        given.append(args[-1])
        out = real(*args)
        clock.advance(seconds)
        return out

    monkeypatch.setitem(module.SUBSOLVERS, layer, subproblem)
    return given


def test_a_deadline_counts_from_its_start_and_hands_backends_a_positive_limit():
    clock = Clock()
    deadline = Deadline(10.0, clock=clock)
    clock.advance(4.0)
    assert deadline.remaining() == 6.0 and not deadline.passed() and deadline.for_backend() == 6.0
    clock.advance(6.0)
    # OSQP refuses a time limit of 0 and SCS reads it as none: never 0
    assert deadline.passed() and deadline.remaining() == 0.0 and deadline.for_backend() == MIN_BACKEND_LIMIT
    assert deadline.stopped("in the checks") == "stopped at the time limit (10 s) in the checks, 10 s in all"
    # between two steps of a working set, it says so
    assert deadline.stopped_after("15 steps") == ("stopped at the time limit (10 s) after 15 steps, between two of "
                                                  "them, 10 s in all")
    assert deadline.stopped_after("0 steps") == "stopped at the time limit (10 s) after 0 steps, before the first, 10 s in all"
    assert Deadline.of(deadline) is deadline and Deadline.of(None).remaining() is None
    assert not NEVER.passed() and NEVER.for_backend() is None


@pytest.mark.parametrize("backend", ["osqp", "piqp"])
def test_each_kernel_subproblem_is_given_the_time_that_remains(data, monkeypatch, backend):
    """Subproblems of 40 s against a limit of 100 s: the third is given the 20 s left, runs past it, and its point
    is not taken; the row says where it stopped, and what a backend without a limit of its own did there."""
    _, y, K = data
    clock = Clock()
    given = _taking(monkeypatch, subproblems, "direct", clock, 40.0)
    sol = ws.solve(K, y, 10.0, backend=backend, layer="direct", q=10, validate=False,
                   time_limit=Deadline(100.0, clock=clock), engine="blocks")
    assert given == [100.0, 60.0, 20.0]
    assert sol.status == TIME_LIMIT and sol.w is None and math.isnan(sol.objective)
    assert sol.message.startswith("stopped at the time limit (100 s) after 2 steps, in the subproblem of step 3 (")
    if backend == "osqp":
        assert sol.message.endswith("points), given the 20 s left, 120 s in all")
    else:
        assert sol.message.endswith("points), which direct/piqp ran to its end (it has no time limit of its own), "
                                    "120 s in all")


@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
@pytest.mark.parametrize("backend", ["osqp", "piqp"])
def test_the_kernel_subproblems_hand_their_limit_to_a_backend_that_has_one(data, monkeypatch, layer, backend):
    """In every layer the block's time limit reaches the backend's own option (OSQP's time_limit); PIQP has none,
    and is handed none."""
    import cvxpy as cp

    _, y, K = data
    seen = []
    real_qp, real_cvxpy = pyomo_qp.solve_standard_qp, cp.Problem.solve

    def qp_spy(qp, record, options):
        seen.append(dict(options))
        return real_qp(qp, record, options)

    def cvxpy_spy(problem, *args, **kwargs):
        seen.append(dict(kwargs))
        return real_cvxpy(problem, *args, **kwargs)

    monkeypatch.setattr(subproblems, "solve_standard_qp", qp_spy)  # the solver alone
    monkeypatch.setattr(pyomo_qp, "solve_standard_qp", qp_spy)  # the Pyomo bridge's adapter
    monkeypatch.setattr(cp.Problem, "solve", cvxpy_spy)
    B = np.arange(0, N, 4)  # both classes
    Q_BB = dual_matrix(K[np.ix_(B, B)], y[B])
    s, _ = subproblems.SUBSOLVERS[layer](Q_BB, -np.ones(B.size), y[B], 0.0, 1.0, backend, {}, 7.5)
    assert s is not None and len(seen) == 1
    assert seen[0].get("time_limit") == (7.5 if backend == "osqp" else None)


def test_a_limit_passed_before_the_first_check_starts_no_subproblem(data, monkeypatch):
    X, y, _ = data
    given = _taking(monkeypatch, subproblems, "cvxpy", Clock(), 0.0)
    sol = api.solve("kernel_dual", X, y, layer="cvxpy", backend="piqp", C=1.0, kernel="rbf", method="working_set",
                    time_limit=1e-9)
    assert given == [] and sol.status == TIME_LIMIT and sol.iterations == 1
    assert sol.message.startswith("stopped at the time limit (1e-09 s) after 0 steps, ")
    assert sol.message.endswith(" s in all")  # no subproblem ran: nothing to say about one


def test_the_split_start_and_the_final_proof_stop_at_the_deadline(data):
    """From 2,000 points the loop starts from a restricted dual (the split start): past the limit it is not solved
    and the row says the limit stopped it there. A loop that stopped at its stall has its point proved after it
    (_finish): past the limit that proof does not run, and the result is a time limit, not a claim to check."""
    ds = overlapping(2000, d=2, seed=1)
    sol = ws.solve(gram(Kernel("rbf"), ds.X), ds.y, 1.0, backend="osqp", layer="direct", q=500, validate=False,
                   time_limit=1e-9, engine="blocks")
    assert sol.status == TIME_LIMIT and "after 0 steps, in the split start, " in sol.message
    assert sol.extras["start"].endswith("the restricted QP stopped at the time limit; started at zero")
    _, y, K = data
    loop = state.LoopState(np.zeros(N), -np.ones(N), "zero", deadline=passed())
    res = ws_loop._finish(optimality.as_rows(K), y, 1.0, loop, 0.0, False, True, ws.WorkingSetOptions())
    assert res.timed_out and res.stalled and not res.converged
    assert res.stopped_in == "in the proof of the optimum after the loop"


def test_the_polish_the_smo_steps_and_the_proof_stop_at_the_deadline(data):
    _, y, K = data
    B = np.arange(0, N, 4)  # both classes
    Q_BB, C = dual_matrix(K[np.ix_(B, B)], y[B]), 10.0
    a, _ = subproblems.SUBSOLVERS["direct"](Q_BB, -np.ones(B.size), y[B], 0.0, C, "piqp", {})
    exact = polish.polish_block(Q_BB, -np.ones(B.size), y[B], 0.0, C, a)
    assert exact is not None and np.any((exact > 0) & (exact < C))
    assert polish.polish_block(Q_BB, -np.ones(B.size), y[B], 0.0, C, a, deadline=passed()) is None  # the solver's point
    alpha, g = np.zeros(N), -np.ones(N)
    assert pair_steps.smo_steps(optimality.as_rows(K), y, alpha, g, C, 0.0, 1e-6, 100, deadline=passed()) == 0
    assert not alpha.any() and np.all(g == -1.0)
    sol = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=C, method="full")
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum"
    stopped = reference.polish(reference.Gram(None, K), y, C, sol.alpha, sol.decision, deadline=passed())
    assert not stopped.ok and stopped.reason == reference.STOPPED


def test_an_optimum_whose_checks_the_limit_cuts_is_a_time_limit_row(data):
    """The same point, closed with time left and closed after the limit: `optimal` only where the checks' proof
    ran; past the limit a `time_limit` row that says so, neither verified nor called a false claim."""
    _, y, K = data
    found = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=1.0, method="full")

    def closed(deadline):
        sol = Solution(formulation="kernel_dual", layer="cvxpy", backend="clarabel", status=OPTIMAL,
                          solver_status=OPTIMAL, raw_status="solved", objective=found.objective)
        return closing.close(sol, {"alpha": found.alpha.copy()}, X=np.zeros((N, 0)), y=y, C=1.0, K=K,
                             profile=profiles.get_profile("default"), deadline=deadline)

    assert closed(Deadline(1e9)).status == OPTIMAL
    late = closed(passed())
    assert late.status == TIME_LIMIT and late.solver_status == OPTIMAL
    assert late.checks["timed_out"] and not late.checks["verified"]
    assert late.message == ("stopped at the time limit (1 s) in the closing checks, before the proof of the optimum, "
                            "2 s in all: not verified")
    assert "false_status" not in late.extras and late.w is None and math.isnan(late.objective)


def _takes(monkeypatch, module, name: str, clock, seconds: float) -> None:
    """module.name as it is, but the stand-in clock moves `seconds` on while it runs."""
    real = getattr(module, name)

    def slow(*args, **kwargs):
        clock.advance(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)


def test_a_converged_loop_whose_checks_the_limit_cuts_is_not_optimal(data, monkeypatch):
    """The loop reaches the optimum; the settling step then takes the time: the closing checks do not start the
    proof, and the row is a time limit, not `optimal`."""
    _, y, K = data
    clock = Clock()
    _takes(monkeypatch, ws_loop, "settle", clock, 200.0)
    sol = ws.solve(K, y, 1.0, backend="piqp", layer="direct", validate=False, time_limit=Deadline(100.0, clock=clock))
    assert sol.solver_status == OPTIMAL and sol.status == TIME_LIMIT
    assert "in the closing checks, before the proof of the optimum" in sol.message
    assert sol.checks["timed_out"]


def _spy_on_the_time_given(monkeypatch, layer: str, backend: str) -> list:
    """The time limits the backend's adapter is handed from now on, in a list that fills as it is called."""
    adapter = registry.get_backend(layer, backend)
    given, real = [], adapter.solve

    def spy(model, options, time_limit=None):
        given.append(time_limit)
        return real(model, options, time_limit)

    monkeypatch.setattr(adapter, "solve", spy)
    return given


def test_the_full_method_gives_its_backend_the_time_left_and_none_past_the_limit(data, monkeypatch):
    X, y, _ = data
    given = _spy_on_the_time_given(monkeypatch, "cvxpy", "clarabel")
    sol = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0, method="full", time_limit=1e4)
    assert sol.status == OPTIMAL and len(given) == 1 and 0 < given[0] < 1e4  # what remained after the build
    sol = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0, method="full", time_limit=1e-9)
    assert len(given) == 1  # not called: the limit had passed by the time the model was built
    assert sol.status == TIME_LIMIT and sol.raw_status == "not started" and sol.message.startswith(
        "stopped at the time limit (1e-09 s) before the backend was called (building the model), ")


def test_a_whole_qp_stopped_at_its_share_of_the_limit_names_the_call_s_limit(data, monkeypatch):
    """The cvxpy adapter says "stopped at the time limit (<what it was given> s)"; the row names the call's limit
    and that share (9.93219 s of 10 read as if the limit were 9.93219 s)."""
    X, y, _ = data
    adapter = registry.get_backend("cvxpy", "clarabel")

    def stopped(model, options, time_limit=None):
        return RawResult(status=TIME_LIMIT, raw_status="user_limit",
                            message=f"stopped at the time limit ({time_limit:g} s); Solution may be inaccurate.")

    monkeypatch.setattr(adapter, "solve", stopped)
    sol = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0, method="full", time_limit=1e4)
    assert sol.status == TIME_LIMIT
    assert sol.message.startswith("stopped at the time limit (10000 s) in the backend, given the ")
    assert sol.message.count("stopped at the time limit") == 1 and "; Solution may be inaccurate." in sol.message


@pytest.fixture(scope="module")
def wide():
    """Enough points for the smoothed start (primal_working_set.SMOOTHED_MIN_N)."""
    ds = overlapping(3000, d=5, seed=1)
    return ds.X, ds.y.astype(float)


@pytest.mark.parametrize("backend", ["osqp", "piqp"])
def test_each_restricted_qp_is_given_the_time_that_remains(wide, monkeypatch, backend):
    """Restricted QPs of 40 s against 100 s (every one made to leave a point on the wrong side, so that the loop
    goes on): 100, 60, 20 s, the third cut, its point not taken. Before, each QP was given at least 1 s."""
    X, y = wide
    clock = Clock()
    given = _taking(monkeypatch, pws, "direct", clock, 40.0)
    monkeypatch.setattr(pws, "_wrong_side", lambda margins, band, held, tol: ~band)
    sol = pws.solve(X, y, 1.0, backend=backend, layer="direct", time_limit=Deadline(100.0, clock=clock))
    assert given == [100.0, 60.0, 20.0]
    assert sol.status == TIME_LIMIT and sol.iterations == 2 and sol.w is None
    assert sol.message.startswith("stopped at the time limit (100 s) after 2 restricted QPs, in restricted QP 3 (")
    why = "given the 20 s left" if backend == "osqp" else "which direct/piqp ran to its end"
    assert why in sol.message and sol.message.endswith("120 s in all" if backend == "osqp" else
                                                       "(it has no time limit of its own), 120 s in all")


def test_the_smoothed_start_and_the_settling_step_stop_at_the_deadline(wide, monkeypatch):
    X, y = wide
    given = _taking(monkeypatch, pws, "direct", Clock(), 0.0)
    res = pws.decompose(X, y, 1.0, layer="direct", start="smoothed", time_limit=passed())
    assert res.timed_out and given == [] and "after 0 restricted QPs, in the smoothed start" in res.message
    # the loop's split is consistent; the settling step (the proof) then takes the time: a time limit, not optimal
    clock = Clock()
    _takes(monkeypatch, pws, "_settle", clock, 200.0)
    sol = pws.solve(X, y, 1.0, layer="direct", time_limit=Deadline(100.0, clock=clock))
    assert sol.status == TIME_LIMIT and sol.w is None
    assert "restricted QPs, in the settling step, at a consistent split" in sol.message


def test_solve_lp_gives_its_backend_the_time_left_and_none_past_the_limit(monkeypatch):
    """solve_lp handed the backend the whole limit, from wherever the call was by then."""
    from experiments.datasets import example_5_1
    from solvers.lp import solve_lp

    ds = example_5_1()
    given = _spy_on_the_time_given(monkeypatch, "cvxpy", "clarabel")
    sol = solve_lp("l1_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, time_limit=1e4)
    assert sol.status == OPTIMAL and len(given) == 1 and 0 < given[0] < 1e4  # what remained after the build
    sol = solve_lp("l1_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, time_limit=1e-9)
    assert len(given) == 1  # not called: the limit had passed by the time the model was built
    assert sol.status == TIME_LIMIT and sol.raw_status == "not started" and sol.message.startswith(
        "stopped at the time limit (1e-09 s) before the backend was called (building the model), ")


def _handed(monkeypatch, module, name: str) -> list:
    """The options each call of module.name (a solver's entry) was handed."""
    handed, real = [], getattr(module, name)

    def spy(qp, record, options):
        handed.append(dict(options))
        return real(qp, record, options)

    monkeypatch.setattr(module, name, spy)
    return handed


@pytest.mark.parametrize("share, expected", [(2.0, 2.0), (50.0, 5.0)])
def test_one_rule_for_native_options_in_every_path(monkeypatch, share, expected):
    """The user's native options override the project's (the profile's tolerances) in every path, and a time-limit
    option of the user's is kept only where it is the smaller: the cvxpy layer and the Pyomo/qpsolvers adapter let
    the call's share override it, the solver alone and Ipopt let the user's override the share."""
    from solvers.adapters.cvxpy_layer import solve_kwargs
    from solvers.algorithms import direct
    from solvers.backends import RECORDS

    user = {"time_limit": 5.0, "eps_abs": 1e-3}  # OSQP's names
    project = profiles.native_options("osqp", "high", user)
    assert project["eps_abs"] == 1e-3 and project["eps_rel"] == profiles.backend_options("osqp", "high")["eps_rel"]
    assert solve_kwargs(RECORDS["osqp"], dense=False, options=project, time_limit=share)["time_limit"] == expected

    ds = overlapping(40, d=3, seed=0)
    asm = direct.assemble("soft_primal", ds.X, ds.y.astype(float), 1.0)
    handed = _handed(monkeypatch, direct, "solve_standard_qp")
    direct.solve_assembled(asm, "osqp", project, share)
    handed_pyomo = _handed(monkeypatch, pyomo_qp, "solve_standard_qp")
    import formulations

    model = formulations.build("soft_primal", "pyomo", X=ds.X, y=ds.y.astype(float), C=1.0)
    registry.get_backend("pyomo", "osqp").solve(model, project, share)
    for options in (handed[0], handed_pyomo[0]):
        assert options["time_limit"] == expected and options["eps_abs"] == 1e-3
