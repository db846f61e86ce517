"""One BLAS thread for small dense work, without threadpoolctl's per-call library scan.

``threadpoolctl.threadpool_limits(...)`` finds the loaded BLAS libraries anew at every call: 6 ms a
call here (measured: 6.07 ms against 0.019 ms for ``ThreadpoolController.limit`` on a controller
made once), which was about a tenth of one SVMClassifier fit on a breast-cancer fold. The
controller is made at the first use and kept (threadpoolctl's documented way to limit repeatedly).

A BLAS library first loaded after that is not limited; the controller is remade when
``refresh()`` is called (the tests do, and nothing in the project loads a BLAS late: numpy and
scipy bring theirs at import).

The environment of the processes the project starts (``IDLE_THREAD_VARIABLES``, ``environment``) is here
too: what OpenBLAS reads once, when it loads, cannot be set by a process whose numpy is loaded already.
"""

from __future__ import annotations

import contextlib
import os

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None


def controller() -> ThreadpoolController:
    """The process's ThreadpoolController, made once."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller


def refresh() -> None:
    """Forget the controller: the next use scans the loaded libraries again."""
    global _controller
    _controller = None


def one_thread():
    """A context in which BLAS runs on one thread (as ``threadpool_limits(limits=1, user_api="blas")``)."""
    return controller().limit(limits=1, user_api="blas")


def one_thread_if(small: bool):
    """one_thread() when `small`, else BLAS's own thread count (a context either way)."""
    return one_thread() if small else contextlib.nullcontext()


#: OpenBLAS's idle worker threads spin (sched_yield in a loop) for 2^28 processor cycles, about 0.1 s
#: here, before they sleep: after each call they shared, and after a forked process makes their pool
#: again, which its first thread-count call does (one_thread() is one). On this project's 2-core machines
#: the spinning thread slowed the solve beside it. Measured in forked processes of a preloaded server
#: (kernel dual, PIQP, the first solve of each process): at n = 60, 0.079-0.092 s against 0.018-0.020 s
#: through cvxpy, 0.069-0.072 against 0.012-0.014 through Pyomo, 0.036-0.040 against 0.007 through the
#: solver alone; at n = 5,000, 0.38-0.52 s against 0.33-0.37 through cvxpy, 0.24-0.27 against 0.18-0.20
#: through the solver alone. OPENBLAS_THREAD_TIMEOUT is log2 of those cycles; 4, OpenBLAS's smallest, has
#: them sleep at once (a shared call then wakes them through a condition variable: microseconds). OpenBLAS
#: reads it when it loads, so it is given to the processes the project starts: the runner's and the
#: benchmark's fork servers, whose solve processes inherit it.
IDLE_THREAD_VARIABLES = {"OPENBLAS_THREAD_TIMEOUT": "4"}


@contextlib.contextmanager
def environment(variables: dict[str, str]):
    """os.environ with `variables` added where the user set none, for the processes started inside (they
    inherit it); afterwards this process's environment is as it was."""
    unset = [name for name in variables if name not in os.environ]
    os.environ.update({name: variables[name] for name in unset})
    try:
        yield
    finally:
        for name in unset:
            os.environ.pop(name, None)
