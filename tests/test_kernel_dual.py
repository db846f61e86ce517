"""The kernel dual in both forms and both layers, explicit feature maps, Mercer.

References: scikit-learn's SVC (LIBSVM) at tol=1e-12, and the explicit-map soft primal,
which with a polynomial kernel is the kernel dual's own primal (strong duality).
"""

from __future__ import annotations


import numpy as np
import pytest
from sklearn.svm import SVC

from experiments.datasets import exercise_5_5, nonlinear
from experiments.coursework.kernel_duality import dual_decision, explicit_map_duality
from formulations import kernel_dual
from formulations.errors import IndefiniteKernelError
from formulations.feature_maps import feature_map
from formulations.kernels import Kernel, decision_function, factorize, gram, poly2_feature_map_notes
from formulations.quadratic_form import QuadraticForm
from solvers.algorithms.working_set.subproblems import SUBSOLVERS
from solvers.api import solve
from solvers.bridge.pyomo_standard_form import from_pyomo
from solvers.profiles import native_options
from tests.conftest import TOLERANCES, backend_params

RBF_5_5 = Kernel("rbf", gamma=1.0)


def _grid(lo=-2.0, hi=2.0, steps=21):
    g = np.linspace(lo, hi, steps)
    return np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)


def _svc_alpha(svc, n):
    alpha = np.zeros(n)
    alpha[svc.support_] = np.abs(svc.dual_coef_.ravel())
    return alpha


@pytest.fixture(scope="module")
def ex55():
    ds = exercise_5_5()
    svc = SVC(kernel="rbf", gamma=1.0, C=1.0, tol=1e-12).fit(ds.X, ds.y)
    dense = solve("kernel_dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, kernel=RBF_5_5,
                  kernel_form="dense", profile="high")
    assert dense.status == "optimal"
    return ds, svc, _svc_alpha(svc, ds.n), dense


@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_a_block_model_restricts_the_kernel_dual_to_its_points(layer, ex55):
    """build_block_* (the working set's subproblem): over every point with p = -1 and rhs = 0 it is the kernel
    dual itself, and over half the points with the others fixed at the optimum (p from their gradient, rhs
    their balance) its optimum is the optimum's alpha_B (Q_BB is nonsingular: 40 distinct points, rbf)."""
    ds, _, _, dense = ex55
    y, C = ds.y.astype(float), 1.0
    Q = kernel_dual.dual_matrix(gram(RBF_5_5, ds.X), y)
    build = kernel_dual.build_block_cvxpy if layer == "cvxpy" else kernel_dual.build_block_pyomo
    model = build(Q, -np.ones(ds.n), y, 0.0, C)
    names = set(model.variables) | set(model.constraints) if layer == "cvxpy" else \
        {c.local_name for c in model.component_objects()}
    assert {"alpha", "balance"} <= names
    opts = native_options("clarabel", "high", None)
    whole, _ = SUBSOLVERS[layer](Q, -np.ones(ds.n), y, 0.0, C, "clarabel", opts)
    np.testing.assert_allclose(whole, dense.alpha, rtol=0, atol=1e-6 * C)
    alpha = np.asarray(dense.alpha, dtype=float)
    B, N = np.arange(0, ds.n, 2), np.arange(1, ds.n, 2)
    g_B = Q[B] @ alpha - 1.0
    p = g_B - Q[np.ix_(B, B)] @ alpha[B]
    block, _ = SUBSOLVERS[layer](Q[np.ix_(B, B)], p, y[B], -float(y[N] @ alpha[N]), C, "clarabel", opts)
    np.testing.assert_allclose(block, alpha[B], rtol=0, atol=1e-6 * C)


# --------------------------------------------------------------------------- Exercise 5.5, factor form


