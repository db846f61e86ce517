"""The linear SVM at scale: the soft primal by restricted QPs at large n, and wide data (d ~ n).

- At n = 1e5 (the benchmark's linear data) the consistent split's QP left a point 3.3e-7 off
  its margin with alpha = 6.7e-6: 22 free points for d + 1 = 21 unknowns, the checks' proof did
  not settle and the point was refused (optimal_inaccurate). The loop now ends at the optimum
  proved from the active set (primal_working_set._settle); a point moved off it is still refused.
- `method="auto"` takes restricted QPs from SMOOTHED_MIN_N points on where d <= MAX_D_OVER_N n
  (solvers.api.choose_method); their split comes from the smoothed primal (no QP of every point), and
  the result is the tight reference's in every layer, however far off that start.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.optimize import approx_fprime

from experiments.bench.scaling import bench_data
from experiments.datasets import Dataset, hard, overlapping
from formulations.recovery import FREE, classify, primal_objective
from formulations.scaling import BadScalingWarning
from solvers import api
from solvers.solution import OPTIMAL, OPTIMAL_INACCURATE, Solution
from solvers import reference
from solvers.algorithms import primal_working_set as pws
from solvers.checks import compute_checks


@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
def test_large_n_ends_verified_against_the_proved_optimum(layer):
    X, y = bench_data(100_000, 20)
    sol = pws.solve(X, y, 1.0, layer=layer, backend="piqp", profile="scale")
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    assert sol.checks["reference"] == "proved optimum"
    assert sol.checks["err_w"] <= 1e-9 and sol.checks["err_decision"] <= 1e-9
    assert sol.checks["n_free_sv"] <= X.shape[1] + 1  # the active set the proof needs


@pytest.mark.parametrize("move", ["w", "b"])
def test_a_point_moved_off_the_optimum_is_still_refused(monkeypatch, move):
    """The settling step is trusted with nothing: w or b moved by 1e-5 (relative) is refused."""
    ds = overlapping(3000, d=5, seed=7)
    real = pws._settle

    def moved(*args, **kwargs):
        w, b, alpha = real(*args, **kwargs)
        if move == "w":
            return w * (1 + 1e-5), b, alpha
        return w, b + 1e-5 * float(np.max(np.abs(ds.X @ w + b))), alpha

    monkeypatch.setattr(pws, "_settle", moved)
    sol = pws.solve(ds.X, ds.y, 1.0, layer="direct", backend="piqp", sample=300)
    assert sol.solver_status == OPTIMAL and sol.status == OPTIMAL_INACCURATE
    assert "> 1e-06" in sol.checks["verdict"]


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo", "direct"])
def test_auto_takes_the_restricted_qps_from_their_n_unless_d_is_near_n(layer):
    n = pws.SMOOTHED_MIN_N
    d_most = int(pws.MAX_D_OVER_N * n)
    working_set = lambda n, d: api.choose_method("soft_primal", n, layer, 1.0, d=d) == "working_set"
    assert working_set(n, d_most) and working_set(1_000_000, 20) and working_set(20_000, 500)
    if layer != "direct":  # the solver alone has only the working set
        assert not working_set(n - 1, 20) and not working_set(n, d_most + 1)
        assert not working_set(300, 2)  # the coursework's small n stays the whole QP
    assert api.choose_method("soft_primal", n, layer, 1.0, d=20, method="full") == "full"
    if layer != "direct":
        assert api.choose_method("soft_primal", n, layer, np.ones(n), d=20) == "working_set"  # per-sample C too


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo", "direct"])
def test_auto_takes_the_working_set_where_every_point_can_lie_on_its_margin(layer):
    """d >= n: the whole QP through a layer came back 3e-4 off the proved optimum (PIQP) and was refused; auto
    takes the working set, whose first QP holds every point (start_settings), at any n."""
    working_set = lambda n, d: api.choose_method("soft_primal", n, layer, 1.0, d=d) == "working_set"
    assert working_set(300, 300) and working_set(300, 3_000) and working_set(5_000, 5_000)
    if layer != "direct":
        assert not working_set(300, 299)
    assert pws.start_settings(300, 3_000) == {"sample": 300}
    assert pws.start_settings(5_000, 5_000) == {"sample": 5_000}
    assert pws.start_settings(5_000, 20)["start"] == "smoothed"


@pytest.fixture(scope="module")
def more_features():
    """More features than points, clustered with flipped labels: the outside trial's set, on which the whole QP
    through either layer was refused (decision values 2.7e-4 off the proved optimum)."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(300, 3_000, n_informative=5, n_clusters_per_class=3, flip_y=0.08, weights=[0.6],
                               class_sep=0.85, random_state=59)
    X, y = StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)
    ref = api.solve("soft_primal", X, y, layer="direct", backend="piqp", C=1.0)  # the solver alone: proved
    assert ref.status == OPTIMAL
    return X, y, X @ ref.w + ref.b


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_more_features_than_points_are_proved_through_the_layers(more_features, layer):
    X, y, f_ref = more_features
    sol = api.solve("soft_primal", X, y, layer=layer, backend="piqp", C=1.0)
    assert sol.status == OPTIMAL and sol.extras["method"] == "working_set"
    f = X @ sol.w + sol.b
    assert np.max(np.abs(f - f_ref)) <= 1e-7 * np.max(np.abs(f_ref))


