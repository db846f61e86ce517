"""Named accuracy profiles, translated into each backend's own option names.

A profile is the only way solver defaults change, and its name is recorded with
every result (qpbenchmark/tolerance.py). `default` leaves each solver as it ships;
`high` asks every backend for about 1e-9 and raises iteration caps so that the
first-order methods (OSQP, SCS) can get there.

`check_tol` is what the project's own verification demands of a returned point
(relative duality gap and scaled KKT residuals) before it calls it optimal.
"""

from __future__ import annotations

from dataclasses import dataclass

from solvers.backends import get_record


@dataclass(frozen=True)
class Profile:
    name: str
    tol: float | None  # None: the solver's own defaults
    check_tol: float
    description: str


PROFILES = {
    "default": Profile("default", None, 1e-4, "each solver's own default tolerances"),
    "high": Profile("high", 1e-9, 1e-6, "tolerances about 1e-9, raised iteration caps"),
    "scale": Profile("scale", 1e-8, 1e-6, "the benchmark's (experiments.bench): tolerances about 1e-8, "
                     "iteration caps that bound the time at large n (each backend's record: scale_overrides)"),
}

# Each backend's tolerance options for a profile, and the `scale` profile's iteration caps on top
# of them, are in its record (solvers.backends), with the measurement that made each necessary.


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}") from None


def backend_options(backend: str, profile: str | Profile = "default") -> dict:
    """The native options the project sets for a backend: its record's at every profile (always_options), then the
    profile's tolerances (none for `default`)."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    record = get_record(backend)
    if record is None:
        return {}
    options = dict(record.always_options) if prof.tol is None else tolerance_options(backend, prof.tol)
    if prof.name == "scale":
        options.update(record.scale_overrides)
    return options


def native_options(backend: str, profile: str | Profile, options: dict | None = None, project: dict | None = None) -> dict:
    """The one rule for a backend's native options, in every entry point: the user's `options` override the
    project's (backend_options, then `project`: an LP method's); the time limit is added by the adapter
    (BackendRecord.with_time_limit)."""
    return {**backend_options(backend, profile), **(project or {}), **(options or {})}


def tolerance_options(backend: str, tol: float) -> dict:
    """A backend's native options for tolerance `tol`: its record's at every tolerance (always_options), then its
    tolerances' (empty for a backend without a record)."""
    record = get_record(backend)
    return {**record.always_options, **record.tolerances(tol)} if record is not None else {}