@pytest.mark.parametrize("layer,backend", backend_params())
def test_exercise_5_5_factor_form_matches_libsvm_and_dense(layer, backend, ex55):
    """K = L L' (full rank 40), lifted v = L'(y*alpha): the same alpha*, b*, surface and optimum."""
    ds, svc, alpha_ref, dense = ex55
    sol = solve("kernel_dual", ds.X, ds.y, layer=layer, backend=backend, C=1.0, kernel=RBF_5_5,
                kernel_form="factor", profile="high")
    assert sol.status == "optimal", sol.checks.get("verdict") or sol.message
    assert sol.extras["kernel_form"] == "factor"
    assert sol.extras["factor_rank"] == 40  # the Gaussian Gram matrix of 40 distinct points is nonsingular
    assert sol.extras["factor_residual"] < 1e-12
    np.testing.assert_allclose(sol.alpha, alpha_ref, atol=1e-4)
    assert sol.b == pytest.approx(svc.intercept_[0], abs=1e-4)
    grid = _grid()
    sv = sol.alpha > 1e-8
    values = decision_function(RBF_5_5, ds.X[sv], (sol.alpha * ds.y)[sv], sol.b, grid)
    np.testing.assert_allclose(values, svc.decision_function(grid), atol=1e-4)
    # factored and dense forms: the same optimum (the project's recomputed dual objective)
    assert sol.checks["dual_objective"] == pytest.approx(dense.checks["dual_objective"],
                                                         rel=TOLERANCES[backend]["objective"])


def test_exercise_5_5_numbers(ex55):
    """The dense optimum of Exercise 5.5 itself, against LIBSVM's dual objective."""
    ds, svc, alpha_ref, dense = ex55
    K = gram(RBF_5_5, ds.X)
    u = alpha_ref * ds.y
    libsvm_dual = alpha_ref.sum() - 0.5 * u @ K @ u
    assert dense.checks["dual_objective"] == pytest.approx(libsvm_dual, rel=1e-8)
    assert dense.checks["dual_objective"] == pytest.approx(8.8702465592, rel=1e-9)
    assert dense.b == pytest.approx(-0.6466796, abs=1e-6)
    assert dense.checks["n_sv"] == len(svc.support_) == 22


# --------------------------------------------------------------------------- decision function on SVs only


def test_decision_function_from_support_vectors_only_equals_libsvm(ex55):
    ds, svc, _, dense = ex55
    sv = np.flatnonzero(dense.alpha > 1e-6)
    np.testing.assert_array_equal(sv, np.sort(svc.support_))
    coef = dense.alpha * ds.y
    X_new = np.random.default_rng(1).uniform(-2.5, 2.5, size=(200, 2))
    on_sv = decision_function(RBF_5_5, ds.X[sv], coef[sv], dense.b, X_new)
    np.testing.assert_allclose(on_sv, svc.decision_function(X_new), atol=1e-4)
    # dropping the non-support vectors changes nothing beyond their tiny interior-point alphas
    on_all = decision_function(RBF_5_5, ds.X, coef, dense.b, X_new)
    np.testing.assert_allclose(on_sv, on_all, atol=1e-6)
    np.testing.assert_array_equal(np.sign(on_sv), svc.predict(X_new))


# --------------------------------------------------------------------------- poly: explicit map vs kernel dual


@pytest.fixture(scope="module")
def moons():
    ds = nonlinear(60, seed=1)
    return ds, np.random.default_rng(2).uniform(-1.5, 2.5, size=(100, 2))


