"""Recovering b* from alpha*: free support vectors, and the interval rule when there are none."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from experiments.datasets import overlapping
from formulations.recovery import (
    AT_BOUND,
    B_FREE_SV,
    B_INTERVAL,
    FREE,
    ZERO,
    classify,
    hinge_argmin,
    kkt_interval,
    primal_objective,
    recover_bias,
    weights_from_alpha,
)
from solvers.api import solve


def test_interval_rule_on_a_problem_with_no_free_support_vector():
    """With C tiny every point is inside its margin: every alpha_i = C, none free.

    b* is then not pinned by an equation; the interval rule of 000 section 4 must give
    a b whose primal objective equals the primal optimum."""
    ds = overlapping(40, d=2, seed=1)
    C = 1e-3
    dual = solve("dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=C, profile="high")
    primal = solve("soft_primal", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=C, profile="high")
    assert dual.status == primal.status == "optimal"
    assert dual.b_rule == B_INTERVAL
    assert dual.extras["n_free_sv"] == 0
    np.testing.assert_allclose(dual.alpha, C, rtol=1e-6)  # all at the bound
    assert dual.extras["b_lower"] <= dual.b <= dual.extras["b_upper"]
    assert primal_objective(ds.X, ds.y, dual.w, dual.b, C) == pytest.approx(primal.objective, rel=1e-7)
    assert dual.checks["rel_duality_gap"] < 1e-7


def test_interval_rule_branches_by_hand():
    """Four points, none free (alpha in {0, C}), decision values without b: g.

    Each point bounds b (000 section 4): alpha_i = 0 needs y_i (g_i + b) >= 1,
    alpha_i = C needs y_i (g_i + b) <= 1."""
    y = np.array([1.0, 1.0, -1.0, -1.0])
    alpha = np.array([0.0, 1.0, 1.0, 0.0])
    g = np.array([3.0, -2.0, 0.5, -4.0])
    # bounds: b >= 1 - 3 = -2 (pt 0), b <= 1 + 2 = 3 (pt 1), b >= -1 - 0.5 = -1.5 (pt 2), b <= -1 + 4 = 3 (pt 3)
    est = recover_bias(alpha, y, g, C=1.0)
    assert est.rule == B_INTERVAL
    assert est.lower == pytest.approx(-1.5) and est.upper == pytest.approx(3.0)
    assert est.b == pytest.approx(0.75)  # every b of the interval is optimal: the midpoint (LIBSVM)
    # One more point at C (y = +1, then y = -1) that bounds b on neither side: still the midpoint, never an
    # end picked by the sign of sum y_i C_i over the bound points (which the balance makes 0 at an optimum)
    for label, g_new in ((1.0, -10.0), (-1.0, 10.0)):
        more = recover_bias(np.append(alpha, 1.0), np.append(y, label), np.append(g, g_new), C=1.0)
        assert (more.lower, more.upper) == (pytest.approx(-1.5), pytest.approx(3.0))
        assert more.b == pytest.approx(0.75)


def test_interval_rule_is_the_same_for_per_sample_C():
    """All C_i equal to C (weights 1.0) give the unweighted b; unequal C_i that balance give the midpoint too
    (the lower end was taken before, as the sum of y_i C_i over the bound points was -1e-17, not 0)."""
    y = np.array([1.0, 1.0, -1.0, -1.0])
    alpha = np.array([0.0, 1.0, 1.0, 0.0])
    g = np.array([3.0, -2.0, 0.5, -4.0])
    one_C = recover_bias(alpha, y, g, C=1.0)
    assert recover_bias(alpha, y, g, C=np.ones(4)).b == one_C.b == pytest.approx(0.75)
    C = np.array([0.3, 0.1 + 0.2, 0.3, 0.7])  # 0.1 + 0.2 - 0.3 = 5.6e-17: balanced but for rounding
    est = recover_bias(np.array([0.0, C[1], 0.3, 0.0]), y, g, C=C)
    assert est.b == pytest.approx(0.75)


def test_free_support_vectors_average():
    """Two free points on their margins (y f = 1 at b = 0.3) and one far outside with alpha = 0."""
    y = np.array([1.0, -1.0, 1.0])
    alpha = np.array([0.5, 0.5, 0.0])
    g = np.array([0.7 + 1e-3, -1.3 - 1e-3, 5.0])  # the two margins disagree by 2e-3 (a solver's rounding)
    est = recover_bias(alpha, y, g, C=1.0)
    assert est.rule == B_FREE_SV and est.n_free == 2
    assert est.b == pytest.approx(np.mean([1 - g[0], -1 - g[1]]))


def test_hard_margin_alpha_has_no_upper_bound():
    y = np.array([1.0, -1.0])
    est = recover_bias(np.array([5.0, 5.0]), y, np.array([2.0, -1.0]), C=math.inf)
    assert est.rule == B_FREE_SV and est.b == pytest.approx(np.mean([1 - 2.0, -1 + 1.0]))


def test_weights_from_alpha():
    X = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(weights_from_alpha(X, np.array([1.0, -1.0]), np.array([2.0, 1.0])), [-1.0, 5.0])


def test_multiplier_left_just_off_its_bound_barely_moves_b():
    """An interior-point zero (alpha = 1e-6) whose point is far from the margin is at zero, not free."""
    y = np.array([1.0, -1.0, 1.0])
    alpha = np.array([0.5, 0.5, 1e-6])
    g = np.array([0.7, -1.3, 5.0])  # point 2 is far outside: y - g = -4
    est = recover_bias(alpha, y, g, C=1.0)
    assert est.n_free == 2
    assert est.b == pytest.approx(0.3, abs=1e-12)


def test_alpha_at_a_tiny_C_is_at_the_bound_and_b_is_the_interval_midpoint():
    """C = 1e-5, every alpha at C (a solver leaves them 1e-6 of C off): no free point, midpoint rule."""
    y = np.array([1.0, 1.0, -1.0, -1.0])
    C = 1e-5
    alpha = C * np.array([1 - 1e-6, 1 - 3e-6, 1 - 2e-6, 1 - 1e-6])
    g = np.array([1e-6, -2e-6, 3e-6, -1e-6])  # every point inside its margin
    est = recover_bias(alpha, y, g, C)
    assert est.rule == B_INTERVAL and est.n_free == 0
    assert est.lower == pytest.approx(-1 + 1e-6, abs=1e-12) and est.upper == pytest.approx(1 - 1e-6, abs=1e-12)
    assert est.b == pytest.approx(0.5 * (est.lower + est.upper))


def test_small_alphas_at_a_huge_C_are_support_vectors():
    """C = 1e10 with alpha ~ 1: relative to max alpha, not to C (the estimator's n_support_ was [0, 0])."""
    y = np.array([1.0, -1.0, 1.0])
    alpha = np.array([5.0, 5.0, 0.0])
    f = np.array([1.0, -1.0, 3.0])
    codes = classify(alpha, y, f, 1e10)
    assert codes.tolist() == [FREE, FREE, ZERO]


def test_kernel_dual_bias_from_interior_point_solvers_is_verified():
    """Measured before the weighting: Clarabel's b* on gendata(15, 15), rbf gamma 1, was 1e-4 off."""
    from experiments.datasets import gendata
    from formulations.kernels import Kernel

    ds = gendata(15, 15)
    sol = solve("kernel_dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=1.0, kernel=Kernel("rbf", gamma=1.0))
    assert sol.status == "optimal"
    assert sol.b == pytest.approx(sol.b_multiplier, abs=1e-6)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(n=hs.integers(4, 30), seed=hs.integers(0, 2**31 - 1), weight=hs.sampled_from([1.0, 0.01, 0.1 + 0.2, 37.5]),
       data=hs.data())
def test_interval_rule_same_for_equal_per_sample_C_and_permutations(n, seed, weight, data):
    """Every alpha at 0 or C (balanced by construction), g drawn: b is the midpoint of the interval, the same for one
    C and for C_i all equal to it (any weight: sums of 0.1 + 0.2 round), and the same for the points permuted."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    k = data.draw(hs.integers(1, n // 2))  # k points of each class at their bound: sum_i alpha_i y_i = 0
    alpha = np.zeros(n)
    alpha[np.flatnonzero(y > 0)[:k]] = weight
    alpha[np.flatnonzero(y < 0)[:k]] = weight
    g = rng.normal(scale=0.1, size=n)  # small g: the bound points inside their margins, an interval of b's
    # the interval of optimal b's for fixed g: flat hinge up to the rounding of its sums of C_i
    assert hinge_argmin(y, g, np.full(n, weight)) == pytest.approx(hinge_argmin(y, g), abs=1e-12)
    one = recover_bias(alpha, y, g, C=weight)
    each = recover_bias(alpha, y, g, C=np.full(n, weight))
    assert each.rule == one.rule
    assert each.b == pytest.approx(one.b, abs=1e-12)
    if one.rule == B_INTERVAL and math.isfinite(one.lower) and math.isfinite(one.upper):
        assert one.b == pytest.approx(0.5 * (one.lower + one.upper), abs=1e-12)
    p = rng.permutation(n)
    assert recover_bias(alpha[p], y[p], g[p], C=np.full(n, weight)).b == pytest.approx(each.b, abs=1e-12)


def _hinge_sum(y, g, c, b):
    return float(np.sum(c * np.maximum(0.0, 1.0 - y * (g + b))))


def _numpy_interval(y, g, c):
    """hinge_argmin's interval by whole-array numpy steps (the compiled walk's definition): the kinks' slopes from
    running sums over the sorted t, the first kink whose right slope is >= 0 and the last whose left slope <= 0."""
    t = y - g
    order = np.argsort(t, kind="stable")
    ts, cs, ps = t[order], c[order], (y > 0)[order]
    cum_p, cum_n = np.concatenate([[0.0], np.cumsum(np.where(ps, cs, 0.0))]), np.concatenate(
        [[0.0], np.cumsum(np.where(ps, 0.0, cs))])
    step = ts[1:] != ts[:-1]
    first = np.flatnonzero(np.concatenate([[True], step]))
    after = np.flatnonzero(np.concatenate([step, [True]])) + 1
    right = cum_n[after] - (cum_p[-1] - cum_p[after])
    left = cum_n[first] - (cum_p[-1] - cum_p[first])
    flat = len(t) * np.finfo(float).eps * (cum_p[-1] + cum_n[-1])
    ok_lo, ok_hi = np.flatnonzero(right >= -flat), np.flatnonzero(left <= flat)
    lo = float(ts[first][ok_lo[0]]) if ok_lo.size and cum_p[-1] > 0 else -math.inf
    hi = float(ts[first][ok_hi[-1]]) if ok_hi.size and cum_n[-1] > 0 else math.inf
    return lo, hi


def test_hinge_argmin_is_the_numpy_walk_to_the_bit_and_minimises_the_hinge():
    """The compiled walk over the kinks gives the numpy definition's interval exactly (ties, zero weights, one class,
    a nan), and every end it gives minimises the weighted hinge sum: no b at any kink does better than 1e-12
    of the sum's size."""
    rng = np.random.default_rng(3)
    for _ in range(3000):
        n = int(rng.integers(1, 40))
        y = np.where(rng.random(n) < rng.random(), 1.0, -1.0)
        g = np.round(rng.normal(size=n), int(rng.integers(0, 3)))  # rounded: tied kinks
        c = rng.choice([0.0, 0.01, 0.1, 1.0], size=n) if rng.random() < 0.5 else np.ones(n)
        if rng.random() < 0.05:
            g[rng.integers(n)] = np.nan
        lo, hi = hinge_argmin(y, g, c)
        assert (lo, hi) == pytest.approx(_numpy_interval(y, g, c), rel=0, abs=0, nan_ok=True)
        assert hinge_argmin(y, g, None if np.all(c == 1.0) else c) == pytest.approx((lo, hi), rel=0, abs=0,
                                                                                   nan_ok=True)
        if np.all(np.isfinite(g)) and math.isfinite(lo) and math.isfinite(hi):
            kinks = y - g
            best = min(_hinge_sum(y, g, c, b) for b in kinks)
            size = float(np.sum(c * (1.0 + np.abs(g)))) + 1e-300
            for end in (lo, hi, 0.5 * (lo + hi)):
                assert _hinge_sum(y, g, c, end) <= best + 1e-12 * size


