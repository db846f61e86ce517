"""What the interactive explorer computes, as plain functions (no browser, no web server).

`experiments.explore` lays these out on a page; the tests call them directly. One call of
`explore` takes the points on the plane and the page's settings and returns everything the
page shows: the `Solution` of `solvers.api.solve` (its status is the project's verdict, never
the solver's word alone), the same problem through the other layer on request, per-point
alpha / slack / y f(x) / free-or-at-bound, the decision values on a grid for the boundary and
the +-1 margins, slack segments, and, when the hard margin is asked for on data that are not
linearly separable, the separability certificate of `experiments.separability` (a verified
common point of both convex hulls).
"""

from __future__ import annotations

import html
import io
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from experiments.datasets import example_5_1, exercise_5_4, gendata, overlapping
from experiments.grading.answers import parse_answer
from experiments.grading.rubric import DEFAULT_TOLERANCE
from experiments.separability import is_separable
from formulations import recovery
from formulations.errors import SVMInputError
from formulations.kernels import Kernel, decision_function
from formulations.model import DUAL, HARD_PRIMAL, KERNEL_DUAL, SOFT_PRIMAL
from formulations.validation import check_C, parse_number
from solvers import isolation
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution, TIME_LIMIT
from solvers.api import METHODS, solve
from solvers.grading import PointCheck, check_point
from solvers.profiles import PROFILES
from solvers.registry import BACKEND_NAMES, LAYERS, availability, takes_time_limit

PRIMAL = "primal"  # the page's choice; hard or soft by the hard-margin switch
FORMULATION_CHOICES = (PRIMAL, DUAL, KERNEL_DUAL)
KERNEL_CHOICES = ("linear", "poly", "rbf", "sigmoid")
LABEL_COLUMN = "label"
STARTS = {  # the page's start data: name -> Dataset factory (None: an empty plane)
    "example_5_1": example_5_1,
    "exercise_5_4": exercise_5_4,
    "gendata(20, 20)": lambda: gendata(20, 20, seed=0),
    "overlapping(200)": lambda: overlapping(200, seed=1),
    "sine(40) (regression)": lambda: sine_points(40, seed=0),
    "empty": None,
}
#: the start data of the regressions (x1: the input, x2: the target); the others read the plane as two classes
REGRESSION_START = "sine(40) (regression)"
GRID_SIZE = 120  # decision values on GRID_SIZE^2 points: smooth contours, a few ms for a kernel at n = 200
GRID_CHUNK = 2_000  # grid points per kernel block: GRID_CHUNK x MAX_POINTS doubles (16 MB) at a time
#: A page's request (its solve, and the other layer's if asked) stops at this many seconds (solvers.api's
#: time_limit): the server solves one request at a time, for every session.
SOLVE_TIME_LIMIT_S = 30.0
#: The most points a page solves; the page says so past it (larger data: python -m experiments.run --data).
MAX_POINTS = 1_000
CODE_NAMES = {recovery.ZERO: "not SV", recovery.FREE: "free SV", recovery.AT_BOUND: "SV at bound C"}


@dataclass(frozen=True)
class PlanePoints:
    """Points of the plane with their labels, as a start data set gives them."""

    X: np.ndarray
    y: np.ndarray


def sine_points(n: int = 40, seed: int = 0) -> PlanePoints:
    """1-D regression data on the plane: x1 uniform in [0, 6], x2 = sin(x1) + noise (labels all +1, unused)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 6.0, n))
    return PlanePoints(np.column_stack([x, np.sin(x) + 0.15 * rng.standard_normal(n)]), np.ones(n))


def available_backends(layer: str) -> list[str]:
    """Backends installed for `layer`, in the registry's order."""
    return [name for name in BACKEND_NAMES if availability(layer, name)[0]]