@pytest.mark.parametrize("degree", [2, 3])
def test_poly_explicit_map_primal_equals_kernel_dual_and_libsvm(degree, moons):
    ds, X_new = moons
    kernel = Kernel("poly", gamma=0.5, degree=degree, coef0=1.0)
    row = explicit_map_duality(ds.X, ds.y, kernel, 1.0, dataset=ds.name, X_new=X_new)
    assert row["primal_status"] == row["dual_status"] == "optimal"
    assert row["n_features"] == {2: 6, 3: 10}[degree]  # C(d + Q, Q) with d = 2
    assert row["rel_gap"] < 1e-7  # P* (soft primal on Phi(X)) = D* (kernel dual)
    assert row["b_diff"] < 1e-6
    assert row["max_decision_diff"] < 1e-6
    assert row["max_decision_diff_new"] < 1e-6

    svc = SVC(kernel="poly", degree=degree, gamma=0.5, coef0=1.0, C=1.0, tol=1e-12).fit(ds.X, ds.y)
    dual = solve("kernel_dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, kernel=kernel, profile="high")
    np.testing.assert_allclose(dual.alpha, _svc_alpha(svc, ds.n), atol=1e-5)
    assert dual.b == pytest.approx(svc.intercept_[0], abs=1e-5)
    assert dual.checks["dual_objective"] == pytest.approx(row["D_star"], rel=1e-9)
    np.testing.assert_allclose(dual_decision(dual, ds.X, ds.y, kernel, X_new), svc.decision_function(X_new),
                               atol=1e-5)


def test_notes_degree_2_map_gives_the_same_primal(moons):
    """Eq. 9.26's map (all ordered pairs, 1 + d + d^2 columns) and the compact map: one optimum."""
    ds, _ = moons
    kernel = Kernel("poly", gamma=0.5, degree=2, coef0=1.0)
    compact = solve("soft_primal", feature_map(kernel, ds.X), ds.y, layer="pyomo", backend="clarabel", C=1.0,
                    profile="high")
    notes = solve("soft_primal", poly2_feature_map_notes(ds.X, gamma=0.5), ds.y, layer="pyomo",
                  backend="clarabel", C=1.0, profile="high")
    assert compact.status == notes.status == "optimal"
    assert notes.objective == pytest.approx(compact.objective, rel=1e-8)
    assert notes.b == pytest.approx(compact.b, abs=1e-6)
    np.testing.assert_allclose(notes.decision, compact.decision, atol=1e-6)


def test_feature_map_refuses_kernels_without_a_finite_map():
    with pytest.raises(ValueError, match="no finite explicit feature map"):
        feature_map(Kernel("rbf", gamma=1.0), np.zeros((3, 2)))


# --------------------------------------------------------------------------- precomputed


@pytest.mark.parametrize("layer,backend", [("cvxpy", "clarabel"), ("pyomo", "highs")])
def test_precomputed_gram_gives_the_same_solution(layer, backend, moons):
    ds, X_new = moons
    kernel = Kernel("poly", gamma=0.5, degree=3, coef0=1.0)
    from_kernel = solve("kernel_dual", ds.X, ds.y, layer=layer, backend=backend, C=1.0, kernel=kernel,
                        profile="high")
    K = gram(kernel, ds.X)
    from_gram = solve("kernel_dual", None, ds.y, layer=layer, backend=backend, C=1.0, K=K, profile="high")
    assert from_kernel.status == from_gram.status == "optimal"
    assert from_gram.extras["kernel"] == "precomputed"
    assert from_gram.objective == pytest.approx(from_kernel.objective, rel=1e-12)
    np.testing.assert_allclose(from_gram.alpha, from_kernel.alpha, atol=1e-12)
    assert from_gram.b == pytest.approx(from_kernel.b, abs=1e-12)
    # new points: kernel values against the support vectors, as SVC(kernel="precomputed") takes them
    sv = from_gram.alpha > 1e-8
    coef = (from_gram.alpha * ds.y)[sv]
    via_values = decision_function(Kernel("precomputed"), None, coef, from_gram.b, gram(kernel, X_new, ds.X[sv]))
    via_kernel = decision_function(kernel, ds.X[sv], coef, from_kernel.b, X_new)
    np.testing.assert_allclose(via_values, via_kernel, atol=1e-12)


# --------------------------------------------------------------------------- low-rank factor


def test_low_rank_factor_effect_is_measured_and_consistent(ex55):
    """A rank-r pivoted-Cholesky factor leaves E = K - L L' PSD, so D* <= D_r* <= D* + 1/2 u_r' E u_r.

    The table is printed (pytest -s) and each of its numbers is checked against the others.
    """
    from experiments.bench.kernel_forms import low_rank_effect

    ds, _, _, _ = ex55
    table = low_rank_effect(ds.X, ds.y, RBF_5_5, 1.0, ranks=[5, 10, 20, 40])
    print("\n" + table.to_string())
    K = gram(RBF_5_5, ds.X)
    assert list(table["rank"]) == [5, 10, 20, 40]
    for row in table.itertuples():
        fac = factorize(K, max_rank=row.rank)
        assert row.residual_fro == pytest.approx(np.linalg.norm(K - fac.L @ fac.L.T) / np.linalg.norm(K), rel=1e-9)
        assert row.status == "optimal"
        slack = 1e-7 * max(1.0, abs(row.D_full))
        assert row.D_rank >= row.D_full - slack  # dropping a PSD part can only raise the optimum
        assert row.D_rank_minus_full <= row.bound + slack
        assert row.D_true_at_rank_alpha <= row.D_full + slack  # alpha_r is feasible for the true dual
    # the residual and the optimum's error shrink as the rank grows; full rank recovers D*
    assert np.all(np.diff(table["residual_fro"]) < 0)
    assert np.all(np.diff(table["D_rank"]) <= 1e-7)
    assert table["D_rank_minus_full"].iloc[0] > 1e-3  # rank 5 is visibly wrong: the effect is not hidden
    assert abs(table["D_rank_minus_full"].iloc[-1]) < 1e-6


def test_time_forms_reads_the_same_optimum_from_both_layers_and_forms():
    """time_forms reads alpha* back from each layer's model: dense and full-rank factor, Pyomo and cvxpy agree."""
    from experiments.bench.kernel_forms import time_forms

    table = time_forms([40], [1.0], solvers=(("cvxpy", "clarabel"), ("pyomo", "clarabel")), profile="high")
    assert len(table) == 4 and set(table["form"]) == {"dense", "factor"} and set(table["layer"]) == {"cvxpy", "pyomo"}
    assert (table["status"] == "optimal").all()
    objectives = table["objective"].to_numpy()
    assert np.all(np.isfinite(objectives))
    assert np.max(np.abs(objectives - objectives[0])) <= 1e-6 * abs(objectives[0])


# --------------------------------------------------------------------------- form choice


def test_choose_form_takes_a_small_factor_and_records_it():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    low = gram(Kernel("poly", gamma=1.0, degree=2, coef0=1.0), X)  # rank C(3 + 2, 2) = 10
    choice = kernel_dual.choose_form(low)
    assert choice.form == "factor" and choice.rank == 10 and choice.residual < 1e-10
    full = gram(Kernel("rbf", gamma=5.0), X)
    assert kernel_dual.choose_form(full).form == "dense"
    sol = solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=1.0,
                kernel=Kernel("poly", gamma=1.0, degree=2, coef0=1.0), kernel_form="auto")
    assert sol.extras["kernel_form"] == "factor" and sol.extras["factor_rank"] == 10
    assert "rank 10" in sol.extras["kernel_form_reason"]
    dense = solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=1.0,
                  kernel=Kernel("poly", gamma=1.0, degree=2, coef0=1.0), kernel_form="dense")
    assert sol.status == dense.status == "optimal"
    assert sol.checks["dual_objective"] == pytest.approx(dense.checks["dual_objective"], rel=1e-6)


