r"""Sequential minimal optimization of the kernel dual, compiled (numba): LIBSVM's solver.

In minimisation form, with Q = Y K Y and the gradient G = Q alpha - 1,

    min  1/2 alpha' Q alpha - 1' alpha    s.t.  y' alpha = 0,  0 <= alpha_i <= C_i.

Each step takes two points (i, j) and solves the problem in them exactly, the others fixed
(Platt 1998): i is the most violating point of I_up, j the point of I_low whose two-point step
with i lowers the objective most (the second-order choice, Fan, Chen and Lin 2005: LIBSVM's WSS2),
both clipped at their bounds (which they then hit exactly, so "at a bound" needs no tolerance).
It stops when the maximal violation

    m - M = max_{I_up} -y_i G_i - min_{I_low} -y_i G_i  <=  tol

(solvers.algorithms.working_set's module docstring has I_up, I_low).

Shrinking (LIBSVM's be_shrunk): every `shrink_every` steps the points at a bound that no violating
pair can use are counted; where they are SHRINK_SHARE of the points in play or more, the steps go
on over the others alone, copied into contiguous arrays with their own rows of K (only those
columns: a step then reads short rows, the whole point of shrinking on a large K). Before that,
and when the violation over the points in play is within tol, the gradient of the points left out
is brought up to date from the alphas that moved since (G_t += sum_j Q_tj (alpha_j - alpha_j at the
last update), LIBSVM's reconstruct_gradient in another form); at tol every point comes back and the
search goes on unless it holds for all.

LIBSVM's general form is solved by the same loop (smo(p=..., balance=..., nu=...)): a linear term p in place of
-1 (G = Q alpha + p), y'alpha = balance kept from a feasible start, and Solver_NU's selection (both points of a
pair within one sign, the violation the larger of the two signs', shrinking per sign) where a second equality
holds each sign's sum. Variables may share points through an index (LIBSVM's SVR_Q: epsilon-SVR's alpha_i and
alpha*_i on point i): K's rows are read through it, never forming the 2l x 2l matrix.

K is given either whole (an n x n array: `RowCache.full`) or as rows computed from the data when
asked (`RowCache.from_data`: rbf, linear, poly and sigmoid on dense X, in float64: LIBSVM keeps
float32 rows, whose rounding its answers carry). Rows from the data may give way to the whole K once
they hold a given number of entries (from_data's on_limit): the steps go on from the same alpha and
gradient, reading K. Rows of the points in play are kept in a least-recently-used cache of a bounded
size. The loop runs in chunks of steps without the interpreter's lock (nogil): a caller may run two solves on two
threads (each with its own RowCache), and the deadline is looked at between chunks. Without a deadline the first
chunk, with the points' loading and write-back, is one compiled call (a thread running Python beside it then hands
the lock over once where a small solve took three).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from formulations.data_matrix import one_type
from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once
from solvers.algorithms.compiled_gram import (abs_combination, combination, combine_runs, fresh_doubles, rbf_gram,
                                               submatrix)
from solvers.deadline import NEVER, Deadline

#: The curvature used where K_ii + K_jj - 2 K_ij <= 0 (LIBSVM's TAU). Every division here is by such a curvature
#: (>= TAU), so the compiled functions take numpy's error model: no zero-divisor test before each division.
TAU = 1e-12
#: Kernel codes of the compiled rows (GIVEN: the whole K is given, no value is computed).
GIVEN, RBF, LINEAR, POLY, SIGMOID = -1, 0, 1, 2, 3
KERNEL_CODES = {"rbf": RBF, "linear": LINEAR, "poly": POLY, "sigmoid": SIGMOID}
#: Steps between two shrinkings, at most (LIBSVM's min(n, 1000)).
SHRINK_EVERY = 1000
#: The share of the points in play that shrinking must leave out before the rest are copied apart.
SHRINK_SHARE = 0.2
#: The first chunk of steps between two looks at the deadline; later chunks aim at CHUNK_SECONDS each.
FIRST_CHUNK = 2000
CHUNK_SECONDS = 0.1
#: Bytes of cached rows by default (LIBSVM's SVC: 200 MB).
DEFAULT_CACHE_BYTES = 512 * 2**20


@njit(cache=True, nogil=True, error_model="numpy")
def _fill_row(p, width, XT, kind, gamma, coef0, degree, out):
    """k(x_p, x_q) for q < width into out, XT holding the points as columns (d x n: the sums run along contiguous
    rows); the rbf from the differences (exact at any translation, 1 exactly at q = p)."""
    for q in range(width):
        out[q] = 0.0
    for t in range(XT.shape[0]):
        x = XT[t, p]
        col = XT[t]
        if kind == RBF:
            for q in range(width):
                u = x - col[q]
                out[q] += u * u
        else:
            for q in range(width):
                out[q] += x * col[q]
    if kind == RBF:
        _exp_of_minus(gamma, out[:width])
    for q in range(width):
        if kind == POLY:
            out[q] = (gamma * out[q] + coef0) ** degree
        elif kind == SIGMOID:
            out[q] = math.tanh(gamma * out[q] + coef0)


#: _exp_of_minus's constants: log2(e), ln 2 split in two (fdlibm's: k ln2_hi is exact for |k| < 2^11), 1.5 2^52
#: (adding it rounds to an integer), and the largest argument whose exp is a normal float.
_LOG2E, _LN2_HI, _LN2_LO = 1.4426950408889634, 6.93147180369123816490e-01, 1.90821492927058770002e-10
_ROUND, _MOST = 6755399441055744.0, 708.0
#: 1/k! for k = 13..2: exp(r) = 1 + r + r^2 (1/2 + r (1/6 + ...)) on |r| <= ln2 / 2, the last term below 2^-53.
_TAYLOR = (1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
           1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5)


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def _exp_of_minus(gamma, out):
    """out <- exp(-gamma out) in place, for out >= 0, within 1 ulp of math.exp (0 where the exponent is below
    -708: there exp is under 3e-308). Written for the vector units: math.exp is one call per entry, which made
    most of a computed row's time, where this is arithmetic LLVM vectorizes: t = k ln2 + r, exp(r) by its Taylor
    polynomial, times 2^k by adding k to the result's exponent bits."""
    bits = out.view(np.int64)
    for q in range(out.shape[0]):
        x = -gamma * out[q]
        t = max(x, -_MOST)
        k = (t * _LOG2E + _ROUND) - _ROUND
        r = t - k * _LN2_HI - k * _LN2_LO
        p = _TAYLOR[0]
        for c in _TAYLOR[1:]:
            p = p * r + c
        p = (p * r + 1.0) * r + 1.0
        keep = x >= -_MOST
        out[q] = p if keep else 0.0
        bits[q] += (np.int64(k) << 52) if keep else 0