def test_above_the_sample_the_loop_starts_from_the_smoothed_primal(monkeypatch):
    seen, rows = {}, []
    real, real_qp = pws.decompose, pws.SUBSOLVERS["cvxpy"]

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    def qp_spy(Xs, ys, *args):
        rows.append(len(ys))
        return real_qp(Xs, ys, *args)

    monkeypatch.setattr(pws, "decompose", spy)
    monkeypatch.setitem(pws.SUBSOLVERS, "cvxpy", qp_spy)
    monkeypatch.setattr(pws, "SMOOTHED_MIN_N", 500)  # the rule at a test's size
    X, y = bench_data(600, 6)
    sol = api.solve("soft_primal", X, y, layer="cvxpy", backend="piqp", C=1.0)
    assert seen["start"] == "smoothed" and seen["delta"] == pws.SMOOTHED_BAND
    assert sol.extras["method"] == "working_set" and sol.extras["start"] == "smoothed"
    assert sol.extras["sample"] is None  # the row says that no QP of a sample started it
    assert rows and max(rows) < len(y)  # no QP of every point
    assert sol.status == OPTIMAL, sol.checks["verdict"]


def test_the_smoothed_primal_has_its_gradient():
    X, y = bench_data(200, 5)
    rng = np.random.default_rng(0)
    for h in (1e-2, 1.0):
        for v in rng.normal(scale=0.5, size=(5, 6)):
            value, gradient = pws.smoothed_primal(v, X, y, 3.0, h)
            numeric = approx_fprime(v, lambda u: pws.smoothed_primal(u, X, y, 3.0, h)[0], 1e-7)
            np.testing.assert_allclose(gradient, numeric, rtol=0, atol=1e-4 * np.abs(gradient).max())
            # against the hinge: the smoothing takes at most h / 2 off each point's loss
            margins = y * (X @ v[:5] + v[5])
            hinge = 0.5 * v[:5] @ v[:5] + 3.0 * np.maximum(0.0, 1.0 - margins).sum()
            assert hinge - 3.0 * len(y) * h / 2 - 1e-9 <= value <= hinge + 1e-9


@pytest.fixture(scope="module")
def wide():
    X, y = bench_data(300, 200)
    ref = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0, profile="high", method="full")
    assert ref.status == OPTIMAL
    return X, y, ref


