"""What every adapter shares: its backend's record, its name, the installed check and the version.

An adapter subclasses `RecordAdapter`, names its layer and the layer's own package (cvxpy,
qpsolvers) if any, and adds `loads()` (the packages import and the layer accepts the solver) and
`solve`; together that is the `solvers.backends.Backend` protocol.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import warnings
from dataclasses import dataclass
from typing import ClassVar

from solvers.solution import ITERATION_LIMIT, TIME_LIMIT
from solvers.backends import BackendRecord

#: Words in a solver's own status that say it stopped at a limit, read before any other word of it: SCS stopped by
#: its time limit says "unbounded (inaccurate - reached time_limit_secs)" or "solved (inaccurate - reached
#: time_limit_secs)", which read as an unbounded problem and as an inaccurate optimum.
LIMIT_WORDS = (("time", TIME_LIMIT), ("max_iter", ITERATION_LIMIT), ("maxiter", ITERATION_LIMIT),
               ("iteration", ITERATION_LIMIT))


def limit_in(raw: str | None) -> str | None:
    """The limit a solver's own status says it stopped at (TIME_LIMIT or ITERATION_LIMIT), or None."""
    key = (raw or "").lower().replace(" ", "_")
    return next((status for word, status in LIMIT_WORDS if word in key), None)


@dataclass
class RecordAdapter:
    record: BackendRecord
    layer_package: ClassVar[str | None] = None  # the layer's own package, checked before the solver's

    @property
    def name(self) -> str:
        return self.record.name

    def installed(self) -> tuple[bool, str]:
        """Whether the packages are there, without importing them (fast: --list)."""
        for module in filter(None, (self.layer_package, self.record.module)):
            if importlib.util.find_spec(module) is None:
                return False, f"the Python package providing {module!r} is not installed"
        return True, "installed"

    def loads(self) -> tuple[bool, str]:
        """(usable, reason) once installed: the packages import and the layer accepts the solver."""
        raise NotImplementedError

    def availability(self) -> tuple[bool, str]:
        ok, reason = self.installed()
        return self.loads() if ok else (ok, reason)

    def version(self) -> str:
        return self.record.version()


_HIGHS_BANNER_SPENT = False


def _spend_highs_banner() -> None:
    """HiGHS prints its banner ("Running HiGHS 1.16.0 ...", two lines) on stdout at the first Highs() of a process,
    before any option can be set; cvxpy and qpsolvers each make one per solve, and each solve of the runner is a
    process of its own. The first one is made here, with stdout sent to /dev/null (HiGHS writes it from C++)."""
    global _HIGHS_BANNER_SPENT
    if _HIGHS_BANNER_SPENT:
        return
    _HIGHS_BANNER_SPENT = True
    import highspy

    sys.stdout.flush()
    console = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(console, 1)
        os.close(console)


@contextlib.contextmanager
def status_warnings(backend: str = ""):
    """Collect the warnings that only say how a solve ended into the list this yields (filled when the block
    ends), for the row's message: the status is read from the result either way, and a sweep printed one per
    row. Every other warning is shown as it was. OSQP 1.1's PendingDeprecationWarning when solve() is called
    without raise_error, which qpsolvers does not pass, is dropped. For `backend` "highs", HiGHS's banner is
    kept off the console (_spend_highs_banner)."""
    # lazy: Pyomo (formulations.internals); a solve has loaded it already, --list stays light
    from formulations.internals import OSQP_RAISE_ERROR_NOTICE, is_status_warning

    if backend == "highs":
        _spend_highs_banner()
    folded: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=OSQP_RAISE_ERROR_NOTICE, category=PendingDeprecationWarning)
        yield folded
    for w in caught:
        if is_status_warning(w):
            folded.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