# --------------------------------------------------------------------------- the Pyomo quadratic form


def test_quadratic_form_is_read_as_its_matrix_and_walks_like_an_expression():
    import pyomo.environ as pyo

    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    Q = A @ A.T
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(6), bounds=(-1, 1))
    m.c = pyo.Constraint(expr=sum(m.x.values()) == 1)
    m.q = QuadraticForm(Q, m.x)
    m.obj = pyo.Objective(expr=3.0 - 0.25 * m.q + m.x[0], sense=pyo.maximize)
    fast = from_pyomo(m)
    # the ordinary walk of the same expression (Pyomo's generate_standard_repn) gives the same QP
    x0 = rng.uniform(-1, 1, 6)
    for v, val in zip(m.x.values(), x0):
        v.set_value(float(val))
    assert pyo.value(m.q) == pytest.approx(x0 @ Q @ x0, rel=1e-12)
    from pyomo.repn.standard_repn import generate_standard_repn

    repn = generate_standard_repn(m.obj.expr, quadratic=True)
    P_walk = np.zeros((6, 6))
    col = {id(v): k for k, v in enumerate(fast.columns)}
    for (v1, v2), c in zip(repn.quadratic_vars, repn.quadratic_coefs):
        i, j = col[id(v1)], col[id(v2)]
        P_walk[i, j] += c
        P_walk[j, i] += c
    # fast.P is the minimisation form of a maximisation: -(objective's Hessian)
    np.testing.assert_allclose(fast.P.toarray(), -P_walk, atol=1e-12)
    order = [col[id(v)] for v in m.x.values()]
    np.testing.assert_allclose(-P_walk[np.ix_(order, order)], 0.5 * Q, atol=1e-12)  # -(-0.25 * 2 Q)
    at_x0 = np.array([v.value for v in fast.columns])
    assert fast.objective(at_x0) == pytest.approx(pyo.value(m.obj), rel=1e-12)
    # a replaced form is no longer read as its matrix
    m.q.set_value(m.x[1] ** 2)
    assert m.q.matrix is None
    replaced = from_pyomo(m)
    assert replaced.P.nnz == 1


