"""Warm starts along a C path: solvers.algorithms.working_set's alpha0 and experiments.c_path."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from experiments.bench import c_path
from experiments.datasets import overlapping
from formulations.kernels import Kernel, gram
from solvers.algorithms import working_set as ws
from solvers.algorithms.working_set.optimality import gradient

CS = (0.1, 0.3, 1.0)


@pytest.fixture(scope="module")
def kernel_data():
    ds = overlapping(200, d=10, seed=0)
    return gram(Kernel("rbf", gamma=0.1), ds.X), ds.y.astype(float)


@pytest.fixture(scope="module")
def cold_optima(kernel_data):
    K, y = kernel_data
    return {C: ws.decompose(K, y, C, backend="piqp", q=50) for C in CS}


def test_cold_unchanged_by_default_arguments(kernel_data, cold_optima):
    """alpha0=None, profile="high" is the old cold start: the same point to the last bit."""
    K, y = kernel_data
    again = ws.decompose(K, y, 1.0, backend="piqp", q=50, alpha0=None, profile="high")
    np.testing.assert_array_equal(again.alpha, cold_optima[1.0].alpha)
    assert again.outer_iterations == cold_optima[1.0].outer_iterations


@pytest.mark.parametrize("layer", ["direct", "pyomo"])
def test_warm_path_matches_cold(kernel_data, cold_optima, layer):
    K, y = kernel_data
    prev = None
    for C in CS:
        alpha0 = None if prev is None else ws.scaled_warm_start(prev[0], prev[1], C)
        warm = ws.decompose(K, y, C, backend="piqp", layer=layer, q=50, alpha0=alpha0)
        cold = cold_optima[C] if layer == "direct" else ws.decompose(K, y, C, backend="piqp", layer=layer, q=50)
        assert warm.converged and cold.converged
        assert warm.objective == pytest.approx(cold.objective, rel=1e-6)
        assert ws.kkt_violation(K, y, warm.alpha, C) <= 1e-5
        assert abs(y @ warm.alpha) <= 1e-9 * max(1.0, warm.alpha.sum())
        assert warm.alpha.min() >= 0.0 and warm.alpha.max() <= C
        prev = (warm.alpha, C)


def test_warm_start_at_the_optimum_stops_at_once(kernel_data, cold_optima):
    K, y = kernel_data
    for C in CS:
        res = ws.decompose(K, y, C, backend="piqp", q=50, alpha0=cold_optima[C].alpha)
        assert res.converged
        assert res.outer_iterations <= 2  # the first KKT check passes, or one step fixes the snap
        assert res.objective == pytest.approx(cold_optima[C].objective, rel=1e-9)


def test_gradient_of_warm_start_is_Q_alpha_minus_one(kernel_data, cold_optima):
    K, y = kernel_data
    alpha = cold_optima[0.3].alpha
    expected = y * (K @ (y * alpha)) - 1.0
    np.testing.assert_allclose(gradient(K, y, alpha), expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(gradient(K, y, np.zeros(len(y))), -np.ones(len(y)))


def test_scaled_warm_start_is_feasible(cold_optima, kernel_data):
    _, y = kernel_data
    alpha = ws.scaled_warm_start(cold_optima[0.3].alpha, 0.3, 1.0)
    assert alpha.max() <= 1.0 and alpha.min() >= 0.0
    np.testing.assert_allclose(alpha, cold_optima[0.3].alpha / 0.3, rtol=1e-15)
    ws.check_alpha0(alpha, y, 1.0)  # no error
    with pytest.raises(ValueError, match="C_prev, C_new > 0"):
        ws.scaled_warm_start(alpha, 0.0, 1.0)


@pytest.mark.parametrize("make, message", [
    (lambda y: np.zeros(len(y) - 1), "shape"),
    (lambda y: np.full(len(y), np.nan), "non-finite"),
    (lambda y: np.where(y > 0, -0.1, 0.1), "min alpha0_i"),
    (lambda y: np.full(len(y), 2.0), "> C"),
    (lambda y: np.where(np.arange(len(y)) == 0, 0.5, 0.0), "y'alpha0"),
    (lambda y: ["a"] * len(y), "array of numbers"),
])
def test_alpha0_validation(kernel_data, make, message):
    K, y = kernel_data
    with pytest.raises(ValueError, match=message):
        ws.decompose(K, y, 1.0, backend="piqp", q=50, alpha0=make(y))


def test_solve_takes_alpha0_and_profile(kernel_data, cold_optima):
    K, y = kernel_data
    sol = ws.solve(K, y, 1.0, backend="piqp", q=50, alpha0=cold_optima[1.0].alpha, validate=False)
    assert sol.status == "optimal"
    assert sol.iterations <= 2 and sol.extras["warm_start"] is True
    assert sol.objective == pytest.approx(cold_optima[1.0].objective, rel=1e-9)
    with pytest.raises(ValueError, match="unknown profile"):
        ws.solve(K, y, 1.0, backend="piqp", q=50, profile="nope", validate=False)


def test_cvxpy_parameter_path_matches_cold():
    ds = overlapping(300, d=20, seed=0)
    for formulation in ("soft_primal", "dual"):
        df = pd.DataFrame(c_path.cvxpy_path(ds.X, ds.y, (0.1, 1.0, 10.0), formulation, "piqp"))
        assert len(df) == 9 and set(df["mode"]) == {"cold", "reuse", "warm"}
        assert (df["status"] == "optimal").all()
        wide = df.pivot(index="C", columns="mode", values="objective")
        np.testing.assert_allclose(wide["warm"], wide["cold"], rtol=1e-6)
        np.testing.assert_allclose(wide["reuse"], wide["cold"], rtol=1e-6)


def test_parameter_build_equals_float_build():
    """The soft primal and the lifted dual with C a cp.Parameter give the float model's optimum."""
    import cvxpy as cp

    from formulations import dual, soft_primal

    ds = overlapping(120, d=3, seed=1)
    for module in (soft_primal, dual):
        C = cp.Parameter(nonneg=True, value=0.7)
        m_param, m_float = module.build_cvxpy(ds.X, ds.y, C), module.build_cvxpy(ds.X, ds.y, 0.7)
        assert m_param.problem.is_dpp()
        v_param = m_param.problem.solve(solver="CLARABEL")
        v_float = m_float.problem.solve(solver="CLARABEL")
        assert v_param == pytest.approx(v_float, rel=1e-7)


