"""Linear separability by LP: Example 5.1 is separable, Exercise 5.4 is not, with a verified common point."""

import numpy as np
import pytest
from matplotlib.patches import Polygon
from scipy.spatial import ConvexHull

import experiments.separability as sep
from experiments.datasets import load_dataset
from experiments.separability import format_certificate, is_separable, plot_certificate, verify_common_point
from formulations.errors import SVMInputError
from solvers import checks
from solvers.solution import INFEASIBLE, OPTIMAL
from solvers.checks import separability_verdict
from solvers.lp import solve_lp
from tests.conftest import skip_unless_available

LAYERS = ("pyomo", "cvxpy")
HIGHS = [(layer, method) for layer in LAYERS for method in (None, "simplex", "ipm")]
TOL = 1e-8  # the certificate's tolerance


def data(name):
    ds = load_dataset(name)
    return ds.X, ds.y


def inside(points, p):
    """Qhull's signed distance of p to conv(points) (<= 0 inside): an independent check."""
    eq = ConvexHull(points).equations
    return float((eq[:, :-1] @ p + eq[:, -1]).max())


@pytest.mark.parametrize("layer,method", HIGHS)
def test_example_5_1_is_separable(layer, method):
    X, y = data("example_5_1")
    res = is_separable(X, y, layer, "highs", method, cross_check=True)
    assert res.separable is True and res.verified
    assert res.feasibility.status == OPTIMAL
    assert res.hull.status == INFEASIBLE  # and the hull LP agrees: no common point
    assert res.consistent is True
    assert np.min(y * (X @ res.w + res.b)) >= 1 - 1e-9
    assert res.min_margin >= 1 - 1e-9


@pytest.mark.parametrize("layer,method", HIGHS)
def test_exercise_5_4_is_not_separable_with_a_verified_common_point(layer, method):
    X, y = data("exercise_5_4")
    res = is_separable(X, y, layer, "highs", method, tol=TOL)
    assert res.separable is False and res.verified
    assert res.feasibility.status == INFEASIBLE
    assert res.hull.status == OPTIMAL
    c = res.certificate
    assert c["max_residual"] <= TOL
    XA, XB = X[y > 0], X[y < 0]
    # The point is a convex combination of A and of B, and the two agree to 1e-8.
    assert np.all(res.lam >= 0) and np.all(res.mu >= 0)
    assert res.lam.sum() == pytest.approx(1, abs=1e-12) and res.mu.sum() == pytest.approx(1, abs=1e-12)
    assert np.linalg.norm(XA.T @ res.lam - res.point) <= TOL
    assert np.linalg.norm(XB.T @ res.mu - res.point) <= TOL
    # Qhull, independently of the LP: the point lies in both hulls (to 1e-8).
    assert inside(XA, res.point) <= TOL
    assert inside(XB, res.point) <= TOL
    # Farkas: u = (lambda, mu) on the rows gives sum u_i y_i x_i = 0 and sum u_i y_i = 0, sum u_i = 2.
    u = np.zeros(len(y))
    u[res.rows_a], u[res.rows_b] = res.lam, res.mu
    assert np.abs(X.T @ (u * y)).max() <= TOL and abs(u @ y) <= TOL and u.sum() == pytest.approx(2)


@pytest.mark.parametrize("layer", LAYERS)
def test_the_point_6_8_is_what_breaks_separability(layer):
    X, y = data("exercise_5_4")
    added = np.flatnonzero((X == [6.0, 8.0]).all(axis=1))
    assert added.tolist() == [55] and y[55] == -1
    res = is_separable(np.delete(X, added, axis=0), np.delete(y, added), layer, "highs")
    assert res.separable is True and res.min_margin > 0
    # With it, any common point of the hulls must use (6, 8) in B's combination (the rest
    # of B is separable from A); measured weights are 0.876 (simplex) and 1 (ipm).
    res = is_separable(X, y, layer, "highs")
    assert res.separable is False and res.mu[res.rows_b.tolist().index(55)] > 0.1


# Other LP-capable backends. Left out, as measured: ProxQP claims the feasible LPs
# infeasible, OSQP stops at its iteration limit, DAQP through the Pyomo bridge returns
# no point for these zero-objective LPs.
OTHERS = [("pyomo", "clarabel"), ("pyomo", "piqp"), ("pyomo", "scs"), ("pyomo", "ipopt"),
          ("cvxpy", "clarabel"), ("cvxpy", "piqp"), ("cvxpy", "scs"), ("cvxpy", "ipopt"), ("cvxpy", "daqp")]


