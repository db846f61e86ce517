"""The closing checks' compiled passes give what their whole-array definitions give: the proof's KKT test
(solvers.reference._violations), its bounds test (_in_bounds), its system (_free_system), the KKT residuals' maxima
(solvers.checks._kkt_residuals, against kkt_by_point) and the gap's rounding (gap_rounding), on random points with ties, nan, inf, per-sample C and the hard margin; and
a whole closing the same status, verdict, b and residuals with the array steps patched back in."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from formulations import penalty, recovery
from formulations.kernels import Kernel
from formulations.recovery import AT_BOUND, FREE, ZERO
from solvers import checks, reference
from solvers.algorithms import smo_gram
from solvers.algorithms.kernel_rows import row_source
from solvers.algorithms.smo import smo
from solvers.deadline import NEVER
from solvers.profiles import get_profile


def _violations_by_arrays(codes, a, r, C, scale, eps, margin_eps):
    upper = math.inf if penalty.is_hard(C) else C * (1 + eps)
    return (((codes == ZERO) & (r < -margin_eps)) | ((codes == AT_BOUND) & (r > margin_eps))
            | ((codes == FREE) & ((a < -eps * scale) | (a > upper) | (np.abs(r) > margin_eps))))


def _in_bounds_by_arrays(a, C):
    size = max(float(np.max(np.abs(a))), np.finfo(float).tiny)
    if penalty.is_hard(C):
        return bool(np.all(np.isfinite(a)) and np.all(a >= -reference.POLISH_TOL * size))
    return bool(np.all(np.isfinite(a)) and np.all(a >= -reference.POLISH_TOL * np.minimum(C, size))
                and np.all(a <= C * (1 + reference.POLISH_TOL)))


def _kkt_maxima_by_arrays(alpha, y, f, C, hard):
    by_point = checks.kkt_by_point(alpha, y, f, C, hard)
    return float(by_point["dual feasibility"].max()), float(by_point["complementarity"].max())


def _free_system_by_arrays(K_FF, yF, g_F, balance_rhs):
    m = yF.size
    M = np.zeros((m + 1, m + 1))
    M[:m, :m] = (yF[:, None] * K_FF) * yF[None, :]
    M[:m, m] = yF
    M[m, :m] = yF
    return M, np.concatenate([1.0 - yF * g_F, [balance_rhs]])


def _gap_rounding_by_arrays(C, alpha, y, f, size):
    e = np.broadcast_to(np.finfo(float).eps * np.asarray(size, dtype=float), f.shape)
    near = (1.0 - y * f) > -e
    return penalty.weighted_sum(C, near * e) + float(np.abs(alpha) @ e)


def test_the_free_system_and_the_gaps_rounding_are_the_array_steps():
    """The proof's system (reference._free_system) to the bit, and the gap's rounding (checks.gap_rounding) for one
    size and one per point to 1e-12 of itself, on random systems and points (nan and inf among them)."""
    rng = np.random.default_rng(12)
    with np.errstate(all="ignore"):
        for _ in range(2000):
            m = int(rng.integers(0, 30))
            K = rng.normal(size=(m, m)) * 10.0 ** rng.uniform(-8, 8)
            yF, g_F = rng.choice([-1.0, 1.0], size=m), rng.normal(size=m) * 10.0 ** rng.uniform(-3, 3)
            if m and rng.random() < 0.1:
                K[rng.integers(m), rng.integers(m)] = rng.choice([np.nan, np.inf])
            balance = float(rng.normal())
            for got, want in zip(reference._free_system(K, yF, g_F, balance), _free_system_by_arrays(K, yF, g_F,
                                                                                                       balance)):
                assert np.array_equal(got, want, equal_nan=True)
            codes, alpha, y, f, r, C = _random_point(rng)
            # its sums' order moves with the layout of e (BLAS takes a broadcast e apart): 1e-12 of its size
            for size in (float(10.0 ** rng.uniform(-3, 3)), 10.0 ** rng.uniform(-3, 3, size=alpha.size)):
                assert checks.gap_rounding(C, alpha, y, f, size) == pytest.approx(
                    _gap_rounding_by_arrays(C, alpha, y, f, size), rel=1e-12, abs=0, nan_ok=True)


def test_clip_value_is_np_clip():
    """Every combination of nan, infinities, signed zeros and numbers: np.clip's value, its sign included."""
    import itertools

    values = [math.nan, -math.inf, math.inf, -0.0, 0.0, 1.0, -1.0, 2.5, np.float64(3.0)]
    for value, lower, upper in itertools.product(values, repeat=3):
        got, want = recovery.clip_value(value, lower, upper), float(np.clip(value, lower, upper))
        assert (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1,
                                                                                                                 want))


