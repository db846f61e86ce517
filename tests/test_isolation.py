"""A call with a time limit runs in a child of the solve server (solvers.isolation), killed past the limit: its
answer, its exception, a kill at the limit naming the stage it was in, and a death each come back to the caller.

Nothing here depends on how long a solve takes: a child that must be killed waits forever (the kill comes
KILL_GRACE_S after the limit)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from functools import partial

import numpy as np
import pytest

from experiments.datasets import example_5_1
from formulations import ahead_of_time
from formulations.errors import SVMInputError
from solvers import api, isolation
from solvers.solution import ERROR, OPTIMAL, TIME_LIMIT
from solvers.deadline import Deadline

pytestmark = pytest.mark.skipif(not isolation.ISOLATE, reason="the solve server runs on Linux only")


def _pid_and(value):
    return os.getpid(), value


def _stuck(where: str):
    isolation.stage(where)
    threading.Event().wait()  # never set: only the kill ends it


def _refuse():
    raise SVMInputError("C must be positive (got -1)")


def _abort():
    isolation.stage("about to abort")
    os.abort()


def test_a_child_answers_in_a_process_of_its_own():
    pid, value = isolation.run(Deadline(600.0), partial(_pid_and, 42))
    assert value == 42 and pid != os.getpid()
    # without a limit, in this process
    assert isolation.run(Deadline(None), partial(_pid_and, 7)) == (os.getpid(), 7)


def test_a_child_past_the_limit_is_killed_and_names_its_stage():
    # 2 s: time for the child to start and say its stage on a busy machine (0.25 s was not always enough)
    ended = isolation.run(Deadline(2.0), partial(_stuck, "the pyomo model's build"))
    assert ended == isolation.Ended(killed=True, stage="the pyomo model's build")
    # the server lives on: the next call is answered
    assert isolation.run(Deadline(600.0), partial(_pid_and, 1))[1] == 1


def test_a_childs_exception_is_raised_in_the_caller():
    with pytest.raises(SVMInputError, match="C must be positive"):
        isolation.run(Deadline(600.0), _refuse)


def test_a_child_that_dies_says_how_and_where():
    ended = isolation.run(Deadline(600.0), _abort)
    assert ended == isolation.Ended(killed=False, stage="about to abort", how="SIGABRT")


def test_work_the_server_cannot_import_runs_here(monkeypatch):
    """A lambda does not pickle, and a function of the caller's __main__ (a script's callable kernel) would not
    import in the server: both run in this process."""
    assert isolation.run(Deadline(600.0), lambda: os.getpid()) == os.getpid()

    def script_function():
        return os.getpid()

    script_function.__module__, script_function.__qualname__ = "__main__", "script_function"
    monkeypatch.setattr(sys.modules["__main__"], "script_function", script_function, raising=False)
    assert isolation.run(Deadline(600.0), script_function) == os.getpid()


def test_a_solve_whose_child_was_killed_is_a_time_limit_row_that_names_the_step(monkeypatch):
    ds = example_5_1()
    monkeypatch.setattr(isolation, "run_where", lambda deadline, work: (isolation.Ended(
        killed=True, stage="the call to pyomo/osqp (the layer's compilation or load of the model, then the solver)"), ""))
    sol = api.solve("soft_primal", ds.X, ds.y, layer="pyomo", backend="osqp", C=1.0, time_limit=2.0)
    assert sol.status == sol.solver_status == TIME_LIMIT and sol.raw_status == "killed"
    assert sol.message.startswith("stopped at the time limit (2 s) in the call to pyomo/osqp (")
    assert "a step that does not stop by itself: the solve's process was killed" in sol.message
    assert sol.w is None and sol.b != sol.b  # no point: nothing reported (b is nan)
    assert sol.extras["method"] == "full"


def test_a_solve_whose_child_died_is_an_error_row(monkeypatch):
    ds = example_5_1()
    monkeypatch.setattr(isolation, "run_where", lambda deadline, work: (isolation.Ended(
        killed=False, stage="the call to cvxpy/highs", how="SIGABRT"), ""))
    sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="highs", C=1.0, time_limit=2.0)
    assert sol.status == ERROR and sol.raw_status == "SIGABRT"
    assert sol.message == "the solve's process died (SIGABRT) in the call to cvxpy/highs"


def test_a_solve_with_a_limit_gives_the_same_optimum_as_without():
    ds = example_5_1()
    limited = api.solve("soft_primal", ds.X, ds.y, layer="pyomo", backend="clarabel", C=1.0, time_limit=600.0)
    free = api.solve("soft_primal", ds.X, ds.y, layer="pyomo", backend="clarabel", C=1.0)
    assert limited.status == free.status == OPTIMAL
    assert limited.objective == pytest.approx(free.objective, rel=1e-12)
    assert limited.w == pytest.approx(free.w, rel=1e-12) and limited.b == pytest.approx(free.b, rel=1e-12)


def test_a_forked_process_starts_a_server_of_its_own():
    """A process forked from a caller that has a server (a user's multiprocessing pool) must not write into the
    caller's pipes: it starts its own server, and both get their own answers."""
    import multiprocessing

    parent_server_pid = isolation.run(Deadline(600.0), os.getppid)  # the server is the child's parent
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child_server_pid = pool.apply(isolation.run, (Deadline(600.0), os.getppid))
    assert child_server_pid != parent_server_pid
    assert isolation.run(Deadline(600.0), os.getppid) == parent_server_pid


def test_a_killed_solve_of_the_solver_alone_is_a_time_limit_row_too(monkeypatch):
    """layer "direct" (the solver alone, working sets only) has no adapter in the registry: the row still names the
    backend's version from its record (CI found _unanswered asking the registry for it)."""
    ds = example_5_1()
    monkeypatch.setattr(isolation, "run_where", lambda deadline, work: (isolation.Ended(killed=True, stage="the split start"), ""))
    sol = api.solve("kernel_dual", ds.X, ds.y, layer="direct", backend="osqp", C=1.0, kernel="rbf", time_limit=2.0)
    assert sol.status == TIME_LIMIT and "in the split start, a step that does not stop by itself" in sol.message
    assert sol.extras["method"] == "working_set" and sol.backend_version


def test_an_answered_working_set_row_names_its_backend_s_version_and_numba_s():
    """The row the working sets answer names what ran: the subproblems' backend's version (as the killed row above)
    and the compiled SMO's numba."""
    import numba

    from solvers.backends import RECORDS

    ds = example_5_1()
    sol = api.solve("kernel_dual", ds.X, ds.y, layer="direct", backend="osqp", C=1.0, kernel="rbf",
                    method="working_set")
    assert sol.status == "optimal"
    assert sol.backend_version == f"{RECORDS['osqp'].version()}; solvers.algorithms.smo (numba {numba.__version__})"


def _server_in_step(preload: tuple[str, ...], step: bytes) -> isolation.Server:
    """The server of `preload`, once it says it is in `step` of its start (isolation._STARTING)."""
    import time

    gives_up = time.monotonic() + isolation.SERVER_START_LIMIT_S
    while time.monotonic() < gives_up:
        server, _ = isolation.Server.running(preload, until=time.monotonic() + 0.1)
        if server is not None and server.step == step:
            return server
    pytest.fail(f"the server never reached its step {step!r}")


@pytest.mark.parametrize("module, words", [
    ("tests.stalled_import", "importing the layers and the solvers"),
    ("tests.stalled_compile", "loading the compiled SMO functions, which numba compiles on their first use"),
])
def test_a_limit_that_comes_while_the_server_starts_is_a_time_limit_row_naming_the_step(monkeypatch, module, words):
    """The server's start (its imports; numba's compile on an empty cache) is part of the user's limit: a call
    whose limit comes during it returns then, as a time_limit row naming the step, not once the server is up."""
    preload = isolation.PRELOAD + (module,)
    monkeypatch.setattr(isolation, "PRELOAD", preload)
    server = _server_in_step(preload, b"c" if module.endswith("compile") else b"i")
    try:
        ds = example_5_1()
        sol = api.solve("kernel_dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, kernel="rbf",
                        time_limit=0.5)
        assert sol.status == sol.solver_status == TIME_LIMIT and sol.raw_status == "server starting"
        assert sol.message.startswith(f"stopped at the time limit (0.5 s) while the solve server was starting ({words}")
        assert sol.w is None and sol.alpha is None and sol.extras["solve_server_start_s"] > 0
        assert not server.ready and not server.closed  # it goes on starting for the next call
    finally:
        server.close()


def _warn_then(value):
    import warnings

    warnings.warn("badly scaled features (a child's warning)", UserWarning)
    return value


def test_a_server_that_dies_while_starting_is_said_so_and_started_once_more(monkeypatch):
    """A server whose start ends its process (a crash, a kill) is not one that is slow: the call says it died, with
    its exit code, and tries a new server once, as for a server that died before it took the work."""
    preload = isolation.PRELOAD + ("tests.dying_import",)
    starts = []
    real_init = isolation.Server.__init__
    monkeypatch.setattr(isolation.Server, "__init__", lambda self, *a: (starts.append(a), real_init(self, *a))[1])
    frames, why = isolation.request(partial(_pid_and, 1))
    assert frames is not None, why
    answer, why, _ = isolation.call(frames, lambda: lambda: None, preload=preload)
    assert answer is isolation.NOT_TAKEN
    assert why == "the solve server died while starting (exit code 3), twice"
    assert len(starts) == 2


def test_a_childs_warnings_reach_the_callers_filters():
    """A child's warning is warned in the caller, where catch_warnings and the caller's filters see it (a trial's
    simplefilter("ignore") did not hide it, and catch_warnings(record=True) recorded nothing)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert isolation.run(Deadline(600.0), partial(_warn_then, 3)) == 3
    assert [str(w.message) for w in caught] == ["badly scaled features (a child's warning)"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="a child's warning"):
            isolation.run(Deadline(600.0), partial(_warn_then, 3))
    # the child raised into was ended, and its answer dropped: the next call gets its own
    assert isolation.run(Deadline(600.0), partial(_pid_and, 5))[1] == 5


def _say_pid_then_wait(fifo: str):
    """A child that says its pid through `fifo` once it is in its work, then waits for a kill."""
    isolation.stage("waiting for its kill")
    with open(fifo, "w") as out:
        out.write(f"{os.getpid()}\n")
    threading.Event().wait()


def _pid_from(fifo, caller: threading.Thread, answer: dict) -> int:
    """The pid a child says through `fifo`; a failure naming the caller's answer if the caller ended first (a bound
    for a broken build, not a duration: the child says it as soon as it is in its work)."""
    import select

    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        said = b""
        while not said.endswith(b"\n"):
            if not select.select([reader], [], [], 1.0)[0]:
                assert caller.is_alive(), f"the call ended before its child said it was in its work: {answer}"
                continue
            said += os.read(reader, 64)
        return int(said)
    finally:
        os.close(reader)


def _ended(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # exited; its new parent (init) reaps it
    except psutil.NoSuchProcess:
        return True


def test_a_server_killed_during_a_solve_is_said_at_once_and_leaves_nothing_behind(tmp_path):
    """Killed during a solve of a 60 s limit, the server left the caller waiting for its orphaned child (23.8 s)
    and then said the solve was stopped at the time limit; the server stayed a zombie. Now the caller sees the
    server's death, says it, the child dies with the server, and the next call starts a new server."""
    import psutil

    server = isolation.run(Deadline(600.0), os.getppid)  # a running server (the child's parent)
    fifo = tmp_path / "child"
    os.mkfifo(fifo)
    answer = {}
    waiting = threading.Thread(target=lambda: answer.update(ended=isolation.run(
        Deadline(60.0), partial(_say_pid_then_wait, str(fifo)))), daemon=True)
    waiting.start()
    child = _pid_from(fifo, waiting, answer)  # the child is in its work
    os.kill(server, signal.SIGKILL)
    waiting.join(30.0)  # a bound for a broken build only: the answer comes with the server's death
    assert not waiting.is_alive(), "the caller still waits for the orphaned child"
    assert answer["ended"] == isolation.Ended(killed=False, stage="waiting for its kill", how="SIGKILL",
                                              server_pid=server)
    assert not psutil.pid_exists(server), "the dead server was not reaped"
    assert _ended(child)
    assert {p.pid for p in psutil.Process().children(recursive=True)}.isdisjoint({server, child})
    assert isolation.run(Deadline(600.0), partial(_pid_and, 9))[1] == 9  # the next call: a new server
    assert isolation.run(Deadline(600.0), os.getppid) not in (server, os.getpid())


