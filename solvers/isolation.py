"""A solve with a time limit runs in a process of its own, killed when it runs past the limit.

The deadline (solvers.deadline) stops the project's own loops and hands each backend the time that remains, but
some steps cannot be stopped from Python, and they are the long ones on large data. MEASURED by a new user's run
(make_classification, n = 20,000, d = 500, time_limit = 2 s): Pyomo/HiGHS on the linear dual returned after
51-54 s (Pyomo's HiGHS interface loading the model: 112 s of 118 without a limit), Pyomo/HiGHS on the kernel
dual's working set after 21-25 s (a block's objective), Pyomo/OSQP after 11-18 s (OSQP's setup, which its own
time limit does not cover), the cvxpy layer after 9-12 s. Only a killed process stops a step in native code.

How: a solve server (`python -m solvers.isolation`, started at the first call with a limit) imports the solvers
once (PRELOAD) and forks one child per solve; the child runs the pickled work and sends its answer back; the
caller kills it at kill_after(deadline): the limit plus KILL_GRACE (the child's own stop, its closing checks and
the pickling come after the limit: 0.15-0.4 s measured on an idle machine; with 0.25 s, a busy one lost the race
in CI and the row named no stage). `stage(text)` says what the child is doing, so that a killed solve names the
step that did not stop. A child that dies (HiGHS can abort its process) is an answer too, and so is the server's
death during a solve: the child dies with it (PR_SET_PDEATHSIG), the caller sees it at once (a pidfd) and says so,
and the next call starts a new server. The backends registered in the caller (solvers.registry.register) travel
with each request, and the child registers them before the work. The child's warnings are
warned in the caller, through the caller's filters. With the kill, PIQP and ProxQP (no time limit of their own)
take a time limit on a whole QP too (solvers.api).

Why a server, not a fork of the caller: Clarabel and HiGHS start thread pools at their first solve, and a fork
of a process that has them inherits the pools without their threads. MEASURED: cvxpy/Clarabel forked after one
Clarabel solve in the parent never returned. Why not multiprocessing's fork server: its children import the
caller's main script again (a script without `if __name__ == "__main__":` would run itself in each solve).

Costs, measured here: the server's start, 1.8 s once a process, is left out of the first call's clock
(Deadline.leave_out; extras["solve_server_start_s"]); each solve then pays 30-48 ms more through solve() (n = 200
to 5,000), and its data are pickled (X of 20,000 x 500: 80 MB). So only a call with a limit runs here, and not where a parent kills the
process already (the runner's solve processes set ISOLATE = False), nor off Linux, nor work that cannot be sent
(a lambda kernel, or one of the caller's `__main__`, which the server cannot import): such work runs in the
caller, stopped by the deadline's own checks only, and its row says so (extras["isolation"], run_solve).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from solvers import registry
from solvers.backends import RECORDS
from solvers.deadline import Deadline

#: Whether a call with a time limit runs in the solve server (see the module's docstring).
ISOLATE = sys.platform.startswith("linux")

#: The child is killed this long after the limit: KILL_GRACE_S plus KILL_GRACE_SHARE of the limit.
KILL_GRACE_S = 0.5
KILL_GRACE_SHARE = 0.05

#: What the solve server imports once, so that each child starts warm.
PRELOAD = ("numpy", "scipy.sparse", "pyomo.environ", "cvxpy", "qpsolvers",
           *(record.module for record in RECORDS.values()), "pyomo.contrib.solver.solvers.highs", "solvers.api")

#: How long the server may take to start (its imports) before the call runs in its own process instead.
SERVER_START_LIMIT_S = 120.0

_HEADER = struct.Struct("<Q")


@dataclass(frozen=True)
class Ended:
    """A solve that gave no answer: killed at the limit plus the grace, dead by itself (`how`), or ended with the
    solve server, which died during it (`server_pid`: the server's; `how`: how the server died)."""

    killed: bool
    stage: str  # the child's last stage() ("" if it set none)
    how: str = ""  # how it died: a signal's name or "exit N"
    server_pid: int = 0  # the solve server that died during the solve (0: the server lived)


#: Where a solve with a limit ran in this process although a solve server could take it (extras["isolation"]).
IN_CALLER = "ran in the calling process, stopped by the time limit's own checks only (a step in native code " \
            "may run past it): {why}"


# ------------------------------------------------------------------------------------------------ the caller


def kill_after(deadline: Deadline) -> float | None:
    """Seconds from now until the child of a solve with this deadline is killed (None: no limit)."""
    left = deadline.remaining()
    return None if left is None else left + KILL_GRACE_S + KILL_GRACE_SHARE * deadline.limit


def run(deadline: Deadline, work: Callable[[], Any]) -> Any:
    """work() in a child of the solve server, killed at kill_after(deadline): its result, or its exception raised
    here, or an `Ended` when it gave no answer. In this process where the docstring says. The server's start on
    a first call is left out of `deadline` (Deadline.leave_out), which `work` must hold."""
    return run_where(deadline, work)[0]


def run_solve(deadline: Deadline, work: Callable[[], Any], unanswered: Callable[[Ended], Any]) -> Any:
    """A solve entry point's run (solvers.api.solve, solvers.lp.solve_lp, solvers.algorithms.direct.solve, the
    working sets): run(deadline, work), whose `Ended` becomes unanswered(ended)'s row; the row says where the
    solve ran if not in the server (extras["isolation"]) and the server's start left out of its clock."""
    sol, why = run_where(deadline, work)
    if isinstance(sol, Ended):
        sol = unanswered(sol)
    if why:
        sol.extras["isolation"] = why
    if deadline.left_out:
        sol.extras["solve_server_start_s"] = deadline.left_out
    return sol


def run_where(deadline: Deadline, work: Callable[[], Any]) -> tuple[Any, str]:
    """run(deadline, work), and why it ran in this process where a solve server could have taken it (IN_CALLER's
    words; "" when it ran in the server, or here because there is no limit or a parent kills this process)."""
    if deadline.limit is None or not ISOLATE:
        return work(), ""
    why = ""
    with _LOCK:  # one solve at a time through the server (work that runs here runs after it: it may call run)
        for _ in range(2):  # a server found dead before it took the request: once more with a new one
            server, start_s = _Server.running()
            if server is None:
                why = f"the solve server did not start in {SERVER_START_LIMIT_S:g} s"
                break
            if start_s:
                deadline.leave_out(start_s)  # before the request is made: the child's copy leaves it out too
            request, why = _request(work)
            if request is None:
                break
            answer = server.solve(request, kill_after(deadline))
            if answer is not _NOT_TAKEN:
                return answer, ""
            why = "the solve server died before it took the solve, twice"
    return work(), IN_CALLER.format(why=why)


def _request(work: Callable[[], Any]) -> tuple[tuple[bytes, bytes] | None, str]:
    """The request for the server, two frames: the backends registered in this process (solvers.registry.register),
    which the child registers before it runs `work`, and `work` pickled; or None and why it cannot be sent."""
    try:
        added = registry.added_payload()
    except Exception as exc:  # noqa: BLE001 - a registration that does not pickle, even by value
        return None, f"the backends registered here could not be sent to the solve server ({type(exc).__name__}: {exc})"
    try:
        payload = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - e.g. a lambda kernel
        return None, f"the solve could not be sent to the solve server ({type(exc).__name__}: {exc})"
    if b"__main__" in payload:
        return None, ("the solve refers to the running script (__main__, e.g. a kernel defined there), which the "
                      "solve server cannot import")
    return (added, payload), ""


_LOCK = threading.Lock()
_WARNED: dict = {}  # the children's warnings shown here once per place, as Python shows a warning ("default")
_GONE = object()  # _Server._message: the server died (or every writer of the answer pipe closed it)
_NOT_TAKEN = object()  # _Server.solve: the server was dead before it took the request
#: Without a pidfd (Linux < 5.3), how often a wait looks whether the server still runs.
_POLL_S = 0.2


class _Server:
    """The solve server process and the two pipes to it (requests; answers from it and its children)."""

    _current: _Server | None = None

    def __init__(self):
        request_read, self.request = os.pipe()
        self.answers, answer_write = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "solvers.isolation", str(request_read), str(answer_write)],
            pass_fds=(request_read, answer_write), env=env, stdin=subprocess.DEVNULL)
        self.owner = os.getpid()  # a process forked from this one starts its own: the pipes are this one's
        os.close(request_read)
        os.close(answer_write)
        self.buffer = b""
        self.watch = _pidfd(self.process.pid)  # readable once the server has exited (None: poll it instead)

    @classmethod
    def running(cls) -> tuple[_Server | None, float]:
        """The server, started if need be, and the seconds its start took (0 if it was running); None if it
        did not start."""
        current = cls._current
        if current is not None and current.owner == os.getpid() and current.process.poll() is None:
            return current, 0.0
        if current is not None:
            current.close()  # a server that died between two solves: its pipes closed, the process reaped
        began = time.perf_counter()
        server = cls()
        ready = server._message(SERVER_START_LIMIT_S)
        if ready != ("ready",):
            server.close()
            return None, 0.0
        cls._current = server
        atexit.register(server.close)  # else Python warns at exit that the server is still running
        return server, time.perf_counter() - began

    def solve(self, request: tuple[bytes, bytes], wait: float) -> Any:
        try:
            for frame in request:  # each as it is: the data are not copied into one buffer (80 MB at 20,000 x 500)
                os.write(self.request, _HEADER.pack(len(frame)))
                _write_all(self.request, frame)
        except OSError:  # BrokenPipeError: the server died since the last solve
            self.close()
            return _NOT_TAKEN
        ends = time.monotonic() + wait
        pid, where, answer = 0, "", None
        try:
            while True:
                message = self._message(ends - time.monotonic())
                if message is _GONE:  # the server died during the solve (killed, out of memory)
                    return self._died(pid, where)
                if message is None:  # past the limit and its grace: the child goes
                    self._end(pid)
                    return Ended(killed=True, stage=where)
                kind, value = message
                if kind == "pid":
                    pid = value
                elif kind == "stage":
                    where = value
                elif kind == "warning":  # through this process's filters, as if warned here
                    warnings.warn_explicit(*value, registry=_WARNED)
                elif kind in ("returned", "raised"):
                    answer = message
                elif kind == "exit":
                    break
        except BaseException:  # Ctrl-C while waiting, or a warning the caller's filters make an error
            self._end(pid)
            raise
        if answer is None:
            return Ended(killed=False, stage=where, how=value)
        if answer[0] == "raised":
            raise answer[1]
        return answer[1]

    def _died(self, pid: int, where: str) -> Ended:
        """The server died during a solve: its child, which dies with it (_die_with_parent), is killed here too
        and waited for, the server is reaped, and the next call starts a new one."""
        if pid:
            _kill_and_wait(pid)
        self.close()
        code = self.process.returncode
        how = _signal_or_exit(-code, 0) if code < 0 else _signal_or_exit(0, code)
        return Ended(killed=False, stage=where, how=how, server_pid=self.process.pid)

    def _end(self, pid: int) -> None:
        """Kill the child `pid` and read on to the server's word that it exited; a server that does not say so
        in 5 s is ended too (the next call starts another)."""
        if pid:
            _kill(pid)
        ends = time.monotonic() + 5.0
        while pid:  # to the server's word that it exited (an answer that came before it is dropped)
            message = self._message(ends - time.monotonic())
            if message is None or message is _GONE:
                break
            if message[0] == "warning":  # sent before the kill: the caller's all the same (not raised here)
                with contextlib.suppress(Warning):
                    warnings.warn_explicit(*message[1], registry=_WARNED)
            if message[0] == "exit":
                return
        self.close()

    def _message(self, wait: float):
        """The next message from the server or a child; None if none came in `wait` seconds; _GONE if the server
        exited (or the answer pipe closed) with no message left to read."""
        ends = time.monotonic() + max(wait, 0.0)
        watched = [self.answers] if self.watch is None else [self.answers, self.watch]
        while True:
            if len(self.buffer) >= _HEADER.size:
                size = _HEADER.unpack_from(self.buffer)[0]
                if len(self.buffer) >= _HEADER.size + size:
                    data = self.buffer[_HEADER.size:_HEADER.size + size]
                    self.buffer = self.buffer[_HEADER.size + size:]
                    return pickle.loads(data)
            left = ends - time.monotonic()
            if left <= 0:
                return None
            ready = select.select(watched, [], [], left if self.watch is not None else min(left, _POLL_S))[0]
            if self.answers in ready:  # what the server or a child sent first, even from a server now dead
                chunk = os.read(self.answers, 1 << 20)
                if not chunk:
                    return _GONE
                self.buffer += chunk
            elif self.watch in ready or (self.watch is None and self.process.poll() is not None):
                return _GONE

    def close(self) -> None:
        if self.owner != os.getpid():  # a forked process's copy: the server is its parent's
            return
        if _Server._current is self:
            _Server._current = None
        for fd in (self.request, self.answers, self.watch):
            if fd is None:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
        self.watch = None
        self.process.kill()
        self.process.wait()


