r"""Sequential minimal optimization of the kernel dual, compiled (numba): LIBSVM's solver.

In minimisation form, with Q = Y K Y and the gradient G = Q alpha - 1,

    min  1/2 alpha' Q alpha - 1' alpha    s.t.  y' alpha = 0,  0 <= alpha_i <= C_i.

Each step takes two points (i, j) and solves the problem in them exactly, the others fixed
(Platt 1998): i is the most violating point of I_up, j the point of I_low whose two-point step
with i lowers the objective most (the second-order choice, Fan, Chen and Lin 2005: LIBSVM's WSS2),
both clipped at their bounds (which they then hit exactly, so "at a bound" needs no tolerance).
It stops when the maximal violation

    m - M = max_{I_up} -y_i G_i - min_{I_low} -y_i G_i  <=  tol

(solvers.algorithms.working_set's module docstring has I_up, I_low). Points at a bound that no
violating pair can use are shrunk out of the selection (LIBSVM's be_shrunk), every `shrink_every`
steps; when the violation over the others is within tol, all come back and the search goes on
unless it holds for all. The gradient is kept exact for every point (the rows are whole), so
the recheck needs no reconstruction.

K is given either whole (an n x n array: `RowCache.full`) or as rows computed from the data when
asked, kept in a least-recently-used cache of a bounded size (`RowCache.from_data`: rbf, linear,
poly and sigmoid on dense X, in float64: LIBSVM keeps float32 rows, whose rounding its answers
carry). The loop runs in chunks of steps without the interpreter's lock (nogil): a caller may run
two solves on two threads (each with its own RowCache), and the deadline is looked at between chunks.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from solvers.deadline import NEVER, Deadline

#: The curvature used where K_ii + K_jj - 2 K_ij <= 0 (LIBSVM's TAU).
TAU = 1e-12
#: Kernel codes of the compiled rows (GIVEN: the whole K is in the cache, no row is computed).
GIVEN, RBF, LINEAR, POLY, SIGMOID = -1, 0, 1, 2, 3
KERNEL_CODES = {"rbf": RBF, "linear": LINEAR, "poly": POLY, "sigmoid": SIGMOID}
#: Steps between two shrinkings, at most (LIBSVM's min(n, 1000)).
SHRINK_EVERY = 1000
#: The first chunk of steps between two looks at the deadline; later chunks aim at CHUNK_SECONDS each.
FIRST_CHUNK = 2000
CHUNK_SECONDS = 0.1
#: Bytes of cached rows by default where K is computed from the data (LIBSVM's SVC: 200 MB).
DEFAULT_CACHE_BYTES = 512 * 2**20


@njit(cache=True, nogil=True)
def _kernel_row(i, X, kind, gamma, coef0, degree, out):
    """k(x_i, x_j) for every j into out. The rbf from the differences (exact at any translation)."""
    n, d = X.shape
    for j in range(n):
        s = 0.0
        if kind == RBF:
            for k in range(d):
                t = X[i, k] - X[j, k]
                s += t * t
            out[j] = math.exp(-gamma * s)
        else:
            for k in range(d):
                s += X[i, k] * X[j, k]
            if kind == LINEAR:
                out[j] = s
            elif kind == POLY:
                out[j] = (gamma * s + coef0) ** degree
            else:
                out[j] = math.tanh(gamma * s + coef0)
    if kind == RBF:
        out[i] = 1.0


@njit(cache=True, nogil=True)
def _row(i, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree):
    """Row i of K from the cache, computed into the least recently used slot when missing.
    meta: [clock, slots used, rows computed]."""
    meta[0] += 1
    s = slot_of[i]
    if s < 0:
        capacity = cache.shape[0]
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
        owner[s] = i
        slot_of[i] = s
        _kernel_row(i, X, kind, gamma, coef0, degree, cache[s])
        meta[2] += 1
    last[s] = meta[0]
    return cache[s]


@njit(cache=True, nogil=True)
def _extremes(act, na, y, upper, alpha, G):
    """(m, -M) over the active points act[:na]: LIBSVM's Gmax1 and Gmax2."""
    gmax1 = -np.inf
    gmax2 = -np.inf
    for k in range(na):
        t = act[k]
        if y[t] > 0:
            if alpha[t] < upper[t] and -G[t] > gmax1:
                gmax1 = -G[t]
            if alpha[t] > 0.0 and G[t] > gmax2:
                gmax2 = G[t]
        else:
            if alpha[t] > 0.0 and G[t] > gmax1:
                gmax1 = G[t]
            if alpha[t] < upper[t] and -G[t] > gmax2:
                gmax2 = -G[t]
    return gmax1, gmax2