def test_a_solve_whose_server_died_is_an_error_row_that_says_so(monkeypatch):
    ds = example_5_1()
    monkeypatch.setattr(isolation, "run_where", lambda deadline, work: (isolation.Ended(
        killed=False, stage="the call to cvxpy/clarabel", how="SIGKILL", server_pid=4321), ""))
    sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, time_limit=60.0)
    assert (sol.status, sol.solver_status, sol.raw_status) == (ERROR, ERROR, "server died")
    assert sol.message == ("the solve server (pid 4321) died during the solve (SIGKILL) in the call to cvxpy/clarabel; "
                           "the solve's process was ended with it, and the next call starts a new server")
    assert "time limit" not in sol.message and sol.w is None


@pytest.fixture
def clarabel_copy():
    """A backend added with registry.register in this process only: Clarabel's record under another name, with a
    lambda for its tolerances (records are not picklable by name)."""
    import dataclasses

    from solvers import registry
    from solvers.backends import RECORDS

    record = dataclasses.replace(RECORDS["clarabel"], name="clarabel_copy", tolerances=lambda tol: {"tol_gap_abs": tol})
    registry.register(record)
    yield record.name
    registry.unregister(record.name)


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_a_backend_registered_in_the_caller_solves_in_the_server(clarabel_copy, layer):
    """With a time limit the solve runs in a child of the server, which imported the project's records only: a
    backend added with register() raised BackendUnavailableError there."""
    ds = example_5_1()
    sol = api.solve("soft_primal", ds.X, ds.y, layer=layer, backend=clarabel_copy, C=1.0, time_limit=600.0)
    assert sol.status == OPTIMAL, sol.message
    assert "isolation" not in sol.extras  # it ran in the server
    assert sol.w == pytest.approx([-0.9229, 0.7627], abs=5e-4) and sol.b == pytest.approx(1.1976, abs=5e-4)