@pytest.mark.parametrize("method", ["auto", "working_set"])
@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_the_chosen_method_on_wide_data_is_the_reference(wide, layer, method):
    X, y, ref = wide
    sol = api.solve("soft_primal", X, y, layer=layer, backend="piqp", C=1.0, profile="high", method=method)
    assert sol.extras["method"] == api.choose_method("soft_primal", len(y), layer, 1.0, method, d=X.shape[1])
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    assert sol.objective == pytest.approx(ref.objective, rel=1e-8)
    np.testing.assert_allclose(sol.w, ref.w, rtol=0, atol=1e-6 * np.linalg.norm(ref.w))
    assert sol.b == pytest.approx(ref.b, abs=1e-6 * np.max(np.abs(ref.decision)))


@pytest.mark.parametrize("max_iter", [None, 1])
@pytest.mark.parametrize("backend", ["piqp", pytest.param("clarabel", marks=pytest.mark.slow)])  # 4 s a case
@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
def test_the_smoothed_start_on_wide_data_ends_at_the_reference(wide, monkeypatch, layer, backend, max_iter):
    """On wide data the smoothed primal splits the points; the restricted QPs make the point exact. After a
    single L-BFGS step (max_iter 1) the split is far off and the loop must correct it; the answer is the same."""
    X, y, ref = wide
    monkeypatch.setattr(pws, "SMOOTHED_MIN_N", 250)  # the smoothed start at this n
    monkeypatch.setattr(pws, "MAX_D_OVER_N", 1.0)  # and auto's restricted QPs at this d
    if max_iter is not None:
        monkeypatch.setattr(pws, "SMOOTH_MAX_ITER", max_iter)
    rows = []
    real = pws.SUBSOLVERS[layer]

    def spy(Xs, ys, C, inside, backend, options, time_limit):
        rows.append(len(ys))
        return real(Xs, ys, C, inside, backend, options, time_limit)

    monkeypatch.setitem(pws.SUBSOLVERS, layer, spy)
    sol = api.solve("soft_primal", X, y, layer=layer, backend=backend, C=1.0, profile="high")
    assert sol.extras["method"] == "working_set" and sol.extras["start"] == "smoothed"
    assert max(rows) < len(y)  # restricted QPs only
    if max_iter == 1:
        assert sol.iterations >= 2  # the far-off split was corrected
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    assert sol.objective == pytest.approx(ref.objective, rel=1e-8)
    np.testing.assert_allclose(sol.w, ref.w, rtol=0, atol=1e-6 * np.linalg.norm(ref.w))
    assert sol.b == pytest.approx(ref.b, abs=1e-6 * np.max(np.abs(ref.decision)))


def _tight_soft_primal(X, y, C):
    """The soft primal through cvxpy/Clarabel at tight tolerances: (objective, w, b)."""
    import cvxpy as cp

    n, d = X.shape
    w, b, xi = cp.Variable(d), cp.Variable(), cp.Variable(n)
    ref = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)),
                     [cp.multiply(y, X @ w + b) >= 1 - xi, xi >= 0])
    ref.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, tol_ktratio=1e-9)
    return ref.value, w.value, float(b.value)


def _ties(kind: str = "integers", n: int = 3000, d: int = 6):
    """Data whose optimum has many points exactly on the margin: integer features; with a feature that is 0 on
    every point; or three binary features and a category one-hot in 3 columns (they sum to the bias's column)."""
    rng = np.random.default_rng(3)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    X[:, :3] += np.where(rng.random((n, 3)) < 0.3, y[:, None], 0.0)
    if kind == "zero_feature":
        X[:, -1] = 0.0
    if kind == "one_hot":
        X[:, :3] = rng.random((n, 3)) < np.where(y[:, None] > 0, 0.6, 0.3)
        X[:, 3:] = np.eye(3)[rng.integers(0, 3, size=n)]
    return X, y