# --------------------------------------------------------------------------- Mercer


def test_indefinite_sigmoid_kernel_is_refused_with_its_eigenvalue():
    X = np.random.default_rng(0).standard_normal((40, 2))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    kernel = Kernel("sigmoid", gamma=1, coef0=-1)
    with pytest.raises(IndefiniteKernelError, match=r"sigmoid\(gamma=1,coef0=-1\).*-21\.8"):
        solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=1.0, kernel=kernel)
    sol = solve("kernel_dual", X, y, layer="pyomo", backend="ipopt", C=1.0, kernel=kernel, allow_indefinite=True)
    assert sol.extras["indefinite_kernel"] is True
    assert sol.extras["psd"] is False
    assert sol.extras["min_eigenvalue"] == pytest.approx(-21.8273, abs=1e-3)
    assert sol.message.startswith("INDEFINITE KERNEL (allow_indefinite=True)")
    assert "-21.8" in sol.message
    # the checks hold at a KKT point of a non-convex dual, which is no proof of the optimum: never `optimal`
    assert sol.status == "optimal_inaccurate" and sol.extras["kkt_verified"] is True


def test_random_symmetric_indefinite_matrix_is_refused():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((30, 30))
    K = 0.5 * (A + A.T)
    lam_min = np.linalg.eigvalsh(K)[0]
    assert lam_min < -1
    y = np.where(rng.standard_normal(30) > 0, 1, -1)
    with pytest.raises(IndefiniteKernelError, match="precomputed") as refused:
        solve("kernel_dual", None, y, layer="pyomo", backend="clarabel", C=1.0, K=K)
    assert f"most negative eigenvalue {lam_min:.6g}" in str(refused.value)
    sol = solve("kernel_dual", None, y, layer="cvxpy", backend="clarabel", C=1.0, K=K, allow_indefinite=True)
    assert sol.extras["indefinite_kernel"] is True
    assert sol.extras["min_eigenvalue"] == pytest.approx(lam_min, rel=1e-9)
    assert "INDEFINITE KERNEL" in sol.message


