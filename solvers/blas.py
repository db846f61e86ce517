"""One BLAS thread for small dense work, without threadpoolctl's per-call library scan.

``threadpoolctl.threadpool_limits(...)`` finds the loaded BLAS libraries anew at every call, a cost
comparable to a small SVMClassifier fit. The controller is made at the first use and kept
(threadpoolctl's documented way to limit repeatedly).

A BLAS library first loaded after that is not limited; the controller is remade when
``refresh()`` is called (the tests do, and nothing in the project loads a BLAS late: numpy and
scipy bring theirs at import).

The scan resolves the real path of every library the process has loaded, and after importing
Pyomo, cvxpy and SciPy most of them are Python's extension modules: about 12 ms of a fresh
process's first solve. `_Controller` passes over those, which are never a BLAS or an OpenMP
runtime. It overrides a private method of threadpoolctl (its Linux scan): this module is the one
place that does, pyproject bounds the version, and tests/test_blas.py checks that it finds the same
libraries as threadpoolctl's own scan.
"""

from __future__ import annotations

import contextlib

import os
import re

from threadpoolctl import ThreadpoolController

#: A Python extension module's file name (PEP 3149's tagged suffix, or the stable ABI's).
_EXTENSION_MODULE = re.compile(r"\.(cpython-[^/]*|abi3)\.so$")

_controller: ThreadpoolController | None = None


class _Controller(ThreadpoolController):
    """threadpoolctl's controller, whose Linux scan of /proc/self/maps passes over Python's extension modules."""

    def _find_libraries_with_linux(self):
        with open("/proc/self/maps", "rb") as f:
            maps = f.read()
        for filepath in set(self._PATH_RE.findall(maps)):
            path = filepath.decode("utf-8")
            if not _EXTENSION_MODULE.search(os.path.basename(path)):
                self._make_controller_from_path(path)


def controller() -> ThreadpoolController:
    """The process's ThreadpoolController, made once."""
    global _controller
    if _controller is None:
        _controller = _Controller()
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
