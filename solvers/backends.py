"""A backend is one record: every backend-specific fact of the project, in one place.

The registry (which adapter serves which layer), the profiles (tolerance options), the
adapters (the solver's name in cvxpy or qpsolvers, its time-limit option, whether it wants
dense matrices), the direct path and the LPs all read these records; no other module
decides anything by a backend's name. Adding a backend is its record (`register` in
solvers.registry) plus, where its API is new, one adapter module in solvers/adapters/ that
satisfies the `Backend` protocol below.

Each record carries its place in each layer's preference order (cvxpy's `defines.py`, qpsolvers'
registry); the records' own order is the order of `backend=` choices in listings.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from formulations.names import DUAL
from solvers.solution import RawResult

# How a backend wants its matrices (qpsolvers picks PIQP's and ProxQP's dense or sparse
# factorisation from the matrix type; cvxpy from PIQP's "backend" option).
SPARSE = "sparse"          # always sparse
DENSE = "dense"            # dense only (DAQP)
DENSE_IF_DENSE = "dense_if_dense"  # dense when the quadratic form is dense (a kernel's Q), else sparse

# What stands behind the Pyomo layer: Pyomo's own interface, the project's cyipopt bridge,
# or the standard-form bridge through qpsolvers (solvers/adapters/).
PYOMO_NATIVE_HIGHS = "pyomo_highs"
PYOMO_IPOPT_BRIDGE = "pyomo_ipopt"
PYOMO_QPSOLVERS = "pyomo_qp"


@functools.cache
def _installed_version(distribution: str) -> str:
    """The installed version of a distribution ("" if absent), read once: every solve records it, and
    reading the package metadata costs milliseconds a call."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""


