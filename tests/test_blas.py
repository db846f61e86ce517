"""solvers.blas: the project's threadpoolctl controller finds numpy's and scipy's BLAS, as threadpoolctl's own scan
does."""

import os
import sys

import pytest
import threadpoolctl

from solvers import blas

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the override is of the Linux scan")


def _found(controller) -> list[tuple[str, str]]:
    return sorted((lib.filepath, lib.internal_api) for lib in controller.lib_controllers)


def _blas_of(controller) -> list[tuple[str, str]]:
    return [(path, api) for path, api in _found(controller) if api in ("openblas", "mkl", "blis", "flexiblas")]


def _in_wheel_folders(path: str) -> bool:
    return os.path.dirname(os.path.realpath(path)) in {os.path.realpath(f) for f in blas._WHEEL_FOLDERS}


@linux_only
def test_the_controller_finds_numpys_and_scipys_blas_as_threadpoolctl_does():
    import numpy  # noqa: F401  (a BLAS, and scikit-learn's OpenMP runtime, loaded)
    import scipy.linalg  # noqa: F401
    import sklearn.svm  # noqa: F401
    ours = _blas_of(blas._Controller())
    theirs = _blas_of(threadpoolctl.ThreadpoolController())
    assert ours, "no BLAS found"
    if all(_in_wheel_folders(path) for path, _ in ours):  # pip's wheels: numpy's and scipy's own
        assert ours == [lib for lib in theirs if _in_wheel_folders(lib[0])]
        assert {os.path.dirname(path) for path, _ in ours} == {os.path.realpath(f) for f in blas._WHEEL_FOLDERS}
    else:  # the whole scan
        assert ours == theirs


@linux_only
def test_without_a_blas_in_the_wheel_folders_the_whole_scan_is_made(monkeypatch, tmp_path):
    """A numpy or scipy not from pip's wheels (conda, a distribution's): every loaded library is looked at."""
    import sklearn.svm  # noqa: F401
    (tmp_path / "libgfortran-0.so.5").write_bytes(b"")  # a folder with no BLAS in it
    monkeypatch.setattr(blas, "_WHEEL_FOLDERS", (str(tmp_path), blas._WHEEL_FOLDERS[1]))
    assert _found(blas._Controller()) == _found(threadpoolctl.ThreadpoolController())


@linux_only
def test_one_thread_limits_the_blas_numpy_calls():
    blas.refresh()
    with blas.one_thread():
        info = threadpoolctl.threadpool_info()
        found = [lib for lib in info if lib["user_api"] == "blas"]
        wheels = [lib for lib in found if _in_wheel_folders(lib["filepath"])]
        assert (wheels or found) and all(lib["num_threads"] == 1 for lib in wheels or found)


@linux_only
def test_the_private_scan_it_overrides_is_the_one_threadpoolctl_calls(monkeypatch):
    """threadpoolctl 3.8 lists libraries through _find_libraries_with_linux on Linux: the override must run."""
    for name in ("_find_libraries_with_linux", "_make_controller_from_path", "_PATH_RE"):
        assert hasattr(threadpoolctl.ThreadpoolController, name), name
    calls = []
    original = blas._Controller._find_libraries_with_linux

    def spy(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(blas._Controller, "_find_libraries_with_linux", spy)
    blas._Controller()
    assert calls == [1]


@pytest.mark.parametrize("name, extension", [
    ("_multiarray_umath.cpython-311-x86_64-linux-gnu.so", True),
    ("_cffi_backend.cpython-312-aarch64-linux-gnu.so", True),
    ("_rust.abi3.so", True),
    ("libscipy_openblas64_-32a4b2a6.so", False),
    ("libopenblas.so.0", False),
    ("libgomp-e985bcbb.so.1.0.0", False),
    ("libblas.so.3", False),
    ("libmkl_rt.so.2", False),
])
def test_only_extension_modules_are_passed_over(name, extension):
    assert bool(blas._EXTENSION_MODULE.search(name)) is extension