@dataclass(frozen=True)
class SolveControls:
    """The controls the page has for every problem, the SVM's (Settings) and a family member's
    (experiments.explore.family.FamilySettings): the kernel, where it is solved, and whether both layers are."""

    kernel: str = "linear"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0
    layer: str = "pyomo"
    backend: str = "clarabel"
    profile: str = "high"
    compare_layers: bool = False

    @property
    def other_layer(self) -> str:
        return next(name for name in LAYERS if name != self.layer)

    def kernel_object(self) -> Kernel:
        return Kernel(self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0)


@dataclass(frozen=True)
class Settings(SolveControls):
    """The page's controls for the SVM. C = math.inf is the hard margin."""

    C: float = 1.0
    formulation: str = DUAL
    method: str = "auto"

    @property
    def hard(self) -> bool:
        return math.isinf(self.C)

    def solved_formulation(self) -> str:
        """The project's formulation name: the primal is hard or soft by C."""
        if self.formulation not in FORMULATION_CHOICES:
            raise SVMInputError(f"unknown formulation {self.formulation!r}; choose one of {FORMULATION_CHOICES}")
        if self.kernel != "linear" and self.formulation != KERNEL_DUAL:
            raise SVMInputError(f"the {self.kernel} kernel needs the kernel_dual formulation, "
                                f"not {self.formulation!r}")
        if self.formulation == PRIMAL:
            return HARD_PRIMAL if self.hard else SOFT_PRIMAL
        return self.formulation

    def validate(self) -> None:
        """Raise SVMInputError naming the first bad control."""
        for name, value, choices in (("layer", self.layer, LAYERS), ("backend", self.backend, BACKEND_NAMES),
                                     ("profile", self.profile, tuple(PROFILES)),
                                     ("method", self.method, METHODS)):
            if value not in choices:
                raise SVMInputError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
        if not (isinstance(self.C, (int, float)) and self.C > 0):
            raise SVMInputError(f"C must be a number > 0, got {self.C!r}")
        self.solved_formulation()
        if self.formulation == KERNEL_DUAL:
            self.kernel_object()


def parse_C(text) -> float:
    """C typed by a user: a number > 0, or "inf" for the hard margin; SVMInputError otherwise. The command
    line's rules (validation.parse_number, check_C): 1e999 is refused, not read as the hard margin."""
    try:
        value = parse_number(text, "C")
    except SVMInputError as exc:
        raise SVMInputError(f"{exc} (type a number > 0, or inf for the hard margin)") from None
    return check_C(value, allow_infinite=True)