@dataclass(frozen=True)
class BackendRecord:
    """Everything the project knows about one backend, by the project's name for it."""

    name: str                      # the project's name: solve(..., backend=name)
    title: str                     # as its authors write it, for messages and figures
    distribution: str              # the PyPI distribution (its version is recorded with results)
    module: str                    # the module that must import for the backend to be usable
    cvxpy_name: str | None         # cvxpy's solver name; None: not served through cvxpy
    qpsolvers_name: str | None     # qpsolvers' name; None: not reached through qpsolvers
    pyomo_route: str | None        # PYOMO_NATIVE_HIGHS, PYOMO_IPOPT_BRIDGE, PYOMO_QPSOLVERS or None
    direct: bool                   # takes the assembled matrices without a modeling layer
    matrices: str = SPARSE         # SPARSE, DENSE or DENSE_IF_DENSE
    cvxpy_matrix_option: bool = False  # cvxpy exposes the dense/sparse choice as backend="dense"|"sparse"
    # Its place in each layer's preference order, among the LP backends ("lp" missing: it takes
    # no LPs, solvers.lp) and by the accuracy of its points ("accuracy": whose verified point the
    # report's figures draw, experiments.runner.figures). "speed": which answers first in a sweep
    # (experiments.runner runs it first, so its time can stop the slow ones). The orders: docs/benchmarks.md.
    preference: Mapping[str, int] = field(default_factory=dict)
    time_limit_option: str | None = None  # its own time-limit option name; None: it cannot stop at a time
    iteration_limit_option: str | None = None  # its own iteration-cap option (the estimator's max_iter)
    tolerances: Callable[[float], dict] = field(default=lambda tol: {}, repr=False)  # `high`/`scale` options
    scale_overrides: Mapping[str, Any] = field(default_factory=dict)  # the `scale` profile on top of them
    cvxpy_options: Mapping[str, Any] = field(default_factory=dict)   # always passed by cvxpy's adapter
    always_options: Mapping[str, Any] = field(default_factory=dict)  # native options at every profile (the user's win)
    # Named LP methods as native options ({} : one method), and the cvxpy keyword that carries them
    # (cvxpy hands HiGHS options over as `highs_options`: its own `solver=` would clash with HiGHS's).
    lp_methods: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cvxpy_method_key: str | None = None
    cvxpy_duals: bool = True       # cvxpy returns constraint duals for it
    quirks: str = ""               # what a user should know about it (the checks found it)
    # Its QP solver stalls on the SVM QPs from this many points on, per formulation's whole QP ("*": every QP, a
    # working set's too; none named: not seen; stalls_from): solvers.api warns a call without a time limit there,
    # which may not return, and the runner leaves such pairs out on a user's data unless they are named.
    qp_stalls_from_n: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        for name in ("preference", "scale_overrides", "cvxpy_options", "always_options", "lp_methods",
                     "qp_stalls_from_n"):  # frozen
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def layers(self) -> tuple[str, ...]:
        """The modeling layers that serve it ("direct": the solver alone, solvers.algorithms.direct)."""
        return tuple(layer for layer, served in (("pyomo", self.pyomo_route is not None),
                                                 ("cvxpy", self.cvxpy_name is not None),
                                                 ("direct", self.direct)) if served)

    def version(self) -> str:
        """The installed version of its distribution ("" if it is not installed)."""
        return _installed_version(self.distribution)

    def stalls_from(self, formulation: str, method: str = "full") -> int | None:
        """The n from which its QP solver stalls on `formulation` solved by `method` (None: not seen): a stall named
        for a formulation is its whole QP's ("full"); "*" any QP's."""
        if method == "full" and formulation in self.qp_stalls_from_n:
            return self.qp_stalls_from_n[formulation]
        return self.qp_stalls_from_n.get("*")

    @property
    def takes_lp(self) -> bool:
        return "lp" in self.preference

    def rank(self, key: str) -> float:
        """Its place in the preference order of a layer or of "lp" (unranked: after the ranked)."""
        return self.preference.get(key, math.inf)

    @property
    def takes_time_limit(self) -> bool:
        return self.time_limit_option is not None

    def time_limit(self, seconds: float | None) -> dict:
        """Its own option for a time limit (empty when none is asked or it has none)."""
        return {self.time_limit_option: float(seconds)} if seconds is not None and self.takes_time_limit else {}

    def with_time_limit(self, options: Mapping[str, Any], seconds: float | None) -> dict:
        """What the backend is handed, by every adapter, the solver alone and the working sets' subproblems:
        `options` (the user's on top of the project's: solvers.profiles.native_options) and `seconds` of the call's
        time limit under its own option; where `options` set that option too, the smaller (a user may give the
        backend less time than the call's limit, never more: the call's limit is a promise)."""
        out = dict(options)
        if seconds is not None and self.takes_time_limit:
            own = out.get(self.time_limit_option)
            out[self.time_limit_option] = float(seconds) if own is None else min(float(own), float(seconds))
        return out

    def wants_dense(self, dense_form: bool) -> bool:
        """Whether to hand it dense matrices, given whether the quadratic form is dense."""
        return self.matrices == DENSE or (self.matrices == DENSE_IF_DENSE and dense_form)

    def method_options(self, layer: str, method: str | None) -> dict:
        """The native options that select an LP method in a layer (empty for None)."""
        if method is None:
            return {}
        if method not in self.lp_methods:
            raise KeyError(method)
        options = dict(self.lp_methods[method])
        return {self.cvxpy_method_key: options} if layer == "cvxpy" and self.cvxpy_method_key else options

    def cvxpy_matrix_backend(self, dense_form: bool) -> dict:
        """The cvxpy option that picks its dense or sparse factorisation (empty if cvxpy has none)."""
        return {"backend": "dense" if dense_form else "sparse"} if self.cvxpy_matrix_option else {}


@runtime_checkable
class Backend(Protocol):
    """What an adapter (solvers/adapters/) provides to the registry and solvers.api."""

    name: str
    layer: str

    def installed(self) -> tuple[bool, str]:
        """Whether its packages are there, without importing them (fast: --list)."""

    def availability(self) -> tuple[bool, str]:
        """(usable, reason): the packages import and the layer accepts the solver. Never raises."""

    def version(self) -> str:
        """The installed version of the solver's distribution ("" if unknown)."""

    def solve(self, model, options: dict, time_limit: float | None = None) -> RawResult:
        """Solve the layer's model in place; the point and multipliers are read back from the model."""


def _clarabel(tol):
    return {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol, "tol_ktratio": 1e-7, "max_iter": 500}


def _osqp(tol):
    # sigma (the x-regularisation) above OSQP's 1e-6: on Exercise 5.4's lifted dual, whose P is
    # singular in alpha, OSQP reaches the iteration cap in both layers without it.
    return {"eps_abs": tol, "eps_rel": tol, "max_iter": 200_000, "polishing": True, "sigma": 1e-3}


