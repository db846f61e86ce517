"""solvers.blas: the project's threadpoolctl controller finds what threadpoolctl's own scan finds."""

import sys

import pytest
import threadpoolctl

from solvers import blas

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the override is of the Linux scan")


def _found(controller) -> list[tuple[str, str]]:
    return sorted((lib.filepath, lib.internal_api) for lib in controller.lib_controllers)


@linux_only
def test_the_controller_finds_the_libraries_threadpoolctl_finds():
    import numpy  # noqa: F401  (a BLAS, and scikit-learn's OpenMP runtime, loaded)
    import sklearn.svm  # noqa: F401
    ours = blas._Controller()
    assert _found(ours) == _found(threadpoolctl.ThreadpoolController())
    assert {"openblas", "mkl", "blis", "flexiblas"} & {api for _, api in _found(ours)}  # a BLAS among them


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