def test_a_near_degenerate_optimum_is_proved_with_w_from_its_alphas():
    """X x 1e-3 at C = 1 (a tiny effective C): nearly every point at C, two free. The proof's bounded fit of
    the free alphas left a residual, and the proof kept the linear system's w, 1.5e-3 off X' Y alpha: the
    checks refused the point (stationarity). w now comes from the fitted alphas, so the sets move until
    they are right. Reference: the soft primal through cvxpy/Clarabel at tight tolerances."""
    rng = np.random.default_rng(12345 + 20 + 1000)
    y = np.where(rng.random(1000) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((1000, 20))
    X[:, :5] += y[:, None]
    y = np.where(rng.random(1000) < 0.10, -y, y)
    X = 1e-3 * X
    objective = _tight_soft_primal(X, y, 1.0)[0]
    for layer in ("direct", "cvxpy"):
        sol = api.solve("soft_primal", X, y, layer=layer, backend="clarabel", C=1.0, method="working_set")
        assert sol.status == OPTIMAL, sol.checks["verdict"]
        assert sol.checks["kkt_stationarity"] <= 1e-12
        assert sol.checks["reference"] == "proved optimum"
        # P is flat here: an objective within 1e-11 leaves w ~1e-4 uncertain, so the reference checks P only
        assert sol.objective == pytest.approx(objective, rel=1e-9)


@pytest.mark.parametrize("kind", ["integers", "zero_feature", "one_hot"])
def test_ties_put_many_points_on_the_margin_and_the_proof_still_holds(monkeypatch, kind):
    """Integer or one-hot features (ties): hundreds of points lie exactly on the margin, far more than the
    d + 1 unknowns of (w, b). The proof solves the KKT equations through the thin SVD of the free points'
    margin rows (reference._thin_solve), also where those rows lack rank: a feature that is 0 on every
    point, or one-hot columns that sum to the bias's column (18 s a proof through the whole system at
    n = 5,000). Either way the optimum is the tight reference's."""
    X, y = _ties(kind)
    d = X.shape[1]
    objective, w, b = _tight_soft_primal(X, y, 1.0)
    from solvers import reference

    routes, real = [], reference._thin_solve

    def spy(*args):
        solved = real(*args)
        routes.append(solved is not None)
        return solved

    monkeypatch.setattr(reference, "_thin_solve", spy)
    for layer in ("direct", "cvxpy"):
        sol = api.solve("soft_primal", X, y, layer=layer, backend="piqp", C=1.0)
        assert routes and all(routes)  # never the whole (d + m + 1)-square system
        assert sol.status == OPTIMAL, sol.checks["verdict"]
        assert sol.checks["reference"] == "proved optimum"
        assert sol.checks["n_free_sv"] > 10 * (d + 1)  # the degenerate case the thin route is for
        assert sol.objective == pytest.approx(objective, rel=1e-9)
        f, f_ref = X @ sol.w + sol.b, X @ w + b
        assert np.max(np.abs(f - f_ref)) <= 1e-6 * np.max(np.abs(f_ref))


def test_many_free_points_of_linear_data_never_go_to_the_dual_form(monkeypatch):
    """Where d + m reaches MAX_FREE the proof's whole primal-form system is too big, but more free points than
    d + 1 still take the primal form's thin route (O(m d^2)): the dual form (an m x m kernel system, and scipy's BVLS over
    m unknowns when it is singular) took 41 s on a round of 3,999 free points. Same answer either way."""
    from formulations.recovery import classify
    from solvers import reference

    X, y = _ties()
    d = X.shape[1]
    sol = api.solve("soft_primal", X, y, layer="direct", backend="piqp", C=1.0)
    codes = classify(sol.alpha, y, sol.decision, 1.0)
    free = np.flatnonzero(codes == reference.FREE)
    assert free.size > d + 1
    expected = reference._solve_sets(reference.Gram(X, None), y, 1.0, codes, free)
    monkeypatch.setattr(reference, "MAX_FREE", free.size + 1)  # d + m >= MAX_FREE > m

    def no_dual_form(*args):
        raise AssertionError("the dual form's kernel submatrix was asked for")

    monkeypatch.setattr(reference.Gram, "submatrix", no_dual_form)
    got = reference._solve_sets(reference.Gram(X, None), y, 1.0, codes, free)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=1e-12)  # alpha
    assert got[2] == pytest.approx(expected[2], abs=1e-12)  # b