def _proxqp(tol):
    # ProxQP checks residuals only unless told to check the gap too: without it, it called a
    # point 3e-6 from the optimum "solved" on a two-point problem.
    return {"eps_abs": tol, "eps_rel": 0.0, "max_iter": 1000, "check_duality_gap": True,
            "eps_duality_gap_abs": tol, "eps_duality_gap_rel": 0.0}


#: HiGHS's QP iterations at most, unless the user's options say otherwise: its active-set QP solver cycles on some
#: SVM duals and never returns (40 points, rbf, C = 1e-6: 17 million iterations in 20 s, where C = 1e-3 took 114);
#: capped, that is an `iteration_limit` row in a second or a few. A legitimate solve of these sizes takes hundreds.
HIGHS_QP_ITERATIONS = 100_000

#: HiGHS refuses feasibility tolerances below 1e-10 (kError for the option): the primal working set's settling
#: step asks for 1e-12 (SETTLE_TOL), and cvxpy/HiGHS raised on it.
HIGHS_MIN_TOL = 1e-10


def _highs(tol):
    # HiGHS regularises its QPs by 1e-7 (qp_regularization_value), left as is: a smaller value
    # traded a gap on one lecture problem for no point or a time limit on others.
    tol = max(tol, HIGHS_MIN_TOL)
    return {"primal_feasibility_tolerance": tol, "dual_feasibility_tolerance": tol}


def _ipopt(tol):
    # Ipopt relaxes bounds by 1e-8 by default: alpha_i >= -1e-8 shifted the dual optimum of
    # Example 5.2 by 1.5e-6 (relative), which the project's checks flagged.
    return {"tol": tol * 1e-1, "max_iter": 3000, "bound_relax_factor": 0.0}


