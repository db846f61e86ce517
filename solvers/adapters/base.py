"""What every adapter shares: its backend's record, its name, the installed check and the version.

An adapter subclasses `RecordAdapter`, names its layer and the layer's own package (cvxpy,
qpsolvers) if any, and adds `loads()` (the packages import and the layer accepts the solver) and
`solve`; together that is the `solvers.backends.Backend` protocol.
"""

from __future__ import annotations

import contextlib
import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from solvers.backends import BackendRecord


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


def _is_status_warning(caught: warnings.WarningMessage) -> bool:
    """A UserWarning that only says how a solve ended: qpsolvers' solver modules warn it ("OSQP exited with
    status ...", "Clarabel.rs terminated with status PrimalInfeasible", "SCS returned -2: INFEASIBLE"), and
    cvxpy at an inaccurate status ("Solution may be inaccurate. ...")."""
    if not issubclass(caught.category, UserWarning):
        return False
    parts = Path(caught.filename).parts
    return ("qpsolvers" in parts and "solvers" in parts) or str(caught.message).startswith("Solution may be inaccurate")


@contextlib.contextmanager
def status_warnings():
    """Collect the warnings that only say how a solve ended into the list this yields (filled when the block
    ends), for the row's message: the status is read from the result either way, and a sweep printed one per
    row. Every other warning is shown as it was. OSQP 1.1's PendingDeprecationWarning when solve() is called
    without raise_error, which qpsolvers does not pass, is dropped."""
    folded: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="The default value of raise_error",
                                category=PendingDeprecationWarning)
        yield folded
    for w in caught:
        if _is_status_warning(w):
            folded.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