def _pidfd(pid: int) -> int | None:
    """A file descriptor that select() finds readable once process `pid` has exited (None where Linux has none)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _kill_and_wait(pid: int, wait: float = 5.0) -> None:
    """Kill process `pid` (not this process's child: the server's) and wait until it has exited."""
    watch = _pidfd(pid)
    _kill(pid)
    if watch is not None:
        select.select([watch], [], [], wait)
        os.close(watch)


def _signal_or_exit(signum: int, code: int) -> str:
    """How a process ended, in words: a signal's name, or "exit N"."""
    if signum:
        try:
            return signal.Signals(signum).name
        except ValueError:
            return f"signal {signum}"
    return f"exit {code}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _send(fd: int, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, _HEADER.pack(len(data)) + data)


# ------------------------------------------------------------------------------------------------ the server

_answer_fd: int | None = None  # in a child of the server: where stage() and the answer go


def stage(text: str) -> None:
    """Say what the solve is doing now (a no-op outside a child of the solve server)."""
    if _answer_fd is not None:
        _send(_answer_fd, ("stage", text))


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def prepare_to_fork() -> None:
    """What a server that forks one process per solve does once, after its imports (this module's server, and the
    runner's and the benchmark's fork servers through experiments.runner.warm).

    - The threadpoolctl controller that solvers.blas keeps for the working sets' one-thread sections is made here
      once, so that no solve process scans the loaded libraries again (a scan in each forked solve: 22-36 ms,
      about 3 % of the kernel dual's working set at n = 5,000). A forked process shares the server's libraries,
      so the controller made here limits the same ones (numpy's, scipy's and SCS's OpenBLAS, and libgomp).
    - The objects the imports made (about 180,000 that the garbage collector tracks: Pyomo, cvxpy, scipy) are
      moved out of its reach (gc.freeze, the standard library's advice for a server that forks): a full
      collection walked them all, 0.1 s, at intervals set by the allocations, so that one solve in several took
      0.1 s longer (the kernel dual at n = 5,000 through Pyomo: 0.28 s against 0.18 s), and in a forked process
      its writes copied the server's memory pages. Nothing imported is collected later in any case.
    """
    from solvers import blas  # here, in a server: a caller's process needs no threadpoolctl for this module

    blas.controller()
    gc.collect()  # the imports' garbage first: what is frozen is never freed
    gc.freeze()


