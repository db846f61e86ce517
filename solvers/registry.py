"""The one registry of backends, keyed by (layer, backend); its order is the preference order.

Availability is checked, not assumed: a backend is usable only if its package is
installed, importable and accepted by its layer. Asking for one that is not
raises an error that lists what is available here.
"""

from __future__ import annotations

from functools import cache

from formulations.errors import SVMInputError
from solvers.cvxpy_layer import CvxpyBackend
from solvers.errors import BackendUnavailableError
from solvers.pyomo_highs import PyomoHighsBackend
from solvers.pyomo_ipopt import PyomoIpoptBackend
from solvers.profiles import TIME_LIMIT_OPTION
from solvers.pyomo_qp import PyomoQPBackend

LAYERS = ("pyomo", "cvxpy")
BACKEND_NAMES = ("highs", "ipopt", "clarabel", "osqp", "scs", "piqp", "proxqp", "daqp")

BACKENDS = {
    ("pyomo", "highs"): PyomoHighsBackend(),
    ("pyomo", "ipopt"): PyomoIpoptBackend(),
    **{("pyomo", name): PyomoQPBackend(name) for name in ("clarabel", "piqp", "osqp", "scs", "proxqp", "daqp")},
    **{("cvxpy", name): CvxpyBackend(name) for name in ("clarabel", "piqp", "osqp", "scs", "proxqp", "daqp", "highs", "ipopt")},
}


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
    """Whether the backend stops itself at a time limit (HiGHS and Ipopt in both layers, and the
    solvers with a time-limit option of their own); PIQP and ProxQP have none."""
    return name in ("highs", "ipopt") or name in TIME_LIMIT_OPTION


def check_time_limit(layer: str, name: str, time_limit: float | None) -> None:
    """Refuse a time limit the backend cannot honour, before any model is built."""
    if time_limit is not None and not takes_time_limit(layer, name):
        raise SVMInputError(
            f"time_limit: {layer}/{name} has no time limit of its own, so it cannot stop at {time_limit:g} s; "
            f"leave time_limit unset, or run it through python -m experiments.run --timeout, which kills "
            f"the worker process at the limit")


def backend_table(probe: bool = True) -> list[dict]:
    """One row per registered backend: layer, backend, available, reason.

    probe=False only looks for the packages (no import: what `--list` shows in well under a
    second); probe=True loads each one as a solve would."""
    rows = []
    for (layer, name), backend in BACKENDS.items():
        ok, reason = availability(layer, name) if probe else backend.installed()
        rows.append({"layer": layer, "backend": name, ("available" if probe else "installed"): ok, "reason": reason})
    return rows
