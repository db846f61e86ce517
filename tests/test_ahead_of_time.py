"""The compiled functions built ahead of time (formulations.ahead_of_time): a built entry gives numba's answer and
compiles nothing; other types still go to numba; the entries release the interpreter's lock; an index serves only
the sources and machine it was built for; a failed build is not retried; and a fresh process whose build is
current solves a kernel dual without ever starting numba's compiler, to the same point as numba's own code."""

from __future__ import annotations

import ast
import inspect
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher
from numba.core.typeconv.rules import default_type_manager

from formulations import ahead_of_time, numba_cache

ROOT = Path(__file__).resolve().parents[1]
PROCESS_GUARD = 900.0  # seconds: a broken build fails instead of hanging; no passing run waits on it


def _weighted_sum(x, w=1.0):
    s = 0.0
    for i in range(x.shape[0]):
        s += w * x[i] / (1.0 + i)
    return s


def _scaled(X, factor):
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[i, j] = X[i, j] * factor
    return out


def _fresh(function):
    """A dispatcher of `function` with nothing compiled, as a new process's."""
    return numba_cache.njit(nogil=True)(function)


def _warm_up(weighted_sum, scaled):
    x = np.linspace(0.0, 1.0, 7)
    weighted_sum(x, 2.0)
    weighted_sum(np.linspace(0.0, 1.0, 14)[::2], 2.0)  # an 'A' array: a second signature, and a conversion
    weighted_sum(x)  # the default omitted: a third (numba types it as omitted(default=1.0))
    scaled(np.ones((3, 2)), 0.5)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A module built from this file's two functions, and its index."""
    where = tmp_path_factory.mktemp("ahead_of_time")
    weighted_sum, scaled = _fresh(_weighted_sum), _fresh(_scaled)
    # numba's check for a C compiler leaves two folders in the temporary folder: this test's, not the system's
    saved, tempfile.tempdir = tempfile.tempdir, str(tmp_path_factory.mktemp("temporary"))
    try:
        path = ahead_of_time.build(where, warm_up=lambda: _warm_up(weighted_sum, scaled),
                                   dispatchers=[weighted_sum, scaled])
    finally:
        tempfile.tempdir = saved
    with open(path, "rb") as f:
        index = pickle.load(f)
    return where, index


def test_the_numba_internals_it_relies_on_are_there():
    from numba.core.compiler import Flags

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation
        import numba.pycc.compiler as pycc_compiler

    assert callable(CPUDispatcher._insert)
    assert pycc_compiler.Flags is Flags and "Flags()" in inspect.getsource(pycc_compiler.ModuleCompiler._cull_exports)
    assert "release_gil" in Flags.options
    assert callable(default_type_manager.set_compatible)


def test_no_compiled_function_has_a_default():
    """A call that leaves a default out is another type to numba (omitted(default=...)): a path the warm-up does
    not take (a large solve's) would then miss the built entries and start numba. Every argument is passed."""
    found = []
    for package in ahead_of_time.PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef) and node.args.defaults and \
                        any("njit" in ast.unparse(d) for d in node.decorator_list):
                    found.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert found == []


def test_a_built_entry_gives_numbas_answer_and_compiles_nothing_other_types_go_to_numba(built):
    where, index = built
    entries = ahead_of_time._load(where, index)
    assert {name for _, name in entries} == {"_weighted_sum", "_scaled"}
    assert len(entries[(__name__, "_weighted_sum")]) == 3  # the C and the 'A' array, and w omitted
    weighted_sum, scaled = _fresh(_weighted_sum), _fresh(_scaled)
    for dispatcher in (weighted_sum, scaled):
        for codes, function in entries[ahead_of_time._key(dispatcher)]:
            dispatcher._insert(codes, function, False)
    rng = np.random.default_rng(3)
    x, X = rng.normal(size=11), rng.normal(size=(4, 5))
    jit_sum, jit_scaled = numba_cache.njit(_weighted_sum), numba_cache.njit(_scaled)
    assert weighted_sum(x, 1.5) == jit_sum(x, 1.5)
    assert weighted_sum(x[::3], 1.5) == jit_sum(x[::3], 1.5)  # the 'A' entry (through the conversion told)
    assert weighted_sum(x) == jit_sum(x)
    np.testing.assert_array_equal(scaled(X, -2.0), jit_scaled(X, -2.0))
    assert weighted_sum.signatures == [] and scaled.signatures == []  # numba compiled none of them
    assert weighted_sum(x.astype(np.float32), 1.5) == pytest.approx(jit_sum(x.astype(np.float32), 1.5), rel=1e-12)
    assert len(weighted_sum.signatures) == 1  # float32: not built, so numba's