def test_a_registration_that_cannot_be_sent_runs_in_the_caller_and_says_so(clarabel_copy, monkeypatch):
    from solvers import registry

    def unsendable():
        raise TypeError("cannot pickle 'generator' object")

    monkeypatch.setattr(registry, "added_payload", unsendable)
    ds = example_5_1()
    sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend=clarabel_copy, C=1.0, time_limit=600.0)
    assert sol.status == OPTIMAL
    assert sol.extras["isolation"].startswith("ran in the calling process, stopped by the time limit's own checks only")
    assert "the backends registered here could not be sent to the solve server (TypeError" in sol.extras["isolation"]


# ------------------------------------------------------------------ one time limit for every entry point

from solvers.adapters.cvxpy_layer import CvxpyBackend  # noqa: E402


class _StuckAdapter(CvxpyBackend):
    """A backend that never returns and has no time limit of its own: only the kill stops it. With a `fifo`, it says
    its pid there once it is called."""

    fifo = ""

    def solve(self, model, options, time_limit=None):
        if self.fifo:
            with open(self.fifo, "w") as out:
                out.write(f"{os.getpid()}\n")
        threading.Event().wait()


@pytest.fixture
def stuck():
    import dataclasses

    from solvers import registry
    from solvers.backends import RECORDS

    record = dataclasses.replace(RECORDS["clarabel"], name="stuck", time_limit_option=None,
                                 preference={**RECORDS["clarabel"].preference, "lp": 99})
    registry.register(record, {"cvxpy": _StuckAdapter(record)})
    yield record.name
    registry.unregister(record.name)


