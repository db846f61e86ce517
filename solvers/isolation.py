"""Work in a process of its own, killed past its time limit: the one way the project runs what it may have to stop.

Three callers use it: a solve entry point given a time limit (solvers.api.solve, solvers.lp.solve_lp,
solvers.algorithms.direct.solve, the working sets; through run_solve), the runner's sweep (every task) and the
benchmark (every measurement). Some steps cannot be stopped from Python (a layer loading a model, a solver's setup
that its own time limit does not cover), and they are the long ones on large data: only a killed process stops them.

How: a server (`python -m solvers.isolation`, started at the first call) imports its preload list once and forks
one child per call; the child reads the pickled work from a socket of its own, runs it and answers on that socket.
One kill policy: the caller kills the child at kill_after(limit), the limit plus KILL_GRACE_S plus KILL_GRACE_SHARE
of it (the child's own stop, its closing checks and the answer's pickling come after the limit). The caller gets
the answer, the work's exception raised here, or an `Ended`: killed (`stage`: the step it was in, said with
stage()), dead by itself (HiGHS can abort its process: `how`), or ended with the server that died during the call
(`server_pid`), or, for a solve entry point, the limit that came while the server was still starting (`starting`:
its imports, or numba's compile of the SMO on a first use; the start is part of the user's time limit, and the
server goes on starting for the next call). The child dies with the server (PR_SET_PDEATHSIG), the caller sees
a server's death at once (a pidfd), the next call starts a new server, and a server ends when its caller does (its
control socket closes).
The backends registered in the caller (solvers.registry.register) are registered in the child before the work;
the child's warnings are warned in the caller, through the caller's filters (unless the caller logs them).

Why a server, not a fork of the caller: Clarabel and HiGHS start thread pools at their first solve, and a fork of a
process that has them inherits the pools without their threads. Why not multiprocessing's fork server, pebble or
loky: their workers import the caller's main script again (a script without `if __name__ == "__main__":` would run
itself in each solve), pebble ends a task with SIGTERM, and none lets the work say where it is (stage), forwards its
warnings, or ends a worker stuck in native code when its caller dies.

A solve entry point runs here only with a limit, on Linux, and when no parent kills its process already (a child of
this module sets ISOLATE = False); work that cannot be sent (a lambda kernel, a function of the caller's
`__main__`) runs in the caller, stopped by the deadline's own checks only, and its row says so (IN_CALLER).
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
import socket
import struct
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

from solvers import registry
from solvers.backends import RECORDS
from solvers.deadline import Deadline

#: Whether this system can run a server (a fork per call, its socket passed to it).
SERVES = hasattr(os, "fork") and hasattr(socket, "send_fds")
#: Whether a solve entry point's call with a time limit runs in a server's child (see the module's docstring).
ISOLATE = SERVES and sys.platform.startswith("linux")

#: The one kill policy: a child is killed KILL_GRACE_S plus KILL_GRACE_SHARE of its limit after the limit.
KILL_GRACE_S = 0.5
KILL_GRACE_SHARE = 0.05

#: What every server imports once, so that each child starts warm; a caller adds the modules of its own work.
PRELOAD = ("numpy", "scipy.sparse", "pyomo.environ", "cvxpy", "qpsolvers",
           *(record.module for record in RECORDS.values()), "pyomo.contrib.solver.solvers.highs", "solvers.api")

#: What a server's environment adds where the user set nothing: variables the libraries read once, when they
#: load, so that a freshly forked child runs as fast as a long-lived process (docs/benchmarks.md): OpenBLAS's
#: idle threads sleep at once instead of spinning beside the solve, and glibc's malloc keeps freed blocks
#: for the next step instead of faulting them in again page by page.
SOLVE_PROCESS_VARIABLES = {
    "OPENBLAS_THREAD_TIMEOUT": "4",
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**30),
}

#: How long a server may take to start (its imports) before the call runs in the caller instead.
SERVER_START_LIMIT_S = 120.0

#: How long a caller waits for the server's word that a child exited after its answer or its kill.
EXIT_WAIT_S = 5.0

_HEADER = struct.Struct("<Q")

#: The steps of a server's start, as the server says them on its control socket before b"r" (ready).
_STARTING = {
    b"i": "importing the layers and the solvers",
    b"c": "loading the compiled SMO functions, which numba compiles on their first use when its cache is empty: "
          "once per installation, tens of seconds",
}


@dataclass(frozen=True)
class Ended:
    """A call that gave no answer: killed at the limit plus the grace, dead by itself (`how`), ended with the
    server, which died during it (`server_pid`: the server's; `how`: how the server died), or not sent: the limit
    came while the server was still starting (`starting`, with killed True: the limit ended it)."""

    killed: bool
    stage: str  # the child's last stage() ("" if it set none)
    how: str = ""  # how it died: a signal's name or "exit N"
    server_pid: int = 0  # the server that died during the call (0: the server lived)
    starting: str = ""  # the limit came with the server still starting: what it was doing (no child ran)


#: Where a solve with a limit ran in this process although a server could take it (extras["isolation"]).
IN_CALLER = "ran in the calling process, stopped by the time limit's own checks only (a step in native code " \
            "may run past it): {why}"


def grace(limit: float) -> float:
    """The seconds past a limit of `limit` seconds at which its child is killed."""
    return KILL_GRACE_S + KILL_GRACE_SHARE * limit


def kill_after(deadline: Deadline) -> float | None:
    """Seconds from now until the child of a solve with this deadline is killed (None: no limit)."""
    left = deadline.remaining()
    return None if left is None else left + grace(deadline.limit)


# ------------------------------------------------------------------------------------- the solve entry points


def run(deadline: Deadline, work: Callable[[], Any]) -> Any:
    """work() in a server's child, killed at kill_after(deadline): its result, or its exception raised here, or an
    `Ended` when it gave no answer. In this process where the docstring says. A server's start is part of the
    call's time: a limit that comes while the server still starts is an `Ended` saying so (`starting`)."""
    return run_where(deadline, work)[0]


def run_solve(deadline: Deadline, work: Callable[[], Any], unanswered: Callable[[Ended], Any]) -> Any:
    """A solve entry point's run: run(deadline, work), whose `Ended` becomes unanswered(ended)'s row; the row says
    where the solve ran if not in a server (extras["isolation"]) and how long it waited for the server's start."""
    sol, why = run_where(deadline, work)
    if isinstance(sol, Ended):
        sol = unanswered(sol)
    if why:
        sol.extras["isolation"] = why
    if deadline.server_start_s:
        sol.extras["solve_server_start_s"] = deadline.server_start_s
    return sol


def run_where(deadline: Deadline, work: Callable[[], Any]) -> tuple[Any, str]:
    """run(deadline, work), and why it ran in this process where a server could have taken it (IN_CALLER's
    words; "" when it ran in a server, or here because there is no limit or a parent kills this process).
    The wait for the server's start counts against the limit (deadline.server_start_s says how much of it)."""
    if deadline.limit is None or not ISOLATE:
        return work(), ""
    frames, why = request(work)
    if frames is not None:
        until = time.monotonic() + deadline.remaining()
        answer, why, waited = call(frames, partial(_kill_at_limit, deadline), preload=PRELOAD, until=until)
        deadline.server_start_s += waited
        if answer is not NOT_TAKEN:
            return answer, ""
    return work(), IN_CALLER.format(why=why)


def call(frames: tuple[bytes, ...], kill_rule: Callable[[], Callable[[], float | None]], *,
         preload: tuple[str, ...] = PRELOAD, variables: dict[str, str] | None = None,
         until: float | None = None) -> tuple[Any, str, float]:
    """`frames` (request()) sent to a child of the server of (preload, variables), started if need be; once more
    with a new server when the first was dead before it took them. kill_rule() is called once a server is ready
    and returns the call's kill_at (Server.call). Returns (answer, why, waited): Server.call's answer, or
    NOT_TAKEN and why no server took the work, or an `Ended` (`starting`) when `until` (a time.monotonic())
    came while the server was still starting; `waited`: the seconds spent waiting for a server's start."""
    waited, why = 0.0, ""
    for _ in range(2):
        server, start_s, why = Server.started(preload, variables, until=until)
        waited += start_s
        if server is None and why.startswith("the solve server died"):
            continue  # a new server may start where this one died (a crash, a kill): the same second try
        if server is None:
            return NOT_TAKEN, why, waited
        if not server.ready:
            return Ended(killed=True, stage="", starting=server.doing()), "", waited
        answer = server.call(frames, kill_rule())
        if answer is not NOT_TAKEN:
            return answer, "", waited
        why = "the solve server died before it took the solve"
    return NOT_TAKEN, f"{why}, twice", waited


def _kill_at_limit(deadline: Deadline) -> Callable[[], float | None]:
    """The kill time of a solve whose server is ready now: kill_after(deadline) from now."""
    ends = time.monotonic() + kill_after(deadline)
    return lambda: ends


def request(work: Callable[[], Any], forward_warnings: bool = True) -> tuple[tuple[bytes, ...] | None, str]:
    """The frames a child reads: its options, the backends registered in this process (registry.added_payload),
    and `work` pickled; or None and why they cannot be sent."""
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
    return (pickle.dumps({"forward_warnings": forward_warnings}), added, payload), ""


# ------------------------------------------------------------------------------------------------ the caller

NOT_TAKEN = object()  # Server.call: the server was dead before it took the work
_GONE = object()  # _Call.message: the server died (or every writer of the call's socket closed it)
_WARNED: dict = {}  # the children's warnings shown here once per place, as Python shows a warning ("default")
#: How often a wait looks again at its kill time (the runner's slow stop moves it) and, without a pidfd
#: (Linux < 5.3), whether the server still runs.
_POLL_S = 0.25
_LIVE: set[int] = set()  # the children waited for now (kill_running)
_LIVE_LOCK = threading.Lock()


class Server:
    """A server process, its control socket (one per call is passed through it), and the children it forked."""

    _running: dict[tuple, Server] = {}
    _start_lock = threading.Lock()

    def __init__(self, preload: tuple[str, ...], variables: dict[str, str]):
        self.control, theirs = socket.socketpair()
        added = {name: value for name, value in {**SOLVE_PROCESS_VARIABLES, **variables}.items()
                 if name not in os.environ}
        env = {**os.environ, **added, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
        self.process = subprocess.Popen([sys.executable, "-m", "solvers.isolation", str(theirs.fileno()), *preload],
                                        pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
        theirs.close()
        self.owner = os.getpid()  # a process forked from this one starts its own: the socket is this one's
        self.watch = _pidfd(self.process.pid)  # readable once the server has exited (None: poll it instead)
        self.ready = self.closed = False
        self.began, self.step = time.monotonic(), b"i"  # its start, and its step in it (_STARTING)
        self._send_lock = threading.Lock()

    @classmethod
    def start(cls, preload: tuple[str, ...] = PRELOAD, variables: dict[str, str] | None = None) -> None:
        """Start the server of (preload, variables) now, not waiting for its imports (they overlap the caller's)."""
        key = (tuple(preload), tuple(sorted((variables or {}).items())))
        with cls._start_lock:
            if not cls._alive(cls._running.get(key)):
                cls._running[key] = cls(tuple(preload), dict(variables or {}))
                atexit.register(cls._running[key].close)  # else Python warns at exit that it still runs

    @classmethod
    def running(cls, preload: tuple[str, ...] = PRELOAD, variables: dict[str, str] | None = None,
                until: float | None = None) -> tuple[Server | None, float]:
        """The server of (preload, variables), started if need be, and the seconds this call waited for its start
        (0 if it was ready); None if it did not start in SERVER_START_LIMIT_S or died while starting. `until`: a
        time.monotonic() at which the wait ends with the server still starting (not ready; it goes on starting for
        the next call)."""
        server, waited, _ = cls.started(preload, variables, until)
        return server, waited

    @classmethod
    def started(cls, preload: tuple[str, ...] = PRELOAD, variables: dict[str, str] | None = None,
                until: float | None = None) -> tuple[Server | None, float, str]:
        """running(), and where the server is None why: it died while starting (its exit code) or it did not
        start in SERVER_START_LIMIT_S (a dead server is worth a new one, a slow one is not)."""
        key = (tuple(preload), tuple(sorted((variables or {}).items())))
        cls.start(preload, variables)
        with cls._start_lock:
            server = cls._running.get(key)
            if server is None or server.ready:
                return server, 0.0, ""
            began = time.perf_counter()
            gives_up = server.began + SERVER_START_LIMIT_S
            server._wait_ready(gives_up if until is None else min(until, gives_up))
            waited = time.perf_counter() - began
            if server.ready or not (server.closed or time.monotonic() >= gives_up):
                return server, waited, ""
            died = server.closed
            server.close()
            if died:
                return None, waited, f"the solve server died while starting (exit code {server.process.returncode})"
            return None, waited, f"the solve server did not start in {SERVER_START_LIMIT_S:g} s"

    def _wait_ready(self, by: float) -> None:
        """Read the server's words on its start until it is ready, dead (closed here), or time.monotonic() is
        `by`."""
        while not self.ready and (left := by - time.monotonic()) > 0:
            if not select.select([self.control], [], [], left)[0]:
                return
            word = self.control.recv(1)
            if word == b"r":
                self.ready = True
            elif word in _STARTING:
                self.step = word
            else:  # the server died during its start
                self.close()
                return

    def doing(self) -> str:
        """What the server is doing while it starts, in words."""
        return _STARTING[self.step]

    @classmethod
    def _alive(cls, server: Server | None) -> bool:
        if server is None:
            return False
        if server.owner == os.getpid() and server.process.poll() is None:
            return True
        server.close()  # a server that died between two calls: its socket closed, the process reaped
        return False

    def call(self, frames: tuple[bytes, ...], kill_at: Callable[[], float | None]) -> Any:
        """Send `frames` (request()) to a new child; its answer, its exception raised here, an `Ended`, or
        NOT_TAKEN when the server was dead. The child is killed once time.monotonic() passes kill_at()."""
        mine, theirs = socket.socketpair()
        try:
            with self._send_lock:
                socket.send_fds(self.control, [b"w"], [theirs.fileno()])
            theirs.close()
            for frame in frames:  # each as it is: the data are not copied into one buffer (80 MB at 20,000 x 500)
                mine.sendall(_HEADER.pack(len(frame)))
                mine.sendall(frame)
        except OSError:  # the server died since the last call, before it forked a child
            theirs.close()
            mine.close()
            self.close()
            return NOT_TAKEN
        with contextlib.closing(mine):
            return _Call(self, mine).wait(kill_at)

    def close(self) -> None:
        if self.owner != os.getpid() or self.closed:  # a forked process's copy: the server is its parent's
            return
        self.closed = True
        for key, server in list(Server._running.items()):
            if server is self:
                del Server._running[key]
        self.control.close()
        if self.watch is not None:
            with contextlib.suppress(OSError):
                os.close(self.watch)
            self.watch = None
        self.process.kill()
        self.process.wait()


class _Call:
    """One call's socket, read until its child's answer and the server's word that the child exited."""

    def __init__(self, server: Server, sock: socket.socket):
        self.server, self.sock, self.buffer = server, sock, b""
        self.pid, self.stage = 0, ""

    def wait(self, kill_at: Callable[[], float | None]) -> Any:
        answer = None
        try:
            while answer is None:
                ends = kill_at()
                left = None if ends is None else ends - time.monotonic()
                if left is not None and left <= 0:  # past the limit and its grace: the child goes
                    return self._end_with(Ended(killed=True, stage=self.stage), kill=True)
                message = self.message(_POLL_S if left is None else min(left, _POLL_S))
                if message is _GONE:  # the server died during the call (killed, out of memory)
                    return self._server_died()
                if message is not None:
                    answer = self._take(message)
        except BaseException:  # Ctrl-C while waiting, or a warning the caller's filters make an error
            self._end_with(None, kill=True)
            raise
        if isinstance(answer, Ended):  # dead by itself: the server said how
            return answer
        self._end_with(None, kill=False)  # to the server's word that the child exited
        if answer[0] == "raised":
            raise answer[1]
        return answer[1]

    def _take(self, message) -> tuple | Ended | None:
        """Note a message; the answer when it is one (("returned" | "raised", value), or an Ended)."""
        kind, value = message
        if kind == "pid":
            self.pid = value
            with _LIVE_LOCK:
                _LIVE.add(value)
        elif kind == "stage":
            self.stage = value
        elif kind == "warning":  # through this process's filters, as if warned here
            warnings.warn_explicit(*value, registry=_WARNED)
        elif kind in ("returned", "raised"):
            return message
        elif kind == "exit":
            self._forget()
            return Ended(killed=False, stage=self.stage, how=value)
        return None

    def _end_with(self, ended: Ended | None, kill: bool) -> Ended | None:
        """Kill the child (once its pid is known) if `kill`, and read on to the server's word that it exited. A
        child not gone in EXIT_WAIT_S after its answer is killed; a server that says nothing EXIT_WAIT_S after
        the kill is ended too (the next call starts another; other calls' children end with it)."""
        if kill and self.pid:
            _kill(self.pid)
        for _ in range(2):
            ends = time.monotonic() + EXIT_WAIT_S
            while (message := self.message(ends - time.monotonic())) is not None and message is not _GONE:
                kind, value = message
                if kind == "pid" and kill:  # killed before it said its pid
                    _kill(value)
                elif kind == "warning":  # sent before the kill: the caller's all the same (not raised here)
                    with contextlib.suppress(Warning):
                        warnings.warn_explicit(*value, registry=_WARNED)
                elif kind == "exit":
                    self._forget()
                    return ended
            if message is _GONE or kill:
                break
            kill = True  # answered, yet still running: it goes
            if self.pid:
                _kill(self.pid)
        self.server.close()
        self._forget()
        return ended

    def _server_died(self) -> Ended:
        """The server died during the call: its child, which dies with it (_die_with_parent), is killed here too
        and waited for, the server is reaped, and the next call starts a new one."""
        if self.pid:
            _kill_and_wait(self.pid)
        self._forget()
        self.server.close()
        code = self.server.process.returncode
        how = _signal_or_exit(-code, 0) if code < 0 else _signal_or_exit(0, code)
        return Ended(killed=False, stage=self.stage, how=how, server_pid=self.server.process.pid)

    def _forget(self) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self.pid)

    def message(self, wait: float):
        """The next message from the child or the server; None if none came in `wait` seconds; _GONE if the
        server exited (or the socket closed) with no message left to read."""
        ends = time.monotonic() + max(wait, 0.0)
        watch = self.server.watch
        watched = [self.sock] if watch is None else [self.sock, watch]
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
            try:
                ready = select.select(watched, [], [], left if watch is not None else min(left, _POLL_S))[0]
            except (OSError, ValueError):  # another call closed the dead server's pidfd meanwhile
                return _GONE
            if self.sock in ready:  # what the child or the server sent first, even from a server now dead
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return _GONE
                self.buffer += chunk
            elif (watch is not None and watch in ready) or (watch is None and self.server.process.poll() is not None):
                return _GONE


def kill_running() -> int:
    """Kill every child this process waits for now (on Ctrl-C); returns how many."""
    with _LIVE_LOCK:
        pids = list(_LIVE)
    for pid in pids:
        _kill(pid)
    return len(pids)


def running_children() -> list[int]:
    """The pids of the children this process waits for now."""
    with _LIVE_LOCK:
        return sorted(_LIVE)


def _pidfd(pid: int) -> int | None:
    """A file descriptor that select() finds readable once process `pid` has exited (None where Linux has none)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


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


def _send(sock: socket.socket, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


# ------------------------------------------------------------------------------------------------ the server

_answer: socket.socket | None = None  # in a child: where stage(), the warnings and the answer go
_answer_lock = threading.Lock()


def stage(text: str) -> None:
    """Say what the work is doing now (a no-op outside a server's child)."""
    if _answer is not None:
        with _answer_lock:
            _send(_answer, ("stage", text))


def prepare_to_fork() -> None:
    """What a server does once, after its imports, before it forks a child per call.

    - The threadpoolctl controller that solvers.blas keeps for the working sets' one-thread sections is made
      here, so that no child scans the loaded libraries again; a child shares the server's libraries, so the
      controller made here limits the same ones.
    - The compiled functions are loaded (warm_compiled), once here instead of in every child that solves a
      kernel dual.
    - The objects the imports made are moved out of the garbage collector's reach (gc.freeze, the standard
      library's advice for a server that forks): a full collection in a child would walk them all and, by its
      writes, copy the server's memory pages. Nothing imported is collected later in any case.
    """
    from solvers import blas  # here, in a server: a caller's process needs no threadpoolctl for this module

    blas.controller()
    warm_compiled()
    gc.collect()  # the imports' garbage first: what is frozen is never freed
    gc.freeze()


def warm_compiled() -> None:
    """Every compiled function a solve uses, in the types it uses, loaded from numba's cache (compiled into it where
    it is empty): the SMO's (solvers.algorithms.smo.warm), then what comes after it (warm_after_smo)."""
    from solvers.algorithms import smo  # here: the caller's process imports this module without the compiled functions

    smo.warm()
    warm_after_smo()


#: The threads loading compiled functions, by (process, what they load): each starts once per process (a loaded
#: function stays loaded; a forked child starts its own).
_WARMING: dict[tuple[int, str], threading.Thread] = {}
_WARMING_LOCK = threading.Lock()


def warm_where_interactive() -> None:
    """warm_compiled on a thread of its own, once per process, where a person types the calls (a notebook, IPython,
    the interactive interpreter): where no build ahead of time is loaded (formulations.ahead_of_time), numba's start,
    most of the 0.3 s a process's first kernel solve pays, is then spent while they load their data. Not in a
    script, whose next steps run at once: there the thread would only move that cost into the import."""
    if _interactive():
        _in_background("warm_compiled")


def warm_after_smo_in_background() -> None:
    """warm_after_smo on a thread of its own, once per process: a kernel solve starts it as its SMO begins (the SMO
    holds none of the interpreter's lock). None where warm_compiled's thread, which loads these too, has begun."""
    _in_background("warm_after_smo")


def _in_background(what: str) -> None:
    """This module's function `what` on a daemon thread, once per process. A fork waits for such threads
    (_finish_warming)."""
    pid = os.getpid()
    with _WARMING_LOCK:
        if (pid, what) in _WARMING or (pid, "warm_compiled") in _WARMING:
            return
        if not _WARMING:  # once: the hook stays registered for the life of the process, as os.register_at_fork's do
            os.register_at_fork(before=_finish_warming)
        target = globals()[what]  # looked up now: a test may stand in for it
        thread = threading.Thread(target=target, name="load the compiled functions", daemon=True)
        _WARMING[(pid, what)] = thread
    thread.start()


def _interactive() -> bool:
    """Whether a person types this process's calls: a Jupyter kernel or IPython (they set __IPYTHON__), the
    interpreter's prompt (sys.ps1) or python -i."""
    import builtins

    return bool(getattr(builtins, "__IPYTHON__", False) or hasattr(sys, "ps1") or sys.flags.interactive)


def _finish_warming() -> None:
    """Before a fork, the loading threads finished: a child must not inherit numba's compile lock held by a thread
    it does not have."""
    pid = os.getpid()
    for (owner, _), thread in list(_WARMING.items()):
        if owner == pid and thread is not threading.current_thread():
            thread.join()


def warm_after_smo() -> None:
    """The compiled functions a kernel solve calls after its SMO, loaded: the rbf values'
    (formulations.rbf_exponents.warm) and the closing checks' (the kernel audit, b's recovery, the proof's compiled
    parts, the KKT maxima)."""
    import numpy as np  # as smo above

    from formulations import rbf_exponents, recovery  # as numpy: only a server (and a test) loads them up front
    from solvers import checks, kernel_audit, reference  # as recovery

    rbf_exponents.warm()
    kernel_audit.warm()
    y, g = np.array([1.0, -1.0]), np.array([0.5, -0.5])
    recovery.classify(np.array([0.5, 0.5]), y, g, 1.0)
    recovery.recover_bias(np.array([0.5, 0.5]), y, g, 1.0)
    reference.warm()
    checks.warm()


def _serve(control: socket.socket, preload: list[str]) -> None:
    """Import `preload`, say ready, then fork a child per call (its socket comes with it) and tell each call how
    its child ended, until the caller closes the control socket (it exited)."""
    for module in preload:
        importlib.import_module(module)
    control.sendall(b"c")
    prepare_to_fork()
    wake_read, wake_write = os.pipe()  # a SIGCHLD wakes the select below
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    control.sendall(b"r")
    calls: dict[int, socket.socket] = {}  # child pid -> the server's copy of its call's socket
    while True:
        ready = select.select([control, wake_read], [], [])[0]
        if wake_read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 4096)
            _reap(calls)
        if control in ready:
            message, fds, _, _ = socket.recv_fds(control, 1, 1)
            if not message:
                return  # the caller exited: the children die with this process
            conn = socket.socket(fileno=fds[0])
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in (control.fileno(), wake_read, wake_write, *(c.fileno() for c in calls.values())):
                    os.close(fd)
                _die_with_parent(server)
                _child(conn)
            calls[pid] = conn


def _reap(calls: dict[int, socket.socket]) -> None:
    """Tell the call of each child that exited how it ended, and close the server's copy of its socket."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        how = _signal_or_exit(os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
                              os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0)
        conn = calls.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # a caller that stopped reading
                _send(conn, ("exit", how))
            conn.close()


#: prctl's option that sends a signal to this process when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In a child: be killed when the server dies (else a child of a killed server runs to its end with the
    caller waiting for it), or exit now if it died already."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _forward_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """warnings.showwarning in a child: the warning goes to the caller, whose filters decide (a caller's
    simplefilter("ignore") or catch_warnings(record=True) must see the child's warnings as its own)."""
    with _answer_lock:
        try:
            _send(_answer, ("warning", (message, category, filename, lineno)))
        except Exception:  # noqa: BLE001 - a warning that does not pickle: its words
            _send(_answer, ("warning", (str(message), UserWarning, filename, lineno)))


def _read_frame(sock: socket.socket) -> bytes:
    header = _read_exactly(sock, _HEADER.size)
    return _read_exactly(sock, _HEADER.unpack(header)[0])


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if not n:
            raise EOFError("the caller closed the call's socket")
        got += n
    return bytes(data)


def _child(conn: socket.socket) -> None:
    global _answer, ISOLATE
    _answer = conn
    ISOLATE = False  # this process is the one killed at the limit: an entry point called in it runs here
    code = 0
    try:
        _send(conn, ("pid", os.getpid()))
        options, added, work = (_read_frame(conn) for _ in range(3))
        if pickle.loads(options)["forward_warnings"]:
            warnings.simplefilter("always")  # every warning to the caller, whose own filters apply there
            warnings.showwarning = _forward_warning
        try:
            registry.adopt(added)  # the backends the caller registered, before the work that may use them
            answer = ("returned", pickle.loads(work)())
        except Exception as exc:  # raised in the caller, as if the work had run there
            answer = ("raised", exc)
        with _answer_lock:
            try:
                _send(conn, answer)
            except Exception as exc:  # noqa: BLE001 - an answer that does not pickle: its words
                _send(conn, ("raised", RuntimeError(f"the answer could not be sent back: {exc}")))
    except BaseException:  # noqa: BLE001 - the child must reach os._exit, whatever happens
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    from solvers import isolation  # the module itself, not this __main__ copy: stage() reads its _answer

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it kills the children it waits for
    isolation._serve(socket.socket(fileno=int(sys.argv[1])), sys.argv[2:])