def _bias_by_arrays(alpha, y, g, C):
    """recover_bias by whole-array steps (the compiled pass's definition): classify at the hinge's midpoint,
    kkt_interval, the free points' weighted mean clipped to the interval, else the interval's midpoint."""
    lo, hi = hinge_argmin(y, g, C if isinstance(C, np.ndarray) else None)
    b0 = 0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else lo if math.isfinite(lo) else hi
    codes = classify(alpha, y, g + (0.0 if math.isnan(b0) else b0), C)
    lower, upper = kkt_interval(y, g, codes)
    free = codes == FREE
    if free.any():
        room = alpha[free] if np.isscalar(C) and math.isinf(C) else np.minimum(
            alpha[free], (C[free] if isinstance(C, np.ndarray) else C) - alpha[free])
        room = np.maximum(room, 0.0)
        values = y[free] - g[free]
        b = float(np.average(values, weights=room)) if room.sum() > 0 else float(values.mean())
        return B_FREE_SV, int(free.sum()), float(np.clip(b, min(lower, upper), max(lower, upper))), lower, upper
    return None, 0, None, lower, upper


def test_recover_bias_is_its_array_definition():
    """The compiled pass gives the array steps' sets, interval and b: one C, the hard margin, a tiny C, per-sample
    C; alphas at 0, at C, free and just off a bound; free points on their margins; a nan in g or alpha; up to 700
    points (the free points' sums past numpy's blocks of 128). The interval and the number of free points
    exactly, b within 4 eps of the largest |y - g| (the rounding of a weighted mean)."""
    rng = np.random.default_rng(11)
    with np.errstate(all="ignore"):
        for _ in range(1500):
            n = int(rng.integers(1, 700))
            y = np.where(rng.random(n) < rng.random(), 1.0, -1.0)
            C = [1.0, math.inf, 1e-3, None][int(rng.integers(4))]
            if C is None:
                C = rng.choice([0.5, 1.0, 2.0], size=n)
            bound = np.broadcast_to(np.asarray(C, dtype=float), (n,)) if not np.isinf(C).all() else np.full(n, 10.0)
            u = rng.random(n)
            alpha = np.where(u < 0.4, 0.0, np.where(u < 0.7, bound, rng.random(n) * bound))
            alpha += rng.normal(size=n) * 1e-10 * rng.integers(0, 2)
            g = rng.normal(size=n)
            if rng.random() < 0.5:  # the free points on their margins, to rounding
                g = np.where((alpha > 0) & (alpha < bound), y - 0.3 + rng.normal(size=n) * 1e-9, g)
            if rng.random() < 0.03:
                g[rng.integers(n)] = np.nan
            if rng.random() < 0.03:
                alpha[rng.integers(n)] = np.nan
            rule, n_free, b, lower, upper = _bias_by_arrays(alpha, y, g, C)
            got = recover_bias(alpha, y, g, C)
            want = (n_free, lower, upper)
            assert (got.n_free, got.lower, got.upper) == pytest.approx(want, rel=0, abs=0, nan_ok=True)
            if rule is not None:
                assert got.rule == rule
                size = float(np.nanmax(np.abs(y - g)))
                assert got.b == pytest.approx(b, rel=0, abs=4 * np.finfo(float).eps * size, nan_ok=True)
            else:
                assert got.rule != B_FREE_SV