@njit(cache=True, nogil=True)
def _shrink(act, na, y, upper, alpha, G, gmax1, gmax2):
    """Drop from act[:na] the points at a bound that no violating pair can use; the new count."""
    kept = 0
    for k in range(na):
        t = act[k]
        out = False
        if alpha[t] >= upper[t]:
            out = -G[t] > gmax1 if y[t] > 0 else -G[t] > gmax2
        elif alpha[t] <= 0.0:
            out = G[t] > gmax2 if y[t] > 0 else G[t] > gmax1
        if not out:
            act[kept] = t
            kept += 1
    return kept


@njit(cache=True, nogil=True)
def _select(act, na, y, upper, alpha, G, diag, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree):
    """LIBSVM's WSS2 over act[:na]: (i, j, m - M); j = -1 where no pair violates."""
    gmax = -np.inf
    i = -1
    for k in range(na):
        t = act[k]
        if y[t] > 0:
            if alpha[t] < upper[t] and -G[t] >= gmax:
                gmax = -G[t]
                i = t
        elif alpha[t] > 0.0 and G[t] >= gmax:
            gmax = G[t]
            i = t
    gmax2 = -np.inf
    j = -1
    best = np.inf
    if i < 0:  # I_up is empty: every pair holds
        return i, j, 0.0
    Ki = _row(i, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree)
    for k in range(na):
        t = act[k]
        if y[t] > 0:
            if alpha[t] <= 0.0:
                continue
            grad_diff = gmax + G[t]
            if G[t] >= gmax2:
                gmax2 = G[t]
        else:
            if alpha[t] >= upper[t]:
                continue
            grad_diff = gmax - G[t]
            if -G[t] >= gmax2:
                gmax2 = -G[t]
        if grad_diff > 0.0:
            quad = diag[i] + diag[t] - 2.0 * Ki[t]  # K_ii + K_tt - 2 K_it whatever the labels
            if quad <= 0.0:
                quad = TAU
            gain = -(grad_diff * grad_diff) / quad
            if gain <= best:
                best = gain
                j = t
    if gmax2 == -np.inf:  # I_low is empty
        return i, -1, 0.0
    return i, j, gmax + gmax2


@njit(cache=True, nogil=True)
def _step(i, j, y, upper, alpha, G, diag, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree):
    """The two-point subproblem in (i, j) solved exactly and clipped (LIBSVM's update), G updated."""
    Ki = _row(i, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree)
    Kj = _row(j, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree)
    C_i, C_j = upper[i], upper[j]
    old_i, old_j = alpha[i], alpha[j]
    quad = diag[i] + diag[j] - 2.0 * Ki[j]
    if quad <= 0.0:
        quad = TAU
    if y[i] != y[j]:
        delta = (-G[i] - G[j]) / quad
        diff = alpha[i] - alpha[j]
        alpha[i] += delta
        alpha[j] += delta
        if diff > 0.0:
            if alpha[j] < 0.0:
                alpha[j] = 0.0
                alpha[i] = diff
        elif alpha[i] < 0.0:
            alpha[i] = 0.0
            alpha[j] = -diff
        if diff > C_i - C_j:
            if alpha[i] > C_i:
                alpha[i] = C_i
                alpha[j] = C_i - diff
        elif alpha[j] > C_j:
            alpha[j] = C_j
            alpha[i] = C_j + diff
    else:
        delta = (G[i] - G[j]) / quad
        total = alpha[i] + alpha[j]
        alpha[i] -= delta
        alpha[j] += delta
        if total > C_i:
            if alpha[i] > C_i:
                alpha[i] = C_i
                alpha[j] = total - C_i
        elif alpha[j] < 0.0:
            alpha[j] = 0.0
            alpha[i] = total
        if total > C_j:
            if alpha[j] > C_j:
                alpha[j] = C_j
                alpha[i] = total - C_j
        elif alpha[i] < 0.0:
            alpha[i] = 0.0
            alpha[j] = total
    di = y[i] * (alpha[i] - old_i)
    dj = y[j] * (alpha[j] - old_j)
    for k in range(G.shape[0]):  # Q_ik = y_i y_k K_ik
        G[k] += y[k] * (di * Ki[k] + dj * Kj[k])


