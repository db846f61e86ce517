"""The soft primal by restricted QPs (solvers.algorithms.primal_working_set) against the full solve.

The full soft primal solved by Clarabel at tolerance 1e-9 is the reference: the loop must
end at its optimum to 1e-8 relative in each layer, with a sample much smaller than n so
that the loop really runs (several restricted QPs, each with fewer rows than n).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from experiments.datasets import load_dataset, overlapping
from formulations import soft_primal
from formulations.recovery import primal_objective
from solvers import api
from solvers.solution import ERROR
from solvers.algorithms import direct, primal_working_set as pws

EX55_SOFT_OPT = 34.48200362  # Exercise 5.5, C = 1 (tests/test_backends.py)


@pytest.fixture(scope="module")
def blobs():
    ds = overlapping(3000, d=5, seed=7)
    full = api.solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    return ds.X, ds.y, full


@pytest.mark.parametrize("layer,backend", [("direct", "piqp"), ("direct", "clarabel"), ("cvxpy", "piqp"),
                                           ("pyomo", "piqp"), ("pyomo", "clarabel")])
def test_loop_reaches_the_full_optimum(blobs, layer, backend):
    X, y, full = blobs
    sol = pws.solve(X, y, 1.0, layer=layer, backend=backend, sample=300)
    assert sol.status == "optimal"
    assert sol.iterations >= 1  # at least one restricted QP after the sample's
    assert sol.extras["working_set"] < len(y)  # never all the rows at once
    assert sol.objective == pytest.approx(full.objective, rel=1e-8)
    np.testing.assert_allclose(sol.w, full.w, atol=1e-5)
    assert sol.b == pytest.approx(full.b, abs=1e-5)
    # The assembled alpha (C inside, 0 outside, the QP's multipliers on W) passes the full checks.
    assert sol.checks["rel_duality_gap"] < 1e-7
    assert np.all((sol.alpha >= -1e-9) & (sol.alpha <= 1.0 + 1e-9))
    assert abs(float(sol.alpha @ y)) < 1e-6
    np.testing.assert_allclose(sol.w, (sol.alpha * y) @ X, atol=1e-5)  # w = sum alpha_i y_i x_i


def test_exercise_5_5_is_one_qp():
    """n <= sample: the sample is every point, so the first QP is the whole problem."""
    ds = load_dataset("exercise_5_5")
    sol = pws.solve(ds.X, ds.y, 1.0, layer="pyomo", backend="piqp")
    assert sol.status == "optimal" and sol.iterations == 0
    assert sol.objective == pytest.approx(EX55_SOFT_OPT, rel=1e-8)


def test_restricted_models_agree_on_a_split(blobs):
    """The three restricted QPs (Pyomo, cvxpy, matrices) of one split have the same optimum,
    and with the optimum's own split that optimum is the full problem's."""
    X, y, full = blobs
    margins = y * (X @ full.w + full.b)
    near = np.abs(margins - 1.0) < 0.05
    inside = ~near & (margins < 1.0)
    split = (X[inside], y[inside])
    values = [pws.SUBSOLVERS[layer](X[near], y[near], 1.0, split, "clarabel", {}, None)[0]
              for layer in pws.SUBSOLVERS]
    for v in values:
        np.testing.assert_allclose(v["w"], full.w, atol=1e-6)
        assert primal_objective(X, y, v["w"], v["b"], 1.0) == pytest.approx(full.objective, rel=1e-9)
    asm = direct.assemble("soft_primal", X[near], y[near], 1.0, inside=split)
    res = direct.solve_assembled(asm, "clarabel")
    assert res.objective == pytest.approx(full.objective, rel=1e-8)  # the constant C |L| is included


def test_inside_term_in_both_layers():
    """inside=(X_L, y_L) adds C sum_L (1 - y_i (w'x_i + b)) to the objective, nothing else."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(6, 2)), np.array([1.0, -1, 1, -1, 1, -1])
    X_L, y_L = rng.normal(size=(3, 2)), np.array([1.0, 1.0, -1.0])
    w, b, xi = np.array([0.3, -0.2]), 0.1, np.full(6, 0.5)
    expected = 0.5 * w @ w + 2.0 * (xi.sum() + (1 - y_L * (X_L @ w + b)).sum())
    m = soft_primal.build_pyomo(X, y, 2.0, inside=(X_L, y_L))
    for j in range(2):
        m.w[j].set_value(w[j])
    m.b.set_value(b)
    for i in range(6):
        m.xi[i].set_value(xi[i])
    import pyomo.environ as pyo

    assert pyo.value(m.obj) == pytest.approx(expected, rel=1e-12)
    c = soft_primal.build_cvxpy(X, y, 2.0, inside=(X_L, y_L))
    c.variables["w"].value, c.variables["b"].value, c.variables["xi"].value = w, b, xi
    assert c.problem.objective.value == pytest.approx(expected, rel=1e-12)


def test_stops_and_says_so_when_out_of_steps(blobs):
    X, y, full = blobs
    res = pws.decompose(X, y, 1.0, sample=100, delta=0.01, min_delta=0.01, max_outer=1)
    assert not res.converged and res.wrong_side > 0 and res.alpha is None
    assert "stopped after 1" in res.message
    assert res.objective == pytest.approx(primal_objective(X, y, res.w, res.b, 1.0), rel=1e-12)
    assert res.objective > full.objective * (1 + 1e-6)  # above the optimum: not called optimal
    sol = pws.solve(X, y, 1.0, sample=100)
    assert sol.status == "optimal"


def test_line_search_never_increases_the_objective(blobs):
    X, y, full = blobs
    w, b = full.w * 0.5, full.b
    margins = y * (X @ w + b)
    dw, db = np.ones(X.shape[1]) * 3.0, -1.0  # a poor direction: the search must stay near 0
    dm = y * (X @ dw + db)
    step = pws._line_search(margins, dm, w, dw, 1.0)
    assert 0.0 <= step <= 1.0
    assert primal_objective(X, y, w + step * dw, b + step * db, 1.0) <= primal_objective(X, y, w, b, 1.0) + 1e-9


@settings(max_examples=8, deadline=None)
@given(seed=hs.integers(0, 10_000), C=hs.sampled_from([0.1, 1.0, 10.0]))
def test_any_blobs_any_C(seed, C):
    """Whatever the data and C, the loop ends at the full problem's optimum (direct PIQP)."""
    ds = overlapping(800, d=3, seed=seed)
    full = direct.solve("soft_primal", ds.X, ds.y, backend="clarabel", C=C, profile="high")
    sol = pws.solve(ds.X, ds.y, C, layer="direct", backend="piqp", sample=100)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(full.objective, rel=1e-7)


def test_bad_input(blobs):
    X, y, _ = blobs
    with pytest.raises(ValueError, match="layer"):
        pws.decompose(X, y, 1.0, layer="gams")
    with pytest.raises(ValueError, match="finite C"):
        pws.decompose(X, y, math.inf)
    with pytest.raises(ValueError, match="min_delta"):
        pws.decompose(X, y, 1.0, delta=0.1, min_delta=0.2)
    Xn = X.copy()
    Xn[17, 2] = np.nan
    with pytest.raises(ValueError, match="17"):
        pws.solve(Xn, y, 1.0)
    with pytest.raises(ValueError, match="C"):
        pws.solve(X, y, -1.0)


def test_the_split_widens_its_band_until_the_restricted_qp_is_bounded():
    """b is free, and the points held at alpha = C add -C s b (s = sum of their y): the band must hold
    enough of the other class (-|W+| <= s <= |W-|) or the restricted QP is unbounded. Found on wide data at
    X x 1e-3, where Clarabel called the restricted QP dual infeasible."""
    y = np.array([1.0] * 6 + [-1.0] * 4)
    margins = np.array([1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 1.4, 1.6, 0.5, 3.0])
    wrong = np.zeros(10, dtype=bool)
    in_W, in_L, delta = pws._split(margins, y, 1.0, 0.05, wrong)
    s = y[in_L].sum()
    assert -np.count_nonzero(in_W & (y > 0)) <= s <= np.count_nonzero(in_W & (y < 0))
    assert delta > 0.05 and in_W[0] and not (in_W & in_L).any()
    # a band that is bounded already stays as it is
    in_W2, in_L2, delta2 = pws._split(margins, y, 1.0, 10.0, wrong)
    assert delta2 == 10.0 and in_W2.all() and not in_L2.any()
    # per-sample C: the held points weigh C_i, so a heavy negative point in W bounds what a count would not
    C = np.ones(10)
    C[[8, 9]] = 5.0
    in_W3, in_L3, delta3 = pws._split(margins, y, C, 0.05, wrong)
    s = C[in_L3] @ y[in_L3]
    assert -C[in_W3 & (y > 0)].sum() <= s <= C[in_W3 & (y < 0)].sum()
    assert delta3 < delta  # the weighted balance holds with a narrower band than the count's


def test_the_split_never_leaves_the_restricted_qp_without_rows():
    """Every point inside its margin and the classes balanced (s = 0): the band is widened until W holds a point,
    since a QP without rows leaves b free (SCS refused it: "m must be a positive integer")."""
    y = np.array([1.0, 1.0, -1.0, -1.0])
    margins = np.array([0.01, -0.02, 0.03, 0.0])
    in_W, in_L, delta = pws._split(margins, y, 1e-5, 0.05, np.zeros(4, dtype=bool))
    assert in_W.any() and delta > 0.05 and not (in_W & in_L).any()


@pytest.mark.parametrize("layer,backend", [("cvxpy", "scs"), ("cvxpy", "clarabel"), ("pyomo", "scs")])
def test_tiny_C_puts_every_point_inside_the_margin_and_still_ends_optimal(layer, backend):
    """moons at C = 1e-5: the smoothed start holds every point at alpha = C (found by a new user's run: cvxpy/SCS
    raised on the restricted QP without rows). The optimum is the full solve's, to the checks' tolerance."""
    from sklearn.datasets import make_moons

    X, y = make_moons(2000, noise=0.3, random_state=0)
    full = api.solve("soft_primal", X, y, layer="cvxpy", backend="clarabel", C=1e-5, profile="high", method="full")
    sol = api.solve("soft_primal", X, y, layer=layer, backend=backend, C=1e-5)
    assert sol.extras["method"] == "working_set"
    assert sol.status == "optimal", sol.message
    assert sol.objective == pytest.approx(full.objective, rel=1e-4)


def test_a_restricted_qp_without_a_point_ends_the_loop_as_an_error(monkeypatch):
    ds = overlapping(400, d=3, seed=2)
    X, y = ds.X, ds.y
    real = pws.SUBSOLVERS["direct"]
    calls = []

    def failing_after_the_first(Xs, ys, C, inside, backend, options, time_limit):
        calls.append(len(ys))
        if len(calls) > 1:
            return {}, "unbounded", ""
        return real(Xs, ys, C, inside, backend, options, time_limit)

    monkeypatch.setitem(pws.SUBSOLVERS, "direct", failing_after_the_first)
    sol = pws.solve(X, y, 1.0, backend="piqp", sample=100)
    assert sol.status == ERROR and "restricted QP 1 returned no point (unbounded" in sol.message