def _random_point(rng):
    """(codes, alpha, y, f, r, C): values at, near and off their bounds and margins, some nan or inf."""
    n = int(rng.integers(1, 40))
    C = rng.choice([float(10.0 ** rng.uniform(-6, 9)), math.inf, None])
    if C is None:  # per sample
        C = 10.0 ** rng.uniform(-3, 3, size=n)
    top = 1.0 if penalty.is_hard(C) else np.asarray(C)
    alpha = np.where(rng.random(n) < 0.3, 0.0, rng.uniform(-0.1, 1.1, size=n) * top)
    if not penalty.is_hard(C):
        alpha = np.where(rng.random(n) < 0.2, top * np.ones(n), alpha)
    y = rng.choice([-1.0, 1.0], size=n)
    f = y * (1.0 + rng.choice([0.0, 1e-9, -1e-9, 1e-3, -0.5, 2.0], size=n) * rng.random(n))
    for v in (alpha, f):
        if rng.random() < 0.1:
            v[rng.integers(n)] = rng.choice([np.nan, np.inf, -np.inf])
    codes = rng.choice([ZERO, FREE, AT_BOUND], size=n).astype(np.int8)
    return codes, alpha, y, f, y * f - 1.0, C


def test_the_compiled_passes_are_the_array_steps():
    """Thousands of random points: the same violations, bounds verdict and maxima (nan where the arrays give nan)."""
    rng = np.random.default_rng(11)
    with np.errstate(all="ignore"):
        for _ in range(4000):
            codes, alpha, y, f, r, C = _random_point(rng)
            eps = float(rng.choice([reference.POLISH_TOL, 1e-6]))
            scale = np.minimum(C, max(float(np.nanmax(np.abs(alpha))) if np.isfinite(alpha).any() else 1.0, 1e-300))
            margin_eps = eps + 10.0 ** rng.uniform(-16, -6, size=alpha.size)
            got = reference._violations(codes, alpha, r, C, scale, eps, margin_eps)
            assert np.array_equal(got, _violations_by_arrays(codes, alpha, r, C, scale, eps, margin_eps))
            assert reference._in_bounds(alpha, C) == _in_bounds_by_arrays(alpha, C)
            hard = penalty.is_hard(C) or rng.random() < 0.2
            out = checks.Checks()
            checks._kkt_residuals(out, alpha, y, f, np.maximum(0.0, 1.0 - y * f), C, hard, 0.0, 0.0)
            want = _kkt_maxima_by_arrays(alpha, y, f, C, hard)
            assert (out.kkt_dual_feasibility, out.kkt_complementarity) == pytest.approx(want, rel=0, abs=0,
                                                                                        nan_ok=True)


def _problems():
    """SMO's points on random two-class rbf problems, one C or per-sample C."""
    rng = np.random.default_rng(5)
    out = []
    for k in range(10):
        n = int(rng.integers(20, 120))
        X = rng.normal(size=(n, 3)) * 10.0 ** rng.uniform(-2, 2)
        y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) * X[:, 0].std() > 0, 1.0, -1.0)
        C = float(10.0 ** rng.uniform(-1, 3)) if k % 3 else 10.0 ** rng.uniform(-1, 1, size=n)
        source = row_source(Kernel("rbf", gamma=1.0 / (3 * X.var())), X)
        out.append((source, y, C, smo(source.K, y, C, tol=1e-8)))
    return out


@pytest.mark.parametrize("perturb", [False, True])
def test_a_closing_gives_the_array_steps_verdict_and_residuals(monkeypatch, perturb):
    """SMO's points (verified) and the same points with alpha moved by 1e-3 of itself (refused): the same status,
    verdict, b and every residual with the array steps patched in (to 1e-12 of each)."""
    rng = np.random.default_rng(8)
    cases = []
    for source, y, C, res in _problems():
        alpha = res.alpha
        if perturb:
            alpha = np.clip(alpha * (1 + 1e-3 * rng.normal(size=alpha.size)), 0.0, C)
        cases.append((source, y, C, replace(res, alpha=alpha)))

    def closed():
        return [smo_gram._closed(res, source, y, C, get_profile("default"), 1, 1e-8, 0.0, NEVER)
                for source, y, C, res in cases]

    fast = closed()
    monkeypatch.setattr(reference, "_violations", _violations_by_arrays)
    monkeypatch.setattr(reference, "_in_bounds", _in_bounds_by_arrays)
    monkeypatch.setattr(reference, "_free_system", _free_system_by_arrays)
    monkeypatch.setattr(checks, "gap_rounding", _gap_rounding_by_arrays)

    def kkt_by_arrays(out, alpha, y, f, hinge, C, hard, w_from_alpha_sq, stationarity):
        out.dual_objective = float(alpha.sum()) - 0.5 * w_from_alpha_sq
        out.duality_gap = out.primal_objective - out.dual_objective
        out.rel_duality_gap = abs(out.duality_gap) / max(out.primal_objective, abs(out.dual_objective), checks._TINY)
        out.kkt_stationarity = stationarity
        out.kkt_balance = float(abs(y @ alpha)) / max(float(np.abs(alpha).sum()), checks._TINY)
        out.kkt_dual_feasibility, out.kkt_complementarity = _kkt_maxima_by_arrays(alpha, y, f, C, hard)

    monkeypatch.setattr(checks, "_kkt_residuals", kkt_by_arrays)
    slow = closed()
    for a, b in zip(fast, slow):
        assert a.status == b.status == ("optimal_inaccurate" if perturb else "optimal")
        assert a.checks["verdict"] == b.checks["verdict"] and a.b == b.b
        for key, value in b.checks.items():
            if isinstance(value, float):
                assert a.checks[key] == pytest.approx(value, rel=1e-12, abs=0, nan_ok=True), key
            else:
                assert a.checks[key] == value, key