def _serve(request_fd: int, answer_fd: int) -> None:
    """Import PRELOAD, say ready, then fork a child per request and report how each ended, until the caller
    closes the request pipe (it exited)."""
    for module in PRELOAD:
        importlib.import_module(module)
    prepare_to_fork()
    _send(answer_fd, ("ready",))
    while True:
        request = [_read_frame(request_fd), _read_frame(request_fd)]  # the registered backends, the work
        if None in request:
            return
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            _die_with_parent(server)
            os.close(request_fd)
            _child(*request, answer_fd)
        _, status = os.waitpid(pid, 0)
        how = _signal_or_exit(os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
                              os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0)
        _send(answer_fd, ("exit", how))


#: prctl's option that sends a signal to this process when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In a child of the server: be killed when the server dies (a server killed during a solve left its child
    running to its end, 23.8 s, with the caller waiting for it), or exit now if it died already."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _forward_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """warnings.showwarning in a child: the warning goes to the caller, whose filters decide (a trial's
    simplefilter("ignore") and catch_warnings(record=True) saw nothing of a child's warnings, printed here)."""
    try:
        _send(_answer_fd, ("warning", (message, category, filename, lineno)))
    except Exception:  # noqa: BLE001 - a warning that does not pickle: its words
        _send(_answer_fd, ("warning", (str(message), UserWarning, filename, lineno)))


def _read_frame(fd: int) -> bytes | None:
    """One frame of a request (its size, then its bytes); None if the caller closed the pipe."""
    header = _read_exactly(fd, _HEADER.size)
    return None if header is None else _read_exactly(fd, _HEADER.unpack(header)[0])


def _child(added: bytes, work: bytes, answer_fd: int) -> None:
    global _answer_fd, ISOLATE
    _answer_fd = answer_fd
    ISOLATE = False  # this process is the one killed at the limit: an entry point called in it runs here
    warnings.simplefilter("always")  # every warning to the caller, whose own filters apply there
    warnings.showwarning = _forward_warning
    code = 0
    try:
        _send(answer_fd, ("pid", os.getpid()))
        try:
            registry.adopt(added)  # the backends the caller registered, before the work that may use them
            answer = ("returned", pickle.loads(work)())
        except Exception as exc:  # raised in the caller, as if the work had run there
            answer = ("raised", exc)
        try:
            _send(answer_fd, answer)
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle: its words
            _send(answer_fd, ("raised", RuntimeError(f"the solve's answer could not be sent back: {exc}")))
    except BaseException:  # noqa: BLE001 - the child must reach os._exit, whatever happens
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    from solvers import isolation  # the module itself, not this __main__ copy: stage() reads its _answer_fd

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it kills the child it waits for
    isolation._serve(int(sys.argv[1]), int(sys.argv[2]))