def check_points(X, y, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Points of the plane as (n x 2, labels +-1); names an empty class, which `solve` cannot take, and more
    points than `max_points` (before any copy of them)."""
    if len(y) > max_points:
        raise SVMInputError(f"the explorer solves at most {max_points:,} points, and the page holds {len(y):,}: "
                            f"remove some, or solve them with python -m experiments.run --data FILE.csv")
    X = np.asarray(X, dtype=float).reshape(-1, 2)
    y = np.asarray(y, dtype=float).reshape(-1)
    if len(X) != len(y):
        raise SVMInputError(f"{len(X)} points but {len(y)} labels")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise SVMInputError("labels must be +1 or -1")
    for label in (1.0, -1.0):
        if not np.any(y == label):
            raise SVMInputError(f"class {label:+g} has no point: select class {label:+g} and click the plane to add one")
    if not np.all(np.isfinite(X)):
        raise SVMInputError("a point has a coordinate that is not a finite number")
    return X, y


@dataclass
class Exploration:
    """Everything the page shows for one (points, settings)."""

    settings: Settings
    X: np.ndarray
    y: np.ndarray
    solution: Solution
    other: Solution | None = None
    time_limit: float | None = None  # the request's limit in seconds (None: none could be set)
    separability: object | None = None  # experiments.separability.SeparabilityResult
    decision: np.ndarray | None = None  # f(x_i) (None when the point was withheld)
    codes: np.ndarray | None = None  # recovery.ZERO / FREE / AT_BOUND per point
    grid: dict = field(default_factory=dict)  # xs, ys, f (len(ys) x len(xs))

    @property
    def has_point(self) -> bool:
        return self.decision is not None

    def point_table(self) -> pd.DataFrame:
        """One row per point: x1, x2, label, alpha, slack, y f(x), role (what hovering shows)."""
        out = pd.DataFrame({"x1": self.X[:, 0], "x2": self.X[:, 1], LABEL_COLUMN: self.y.astype(int)})
        if self.has_point:
            yf = self.y * self.decision
            out["alpha"] = self.solution.alpha
            out["slack"] = np.maximum(0.0, 1.0 - yf)
            out["y_f"] = yf
            out["role"] = [CODE_NAMES[int(c)] for c in self.codes]
        return out

    def slack_segments(self) -> np.ndarray:
        """(k x 4) segments x_i -> its own margin line y_i f(x) = 1, for points with slack (linear w only)."""
        sol = self.solution
        if not self.has_point or sol.w is None:
            return np.empty((0, 4))
        ww = float(sol.w @ sol.w)
        inside = self.y * self.decision < 1.0 - 1e-9
        if ww == 0 or not inside.any():
            return np.empty((0, 4))
        start = self.X[inside]
        # moving x by t w changes f by t ||w||^2: t = (y_i - f(x_i)) / ||w||^2 puts it on its margin
        end = start + np.outer((self.y[inside] - self.decision[inside]) / ww, sol.w)
        return np.hstack([start, end])

    def notice(self) -> str:
        """What the page says above the numbers when a solve stopped at the explorer's time limit ("" if none)."""
        stopped = [sol for sol in (self.solution, self.other) if sol is not None and sol.status == TIME_LIMIT]
        if not stopped:
            return ""
        which = " and ".join(f"{sol.layer}/{sol.backend}" for sol in stopped)
        limit = "a time limit" if self.time_limit is None else f"{self.time_limit:g} s"
        return (f"The explorer stops a request at {limit}, and the solve through {which} ran into that limit "
                f"({stopped[0].message}). Fewer points, another backend or method, or the exported points "
                f"solved with python -m experiments.run --timeout SECONDS will get further.")

    def summary(self) -> dict:
        """Labelled numbers for the page (NaN where a value is withheld)."""
        sol, checks = self.solution, self.solution.checks
        C = self.settings.C
        out = {
            "formulation": sol.formulation, "layer/backend": f"{sol.layer}/{sol.backend}",
            "C": "inf (hard margin)" if math.isinf(C) else f"{C:.6g}",
            "status": sol.status, "solver said": sol.solver_status, "verdict": checks.get("verdict", sol.message),
            "P* (primal objective)": checks.get("primal_objective", math.nan),
            "D* (dual objective)": checks.get("dual_objective", math.nan),
            "gap P - D": checks.get("duality_gap", math.nan),
            "relative gap": checks.get("rel_duality_gap", math.nan),
            "KKT stationarity": checks.get("kkt_stationarity", math.nan),
            "KKT balance": checks.get("kkt_balance", math.nan),
            "KKT primal feasibility": checks.get("kkt_primal_feasibility", math.nan),
            "KKT dual feasibility": checks.get("kkt_dual_feasibility", math.nan),
            "KKT complementarity": checks.get("kkt_complementarity", math.nan),
            "w*": None if sol.w is None else tuple(float(v) for v in sol.w),
            "b*": sol.b,
            "b interval": (checks.get("b_lower", math.nan), checks.get("b_upper", math.nan)),
            "support vectors (all, free, at bound)": (checks.get("n_sv", 0), checks.get("n_free_sv", 0),
                                                  checks.get("n_bound_sv", 0)),
            "solve s": sol.solve_s,
        }
        if not sol.is_optimal and sol.message:
            out["message"] = sol.message
        return out


def limit_for(layer: str, backend: str, time_limit: float | None) -> float | None:
    """The time limit a solve can be given: any, where the solve server kills past it (Linux); elsewhere only
    for a backend that stops itself (None otherwise: solvers.api refuses a limit it cannot keep)."""
    if time_limit is None or isolation.ISOLATE or takes_time_limit(layer, backend):
        return time_limit
    return None


def _solve_one(X, y, settings: Settings, layer: str, time_limit: float | None) -> Solution:
    formulation = settings.solved_formulation()
    kwargs = {"C": None if formulation == HARD_PRIMAL else settings.C, "profile": settings.profile}
    if formulation == KERNEL_DUAL:
        kwargs["kernel"] = settings.kernel_object()
    return solve(formulation, X, y, layer=layer, backend=settings.backend, method=settings.method,
                 time_limit=limit_for(layer, settings.backend, time_limit), **kwargs)


def decision_values(sol: Solution, settings: Settings, X, y, Z) -> np.ndarray:
    """f(z) for every row z of Z, from w* or from alpha* and the kernel (in blocks of GRID_CHUNK rows of Z)."""
    if sol.w is not None:
        return Z @ sol.w + sol.b
    sv = recovery.support_mask(sol.alpha)
    kernel, X_sv, coef = settings.kernel_object(), X[sv], (sol.alpha * y)[sv]
    return np.concatenate([decision_function(kernel, X_sv, coef, sol.b, Z[start:start + GRID_CHUNK])
                           for start in range(0, len(Z), GRID_CHUNK)] or [np.empty(0)])


def plot_window(X: np.ndarray, pad: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners of the region drawn around the points."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.maximum(hi - lo, 1e-3 * np.maximum(1.0, np.abs(hi)))
    return lo - pad * span, hi + pad * span


def explore(X, y, settings: Settings, window: tuple | None = None, time_limit: float | None = SOLVE_TIME_LIMIT_S,
            max_points: int = MAX_POINTS) -> Exploration:
    """Solve the current points with the page's settings (SVMInputError on bad input, before any solve).

    `window` = (lower corner, upper corner) of the region whose decision values are computed
    for the contours (default: around the points). `time_limit`: seconds for the request, the
    other layer's solve (compare_layers) getting what the first one left; `max_points`: the most
    points solved (check_points).
    """
    began = time.perf_counter()
    X, y = check_points(X, y, max_points)
    settings.validate()
    sol = _solve_one(X, y, settings, settings.layer, time_limit)
    result = Exploration(settings=settings, X=X, y=y, solution=sol, time_limit=time_limit)
    if settings.compare_layers:
        # what is left of the request's limit; at least a moment, so that an exhausted one says so as a row
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - began), 1e-3)
        result.other = _solve_one(X, y, settings, settings.other_layer, left)
    if settings.hard and settings.kernel == "linear":
        result.separability = is_separable(X, y)
    if sol.status in (OPTIMAL, OPTIMAL_INACCURATE) and sol.alpha is not None and math.isfinite(sol.b):
        # f(x_i) as the solve recorded it (the values its checks and support-vector counts used)
        result.decision = sol.decision if sol.decision is not None else decision_values(sol, settings, X, y, X)
        result.codes = recovery.classify(sol.alpha, y, result.decision, settings.C)
        lo, hi = plot_window(X) if window is None else (np.asarray(window[0]), np.asarray(window[1]))
        xs, ys = np.linspace(lo[0], hi[0], GRID_SIZE), np.linspace(lo[1], hi[1], GRID_SIZE)
        xx, yy = np.meshgrid(xs, ys)
        f = decision_values(sol, settings, X, y, np.column_stack([xx.ravel(), yy.ravel()]))
        result.grid = {"xs": xs, "ys": ys, "f": f.reshape(xx.shape)}
    return result