def test_linear_proofs_are_not_bounded_by_the_dense_limit(monkeypatch):
    """MAX_FREE bounds the dense square systems; the free points of linear data go through an m x (d + 1) SVD
    instead (reference._thin): one-hot data with 7,641 points on the margin were refused (the weaker gap bound)."""
    from solvers import reference

    X, y = _ties("one_hot")
    monkeypatch.setattr(reference, "MAX_FREE", 50)
    sol = api.solve("soft_primal", X, y, layer="direct", backend="piqp", C=1.0)
    assert sol.checks["n_free_sv"] > reference.MAX_FREE
    assert sol.status == OPTIMAL and sol.checks["reference"] == "proved optimum", sol.checks["verdict"]
    objective, w, b = _tight_soft_primal(X, y, 1.0)
    assert sol.objective == pytest.approx(objective, rel=1e-9)


def test_a_bounded_fit_too_large_to_try_ends_the_proof_at_once(monkeypatch):
    """Where the free alphas leave [0, C] the proof fits them by bounded least squares (scipy's BVLS), whose
    time its step limit does not bound: over 2,567 free points of a shifted rbf kernel one fit took 20 s and
    the checks ran 150 s past the solve's time limit. Above reference.BVLS_MAX_ENTRIES the proof gives up on
    those sets at once, with the reason; below it the fit is BVLS's."""
    from scipy.optimize import lsq_linear

    from solvers import reference

    rng = np.random.default_rng(0)
    A, rhs = rng.normal(size=(3, 8)), rng.normal(size=3)
    fitted = reference.bounded_fit(A, rhs, 0.0, 0.1)
    assert np.array_equal(fitted, lsq_linear(A, rhs, bounds=(0.0, 0.1), method="bvls").x)
    fits = []
    real = reference.lsq_linear
    monkeypatch.setattr(reference, "lsq_linear", lambda *args, **kw: (fits.append(args[0].shape), real(*args, **kw))[1])
    monkeypatch.setattr(reference, "BVLS_MAX_ENTRIES", A.size - 1)
    with pytest.raises(reference.NotTried, match="too large to try"):
        reference.bounded_fit(A, rhs, 0.0, 0.1)
    # the integer ties' proof fits 7 x 333 alphas (measured): with the cap below that, no such fit is tried (those
    # of the free points' independent rows, 7 x 7, are)
    X, y = _ties("integers")
    monkeypatch.setattr(reference, "BVLS_MAX_ENTRIES", 100)
    sol = api.solve("soft_primal", X, y, layer="cvxpy", backend="piqp", C=1.0)
    assert all(rows * columns <= 100 for rows, columns in fits), fits
    assert sol.status in (OPTIMAL, OPTIMAL_INACCURATE)