# The `scale` profile's iteration caps (experiments.bench records them): OSQP with polishing
# and its cap lowered from high's 200,000 (at n = 1e5 each iteration costs ~10 ms); SCS likewise.
RECORDS: dict[str, BackendRecord] = {r.name: r for r in (
    BackendRecord(
        "highs", "HiGHS", preference={"pyomo": 0, "cvxpy": 6, "lp": 0, "accuracy": 3, "speed": 7},
        iteration_limit_option="qp_iteration_limit",
        distribution="highspy", module="highspy", cvxpy_name="HIGHS", qpsolvers_name="highs",
        pyomo_route=PYOMO_NATIVE_HIGHS, direct=True, time_limit_option="time_limit", tolerances=_highs,
        # HiGHS's option `solver`: "simplex" (HiGHS picks the variant; dual simplex on these LPs) and
        # "ipm" (IPX, then crossover to a vertex, as HiGHS does by default)
        lp_methods={"simplex": {"solver": "simplex"}, "ipm": {"solver": "ipm"}}, cvxpy_method_key="highs_options",
        quirks="Pyomo's own interface; two LP methods, simplex and ipm; "
               "regularises QPs by 1e-7; its QP solver stalls on the SVM QPs from n = 1,000, and cycles on some "
               "small duals at a tiny C (its QP iterations are capped: HIGHS_QP_ITERATIONS).",
        # the soft primal of make_classification(5,000, 50) ran past 10 minutes in both layers
        qp_stalls_from_n={"*": 1_000}, always_options={"qp_iteration_limit": HIGHS_QP_ITERATIONS}),
    BackendRecord(
        "ipopt", "Ipopt", preference={"pyomo": 1, "cvxpy": 7, "lp": 6, "accuracy": 5, "speed": 6},
        iteration_limit_option="max_iter",
        distribution="cyipopt-wheels", module="cyipopt", cvxpy_name="IPOPT", qpsolvers_name=None,
        pyomo_route=PYOMO_IPOPT_BRIDGE, direct=True, time_limit_option="max_wall_time", tolerances=_ipopt,
        scale_overrides={"max_iter": 500}, cvxpy_options={"nlp": True, "print_level": 0, "sb": "yes"},
        cvxpy_duals=False,
        quirks="cvxpy reaches it through nlp=True and returns no constraint duals (the checks estimate "
               "them); its 'acceptable level' exit is optimal_inaccurate."),
    BackendRecord(
        "clarabel", "Clarabel", preference={"pyomo": 2, "cvxpy": 0, "lp": 1, "accuracy": 0, "speed": 1},
        iteration_limit_option="max_iter",
        distribution="clarabel", module="clarabel", cvxpy_name="CLARABEL", qpsolvers_name="clarabel",
        pyomo_route=PYOMO_QPSOLVERS, direct=True, time_limit_option="time_limit", tolerances=_clarabel,
        scale_overrides={"max_iter": 200}),
    BackendRecord(
        "osqp", "OSQP", preference={"pyomo": 4, "cvxpy": 2, "lp": 4, "accuracy": 7, "speed": 4},
        iteration_limit_option="max_iter",
        distribution="osqp", module="osqp", cvxpy_name="OSQP", qpsolvers_name="osqp",
        pyomo_route=PYOMO_QPSOLVERS, direct=True, time_limit_option="time_limit", tolerances=_osqp,
        scale_overrides={"max_iter": 20_000, "polishing": True},
        quirks="first-order: stops at its iteration limit on some LPs; needs sigma=1e-3 at 1e-9."),
    BackendRecord(
        "scs", "SCS", preference={"pyomo": 5, "cvxpy": 3, "lp": 3, "accuracy": 6, "speed": 5},
        iteration_limit_option="max_iters",
        distribution="scs", module="scs", cvxpy_name="SCS", qpsolvers_name="scs",
        pyomo_route=PYOMO_QPSOLVERS, direct=True, time_limit_option="time_limit_secs",
        tolerances=lambda tol: {"eps_abs": tol, "eps_rel": tol, "max_iters": 200_000},
        scale_overrides={"max_iters": 20_000}),
    BackendRecord(
        # qpsolvers picks PIQP's dense or sparse backend from the matrix type: a dense P handed over
        # as a sparse matrix is many times slower, in cvxpy too (docs/benchmarks.md).
        "piqp", "PIQP", preference={"pyomo": 3, "cvxpy": 1, "lp": 2, "accuracy": 1, "speed": 0},
        iteration_limit_option="max_iter",
        distribution="piqp", module="piqp", cvxpy_name="PIQP", qpsolvers_name="piqp",
        pyomo_route=PYOMO_QPSOLVERS, direct=True, matrices=DENSE_IF_DENSE, cvxpy_matrix_option=True,
        tolerances=lambda tol: {"eps_abs": tol, "eps_rel": tol, "max_iter": 1000},
        scale_overrides={"max_iter": 200},
        quirks="no time limit of its own (solvers.api refuses time_limit for it)."),
    BackendRecord(
        # ProxQP stays on cvxpy's default (dense): cvxpy's sparse ProxQP call raises a TypeError
        # with proxsuite 0.8, so cvxpy gets no dense/sparse option for it.
        "proxqp", "ProxQP", preference={"pyomo": 6, "cvxpy": 4, "lp": 5, "accuracy": 4, "speed": 3},
        iteration_limit_option="max_iter",
        distribution="proxsuite", module="proxsuite", cvxpy_name="PROXQP", qpsolvers_name="proxqp",
        pyomo_route=PYOMO_QPSOLVERS, direct=True, matrices=DENSE_IF_DENSE, tolerances=_proxqp,
        scale_overrides={"max_iter": 500},
        quirks="no time limit of its own; claims some feasible LPs infeasible; needs check_duality_gap; "
               "its QP solver stalls on the linear dual's whole QP from n = 1,500.",
        # the linear dual (the lifted O(n d) QP) of make_classification(n, 5): 1.2 s at n = 1,000, past 20 s at
        # 1,500 and 2,000 through Pyomo, past 30 s at 2,000 in both layers (an outside trial's CSV)
        qp_stalls_from_n={DUAL: 1_500}),
    BackendRecord(
        "daqp", "DAQP", preference={"pyomo": 7, "cvxpy": 5, "lp": 7, "accuracy": 2, "speed": 2},
        iteration_limit_option="iter_limit",
        distribution="daqp", module="daqp", cvxpy_name="DAQP", qpsolvers_name="daqp",
        pyomo_route=PYOMO_QPSOLVERS, direct=True, matrices=DENSE, time_limit_option="time_limit",
        tolerances=lambda tol: {"primal_tol": tol, "dual_tol": tol},
        quirks="dense only (qpsolvers); through the Pyomo bridge it finds no point for the zero-objective LPs."),
)}


def get_record(name: str) -> BackendRecord | None:
    """The record of a backend by the project's name (None if there is none)."""
    return RECORDS.get(name)


def ranked(key: str, names=None) -> tuple[str, ...]:
    """Backend names (default: every record's) in the preference order of a layer or of "lp"."""
    names = RECORDS if names is None else names
    return tuple(sorted(names, key=lambda name: RECORDS[name].rank(key)))
