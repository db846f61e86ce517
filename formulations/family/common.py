r"""What the family's members share: the box of the duals, their quadratic forms in both layers, and the maths
of their optimality conditions.

Every member's dual is a box-constrained QP with one or two equality rows,

    min_a  1/2 a'Q a + p'a   s.t.  A a = c,  0 <= a_i <= U,

(Q from K; a holds alpha, and alpha* for the regressions), and its equality rows split the coordinates into
groups that each carry one multiplier t (nu-SVC: the two classes, t_+ = rho - b and t_- = rho + b; the one-class
SVM: t = rho; epsilon-SVR: t = b for alpha and alpha* with opposite signs; nu-SVR: t = b + eps for alpha,
b - eps for alpha*). At the optimum each coordinate's reduced gradient G_i = s_i (h_i - t_g) (s_i = +1 or -1)
satisfies

    G_i >= 0 where a_i = 0,    G_i <= 0 where a_i = U,    G_i = 0 where 0 < a_i < U,

and G_i is the point's distance to its margin or tube in the units of the margin (y_i f_i - rho, f_i,
eps - |y_i - f_i|). `recover_multiplier` finds the t that makes these hold best, `box_residuals` measures what
is left; the member modules say what h, s, t and the objectives are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo

from formulations.data_matrix import squared_row_norms
from formulations.kernel_dual import psd_constant
from formulations.quadratic_form import QuadraticForm

_TINY = np.finfo(float).tiny
#: a multiplier within this fraction of its bound counts as at the bound when t is recovered (an interior
#: point's 1e-9 U is a zero): the free ones then fix t, and without any t is the middle of its interval
AT_BOUND = 1e-6


# --------------------------------------------------------------------------- models


def pyomo_quadratic(Q: np.ndarray, variables) -> QuadraticForm:
    """x'Qx kept as the matrix (no Pyomo term per entry: formulations.quadratic_form)."""
    return QuadraticForm(np.asarray(Q, dtype=float), variables)


def cvxpy_quadratic(x, Q: np.ndarray):
    """x'Qx for an affine x; Q is positive semidefinite by the kernel's Mercer condition (checked by the caller),
    so cvxpy's own eigenvalue probe is skipped."""
    return cp.quad_form(x, cp.psd_wrap(psd_constant(np.asarray(Q, dtype=float))))


def paired(K: np.ndarray) -> np.ndarray:
    """[[K, -K], [-K, K]]: (alpha - alpha*)' K (alpha - alpha*) as a form in (alpha, alpha*)."""
    return np.block([[K, -K], [-K, K]])


def squared_norm(pyomo_vars) -> object:
    """sum_j v_j^2 of a Pyomo indexed variable."""
    return pyo.quicksum(v ** 2 for v in pyomo_vars.values())


# --------------------------------------------------------------------------- optimality conditions


@dataclass
class FamilyData:
    """What a member's conditions are computed on: y (labels -1/+1, targets, or None), and X or K."""

    y: np.ndarray | None
    X: np.ndarray | None = None
    K: np.ndarray | None = None
    #: the least size errors in f are measured against: 0, or where the optimum is w* = 0 (and the margin with it)
    #: the size of the terms f is made of at that optimum (solvers.family), which does not vanish with w*
    floor: float = 0.0
    #: K is positive semidefinite (False: an indefinite kernel allowed by the caller, whose dual is non-convex)
    convex: bool = True

    def times(self, v: np.ndarray) -> np.ndarray:
        """K v, with K = X X' where no K is given (never formed)."""
        return self.K @ v if self.K is not None else self.X @ (self.X.T @ v)

    def quadratic(self, v: np.ndarray, Kv: np.ndarray) -> float:
        """v'K v from K v: >= 0 up to rounding for a positive semidefinite K (clipped there), any sign otherwise."""
        value = float(v @ Kv)
        return value if not self.convex else max(0.0, value)

    def weights(self, coef: np.ndarray) -> np.ndarray | None:
        """w = sum_i coef_i x_i where the features are the data's own (None for a kernel)."""
        return None if self.X is None else np.asarray(self.X.T @ coef, dtype=float).ravel()

    @property
    def n(self) -> int:
        return self.X.shape[0] if self.X is not None else self.K.shape[0]

    def max_diagonal(self) -> float:
        """max_i K_ii (max_i ||x_i||^2 where no K is given), without forming K."""
        if self.K is not None:
            return float(np.max(np.diag(self.K)))
        return float(np.max(squared_row_norms(self.X)))

    def gram(self) -> np.ndarray:
        """K as a dense matrix (X X' where no K is given): for the proof of the optimum."""
        if self.K is not None:
            return np.asarray(self.K, dtype=float)
        G = self.X @ self.X.T
        return np.asarray(G.toarray() if hasattr(G, "toarray") else G, dtype=float)