@njit(cache=True, nogil=True, error_model="numpy")
def _source_row(i, K, XT, kind, gamma, coef0, degree, index, out):
    """Row i of the whole K into out (one entry per variable); index: each variable's row of a given K (empty:
    the variables are K's rows themselves)."""
    if kind == GIVEN:
        if index.shape[0] == 0:
            out[:] = K[i]
        else:
            Ki = K[index[i]]
            for t in range(out.shape[0]):
                out[t] = Ki[index[t]]
    else:
        _fill_row(i, out.shape[0], XT, kind, gamma, coef0, degree, out)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _cached(p, w, stride, slot_of, last, meta):
    """Where row p of K over the points in play (positions 0..w-1) starts in _steps' row source, -1 where it is
    not cached (_fill_slot then fills it). meta: [clock, slots used, rows computed from the data, whole-K rows used
    as they are, entries computed from the data]."""
    if meta[3] == 1:  # the whole K given and every point in play: its rows as they are
        return p * stride
    meta[0] += 1
    s = slot_of[p]
    if s < 0:
        return -1
    last[s] = meta[0]
    return s * w


@njit(cache=True, nogil=True, error_model="numpy")
def _fill_slot(p, w, work, cache):
    """Row p of K over the points in play computed (or copied from the whole K) into a free slot of the cache or its
    least recently used one; where that row starts in the cache's buffer."""
    S, K, XT, XST, kind, gamma, coef0, degree, index = work
    buf, slot_of, owner, last, meta = cache
    capacity = min(w, buf.shape[0] // w)
    if meta[1] < capacity:
        s = meta[1]
        meta[1] += 1
    else:
        s = 0
        oldest = last[0]
        for k in range(1, capacity):
            if last[k] < oldest:
                oldest = last[k]
                s = k
        slot_of[owner[s]] = -1
    owner[s] = p
    slot_of[p] = s
    last[s] = meta[0]
    out = buf[s * w:(s + 1) * w]
    if kind == GIVEN and index.shape[0] == 0:
        Ki = K[S[p]]
        for q in range(w):
            out[q] = Ki[S[q]]
    elif kind == GIVEN:  # K's rows and columns through each variable's point
        Ki = K[index[S[p]]]
        for q in range(w):
            out[q] = Ki[index[S[q]]]
    else:
        _fill_row(p, w, XST, kind, gamma, coef0, degree, out)
        meta[2] += 1
        meta[4] += w
    return s * w


@njit(cache=True, nogil=True, error_model="numpy")
def _extremes(w, yS, uS, aS, GS):
    """(m, -M) over the points in play: LIBSVM's Gmax1 and Gmax2."""
    gmax1 = -np.inf
    gmax2 = -np.inf
    for p in range(w):
        if yS[p] > 0:
            if aS[p] < uS[p] and -GS[p] > gmax1:
                gmax1 = -GS[p]
            if aS[p] > 0.0 and GS[p] > gmax2:
                gmax2 = GS[p]
        else:
            if aS[p] > 0.0 and GS[p] > gmax1:
                gmax1 = GS[p]
            if aS[p] < uS[p] and -GS[p] > gmax2:
                gmax2 = -GS[p]
    return gmax1, gmax2


@njit(cache=True, nogil=True, error_model="numpy")
def _extremes_nu(w, yS, uS, aS, GS):
    """Solver_NU's four extremes over the points in play, the violation of each sign's pairs being g1 + g2
    (y = +1) and g3 + g4 (y = -1): g1 = max -G over y = +1 below its bound, g2 = max G over y = +1 above 0,
    g3 = max G over y = -1 above 0, g4 = max -G over y = -1 below its bound."""
    g1 = g2 = g3 = g4 = -np.inf
    for p in range(w):
        if aS[p] < uS[p]:
            if yS[p] > 0:
                g1 = max(g1, -GS[p])
            else:
                g4 = max(g4, -GS[p])
        if aS[p] > 0.0:
            if yS[p] > 0:
                g2 = max(g2, GS[p])
            else:
                g3 = max(g3, GS[p])
    return g1, g2, g3, g4


@njit(cache=True, nogil=True, error_model="numpy")
def _four_extremes(w, yS, uS, aS, GS, nu):
    """(g1, g2, g3, g4) as _extremes_nu's; the plain solver's pairs mix the signs, so there g1 = g3 = m and
    g2 = g4 = -M (then max(g1 + g2, g3 + g4) = m - M and _shrinkable is LIBSVM's plain be_shrunk)."""
    if nu:
        return _extremes_nu(w, yS, uS, aS, GS)
    gmax1, gmax2 = _extremes(w, yS, uS, aS, GS)
    return gmax1, gmax2, gmax1, gmax2


@njit(cache=True, nogil=True, error_model="numpy")
def _shrinkable(p, yS, uS, aS, GS, g1, g2, g3, g4):
    """Whether the point at position p sits at a bound where no violating pair can use it (LIBSVM's be_shrunk;
    the g's: _four_extremes)."""
    if aS[p] >= uS[p]:
        return -GS[p] > g1 if yS[p] > 0 else -GS[p] > g4
    if aS[p] <= 0.0:
        return GS[p] > g2 if yS[p] > 0 else GS[p] > g3
    return False


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _partner(w, yS, uS, aS, GS, dS, gp, gn, ip, jn, Kp, Kn):
    """WSS2's second point, shared by the plain selection (one i for both signs: gp = gn, ip = jn) and Solver_NU's
    (an i per sign): the t of I_low whose two-point step with its sign's i (ip, row Kp, for y_t > 0; jn, Kn else)
    lowers the objective most, j = -1 where none violates; and each sign's max over I_low of -y_t G_t (gp2, gn2)."""
    gp2, gn2 = -np.inf, -np.inf
    j = -1
    best = np.inf
    for t in range(w):
        if yS[t] > 0:
            if aS[t] <= 0.0:
                continue
            grad_diff = gp + GS[t]
            if GS[t] >= gp2:
                gp2 = GS[t]
            # K_ii + K_tt - 2 K_it whatever the labels; a row is read only where its sign has an i
            quad = dS[ip] + dS[t] - 2.0 * Kp[t] if grad_diff > 0.0 else 1.0
        else:
            if aS[t] >= uS[t]:
                continue
            grad_diff = gn - GS[t]
            if -GS[t] >= gn2:
                gn2 = -GS[t]
            quad = dS[jn] + dS[t] - 2.0 * Kn[t] if grad_diff > 0.0 else 1.0
        if grad_diff > 0.0:
            if quad <= 0.0:
                quad = TAU
            gain = -(grad_diff * grad_diff) / quad
            if gain <= best:
                best = gain
                j = t
    return j, gp2, gn2


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _most_violating(w, yS, uS, aS, GS, nu):
    """WSS2's first point over the points in play: (ip, gp, jn, gn), the most violating point of I_up (its -y_i G_i)
    for y = +1 and for y = -1 under Solver_NU's selection (nu), one point for both signs (ip = jn) else; -1 where
    there is none. Ties go to the later point, as LIBSVM's `>=` scan."""
    gp, gn = -np.inf, -np.inf
    ip, jn = -1, -1
    for t in range(w):
        if yS[t] > 0:
            if aS[t] < uS[t] and -GS[t] >= gp:
                gp, ip = -GS[t], t
        elif aS[t] > 0.0 and GS[t] >= gn:
            gn, jn = GS[t], t
    if nu:
        return ip, gp, jn, gn
    if gp > gn or (gp == gn and ip > jn):
        return ip, gp, ip, gp
    return jn, gn, jn, gn


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _clip_same_labels(aS, i, j, total, C_i):
    """y_i = y_j keeps a_i + a_j = total: a_i back to its bound C_i, or a_j back to 0, along that line (LIBSVM's
    clip on i's side; _step calls it again with i and j swapped)."""
    if total > C_i:
        if aS[i] > C_i:
            aS[i] = C_i
            aS[j] = total - C_i
    elif aS[j] < 0.0:
        aS[j] = 0.0
        aS[i] = total


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _step(i, j, w, yS, uS, aS, GS, dS, Ki, Kj):
    """The two-point subproblem in positions (i, j) solved exactly and clipped (LIBSVM's update), G updated on
    the points in play (Ki, Kj: rows i and j over them)."""
    C_i, C_j = uS[i], uS[j]
    old_i, old_j = aS[i], aS[j]
    quad = dS[i] + dS[j] - 2.0 * Ki[j]
    if quad <= 0.0:
        quad = TAU
    if yS[i] != yS[j]:
        delta = (-GS[i] - GS[j]) / quad
        diff = aS[i] - aS[j]
        aS[i] += delta
        aS[j] += delta
        if diff > 0.0:
            if aS[j] < 0.0:
                aS[j] = 0.0
                aS[i] = diff
        elif aS[i] < 0.0:
            aS[i] = 0.0
            aS[j] = -diff
        if diff > C_i - C_j:
            if aS[i] > C_i:
                aS[i] = C_i
                aS[j] = C_i - diff
        elif aS[j] > C_j:
            aS[j] = C_j
            aS[i] = C_j + diff
    else:
        delta = (GS[i] - GS[j]) / quad
        total = aS[i] + aS[j]
        aS[i] -= delta
        aS[j] += delta
        _clip_same_labels(aS, i, j, total, C_i)
        _clip_same_labels(aS, j, i, total, C_j)
    di = yS[i] * (aS[i] - old_i)
    dj = yS[j] * (aS[j] - old_j)
    for t in range(w):  # Q_it = y_i y_t K_it
        GS[t] += yS[t] * (di * Ki[t] + dj * Kj[t])


@njit(cache=True, nogil=True, error_model="numpy")
def _sync(w, full, comp, work):
    """alpha and G of the points in play written back, and G of the others brought up to date from the alphas
    that moved since the last sync (snap: alpha then)."""
    S = work[0]
    n = S.shape[0]
    T = _left_out(w, S, n)
    _update_left_out(w, full, comp, work, T, np.full(w, -1, dtype=np.int64), np.empty(0))


@njit(cache=True, nogil=True, error_model="numpy")
def _left_out(w, S, n):
    """The points not in S[:w], ascending."""
    out = np.ones(n, dtype=np.bool_)
    for p in range(w):
        out[S[p]] = False
    return np.flatnonzero(out)


@njit(cache=True, nogil=True, error_model="numpy")
def _update_left_out(w, full, comp, work, T, slot_at, buf):
    """_sync's work: alpha and G of the points in play written back, G at the points left out (T) brought up to
    date from K[j, T] of each point j in play that moved; where slot_at[p] >= 0 that K[S[p], T] also fills the
    columns T of the row cached in that slot (rows of n entries in buf: the rows kept across an unshrink, each of
    a point that moved, so no entry is computed for the cache alone)."""
    y, upper, alpha, G, snap, diag = full
    yS, uS, aS, GS, dS = comp
    S = work[0]
    n = y.shape[0]
    for p in range(w):
        alpha[S[p]] = aS[p]
        G[S[p]] = GS[p]
    if w < n:
        cols = _columns(T, work)
        row = np.empty(T.shape[0])
        for p in range(w):
            j, s = S[p], slot_at[p]
            moved = alpha[j] - snap[j]
            if moved == 0.0 and s < 0:
                continue
            _row_at(j, T, cols, work, row)
            if moved != 0.0:
                c = y[j] * moved
                for k in range(T.shape[0]):
                    t = T[k]
                    G[t] += y[t] * c * row[k]
            if s >= 0:
                for k in range(T.shape[0]):
                    buf[s * n + T[k]] = row[k]
    for p in range(w):
        snap[S[p]] = alpha[S[p]]


@njit(cache=True, nogil=True, error_model="numpy")
def _columns(T, work):
    """The points T as columns (d x (|T| + 1)) for _row_at, the last column left for the point whose entries it
    computes; empty where K is given."""
    XT, kind = work[2], work[4]
    if kind == GIVEN:
        return np.empty((0, 0))
    cols = np.empty((XT.shape[0], T.shape[0] + 1))
    for t in range(XT.shape[0]):
        for k in range(T.shape[0]):
            cols[t, k] = XT[t, T[k]]
    return cols


@njit(cache=True, nogil=True, error_model="numpy")
def _row_at(i, T, cols, work, out):
    """K[i, T] into out[:|T|], entry by entry the arithmetic of _source_row's whole row (so the same bits)."""
    S, K, XT, XST, kind, gamma, coef0, degree, index = work
    m = T.shape[0]
    if kind == GIVEN:
        if index.shape[0] == 0:
            Ki = K[i]
            for k in range(m):
                out[k] = Ki[T[k]]
        else:
            Ki = K[index[i]]
            for k in range(m):
                out[k] = Ki[index[T[k]]]
    else:
        for t in range(XT.shape[0]):
            cols[t, m] = XT[t, i]
        _fill_row(m, m, cols, kind, gamma, coef0, degree, out)


@njit(cache=True, nogil=True, error_model="numpy")
def _load(w, full, comp, work, cache, flush):
    """The points S[:w] copied into the arrays of the points in play; the row cache emptied (flush)."""
    y, upper, alpha, G, snap, diag = full
    yS, uS, aS, GS, dS = comp
    S, K, XT, XST, kind, gamma, coef0, degree, index = work
    buf, slot_of, owner, last, meta = cache
    for p in range(w):
        i = S[p]
        yS[p], uS[p], aS[p], GS[p], dS[p] = y[i], upper[i], alpha[i], G[i], diag[i]
        if kind != GIVEN:
            XST[:, p] = XT[:, i]
    if flush:
        slot_of[:] = -1
        meta[1] = 0
    meta[3] = 1 if kind == GIVEN and w == y.shape[0] and index.shape[0] == 0 else 0


@njit(cache=True, nogil=True, error_model="numpy")
def _keep_rows(w, kept, new_pos, old_pos, cache):
    """The cached rows of the points still in play, cut to their columns (old_pos: each new position's old one;
    new_pos: each old position's new one, -1 for those left out) and packed at the new width, in place: a row
    moves only towards the buffer's start, and each entry to an index no larger than its own."""
    buf, slot_of, owner, last, meta = cache
    slot_of[:] = -1
    used = 0
    for s in range(meta[1]):
        q = new_pos[owner[s]]
        if q < 0:
            continue
        src, dst = s * w, used * kept
        for c in range(kept):
            buf[dst + c] = buf[src + old_pos[c]]
        owner[used], last[used] = q, last[s]
        slot_of[q] = used
        used += 1
    meta[1] = used


@njit(cache=True, nogil=True, error_model="numpy")
def _all_in_play(w, full, comp, work, cache):
    """Every point back in play (after a sync); returns n. The cached rows of the points whose alpha moved since
    the last sync are kept (as LIBSVM's Cache keeps its rows), widened to every point, their new columns being
    the entries that bring G of the points left out up to date (computed anyway); the others are let go rather
    than completed (most points leave play again at the next shrinking). A whole K given without an index is
    read as it is once every point is in play, so there the cache is emptied."""
    S, kind, index = work[0], work[4], work[8]
    n = S.shape[0]
    if w < n:
        keep = kind != GIVEN or index.shape[0] > 0
        T = _left_out(w, S, n)
        slot_at = _widen_rows(w, n, S, _moved(w, full, comp, S), cache) if keep else np.full(w, -1, dtype=np.int64)
        _update_left_out(w, full, comp, work, T, slot_at, cache[0])
        for k in range(n):
            S[k] = k
        _load(n, full, comp, work, cache, not keep)
    return n


@njit(cache=True, nogil=True, error_model="numpy")
def _moved(w, full, comp, S):
    """Which positions in play have an alpha that moved since the last sync."""
    snap, aS = full[4], comp[2]
    out = np.zeros(w, dtype=np.bool_)
    for p in range(w):
        out[p] = aS[p] != snap[S[p]]
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _widen_rows(w, n, S, wanted, cache):
    """The cached rows of the positions `wanted` over the w points in play moved, in place, to rows over all n
    points (the points' own columns; those left out not yet filled), the most recently used that fit; each
    position's new slot (-1: not cached). S[:w] ascending, so each entry moves to an index no smaller than its
    own: the rows are moved last first, each entry last first."""
    buf, slot_of, owner, last, meta = cache
    used = meta[1]
    kept = np.zeros(used, dtype=np.bool_)
    for s in range(used):
        kept[s] = wanted[owner[s]]
    room = min(n, buf.shape[0] // n)
    if kept.sum() > room:  # only the most recently used of them
        kept &= last[:used] >= np.sort(last[:used][kept])[kept.sum() - room]
    if not kept.all():  # the others let go: the kept packed towards the start at the old width
        packed = 0
        for s in range(used):
            if kept[s]:
                for c in range(w):
                    buf[packed * w + c] = buf[s * w + c]
                owner[packed], last[packed] = owner[s], last[s]
                packed += 1
        used = packed
    slot_at = np.full(w, -1, dtype=np.int64)
    slot_of[:] = -1
    for s in range(used - 1, -1, -1):
        for c in range(w - 1, -1, -1):
            buf[s * n + S[c]] = buf[s * w + c]
        slot_at[owner[s]] = s
        owner[s] = S[owner[s]]
        slot_of[owner[s]] = s
    meta[1] = used
    return slot_at


@njit(cache=True, nogil=True, error_model="numpy")
def _shrink(w, full, comp, work, cache, share, nu):
    """Leave out the points no violating pair can use, if they are SHRINK_SHARE of those in play or more
    (after a sync); the new count in play. The first time the violation is within 10 tol, every point comes
    back first (LIBSVM's unshrink)."""
    yS, uS, aS, GS, dS = comp
    S = work[0]
    g1, g2, g3, g4 = _four_extremes(w, yS, uS, aS, GS, nu)
    kept = 0
    for p in range(w):
        if not _shrinkable(p, yS, uS, aS, GS, g1, g2, g3, g4):
            kept += 1
    if kept > (1.0 - share) * w or kept < 2:
        return w
    _sync(w, full, comp, work)
    new_pos = np.full(w, -1, dtype=np.int64)
    old_pos = np.empty(w, dtype=np.int64)
    kept = 0
    for p in range(w):  # positions kept in order: S stays sorted
        if not _shrinkable(p, yS, uS, aS, GS, g1, g2, g3, g4):
            S[kept] = S[p]
            new_pos[p], old_pos[kept] = kept, p
            kept += 1
    _keep_rows(w, kept, new_pos, old_pos, cache)
    _load(kept, full, comp, work, cache, False)
    return kept


@njit(cache=True, nogil=True, error_model="numpy")
def _run(full, comp, work, cache, state, tol, max_steps, shrink_every, share, nu, entries_limit):
    """Up to max_steps SMO iterations (nu: Solver_NU's selection), fewer where the entries computed from the data
    reach entries_limit: _steps between two shrinkings. state: [points in play, unshrunk once, steps to the next
    shrinking, converged, steps taken in all]; returns the violation m - M over the points in play at the last
    selection."""
    n = full[0].shape[0]
    yS, uS, aS, GS = comp[0], comp[1], comp[2], comp[3]
    meta = cache[4]
    violation = np.inf
    done = 0
    while done < max_steps:
        if meta[4] >= entries_limit:
            return violation
        w = state[0]
        batch = max_steps - done
        if shrink_every > 0:
            state[2] -= 1
            if state[2] <= 0:
                state[2] = shrink_every
                if state[1] == 0:
                    g1, g2, g3, g4 = _four_extremes(w, yS, uS, aS, GS, nu)
                    if max(g1 + g2, g3 + g4) <= 10.0 * tol:  # near the end: every point once more
                        state[1] = 1
                        w = _all_in_play(w, full, comp, work, cache)
                w = _shrink(w, full, comp, work, cache, share, nu)
                state[0] = w
            batch = min(batch, state[2])  # this iteration and those up to the next shrinking
        taken, settled, violation = _steps(w, comp, work, cache, state, batch, tol, nu, entries_limit)
        done += taken
        if shrink_every > 0:
            state[2] -= taken - 1
        if settled:
            if w < n:  # the points left out come back; the search goes on unless they hold too
                state[0] = _all_in_play(w, full, comp, work, cache)
                state[2] = shrink_every
                continue
            state[3] = 1
            return violation
    return violation


@njit(cache=True, nogil=True, error_model="numpy")
def _steps(w, comp, work, cache, state, count, tol, nu, entries_limit):
    """Up to `count` iterations over the w points in play, each a WSS2 selection and, where a pair violates by more
    than tol, its step; fewer where the entries computed from the data reach entries_limit. Returns (iterations,
    settled: no pair violates by more than tol, the violation at the last selection).

    Its tuples are unpacked here, once: the loop passes arrays alone to the helpers it inlines, and its rows are
    slices of one source array. A tuple passed to an inlined helper, or a row that is one of two arrays, costs
    numba atomic reference counts at every step: most of a step's time over 40 points in play. The rows are
    slices rather than offsets, whose possibly negative indices stop the loops' vectorizing."""
    yS, uS, aS, GS, dS = comp
    K = work[1]
    buf, slot_of, last, meta = cache[0], cache[1], cache[3], cache[4]
    whole = meta[3] == 1  # rows read from the whole K as they are (_load sets it, and nothing here changes it)
    src = K.reshape(-1) if whole else buf
    stride = K.shape[1] if whole else w
    violation = np.inf
    for done in range(count):
        if done > 0 and meta[4] >= entries_limit:
            return done, False, violation
        ip, gp, jn, gn = _most_violating(w, yS, uS, aS, GS, nu)
        if ip < 0 and jn < 0:  # I_up is empty: every pair holds
            return done + 1, True, 0.0
        p = ip if ip >= 0 else jn  # a row is read only where its sign has an i
        op = _cached(p, w, stride, slot_of, last, meta)
        if op < 0:
            op = _fill_slot(p, w, work, cache)
        on = op
        if nu:
            q = jn if jn >= 0 else ip
            on = _cached(q, w, stride, slot_of, last, meta)
            if on < 0:
                on = _fill_slot(q, w, work, cache)
        j, gp2, gn2 = _partner(w, yS, uS, aS, GS, dS, gp, gn, ip, jn, src[op:op + w], src[on:on + w])
        if nu:
            violation = max(gp + gp2, gn + gn2)
            i = (ip if yS[j] > 0 else jn) if j >= 0 else -1
        else:
            i, gmax2 = ip, max(gp2, gn2)
            violation = gp + gmax2
            if gmax2 == -np.inf:  # I_low is empty
                j, violation = -1, 0.0
        if j < 0 or violation <= tol:
            return done + 1, True, violation
        oi = _cached(i, w, stride, slot_of, last, meta)
        if oi < 0:
            oi = _fill_slot(i, w, work, cache)
        oj = _cached(j, w, stride, slot_of, last, meta)
        if oj < 0:
            oj = _fill_slot(j, w, work, cache)
        _step(i, j, w, yS, uS, aS, GS, dS, src[oi:oi + w], src[oj:oj + w])
        state[4] += 1
    return count, False, violation


@njit(cache=True, nogil=True, error_model="numpy")
def _gradient(K, XT, kind, gamma, coef0, degree, index, y, p, alpha, G, row):
    """G = Q alpha + p from the rows of K where alpha != 0 (row: scratch of length n)."""
    n = y.shape[0]
    for k in range(n):
        G[k] = p[k]
    for i in range(n):
        if alpha[i] != 0.0:
            _source_row(i, K, XT, kind, gamma, coef0, degree, index, row)
            c = y[i] * alpha[i]
            for k in range(n):
                G[k] += y[k] * c * row[k]


class RowCache:
    """Rows of K for the compiled SMO: the whole matrix (`full`), or computed from the data (`from_data`), and a
    buffer of cache_bytes for the rows of the points in play. Not to be shared by two solves at once.

    With `index` (one point per variable, e.g. epsilon-SVR's alpha_i and alpha*_i both on point i: LIBSVM's
    SVR_Q) the variables' K is K[index][:, index], never formed: a given K is read through the index, data's
    columns are repeated per variable. Without it the variables are the points."""

    def __init__(self, K, XT, kind, gamma, coef0, degree, diag, cache_doubles, index=None):
        self.K, self.XT, self.kind = K, XT, kind  # XT: the variables' points as columns (d x n), for rows computed
        self.gamma, self.coef0, self.degree = float(gamma), float(coef0), int(degree)
        self.index = np.zeros(0, dtype=np.int64) if index is None else index  # empty: K's rows are the variables'
        self.n = len(diag)
        self.diag = np.ascontiguousarray(diag, dtype=float)
        self.buffer = fresh_doubles(max(2 * self.n, int(cache_doubles)))  # untouched pages cost no memory
        self.capacity = min(self.n, len(self.buffer) // max(self.n, 1))  # rows held with every point in play
        # clock, slots used, rows computed, whole rows used as they are, entries computed
        self.meta = np.zeros(5, dtype=np.int64)
        # each point's slot, each slot's point, each slot's last use; `whole_rows`: the slots hold rows over every
        # point (a run that ended with every point in play), which the next run on these rows takes as they are
        self.slots = (np.full(self.n, -1, dtype=np.int64), np.zeros(self.n, dtype=np.int64),
                      np.zeros(self.n, dtype=np.int64))
        self.whole_rows = False
        self.entries_limit, self.on_limit = math.inf, None  # from_data's switch to the whole K

    @classmethod
    def full(cls, K: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES, index=None,
             diag: np.ndarray | None = None) -> "RowCache":
        """The whole Gram matrix K (n x n, symmetric): no value is computed; rows of the points in play after
        shrinking are copied out of it (at most cache_bytes, and no more than the points in play can use).
        index: each variable's row of K (class docstring). diag: K's diagonal at the variables where the caller
        has it (read from K otherwise: one entry a row, a cache miss each in a large K)."""
        K = one_type(K)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"K must be a square matrix, got shape {K.shape}")
        if index is None:
            n = K.shape[0]
            in_play = (1.0 - SHRINK_SHARE) * n  # the most points in play once some are left out
        else:  # every row is copied out (K's own rows are not the variables'), so room for all of them
            index = _checked_index(index, K.shape[0])
            n = in_play = len(index)
        if diag is None:
            diag = np.diag(K) if index is None else np.diag(K)[index]
        elif np.shape(diag) != (n,):
            raise ValueError(f"diag must hold the {n} variables' K_ii, got shape {np.shape(diag)}")
        return cls(K, np.zeros((0, 0)), GIVEN, 0.0, 0.0, 1, diag, min(cache_bytes / 8, in_play * in_play), index)

    @classmethod
    def from_data(cls, kernel, X: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES, index=None,
                  entries_limit: float = math.inf, on_limit=None) -> "RowCache":
        """Rows k(x_i, .) computed from dense X for a formulations.kernels.Kernel (rbf, linear, poly, sigmoid),
        at most cache_bytes of them kept (never fewer than 2 rows). index: each variable's point (class
        docstring). on_limit: called (no arguments) once the rows computed hold entries_limit entries in all; it
        returns the variables' whole K (n x n), from which smo reads every later row (`become_whole`), or None
        where the rows go on from the data up to a later entries_limit it has set."""
        if kernel.name not in KERNEL_CODES:
            raise ValueError(f"the compiled rows know {sorted(KERNEL_CODES)}, not kernel {kernel.name!r}")
        X = one_type(X)
        if index is not None:
            X = np.ascontiguousarray(X[_checked_index(index, X.shape[0])])
        n, d = X.shape
        kind = KERNEL_CODES[kernel.name]
        gamma = kernel.resolved_gamma(d)
        dots = np.einsum("ij,ij->i", X, X)
        diag = (np.ones(n) if kind == RBF else dots if kind == LINEAR
                else (gamma * dots + kernel.coef0) ** kernel.degree if kind == POLY
                else np.tanh(gamma * dots + kernel.coef0))
        rows = cls(np.zeros((0, 0)), np.ascontiguousarray(X.T), kind, gamma, kernel.coef0, kernel.degree, diag,
                   cache_bytes / 8)
        if on_limit is not None:
            rows.entries_limit, rows.on_limit = float(entries_limit), on_limit
        return rows

    def become_whole(self, K: np.ndarray) -> None:
        """Rows read from the whole K from now on (as `full`'s), in the buffer already held; the counts kept."""
        whole = RowCache.full(K)
        self.K, self.XT, self.kind, self.diag = whole.K, whole.XT, whole.kind, whole.diag
        self.capacity = min(self.n, len(self.buffer) // max(self.n, 1))
        self.entries_limit, self.on_limit = math.inf, None

    @property
    def limited(self) -> bool:
        """Whether the rows computed from the data reached entries_limit (on_limit is then due)."""
        return self.on_limit is not None and self.entries_computed >= self.entries_limit

    @property
    def rows_computed(self) -> int:
        """Rows of kernel values computed from the data so far (0 for a whole K)."""
        return int(self.meta[2])

    @property
    def entries_computed(self) -> int:
        """Kernel values in those rows (a row computed with points left out by shrinking is shorter)."""
        return int(self.meta[4])

    def _source(self):
        return self.K, self.XT, self.kind, self.gamma, self.coef0, self.degree, self.index

    def row(self, i: int) -> np.ndarray:
        """Row i of K (a copy)."""
        if not 0 <= i < self.n:
            raise IndexError(f"row {i} of a {self.n}-point kernel")
        out = np.empty(self.n)
        _source_row(np.int64(i), *self._source(), out)
        return out

    def gradient(self, y: np.ndarray, alpha: np.ndarray, p=None) -> np.ndarray:
        """Q alpha + p (Q = Y K Y; p = -1 by default, the C-SVM's), from the rows where alpha != 0."""
        G = np.empty(self.n)
        p = -np.ones(self.n) if p is None else np.ascontiguousarray(p, dtype=float)
        _gradient(*self._source(), np.ascontiguousarray(y, dtype=float), p, np.ascontiguousarray(alpha, dtype=float),
                  G, np.empty(self.n))
        return G


def _checked_index(index, points: int) -> np.ndarray:
    """index as int64 variables -> points, or a ValueError."""
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.ndim != 1 or index.size == 0 or index.min() < 0 or index.max() >= points:
        raise ValueError(f"index must map each variable to one of the {points} points")
    return index


@dataclass
class SMOResult:
    alpha: np.ndarray
    grad: np.ndarray  # Q alpha + p at alpha, for every variable
    iterations: int  # two-point steps taken
    converged: bool  # m - M <= tol over every point
    violation: float  # m - M at the last selection (over the points in play; over all of them when converged)
    timed_out: bool = False
    rows_computed: int = 0  # kernel rows computed from the data by this call (0 for a whole K)


def _checked(rows, y, upper, alpha0, grad0, tol, p, balance):
    """The arguments of smo as arrays, or a ValueError naming the bad one."""
    n = rows.n
    # copies: a read-only y or C_i array would be another type to numba, compiled apart from the one warm() loads
    y = np.array(y, dtype=float)
    upper = None if y.shape != (n,) else np.full(n, float(upper)) if isinstance(upper, (float, int)) else np.array(
        np.broadcast_to(np.asarray(upper, dtype=float), (n,)))
    alpha = None if y.shape != (n,) else np.zeros(n) if alpha0 is None else np.array(alpha0, dtype=float)
    # y, C_i and alpha0's entries tested in one compiled pass (a dozen numpy calls: most of a small pair's fixed cost)
    bad = _BAD_Y
    if y.shape == (n,):
        shaped = alpha.shape == (n,)
        bad = _bad_entries(y, upper, alpha if shaped else np.zeros(n))
        bad = _BAD_ALPHA if bad == _GOOD and not shaped else bad
    if bad == _BAD_Y:
        raise ValueError(f"y must hold {n} labels, each +1 or -1")
    if p is not None:
        p = np.array(p, dtype=float)
        if p.shape != (n,) or not np.all(np.isfinite(p)):
            raise ValueError(f"p must hold {n} finite numbers")
    if not math.isfinite(balance):
        raise ValueError(f"balance must be finite, got {balance!r}")
    if bad == _BAD_UPPER:
        raise ValueError("every upper bound C_i must be finite and > 0")
    if not (tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be finite and > 0, got {tol!r}")
    if alpha0 is None and balance != 0:
        raise ValueError(f"alpha0 is needed: alpha = 0 does not meet y'alpha = {balance:g}")
    if bad == _BAD_ALPHA:
        raise ValueError(f"alpha0 must be {n} numbers with 0 <= alpha0_i <= C_i")
    if alpha0 is not None and abs(float(y @ alpha) - balance) > 1e-9 * max(float(alpha.sum()), np.finfo(float).tiny):
        raise ValueError(f"alpha0 is infeasible: y'alpha0 = {float(y @ alpha):.3g}, not {balance:g}")
    if grad0 is not None:
        G = np.array(grad0, dtype=float)
        if G.shape != (n,) or not np.all(np.isfinite(G)):
            raise ValueError(f"grad0 must hold {n} finite numbers, got shape {G.shape}")
    elif alpha0 is not None and alpha.any():
        G = rows.gradient(y, alpha, p)
    else:
        G = -np.ones(n) if p is None else p.copy()
    return y, upper, alpha, G


#: What _bad_entries found: nothing, a label not +1 or -1, a C_i not finite and > 0, an alpha0_i outside [0, C_i].
_GOOD, _BAD_Y, _BAD_UPPER, _BAD_ALPHA = 0, 1, 2, 3


@njit(cache=True, nogil=True, error_model="numpy")
def _bad_entries(y, upper, alpha):
    """The first of _checked's entry tests that fails (_BAD_Y, _BAD_UPPER, _BAD_ALPHA, in that order), or _GOOD:
    |y_i| = 1, C_i finite and > 0, alpha_i finite and 0 <= alpha_i <= C_i."""
    for i in range(y.size):
        if not abs(y[i]) == 1.0:
            return _BAD_Y
    for i in range(y.size):
        if not (upper[i] > 0 and math.isfinite(upper[i])):
            return _BAD_UPPER
    for i in range(y.size):
        if not (math.isfinite(alpha[i]) and alpha[i] >= 0 and alpha[i] <= upper[i]):
            return _BAD_ALPHA
    return _GOOD


def smo(K, y, upper, alpha0=None, grad0=None, tol: float = 1e-6, max_iter: int = 10**9,
        deadline: Deadline | None = None, shrinking: bool = True, p=None, balance: float = 0.0,
        nu: bool = False) -> SMOResult:
    """The kernel dual min 1/2 a'Qa - 1'a, y'a = 0, 0 <= a <= upper (Q = Y K Y) by compiled SMO (module docstring),
    or LIBSVM's general form min 1/2 a'Qa + p'a, y'a = balance (p given: one-class, epsilon-SVR).

    K: an n x n Gram matrix, or a RowCache (one with an index for variables that share points). y: labels
    (the variables' signs) +1/-1. upper: C, or one C_i > 0 per variable. alpha0: a feasible start (default 0,
    which needs balance = 0); grad0: Q alpha0 + p where known (else computed from the rows of alpha0's nonzeros).
    tol: the violation m - M at which it stops. deadline: looked at between chunks of steps. nu: LIBSVM's
    Solver_NU (a second equality, the sum of each sign's alpha, kept by taking both points of a pair in one
    sign: nu-SVC, nu-SVR; alpha0 must meet it). alpha0 and grad0 are not changed. A bad argument is a
    ValueError naming it.
    """
    rows = K if isinstance(K, RowCache) else RowCache.full(K)
    y, upper, alpha, G = _checked(rows, y, upper, alpha0, grad0, tol, p, balance)
    n = rows.n
    deadline = NEVER if deadline is None else deadline
    computed = rows.rows_computed
    snap = alpha.copy()
    comp = (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n))
    full, work, cache = _arrays(rows, y, upper, alpha, G, snap)
    flush = not rows.whole_rows  # the last run's rows kept where they span every point
    shrink_every = min(n, SHRINK_EVERY) if shrinking else 0
    state = np.array([n, 0, shrink_every, 0, 0], dtype=np.int64)
    violation, timed_out = math.inf, False
    one_call = deadline.limit is None and rows.on_limit is None  # nothing to look at before the first chunk ends
    if one_call:
        violation = _first_chunk(full, comp, work, cache, flush, state, float(tol), int(min(FIRST_CHUNK, max_iter)),
                                 int(max_iter), shrink_every, SHRINK_SHARE, bool(nu))
    else:
        _load(n, full, comp, work, cache, flush)
    if not (one_call and (state[3] or state[4] >= max_iter)):  # the rest in chunks
        violation, timed_out = _in_chunks(rows, (y, upper, alpha, G, snap), full, comp, work, cache, state, tol,
                                          max_iter, shrink_every, nu, deadline)
    rows.whole_rows = bool(state[0] == n)
    return SMOResult(alpha, G, int(state[4]), bool(state[3]), float(violation), timed_out,
                     rows.rows_computed - computed)


def _in_chunks(rows: RowCache, arrays, full, comp, work, cache, state, tol: float, max_iter: int,
               shrink_every: int, nu: bool, deadline: Deadline) -> tuple[float, bool]:
    """smo's steps in chunks (_run), the deadline looked at between them, and the rows switched to the whole K where
    they reach their entries' limit (RowCache.from_data's on_limit); then alpha and G of every point written back
    (_sync). Returns (the last violation, whether the deadline stopped it)."""
    n = rows.n
    chunk, violation, timed_out = FIRST_CHUNK, math.inf, False
    while not state[3] and state[4] < max_iter:
        if deadline.passed():
            timed_out = True
            break
        began, before = time.perf_counter(), state[4]
        violation = _run(full, comp, work, cache, state, float(tol), int(min(chunk, max_iter - state[4])),
                         shrink_every, SHRINK_SHARE, nu, rows.entries_limit)
        spent = time.perf_counter() - began
        whole = rows.on_limit() if rows.limited else None
        if whole is not None:  # the steps go on from here on the whole K, every point in play
            _sync(state[0], full, comp, work)
            rows.become_whole(whole)
            full, work, cache = _arrays(rows, *arrays)
            state[0] = n
            _load(n, full, comp, work, cache, True)
        elif rows.limited:
            raise RuntimeError("on_limit returned no matrix and left the rows' entries_limit where it was")
        if state[4] > before and spent > 0:  # aim the next chunk at CHUNK_SECONDS
            chunk = int(min(max(100, chunk * CHUNK_SECONDS / spent), 10**7))
    _sync(state[0], full, comp, work)  # alpha and G of every point
    return violation, timed_out


@njit(cache=True, nogil=True, error_model="numpy")
def _first_chunk(full, comp, work, cache, flush, state, tol, steps, max_iter, shrink_every, share, nu):
    """smo's first chunk where nothing is looked at before it ends (no deadline, rows that never switch), in one
    call: the points loaded (_load), up to `steps` steps (_run), and alpha and G of every point written back (_sync)
    where the solve ends there (converged, or max_iter steps). One call gives the interpreter's lock back once,
    where load, chunk and write-back made a thread running Python beside it (a multiclass fit's closing checks,
    experiments.estimator) wait at each; a longer solve goes on in chunks (_in_chunks), the same steps as from
    the start (state carries them), and Ctrl-C is seen between them as before."""
    _load(state[0], full, comp, work, cache, flush)
    violation = _run(full, comp, work, cache, state, tol, steps, shrink_every, share, nu, np.inf)
    if state[3] == 1 or state[4] >= max_iter:
        _sync(state[0], full, comp, work)
    return violation


def _arrays(rows: RowCache, y, upper, alpha, G, snap):
    """The compiled loop's arrays over `rows` (smo's full, work and cache tuples), every point in play."""
    n = rows.n
    full = (y, upper, alpha, G, snap, rows.diag)
    XST = np.empty_like(rows.XT) if rows.kind != GIVEN else rows.XT  # the points in play as columns
    work = (np.arange(n, dtype=np.int64), rows.K, rows.XT, XST, rows.kind, rows.gamma, rows.coef0, rows.degree,
            rows.index)
    cache = (rows.buffer, *rows.slots, rows.meta)
    return full, work, cache


def warm() -> None:
    """Every compiled function loaded (from numba's cache, or compiled where it has none: the first run on a
    machine): a server that forks a process per solve calls this once, so that no solve pays the load."""
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    K = rbf_gram(1.0, X)
    smo(K, y, 1.0, shrinking=False)
    smo(K, y, 1.0, alpha0=np.array([0.5, 0.5, 0.0, 0.0]))
    smo(K, y, 1.0, deadline=Deadline(3600.0))  # in chunks (_in_chunks), where the others are one call each
    rows = RowCache.from_data(_RBF, X)
    smo(rows, y, 1.0, alpha0=np.array([0.5, 0.5, 0.0, 0.0]))
    combination(K, np.array([0, 1]), np.array([1.0, -1.0]))
    submatrix(K, np.array([0, 1]), np.array([1, 2]))
    abs_combination(K, np.array([0, 1]), np.array([1.0, -1.0]))
    combine_runs(K, np.array([0, 1]), np.array([1.0, -1.0]), np.array([[1, 3, 0]]), np.zeros(2), True)  # GramBlock's


class _RbfKernel:
    """A stand-in for formulations.kernels.Kernel("rbf", gamma=1) (this module does not import formulations)."""

    name, coef0, degree = "rbf", 0.0, 3

    @staticmethod
    def resolved_gamma(d: int) -> float:
        return 1.0


_RBF = _RbfKernel()
