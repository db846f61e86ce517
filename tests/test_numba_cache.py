"""numba's cache filled by several processes at once (formulations.numba_cache): a save holds the index's lock from
its read of the index to its data file's write, loads share it, two saves never take one data file, and fresh
processes compiling different signatures of one function together leave a cache that gives each its own code.

Two IndexDataCacheFile objects on one folder stand for two processes: flock conflicts between separate open files
even in one process. A save is held inside, after its read of the index, by a hook that waits on an event (the
events' timeouts only stop a broken test from hanging)."""

from __future__ import annotations

import ast
import fcntl
import inspect
import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from numba.core.caching import IndexDataCacheFile
from numba.core.registry import CPUDispatcher

from formulations import numba_cache, recovery

ROOT = Path(__file__).resolve().parents[1]
HANG_GUARD = 60.0  # seconds: a broken test fails instead of hanging; no passing run waits on it
PROCESS_GUARD = 600.0  # seconds, likewise for a process that imports numba and compiles (a busy machine)


def _cache_file(folder: Path) -> IndexDataCacheFile:
    return IndexDataCacheFile(cache_path=str(folder), filename_base="affine-3.py", source_stamp=(1.0, 10))


def _held_after_reading_the_index(cache_file: IndexDataCacheFile) -> tuple[threading.Event, threading.Event]:
    """Make `cache_file` stop right after it reads its index until `release` is set; `inside` says it got there."""
    inside, release = threading.Event(), threading.Event()
    read = cache_file._load_index

    def read_then_wait():
        index = read()
        inside.set()
        assert release.wait(HANG_GUARD)
        return index

    cache_file._load_index = read_then_wait
    return inside, release