def layers_table(result: Exploration) -> pd.DataFrame:
    """The layer asked for and (on request) the other one, side by side."""
    rows = []
    for sol in (result.solution, result.other):
        if sol is None:
            continue
        c = sol.checks
        rows.append({"layer": sol.layer, "backend": sol.backend, "status": sol.status,
                     "w*": "-" if sol.w is None else ", ".join(f"{v:.6g}" for v in sol.w),
                     "b*": sol.b, "P*": c.get("primal_objective", math.nan),
                     "D*": c.get("dual_objective", math.nan), "rel gap": c.get("rel_duality_gap", math.nan),
                     "solve s": sol.solve_s})
    return pd.DataFrame(rows)


def points_csv(X, y, labelled: bool = True) -> str:
    """The points as CSV text that `python -m experiments.run --data FILE --label-column label` reads. Points
    the page does not read as two classes (`labelled` False: the one-class SVM's, the regressions' x1 -> x2)
    need no point of each class."""
    if labelled:
        X, y = check_points(X, y)
    else:
        X = np.asarray(X, dtype=float).reshape(-1, 2)
        y = np.asarray(y, dtype=float).reshape(-1)
    frame = pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], LABEL_COLUMN: y.astype(int)})
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, float_format="%.17g")
    return buffer.getvalue()


