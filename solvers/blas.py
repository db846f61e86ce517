"""One BLAS thread for small dense work, without threadpoolctl's per-call library scan.

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