@dataclass
class Conditions:
    """A member's point judged by its own optimality conditions, each residual on its own scale."""

    primal_objective: float
    dual_objective: float
    scale: float  # the size of the objectives' terms: what the gap is relative to
    residuals: dict[str, float]  # name -> relative residual (the verdict's bar applies to each)
    decision: np.ndarray  # f(x_i) on the training points
    coef: np.ndarray  # f(x) = sum_i coef_i k(x_i, x) + b
    b: float = math.nan
    w: np.ndarray | None = None
    meaning: dict = field(default_factory=dict)  # rho, epsilon, the fractions nu bounds, ...
    size: float = 1.0  # the margin's or the tube's size: what errors in f are measured against (set by the member)
    alpha: np.ndarray | None = None  # the multipliers in the member's own terms where the rows' differ (Crammer-Singer)

    @property
    def gap(self) -> float:
        return abs(self.primal_objective - self.dual_objective) / max(self.scale, _TINY)


def recover_multiplier(h: np.ndarray, s: np.ndarray, a: np.ndarray, U) -> tuple[float, float, float]:
    """The multiplier t of one group that best satisfies its coordinates' conditions, and the interval [lo, hi]
    of such t: (t, lo, hi).

    t minimises sum_i c_i(t), c_i = U_i [(a_i/U_i) max(0, G_i) + (1 - a_i/U_i) max(0, -G_i)], G_i = s_i (h_i - t):
    each coordinate's violation weighted by how far it is from the bound that would excuse it, and priced by its
    bound as the primal prices its slack. The sum is convex and piecewise linear in t, and its slope rises by U_i
    at each h_i, so the minimiser is a median of the h_i weighted by U_i: a free a_i pins t = h_i, and with none
    free t is the middle of the optimal interval (LIBSVM's rule; with the U_i, a point of weight k counts as k
    repeated points). Weights within AT_BOUND of a bound are rounded to it (of 0: zero_level). U: one bound, one
    per coordinate, or inf (no upper bound: every a_i > 0 is free, so a_i is measured against twice the largest a
    and never reaches U).
    """
    a = np.asarray(a, dtype=float)
    zero = zero_level(a, U)
    finite = bool(np.all(np.isfinite(U)))
    price = np.broadcast_to(np.asarray(U, dtype=float) / float(np.max(U)) if finite else 1.0, a.shape)
    if not finite:
        U = 2.0 * max(top(a), _TINY)
    frac = np.clip(a / U, 0.0, 1.0)
    frac[a <= zero] = 0.0
    frac[frac > 1.0 - AT_BOUND] = 1.0
    below = price * np.where(s > 0, frac, 1.0 - frac)  # the slope's fall below h_i (it rises by price_i there)
    order = np.argsort(h, kind="stable")
    hs = np.asarray(h, dtype=float)[order]
    rise = np.cumsum(price[order])  # the slope at t, above the first j + 1 of the h's, plus `total`
    total = float(below.sum())
    slack = len(hs) * np.finfo(float).eps * float(rise[-1])  # the cumulative sums' rounding, nothing more
    j = int(np.searchsorted(rise, total - slack))
    if total <= slack:  # slope 0 below the smallest h: every t up to it is optimal
        lo, hi = -math.inf, hs[0]
    elif j < len(hs) and abs(rise[j] - total) <= slack:  # slope 0 on [h_(j), h_(j+1)]
        lo, hi = hs[j], (hs[j + 1] if j + 1 < len(hs) else math.inf)
    else:
        t = float(hs[min(len(hs) - 1, j)])
        return t, t, t
    t = 0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else (lo if math.isfinite(lo) else hi)
    return float(t), float(lo), float(hi)


def multipliers_meaning(values: dict, intervals: dict | None) -> dict:
    """The rows' multipliers of the dual's equality groups (the t of recover_multiplier: nu-SVC's rho - b and rho + b,
    the one-class rho, epsilon-SVR's b, nu-SVR's b + eps and b - eps) at the point, and where they were recovered
    from alpha the interval each may take with that alpha: meaning["multipliers"], meaning["multiplier_intervals"].
    Where no multiplier of a group is free its t is not unique; solvers.family holds a row's t against the proved
    optimum's interval, not against one point of it."""
    out = {"multipliers": {name: float(v) for name, v in values.items()}}
    if intervals is not None:
        out["multiplier_intervals"] = {name: (float(lo), float(hi)) for name, (lo, hi) in intervals.items()}
    return out