def _entry_points():
    from solvers.algorithms import direct, primal_working_set, working_set
    from solvers.lp import solve_lp

    ds = example_5_1()
    X, y = ds.X, ds.y
    return {
        "solve": lambda limit: api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0,
                                         method="full", time_limit=limit),
        "solve_lp": lambda limit: solve_lp("l1_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0,
                                           time_limit=limit),
        "direct": lambda limit: direct.solve("soft_primal", X, y, backend="piqp", C=1.0, time_limit=limit),
        "working_set": lambda limit: working_set.solve(X @ X.T, y, 1.0, backend="piqp", layer="direct",
                                                       time_limit=limit),
        "primal_working_set": lambda limit: primal_working_set.solve(X, y, 1.0, backend="piqp", time_limit=limit),
    }


@pytest.mark.parametrize("entry", ["solve", "solve_lp", "direct", "working_set", "primal_working_set"])
def test_every_entry_point_runs_a_limited_call_in_the_server_and_says_where_it_was_killed(monkeypatch, entry):
    """solve_lp gave the backend the whole limit and never killed; the solver alone ignored it for PIQP and ProxQP;
    the working sets called on their own had no kill: each now runs a limited call as solve() does."""
    call = _entry_points()[entry]
    monkeypatch.setattr(isolation, "run_where", lambda deadline, work: (isolation.Ended(
        killed=True, stage="the call to the backend"), ""))
    sol = call(2.0)
    assert (sol.status, sol.solver_status, sol.raw_status) == (TIME_LIMIT, TIME_LIMIT, "killed")
    assert sol.message.startswith("stopped at the time limit (2 s) in the call to the backend, a step that does "
                                  "not stop by itself: the solve's process was killed, ")
    assert sol.w is None and sol.extras["labels"]
    monkeypatch.undo()
    assert call(None).status == OPTIMAL  # without a limit, the same call in this process


