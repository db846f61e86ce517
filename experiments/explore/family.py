"""What the explorer computes for the SVM family's members beside the C-SVM (nu-SVC, one-class, epsilon- and
nu-SVR), as plain functions; `experiments.explore.page` draws them, the tests call them directly.

The plane's points mean what the member needs: nu-SVC reads them as two classes (as the C-SVM does), the
one-class SVM as unlabelled points of the plane (the class is ignored), the regressions as 1-D data (x1 is
the input, x2 the target). Every solve goes through `solvers.family.solve`, so the status shown is the
family's verified verdict, with P*, D* and the gap recomputed from the point. nu's members also get a sweep
over nu (the fractions nu bounds, at each nu) that is kept between requests that only move nu.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from experiments.explore.compute import (
    GRID_CHUNK,
    GRID_SIZE,
    MAX_POINTS,
    SOLVE_TIME_LIMIT_S,
    SolveControls,
    limit_for,
    plot_window,
)
from formulations.errors import SVMInputError
from formulations.family.common import AT_BOUND, top
from formulations.family.names import (
    EPS_SVR,
    KERNEL_DUAL,
    LINEAR_DUAL,
    NU_SVC,
    NU_SVR,
    ONE_CLASS,
    PRIMAL,
)
from formulations.family.validation import nu_svc_limit
from formulations.kernels import decision_function
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution, TIME_LIMIT
from solvers.family import solve

C_SVM = "c_svm"  # the page's first member: experiments.explore.compute
#: the page's member chooser: label -> member name
MEMBER_LABELS = {"C-SVM": C_SVM, "nu-SVC": NU_SVC, "one-class": ONE_CLASS, "epsilon-SVR": EPS_SVR, "nu-SVR": NU_SVR}
REGRESSIONS = (EPS_SVR, NU_SVR)
NU_MEMBERS = (NU_SVC, ONE_CLASS, NU_SVR)
#: the parameters each member takes from the page
PARAMETERS = {NU_SVC: ("nu",), ONE_CLASS: ("nu",), EPS_SVR: ("C", "epsilon"), NU_SVR: ("C", "nu")}
#: the nu values of the sweep (nu-SVC's above 2 min(n+, n-)/n are left out: infeasible for the balance)
NU_SWEEP = tuple(np.round(np.linspace(0.05, 0.95, 10), 2))
#: the fractions nu bounds, from above and from below, as the member's extras name them
FRACTIONS = {NU_SVC: ("fraction_margin_errors", "fraction_sv"), ONE_CLASS: ("fraction_outliers", "fraction_sv"),
             NU_SVR: ("fraction_outside_tube", "fraction_sv"), EPS_SVR: ("fraction_outside_tube", "fraction_sv")}
SWEEP_CACHE_SIZE = 8
_SWEEPS: OrderedDict = OrderedDict()  # (points, settings but nu) -> a finished sweep's table


@dataclass(frozen=True)
class FamilySettings(SolveControls):
    """The page's controls for a family member (the ones it does not take are ignored)."""

    member: str = NU_SVC
    nu: float = 0.5
    C: float = 1.0
    epsilon: float = 0.1
    formulation: str = "dual"  # the page's choice: primal, dual (the linear dual where the member has one), kernel_dual
    sweep: bool = True  # nu's members: the fractions over NU_SWEEP too

    def parameters(self) -> dict:
        return {name: getattr(self, name) for name in PARAMETERS[self.member]}

    def solved_formulation(self) -> str:
        """The family's formulation name for the page's choice; SVMInputError naming a bad combination."""
        if self.member not in PARAMETERS:
            raise SVMInputError(f"unknown member {self.member!r}; choose one of {', '.join(PARAMETERS)}")
        if self.formulation not in (PRIMAL, "dual", KERNEL_DUAL):
            raise SVMInputError(f"unknown formulation {self.formulation!r}; choose primal, dual or kernel_dual")
        if self.kernel != "linear" and self.formulation != KERNEL_DUAL:
            raise SVMInputError(f"the {self.kernel} kernel needs the kernel_dual formulation, not {self.formulation!r}")
        if self.formulation == PRIMAL:
            return f"{self.member}_{PRIMAL}"
        kind = LINEAR_DUAL if self.formulation == "dual" and self.member == NU_SVC else KERNEL_DUAL
        return f"{self.member}_{kind}"

    def kernel_for(self, formulation: str):
        return self.kernel_object() if formulation.endswith(KERNEL_DUAL) else None


