"""Recovering the primal solution (w*, b*, xi*) from a dual solution alpha*.

Notation of the lecture notes (001, 000): labels y_i in {-1, +1}, multipliers
alpha_i (the notes' lambda_i), kernel values K_ij = k(x_i, x_j).

    w* = sum_i alpha_i y_i x_i                              (stationarity in w)
    b* = y_i - sum_j alpha_j y_j K_ij   for 0 < alpha_i < C  (complementarity)
    xi_i* = max(0, 1 - y_i f(x_i)),    f(x) = sum_j alpha_j y_j k(x_j, x) + b*

When no multiplier is free (every alpha_i is 0 or C), b* is not pinned by an
equation; 000 section 4 gives it by an interval of lower and upper bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from formulations import penalty
from formulations.data_matrix import one_type
from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once

# The rule that produced b*, recorded in every result table.
B_FREE_SV = "free_sv_mean"
B_INTERVAL = "interval"
B_NONE = "undetermined"


@dataclass(frozen=True)
class BiasEstimate:
    b: float
    rule: str
    n_free: int
    lower: float = -math.inf
    upper: float = math.inf


# Codes of `classify`: where each multiplier sits.
ZERO, FREE, AT_BOUND = 0, 1, 2

#: Below this fraction of its scale a multiplier is at its bound whatever its point says
#: (the rounding floor of double-precision QP solvers, ~1e-9 of the largest alpha).
ROUNDING_FLOOR = 1e-9


def classify(alpha: np.ndarray, y: np.ndarray, decision: np.ndarray, C) -> np.ndarray:
    """ZERO, FREE or AT_BOUND for each alpha_i, decided by which side of complementarity holds.

    Complementarity pairs alpha_i with the margin residual r_i = y_i f(x_i) - 1 (margin units,
    the same at every scale of the data): alpha_i > 0 only if r_i <= 0, alpha_i < C only if
    r_i >= 0. A solver returns both sides only approximately, so each is measured on its own
    scale and the larger one wins (the identification rule of active-set methods):

        ZERO      when alpha_i / max(alpha)   <= max(r_i, floor)   (the point is outside more
                                                                     than alpha_i is above 0)
        AT_BOUND  when (C - alpha_i) / C       <= max(-r_i, floor)  (inside more than alpha_i
                                                                     is below C)
        FREE      otherwise: 0 < alpha_i < C with the point on its margin.

    Relative to max(alpha) and to C, never to 1: at C = 1e10 no alpha near 5 is "at the bound",
    at C = 1e-5 every alpha = C is (interior-point solvers leave alpha ~1e-6 of its scale
    off the bound). C = inf: no upper bound. Per-sample C (an array,
    formulations.penalty): alpha_i against its own C_i.
    """
    alpha = np.asarray(alpha, dtype=float)
    if alpha.size == 0:
        return np.full(alpha.shape, FREE, dtype=np.int8)
    y, decision = np.broadcast_arrays(np.asarray(y, dtype=float), np.asarray(decision, dtype=float))
    if y.shape != alpha.shape:
        raise ValueError(f"{alpha.size} multipliers but {y.size} labels and decision values")
    return _codes(one_type(alpha), one_type(y), one_type(decision), per_point(C, alpha.shape), penalty.is_hard(C))


def per_point(C, shape) -> np.ndarray:
    """C_i for every point (one C repeated; inf for the hard margin) as the compiled passes read it."""
    if isinstance(C, (float, int)):  # one number: np.full, without broadcast_to's view and require's copy of it
        return np.full(shape, float(C))
    if isinstance(C, np.ndarray) and C.shape == tuple(shape):  # one per point already: not copied where it is one type
        return one_type(C, float)
    return one_type(np.broadcast_to(np.asarray(C, dtype=float), shape))


@njit(cache=True, nogil=True)
def _codes(alpha, y, decision, C, hard):
    """classify's codes, point by point, with the comparisons of its docstring (np.max's and np.maximum's rules
    for nan); C: C_i for every point, hard: no upper bound."""
    n = alpha.size
    codes = np.empty(n, dtype=np.int8)
    top = -math.inf
    for i in range(n):
        if math.isnan(alpha[i]):
            top = alpha[i]
            break
        top = max(top, alpha[i])
    if not top > 0:
        codes[:] = ZERO
        return codes
    for i in range(n):
        r = y[i] * decision[i] - 1.0
        zero = alpha[i] / top <= _at_least(r, ROUNDING_FLOOR)
        code = ZERO if zero else FREE
        if not hard:
            bound = (C[i] - alpha[i]) / C[i] <= _at_least(-r, ROUNDING_FLOOR)
            # both sides small (alpha ~ 0 and ~ C only when C is tiny): the nearer bound
            if bound and (not zero or alpha[i] > 0.5 * C[i]):
                code = AT_BOUND
        codes[i] = code
    return codes


def support_mask(alpha: np.ndarray, y: np.ndarray | None = None, decision: np.ndarray | None = None,
                 C: float = math.inf) -> np.ndarray:
    """Support vectors: alpha_i > 0 as `classify` decides it from both sides of complementarity.

    Without decision values (a drawing of stored alphas), alpha_i above 1e-6 of the largest
    alpha: relative to alpha's own size, so C = 1e-6 and C = 1e10 are treated alike.
    """
    alpha = np.asarray(alpha, dtype=float)
    if y is None or decision is None:
        top = float(np.max(alpha)) if alpha.size else 0.0
        return alpha > 1e-6 * top if top > 0 else np.zeros(alpha.shape, dtype=bool)
    return classify(alpha, y, decision, C) != ZERO


def kkt_interval(y: np.ndarray, g: np.ndarray, codes: np.ndarray) -> tuple[float, float]:
    """The b's for which (alpha, b) satisfies complementarity, given g_i = f(x_i) - b (000 section 4).

    Point i sits on its margin at b = t_i = y_i - g_i. For y_i = +1, alpha_i < C needs b >= t_i
    and alpha_i > 0 needs b <= t_i; for y_i = -1 the other way round. A free point bounds b on
    both sides, so with free points the interval is (up to rounding) one value.
    """
    t = y - g
    pos = y > 0
    lower_side = (pos & (codes != AT_BOUND)) | (~pos & (codes != ZERO))
    upper_side = (pos & (codes != ZERO)) | (~pos & (codes != AT_BOUND))
    lower = float(t[lower_side].max()) if lower_side.any() else -math.inf
    upper = float(t[upper_side].min()) if upper_side.any() else math.inf
    return lower, upper


def hinge_argmin(y: np.ndarray, g: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float]:
    """[lo, hi], the b's minimising sum_i c_i max(0, 1 - y_i (g_i + b)) for a fixed w (g = Xw or Ku).

    This is the set of optimal biases for the given w, read off g alone (no alpha, no threshold):
    at the optimum w*, it is exactly the interval the KKT conditions allow for b*. The slope in b
    is sum_{y_i=-1, t_i<b} c_i - sum_{y_i=+1, t_i>b} c_i (t_i = y_i - g_i), nondecreasing; the
    argmin is where it crosses 0. With one class absent it is unbounded on one side.
    """
    t = y - g
    if t.size == 0:
        return -math.inf, math.inf
    # every c_i given (the compiled walk reads them unchecked)
    c = np.ones(t.size) if weights is None else np.broadcast_to(np.asarray(weights, dtype=float), t.shape)
    # one sort of every t: the kinks are its distinct values, and the weight of each class's kinks below a
    # kink is a running sum over it (the other class's entries add 0); the walk over the kinks is compiled
    # (a pass of numpy calls each cost more than the whole walk on a few hundred points)
    order = np.argsort(t, kind="stable")
    return _hinge_interval(one_type(t), one_type(c), one_type(y > 0, bool), one_type(order, np.int64))


@njit(cache=True, nogil=True)
def _hinge_interval(t, c, pos, order):
    """hinge_argmin's interval from the sorted t (order): the running sums in the order np.cumsum takes them.

    A slope is a difference of sums of weights: 0 on the interval's flat part but for their rounding, which
    would shrink the interval to one of its ends, hence `flat` (the rounding of the sums: n eps times them)."""
    n = t.size
    cum_p = np.zeros(n + 1)  # weight of the positive kinks before an index of the sorted t
    cum_n = np.zeros(n + 1)
    for k in range(n):
        i = order[k]
        cum_p[k + 1] = cum_p[k] + (c[i] if pos[i] else 0.0)
        cum_n[k + 1] = cum_n[k] + (0.0 if pos[i] else c[i])
    total_p, total_n = cum_p[n], cum_n[n]
    flat = n * np.finfo(np.float64).eps * (total_p + total_n)
    lo, hi = -math.inf, math.inf
    found_lo = False
    first = 0
    for k in range(1, n + 1):
        if k < n and t[order[k]] == t[order[k - 1]]:  # the same kink goes on (a nan is a kink of its own)
            continue
        kink = t[order[first]]
        # the slope just above the kink (after its last index, k) and just below it (at its first)
        right = cum_n[k] - (total_p - cum_p[k])
        left = cum_n[first] - (total_p - cum_p[first])
        if not found_lo and right >= -flat:
            lo, found_lo = kink, True
        if left <= flat:
            hi = kink
        first = k
    if not total_p > 0:  # no positive weight (one class absent): unbounded below
        lo = -math.inf
    if not total_n > 0:
        hi = math.inf
    return lo, hi


def recover_bias(alpha: np.ndarray, y: np.ndarray, g: np.ndarray, C) -> BiasEstimate:
    """b* from alpha*, given g_i = sum_j alpha_j y_j K_ij (the decision value without b).

    Each point is first placed at zero, free or at the bound by `classify` (with a provisional
    b from `hinge_argmin`, which needs no alpha). Free support vectors (0 < alpha_i < C): b* is
    the mean of y_i - g_i, weighted by min(alpha_i, C - alpha_i) so that multipliers a solver
    left just off a bound count little, and kept inside the KKT interval. None free: the
    interval rule of 000 section 4. Each point bounds b:
        alpha_i = 0 (y_i f_i >= 1):  y_i b >= 1 - y_i g_i
        alpha_i = C (y_i f_i <= 1):  y_i b <= 1 - y_i g_i
    and every b of that interval is optimal (b's term in the Lagrangian, -b sum_i alpha_i y_i, is 0
    by the balance): b* is its midpoint, as LIBSVM takes it, for one C and for per-sample C_i alike
    (C_i in place of C throughout; the provisional b then minimises the weighted hinge
    sum_i C_i xi_i). An end chosen by the sign of sum_{alpha_i = C_i} C_i y_i, which is 0 but
    for rounding, made a fit with every weight 1.0 take the lower end where the unweighted one took
    the midpoint (iris, rbf, C = 0.01: 31% of its predictions changed).
    """
    alpha = np.asarray(alpha, dtype=float)
    lo, hi = hinge_argmin(y, g, penalty.hinge_weights(C))
    b0 = _middle(lo, hi)
    hard = penalty.is_hard(C)
    bounds = per_point(C, alpha.shape)
    # classify at the provisional b, kkt_interval and the free points' weighted mean in one compiled pass (the
    # same comparisons and sums, in numpy's order, as those functions' array steps): a few hundred points' steps
    # cost more in numpy's calls than in arithmetic
    n_free, lower, upper, b = _bias_parts(one_type(alpha), one_type(y), one_type(g),
                                          0.0 if math.isnan(b0) else b0, bounds, hard)
    if n_free:
        b = clip_value(b, min(lower, upper), max(lower, upper))
        return BiasEstimate(b=b, rule=B_FREE_SV, n_free=int(n_free), lower=lower, upper=upper)
    b = _middle(lower, upper)
    if math.isnan(b):
        return BiasEstimate(b=math.nan, rule=B_NONE, n_free=0, lower=lower, upper=upper)
    return BiasEstimate(b=b, rule=B_INTERVAL, n_free=0, lower=lower, upper=upper)


@njit(cache=True, nogil=True)
def _bias_parts(alpha, y, g, b0, C, hard):
    """(free points, kkt_interval's lower and upper, the free points' b before its clip) for recover_bias: the
    codes of classify(alpha, y, g + b0, C) (C: one bound per point; hard: none), then, over the free points,
    np.average(y - g, weights=max(min(alpha, C - alpha), 0)) (alpha alone when hard), or the mean where the
    weights sum to 0. Maxima, minima and comparisons propagate nan as numpy's do."""
    n = alpha.size
    codes = _codes(alpha, y, g + b0, C, hard)
    lower, upper = -math.inf, math.inf
    any_lower = any_upper = False
    free = codes == FREE
    for i in range(n):
        code = codes[i]
        t = y[i] - g[i]
        pos = y[i] > 0
        if (pos and code != AT_BOUND) or (not pos and code != ZERO):
            lower = t if not any_lower else nan_max(lower, t)
            any_lower = True
        if (pos and code != ZERO) or (not pos and code != AT_BOUND):
            upper = t if not any_upper else _nan_min(upper, t)
            any_upper = True
    index = np.flatnonzero(free)
    m = index.size
    if m == 0:
        return 0, lower, upper, math.nan
    values, room, product = np.empty(m), np.empty(m), np.empty(m)
    for k in range(m):
        i = index[k]
        values[k] = y[i] - g[i]
        w = alpha[i] if hard else _nan_min(alpha[i], C[i] - alpha[i])
        room[k] = _at_least(w, 0.0)
        product[k] = values[k] * room[k]
    total = _numpy_sum(room, 0, m)
    b = _numpy_sum(product, 0, m) / total if total > 0 else _numpy_sum(values, 0, m) / m
    return m, lower, upper, b