@njit(cache=True, nogil=True)
def _run(cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree, diag, y, upper, alpha, G, act,
         state, tol, max_steps, shrink_every):
    """Up to max_steps SMO steps. state: [active count, unshrunk once, steps to the next shrinking,
    converged, steps taken in all]; returns the violation m - M over the active points at the last selection."""
    n = y.shape[0]
    violation = np.inf
    for _ in range(max_steps):
        na = state[0]
        if shrink_every > 0:
            state[2] -= 1
            if state[2] <= 0:
                state[2] = shrink_every
                gmax1, gmax2 = _extremes(act, na, y, upper, alpha, G)
                if state[1] == 0 and gmax1 + gmax2 <= 10.0 * tol:  # near the end: every point once more
                    state[1] = 1
                    for k in range(n):
                        act[k] = k
                    na = n
                na = _shrink(act, na, y, upper, alpha, G, gmax1, gmax2)
                state[0] = na
        i, j, violation = _select(act, na, y, upper, alpha, G, diag, cache, slot_of, owner, last, meta, X, kind,
                                  gamma, coef0, degree)
        if j < 0 or violation <= tol:
            if na < n:  # the shrunk points come back; the search goes on unless they hold too
                for k in range(n):
                    act[k] = k
                state[0] = n
                state[2] = shrink_every
                continue
            state[3] = 1
            return violation
        _step(i, j, y, upper, alpha, G, diag, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree)
        state[4] += 1
    return violation


@njit(cache=True, nogil=True)
def _gradient(cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree, y, alpha, G):
    """G = Q alpha - 1 from the rows of K where alpha != 0."""
    n = y.shape[0]
    for k in range(n):
        G[k] = -1.0
    for i in range(n):
        if alpha[i] != 0.0:
            Ki = _row(i, cache, slot_of, owner, last, meta, X, kind, gamma, coef0, degree)
            c = y[i] * alpha[i]
            for k in range(n):
                G[k] += y[k] * c * Ki[k]