def _classify_by_arrays(alpha, y, decision, C):
    """classify's rule as whole-array steps (its docstring), the compiled pass's definition."""
    codes = np.full(alpha.shape, FREE, dtype=np.int8)
    r = y * decision - 1.0
    top = float(np.max(alpha))
    if not top > 0:
        codes[:] = ZERO
        return codes
    zero = alpha / top <= np.maximum(r, 1e-9)
    codes[zero] = ZERO
    if not (np.isscalar(C) and math.isinf(C)):
        bound = (C - alpha) / C <= np.maximum(-r, 1e-9)
        codes[bound & (~zero | (alpha > 0.5 * C))] = AT_BOUND
    return codes


def test_classify_is_its_array_definition():
    """The compiled codes are the array steps' on alphas at 0, at C, free and 1e-10 off a bound, decision values on
    and off the margins, one C, the hard margin, a tiny C, per-sample C, and a nan in alpha or f."""
    rng = np.random.default_rng(12)
    with np.errstate(all="ignore"):
        for _ in range(2000):
            n = int(rng.integers(1, 200))
            y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
            C = [1.0, math.inf, 1e-6, None][int(rng.integers(4))]
            if C is None:
                C = rng.choice([0.5, 1.0, 2.0], size=n)
            bound = np.full(n, 10.0) if np.isscalar(C) and math.isinf(C) else np.broadcast_to(C, (n,))
            u = rng.random(n)
            alpha = np.where(u < 0.3, 0.0, np.where(u < 0.6, bound, rng.random(n) * bound))
            alpha = alpha + rng.normal(size=n) * 1e-10 * rng.integers(0, 2)
            f = y * (1.0 + rng.normal(size=n) * 10.0 ** rng.integers(-12, 0))
            if rng.random() < 0.05:
                (alpha if rng.random() < 0.5 else f)[rng.integers(n)] = np.nan
            assert np.array_equal(classify(alpha, y, f, C), _classify_by_arrays(alpha, y, f, C))