def member_data(member: str, X, y, max_points: int = MAX_POINTS):
    """(points of the plane n x 2, the model's X, its y) for `member`: nu-SVC's labels +-1, one-class's none, the
    regressions' x1 as the input and x2 as the target. SVMInputError on more than `max_points` points (before any
    copy), a coordinate that is not finite, and what the member itself refuses (solvers.family.solve)."""
    if len(X) > max_points:
        raise SVMInputError(f"the explorer solves at most {max_points:,} points, and the page holds {len(X):,}: "
                            f"remove some, or solve them with python -m experiments.run")
    P = np.asarray(X, dtype=float).reshape(-1, 2)
    if not np.all(np.isfinite(P)):
        raise SVMInputError("a point has a coordinate that is not a finite number")
    if member == NU_SVC:
        labels = np.asarray(y, dtype=float).reshape(-1)
        for label in (1.0, -1.0):
            if not np.any(labels == label):
                raise SVMInputError(f"class {label:+g} has no point: select class {label:+g} and click the plane "
                                    "to add one")
        return P, P, labels
    if member == ONE_CLASS:
        if len(P) < 2:
            raise SVMInputError(f"the one-class SVM needs at least 2 points, the plane holds {len(P)}: click to add")
        return P, P, None
    if len(P) < 2:
        raise SVMInputError(f"regression needs at least 2 points (x1: input, x2: target), the plane holds {len(P)}")
    return P, P[:, :1], P[:, 1].copy()


@dataclass
class FamilyExploration:
    """Everything the page shows for one (points, member settings)."""

    settings: FamilySettings
    points: np.ndarray  # the plane's points
    X: np.ndarray  # the model's input
    y: np.ndarray | None  # labels, targets, or None
    solution: Solution
    other: Solution | None = None
    time_limit: float | None = None
    decision: np.ndarray | None = None  # f(x_i) (None when the point was withheld)
    roles: list = field(default_factory=list)  # per point: what it is at the optimum (ROLE_COLORS' keys)
    grid: dict = field(default_factory=dict)  # 2-D: xs, ys, f; 1-D: xs, f
    sweep: pd.DataFrame | None = None  # nu, status, above, below (FRACTIONS)
    sweep_note: str = ""

    @property
    def has_point(self) -> bool:
        return self.decision is not None

    @property
    def regression(self) -> bool:
        return self.settings.member in REGRESSIONS

    def value(self, name: str, default=math.nan):
        return self.solution.extras.get(name, default)

    def outside(self) -> np.ndarray:
        """The regressions' points outside the tube (|y_i - f_i| > eps, as the member's fractions count them)."""
        eps = float(self.value("epsilon"))
        residual = self.y - self.decision
        return np.abs(residual) - eps > AT_BOUND * max(eps, top(residual))

    def notice(self) -> str:
        stopped = [s for s in (self.solution, self.other) if s is not None and s.status == TIME_LIMIT]
        if not stopped:
            return self.sweep_note
        limit = "a time limit" if self.time_limit is None else f"{self.time_limit:g} s"
        return (f"The explorer stops a request at {limit}, and the solve through {stopped[0].layer}/"
                f"{stopped[0].backend} ran into it ({stopped[0].message}). Fewer points or another backend will get "
                "further.")

    def summary(self) -> dict:
        """Labelled numbers for the page (NaN where a value is withheld)."""
        sol, checks = self.solution, self.solution.checks
        out = {"member": sol.extras.get("member", self.settings.member), "formulation": sol.formulation,
               "layer/backend": f"{sol.layer}/{sol.backend}",
               **{name: f"{value:.6g}" for name, value in self.settings.parameters().items()},
               "status": sol.status, "solver said": sol.solver_status, "verdict": checks.get("verdict", sol.message),
               "P* (primal objective)": checks.get("primal_objective", math.nan),
               "D* (dual objective)": checks.get("dual_objective", math.nan),
               "gap P - D": checks.get("duality_gap", math.nan),
               "relative gap": checks.get("rel_duality_gap", math.nan)}
        for key, value in checks.items():
            if key.startswith("kkt_"):
                out[f"KKT {key[4:].replace('_', ' ')}"] = value
        out["w*"] = None if sol.w is None else tuple(float(v) for v in sol.w)
        out["b*"] = sol.b
        for name in ("rho", "epsilon", *FRACTIONS[self.settings.member], "n_sv", "nu_bounds_hold",
                     "alpha_alpha_star"):
            if name in sol.extras:
                out[name.replace("_", " ")] = sol.extras[name]
        out["solve s"] = sol.solve_s
        if not sol.is_optimal and sol.message:
            out["message"] = sol.message
        return out