def test_wide_data_s_proof_eliminates_w(monkeypatch):
    """d >> n (60 points, 2,000 features): the proof solved the whole (d + m + 1)-square system in (w, b,
    alpha_F), 1.0 s of a 1.5 s solve; with w eliminated it solves an (m + 1)-square one (reference._wide_solve).
    The same proved optimum either way; with features 1e8 apart in size the whole system stays (X X' would
    lose the small ones)."""
    from solvers import reference

    rng = np.random.default_rng(0)
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((60, 2000))
    X[:, :5] += 0.5 * y[:, None]
    sizes = []
    real = reference._equilibrated_solve
    monkeypatch.setattr(reference, "_equilibrated_solve", lambda M, *a, **k: (sizes.append(M.shape[0]), real(M, *a, **k))[1])
    wide = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0)
    assert wide.status == OPTIMAL and wide.checks["reference"] == "proved optimum"
    assert sizes and max(sizes) <= 61  # never the 2,000-square system
    monkeypatch.setattr(reference, "WIDE_RATIO", 10**9)  # the whole system, as before
    sizes.clear()
    whole = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1.0)
    assert max(sizes) > 2000
    # the same point measured against each route's proved optimum: the same distance, so the same optimum
    for err in ("err_objective", "err_decision", "err_w"):
        assert abs(wide.checks[err] - whole.checks[err]) <= 1e-10, err  # measured 5.2e-12 (objective)
    monkeypatch.setattr(reference, "WIDE_RATIO", 4)
    sizes.clear()
    Xs = X * np.where(np.arange(2000) % 2 == 0, 1.0, 1e-8)  # features 1e8 apart
    with pytest.warns(BadScalingWarning):
        api.solve("soft_primal", Xs, y, layer="cvxpy", backend="clarabel", C=1.0)
    assert max(sizes) > 2000


def test_a_cvxpy_backend_without_duals_keeps_the_soft_primal_whole():
    """cvxpy returns no duals for Ipopt, and the restricted QPs' duals are the alpha that proves their optimum: auto
    takes the full QP there (it was the working set, every check nan, `optimal_inaccurate`), and an explicit working
    set is refused by name. The full QP is verified."""
    from experiments.datasets import overlapping
    from formulations.errors import SVMInputError

    n = pws.SMOOTHED_MIN_N
    assert api.choose_method("soft_primal", n, "cvxpy", 1.0, d=5, backend="ipopt") == "full"
    assert api.choose_method("soft_primal", n, "cvxpy", 1.0, d=5, backend="clarabel") == "working_set"
    assert api.choose_method("soft_primal", n, "pyomo", 1.0, d=5, backend="ipopt") == "working_set"  # duals: yes
    with pytest.raises(SVMInputError, match="cvxpy returns no duals for ipopt"):
        api.choose_method("soft_primal", n, "cvxpy", 1.0, "working_set", d=5, backend="ipopt")
    ds = overlapping(n, d=5, seed=3)
    sol = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="ipopt", C=1.0)
    assert sol.extras["method"] == "full" and sol.status == "optimal", sol.message


def _ambiguous_guess(ds, extra: int):
    """The proved optimum of `ds` (C = 1) and a solver's point at it whose `extra` bound points nearest their
    margins (1e-5 to 4e-4 off) carry alphas 1e-3 inside their bounds, so that `classify` calls them free:
    more free points than the rank of their margin rows, as PIQP's point left at n = 1e6 (hard(seed=7))."""
    sol = pws.solve(ds.X, ds.y, 1.0, layer="direct", backend="piqp")
    opt = reference.polish(reference.Gram(ds.X, None), ds.y, 1.0, np.asarray(sol.alpha), sol.decision)
    assert opt.ok
    f = opt.g + opt.b
    r = ds.y * f - 1.0
    alpha = opt.alpha.copy()
    free = (alpha > 0) & (alpha < 1)
    bound = np.flatnonzero(~free & (np.abs(r) > 1e-8))
    picked = bound[np.argsort(np.abs(r[bound]))[:extra]]
    alpha[picked] = np.where(alpha[picked] > 0.5, 1 - 1e-3, 1e-3)
    assert np.count_nonzero(classify(alpha, ds.y, f, 1.0) == FREE) == np.count_nonzero(free) + extra
    return opt, alpha, f


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("d, rank", [(20, 16), (20, 20)])
def test_free_points_beyond_their_rows_rank_still_prove_the_optimum(seed, d, rank):
    """17 (rank 16: redundant features) or 21 free points at the optimum and 3 more near their margins in the
    solver's point: the margins cannot all be met, and before the free rows were made independent no one of
    them at a bound settled the sets (5-35 s a seed, then the weaker gap bound refused the optimum)."""
    ds = hard(20_000, d=d, seed=seed) if rank < d else full_rank_hard(20_000, d, seed)
    assert np.linalg.matrix_rank(ds.X) == rank
    opt, alpha, f = _ambiguous_guess(ds, extra=3)
    got = reference.polish(reference.Gram(ds.X, None), ds.y, 1.0, alpha, f)
    assert got.ok, got.reason
    assert np.linalg.norm(got.w - opt.w) <= 1e-9 * np.linalg.norm(opt.w)
    assert abs(got.b - opt.b) <= 1e-9 * np.max(np.abs(f))