@pytest.mark.filterwarnings("ignore:.*(Infeasible|INFEASIBLE)")  # qpsolvers warns on the infeasible LP
@pytest.mark.parametrize("layer,backend", OTHERS)
def test_other_lp_backends_alongside(layer, backend):
    skip_unless_available(layer, backend)
    X, y = data("example_5_1")
    res = is_separable(X, y, layer, backend, profile="high", cross_check=True)
    assert res.separable is True and res.consistent is True
    X, y = data("exercise_5_4")
    res = is_separable(X, y, layer, backend, profile="high", tol=TOL)
    assert res.separable is False and res.certificate["max_residual"] <= TOL
    assert inside(X[y > 0], res.point) <= TOL and inside(X[y < 0], res.point) <= TOL


def test_a_solver_claim_of_infeasibility_alone_is_not_taken(monkeypatch):
    """If the feasibility LP (wrongly) says infeasible and the hull LP finds nothing, the answer is None."""
    real = sep.solve_lp

    def lying(formulation, X, y, **kw):
        sol = real(formulation, X, y, **kw)
        if formulation == "separability":
            sol.status, sol.w, sol.b = INFEASIBLE, None, float("nan")
        return sol

    monkeypatch.setattr(sep, "solve_lp", lying)
    X, y = data("example_5_1")
    res = is_separable(X, y, "cvxpy", "highs")
    assert res.separable is None and not res.verified
    assert res.hull.status == INFEASIBLE
    assert "undecided" in res.message


def test_verify_rejects_a_wrong_certificate():
    X, y = data("example_5_1")
    XA, XB = X[y > 0], X[y < 0]
    # The two centroids: convex combinations, but different points.
    c = verify_common_point(XA, XB, np.full(len(XA), 1 / len(XA)), np.full(len(XB), 1 / len(XB)))
    assert not c["verified"] and c["meet_residual"] > 1.0 and c["dist_A"] > 1.0
    # Weights that do not sum to one are rejected too.
    X4, y4 = data("exercise_5_4")
    res = is_separable(X4, y4, "pyomo", "highs")
    c = verify_common_point(X4[y4 > 0], X4[y4 < 0], 2 * res.lam, res.mu)
    assert not c["verified"] and c["sum_lambda_error"] == pytest.approx(1.0)


def test_hull_lp_directly():
    X, y = data("exercise_5_4")
    for layer in LAYERS:
        s = solve_lp("hull_intersection", X, y, layer=layer, backend="highs", method="simplex")
        assert s.status == OPTIMAL and s.checks["primal_infeasibility"] <= 1e-12
        assert s.extras["lam"].shape == (28,) and s.extras["mu"].shape == (28,)


def test_report_and_figure():
    X, y = data("exercise_5_4")
    res = is_separable(X, y, "pyomo", "highs", "simplex")
    text = format_certificate(res)
    assert "NOT separable" in text and f"{res.point[0]:.6g}" in text and "x_56" in text
    fig = plot_certificate(X, y, res)
    ax = fig.axes[0]
    polygons = [p for p in ax.patches if isinstance(p, Polygon)]
    assert len(polygons) == 2  # conv(A) and conv(B)
    for poly, pts in zip(polygons, (X[y > 0], X[y < 0])):
        drawn = poly.get_xy()[:-1]  # closed polygon repeats its first vertex
        assert sorted(map(tuple, drawn)) == sorted(map(tuple, pts[ConvexHull(pts).vertices]))
    star = [c for c in ax.collections if len(c.get_offsets()) == 1]
    np.testing.assert_allclose(star[-1].get_offsets()[0], res.point)
    # separable data: the line w'x + b = 0 and its two margins
    X1, y1 = data("example_5_1")
    res1 = is_separable(X1, y1, "cvxpy", "highs")
    assert "separable." in format_certificate(res1)
    ax1 = plot_certificate(X1, y1, res1).axes[0]
    assert len(ax1.lines) == 3


def test_bad_input():
    X, y = data("example_5_1")
    with pytest.raises(SVMInputError, match="two classes"):
        is_separable(X, np.ones(len(y)))
    with pytest.raises(SVMInputError, match="2-D"):
        plot_certificate(np.hstack([X, X]), y, is_separable(np.hstack([X, X]), y, "cvxpy", "highs"))
    with pytest.raises(SVMInputError, match="rows but y has"):
        is_separable(X, y[:-1])


# ------------------------------------------------------------------ one decider (solvers.checks)