def _lock_is_free(cache_file: IndexDataCacheFile, operation: int) -> bool:
    """Whether a non-blocking flock of `operation` on the index's lock file succeeds now (released at once)."""
    fd = os.open(numba_cache.lock_path(cache_file), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _in_thread(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_the_internal_has_the_shape_the_lock_relies_on():
    """numba's IndexDataCacheFile as formulations.numba_cache wraps it: the methods and their parameters, the index's
    path, a save that reads the index itself (so inside the lock it sees every earlier save), and the class as the
    cache file of the project's dispatchers."""
    params = {name: list(inspect.signature(getattr(IndexDataCacheFile, name)).parameters)
              for name in ("__init__", "save", "load", "flush", "_load_index")}
    assert params == {"__init__": ["self", "cache_path", "filename_base", "source_stamp"],
                      "save": ["self", "key", "data"], "load": ["self", "key"], "flush": ["self"],
                      "_load_index": ["self"]}
    cache_file = _cache_file(Path("/nonexistent"))
    assert cache_file._index_path == os.path.join("/nonexistent", "affine-3.py.nbi")
    assert "self._load_index()" in inspect.getsource(inspect.unwrap(IndexDataCacheFile.save))
    compiled = [value for value in vars(recovery).values() if isinstance(value, CPUDispatcher)]
    assert compiled and all(isinstance(f._cache._cache_file, IndexDataCacheFile) for f in compiled)


def test_the_lock_is_installed_once():
    assert numba_cache.installed()
    numba_cache.install()
    for name in ("save", "load", "flush"):
        original = inspect.unwrap(getattr(IndexDataCacheFile, name))
        assert getattr(IndexDataCacheFile, name).__wrapped__ is original, name  # one wrapper, not two


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [True, False])
def test_a_first_cache_miss_says_numba_compiles_once_where_a_person_reads(tmp_path, monkeypatch, terminal):
    """A load that misses (numba compiles next) prints COMPILING once per process on a terminal; a hit says nothing,
    and a pipe or a log (parsed CLI output, these tests' captured stderr) never gets it."""
    stream = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(numba_cache, "_said", False)
    cache_file = _cache_file(tmp_path)
    cache_file.save(("sig", "int64"), ("code", "int64"))
    assert cache_file.load(("sig", "int64")) == ("code", "int64") and stream.getvalue() == ""
    assert cache_file.load(("sig", "float64")) is None
    assert cache_file.load(("sig", "float32")) is None
    assert stream.getvalue() == (numba_cache.COMPILING + "\n" if terminal else "")


def test_a_save_holds_the_lock_from_its_read_of_the_index(tmp_path):
    """While a save is between its read of the index and its writes, no other process may save or load."""
    saving = _cache_file(tmp_path)
    inside, release = _held_after_reading_the_index(saving)
    thread = _in_thread(saving.save, ("sig", "float64"), ("code", "float64"))
    assert inside.wait(HANG_GUARD)
    try:
        assert not _lock_is_free(saving, fcntl.LOCK_EX)
        assert not _lock_is_free(saving, fcntl.LOCK_SH)
    finally:
        release.set()
        thread.join(HANG_GUARD)
    assert _lock_is_free(saving, fcntl.LOCK_EX)


def test_a_child_forked_during_a_save_does_not_keep_its_lock(tmp_path):
    """A process forked while one of its threads is inside a save (a solve server's child, a fork pool's worker)
    gets no thread to release the lock: its copy of the lock file is closed, so the lock ends with the save."""
    saving = _cache_file(tmp_path)
    inside, release = _held_after_reading_the_index(saving)
    thread = _in_thread(saving.save, ("sig", "float64"), ("code", "float64"))
    assert inside.wait(HANG_GUARD)
    started_read, started_write = os.pipe()
    go_read, go_write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: alive (its fork handlers run), holding what it kept, until the test lets it go
        os.write(started_write, b"s")
        os.read(go_read, 1)
        os._exit(0)
    try:
        assert os.read(started_read, 1) == b"s"
        release.set()
        thread.join(HANG_GUARD)
        assert _lock_is_free(saving, fcntl.LOCK_EX)
    finally:
        os.write(go_write, b"g")
        os.waitpid(child, 0)
        for fd in (started_read, started_write, go_read, go_write):
            os.close(fd)


def test_loads_share_the_lock(tmp_path):
    """A load keeps saves out and lets other loads in."""
    _cache_file(tmp_path).save(("sig", "int64"), ("code", "int64"))
    loading = _cache_file(tmp_path)
    inside, release = _held_after_reading_the_index(loading)
    loaded = []
    thread = _in_thread(lambda: loaded.append(loading.load(("sig", "int64"))))
    assert inside.wait(HANG_GUARD)
    try:
        assert not _lock_is_free(loading, fcntl.LOCK_EX)
        assert _lock_is_free(loading, fcntl.LOCK_SH)
    finally:
        release.set()
        thread.join(HANG_GUARD)
    assert loaded == [("code", "int64")]


def test_two_saves_of_new_signatures_take_different_data_files(tmp_path, monkeypatch):
    """Saves of two signatures, the second begun while the first is held after reading the (empty) index: the
    second reads the index only after the first has written it, so each signature keeps its own data file."""
    first, second = _cache_file(tmp_path), _cache_file(tmp_path)
    inside, release = _held_after_reading_the_index(first)
    first_thread = _in_thread(first.save, ("sig", "float64"), ("code", "float64"))
    assert inside.wait(HANG_GUARD)

    # The second save has got as far as it can while the first is held: waiting for the lock, or (unlocked) done.
    second_stopped = threading.Event()
    flock = fcntl.flock

    def flock_noting_waits(fd, operation):
        if threading.current_thread() is second_thread and not operation & fcntl.LOCK_NB:
            second_stopped.set()
        return flock(fd, operation)

    def save_second():
        try:
            second.save(("sig", "int64"), ("code", "int64"))
        finally:
            second_stopped.set()

    monkeypatch.setattr(fcntl, "flock", flock_noting_waits)
    second_thread = threading.Thread(target=save_second, daemon=True)
    second_thread.start()
    assert second_stopped.wait(HANG_GUARD)
    release.set()
    first_thread.join(HANG_GUARD)
    second_thread.join(HANG_GUARD)

    reader = _cache_file(tmp_path)
    assert reader.load(("sig", "float64")) == ("code", "float64")
    assert reader.load(("sig", "int64")) == ("code", "int64")
    assert sorted(reader._load_index().values()) == ["affine-3.py.1.nbc", "affine-3.py.2.nbc"]


def _project_modules():
    for package in ("formulations", "solvers", "experiments"):
        yield from sorted((ROOT / package).rglob("*.py"))


def test_every_cached_function_takes_njit_from_the_locked_module():
    """No project module compiles with numba's own njit or jit: each takes njit from formulations.numba_cache, which
    installs the lock when imported (so before any cached function is compiled or loaded)."""
    offenders, users = [], []
    for path in _project_modules():
        if path in (ROOT / "formulations" / "numba_cache.py", ROOT / "formulations" / "ahead_of_time.py"):
            continue  # the two that wrap numba itself: its cache, and its compiler ahead of time
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "numba":
                offenders.append(f"{path.relative_to(ROOT)}: from {node.module} import ...")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "numba" \
                    and node.attr in ("njit", "jit", "generated_jit", "vectorize", "guvectorize", "cfunc"):
                offenders.append(f"{path.relative_to(ROOT)}: numba.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module == "formulations.numba_cache":
                users.append(path.stem)
    assert offenders == []
    assert {"rbf_exponents", "recovery", "compiled_gram", "smo", "checks", "kernel_audit", "reference"} <= set(users)


AFFINE = """
from formulations.numba_cache import njit


@njit(cache=True)
def affine(x):
    return x * 3 + 1
"""

# Imports, says so, waits for the test's start signal (its stdin closed), then compiles one signature into the cache.
WORKER = """
import sys
import numpy as np
import cached_affine
print("ready", flush=True)
sys.stdin.read()
print(cached_affine.affine(np.dtype(sys.argv[1]).type(5)), flush=True)
"""

# A fresh process: every signature from the cache (no compile), each giving its own type's answer.
CHECKER = """
import sys
import numpy as np
import cached_affine
for kind in sys.argv[1:]:
    value = cached_affine.affine(np.dtype(kind).type(5))
    assert value == 16, (kind, value)
stats = cached_affine.affine.stats
assert sum(stats.cache_misses.values()) == 0 and sum(stats.cache_hits.values()) == len(sys.argv) - 1, stats
print("ok")
"""

KINDS = ("int64", "int32", "uint16", "float64", "float32", "complex128")


@pytest.mark.slow
def test_fresh_processes_filling_one_cache_at_once_leave_each_signature_its_code(tmp_path):
    """Six fresh processes, each compiling a different signature of one cached function, started together (each
    waits, its imports done, for one signal): then a fresh process loads all six from the cache, each right."""
    (tmp_path / "cached_affine.py").write_text(AFFINE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, kind], env=env, text=True, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE) for kind in KINDS]
    try:
        for worker in workers:
            assert worker.stdout.readline() == "ready\n"
        for worker in workers:
            worker.stdin.close()
        for worker in workers:
            out = worker.stdout.read()
            assert worker.wait(PROCESS_GUARD) == 0 and complex(out.strip()) == 16, out
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    checked = subprocess.run([sys.executable, "-c", CHECKER, *KINDS], env=env, text=True, capture_output=True,
                             check=False, timeout=PROCESS_GUARD)
    assert checked.returncode == 0 and checked.stdout == "ok\n", checked.stderr[-2000:]