def box_residuals(a: np.ndarray, U, G: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per coordinate: dual feasibility max(0, -a_i, a_i - U_i) / U_i, and complementarity
    (a_i/U_i) max(0, G_i)/scale + (1 - a_i/U_i) max(0, -G_i)/scale (a_i > 0 only on or inside the margin,
    a_i < U_i only on or outside it); `scale` is the size of what G compares (the margin, the tube). U: one bound
    or one per coordinate (weighted points); each point's box is measured against its own bound, so a point of a
    small weight may not exceed its bound by more than the others do theirs. U = inf (no upper bound, a squared
    hinge's dual, a hard tube): the a_i are measured against max a, and G_i >= 0 is asked of every point."""
    finite = bool(np.all(np.isfinite(U)))
    reach = np.asarray(U, dtype=float) if finite else max(top(a), _TINY)
    frac = np.clip(a / reach, 0.0, 1.0)
    feasibility = np.maximum(0.0, np.maximum(-a, a - U)) / reach
    below = (1.0 - frac) if finite else 1.0
    comp = (frac * np.maximum(0.0, G) + below * np.maximum(0.0, -G)) / max(scale, _TINY)
    return feasibility, comp


def zero_level(a: np.ndarray, U) -> float:
    """The size below which a multiplier counts as 0: AT_BOUND of the largest bound, or of the largest multiplier
    where that is smaller (a large C leaves every multiplier far below its bound: 1e-6 C would call them all 0)."""
    finite = np.asarray(U, dtype=float)
    finite = finite[np.isfinite(finite)]
    reach = top(a) if finite.size == 0 else min(float(np.max(finite)), top(a))
    return AT_BOUND * reach


def top(values) -> float:
    """max |v| (0 for none)."""
    values = np.asarray(values, dtype=float)
    return float(np.max(np.abs(values))) if values.size else 0.0


def fraction(mask, weights=None) -> float:
    """The share of the points in `mask`, each counted by its weight where weights are given (the nu-property
    of a weighted problem bounds the weighted shares)."""
    if not np.size(mask):
        return math.nan
    if weights is None:
        return float(np.mean(mask))
    weights = np.broadcast_to(np.asarray(weights, dtype=float), np.shape(mask))
    return float(weights[np.asarray(mask, dtype=bool)].sum() / weights.sum())


def sample_weights(params: dict):
    """omega_i, the points' weights (params["sample_weight"], LIBSVM's W_i), or None where none are given."""
    weights = params.get("sample_weight")
    return None if weights is None else np.asarray(weights, dtype=float)


def point_bounds(params: dict, n: int, total: float):
    r"""The dual's bound on each point where the slacks are priced by their average: total / l, or, with weights
    omega_i, total omega_i / sum_j omega_j (a weight scales its point's slack in the primal and its multiplier's
    bound in the dual, LIBSVM's C_i = C W_i, normalised so that unit weights give the unweighted problem).
    One number without weights (the models stay as they were), an array with them."""
    weights = sample_weights(params)
    return total / n if weights is None else total * weights / weights.sum()


def stationarity(w: np.ndarray, w_alpha: np.ndarray, X, f: np.ndarray, floor: float = 0.0) -> float:
    """||w - sum_i c_i x_i|| relative to ||w||, or, where w is (nearly) 0, to the w that moves f by max |f| (or
    by `floor`, FamilyData.floor, where larger) (max|f| / max ||x_i||): a primal's w against the one its
    multipliers make."""
    rows = np.sqrt(np.max(squared_row_norms(X)))
    reach = max(top(f), floor) / rows if rows > 0 else 0.0
    return float(np.linalg.norm(w - w_alpha)) / max(float(np.linalg.norm(w)), reach, _TINY)



# --------------------------------------------------------------------------- the optimum proved from the point


@dataclass
class BoxQP:
    """A member's dual as min 1/2 a'Qa + p'a s.t. A a = c, 0 <= a <= U (a: alpha, or alpha then alpha*); A may
    have no rows (a dual without a bias), U is one bound or one per coordinate (weighted points), and may be inf
    (no upper bound: a squared hinge, a hard tube)."""

    Q: np.ndarray
    p: np.ndarray
    A: np.ndarray
    c: np.ndarray
    U: float | np.ndarray
