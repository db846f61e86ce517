"""numba's on-disk cache (`@njit(cache=True)`) made safe to fill from several processes at once.

numba's `IndexDataCacheFile.save` reads a function's index (signature -> data file), names a new signature's data
file by the first number the index does not use, writes the index, then the data file, with no lock. Two fresh
processes compiling different signatures of one function together can both take `<name>.1.nbc`: the index then
points one signature at the other's machine code, which numba runs on the wrong types. A reader can also find a new
index entry before its data file is written. Here `save` (and `flush`, which empties the index) run under an
exclusive `fcntl.flock` on `<index>.lock` beside the index, and `load` under a shared one: a save's read of the
index, its choice of number and both writes are one step to every other process, and no load sees half of it.

Every module with a cached function takes `njit` from here (tests/test_numba_cache.py checks it), so the lock is in
place before any of them is compiled or loaded, and each function gets its entries built ahead of time where they
exist (formulations.ahead_of_time). Installing is idempotent. A process forked while one of its threads
holds a lock closes its copy of the lock file, so the lock ends with that thread's call, not with the child.

The internal relied on (tests/test_numba_cache.py checks its shape; pyproject.toml bounds numba to the releases
read, whose class is the same text from 0.60 to 0.68): `numba.core.caching.IndexDataCacheFile`, its `save(key,
data)`, `load(key)` and `flush()`, and its `_index_path`; `save` reads the index itself (`_load_index`), so inside the
lock it sees every earlier save. On a platform without `fcntl` (Windows) nothing is wrapped: numba's own behaviour,
where processes filling one cache at once can still collide. Where the lock file cannot be opened (a cache folder
this user may not write), the call runs unlocked: no process of this user can save there either.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import sys

import numba
from numba.core.caching import IndexDataCacheFile
from numba.core.registry import CPUDispatcher

from formulations import ahead_of_time

try:
    import fcntl
except ImportError:  # Windows: see the module's docstring
    fcntl = None

__all__ = ["LOCK_SUFFIX", "install", "installed", "lock_path", "njit"]

LOCK_SUFFIX = ".lock"
_MARK = "_svm_duality_locked"  # set on the class once its methods are wrapped


def njit(*args, **options):
    """numba.njit, with the function's entries built ahead of time attached (formulations.ahead_of_time)."""
    made = numba.njit(*args, **options)
    if isinstance(made, CPUDispatcher):
        return ahead_of_time.attach(made)
    return lambda function: ahead_of_time.attach(made(function))


def lock_path(cache_file: IndexDataCacheFile) -> str:
    """The lock file of a cache file's index: beside it, named after it."""
    return cache_file._index_path + LOCK_SUFFIX


_held: set[int] = set()  # this process's lock files open now


def _open_lock(path: str) -> int | None:
    """The lock file opened, created where missing; read-only where it cannot be written (flock works on either)."""
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        with contextlib.suppress(OSError):
            return os.open(path, flags, 0o666)
    return None


def _close_inherited() -> None:
    """In a child forked while a thread of its parent held a lock: its copy closed, else the lock would stay held
    for the child's whole life, there being no thread in it to release it."""
    for fd in list(_held):
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


@contextlib.contextmanager
def index_lock(cache_file: IndexDataCacheFile, exclusive: bool):
    """Hold the flock of `cache_file`'s index (exclusive to write, shared to read) for the block."""
    fd = _open_lock(lock_path(cache_file))
    if fd is None:
        yield
        return
    _held.add(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        _held.discard(fd)
        os.close(fd)  # releases the lock: it belongs to this open file, so a crash releases it too


def _locked(method, exclusive: bool, after=None):
    """`method` under the index's lock; `after(its result)` once the lock is released, where given."""
    @functools.wraps(method)
    def under_lock(self, *args, **kwargs):
        with index_lock(self, exclusive):
            out = method(self, *args, **kwargs)
        if after is not None:
            after(out)
        return out

    return under_lock


#: What a person at a terminal (or in IPython, Jupyter) reads once per process, as numba starts compiling: the first
#: solve after installing is otherwise silent for 20-30 s, which an outside trial took for a hang.
COMPILING = "svm-duality: compiling its numba functions for this machine (once after installing: 20-30 s) ..."
_said = False  # COMPILING said in this process


def _say_compiling(loaded) -> None:
    """COMPILING on stderr at the first cache miss (`loaded` None: numba compiles next), once per process, where a
    person reads stderr (a terminal, IPython); never in a pipe or a log (CLI output that is parsed, the tests)."""
    global _said
    if loaded is not None or _said:
        return
    stream = sys.stderr
    if stream is not None and (getattr(builtins, "__IPYTHON__", False) or _is_terminal(stream)):
        _said = True
        print(COMPILING, file=stream, flush=True)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def installed() -> bool:
    """Whether IndexDataCacheFile's save, flush and load run under the lock."""
    return bool(getattr(IndexDataCacheFile, _MARK, False))


def install() -> None:
    """Wrap IndexDataCacheFile's save and flush (exclusive) and load (shared) in the index's lock, once; a load that
    misses says COMPILING where a person reads it (_say_compiling)."""
    if fcntl is None or installed():
        return
    for name, exclusive, after in (("save", True, None), ("flush", True, None), ("load", False, _say_compiling)):
        setattr(IndexDataCacheFile, name, _locked(getattr(IndexDataCacheFile, name), exclusive, after))
    setattr(IndexDataCacheFile, _MARK, True)
    os.register_at_fork(after_in_child=_close_inherited)


install()
