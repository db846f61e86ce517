"""The compiled functions built ahead of time into one extension module, so that a process's first solve does not
pay numba's start.

numba compiles a function at its first call, or loads it from its cache. Either way, a process's first compiled
call first builds numba's typing and target contexts: 0.25-0.3 s, more than LIBSVM's whole fit on 5,000 points
(docs/benchmarks.md). An extension module that numba's own ahead-of-time compiler (numba.pycc) builds from the same
functions, in the types a solve passes them, loads in a millisecond and needs neither context.

- `build` (in a process of its own, `python -m formulations.ahead_of_time FOLDER`): runs the warm-up that calls every
  compiled function a solve uses (WARM_UP) on an empty numba cache, so that each is compiled from its source; then
  exports each signature through a wrapper that calls the function (the function keeps its own options: error model,
  fastmath), compiled for this machine's CPU and releasing the interpreter's lock as the function's own wrapper does
  (nogil). It writes an index: the entries, the conversions between their types, and what they were built from.
- `attach`: every function made by formulations.numba_cache.njit passes here. Where the index is current (the same
  source files, numba, Python and CPU), the function's entries go into its dispatcher's table: a call in those types
  runs the built code, and any other types go to numba as before.
- Where no index is current, the first process that makes a compiled function starts the build in the background
  (one at a time: a lock; none where no C compiler is found; none again for the same sources after a failure), and
  later processes load it. SVM_DUALITY_AHEAD_OF_TIME=0 keeps a process to numba's own loading and starts no build.

numba internals relied on (tests/test_ahead_of_time.py checks them; pyproject.toml bounds numba to the releases
read): `Dispatcher._insert(type codes, builtin function, object mode)`, which add_overload calls; the type manager's
`set_compatible`; numba.pycc's `CC`, and the `Flags` its module compiler takes by name from `numba.pycc.compiler`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import itertools
import os
import pickle
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
import warnings
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no build is started (numba's own loading, as before)
    fcntl = None

__all__ = ["ENV", "WARM_UP", "attach", "build", "folder", "loaded"]

ENV = "SVM_DUALITY_AHEAD_OF_TIME"  # "0": numba's own loading only; "build": the builder's own process
WARM_UP = "solvers.isolation:warm_compiled"  # calls every compiled function a solve uses, in the types it uses
MODULE_NAME = "svm_duality_compiled"  # the extension module's name (its PyInit_ symbol); its file is named per build
PACKAGES = ("formulations", "solvers")  # the source files an index is stamped with: every module of these loaded
INDEX, LOCK, FAILED, LOG = "index.pickle", "build.lock", "failed.txt", "build.log"
SCRATCH_PREFIX = "svm-duality-build-"  # the empty numba cache a background build compiles into, removed after it

_made: list = []  # every dispatcher made through numba_cache.njit in this process, in order
_alive: list = []  # the loaded index, whose types' numbers the dispatchers' tables hold
_entries: dict | None = None  # (module, qualified name) -> [(type codes, built function)]; None: not looked at yet


def folder() -> Path:
    """Where the built module and its index live: beside this package's compiled files (numba's cache lives there
    too), or in the user's cache folder where the package's folder cannot be written (an installed package)."""
    here = Path(__file__).resolve().parent / "__pycache__"
    if os.access(here if here.exists() else here.parent, os.W_OK):
        return here / "ahead_of_time"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "svm-duality" / "ahead_of_time"


def loaded() -> bool:
    """Whether this process runs the built module for the functions it covers."""
    return bool(_entries)


def attach(dispatcher):
    """The built entries of `dispatcher`'s function put in its table, where a current build exists (the first call
    loads it, or starts a build where none is current). Returns the dispatcher."""
    _made.append(dispatcher)
    if _entries is None:
        _look_once()
    for codes, built in _entries.get(_key(dispatcher), ()):
        dispatcher._insert(codes, built, False)
    return dispatcher


def _key(dispatcher) -> tuple[str, str]:
    return dispatcher.py_func.__module__, dispatcher.py_func.__qualname__


def _look_once() -> None:
    global _entries
    _entries = {}
    mode = os.environ.get(ENV, "")
    if mode in ("0", "build") or fcntl is None:
        return
    where = folder()
    index = _current_index(where)
    if index is None:
        _start_build(where)
        return
    with contextlib.suppress(Exception):  # a module that does not load (a broken file): numba's own loading
        _entries = _load(where, index)


def _machine() -> tuple:
    """What the built code depends on besides its sources: Python, numba and the CPU it was compiled for."""
    import llvmlite.binding as llvm
    import numba

    return sys.version, numba.__version__, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _stamps(files) -> dict[str, tuple[int, int]]:
    out = {}
    for path in files:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            out[path] = (st.st_mtime_ns, st.st_size)
    return out


def _current_index(where: Path) -> dict | None:
    """The index in `where` where it was built from these very files on this machine, else None."""
    try:
        with open(where / INDEX, "rb") as f:
            index = pickle.load(f)
    except Exception:  # none yet, or unreadable (another release's types): build anew
        return None
    if index.get("machine") != _machine() or _stamps(index["stamps"]) != index["stamps"]:
        return None
    return index if (where / index["library"]).exists() else None


def _load(where: Path, index: dict) -> dict:
    """The built module imported, the conversions between its signatures' types told to numba's type manager (as
    numba's dispatcher would on a first call that matches two of them), and its entries by function."""
    from numba.core.typeconv.rules import default_type_manager

    spec = importlib.util.spec_from_file_location(MODULE_NAME, where / index["library"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for actual, formal, conversion in index["conversions"]:
        default_type_manager.set_compatible(actual, formal, conversion)
    _alive.append(index)  # its types: numba numbers a type when it is made, and makes it anew once none is held
    entries: dict = {}
    for owner, name, args, symbol in index["entries"]:
        entries.setdefault((owner, name), []).append(([t._code for t in args], getattr(module, symbol)))
    return entries


def _attempt_key() -> str:
    """The sources, machine and C compiler a failed build was for: no second attempt for the same (a compiler
    installed or named in CC since is another attempt)."""
    root = Path(__file__).resolve().parents[1]
    files = sorted(str(path) for package in PACKAGES for path in (root / package).rglob("*.py"))
    compilers = [shutil.which(name) for name in _compilers()]
    return hashlib.sha256(repr((_machine(), _stamps(files), compilers)).encode()).hexdigest()


def _compilers() -> list[str]:
    """The C compilers a build calls: Python's (sysconfig), and CC's where it is set (setuptools takes it)."""
    named = [sysconfig.get_config_var("CC") or "cc", os.environ.get("CC", "")]
    return [command.split()[0] for command in named if command.strip()]


def _start_build(where: Path) -> None:
    """`python -m formulations.ahead_of_time where` started in the background, detached from this process, unless a
    build runs now, the last one failed on these sources with this compiler, `where` cannot be written or a C
    compiler it would call (Python's, CC's) is not found."""
    if any(shutil.which(name) is None for name in _compilers()):
        return
    try:
        where.mkdir(parents=True, exist_ok=True)
        if (where / FAILED).read_text().split("\n", 1)[0] == _attempt_key():
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    with _build_lock(where) as free:
        if not free:
            return
    env = {**os.environ, ENV: "build",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    with contextlib.suppress(OSError, subprocess.SubprocessError):  # no shell, or none that returns: no build
        subprocess.run(["/bin/sh", "-c", BUILD_COMMAND, sys.executable, str(where), str(where / LOG),
                        tempfile.gettempdir(), SCRATCH_PREFIX], env=env, check=False, timeout=30,
                        start_new_session=True)


#: The background build as _start_build runs it ($0: Python, $1: the folder, $2: its log, $3: the temporary files'
#: folder, $4: SCRATCH_PREFIX). Through a shell that leaves it running and returns at once, so no child of this
#: process outlives it unreaped; in a session of its own, so a signal to this process's group (Ctrl-C, a killed test)
#: does not stop it halfway. The shell makes a scratch folder, the build's empty numba cache and its temporary
#: folder (numba's check for a C compiler leaves two folders there each build), which the build removes (main).
BUILD_COMMAND = ('scratch="$(mktemp -d "$3/$4XXXXXXXX")"; NUMBA_CACHE_DIR="$scratch" TMPDIR="$scratch" '
                 'nohup "$0" -m formulations.ahead_of_time "$1" >"$2" 2>&1 </dev/null &')


@contextlib.contextmanager
def _build_lock(where: Path, wait: bool = False):
    """Yields whether this process holds the build's lock (held for the block); without waiting for it unless
    `wait`."""
    fd = os.open(where / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def build(where: Path, warm_up=None, dispatchers=None) -> Path:
    """The built module and its index written to `where`: every signature that `warm_up` (default WARM_UP) has
    compiled of `dispatchers` (default: every function made through numba_cache.njit). Run in a process whose numba
    cache is empty and that loads no build (ENV=build), so that every function is compiled from its source.
    Returns the index's path."""
    if warm_up is None:
        module_name, function_name = WARM_UP.split(":")
        warm_up = getattr(importlib.import_module(module_name), function_name)
    warm_up()
    exports, entries, conversions = [], [], []
    for dispatcher in _made if dispatchers is None else dispatchers:
        signatures = [sig for sig in dispatcher.nopython_signatures if _from_python(sig)]
        if not signatures or not dispatcher.targetoptions.get("nogil"):
            continue  # internal calls only (literal arguments), or a function that keeps the lock: numba's own
        conversions += _conversions(dispatcher, signatures)
        for sig in signatures:
            symbol = f"f{len(exports)}"
            exports.append((symbol, sig, _calling(dispatcher, len(sig.args))))
            entries.append((*_key(dispatcher), tuple(sig.args), symbol))
    library = f"{MODULE_NAME}-{uuid.uuid4().hex[:12]}.so"
    _compile(exports, where, library)
    files = [m.__file__ for name, m in list(sys.modules.items())
             if name.split(".")[0] in PACKAGES and getattr(m, "__file__", None)]
    index = {"machine": _machine(), "stamps": _stamps(files), "library": library, "entries": entries,
             "conversions": conversions}
    part = where / f"{INDEX}.{os.getpid()}"  # written whole, then renamed: a reader sees the old index or the new
    try:
        with open(part, "wb") as f:
            pickle.dump(index, f)
        os.replace(part, where / INDEX)
    finally:
        part.unlink(missing_ok=True)
    for old in where.glob(f"{MODULE_NAME}-*.so"):  # a process that has one loaded keeps its pages
        if old.name != library:
            old.unlink(missing_ok=True)
    return where / INDEX


def _from_python(signature) -> bool:
    """Whether a signature can come from a call in Python: literal arguments come only from calls between compiled
    functions (an omitted default can come from either, and is built like any other type)."""
    from numba.core import types

    return not any(isinstance(t, types.Literal) for t in signature.args)


def _conversions(dispatcher, signatures) -> list:
    """The conversions numba's dispatcher would tell its type manager before choosing among these signatures (a C
    array where an 'A' one is taken): without them a call that matches two would go to numba's typing."""
    from numba.core.typeconv import Conversion

    found = []
    for a, b in itertools.permutations(signatures, 2):
        for actual, formal in zip(a.args, b.args):
            if actual != formal:
                conversion = dispatcher.typingctx.can_convert(actual, formal)
                if conversion is not None and conversion > Conversion.promote:
                    found.append((actual, formal, conversion))
    return found


def _calling(dispatcher, arity: int):
    """A function of `arity` arguments that returns `dispatcher`'s call on them: compiled by pycc, it calls the
    function compiled with its own options."""
    names = ", ".join(f"a{i}" for i in range(arity))
    namespace = {"target": dispatcher}
    exec(f"def call({names}):\n    return target({names})\n", namespace)
    return namespace["call"]


def _compile(exports, where: Path, library: str) -> None:
    """The extension module `library` in `where`: every export, for this machine's CPU, each releasing the
    interpreter's lock while it runs."""
    from numba.core.compiler import Flags

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation: the internal is bounded with numba's release
        import numba.pycc.compiler as pycc_compiler
        from numba.pycc import CC

    class Releasing(Flags):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    cc = CC(MODULE_NAME)
    cc.output_dir, cc.output_file, cc.target_cpu = str(where), library, "host"
    for symbol, sig, function in exports:
        cc.export(symbol, sig)(function)
    taken, pycc_compiler.Flags = pycc_compiler.Flags, Releasing
    try:
        cc.compile()
    finally:
        pycc_compiler.Flags = taken


def main(argv: list[str]) -> int:
    """Build into argv[0] unless a build runs (--wait: once it has ended) or a current one exists; a failure is
    written to FAILED (with the sources it was for) and no process starts another for them."""
    where = Path(argv[0])
    where.mkdir(parents=True, exist_ok=True)
    try:
        with _build_lock(where, wait="--wait" in argv[1:]) as free:
            if not free or _current_index(where) is not None:
                return 0
            try:
                build(where)
            except Exception as exc:  # no compiler, a linker error, a function pycc cannot take: numba's loading
                (where / FAILED).write_text(f"{_attempt_key()}\n{type(exc).__name__}: {exc}\n")
                raise
        return 0
    finally:  # the empty numba cache _start_build made for this process, whether it built or not
        scratch = os.environ.get("NUMBA_CACHE_DIR", "")
        if Path(scratch).name.startswith(SCRATCH_PREFIX):
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":  # run as the imported module: numba_cache.njit attaches to that one's _made
    from formulations import ahead_of_time

    sys.exit(ahead_of_time.main(sys.argv[1:]))