def _solve_one(data_X, y, settings: FamilySettings, layer: str, time_limit, formulation=None, nu=None):
    formulation = formulation or settings.solved_formulation()
    params = settings.parameters()
    if nu is not None:
        params["nu"] = nu
    return solve(formulation, data_X, y, layer=layer, backend=settings.backend, kernel=settings.kernel_for(formulation),
                 profile=settings.profile, time_limit=limit_for(layer, settings.backend, time_limit), **params)


def decision_values(sol: Solution, settings: FamilySettings, X, Z) -> np.ndarray:
    """f(z) for every row z of Z: from w* where the row has it, else sum_i coef_i k(x_i, z) + b (in blocks)."""
    if sol.w is not None:
        return np.asarray(Z @ sol.w, dtype=float).ravel() + sol.b
    coef = np.asarray(sol.extras["coef"], dtype=float)
    sv = coef != 0
    kernel = settings.kernel_object()
    return np.concatenate([decision_function(kernel, X[sv], coef[sv], sol.b, Z[start:start + GRID_CHUNK])
                           for start in range(0, len(Z), GRID_CHUNK)] or [np.empty(0)])


def explore_family(X, y, settings: FamilySettings, window: tuple | None = None,
                   time_limit: float | None = SOLVE_TIME_LIMIT_S, max_points: int = MAX_POINTS,
                   superseded=None) -> FamilyExploration:
    """Solve the plane's points as `settings.member` (SVMInputError on bad input, before any solve); `window` as in
    experiments.explore.compute.explore; `time_limit` covers the request: the solve, the other layer's, the sweep.
    `superseded()` (optional) says that a newer request waits: the sweep then stops between its solves."""
    began = time.perf_counter()
    settings.solved_formulation()  # a bad member, formulation or kernel choice is refused first
    points, data_X, target = member_data(settings.member, X, y, max_points)

    def left():
        return None if time_limit is None else max(time_limit - (time.perf_counter() - began), 1e-3)

    sol = _solve_one(data_X, target, settings, settings.layer, time_limit)
    result = FamilyExploration(settings, points, data_X, target, sol, time_limit=time_limit)
    if settings.compare_layers:
        result.other = _solve_one(data_X, target, settings, settings.other_layer, left())
    if sol.status in (OPTIMAL, OPTIMAL_INACCURATE) and sol.decision is not None and math.isfinite(sol.b):
        result.decision = np.asarray(sol.decision, dtype=float)
        result.roles = roles(result)
        result.grid = _grid(result, points, window)
    if settings.sweep and settings.member in NU_MEMBERS:
        result.sweep, result.sweep_note = nu_sweep(data_X, target, settings, left, superseded)
    return result


def multiplier_bound(settings: FamilySettings, n: int) -> float:
    """The upper bound of the member's dual variables at n points (formulations.family's modules)."""
    return {NU_SVC: 1.0 / n, ONE_CLASS: 1.0 / (float(settings.nu) * n), EPS_SVR: float(settings.C),
            NU_SVR: float(settings.C) / n}[settings.member]


