"""One BLAS thread for small dense work, without threadpoolctl's per-call library scan; the cores BLAS found, for
the project's own threads.

``threadpoolctl.threadpool_limits(...)`` finds the loaded BLAS libraries anew at every call, a cost
comparable to a small SVMClassifier fit. The controller is made at the first use and kept
(threadpoolctl's documented way to limit repeatedly).

A BLAS library first loaded after that is not limited; the controller is remade when
``refresh()`` is called (the tests do, and nothing in the project loads a BLAS late: numpy and
scipy bring theirs at import).
"""

from __future__ import annotations

import contextlib

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None
_own_threads = 1  # BLAS's thread count when the controller was made (before any limit of ours)


def controller() -> ThreadpoolController:
    """The process's ThreadpoolController, made once."""
    global _controller, _own_threads
    if _controller is None:
        _controller = ThreadpoolController()
        counts = [lib.num_threads for lib in _controller.select(user_api="blas").lib_controllers]
        _own_threads = max(counts, default=1)
    return _controller


def refresh() -> None:
    """Forget the controller: the next use scans the loaded libraries again."""
    global _controller
    _controller = None


def one_thread():
    """A context in which BLAS runs on one thread (as ``threadpool_limits(limits=1, user_api="blas")``)."""
    return controller().limit(limits=1, user_api="blas")


def own_threads() -> int:
    """BLAS's thread count as the process found it, before any limit of ours: the cores the process may use."""
    controller()
    return _own_threads


def one_thread_if(small: bool):
    """one_thread() when `small`, else BLAS's own thread count (a context either way)."""
    return one_thread() if small else contextlib.nullcontext()