def test_the_verdict_comes_from_proofs_only():
    """solvers.checks.separability_verdict: True only for a plane that separates, False only for a
    Farkas vector that holds, None for neither (or for a plane that misses a point)."""
    X, y = data("example_5_1")
    plane = is_separable(X, y, "pyomo", "highs")
    v = separability_verdict(X, y, w=plane.w, b=plane.b)
    assert v.separable is True and v.min_margin == pytest.approx(plane.min_margin, rel=1e-12)
    assert separability_verdict(X, y, w=plane.w, b=plane.b - 100.0).separable is None  # every point on one side
    assert separability_verdict(X, y).separable is None
    X4, y4 = data("exercise_5_4")
    res = is_separable(X4, y4, "cvxpy", "highs")
    weights = np.zeros(len(y4))
    weights[res.rows_a], weights[res.rows_b] = res.lam, res.mu
    assert separability_verdict(X4, y4, lam=weights).separable is False
    assert separability_verdict(X4, y4, lam=weights + 0.01).separable is None  # balance and stationarity fail


def test_is_separable_and_the_pipelines_certificate_agree_through_the_one_decider(monkeypatch):
    """The pipeline's own LP (checks.separability_certificate) and is_separable give the same answer,
    and is_separable's certificate is the decider's: refusing every certificate there makes it undecided."""
    for name, separable in (("example_5_1", True), ("exercise_5_4", False)):
        X, y = data(name)
        assert is_separable(X, y, "pyomo", "highs").separable is separable
        assert checks.separability_certificate(X, y).holds is (not separable)
    real = separability_verdict

    def refuse_certificates(*args, **kwargs):
        verdict = real(*args, **kwargs)
        verdict.certificate.holds = False
        return verdict

    monkeypatch.setattr(sep, "separability_verdict", refuse_certificates)
    X4, y4 = data("exercise_5_4")
    assert is_separable(X4, y4, "pyomo", "highs").separable is None


def test_hull_outline_is_the_hull_and_collinear_points_are_their_own_outline():
    from experiments.separability import hull_outline

    square = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0], [0.0, 1.0]])
    assert sorted(map(tuple, hull_outline(square))) == [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
    line = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(hull_outline(line), line)  # Qhull refuses it: no area
    # a class on a line no longer stops the certificate's figure (Qhull's error was not caught there)
    X = np.vstack([line, [[0.0, 2.0], [2.0, 0.0], [1.0, 1.5]]])
    y = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    fig = plot_certificate(X, y, is_separable(X, y))
    assert fig.axes[0].get_xlabel() == "x1"


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6])
def test_the_hull_check_judges_a_gap_in_the_datas_own_units(scale):
    """Two separated clusters' means are not a common point of their hulls at any scale: an absolute tolerance
    verified them on data x 1e-6 (the gap, 6e-6, under 1e-4), and cvxpy/OSQP's point there was `optimal`."""
    from sklearn.datasets import make_blobs

    from solvers.lp import _hull_checks

    X, y = make_blobs(n_samples=80, centers=[[0, 0], [6, 6]], cluster_std=1.0, random_state=4)
    y = np.where(y == 1, 1, -1)
    lam = np.full(np.sum(y == 1), 1.0 / np.sum(y == 1))
    mu = np.full(np.sum(y == -1), 1.0 / np.sum(y == -1))
    checks, _ = _hull_checks(X * scale, y, lam, mu, 1e-4)
    assert not checks.verified
    assert checks.primal_infeasibility == pytest.approx(_hull_checks(X, y, lam, mu, 1e-4)[0].primal_infeasibility, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_the_hull_check_judges_a_gap_in_the_columns_range_whatever_its_offset(sparse):
    """Data not centred (a sparse X never is): two separated clusters' means, 6e-3 apart in a range of about 1e-2,
    are 6e-6 of max|x_j| = 1e3 (under 1e-4) but 0.4 of the column's range: the gap is judged in the range."""
    import scipy.sparse as sp
    from sklearn.datasets import make_blobs

    from solvers.lp import _hull_checks

    X, y = make_blobs(n_samples=80, centers=[[0, 0], [6, 6]], cluster_std=1.0, random_state=4)
    y = np.where(y == 1, 1, -1)
    lam = np.full(np.sum(y == 1), 1.0 / np.sum(y == 1))
    mu = np.full(np.sum(y == -1), 1.0 / np.sum(y == -1))
    centred = _hull_checks(X, y, lam, mu, 1e-4)[0].primal_infeasibility
    shifted = X * 1e-3 + 1e3
    checks, _ = _hull_checks(sp.csr_matrix(shifted) if sparse else shifted, y, lam, mu, 1e-4)
    assert not checks.verified
    # the same gap in the same range: the offset changes it by its rounding only (1e3 * eps over a range 1e-2)
    assert checks.primal_infeasibility == pytest.approx(centred, rel=1e-9)
    assert centred > 0.1
