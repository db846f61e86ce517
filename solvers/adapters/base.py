"""What every adapter shares: its backend's record, its name, the installed check and the version.

An adapter subclasses `RecordAdapter`, names its layer and the layer's own package (cvxpy,
qpsolvers) if any, and adds `loads()` (the packages import and the layer accepts the solver) and
`solve`; together that is the `solvers.backends.Backend` protocol.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
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