def test_the_built_entries_release_the_interpreters_lock(built):
    """Each entry's wrapper drops the lock around its call, as numba's nogil wrapper does: the module calls
    PyEval_SaveThread (a module built without the release has no such call)."""
    where, index = built
    assert b"PyEval_SaveThread" in (where / index["library"]).read_bytes()


def test_an_index_serves_only_the_sources_and_machine_it_was_built_for(built, tmp_path):
    where, index = built
    source = tmp_path / "source.py"
    source.write_text("x = 1\n")
    stamped = {**index, "stamps": ahead_of_time._stamps([str(source)])}
    folder = tmp_path / "built"
    folder.mkdir()
    (folder / index["library"]).write_bytes((where / index["library"]).read_bytes())

    def current(record):
        (folder / ahead_of_time.INDEX).write_bytes(pickle.dumps(record))
        return ahead_of_time._current_index(folder) is not None

    assert current(stamped)
    source.write_text("x = 22\n")  # another size
    assert not current(stamped)
    assert current({**stamped, "stamps": ahead_of_time._stamps([str(source)])})
    assert not current({**stamped, "stamps": ahead_of_time._stamps([str(source)]), "machine": ("another CPU",)})
    (folder / index["library"]).unlink()
    assert not current({**stamped, "stamps": ahead_of_time._stamps([str(source)])})


def test_a_failed_build_is_written_down_and_not_started_again_for_the_same_sources(tmp_path, monkeypatch):
    def no_linker(*args, **kwargs):
        raise OSError("no linker here")

    monkeypatch.setattr(ahead_of_time, "build", no_linker)
    with pytest.raises(OSError):
        ahead_of_time.main([str(tmp_path)])
    assert (tmp_path / ahead_of_time.FAILED).read_text().split("\n")[1] == "OSError: no linker here"
    started = []
    monkeypatch.setattr(ahead_of_time.subprocess, "run", lambda *a, **k: started.append(a))
    ahead_of_time._start_build(tmp_path)
    assert started == []
    (tmp_path / ahead_of_time.FAILED).write_text("other sources\n")
    ahead_of_time._start_build(tmp_path)
    assert len(started) == 1
    monkeypatch.setenv("CC", "no-such-compiler")  # a compiler named in CC that is not there: no build
    ahead_of_time._start_build(tmp_path)
    assert len(started) == 1
    monkeypatch.delenv("CC")
    monkeypatch.setattr(ahead_of_time.shutil, "which", lambda name: None)  # no C compiler: no build
    ahead_of_time._start_build(tmp_path)
    assert len(started) == 1


def test_a_failed_build_is_tried_again_once_the_compiler_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    failed_with = ahead_of_time._attempt_key()
    monkeypatch.setattr(ahead_of_time.shutil, "which", lambda name: f"/opt/new/{name}")  # a compiler installed since
    assert ahead_of_time._attempt_key() != failed_with


def test_a_build_that_finds_another_running_ends_at_once_and_removes_its_scratch_cache(tmp_path, monkeypatch):
    """Two processes may start a build together: the second finds the lock held, builds nothing, and removes the
    empty numba cache it was given."""
    scratch = tmp_path / f"{ahead_of_time.SCRATCH_PREFIX}x"
    scratch.mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(scratch))
    monkeypatch.setattr(ahead_of_time, "build", lambda where: pytest.fail("built while another build ran"))
    with ahead_of_time._build_lock(tmp_path) as free:
        assert free
        assert ahead_of_time.main([str(tmp_path)]) == 0
    assert not scratch.exists()


