"""One BLAS thread for small dense work, without threadpoolctl's library scan at every call, or at the first.

``threadpoolctl.threadpool_limits(...)`` finds the loaded BLAS libraries anew at every call, a cost
comparable to a small SVMClassifier fit. The controller is made at the first use and kept
(threadpoolctl's documented way to limit repeatedly).

A BLAS library first loaded after that is not limited; the controller is remade when
``refresh()`` is called (the tests do, and nothing in the project loads a BLAS late: numpy and
scipy bring theirs at import).

Which libraries: the project's dense algebra is numpy's and scipy's (numpy's products, scipy's
LAPACK, and the compiled functions' BLAS through scipy.linalg.cython_blas), so theirs are the ones
limited. pip's wheels of both keep their BLAS in a folder beside the package (auditwheel's
``numpy.libs``, ``scipy.libs``): the controller is made from the libraries there that the process
has loaded, a few files, where threadpoolctl's own Linux scan reads /proc/self/maps (about 1,400
lines once Pyomo, cvxpy and SciPy are imported) and resolves every path in it, a few milliseconds
of a fresh process's first small fit (docs/benchmarks.md). Where either folder holds no loaded
BLAS (conda, a distribution's numpy), the whole scan is made, passing over Python's extension
modules, which are never a BLAS or an OpenMP runtime.

This overrides a private method of threadpoolctl (its Linux scan): this module is the one place
that does, pyproject bounds the version, and tests/test_blas.py checks that it finds numpy's and
scipy's BLAS as threadpoolctl's own scan does.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re

import numpy
import scipy
from threadpoolctl import ThreadpoolController

#: A Python extension module's file name (PEP 3149's tagged suffix, or the stable ABI's).
_EXTENSION_MODULE = re.compile(r"\.(cpython-[^/]*|abi3)\.so$")

_controller: ThreadpoolController | None = None


class _Controller(ThreadpoolController):
    """threadpoolctl's controller, whose Linux scan looks at numpy's and scipy's own libraries first (module
    docstring), else reads /proc/self/maps, passing over Python's extension modules."""

    def _find_libraries_with_linux(self):
        if self._found_bundled_blas():
            return
        self.lib_controllers = []
        with open("/proc/self/maps", "rb") as f:
            maps = f.read()
        for filepath in set(self._PATH_RE.findall(maps)):
            path = filepath.decode("utf-8")
            if not _EXTENSION_MODULE.search(os.path.basename(path)):
                self._make_controller_from_path(path)

    def _found_bundled_blas(self) -> bool:
        """Controllers for the loaded libraries of numpy's and scipy's wheel folders; whether each folder had a
        BLAS among them."""
        for folder in _WHEEL_FOLDERS:
            before = len(self.lib_controllers)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
                path = os.path.join(folder, name)
                if _loaded(path):  # threadpoolctl's cache would remember a library not loaded yet as none
                    self._make_controller_from_path(path)
            if not any(lib.user_api == "blas" for lib in self.lib_controllers[before:]):
                return False
        return True


#: Where pip's wheels of numpy and scipy keep the libraries they bring (auditwheel's "<package>.libs").
_WHEEL_FOLDERS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(module.__file__))),
                                    f"{module.__name__}.libs") for module in (numpy, scipy))


def _loaded(path: str) -> bool:
    """Whether the process has loaded the shared library at `path` (dlopen's RTLD_NOLOAD: nothing is loaded)."""
    try:
        ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    return True


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