def full_rank_hard(n, d, seed):
    """hard() with no redundant feature (X of full rank d): its make_classification, every feature informative."""
    from sklearn.datasets import make_classification
    X, label = make_classification(n_samples=n, n_features=d, n_informative=d, n_redundant=0, flip_y=0.1,
                                   class_sep=0.8, weights=[0.45, 0.55], random_state=seed)
    return Dataset("full rank", (X - X.mean(axis=0)) / X.std(axis=0), np.where(label == 1, 1.0, -1.0), "", "")


@pytest.mark.parametrize("move", ["w", "b"])
def test_an_ambiguous_point_moved_off_the_optimum_is_refused(move):
    """The independent rows only choose the sets the proof starts from: the proof of a point 1e-5 off the
    optimum (w relative, or b relative to max |f|) with those ambiguous sets is the optimum's, 1e-5 away, and
    the checks refuse the point."""
    ds = hard(20_000, seed=3)
    opt, alpha, f = _ambiguous_guess(ds, extra=3)
    w, b = opt.w.copy(), opt.b
    if move == "w":
        w = w * (1 + 1e-5)
    else:
        b = b + 1e-5 * float(np.max(np.abs(f)))
    point = Solution(formulation="soft_primal", layer="direct", backend="piqp", status=OPTIMAL,
                        solver_status=OPTIMAL, raw_status="", w=w, b=b, alpha=alpha, decision=ds.X @ w + b,
                        objective=primal_objective(ds.X, ds.y, w, b, 1.0))
    out = compute_checks(point, ds.X, ds.y, 1.0, tol=1e-6)
    assert not out.verified, out.verdict
    assert out.reference != "proved optimum" or out.err_decision >= 5e-6


@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
@pytest.mark.parametrize("seed", [0, 7])
def test_the_hard_family_ends_verified_in_every_layer(layer, seed):
    """The fast path on the hard family (n = 1e5, 36-58% of the points bound support vectors, X of rank 16), through solve()."""
    ds = hard(100_000, seed=seed)
    sol = api.solve("soft_primal", ds.X, ds.y, C=1.0, layer=layer, backend="piqp", method="auto")
    assert sol.status == OPTIMAL, sol.checks["verdict"]
    assert sol.checks["reference"] == "proved optimum"
    assert sol.checks["n_bound_sv"] > 0.3 * len(ds.y) and sol.checks["n_free_sv"] <= 17


@functools.lru_cache(maxsize=1)
def _ambiguous_case():
    ds = hard(20_000, seed=5)
    return ds, *_ambiguous_guess(ds, extra=3)


@settings(max_examples=12, deadline=None)
@given(order=hs.integers(0, 2**32 - 1), flip=hs.booleans(), scale=hs.sampled_from([1e-3, 1.0, 1e3]))
def test_the_ambiguous_proof_is_the_same_under_permutation_label_flip_and_rescaling(order, flip, scale):
    """The rows in any order, the labels flipped (w* and b* change sign) and X in other units with C to match
    (X s and C / s^2: w* / s, alpha* / s^2, b* and f* unchanged): the same optimum is proved from the same
    ambiguous point."""
    ds, opt, alpha, f = _ambiguous_case()
    perm = np.random.default_rng(order).permutation(len(ds.y))
    sign = -1.0 if flip else 1.0
    X, y = ds.X[perm] * scale, sign * ds.y[perm]
    got = reference.polish(reference.Gram(X, None), y, 1.0 / scale**2, alpha[perm] / scale**2, sign * f[perm])
    assert got.ok, got.reason
    np.testing.assert_allclose(got.w * scale, sign * opt.w, rtol=0, atol=1e-9 * np.linalg.norm(opt.w))
    assert abs(got.b - sign * opt.b) <= 1e-9 * np.max(np.abs(f))
    np.testing.assert_allclose(got.alpha * scale**2, opt.alpha[perm], rtol=0, atol=1e-9)