def roles(result: FamilyExploration) -> list[str]:
    """What each point is at the optimum, by the same thresholds as the member's fractions (formulations.family)."""
    sol, member, f = result.solution, result.settings.member, result.decision
    alpha = np.asarray(sol.alpha, dtype=float)
    U = multiplier_bound(result.settings, len(f))
    if member in REGRESSIONS:
        support = np.maximum(alpha, np.asarray(sol.extras["alpha_star"], dtype=float)) > AT_BOUND * U
        outside = result.outside()
        return ["outside the tube" if o else "SV on the tube" if s else "inside the tube"
                for o, s in zip(outside, support)]
    rho = float(sol.extras["rho"])
    if member == NU_SVC:
        below = result.y * f - rho < -AT_BOUND * max(abs(rho), top(f))
        name = "margin error"
    else:
        below = f < -AT_BOUND * max(abs(rho), top(f + rho))
        name = "outlier"
    support = alpha > AT_BOUND * U
    return [name if e else "SV" if s else "not SV" for e, s in zip(below, support)]


def _grid(result: FamilyExploration, points: np.ndarray, window) -> dict:
    """Decision values over the drawn region: the line x1 for the regressions, the plane otherwise."""
    lo, hi = plot_window(points) if window is None else (np.asarray(window[0]), np.asarray(window[1]))
    xs = np.linspace(lo[0], hi[0], GRID_SIZE if not result.regression else 4 * GRID_SIZE)
    if result.regression:
        return {"xs": xs, "f": decision_values(result.solution, result.settings, result.X, xs[:, None])}
    ys = np.linspace(lo[1], hi[1], GRID_SIZE)
    xx, yy = np.meshgrid(xs, ys)
    f = decision_values(result.solution, result.settings, result.X, np.column_stack([xx.ravel(), yy.ravel()]))
    return {"xs": xs, "ys": ys, "f": f.reshape(xx.shape)}


def nu_sweep(data_X, y, settings: FamilySettings, left, superseded=None) -> tuple[pd.DataFrame | None, str]:
    """The fractions nu bounds at each nu of NU_SWEEP (the proved optimum's where there is one), within the time
    `left()` and until `superseded()`; a finished sweep is kept for the same points and settings but nu. Returns
    (table, note)."""
    key = (data_X.tobytes(), None if y is None else y.tobytes(), replace(settings, nu=0.0, compare_layers=False))
    if key in _SWEEPS:
        _SWEEPS.move_to_end(key)
        return _SWEEPS[key], ""
    nus = NU_SWEEP
    if settings.member == NU_SVC:
        nus = tuple(nu for nu in nus if nu <= nu_svc_limit(y))
    above, below = FRACTIONS[settings.member]
    rows = []
    for nu in nus:
        budget = left()
        if budget is not None and budget <= 1e-3:
            return pd.DataFrame(rows), f"the sweep over nu stopped at nu = {nu:g}: the request's time was used up"
        if superseded is not None and superseded():
            return pd.DataFrame(rows), "the sweep over nu stopped: a newer request is waiting"
        sol = _solve_one(data_X, y, replace(settings, nu=float(nu)), settings.layer, budget)
        point = sol.extras.get("proved", sol.extras)
        rows.append({"nu": float(nu), "status": sol.status, "above": point.get(above, math.nan),
                     "below": point.get(below, math.nan)})
    table = pd.DataFrame(rows)
    _SWEEPS[key] = table
    while len(_SWEEPS) > SWEEP_CACHE_SIZE:
        _SWEEPS.popitem(last=False)
    return table, ""


def layers_table(result: FamilyExploration) -> pd.DataFrame:
    """The layer asked for and (on request) the other one, side by side."""
    rows = []
    for sol in (result.solution, result.other):
        if sol is not None:
            c = sol.checks
            rows.append({"layer": sol.layer, "backend": sol.backend, "status": sol.status, "b*": sol.b,
                         "P*": c.get("primal_objective", math.nan), "D*": c.get("dual_objective", math.nan),
                         "rel gap": c.get("rel_duality_gap", math.nan), "solve s": sol.solve_s})
    return pd.DataFrame(rows)