def test_the_background_build_keeps_its_temporary_files_in_its_scratch_folder(tmp_path):
    """The build's numba cache and temporary folder are one scratch folder, which the build removes: numba's check
    for a C compiler left two folders in the system's temporary folder at every build."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n%s\\n" "$NUMBA_CACHE_DIR" "$TMPDIR" > "$3/seen.txt"\n')
    fake.chmod(0o755)
    subprocess.run(["/bin/sh", "-c", ahead_of_time.BUILD_COMMAND, str(fake), str(tmp_path), str(tmp_path / "log"),
                    str(tmp_path), ahead_of_time.SCRATCH_PREFIX], check=True, timeout=30)
    seen = tmp_path / "seen.txt"
    for _ in range(100):  # the shell left the build running in the background
        if seen.exists() and seen.read_text().count("\n") == 2:
            break
        time.sleep(0.05)
    cache, temporary = seen.read_text().splitlines()
    assert cache == temporary and Path(cache).parent == tmp_path
    assert Path(cache).name.startswith(ahead_of_time.SCRATCH_PREFIX) and Path(cache).is_dir()


_FRESH_SOLVE = r"""
import json, sys
import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from experiments.datasets import hard
from experiments.estimator import SVMClassifier
from formulations import ahead_of_time
from solvers.api import solve
seed, layer, C, form = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
ds = hard(600, d=10, seed=seed, clusters=3, flip=0.08)  # its arrays are read-only
X = {"as made": ds.X, "Fortran float32": np.asfortranarray(ds.X, dtype=np.float32), "frame": pd.DataFrame(ds.X)}[form]
sol = solve("kernel_dual", X, ds.y, layer=layer, backend="piqp", C=C, kernel="rbf")
digits = load_digits()
predicted = SVMClassifier().fit(digits.data, digits.target).predict(digits.data[::7])
# numba's compiler imports its lowering of numpy the first time it types or loads a function (any dispatcher's
# target context exists from the import on: made at a dispatcher's creation, filled at the first compiled call)
print(json.dumps({"status": sol.status, "alpha": sol.alpha.tolist(), "b": sol.b, "predicted": predicted.tolist(),
                  "built": ahead_of_time.loaded(), "numba started": "numba.np.arraymath" in sys.modules}))
"""


@pytest.mark.slow
def test_a_fresh_process_with_a_current_build_never_starts_numba_and_gets_numbas_answers(tmp_path):
    """The project's own build, made now (or already current), serves a fresh process's kernel dual solves (read-only,
    Fortran float32 and DataFrame data, each layer, checks included) and the estimator's fit and predictions on
    digits: numba's target context is never made. Every answer is numba's own to the bit."""
    env = {**os.environ, ahead_of_time.ENV: "build", "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path),
           "TMPDIR": str(tmp_path)}  # numba's compiler check leaves its folders there, not in the system's
    subprocess.run([sys.executable, "-m", "formulations.ahead_of_time", str(ahead_of_time.folder()), "--wait"],
                   env=env, check=True, timeout=PROCESS_GUARD, capture_output=True)
    for args in (("7", "direct", "1", "as made"), ("8", "pyomo", "10", "Fortran float32"), ("9", "cvxpy", "100", "frame")):
        runs = {}
        for mode in ("", "0"):
            out = subprocess.run([sys.executable, "-c", _FRESH_SOLVE, *args], capture_output=True, text=True,
                                 timeout=PROCESS_GUARD, env={**os.environ, ahead_of_time.ENV: mode})
            assert out.returncode == 0, out.stderr[-2000:]
            runs[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        built, numbas = runs[""], runs["0"]
        assert built["built"] and not built["numba started"], args
        assert not numbas["built"] and numbas["numba started"]
        assert built["status"] == numbas["status"] == "optimal"
        assert built["alpha"] == numbas["alpha"] and built["b"] == numbas["b"]
        assert built["predicted"] == numbas["predicted"]