def _wide_problem(n=60, d=400, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("layer", ["direct", "cvxpy", "pyomo"])
@pytest.mark.parametrize("held", [False, True])
def test_a_restricted_qp_in_the_span_of_its_points_is_the_same_qp(layer, held):
    """d >> |rows|: the restricted QP solved on the rows' coordinates in an orthonormal basis of their span (and of
    the held points' sum) gives the w, b and alpha of the same QP in the d original coordinates, in every layer."""
    X, y = _wide_problem()
    rows, C = np.arange(40), 1.0
    inside = (X[40:], y[40:], np.full(20, C)) if held else None
    span = pws.in_span(X[rows], C, inside)
    assert span is not None and span[0].shape == (40, 40 + held) and span[2].shape == (400, 40 + held)
    qp = functools.partial(pws.SUBSOLVERS[layer], y=y[rows], C=C, backend="clarabel", options={}, time_limit=None)
    whole, _, _ = qp(X[rows], inside=inside)
    turned, _, _ = qp(span[0], inside=span[1])
    w = span[2] @ np.asarray(turned["w"])
    assert np.max(np.abs(w - whole["w"])) <= 1e-6 * np.max(np.abs(whole["w"]))  # two solves to Clarabel's 1e-8
    assert abs(turned["b"] - whole["b"]) <= 1e-6 * max(abs(whole["b"]), np.max(np.abs(X[rows] @ whole["w"])))
    assert np.max(np.abs(np.asarray(turned["alpha"]) - whole["alpha"])) <= 1e-6 * C


def test_the_span_is_taken_only_where_it_has_fewer_coordinates():
    """No basis where the rows (and the held sum) are as many as the features, nor for sparse rows (a dense basis
    of a sparse matrix's span could be far larger than the matrix)."""
    import scipy.sparse as sp

    X, y = _wide_problem(n=60, d=40)
    assert pws.in_span(X[:40], 1.0, None) is None and pws.in_span(X[:39], 1.0, (X[39:], y[39:])) is None
    assert pws.in_span(X[:39], 1.0, None) is not None
    assert pws.in_span(sp.csr_matrix(X[:10]), 1.0, None) is None


def test_wide_free_rows_that_depend_on_nearer_ones_go_to_a_bound():
    """The proof's independent free rows on wide data (d + 1 > free points), found in the rows' own coordinates:
    rows 10..14 are combinations of rows 0..9 and come later in the order of their margin residuals, so exactly
    they are sent to a bound, as the d-long Gram-Schmidt sends them."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 500))
    y = np.where(np.arange(30) % 2 == 0, 1.0, -1.0)
    for k in range(10, 15):  # [y_k x_k, y_k] = sum_j c_j [y_j x_j, y_j] over j < 10, with y_k = 1
        c = rng.standard_normal(10)
        c /= c @ y[:10]
        X[k], y[k] = c @ (y[:10, None] * X[:10]), 1.0
    decision = y * (1.0 + 1e-3 * np.arange(30))  # residuals growing with the index: the order is the index
    codes = np.full(30, FREE)
    new = reference._independent_free(reference.Gram(X, None), y, 1.0, np.full(30, 0.5), decision, codes)
    assert new is not None and set(np.flatnonzero(new != FREE)) == set(range(10, 15))