class RowCache:
    """Rows of K for the compiled SMO: the whole matrix (`full`), or computed from the data and kept in a
    least-recently-used cache of `capacity` rows (`from_data`). Not to be shared by two solves at once."""

    def __init__(self, cache, slot_of, X, kind, gamma=0.0, coef0=0.0, degree=1, diag=None):
        self.cache, self.slot_of, self.X, self.kind = cache, slot_of, X, kind
        self.gamma, self.coef0, self.degree = float(gamma), float(coef0), int(degree)
        self.n = len(slot_of)
        self.capacity = cache.shape[0]
        self.owner = np.full(self.capacity, -1, dtype=np.int64)
        self.last = np.zeros(self.capacity, dtype=np.int64)
        self.meta = np.zeros(3, dtype=np.int64)  # clock, slots used, rows computed
        if kind == GIVEN:
            self.owner[:] = np.arange(self.n)
            self.meta[1] = self.n
        self.diag = np.ascontiguousarray(diag if diag is not None else np.diag(cache), dtype=float)

    @classmethod
    def full(cls, K: np.ndarray) -> "RowCache":
        """The whole Gram matrix K (n x n, symmetric): no row is computed."""
        K = np.ascontiguousarray(K, dtype=float)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"K must be a square matrix, got shape {K.shape}")
        n = K.shape[0]
        return cls(K, np.arange(n, dtype=np.int64), np.zeros((0, 0)), GIVEN)

    @classmethod
    def from_data(cls, kernel, X: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES) -> "RowCache":
        """Rows k(x_i, .) computed from dense X for a formulations.kernels.Kernel (rbf, linear, poly, sigmoid),
        at most cache_bytes of them kept (never fewer than 2 rows)."""
        if kernel.name not in KERNEL_CODES:
            raise ValueError(f"the compiled rows know {sorted(KERNEL_CODES)}, not kernel {kernel.name!r}")
        X = np.ascontiguousarray(X, dtype=float)
        n, d = X.shape
        capacity = int(min(n, max(2, cache_bytes // (8 * max(n, 1)))))
        kind = KERNEL_CODES[kernel.name]
        gamma = kernel.resolved_gamma(d)
        if kind == RBF:
            diag = np.ones(n)
        else:
            dots = np.einsum("ij,ij->i", X, X)
            diag = dots if kind == LINEAR else (gamma * dots + kernel.coef0) ** kernel.degree if kind == POLY \
                else np.tanh(gamma * dots + kernel.coef0)
        return cls(np.empty((capacity, n)), np.full(n, -1, dtype=np.int64), X, kind, gamma, kernel.coef0,
                   kernel.degree, diag)

    @property
    def rows_computed(self) -> int:
        return int(self.meta[2])

    def _args(self):
        return (self.cache, self.slot_of, self.owner, self.last, self.meta, self.X, self.kind, self.gamma,
                self.coef0, self.degree)

    def row(self, i: int) -> np.ndarray:
        """A copy of row i of K."""
        if not 0 <= i < self.n:
            raise IndexError(f"row {i} of a {self.n}-point kernel")
        return _row(np.int64(i), *self._args()).copy()

    def gradient(self, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """Q alpha - 1 (Q = Y K Y)."""
        G = np.empty(self.n)
        _gradient(*self._args(), y, alpha, G)
        return G


@dataclass
class SMOResult:
    alpha: np.ndarray
    grad: np.ndarray  # Q alpha - 1 at alpha, kept exact for every point
    iterations: int  # two-point steps taken
    converged: bool  # m - M <= tol over every point
    violation: float  # m - M at the last selection (over the active points; over all of them when converged)
    timed_out: bool = False
    rows_computed: int = 0  # kernel rows computed by this call (0 for a whole K)


def smo(K, y, upper, alpha0=None, grad0=None, tol: float = 1e-6, max_iter: int = 10**9,
        deadline: Deadline | None = None, shrinking: bool = True) -> SMOResult:
    """The kernel dual min 1/2 a'Qa - 1'a, y'a = 0, 0 <= a <= upper (Q = Y K Y) by compiled SMO (module docstring).

    K: an n x n Gram matrix, or a RowCache. y: labels +1/-1. upper: C, or one C_i > 0 per point. alpha0: a
    feasible start (default 0); grad0: Q alpha0 - 1 where known (else computed from the rows of alpha0's
    nonzeros). tol: the violation m - M at which it stops. deadline: looked at between chunks of steps.
    alpha0 and grad0 are not changed. A bad argument is a ValueError naming it.
    """
    rows = K if isinstance(K, RowCache) else RowCache.full(K)
    n = rows.n
    y = np.ascontiguousarray(y, dtype=float)
    if y.shape != (n,) or not np.all(np.abs(y) == 1.0):
        raise ValueError(f"y must hold {n} labels, each +1 or -1")
    upper = np.ascontiguousarray(np.broadcast_to(np.asarray(upper, dtype=float), (n,)))
    if not np.all((upper > 0) & np.isfinite(upper)):
        raise ValueError("every upper bound C_i must be finite and > 0")
    if not (tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be finite and > 0, got {tol!r}")
    alpha = np.zeros(n) if alpha0 is None else np.array(alpha0, dtype=float)
    if alpha.shape != (n,) or np.any(alpha < 0) or np.any(alpha > upper) or not np.all(np.isfinite(alpha)):
        raise ValueError(f"alpha0 must be {n} numbers with 0 <= alpha0_i <= C_i")
    if abs(float(y @ alpha)) > 1e-9 * max(float(alpha.sum()), np.finfo(float).tiny):
        raise ValueError(f"alpha0 is infeasible: y'alpha0 = {float(y @ alpha):.3g}, not 0")
    if grad0 is not None:
        G = np.array(grad0, dtype=float)
        if G.shape != (n,):
            raise ValueError(f"grad0 must hold {n} numbers, got shape {G.shape}")
    else:
        G = -np.ones(n) if alpha0 is None else rows.gradient(y, alpha)
    deadline = NEVER if deadline is None else deadline
    computed = rows.rows_computed
    shrink_every = min(n, SHRINK_EVERY) if shrinking else 0
    act = np.arange(n, dtype=np.int64)
    state = np.array([n, 0, shrink_every, 0, 0], dtype=np.int64)
    chunk, violation, timed_out = FIRST_CHUNK, math.inf, False
    while not state[3] and state[4] < max_iter:
        if deadline.passed():
            timed_out = True
            break
        began, before = time.perf_counter(), state[4]
        violation = _run(*rows._args(), rows.diag, y, upper, alpha, G, act, state, float(tol),
                         int(min(chunk, max_iter - state[4])), shrink_every)
        spent = time.perf_counter() - began
        if state[4] > before and spent > 0:  # aim the next chunk at CHUNK_SECONDS
            chunk = int(min(max(100, chunk * CHUNK_SECONDS / spent), 10**7))
    return SMOResult(alpha, G, int(state[4]), bool(state[3]), float(violation), timed_out,
                     rows.rows_computed - computed)