@pytest.mark.parametrize("entry", ["solve", pytest.param("solve_lp", marks=pytest.mark.slow)])  # the LP's: slow run
def test_a_backend_without_a_time_limit_of_its_own_is_stopped_by_the_kill(stuck, entry):
    """solve_lp refused a time limit for such a backend (and gave the others the whole limit, never killed)."""
    from solvers.lp import solve_lp

    ds = example_5_1()
    if entry == "solve":
        sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend=stuck, C=1.0, method="full",
                        time_limit=2.0)
    else:
        sol = solve_lp("l1_primal", ds.X, ds.y, layer="cvxpy", backend=stuck, C=1.0, time_limit=2.0)
    assert (sol.status, sol.raw_status) == (TIME_LIMIT, "killed")
    assert sol.message.startswith(f"stopped at the time limit (2 s) in the call to cvxpy/{stuck}")
    assert "the solve's process was killed" in sol.message


def test_a_solve_whose_server_is_killed_in_the_backend_is_an_error_row_and_the_next_solve_works(stuck, tmp_path):
    """End to end through solve(): the server killed while the backend runs (60 s limit)."""
    import psutil

    from solvers import registry

    fifo = tmp_path / "backend"
    os.mkfifo(fifo)
    registry.BACKENDS[("cvxpy", stuck)].fifo = str(fifo)  # sent with the request: the registered adapter as it is
    ds = example_5_1()
    answer = {}

    def solving_call():
        try:
            answer["sol"] = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend=stuck, C=1.0, method="full",
                                      time_limit=60.0)
        except Exception as exc:  # noqa: BLE001 - named by _pid_from's failure
            answer["raised"] = exc

    solving = threading.Thread(target=solving_call, daemon=True)
    solving.start()
    child = _pid_from(fifo, solving, answer)  # the backend is called
    server = psutil.Process(child).ppid()
    os.kill(server, signal.SIGKILL)
    solving.join(30.0)  # a bound for a broken build only
    assert not solving.is_alive()
    sol = answer["sol"]
    assert (sol.status, sol.raw_status) == (ERROR, "server died")
    assert sol.message.startswith(f"the solve server (pid {server}) died during the solve (SIGKILL) in the call to "
                                  f"cvxpy/{stuck} (")
    assert not psutil.pid_exists(server) and _ended(child)
    sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, time_limit=60.0)
    assert sol.status == OPTIMAL and sol.w == pytest.approx([-0.9229, 0.7627], abs=5e-4)


def _meet(folder: str, count: int) -> bool:
    """Say this child is in its work (a file named by its pid) and wait for `count` children to be in theirs at
    once; False if they never were (a bound for a server that runs one call at a time, not a duration)."""
    import time

    open(os.path.join(folder, str(os.getpid())), "w").close()
    ends = time.monotonic() + 30.0
    while len(os.listdir(folder)) < count:
        if time.monotonic() > ends:
            return False
        time.sleep(0.01)
    return True


def test_calls_from_two_threads_run_at_once_through_one_server(tmp_path):
    """The runner's workers share one server: two calls at once have two children at once, each its own answer."""
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(isolation.run(Deadline(600.0), partial(
        _meet, str(tmp_path), 2)))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60.0)
    assert answers == [True, True] and len(os.listdir(tmp_path)) == 2