# --------------------------------------------------------------------------- n = 3000


@pytest.mark.slow
def test_kernel_dual_at_n_3000_dense_in_both_layers():
    """Gaussian kernel dual on 3,000 points, dense Q in both layers (Pyomo through the bridge).

    Measured here (2 cores, loaded): cvxpy/clarabel ~26 s, pyomo/clarabel ~50 s end to end.
    """
    ds = nonlinear(3000, seed=0)
    kernel = Kernel("rbf", gamma=1.0)
    sols = {layer: solve("kernel_dual", ds.X, ds.y, layer=layer, backend="clarabel", C=1.0, kernel=kernel,
                         kernel_form="dense", profile="high", method="full") for layer in ("cvxpy", "pyomo")}
    for layer, sol in sols.items():
        assert sol.status == "optimal", (layer, sol.checks.get("verdict"), sol.message)
        assert sol.extras["kernel_form"] == "dense"
    assert sols["pyomo"].objective == pytest.approx(sols["cvxpy"].objective, rel=1e-6)
    assert sols["pyomo"].b == pytest.approx(sols["cvxpy"].b, abs=1e-5)


# --------------------------------------------------------------------------- figure


def test_exercise_5_5_surface_figure(tmp_path, ex55):
    from experiments.coursework.kernel_figures import exercise_5_5_figure

    ds, svc, _, dense = ex55
    info = exercise_5_5_figure(tmp_path / "ex55.png")
    assert info["path"].stat().st_size > 10_000
    assert info["status"] == "optimal"
    assert info["n_sv"] == len(svc.support_) == 22
    assert info["b"] == pytest.approx(dense.b, abs=1e-6)


def test_compare_figure_cells_count_the_support_vectors(tmp_path):
    """svmdemo_compare's grid: one optimal cell per (C, gamma), its n_sv that of the solve (LIBSVM's on this data)."""
    from experiments.coursework.kernel_figures import compare_figure
    from experiments.datasets import gendata

    ds = gendata(15, 15)
    cells = compare_figure(tmp_path / "grid.png", ds.X, ds.y, Cs=(1.0, 10.0), gammas=(0.5,), profile="high")
    assert (tmp_path / "grid.png").stat().st_size > 10_000
    assert [(c["C"], c["gamma"]) for c in cells] == [(1.0, 0.5), (10.0, 0.5)]
    for cell in cells:
        assert cell["status"] == "optimal"
        svc = SVC(kernel="rbf", gamma=cell["gamma"], C=cell["C"], tol=1e-10).fit(ds.X, ds.y)
        assert cell["n_sv"] == len(svc.support_)


@pytest.mark.parametrize("method", ["full", "working_set"])
def test_the_linear_kernel_under_standardize_reports_w_and_b_in_the_datas_units(method):
    """The kernel dual with the linear kernel is the linear dual: with standardize=True its w*, b* come back in the
    data's units as the dual's do (its b was left in the standardized units, beside the other formulations' rows
    of the runner's --standardize table: 0.0443 against 20.41 on raw breast cancer)."""
    import warnings

    from sklearn.datasets import load_breast_cancer

    from solvers.api import solve

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200], y[:200]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the raw features' scaling warning
        dual = solve("dual", X, y, layer="cvxpy", backend="clarabel", C=1.0, standardize=True, profile="high")
        kern = solve("kernel_dual", X, y, layer="cvxpy", backend="clarabel", C=1.0, standardize=True, profile="high",
                     kernel=Kernel("linear"), method=method)
    assert dual.status == kern.status == "optimal"
    f_dual, f_kern = X @ dual.w + dual.b, X @ kern.w + kern.b
    assert np.max(np.abs(f_kern - f_dual)) <= 1e-5 * np.max(np.abs(f_dual))
    assert kern.b == pytest.approx(dual.b, rel=1e-5) and kern.extras["standardized"]