@njit(cache=True, nogil=True)
def _at_least(a, floor):
    """np.maximum(a, floor) for one value, as numpy decides it (a where a >= floor or a is nan)."""
    return a if a >= floor or math.isnan(a) else floor


@njit(cache=True, nogil=True)
def nan_max(a, b):
    """The larger of two values, nan if either is (np.max's rule)."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


@njit(cache=True, nogil=True)
def _nan_min(a, b):
    """The smaller of two values, nan if either is (np.min's and np.minimum's rule)."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return min(a, b)


@njit(cache=True, nogil=True)
def _numpy_sum(a, lo, n):
    """a[lo:lo + n].sum() as numpy takes it for a contiguous array (pairwise: blocks of at most 128 values, each
    halved at a multiple of 8 above that; _block_sum), so that the mean comes out to the bit as before. The halves
    by an explicit stack: numba's cache does not load a recursive function."""
    if n <= 128:
        return _block_sum(a, lo, n)
    starts, sizes = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    stage, left = np.zeros(64, dtype=np.int64), np.empty(64)
    starts[0], sizes[0], top = lo, n, 1
    result = 0.0
    while top > 0:
        k = top - 1
        m = sizes[k]
        if m <= 128:
            result = _block_sum(a, starts[k], m)
            top -= 1
            continue
        half = m // 2 - (m // 2) % 8
        if stage[k] == 0:  # the first half next
            stage[k] = 1
            starts[top], sizes[top], stage[top] = starts[k], half, 0
            top += 1
        elif stage[k] == 1:  # the first half's sum in result: the second half next
            left[k], stage[k] = result, 2
            starts[top], sizes[top], stage[top] = starts[k] + half, m - half, 0
            top += 1
        else:
            result = left[k] + result
            top -= 1
    return result