_CALLER = """
import sys, threading, time
from functools import partial
from solvers import isolation
from solvers.deadline import Deadline

server, _ = isolation.Server.running()
threading.Thread(target=isolation.run, args=(Deadline(600.0), partial(time.sleep, 600)), daemon=True).start()
while not isolation.running_children():
    time.sleep(0.01)
print(server.process.pid, isolation.running_children()[0], flush=True)
time.sleep(600)
"""


def test_a_killed_caller_leaves_neither_its_server_nor_its_child(tmp_path):
    """A caller killed during a call (a sweep or a script killed with SIGKILL): its server ends (its control socket
    closes) and the child with it, instead of running to the end of its work."""
    import time

    import psutil

    caller = subprocess.Popen([sys.executable, "-c", _CALLER], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))})
    try:
        server, child = map(int, caller.stdout.readline().split())
    finally:
        caller.kill()
        caller.wait()
    ends = time.monotonic() + 30.0  # a bound for a broken build only: both end at once
    while time.monotonic() < ends and not (_ended(server) and _ended(child)):
        time.sleep(0.05)
    assert _ended(server) and _ended(child), [psutil.Process(p).status() for p in (server, child) if psutil.pid_exists(p)]


_WARM_CHECK = r"""
import json, sys
import numpy as np
import numba
from solvers import api, isolation

def compiled_types():
    return {f"{name}.{attr}": set(map(str, value.signatures)) for name, module in list(sys.modules.items())
            if name.split(".")[0] in ("solvers", "formulations", "experiments")
            for attr, value in list(vars(module).items()) if isinstance(value, numba.core.registry.CPUDispatcher)}

isolation.warm_compiled()
warmed = compiled_types()
X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [0.5, 2.0], [1.5, 1.5], [3.0, 0.5], [2.5, 2.5], [0.2, 0.3],
              [1.2, 2.2], [2.2, 0.1]])
y = np.array([1, -1, 1, 1, -1, -1, 1, -1, 1, -1])
C = json.loads(sys.argv[1])
sol = api.solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=np.array(C), kernel="rbf",
                method="working_set")
from formulations.kernels import Kernel, gram  # the rbf's values for other points (predictions), whole or cut
for Z in (X[:3], X[:300]):
    gram(Kernel("rbf"), Z, X)
print(json.dumps({"status": sol.status, "new": {name: sorted(types - warmed.get(name, set()))
                                                 for name, types in compiled_types().items()
                                                 if types - warmed.get(name, set())}}))
"""


@pytest.mark.parametrize("C", [1.0, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]])
def test_the_servers_warm_up_covers_every_compiled_type_a_kernel_dual_solve_uses(C):
    """A child compiles nothing the server did not load (warm_compiled): else on an empty numba cache every child
    compiles anew within its user's limit. Checked in a fresh process (this one's tests have loaded other types),
    over every compiled function of the project's modules, with no limit (no child)."""
    out = subprocess.run([sys.executable, "-c", _WARM_CHECK, json.dumps(C)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path)),
                              ahead_of_time.ENV: "0"}, check=True)  # numba's own loading: what a server preloads
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == OPTIMAL
    assert result["new"] == {}


_INTERACTIVE_CHECK = r"""
import json, os
from solvers import api, isolation
from solvers.algorithms import smo

loading = list(isolation._WARMING.values())  # the thread it started (running or done: no race with its end)
pid = os.fork()  # the hook waits for the loading thread: a child must not inherit numba's lock held
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({"threads": len(loading), "alive after the fork": any(t.is_alive() for t in loading),
                  "SMO loaded": len(smo._run.signatures)}))
"""


@pytest.mark.parametrize("interactive", [True, False])
def test_an_interactive_session_loads_the_compiled_functions_on_a_thread_and_a_fork_waits_for_it(interactive,
                                                                                               tmp_path):
    """Where a person types the calls (python -i here; a notebook, IPython), importing solvers.api starts
    warm_compiled on a thread of its own, and a fork waits until it has finished; a script starts none (the thread
    there would only move numba's start into the import)."""
    flags = ["-i"] if interactive else []
    out = subprocess.run([sys.executable, *flags, "-c", _INTERACTIVE_CHECK], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path)),
                              "HOME": str(tmp_path),  # python -i writes its history there, not in the user's home
                              ahead_of_time.ENV: "0"})  # numba's own loading, which the thread is for
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["threads"] == int(interactive) and not result["alive after the fork"]
    assert (result["SMO loaded"] > 0) == interactive  # nothing else in the script called the SMO