def start_points(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The points of a start data set (empty arrays for "empty")."""
    if name not in STARTS:
        raise SVMInputError(f"unknown start data {name!r}; choose one of {', '.join(STARTS)}")
    factory = STARTS[name]
    if factory is None:
        return np.empty((0, 2)), np.empty(0)
    ds = factory()
    return np.array(ds.X), np.array(ds.y)



# ------------------------------------------------------------------ a loaded answer, point by point

#: The conditions that hold or fail at a point (solvers.grading's by_point), as the page names them.
POINTWISE = ("primal feasibility", "dual feasibility", "complementarity", "slacks")


@dataclass
class AnswerView:
    """A student's answer judged on the page's points (solvers.grading.check_point) and laid out per point."""

    name: str
    result: PointCheck
    table: pd.DataFrame  # one row a point: point (from 1), x1, x2, each pointwise residual, "breaks"


def check_answer(name: str, text: str, X, y, settings: Settings, tol: float = DEFAULT_TOLERANCE) -> AnswerView:
    """The answer file `name` with content `text` judged on the plane's points with the page's C and kernel; the
    formulation is the answer's, else the page's. SVMInputError names a bad field (grading.answers)."""
    X, y = check_points(X, y)
    answer = parse_answer(name, text)
    formulation = answer.get("formulation") or settings.solved_formulation()
    kernel = settings.kernel_object() if formulation == KERNEL_DUAL else None
    result = check_point(formulation, X, y, C=None if settings.hard else settings.C, kernel=kernel,
                         w=answer.get("w"), b=answer.get("b"), xi=answer.get("xi"), alpha=answer.get("alpha"),
                         objective=answer.get("objective"), tol=tol)
    table = pd.DataFrame({"point": np.arange(1, len(y) + 1), "x1": X[:, 0], "x2": X[:, 1]})
    for cond in POINTWISE:
        if cond in result.by_point:
            table[cond] = result.by_point[cond]
    names = [c for c in POINTWISE if c in table]
    table["breaks"] = [", ".join(c for c in names if row[c] > tol) for _, row in table.iterrows()]
    return AnswerView(name, result, table)


def answer_html(view: AnswerView) -> str:
    """The verdict and each condition (holds or not, the residual, where and why) as the page's HTML."""
    r = view.result
    rows = "".join(
        f"<tr><td>{c.name}</td><td style='color:{'green' if c.holds else '#d62728'}'>{'holds' if c.holds else 'FAILS'}"
        f"</td><td>{'' if math.isnan(c.value) else f'{c.value:.2e}'}</td><td>{c.point or ''}</td>"
        f"<td>{html.escape(c.why)}</td></tr>" for c in r.conditions)
    return (f"<b>{html.escape(view.name)}: {r.verdict}</b> (tolerance {r.tol:g}; "
            f"{int((view.table.breaks != '').sum())} points break a condition, marked x on the plane)"
            f"<table><tr><th>condition</th><th></th><th>residual</th><th>worst point</th><th>why</th></tr>{rows}</table>")