@njit(cache=True, nogil=True)
def _block_sum(a, lo, n):
    """numpy's sum of at most 128 values: one after another below 8, else eight running sums combined as a tree."""
    if n < 8:
        total = 0.0
        for i in range(lo, lo + n):
            total += a[i]
        return total
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += a[lo + i]
        i += 1
    return total


def clip_value(value: float, lower: float, upper: float) -> float:
    """float(np.clip(value, lower, upper)) for three numbers, without numpy's call: the larger of value and lower, then
    the smaller of that and upper (upper where lower > upper), nan where any of them is nan."""
    if math.isnan(value) or math.isnan(lower) or math.isnan(upper):
        return math.nan
    return float(min(max(value, lower), upper))


def _middle(lower: float, upper: float) -> float:
    """The midpoint of an interval; its finite end if it has one; nan if neither is finite."""
    if math.isfinite(lower) and math.isfinite(upper):
        return 0.5 * (lower + upper)
    finite = [v for v in (lower, upper) if math.isfinite(v)]
    return finite[0] if finite else math.nan


def weights_from_alpha(X: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """w* = sum_i alpha_i y_i x_i = X' (y * alpha)."""
    return X.T @ (y * alpha)


def slacks(y: np.ndarray, decision: np.ndarray) -> np.ndarray:
    """xi_i = max(0, 1 - y_i f(x_i)): the smallest slacks that make (w, b) feasible."""
    return np.maximum(0.0, 1.0 - y * decision)


def primal_objective(X, y, w, b, C) -> float:
    """P(w, b) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i (w'x_i + b)): the soft primal at its best slacks."""
    return float(0.5 * w @ w + penalty.weighted_sum(C, slacks(y, X @ w + b)))