@pytest.mark.slow  # a whole command line run: with the heavier tests
def test_cli_quick_writes_three_files(tmp_path):
    assert c_path.main(["--quick", "--n", "60", "--n-linear", "80", "--out", str(tmp_path), "--no-progress"]) == 0
    for name in ("c_path.csv", "c_path.md", "c_path.png"):
        assert (tmp_path / name).stat().st_size > 0
    df = pd.read_csv(tmp_path / "c_path.csv")
    n_paths = len(c_path.KERNEL_PATHS) + len(c_path.LINEAR_PATHS)
    assert df["path"].nunique() == n_paths
    assert len(df) == len(c_path.KERNEL_PATHS) * 3 * 2 + len(c_path.LINEAR_PATHS) * 3 * 3
    exact = df[df["backend"] == "piqp"]  # the interior-point paths reach the same optimum warm and cold
    assert exact["rel_obj_diff"].max() <= 1e-6
    kernel = df[df["problem"] == "kernel"]
    assert kernel["kkt_violation"].max() <= 1e-5
    text = (tmp_path / "c_path.md").read_text()
    assert "warm/cold" in text and "compile_share" in text
    assert math.isfinite(c_path.summary(df)["warm/cold"].max())


def test_cli_rejects_bad_n(tmp_path):
    with pytest.raises(SystemExit):
        c_path.main(["--quick", "--n", "3", "--out", str(tmp_path)])
