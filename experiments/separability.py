r"""Is the training set linearly separable? The answer with its proof either way.

001 (after (1)): A and B are strictly linearly separable exactly when
conv(A) ∩ conv(B) = ∅. `is_separable` solves the feasibility LP
y_i (w'x_i + b) >= 1 (formulations.separability); when it has a solution, that
(w, b) is the proof (min_i y_i (w'x_i + b) > 0 is checked on the data). When it
has none, the convex-hull LP gives lambda (over A) and mu (over B) with

    sum_{i in A} lambda_i x_i = sum_{j in B} mu_j x_j,   sum lambda = sum mu = 1,   lambda, mu >= 0,

a point of both hulls, which is the Farkas certificate of the infeasibility:
weighting the margin rows by u = (lambda, mu) gives 0 >= 2. Neither proof is taken from the
solver: `solvers.checks.separability_verdict` decides from them (the one place that decides
separability, also behind the pipeline's own `solvers.checks.separability_certificate`), and
`verify_common_point` reports the common point and its distances to both hulls.

The runner calls `is_separable` before a hard-margin solve, prints
`format_certificate` in the report and draws `plot_certificate` (2-D data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from formulations import validation
from formulations.data_matrix import dense
from formulations.errors import SVMInputError
from formulations.separability import HULL_INTERSECTION, SEPARABILITY, split_classes
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution
from solvers.checks import separability_verdict
from solvers.lp import solve_lp

CERTIFICATE_TOL = 1e-8


@dataclass
class SeparabilityResult:
    """The answer (`separable`: True, False, or None when undecided) and its proof.

    Separable: `w`, `b` with `min_margin` = min_i y_i (w'x_i + b) > 0.
    Not separable: `lam` (over the +1 rows `rows_a`), `mu` (over the -1 rows
    `rows_b`), the common `point`, and `certificate` (the verification residuals).
    """

    separable: bool | None
    layer: str
    backend: str
    method: str | None
    feasibility: Solution
    hull: Solution | None = None
    w: np.ndarray | None = None
    b: float = math.nan
    min_margin: float = math.nan
    lam: np.ndarray | None = None
    mu: np.ndarray | None = None
    rows_a: np.ndarray | None = None
    rows_b: np.ndarray | None = None
    point: np.ndarray | None = None
    certificate: dict = field(default_factory=dict)
    consistent: bool | None = None  # both LPs run: exactly one of them feasible
    message: str = ""

    @property
    def verified(self) -> bool:
        """True when the answer carries a proof that passed the project's own check."""
        if self.separable is True:
            return self.min_margin > 0
        if self.separable is False:
            return bool(self.certificate.get("verified", False))
        return False

    @property
    def solve_s(self) -> float:
        return self.feasibility.solve_s + (self.hull.solve_s if self.hull is not None else 0.0)

    @property
    def build_s(self) -> float:
        return self.feasibility.build_s + (self.hull.build_s if self.hull is not None else 0.0)


def hull_violation(points: np.ndarray, p: np.ndarray) -> float:
    """max over the facets of conv(points) of the signed distance of p (<= 0 inside).

    Uses Qhull's facet equations (unit normals), an independent check of the LP's
    lambda / mu. NaN when Qhull cannot build the hull (d = 1, too few or
    degenerate points, d > 6 where it gets too costly).
    """
    from scipy.spatial import ConvexHull, QhullError

    d = points.shape[1]
    if d < 2 or d > 6 or points.shape[0] < d + 1:
        return math.nan
    try:
        eq = ConvexHull(dense(points)).equations  # d <= 6: a sparse X's few columns
    except QhullError:
        return math.nan
    return float((eq[:, :-1] @ p + eq[:, -1]).max())


def verify_common_point(XA: np.ndarray, XB: np.ndarray, lam, mu, tol: float = CERTIFICATE_TOL) -> dict:
    """Is (lam, mu) a point of conv(A) ∩ conv(B)? `verified` is `solvers.checks.separability_verdict`'s
    answer for (lam, mu) as one Farkas vector over the rows; the residuals and the point are its report.

    The raw weights are checked as returned (sum_lambda_error, sum_mu_error,
    min_weight, meet_residual = ||sum lambda x_A - sum mu x_B||_inf). Then the
    weights are cleaned (negatives set to 0, renormalised) so p_A = sum lambda x_A
    lies in conv(A) and p_B = sum mu x_B in conv(B) by construction, and the point
    is their midpoint: dist_A = ||point - p_A||_2 and dist_B bound its distance
    to each hull. `facet_A` / `facet_B` are Qhull's independent verdicts
    (signed distance, <= tol inside); `max_residual` is the largest of them.
    """
    lam = np.asarray(lam, dtype=float)
    mu = np.asarray(mu, dtype=float)
    stack = sp.vstack if sp.issparse(XA) else np.vstack
    verdict = separability_verdict(stack([XA, XB]), np.r_[np.ones(XA.shape[0]), -np.ones(XB.shape[0])],
                                   lam=np.r_[lam, mu], tol=tol)
    out = {
        "sum_lambda_error": abs(float(lam.sum()) - 1.0),
        "sum_mu_error": abs(float(mu.sum()) - 1.0),
        "min_weight": float(min(lam.min(), mu.min())),
        "meet_residual": float(np.abs(XA.T @ lam - XB.T @ mu).max()),
    }
    lam_c = np.maximum(lam, 0.0)
    mu_c = np.maximum(mu, 0.0)
    if lam_c.sum() <= 0 or mu_c.sum() <= 0:
        out.update(verified=verdict.certificate.holds, reason="weights vanish")
        return out
    lam_c /= lam_c.sum()
    mu_c /= mu_c.sum()
    p_a, p_b = XA.T @ lam_c, XB.T @ mu_c
    point = 0.5 * (p_a + p_b)
    out.update(
        dist_A=float(np.linalg.norm(point - p_a)),
        dist_B=float(np.linalg.norm(point - p_b)),
        facet_A=hull_violation(XA, point),
        facet_B=hull_violation(XB, point),
        support_A=int(np.sum(lam_c > 0)),
        support_B=int(np.sum(mu_c > 0)),
        tol=tol,
    )
    checks = [out["sum_lambda_error"], out["sum_mu_error"], max(0.0, -out["min_weight"]), out["meet_residual"],
              out["dist_A"], out["dist_B"]]
    checks += [v for v in (out["facet_A"], out["facet_B"]) if not math.isnan(v)]
    out["max_residual"] = float(max(checks))
    out["verified"] = verdict.certificate.holds
    out["point"], out["lam"], out["mu"] = point, lam_c, mu_c
    return out


def is_separable(
    X,
    y,
    layer: str = "pyomo",
    backend: str = "highs",
    method: str | None = None,
    *,
    tol: float = CERTIFICATE_TOL,
    cross_check: bool = False,
    profile: str = "default",
    time_limit: float | None = None,
) -> SeparabilityResult:
    """Decide strict linear separability of (X, y) with a proof, through one LP setting.

    The feasibility LP runs first; the hull LP runs when it finds no verified
    separating hyperplane (or always, with `cross_check=True`, which then records
    whether exactly one of the two LPs was feasible). A solver's "infeasible" is
    never taken alone: `separable` is False only with a verified common point,
    True only with a hyperplane that separates the data, and None otherwise.
    """
    X, y, _ = validation.check_data(X, y)
    XA, XB, rows_a, rows_b = split_classes(X, y)
    feas = solve_lp(SEPARABILITY, X, y, layer=layer, backend=backend, method=method, profile=profile,
                    time_limit=time_limit)
    res = SeparabilityResult(separable=None, layer=layer, backend=backend, method=method, feasibility=feas,
                             rows_a=rows_a, rows_b=rows_b)
    plane = separability_verdict(X, y, w=feas.w, b=feas.b, tol=tol)
    if math.isfinite(plane.min_margin):
        res.w, res.b, res.min_margin = feas.w, feas.b, plane.min_margin
    if plane.separable:
        res.separable = True
        res.message = f"separable: min_i y_i (w'x_i + b) = {res.min_margin:.6g} > 0"
    if res.separable is True and not cross_check:
        return res

    hull = solve_lp(HULL_INTERSECTION, X, y, layer=layer, backend=backend, method=method, profile=profile,
                    time_limit=time_limit)
    res.hull = hull
    hull_point = hull.extras.get("lam") is not None and hull.status in (OPTIMAL, OPTIMAL_INACCURATE)
    if hull_point:
        cert = verify_common_point(XA, XB, hull.extras["lam"], hull.extras["mu"], tol)
        res.lam, res.mu, res.point = cert.pop("lam", None), cert.pop("mu", None), cert.pop("point", None)
        res.certificate = cert
    if cross_check:
        res.consistent = (res.separable is True) != bool(res.certificate.get("verified", False))
    if res.separable is True:
        if res.certificate.get("verified"):
            res.message += "; but the hull LP also returned a verified common point (inconsistent)"
        return res
    if res.certificate.get("verified"):
        res.separable = False
        res.message = (f"not separable: the hull LP gives a common point of conv(A) and conv(B), verified to "
                       f"{res.certificate['max_residual']:.1e} (tol {tol:.0e}); the feasibility LP: {feas.status}")
    else:
        res.message = (f"undecided: feasibility LP {feas.status} ({feas.raw_status}), hull LP {hull.status} "
                       f"({hull.raw_status}), certificate {res.certificate.get('max_residual', 'missing')}")
    return res


# ----------------------------------------------------------------- report and figure


def format_certificate(res: SeparabilityResult, digits: int = 6) -> str:
    """A few Markdown lines for the report: the verdict, and the proof."""
    head = f"**Linear separability** ({res.layer}/{res.backend}{'-' + res.method if res.method else ''}): "
    if res.separable is True:
        w = ", ".join(f"{v:.{digits}g}" for v in res.w)
        return (head + "separable.\n\n"
                f"- separating hyperplane w = ({w}), b = {res.b:.{digits}g}\n"
                f"- min_i y_i (w'x_i + b) = {res.min_margin:.{digits}g} > 0 (checked on the data)\n")
    if res.separable is False:
        c = res.certificate
        pt = ", ".join(f"{v:.{digits}g}" for v in res.point)
        sa = np.flatnonzero(res.lam > 0)
        sb = np.flatnonzero(res.mu > 0)
        terms_a = " + ".join(f"{res.lam[k]:.4g} x_{res.rows_a[k] + 1}" for k in sa)
        terms_b = " + ".join(f"{res.mu[k]:.4g} x_{res.rows_b[k] + 1}" for k in sb)
        return (head + "NOT separable: conv(A) and conv(B) intersect.\n\n"
                f"- common point p = ({pt})\n"
                f"- p = {terms_a} (points of A, label +1; 1-based rows)\n"
                f"- p = {terms_b} (points of B, label -1)\n"
                f"- verified: |sum lambda - 1| = {c['sum_lambda_error']:.1e}, |sum mu - 1| = {c['sum_mu_error']:.1e}, "
                f"min weight = {c['min_weight']:.1e}, ||sum lambda x - sum mu x||_inf = {c['meet_residual']:.1e}, "
                f"distance to conv(A) <= {c['dist_A']:.1e}, to conv(B) <= {c['dist_B']:.1e}"
                + (f", Qhull facet test {c['facet_A']:.1e} / {c['facet_B']:.1e}"
                   if not math.isnan(c.get("facet_A", math.nan)) else "")
                + f" (all <= {c['tol']:.0e})\n"
                "- why this proves it: weighting the rows y_i (w'x_i + b) >= 1 by lambda (A) and mu (B) and adding "
                "gives w'(sum lambda x - sum mu x) + b (sum lambda - sum mu) = 0 >= 2, for every (w, b).\n")
    return head + "undecided. " + res.message + "\n"


def hull_outline(points: np.ndarray) -> np.ndarray:
    """The vertices of conv(points) of 2-D points, in order around the hull; fewer than three or
    collinear points (no area: Qhull refuses them) are their own outline."""
    from scipy.spatial import ConvexHull, QhullError

    if len(points) < 3:
        return points
    try:
        return points[ConvexHull(points).vertices]
    except QhullError:
        return points


def plot_certificate(X, y, res: SeparabilityResult, ax=None, title: str | None = None):
    """2-D figure: both classes, both convex hulls, and the common point (or the separating line)."""
    # A bare Figure (no pyplot): no global backend state, saves through Agg.
    from matplotlib.figure import Figure
    from matplotlib.patches import Polygon

    X, y, _ = validation.check_data(X, y)
    if X.shape[1] != 2:
        raise SVMInputError(f"the separability figure needs 2-D data, got d = {X.shape[1]}")
    if ax is None:
        fig = Figure(figsize=(6, 6.8), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    XA, XB, _, _ = split_classes(X, y)
    for pts, color, marker, label in ((XA, "tab:blue", "o", "A (+1)"), (XB, "tab:red", "s", "B (-1)")):
        ax.scatter(pts[:, 0], pts[:, 1], c=color, marker=marker, s=25, label=label, zorder=3)
        if len(pts) >= 3:
            ax.add_patch(Polygon(hull_outline(pts), closed=True, facecolor=color, edgecolor=color, alpha=0.18,
                                 lw=1.5, label=f"conv({label[0]})"))
    if res.separable is False and res.point is not None:
        for pts, weights in ((XA, res.lam), (XB, res.mu)):
            for k in np.flatnonzero(weights > 1e-9):
                ax.plot([res.point[0], pts[k, 0]], [res.point[1], pts[k, 1]], color="0.3", lw=0.8, ls=":", zorder=2)
        ax.scatter([res.point[0]], [res.point[1]], marker="*", s=250, c="gold", edgecolors="black", zorder=5,
                   label=f"common point ({res.point[0]:.3f}, {res.point[1]:.3f})")
    elif res.separable is True and res.w is not None and abs(res.w[1]) > 1e-12:
        xs = np.linspace(X[:, 0].min(), X[:, 0].max(), 2)
        for level, style in ((0.0, "-"), (1.0, "--"), (-1.0, "--")):
            ax.plot(xs, (level - res.b - res.w[0] * xs) / res.w[1], "k" + style, lw=1,
                    label="w'x + b = 0 (feasibility LP)" if level == 0 else None)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    verdict = {True: "separable", False: "not separable", None: "undecided"}[res.separable]
    ax.set_title(title or f"Linear separability: {verdict}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=8)
    return fig
