"""The one registry of backends, keyed by (layer, backend); its order is the preference order.

Availability is checked, not assumed: a backend is usable only if its package is
installed, importable and accepted by its layer. Asking for one that is not
raises an error that lists what is available here.
"""

from __future__ import annotations

from functools import cache

from formulations.errors import SVMInputError
from solvers.adapters.cvxpy_layer import CvxpyBackend
from solvers.adapters.pyomo_highs import PyomoHighsBackend
from solvers.adapters.pyomo_ipopt import PyomoIpoptBackend
from solvers.adapters.pyomo_qp import PyomoQPBackend
from solvers.backends import (PYOMO_IPOPT_BRIDGE, PYOMO_NATIVE_HIGHS, PYOMO_QPSOLVERS, RECORDS, Backend,
                              BackendRecord, ranked)
from solvers.errors import BackendUnavailableError

LAYERS = ("pyomo", "cvxpy")

# The adapter behind the Pyomo layer, by the record's `pyomo_route`; cvxpy has one adapter for all.
PYOMO_ADAPTERS = {PYOMO_NATIVE_HIGHS: PyomoHighsBackend, PYOMO_IPOPT_BRIDGE: PyomoIpoptBackend,
                  PYOMO_QPSOLVERS: PyomoQPBackend}


def adapters_of(record: BackendRecord) -> dict[str, Backend]:
    """The adapters that serve a record, by layer (what its record says it is served by)."""
    out: dict[str, Backend] = {}
    if record.pyomo_route is not None:
        out["pyomo"] = PYOMO_ADAPTERS[record.pyomo_route](record)
    if record.cvxpy_name is not None:
        out["cvxpy"] = CvxpyBackend(record)
    return out


# Keyed by (layer, backend): the Pyomo layer first, then cvxpy, each in its own preference order.
_ADAPTERS = {name: adapters_of(record) for name, record in RECORDS.items()}  # one adapter per (record, layer)
BACKENDS: dict[tuple[str, str], Backend] = {
    (layer, name): _ADAPTERS[name][layer] for layer in LAYERS for name in ranked(layer) if layer in _ADAPTERS[name]
}
# The project's backend names (what `backend=` accepts); `register` extends it.
BACKEND_NAMES: list[str] = list(RECORDS)
# What `register` added in this process, by name: (record, adapters), sent with each solve to the processes that
# run it (solvers.isolation's solve server, the runner's solve processes), which start from the project's records.
_ADDED: dict[str, tuple[BackendRecord, dict[str, Backend]]] = {}


def register(record: BackendRecord, adapters: dict[str, Backend] | None = None) -> None:
    """Add a backend: its record, and its adapters by layer (default: the ones its record names).

    An adapter of a new API is one module in solvers/adapters/ that satisfies `Backend`."""
    if record.name in RECORDS:
        raise ValueError(f"a backend named {record.name!r} is already registered")
    adapters = adapters_of(record) if adapters is None else adapters
    for layer, adapter in adapters.items():
        if layer not in LAYERS:
            raise ValueError(f"unknown layer {layer!r}; layers are {', '.join(LAYERS)}")
        if not isinstance(adapter, Backend):
            raise TypeError(f"the {layer} adapter of {record.name!r} does not provide the Backend protocol")
    RECORDS[record.name] = record
    BACKEND_NAMES.append(record.name)
    BACKENDS.update({(layer, record.name): adapter for layer, adapter in adapters.items()})
    _ADDED[record.name] = (record, dict(adapters))
    availability.cache_clear()


def added_payload() -> bytes:
    """The backends `register` added in this process, pickled for another process's `adopt`. By value where
    need be (cloudpickle): a record's tolerances may be a lambda, an adapter a class of the user's script."""
    import cloudpickle

    return cloudpickle.dumps(tuple(_ADDED.values()))


def adopt(payload: bytes) -> None:
    """Register here the backends another process registered (added_payload): in a process that runs a solve
    for it, before the solve, so that a backend added with `register` is found there too."""
    import pickle

    for record, adapters in pickle.loads(payload):
        if record.name not in RECORDS:
            register(record, adapters)


def unregister(name: str) -> None:
    """Remove a backend `register` added (its record and its adapters)."""
    _ADDED.pop(name, None)
    RECORDS.pop(name, None)
    if name in BACKEND_NAMES:
        BACKEND_NAMES.remove(name)
    for key in [key for key in BACKENDS if key[1] == name]:
        del BACKENDS[key]
    availability.cache_clear()


@cache
def availability(layer: str, name: str) -> tuple[bool, str]:
    """(usable, reason); never raises."""
    backend = BACKENDS.get((layer, name))
    if backend is None:
        return False, f"no backend {name!r} is registered for layer {layer!r}"
    try:
        return backend.availability()
    except Exception as exc:  # a broken install must not break the listing
        return False, f"{type(exc).__name__}: {exc}"


def available_backends(layer: str | None = None) -> list[tuple[str, str]]:
    return [key for key in BACKENDS if (layer is None or key[0] == layer) and availability(*key)[0]]


def get_backend(layer: str, name: str):
    if layer not in LAYERS:
        raise BackendUnavailableError(f"unknown layer {layer!r}; layers are {', '.join(LAYERS)}")
    ok, reason = availability(layer, name)
    if not ok:
        usable = ", ".join(f"{lay}/{nam}" for lay, nam in available_backends()) or "none"
        raise BackendUnavailableError(f"backend {layer}/{name} is not available ({reason}). Available here: {usable}")
    return BACKENDS[(layer, name)]


def takes_time_limit(layer: str, name: str) -> bool:
    """Whether the backend stops itself at a time limit (its record names an option for it)."""
    record = RECORDS.get(name)
    return record is not None and record.takes_time_limit


def check_time_limit(layer: str, name: str, time_limit: float | None) -> None:
    """Refuse a time limit the backend cannot honour, before any model is built (solvers.api asks only where no
    solve server can kill the solve: solvers.isolation)."""
    if time_limit is not None and not takes_time_limit(layer, name):
        raise SVMInputError(
            f"time_limit: {layer}/{name} has no time limit of its own, so it cannot stop at {time_limit:g} s, and "
            f"this process has no solve server to stop it (Linux only); leave time_limit unset, or run it through "
            f"python -m experiments.run --timeout, which kills the worker process at the limit")


def subproblem_stop(layer: str, name: str, what: str, left: float | None) -> str:
    """Where a working set's subproblem (`what`) ran into the time limit (Deadline.stopped_after's `where`): given the
    `left` seconds that remained, where the backend stops itself there, or run to its end by a backend without a
    time limit of its own (PIQP, ProxQP), which can run far past the limit: the message must say which."""
    if takes_time_limit(layer, name):
        return f"in {what}, given the {left:.2g} s left"
    return f"in {what}, which {layer}/{name} ran to its end (it has no time limit of its own)"


def backend_table(probe: bool = True) -> list[dict]:
    """One row per registered backend: layer, backend, available, reason.

    probe=False only looks for the packages (no import: what `--list` shows in well under a
    second); probe=True loads each one as a solve would."""
    rows = []
    for (layer, name), backend in BACKENDS.items():
        ok, reason = availability(layer, name) if probe else backend.installed()
        rows.append({"layer": layer, "backend": name, ("available" if probe else "installed"): ok, "reason": reason})
    return rows
