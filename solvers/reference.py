"""The exact optimum next to a returned point: what the checks measure the point against.

A solver's point is accurate to its tolerance at best. To say how far it is from the
optimum, the project computes the optimum itself from the point's active set and proves
it: every alpha_i is placed at zero, free or at C (formulations.recovery.classify), the
free ones and b are solved from the KKT equations

    y_i f(x_i) = 1   for free i,        sum_i alpha_i y_i = 0,
    f(x) = sum_{j free} alpha_j y_j K(x_j, x) + C sum_{j at C} y_j K(x_j, x) + b

(one dense solve of size |free| + 1; for linear data the same equations in (w, b, alpha_free),
through the thin SVD of the free points' margin rows where more than d + 1 are free: O(|free| d^2),
and with w eliminated where the features far outnumber the free points: O(|free|^2 d)),
and the result is accepted only if it satisfies
every KKT condition to rounding: 0 <= alpha <= C, y_i f_i >= 1 where alpha_i = 0,
y_i f_i <= 1 where alpha_i = C. A point that does is the optimum (the KKT conditions are
sufficient for a convex QP), so the distance to it is the returned point's true error.
A wrong guess of the sets is corrected a few times (points that break their condition
move to the free set, free alphas that leave [0, C] move to their bound): the primal-dual
active-set method, which converges in a few rounds from a point near the optimum (a round whose
free set is a few points from the last one factored is solved through that factor: _bordered_solve). Where no
such move changes the sets (free points inside (0, C) off their margins), one free point at
a time is tried at a bound (_one_to_a_bound).

When no proof is found (too many free points to solve for, or the sets do not settle),
`gap_bound` gives a rigorous but weaker bound from the duality gap of feasible points:
for P(w, b) = 1/2 ||w||^2 + convex, P(w, b) - P* >= 1/2 ||w - w*||^2, so
|f(x_i) - f*(x_i)| <= sqrt(K_ii) sqrt(2 (P - D)) plus the error in b.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack, qr
from scipy.optimize import lsq_linear

from formulations import penalty
from formulations.data_matrix import column_max_abs, dense, one_type, signed, squared_row_norms
from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once
from formulations.recovery import AT_BOUND, FREE, ZERO, classify, clip_value, hinge_argmin, per_point
from formulations.rbf_exponents import mirror
from solvers import lapack_inplace
from solvers.algorithms.compiled_gram import fresh_doubles, gram_threads, in_bands, in_threads
from solvers.deadline import NEVER, Deadline

#: KKT conditions of the polished point hold to this, in margin units (y f = 1 is the margin)
#: and relative to the size of alpha: far below every profile's tolerance (1e-4, 1e-6).
POLISH_TOL = 1e-8
#: Linear data: the largest free set whose margin rows are made independent (|F| d <= MAX_FREE^2), and the largest
#: d + |F| whose whole primal-form system is solved densely.
MAX_FREE = 4000
#: The kernel form's dense solve for |F| free points holds DENSE_COPIES arrays of (|F| + 1)^2 doubles at once (the
#: system M, its equilibrated copy, which the Cholesky factor overwrites, and LU's factor where Cholesky does not
#: hold; an rbf's system solved in K_FF's memory holds one, but falls back to these: _in_place_solve) and may take
#: DENSE_BYTES for them (dense_limit: 6,687 free points); beyond that the proof refuses with the memory it would
#: need, and the weaker gap bound decides.
DENSE_BYTES = 2**30
DENSE_COPIES = 3
#: A point this close to its margin (margin units) may be freed when the sets do not balance.
ON_MARGIN = 1e-6
ROUNDS = 12
#: A margin y_i f(x_i) adds terms alpha_j y_j K_ij whose sizes sum to T_i (Gram.magnitudes); float arithmetic
#: gets it right only to a few eps T_i (pairwise and blocked sums), so a KKT test on it allows this times T_i.
#: Where f cancels (w* near 0 over large x) T_i eps dwarfs POLISH_TOL and no point could pass without it.
MARGIN_ROUNDING = 32 * np.finfo(float).eps
#: The bounded least-squares fit of the free alphas (scipy's BVLS) is tried on at most BVLS_MAX_ENTRIES
#: entries of its matrix; above that the proof gives up on the sets it was given. Its step limit does not
#: bound it (BVLS's first phase is not counted), and a fit over thousands of free points takes tens of
#: seconds (docs/benchmarks.md).
BVLS_MAX_ENTRIES = 500 * 500


class NotTried(Exception):
    """A solve the proof does not try: the free alphas' bounded least-squares fit beyond BVLS_MAX_ENTRIES, or
    a singular system's least squares where it was told not to (least_squares=False). The proof fails on
    these sets."""


class Gram:
    """K through what the formulation has: the data X (K = X X', X dense or sparse) or a kernel matrix K."""

    def __init__(self, X: np.ndarray | None, K: np.ndarray | None):
        self.X, self.K = X, K

    def columns(self, J: np.ndarray) -> np.ndarray:
        return self.K[:, J] if self.K is not None else dense(self.X @ self.X[J].T)

    def submatrix(self, I: np.ndarray, J: np.ndarray) -> np.ndarray:
        """K[I][:, J] (a working set's block, the free points' system) without the columns' other rows."""
        if self.K is None:
            return dense(self.X[I] @ self.X[J].T)
        # the shorter side gathered first: two plain takes are several times faster than one np.ix_ index
        return self.K[:, J][I] if np.size(J) < np.size(I) else self.K[I][:, J]

    def times(self, u: np.ndarray) -> np.ndarray:
        """K u, touching only the columns where u is nonzero."""
        nz = np.flatnonzero(u)
        if self.K is not None:
            return self.K[:, nz] @ u[nz]
        return self.X @ (self.X[nz].T @ u[nz])

    def magnitudes(self, u: np.ndarray) -> np.ndarray:
        """sum_j |K_ij u_j| for each i: the size of the terms that K u adds, which bounds its rounding."""
        nz = np.flatnonzero(u)
        v = np.abs(u[nz])
        if self.K is not None:
            return np.abs(self.K[:, nz]) @ v
        out = np.zeros(self.X.shape[0])
        step = 65536  # row chunks: |X| is never held whole (n = 1e6, d = 20 would be 160 MB)
        Xnz = self.X[nz]
        s = np.zeros(self.X.shape[1])
        for k in range(0, nz.size, step):
            s += abs(Xnz[k:k + step]).T @ v[k:k + step]
        for k in range(0, out.size, step):
            out[k:k + step] = abs(self.X[k:k + step]) @ s
        return out

    def max_diagonal(self) -> float:
        if self.K is not None:
            return float(np.max(np.diag(self.K)))
        return float(np.max(squared_row_norms(self.X)))


@dataclass
class Reference:
    ok: bool
    reason: str = ""
    alpha: np.ndarray | None = None
    g: np.ndarray | None = None  # f(x_i) - b at the optimum
    b: float = math.nan
    b_lower: float = math.nan  # the optimal b's (one value when a free point pins b)
    b_upper: float = math.nan
    objective: float = math.nan  # P* = D*, computed as P (1/2 ||w*||^2 + C sum xi*)
    rounds: int = 0
    w: np.ndarray | None = None  # w* (linear formulations)
    dual_objective: float = math.nan  # D* computed as D (sum alpha* - 1/2 ||w*||^2: no C times f's rounding)

    def weights(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """w* = sum_i alpha*_i y_i x_i (the proof's own w* where it solved for it)."""
        return self.w if self.w is not None else X.T @ (y * self.alpha)


def polish(gram: Gram, y: np.ndarray, C: float, alpha: np.ndarray, decision: np.ndarray,
           least_squares: bool = True, deadline: Deadline = NEVER, codes: np.ndarray | None = None) -> Reference:
    """The optimum proved from the active set of (alpha, decision), or ok=False with the reason.

    Two starting guesses of the sets: `classify`'s, then (near-degenerate data, where every point
    is within 1e-4 of its margin and the free ones cannot be told apart) each alpha rounded to its
    nearer bound. The first that proves an optimum wins.
    least_squares=False: a singular system for the free points ends a guess at once instead of a
    least-squares solve (the kernel working set's tail, solvers.algorithms.working_set.proof.finished_by_proof).
    deadline: a solve's time limit (solvers.deadline); no round starts once it has passed (reason
    STOPPED): a round is one dense solve for the free points (0.2-0.3 s at 2,000 unknowns: SWAP_MAX_UNKNOWNS).
    codes: classify(alpha, y, decision, C) where the caller has it already.
    """
    if codes is None:  # the caller's classify(alpha, y, decision, C) where it has it
        codes = classify(alpha, y, decision, C)
    kept = KeptFactor()  # each guess's rounds solve sets a few points apart: one factor serves them
    basis = _independent_free(gram, y, C, alpha, decision, codes)
    if basis is not None:  # more free points than their margin rows' rank: the sets are ambiguous
        proved = _polish_from(gram, y, C, alpha, basis, least_squares, deadline, kept)
        if proved.ok or deadline.passed():
            return proved
    first = _polish_from(gram, y, C, alpha, codes, least_squares, deadline, kept)
    if first.ok or penalty.is_hard(C) or deadline.passed():
        return first
    rounded = np.where(np.asarray(alpha) >= 0.5 * C, AT_BOUND, ZERO).astype(codes.dtype)
    second = _polish_from(gram, y, C, alpha, rounded, least_squares, deadline, kept)
    return second if second.ok else first


#: The reason of a proof the deadline stopped.
STOPPED = "stopped at the time limit"

#: A free point's margin row [y_i x_i, y_i] (columns scaled to unit size) whose part outside the span of the rows
#: kept before it is below this fraction of its length depends on them (_independent_free).
DEPENDENT_ROW = 1e-9


def _independent_free(gram: Gram, y, C, alpha, decision, codes):
    """The sets with the free points' margin rows made independent, or None where they are already (or the data
    are a kernel's). Linear data: at most rank([Y X_F, y_F]) points can be free at a nondegenerate optimum, yet
    a solver's point leaves more near their margins (features of rank below d). Their margin rows, met in least
    squares, miss on free alphas inside (0, C), which no move of the rounds changes, and moving one of them at a
    time to a bound (_one_to_a_bound) is too slow. Here the rows are kept in the order of their points' margin residuals at the given point
    (nearest first, Gram-Schmidt); a point whose row depends on nearer ones goes to the bound its residual points
    to (above the margin: 0, below: C). The rounds then prove the optimum from these sets or correct them; the
    proof accepts only what satisfies every KKT condition, as from any guess."""
    free = np.flatnonzero(codes == FREE)
    if gram.X is None or free.size < 2 or free.size * gram.X.shape[1] > MAX_FREE**2:  # rows made dense below
        return None
    r = y[free] * decision[free] - 1.0
    order = free[np.argsort(np.abs(r), kind="stable")]
    rows = np.column_stack([dense(signed(y[order], gram.X[order])), y[order]])
    size = np.max(np.abs(rows), axis=0)
    size[size == 0] = 1.0
    rows = rows / size
    if rows.shape[1] > rows.shape[0]:  # wide: the rows' coordinates in an orthonormal basis of their span (rows' =
        # QR, coordinates R'), every length and projection below the same, at m instead of d + 1 per row
        rows = qr(rows.T, mode="r", overwrite_a=True, check_finite=False)[0][: rows.shape[0]].T
    kept = np.zeros((min(rows.shape), rows.shape[1]))  # the basis's rows, kept[:m] (no copy of them per row)
    m = 0
    dependent = np.zeros(order.size, dtype=bool)
    for k, row in enumerate(rows):
        basis = kept[:m]
        length = float(np.linalg.norm(row))
        rest = row - basis.T @ (basis @ row)
        rest -= basis.T @ (basis @ rest)  # twice: the classical Gram-Schmidt step loses orthogonality once
        left = float(np.linalg.norm(rest))
        if left <= DEPENDENT_ROW * length or m == rows.shape[1]:
            dependent[k] = True
        else:
            kept[m] = rest / left
            m += 1
    if not dependent.any():
        return None
    moved = order[dependent]
    side = y[moved] * decision[moved] - 1.0
    upper = not penalty.is_hard(C) and (side < 0) | ((side == 0) & (alpha[moved] >= 0.5 * penalty.at(C, moved)))
    new = codes.copy()
    new[moved] = np.where(upper, AT_BOUND, ZERO)
    return new.astype(codes.dtype)


def _polish_from(gram: Gram, y, C, alpha, codes, least_squares: bool = True, deadline: Deadline = NEVER,
                 kept: KeptFactor | None = None) -> Reference:
    # what "a free alpha below 0" is relative to: alpha's size, C where that is smaller (per sample: C_i);
    # not C alone: at C = 1e12 with alpha <= 94 (breast cancer) -1e4 passed for 0
    top = max(float(np.max(alpha)), np.finfo(float).tiny)
    scale = top if penalty.is_hard(C) else np.minimum(C, top)
    return _rounds(gram, y, C, codes, scale, ROUNDS, swaps=True, least_squares=least_squares, deadline=deadline,
                   kept=kept)


def _rounds(gram: Gram, y, C, codes, scale, max_rounds: int, swaps: bool, least_squares: bool,
            deadline: Deadline = NEVER, kept: KeptFactor | None = None) -> Reference:
    """The primal-dual active-set rounds from the guess `codes` (module docstring); where no move changes
    the sets, one free point at a bound (_one_to_a_bound) when `swaps`. None starts past the deadline.
    kept: the last large free set's factor, which the next round's solve may go through (KeptFactor)."""
    for rounds in range(1, max_rounds + 1):
        if deadline.passed():
            return Reference(False, STOPPED, rounds=rounds)
        free = np.flatnonzero(codes == FREE)
        if free.size > dense_limit() and not _thin(gram, free.size):
            return Reference(False, _too_large(free.size), rounds=rounds)
        try:
            trial = _Trial(gram, y, C, codes, scale, least_squares, kept)
        except NotTried as exc:
            return Reference(False, str(exc), rounds=rounds)
        if trial.a is None:  # no point free and the bound ones do not balance: free the points that pin b
            pins = trial.pins()
            if not pins.any():
                return Reference(False, "the bound points do not balance and no point pins b", rounds=rounds)
            codes = codes.copy()
            codes[pins] = FREE
            continue
        if trial.proved:
            return trial.reference(rounds)
        moves = trial.moves
        if not moves.any():
            # the sets satisfy every condition but the balance: a bound point that sits on its margin
            # must be free (near-degenerate data: w* near 0, every point within 1e-4 of its margin)
            moves = (codes != FREE) & (np.abs(trial.r) <= ON_MARGIN)
            if not moves.any():
                return Reference(False, "the balance sum alpha_i y_i = 0 fails on the polished sets", rounds=rounds)
        moved = _move(codes, moves, trial.a, trial.r, C)
        if np.array_equal(moved, codes):  # only free points inside (0, C) are off their margins
            if not swaps:
                return Reference(False, "the free points' margins cannot all be met", rounds=rounds)
            return _one_to_a_bound(gram, y, C, trial, scale, rounds, least_squares, deadline, kept)
        codes = moved
    return Reference(False, f"the active sets did not settle in {max_rounds} rounds", rounds=max_rounds)


class _Trial:
    """One guess of the sets, solved (_solve_sets) and tested: the KKT conditions' violations at its point,
    and whether it proves the optimum. a is None where no point is free and the bound ones do not balance."""

    def __init__(self, gram: Gram, y, C, codes, scale, least_squares: bool = True, kept: KeptFactor | None = None):
        self.y, self.C, self.codes = y, C, codes
        free = np.flatnonzero(codes == FREE)
        self.a, self.g, b, self.w = _solve_sets(gram, y, C, codes, free, least_squares, kept)
        self.lo, self.hi = hinge_argmin(y, self.g, penalty.hinge_weights(C))
        if self.a is None:
            return
        self.b = clip_value(b, self.lo, self.hi) if free.size else _middle(self.lo, self.hi)
        self.r = y * (self.g + self.b) - 1.0
        eps = POLISH_TOL + 1e-13 * float(np.max(np.abs(self.g)))
        margin_eps = eps + MARGIN_ROUNDING * gram.magnitudes(y * self.a)
        self.moves = _violations(codes, self.a, self.r, C, scale, eps, margin_eps)
        balance = abs(float(y @ self.a)) <= POLISH_TOL * max(float(self.a.sum()), np.finfo(float).tiny)
        self.proved = balance and not self.moves.any()

    def pins(self) -> np.ndarray:
        """The points whose t_i = y_i - g_i ends the interval of optimal b's."""
        t = self.y - self.g
        return (np.isclose(t, self.lo, rtol=0, atol=POLISH_TOL) | np.isclose(t, self.hi, rtol=0, atol=POLISH_TOL))

    def reference(self, rounds: int) -> Reference:
        """The proved optimum (self.proved)."""
        u = self.y * self.a
        ww = float(self.w @ self.w) if self.w is not None else float(u @ self.g)
        hinge = 0.0 if penalty.is_hard(self.C) else penalty.weighted_sum(self.C, np.maximum(0.0, -self.r))
        return Reference(True, "KKT conditions hold", self.a, self.g, self.b, self.lo, self.hi, 0.5 * ww + hinge,
                         rounds, self.w, float(self.a.sum()) - 0.5 * ww)


#: How many free points _one_to_a_bound tries, each at one bound and then the other, and the rounds each
#: guess then gets to settle.
SWAP_TRIES = 16
SWAP_ROUNDS = 3
#: ... and where the rounds solve a dense system of at most this many unknowns (d + 1 for linear data with
#: more free points than that, |free| + 1 in the dual form, d + |free| + 1 otherwise): up to 96 more solves,
#: each O(unknowns^3) (0.2-0.3 s at 2,000 unknowns).
SWAP_MAX_UNKNOWNS = 600


def _one_to_a_bound(gram: Gram, y, C, trial: _Trial, scale, rounds: int, least_squares: bool,
                    deadline: Deadline = NEVER, kept: KeptFactor | None = None) -> Reference:
    """The optimum where the free points' margins cannot all be met and no move mends them: one of the free
    points is at a bound at the optimum, so close to its margin that the point's own alpha could not tell.

    With linear data, more free points than the d + 1 unknowns of (w, b) meet their margins only in least
    squares, and the misses fall on free points inside (0, C), which _move leaves free. The soft primal with
    per-sample C at n = 200,000, d = 20: 22 free points, 5 of them 1.8e-8 off their margins against a
    tolerance of 1e-8; 12 rounds without a change, then the weaker gap bound, and the point was refused. At
    the optimum one of them (alpha 0.11 at the solver's point) sits at 0, its margin 9e-8 above 1.
    Each free point is tried, largest miss first, at the bound its miss points to (above the margin: 0,
    below: C), then at the other, and the rounds go on from there (a bound point that then breaks its
    condition is freed: an earlier round may have sent the wrong one to its bound); the first guess that
    settles is the optimum."""
    free = np.flatnonzero(trial.codes == FREE)
    if _unknowns(gram, free.size) > SWAP_MAX_UNKNOWNS:
        return Reference(False, "the free points' margins cannot all be met", rounds=rounds)
    order = free[np.argsort(-np.abs(trial.r[free]), kind="stable")][:SWAP_TRIES]
    sides = [(k, ZERO if trial.r[k] > 0 else AT_BOUND) for k in order]
    sides += [(k, AT_BOUND if side == ZERO else ZERO) for k, side in sides]
    for k, side in sides:
        codes = trial.codes.copy()
        codes[k] = side
        found = _rounds(gram, y, C, codes, scale, SWAP_ROUNDS, swaps=False, least_squares=least_squares,
                        deadline=deadline, kept=kept)
        if found.reason == STOPPED:
            return found
        if found.ok:
            found.rounds += rounds
            return found
    return Reference(False, f"the free points' margins cannot all be met, and no one of {len(order)} free points "
                            "at a bound settles the sets", rounds=rounds)


def dense_limit() -> int:
    """The most free points whose dense system fits in DENSE_BYTES (DENSE_COPIES copies of (|F| + 1)^2 doubles)."""
    return math.isqrt(DENSE_BYTES // (8 * DENSE_COPIES)) - 1


def _too_large(free: int) -> str:
    """The proof's reason where `free` free points' dense system would not fit in DENSE_BYTES."""
    need = DENSE_COPIES * 8 * (free + 1) ** 2
    return (f"{free} free points: their dense system would take {need / 2**30:.2f} GiB, more than the proof's "
            f"{DENSE_BYTES / 2**30:g} GiB (at most {dense_limit()} free points)")


def _unknowns(gram: Gram, free: int) -> int:
    """The unknowns of the dense system _solve_sets solves for `free` free points."""
    if gram.X is None:
        return free + 1
    d = gram.X.shape[1]
    return d + 1 if _thin(gram, free) else d + free + 1


def _solve_sets(gram: Gram, y, C, codes, free, least_squares: bool = True, kept: KeptFactor | None = None):
    """alpha, g = f - b, b and w (linear) with alpha = C at AT_BOUND, 0 at ZERO, the free ones from KKT."""
    n = len(y)
    a = np.zeros(n)
    bound = np.zeros(0, dtype=int) if penalty.is_hard(C) else np.flatnonzero(codes == AT_BOUND)
    a[bound] = penalty.at(C, bound)
    balance_rhs = -penalty.weighted_sum(penalty.at(C, bound), y[bound]) if bound.size else 0.0
    if free.size == 0:
        g = gram.times(y * a) if bound.size else np.zeros(n)
        w = gram.X.T @ (y * a) if gram.X is not None else None
        held = float(a[bound].sum()) if penalty.per_sample(C) else C * bound.size  # sum of the bound alphas
        ok = abs(balance_rhs) <= POLISH_TOL * max(held, np.finfo(float).tiny)
        return (a, g, math.nan, w) if ok else (None, g, math.nan, w)
    if gram.X is not None:
        linear = _solve_primal_form(gram.X, y, penalty.at(C, free), a, bound, free, balance_rhs,
                                    thin=_thin(gram, free.size), whole=gram.X.shape[1] + free.size < MAX_FREE)
        if linear is not None:
            return linear
    g = gram.times(y * a) if bound.size else np.zeros(n)
    yF = y[free]
    m = free.size
    x, singular, system = _free_solve(gram, free, yF, g[free], float(balance_rhs), least_squares, kept)
    C_free = penalty.at(C, free)
    # Free alphas outside [0, C]: where the system is singular (duplicate points) one solution inside [0, C]
    # by bounded least squares; where it is regular and too large for that, the sets are wrong and the rounds
    # move the points that crossed a bound (_move), which proves what a fit too large to try would give up on.
    if not _in_bounds(x[:m], C_free) and (singular or (m + 1) ** 2 <= BVLS_MAX_ENTRIES):
        M, rhs = system if system is not None else _free_system(
            one_type(gram.submatrix(free, free)), one_type(yF), one_type(g[free]), float(balance_rhs))
        lower = np.append(np.zeros(m), -np.inf)
        upper = np.append(np.broadcast_to(C_free, (m,)).astype(float), np.inf)
        x = bounded_fit(M, rhs, lower, upper)
    a[free] = x[:m]
    u_free = np.zeros(n)
    u_free[free] = yF * a[free]
    return a, g + gram.times(u_free), float(x[m]), None


def _free_solve(gram: Gram, free, yF, g_F, balance_rhs: float, least_squares: bool, kept: KeptFactor | None = None):
    """(x, singular, (M, rhs) or None): the free points' system in (alpha_F, b) solved; None where M was not formed
    (_in_place_solve, _bordered_solve) or the answer was remembered. A large one is remembered by what it is made of
    (_recall): the Gram object, the free points, their labels and g_F, so that the closing checks' proof of the
    finish's sets forms neither K_FF nor the system again. kept: where it holds the factor of a set a few points
    from this one, the system is solved through it (_bordered_solve); a new factor made in place is kept there."""
    large = (free.size + 1) ** 2 >= REMEMBERED_ENTRIES
    if large:
        key = digest((free, yF, g_F), (balance_rhs, least_squares))
        known = _recall(gram, key)
        if known is not None:
            return known[0], known[1], None
    x, factored = None, False
    in_place = (free.size + 1) ** 2 >= IN_PLACE_ENTRIES
    rhs = np.append(1.0 - yF * g_F, balance_rhs)
    if in_place and kept is not None and kept.K is not None:
        x = _bordered_solve(kept, gram, free, one_type(yF), rhs)
        if x is None:
            kept.drop()  # its memory before the new system's
    if x is None:
        K_FF = one_type(gram.submatrix(free, free))
    if x is None and in_place:
        if gram.K is not None and np.may_share_memory(K_FF, gram.K):  # a view of the Gram matrix: not ours to factor
            K_FF = K_FF.copy()
        diag = np.empty(free.size)  # K_FF's, saved by the solve: the factor overwrites it
        x, factored = _in_place_solve(K_FF, one_type(yF), rhs, diag)
        if x is not None and kept is not None:
            kept.keep(free, K_FF, diag)
    if x is not None:
        singular, system = False, None
    else:
        M, rhs = _free_system(K_FF, one_type(yF), one_type(g_F), balance_rhs)
        del K_FF  # the equilibration's copy and LU's factor take its place (DENSE_COPIES)
        # where K_FF's Cholesky factor did not hold, M's (the same matrix up to signs) would not either: LU at once
        x, singular = _equilibrated_solve(M, rhs, least_squares=least_squares, saddle=not factored,
                                          remember=not large)
        system = (M, rhs)
    if large:
        _keep(gram, key, x, singular)
    return x, singular, system


def _free_system(K_FF, yF, g_F, balance_rhs):
    """The free points' KKT system in (alpha_F, b) and its right-hand side, entry by entry as the array steps made
    them: M = [[Y_F K_FF Y_F, y_F], [y_F', 0]] ((y_i K_ij) y_j), rhs = [1 - y_F g_F, balance_rhs]. A large one
    (THREADED_ENTRIES) in fresh memory mapped in whole (no wait for huge pages), by bands of rows on the Gram
    matrix's threads (each entry made alone: the same bits on any thread count)."""
    m = yF.size
    M = fresh_doubles((m + 1) ** 2, populate=True).reshape(m + 1, m + 1)
    rhs = np.empty(m + 1)
    M[m, m], rhs[m] = 0.0, balance_rhs
    threads = _threads_for(M)
    in_bands(lambda lo, hi: _free_rows(K_FF, yF, g_F, M, rhs, lo, hi), m, RESIDUAL_ROWS, threads)
    return M, rhs


@njit(cache=True, nogil=True)
def _free_rows(K_FF, yF, g_F, M, rhs, lo, hi):
    """Rows lo..hi of _free_system's M and rhs, and their entries in M's last row and column."""
    m = yF.size
    for i in range(lo, hi):
        for j in range(m):
            M[i, j] = (yF[i] * K_FF[i, j]) * yF[j]
        M[i, m] = yF[i]
        M[m, i] = yF[i]
        rhs[i] = 1.0 - yF[i] * g_F[i]


def _solve_primal_form(X, y, C_free, a, bound, free, balance_rhs, thin, whole=True):
    """The KKT equations in (w, b, alpha_F), without forming X X' (which loses a feature that is
    1e8 times smaller than another to rounding); C_free bounds alpha_F (one C or C_i of the free points):

        w - X_F' Y_F alpha_F = C X_U' y_U,    y_F (X_F w + b) = 1,    y_F' alpha_F = -C sum y_U.

    thin: through _thin_solve (_thin: m > d + 1). whole=False: only that way, else None (the caller's dual
    form decides).
    Why: where d + m reaches MAX_FREE the dual form would take over, and on a poor point with thousands of
    free points its bounded fit (scipy's BVLS) takes minutes where the thin form needs an m x (d + 1) SVD."""
    d, m = X.shape[1], free.size
    XF, yF = X[free], y[free]  # a sparse X's free rows stay sparse (d may be 50,000) unless a dense system needs them
    w_bound = X[bound].T @ (y[bound] * a[bound]) if bound.size else np.zeros(d)
    solved = _thin_solve(dense(XF), yF, w_bound, balance_rhs) if thin else _wide_solve(XF, yF, w_bound, balance_rhs)
    if solved is not None:
        w, b, a_free = solved
    elif not whole:
        return None
    else:
        XF = dense(XF)  # d + m < MAX_FREE here
        M = np.zeros((d + m + 1, d + 1 + m))
        M[:d, :d] = np.eye(d)
        M[:d, d + 1:] = -(XF * yF[:, None]).T
        M[d:d + m, :d] = XF * yF[:, None]
        M[d:d + m, d] = yF
        M[d + m, d + 1:] = yF
        rhs = np.concatenate([w_bound, np.ones(m), [balance_rhs]])
        z, _ = _equilibrated_solve(M, rhs, singular=m > d + 1)
        w, b = z[:d], float(z[d])
        a_free = z[d + 1:]
    if not _in_bounds(a_free, C_free):
        # more free points than d + 1 (w* near 0 at a tiny C, say): w and b are pinned, alpha_F is
        # not; one inside [0, C] from the stationarity and balance rows, by bounded least squares
        if (d + 1) * m > BVLS_MAX_ENTRIES:
            raise NotTried(f"the free alphas leave [0, C] and their bounded fit ({d + 1} x {m}) is too large to try")
        A = np.vstack([dense(signed(yF, XF)).T, yF[None, :]])
        a_free = bounded_fit(A, np.concatenate([w - w_bound, [balance_rhs]]), 0.0, C_free)
        # w from the bounded alpha_F: where the fit has a residual (the sets are wrong, not degenerate), the
        # margins show it and the sets move. Kept as the system's w, it passed the KKT test while 1.2e-4 off
        # X' Y alpha (n = 12,000, d = 150, X x 1e-3, 4 free points: the checks refused the proved point).
        w = w_bound + XF.T @ (yF * a_free)
    a[free] = a_free
    return a, X @ w, b, w


#: _wide_solve: from this many features per free point (plus one), where the free points' features are within
#: WIDE_SCALE_RATIO of each other in size.
WIDE_RATIO = 4
WIDE_SCALE_RATIO = 1e4


def _wide_solve(XF, yF, w_bound, balance_rhs):
    """(w, b, alpha_F) of _solve_primal_form's equations where the features far outnumber the m free points
    (d >= WIDE_RATIO (m + 1)): w = w_bound + X_F' Y_F alpha_F eliminated, the (m + 1)-square system in
    (alpha_F, b) with the free points' inner products, O(m^2 d), where the whole (d + m + 1)-square system
    costs O((d + m)^3), which at d in the thousands outweighs the solve itself.
    None where the features differ in size by more than WIDE_SCALE_RATIO (X X' would lose the small ones to
    rounding: the whole system then) or the features are few."""
    m, d = XF.shape
    if d < WIDE_RATIO * (m + 1):
        return None
    size = column_max_abs(XF)
    size = size[size > 0]
    if size.size == 0 or size.max() > WIDE_SCALE_RATIO * size.min():
        return None
    A = signed(yF, XF)  # sparse where X is: only the m x m inner products are dense
    M = np.zeros((m + 1, m + 1))
    M[:m, :m] = dense(A @ A.T)
    M[:m, m] = yF
    M[m, :m] = yF
    z, _ = _equilibrated_solve(M, np.concatenate([1.0 - A @ w_bound, [balance_rhs]]), saddle=True)
    a_free, b = z[:m], float(z[m])
    return w_bound + A.T @ a_free, b, a_free


def bounded_fit(A: np.ndarray, rhs: np.ndarray, lower, upper) -> np.ndarray:
    """argmin ||A x - rhs|| over lower <= x <= upper by scipy's BVLS, where A has at most BVLS_MAX_ENTRIES
    entries (else NotTried: the proof fails on these sets instead of running on)."""
    if A.size > BVLS_MAX_ENTRIES:
        raise NotTried(f"the free alphas leave [0, C] and their bounded fit ({A.shape[0]} x {A.shape[1]}) "
                            f"is too large to try")
    return lsq_linear(A, rhs, bounds=(lower, upper), method="bvls").x


def _thin(gram: Gram, free: int) -> bool:
    """Whether `free` free points are solved through _thin_solve: linear data with more free points than the
    d + 1 unknowns of (w, b) (an m x (d + 1) SVD, no dense square system, so MAX_FREE does not bound them:
    one-hot features left 7,641 points on the margin at n = 12,000, d = 5, and the proof gave up for the
    weaker gap bound, the point refused)."""
    return gram.X is not None and free > gram.X.shape[1] + 1


def _thin_solve(XF, yF, w_bound, balance_rhs):
    """(w, b, alpha_F) of _solve_primal_form's equations where m > d + 1 points are free, through the thin SVD
    of A = Y_F [X_F 1] (m x (d + 1), rank r): O(m d^2), where the whole (d + m + 1)-square system costs O(m^3)
    (seconds a solve at a few thousand free points).

    v = (w, b) solves the margin rows A v = 1 up to A's null space N: v = V S^-1 U' 1 + N s. The
    stationarity and balance rows A' alpha_F = P v + c (P v = (w, 0), c = (-w_bound, balance_rhs)) need
    P v + c in the range of V, which fixes s: N' P N s = -N' (P V S^-1 U' 1 + c) (least squares: the part of
    s that P does not see, such as b where one-hot columns sum to the bias, stays free and is 0 here; the
    proof then clips b to its interval). alpha_F = U S^-1 V' (P v + c), minimum norm. Columns are scaled to
    unit size first (features in other units keep their rank). None where A has no rank at all."""
    d = XF.shape[1]
    A = np.column_stack([XF * yF[:, None], yF])
    size = np.max(np.abs(A), axis=0)
    size[size == 0] = 1.0
    U, S, Vt = np.linalg.svd(A / size, full_matrices=False)
    rank = int(np.count_nonzero(S > S[0] * max(A.shape) * np.finfo(float).eps)) if S.size and S[0] > 0 else 0
    if rank == 0:
        return None
    U, S, V, N = U[:, :rank], S[:rank], Vt[:rank].T, Vt[rank:].T
    # in scaled coordinates u = size * v: P becomes Q = diag(1 / size^2) on w (0 on b), c becomes c / size
    Q = np.append(1.0 / size[:d] ** 2, 0.0)
    c = np.append(-w_bound, balance_rhs) / size
    u = V @ ((U.T @ np.ones(len(yF))) / S)
    if N.shape[1]:
        s = np.linalg.lstsq((N.T * Q) @ N, -N.T @ (Q * u + c), rcond=None)[0]
        u = u + N @ s
    a_free = U @ ((V.T @ (Q * u + c)) / S)
    v = u / size
    return v[:-1], float(v[-1]), a_free


def _in_bounds(a: np.ndarray, C) -> bool:
    """0 <= a <= C to rounding (C one number, inf, or one bound per entry of a): below 0 relative to a's
    size (or C, where smaller), above C relative to C. One compiled pass (_within) of these comparisons."""
    return bool(_within(one_type(a), per_point(C, np.shape(a)), penalty.is_hard(C)))


@njit(cache=True, nogil=True)
def _within(a, C, hard):
    """_in_bounds' test, entry by entry: every a_i finite, a_i >= -POLISH_TOL min(C_i, size) (size: max |a|, at
    least the smallest normal number; not C where hard), a_i <= C_i (1 + POLISH_TOL) unless hard."""
    size = np.finfo(np.float64).tiny
    for i in range(a.size):
        if not math.isfinite(a[i]):
            return False
        size = max(size, abs(a[i]))
    for i in range(a.size):
        if hard:
            if not a[i] >= -POLISH_TOL * size:
                return False
        elif not (a[i] >= -POLISH_TOL * min(C[i], size) and a[i] <= C[i] * (1 + POLISH_TOL)):
            return False
    return True


#: Systems of at least this many entries are remembered (the last one): the finish that makes a working set's point
#: exact and the closing checks that prove it solve the same free points' system, and at thousands of free points
#: each solve takes a second, where a digest of its inputs takes a tenth of that.
REMEMBERED_ENTRIES = 10**6
#: (owner, key, x, singular) of the last large solve: owner a weak reference to the Gram object whose rows made the
#: system (the same rows give the same entries; _free_solve), or None where the key digests the system itself.
_last_answer: tuple[weakref.ref | None, bytes, np.ndarray, bool] | None = None


def _recall(owner: Gram | None, key: bytes) -> tuple[np.ndarray, bool] | None:
    """(a copy of x, singular) of the last large solve where it had this owner and key; else None."""
    last = _last_answer  # one snapshot: another thread's proof may replace it meanwhile
    if last is None or last[1] != key or (last[0] is None) != (owner is None):
        return None
    if owner is not None and last[0]() is not owner:  # a collected owner's reference gives None
        return None
    return last[2].copy(), last[3]


def _keep(owner: Gram | None, key: bytes, x: np.ndarray, singular: bool) -> None:
    global _last_answer
    _last_answer = (None if owner is None else weakref.ref(owner), key, x.copy(), singular)


def _equilibrated_solve(M: np.ndarray, rhs: np.ndarray, singular: bool = False,
                        least_squares: bool = True, saddle: bool = False,
                        remember: bool = True) -> tuple[np.ndarray, bool]:
    """M x = rhs after scaling rows and columns to unit size (Ruiz): data whose features differ by
    orders of magnitude give a system that is badly scaled, not badly conditioned. singular: M is known to be
    singular (least squares at once). Returns (x, whether M was singular). least_squares=False:
    a singular M ends the proof (NotTried) instead of a least-squares solve (an SVD, far slower than the
    loop's own steps at thousands of free points). saddle: M = [[Q, v], [v', 0]], Q symmetric positive
    semi-definite (_solve_equilibrated). A large system solved last with the very same inputs (to the
    bit: REMEMBERED_ENTRIES) returns that solve's answer, which solving again would repeat exactly (remember=False:
    the caller remembers it, _free_solve)."""
    if M.size < REMEMBERED_ENTRIES or not remember:
        return _solve_equilibrated(M, rhs, singular, least_squares, saddle)
    key = digest((M, rhs), (singular, least_squares, saddle))
    known = _recall(None, key)
    if known is None:
        known = _solve_equilibrated(M, rhs, singular, least_squares, saddle)
        _keep(None, key, *known)
    return known


def digest(arrays, flags) -> bytes:
    """A digest of arrays and flags (numbers): each array's type, shape and bits. What identifies a solve's inputs
    here, and a product K u (kernel_rows.FullGram.times)."""
    h = hashlib.blake2b(digest_size=32)
    for array in arrays:
        array = np.ascontiguousarray(array)
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(memoryview(array).cast("B"))
    h.update(np.array(flags, dtype=float).tobytes())
    return h.digest()


def _solve_equilibrated(M: np.ndarray, rhs: np.ndarray, singular: bool, least_squares: bool, saddle: bool = False):
    """_equilibrated_solve's solve itself. saddle: M = [[Q, v], [v', 0]] with Q symmetric positive semi-definite (the
    free points' system), solved through Q's Cholesky factor where Q is clearly definite (_saddle_factor), else by LU.
    LAPACK runs on the caller's BLAS threads (one in the working set's loop and closing): on BLAS's own two threads
    a busy machine's other process made the factorization several times slower, not faster. The equilibration and
    the residual are split between threads on a large system, to the same bits."""
    A, r, c = _ruiz(one_type(M), 5)  # one compiled type (warm_compiled)
    if not singular:
        saddle = saddle and M.shape[0] >= SADDLE_FROM
        solve = _saddle_factor(A) if saddle else None
        if solve is None and saddle:  # the Cholesky attempt overwrote A's leading block
            A = _ruiz(one_type(M), 5)[0]
        solve = solve or _lu_factor(A)
        if solve is not None:
            x = c * solve(r * rhs)
            # one step of iterative refinement, its residual summed in twice the working precision (residual):
            # the proved optimum then comes out correctly rounded (-0.25 where the solve alone gave
            # -0.25000000000000006, and SVC's exact toy answers are compared exactly)
            return x + c * solve(r * residual(M, x, rhs)), False
    if not least_squares:
        raise NotTried(f"the free points' system ({M.shape[0]} x {M.shape[1]}) is singular")
    x = c * np.linalg.lstsq(A, r * rhs, rcond=None)[0]  # more free points than the rank: any solution
    return x, True


#: Systems of at least this many entries are equilibrated and their residual summed on the threads the Gram matrix
#: uses (compiled_gram.gram_threads: $SVM_THREADS, else the cores), in parts whose arithmetic does not depend on how
#: many.
THREADED_ENTRIES = 10**6


def _threads_for(A: np.ndarray) -> int:
    """The threads for a pass over A: the Gram matrix's (gram_threads) from THREADED_ENTRIES entries, else one."""
    return gram_threads() if A.size >= THREADED_ENTRIES else 1


#: _saddle_factor's Cholesky factor is kept only where each pivot is above this times the block's size times its
#: largest diagonal entry: a smaller one is rounding (duplicated points make Q exactly singular, yet their pivot
#: comes out a few eps, of either sign), and a solve through it would be noise; LU then decides, as for any M.
CHOLESKY_PIVOT_FLOOR = 64 * np.finfo(float).eps
#: The fewest unknowns whose Cholesky factor is shared between threads (_cholesky): below, a few panels leave the
#: threads little to share.
BLOCKED_CHOLESKY_FROM = 1024
#: The fewest unknowns a saddle system is solved for through Cholesky: below, LU's one LAPACK call costs less than the
#: Cholesky route's several (at 200 unknowns both take about 1.1 ms; at 20, 52 against 129 us).
SADDLE_FROM = 256


def _lu_factor(A: np.ndarray):
    """x -> A^-1 x by LAPACK's LU (getrf, getrs as scipy.linalg.lu_factor and lu_solve call them, without their
    wrappers' checks, which cost more than the solve of a small problem's free points); None at a zero pivot (A
    exactly singular)."""
    lu, piv, info = lapack.dgetrf(A)
    if info < 0 or not lu.diagonal().all():
        return None
    return lambda q: lapack.dgetrs(lu, piv, q)[0]


def _saddle_factor(A: np.ndarray):
    """x -> A^-1 x for A = [[Q, v], [v', 0]] with Q symmetric: Cholesky Q = L L' in A's own leading block (half of
    LU's flops on the whole, no pivot search, no copy: solvers.lapack_inplace) and the Schur complement
    s = v' Q^-1 v > 0 for the last unknown. None where Q is not clearly positive definite (CHOLESKY_PIVOT_FLOOR:
    duplicated points, a semi-definite kernel); A's leading block is overwritten either way."""
    m = A.shape[0] - 1
    if m < 1:
        return None
    top = float(np.max(np.diagonal(A)[:m]))
    if not top > 0 or _cholesky(A, m) != 0:
        return None
    if not float(np.min(np.diagonal(A)[:m])) ** 2 > CHOLESKY_PIVOT_FLOOR * m * top:
        return None
    v = A[:m, m].copy()
    z = lapack_inplace.cholesky_solve(A, m, v)
    schur = float(v @ z)
    if not (schur > 0 and math.isfinite(schur)):
        return None

    def solve(q):
        t = lapack_inplace.cholesky_solve(A, m, q[:m])
        last = (float(v @ t) - q[m]) / schur
        return np.append(t - z * last, last)

    return solve


def _cholesky(A: np.ndarray, m: int) -> int:
    """Q = L L' in A's leading m x m block (lapack_inplace's info): from BLOCKED_CHOLESKY_FROM unknowns by panels on
    the Gram matrix's threads (the same bits on any thread count), below by LAPACK's dpotrf in one call."""
    if m >= BLOCKED_CHOLESKY_FROM:
        return lapack_inplace.blocked_cholesky(A, m, gram_threads())
    return lapack_inplace.cholesky(A, m)


#: The fewest entries of the free points' system solved in K_FF's own memory (_in_place_solve) where it is already
#: equilibrated: the system M, Ruiz's copy of it and their fresh pages cost about as much as the factorization.
IN_PLACE_ENTRIES = 10**6


def _in_place_solve(K: np.ndarray, yF: np.ndarray, rhs: np.ndarray,
                    diag: np.ndarray | None = None) -> tuple[np.ndarray | None, bool]:
    """(x, factored): the free points' system M x = rhs, M = [[Y K Y, y], [y', 0]], solved in K's memory without
    forming M, where every Ruiz divisor of M would be 1 (|K_ij| <= 1, y = +-1: an rbf's system) so that _ruiz's copy
    would be M itself. With u = Y alpha the system is [[K, 1], [1', 0]] (u, b) = (Y rhs_F, rhs_b): K = L L' in place
    (L' in K's upper triangle, K's lower one kept, its diagonal saved), b through the Schur complement 1' K^-1 1, and
    one step of refinement with the residual of M summed by Dot2 from K's kept triangle (_saddle_residual). None
    where M is not so scaled or K not clearly positive definite (CHOLESKY_PIVOT_FLOOR): K is then as it was (the
    lower triangle mirrored), and `factored` says whether the factor was tried. diag: where given, K's diagonal is
    saved there (m values), for a caller that keeps the factor (KeptFactor)."""
    m = yF.size
    diag = np.empty(m) if diag is None else diag
    if not _unit_scaled(K, yF, diag):
        return None, False
    top = float(np.max(diag))
    if not (top > 0 and _cholesky(K, m) == 0 and float(np.min(np.diagonal(K))) ** 2 > CHOLESKY_PIVOT_FLOOR * m * top):
        _unfactor(K, diag)
        return None, True
    ones = np.ones(m)
    both = lapack_inplace.cholesky_solve_many(K, m, np.stack([ones, yF * rhs[:m]]))  # one pass over the factor
    z, schur = both[0], float(ones @ both[0])
    if not (schur > 0 and math.isfinite(schur)):
        _unfactor(K, diag)
        return None, True

    def finish(t: np.ndarray, last_rhs: float) -> np.ndarray:
        last = (float(ones @ t) - last_rhs) / schur  # y' (Y t) of M's route
        return np.append(yF * (t - z * last), last)

    x = finish(both[1], rhs[m])
    r = _saddle_residual(K, diag, yF, x, rhs)  # as residual(M, x, rhs), M's entries read from K
    return x + finish(lapack_inplace.cholesky_solve(K, m, yF * r[:m]), r[m]), True


class KeptFactor:
    """The last factor one proof made in place (_in_place_solve): its free points, K_FF's array (the factor L' in
    the upper triangle, K_FF's own lower triangle below it) and K_FF's diagonal. The proof's rounds move a few
    points into or out of the free set at a time (2 joined 2,871 on a narrow rbf), and the next set's system
    solved through this factor (_bordered_solve) costs O(m^2) a moved point, where factoring anew costs m^3 / 3."""

    def __init__(self):
        self.drop()

    def keep(self, free: np.ndarray, K: np.ndarray, diag: np.ndarray) -> None:
        self.free, self.K, self.diag = free, K, diag

    def drop(self) -> None:
        self.free = self.K = self.diag = None


#: A free set is solved through the kept factor (_bordered_solve) where at most BORDER_AT_LEAST points, or one in
#: BORDER_SHARE of the kept set, joined or left it: each is one more solve with the factor, and a column of S.
BORDER_AT_LEAST = 16
BORDER_SHARE = 32
#: The bordered solve's refinement may move x by at most this, relative to x's size; a larger step says the
#: bordered system was too ill-conditioned to trust, and the free points' system is factored anew.
BORDER_STEP = 1e-6


def _bordered_solve(kept: KeptFactor, gram: Gram, free, yF, rhs) -> np.ndarray | None:
    """x of the free points' system M x = rhs (_in_place_solve's), through the kept factor of K_00 for the kept set
    F0, bordered by the points N that joined it and R that left it. In u = Y_F alpha_F, with c = Y_F rhs_F, the
    unknowns (u_0, u_N, b, lambda_R) solve

        K_00 u_0 + K_0N u_N + b 1 + E_R lambda = c_0      (lambda takes up the rows of R)
        K_N0 u_0 + K_NN u_N + b 1              = c_N
        1' u_0 + 1' u_N                        = rhs_b
        E_R' u_0                               = 0        (R's u are 0)

    With the border B = [K_0N, 1, E_R] and D its own block, the Schur complement S = D - B' K_00^-1 B (|N| + 1 + |R|
    square, LU) gives the border's unknowns z, then u_0 = K_00^-1 (c_0 - B z); one step of refinement with the
    residual summed by Dot2 (K_00's entries from the kept triangle). None where more points moved than
    BORDER_AT_LEAST or 1/BORDER_SHARE of F0, S is singular, or the refinement's step is large (BORDER_STEP)."""
    F0, K = kept.free, kept.K
    m0, m = F0.size, free.size
    stay = np.isin(F0, free, assume_unique=True)
    left = np.flatnonzero(~stay)
    new = np.setdiff1d(free, F0, assume_unique=True)
    k, r = new.size, left.size
    if k + r > max(BORDER_AT_LEAST, m0 // BORDER_SHARE):
        return None
    s = k + 1 + r
    B = np.zeros((s, m0))  # the border's columns, as rows
    D = np.zeros((s, s))
    if k:
        B[:k] = gram.submatrix(new, F0)
        D[:k, :k] = gram.submatrix(new, new)
        D[:k, k] = D[k, :k] = 1.0
    B[k] = 1.0
    B[k + 1 + np.arange(r), left] = 1.0
    at_stay, at_new = np.searchsorted(free, F0[stay]), np.searchsorted(free, new)
    c = yF * rhs[:m]
    c0, tail = np.zeros(m0), np.zeros(s)
    c0[stay], tail[:k], tail[k] = c[at_stay], c[at_new], rhs[m]
    # K_00^-1 times B's columns and c0, in one pass over the factor
    W = lapack_inplace.cholesky_solve_many(K, m0, np.vstack([B, c0]))
    W, v = W[:s], W[s]
    lu = _lu_factor(D - B @ W.T)
    if lu is None:
        return None

    def solve(v, tail):  # (u_0, z) where v = K_00^-1 c0 (c0 on F0's rows, tail on N's, the balance's, R's)
        z = lu(tail - B @ v)
        u0 = v - W.T @ z
        u0[left] = 0.0
        return u0, z

    u0, z = solve(v, tail)
    r0, r_tail = _bordered_residual(kept, B[:k], D[:k, :k], u0, z[:k], float(z[k]), c0, tail[: k + 1])
    r0[left] = 0.0
    du0, dz = solve(lapack_inplace.cholesky_solve(K, m0, r0), np.concatenate([r_tail, np.zeros(r)]))
    if not np.sqrt(du0 @ du0 + dz[: k + 1] @ dz[: k + 1]) <= BORDER_STEP * np.sqrt(u0 @ u0 + z[: k + 1] @ z[: k + 1]):
        return None
    u0, z = u0 + du0, z + dz
    x = np.empty(m + 1)
    x[at_stay], x[at_new], x[m] = yF[at_stay] * u0[stay], yF[at_new] * z[:k], z[k]
    return x


def _bordered_residual(kept: KeptFactor, K_N0, K_NN, u0, uN, b: float, c0, tail):
    """_bordered_solve's residual in u, by Dot2: c_0 - K_00 u_0 - K_0N u_N - b on F0's rows (K_00 from the kept
    triangle), then (c_N - K_N0 u_0 - K_NN u_N - b, rhs_b - 1'u) for the new rows and the balance."""
    m0, k = u0.size, uN.size
    part = residual(K_N0.T, uN, c0) if k else c0  # c_0 - K_0N u_N first, its few terms by Dot2 too
    r0 = _kept_rows_residual(kept.K, kept.diag, u0, b, part, np.empty(m0))
    rows = np.zeros((k + 1, m0 + k + 1))  # [K_N0, K_NN, 1] over [1', 1', 0]
    rows[:k, :m0], rows[:k, m0:m0 + k], rows[:k, -1] = K_N0, K_NN, 1.0
    rows[k, :m0 + k] = 1.0
    return r0, residual(rows, np.concatenate([u0, uN, [b]]), tail)


def _unit_scaled(K: np.ndarray, yF: np.ndarray, diag: np.ndarray) -> bool:
    """Whether every entry of K is at most 1 in size (a nan is not) and every label is +-1, K's diagonal copied into
    `diag` (rows by bands on the Gram matrix's threads)."""
    if not np.all(np.abs(yF) == 1.0):
        return False
    m = yF.size
    fine = np.zeros(m, dtype=np.bool_)
    threads = _threads_for(K)
    in_bands(lambda lo, hi: _unit_rows(K, diag, fine, lo, hi), m, RESIDUAL_ROWS, threads)
    return bool(fine.all())


@njit(cache=True, nogil=True)
def _unit_rows(K, diag, fine, lo, hi):
    """fine[i] = every |K[i, j]| <= 1 (a nan fails), diag[i] = K[i, i], for lo <= i < hi."""
    for i in range(lo, hi):
        ok = True
        for j in range(K.shape[1]):
            ok = ok and abs(K[i, j]) <= 1.0
        fine[i] = ok
        diag[i] = K[i, i]


def _unfactor(K: np.ndarray, diag: np.ndarray) -> None:
    """K as it was before _cholesky wrote its factor into the upper triangle: the kept lower triangle mirrored (the
    Gram matrix's own mirror, by bands on the Gram matrix's threads) and the saved diagonal put back (exactly K
    where K was symmetric; else its lower triangle's symmetric matrix)."""
    threads = _threads_for(K)
    in_bands(lambda lo, hi: mirror(K, lo, hi), K.shape[0], RESIDUAL_ROWS, threads)
    np.fill_diagonal(K, diag)


#: Rows that _dot2_symmetric_rows takes at a time where it reads K along its columns (a block
#: that stays in cache).
SUM_ROWS = 64


def _saddle_residual(K: np.ndarray, diag: np.ndarray, yF: np.ndarray, x: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """residual(M, x, rhs) for M = [[Y K Y, y], [y', 0]] with K's entries read from K's lower triangle and `diag`
    (_cholesky's factor holds the upper one): row i < m as y_i times row i of [[K, 1]] at (Y x_F, x_b) against
    y_i rhs_i, which Dot2 sums to the same bits (a sign changes no rounding), where K is symmetric; row m as residual's
    own. Rows by bands on the Gram matrix's threads, each row's terms in the order of its columns whatever the band."""
    m = yF.size
    out = np.empty(m + 1)
    _kept_rows_residual(K, diag, yF * x[:m], x[m], yF * rhs[:m], out[:m])
    out[:m] *= yF
    last = np.append(yF, 0.0)[None, :]
    _dot2_rows(last, x, *_split(x), rhs[m:], out[m:], 0, 1)
    return out


def _kept_rows_residual(K: np.ndarray, diag: np.ndarray, u: np.ndarray, b: float, c: np.ndarray,
                        out: np.ndarray) -> np.ndarray:
    """out = c - K u - b by Dot2 (_dot2_symmetric_rows), K's entries read from its lower triangle and `diag` (the
    factor made in place holds the upper one), by bands of rows on the Gram matrix's threads; out returned."""
    v = np.append(u, b)
    v_hi, v_lo = _split(v)
    in_bands(lambda lo, hi: _dot2_symmetric_rows(K, diag, v, v_hi, v_lo, c, out, lo, hi), u.size, RESIDUAL_ROWS,
             _threads_for(K))
    return out


@njit(cache=True, nogil=True)
def _dot2_symmetric_rows(K, diag, v, v_hi, v_lo, b, out, lo, hi):
    """out[i] = b[i] - sum_{j < m} K_ij v[j] - v[m] for lo <= i < hi by Dot2 (_dot2_step), K_ij from K's lower
    triangle: K[i, j] left of the diagonal, diag[i] on it, K[j, i] right of it. By blocks of SUM_ROWS rows, whose
    columns right of the block are read along row j for the whole block (the rows' running sums kept in arrays);
    each row's terms in its columns' order, whatever the blocks."""
    m = diag.size
    total, errors = np.empty(SUM_ROWS), np.empty(SUM_ROWS)
    for first in range(lo, hi, SUM_ROWS):
        last = min(first + SUM_ROWS, hi)
        for i in range(first, last):
            t, e = b[i], 0.0
            for j in range(i):
                t, e = _dot2_step(t, e, K[i, j], v[j], v_hi[j], v_lo[j])
            t, e = _dot2_step(t, e, diag[i], v[i], v_hi[i], v_lo[i])
            for j in range(i + 1, last):
                t, e = _dot2_step(t, e, K[j, i], v[j], v_hi[j], v_lo[j])
            total[i - first], errors[i - first] = t, e
        for j in range(last, m):
            for i in range(first, last):
                total[i - first], errors[i - first] = _dot2_step(total[i - first], errors[i - first], K[j, i], v[j],
                                                                 v_hi[j], v_lo[j])
        for i in range(first, last):
            t, e = _dot2_step(total[i - first], errors[i - first], 1.0, v[m], v_hi[m], v_lo[m])
            out[i] = t + e


#: Rows of residual's sums handed to one thread at a time.
RESIDUAL_ROWS = 256


def residual(M: np.ndarray, x: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """rhs - M x, each entry summed as in twice the working precision and rounded once (Ogita, Rump and Oishi's Dot2:
    error-free products and sums, _dot2_rows): about as accurate as an exact sum rounded, where plain float sums lose
    the digits that the refinement step needs. Rows are independent (same bits on any thread count); a large M's
    rows are shared between threads (THREADED_ENTRIES)."""
    M, x, rhs = one_type(M), one_type(x), one_type(rhs)
    out = np.empty(M.shape[0])
    x_hi, x_lo = _split(x)
    threads = _threads_for(M)
    in_bands(lambda lo, hi: _dot2_rows(M, x, x_hi, x_lo, rhs, out, lo, hi), M.shape[0], RESIDUAL_ROWS, threads)
    return out


#: Veltkamp's splitting constant 2^27 + 1: a double a = hi + lo with hi and lo of 26 bits each, so that their
#: products are exact (Dekker's TwoProduct without a fused multiply-add).
SPLITTER = 134217729.0


@njit(cache=True, nogil=True)
def _split(a):
    hi = np.empty_like(a)
    for k in range(a.size):
        t = SPLITTER * a[k]
        hi[k] = t - (t - a[k])
    return hi, a - hi


@njit(cache=True, nogil=True)
def _dot2_rows(M, x, x_hi, x_lo, rhs, out, lo, hi):
    """out[i] = rhs[i] - sum_j M[i, j] x[j] for lo <= i < hi by Dot2 (_dot2_step)."""
    for i in range(lo, hi):
        total = rhs[i]
        errors = 0.0
        for j in range(M.shape[1]):
            total, errors = _dot2_step(total, errors, M[i, j], x[j], x_hi[j], x_lo[j])
        out[i] = total + errors


@njit(cache=True, nogil=True, inline="always")
def _dot2_step(total, errors, a, x, x_hi, x_lo):
    """(total - a x, errors) of one Dot2 term: the product split into its rounded value and exact error (TwoProduct),
    the running sum's rounding error kept (TwoSum), the errors summed apart to be added once."""
    t = SPLITTER * a
    a_hi = t - (t - a)
    a_lo = a - a_hi
    p = a * x
    e = a_lo * x_lo - (((p - a_hi * x_hi) - a_lo * x_hi) - a_hi * x_lo)  # a x = p + e exactly
    new = total - p
    back = new - total
    errors += ((total - (new - back)) + (-p - back)) - e  # total - p = new + that rounding, exactly
    return new, errors


def _ruiz(M, rounds):
    """(A, r, c): A = diag(r) M diag(c) after `rounds` rounds of dividing each row and then each column by the square
    root of its largest |entry| (one taken from the same A for both; 0 left as 1), as whole-array numpy steps would,
    to the bit (a nan stays nan). Compiled (_ruiz_rows): on a small system the numpy steps' calls cost more than the
    LU; each round's division and the next round's maxima in one pass over A. A large M's rows are split between
    the process's cores (every entry's arithmetic is the same: the same bits on any thread count); a small one's
    rounds are one compiled call (_ruiz_serial), whose few microseconds are most of a tiny system's solve."""
    m, k = M.shape
    threads = min(_threads_for(M), max(m, 1))
    A = _copy(M, M.size >= THREADED_ENTRIES)
    r, c = np.ones(m), np.ones(k)
    row, col = np.zeros(m), np.zeros(k)  # a pass's maxima of |A|
    row_d, col_d = np.ones(m), np.ones(k)  # the round's divisors
    parts = np.zeros((threads, k))  # each thread's column maxima, combined after each pass
    if threads == 1:
        _ruiz_serial(A, row_d, col_d, row, col, parts, r, c, rounds)
        return A, r, c
    bounds = [(m * t // threads, m * (t + 1) // threads) for t in range(threads)]

    def run(divide: bool, last: bool):
        parts[:] = 0.0
        in_threads(lambda t: _ruiz_rows(A, row_d, col_d, row, parts[t], *bounds[t], divide, last), range(threads),
                   threads)
        _max_of_parts(parts, col)

    run(False, rounds == 0)
    for round_ in range(rounds):
        if not _to_scales(row, col, row_d, col_d, r, c):
            break
        run(True, round_ == rounds - 1)
    return A, r, c


def _copy(M: np.ndarray, large: bool) -> np.ndarray:
    """A C-ordered copy of M; a large one in fresh memory mapped in whole (no wait for huge pages, its pages mapped
    at once)."""
    if not large:
        return M.copy()
    A = fresh_doubles(M.size, populate=True).reshape(M.shape)
    np.copyto(A, M)
    return A


@njit(cache=True, nogil=True, error_model="numpy")
def _ruiz_serial(A, row_d, col_d, row, col, parts, r, c, rounds):
    """_ruiz's passes on one thread, in one call: the same steps as its threaded passes (the same bits)."""
    parts[:] = 0.0
    _ruiz_rows(A, row_d, col_d, row, parts[0], 0, A.shape[0], False, rounds == 0)
    _max_of_parts(parts, col)
    for round_ in range(rounds):
        if not _to_scales(row, col, row_d, col_d, r, c):
            break
        parts[:] = 0.0
        _ruiz_rows(A, row_d, col_d, row, parts[0], 0, A.shape[0], True, round_ == rounds - 1)
        _max_of_parts(parts, col)


@njit(cache=True, nogil=True, error_model="numpy")
def _ruiz_rows(A, row_d, col_d, row, col_part, lo, hi, divide, last):
    """Rows lo..hi of one pass of _ruiz: where `divide`, A[i, j] / row_d[i] / col_d[j] (numpy's error model: no
    divisor is 0); unless `last`, the row maxima of |A| into row[lo:hi] and the column maxima into col_part (a nan is
    the maximum, as np.max takes it)."""
    for i in range(lo, hi):
        top = 0.0
        for j in range(A.shape[1]):
            a = A[i, j]
            if divide:
                a = a / row_d[i] / col_d[j]
                A[i, j] = a
            if not last:
                a = abs(a)
                if a > top or math.isnan(a):
                    top = top if math.isnan(top) else a
                if a > col_part[j] or math.isnan(a):
                    col_part[j] = col_part[j] if math.isnan(col_part[j]) else a
        if not last:
            row[i] = top


@njit(cache=True, nogil=True)
def _max_of_parts(parts, col):
    """col[j] = the largest parts[t, j] over t (nan where one is nan)."""
    for j in range(col.size):
        top = 0.0
        for t in range(parts.shape[0]):
            a = parts[t, j]
            if a > top or math.isnan(a):
                top = top if math.isnan(top) else a
        col[j] = top


@njit(cache=True, nogil=True)
def _to_scales(row, col, row_d, col_d, r, c):
    """The maxima to the round's divisors (square roots, 0 as 1), and those into the scalings r and c. False where
    every divisor is 1: this round and all after it would leave A, r and c as they are (an rbf's system, unit
    diagonal and labels of size 1, is already scaled), so the caller stops."""
    moves = False
    for i in range(row.size):
        row_d[i] = 1.0 if row[i] == 0 else math.sqrt(row[i])
        r[i] /= row_d[i]
        moves = moves or row_d[i] != 1.0
    for j in range(col.size):
        col_d[j] = 1.0 if col[j] == 0 else math.sqrt(col[j])
        c[j] /= col_d[j]
        moves = moves or col_d[j] != 1.0
    return moves


def _violations(codes, a, r, C, scale, eps, margin_eps) -> np.ndarray:
    """Points whose KKT condition fails at the polished point: alpha off [0, C] by more than eps (relative),
    a margin r_i off its side by more than margin_eps_i (margin units, with its rounding allowance)."""
    upper = math.inf if penalty.is_hard(C) else C * (1 + eps)
    n = np.shape(a)
    return _violated(one_type(codes, np.int8), one_type(a), one_type(r), per_point(-eps * scale, n), per_point(upper, n),
                     per_point(margin_eps, n))


@njit(cache=True, nogil=True)
def _violated(codes, a, r, low, upper, margin_eps):
    """_violations' test point by point (one compiled pass where the array steps were a dozen calls): at ZERO
    r_i < -margin_eps_i, at AT_BOUND r_i > margin_eps_i, FREE a_i < low_i, a_i > upper_i or |r_i| > margin_eps_i
    (a nan compares false, as in the array steps)."""
    out = np.zeros(codes.size, dtype=np.bool_)
    for i in range(codes.size):
        if codes[i] == ZERO:
            out[i] = r[i] < -margin_eps[i]
        elif codes[i] == AT_BOUND:
            out[i] = r[i] > margin_eps[i]
        elif codes[i] == FREE:
            out[i] = a[i] < low[i] or a[i] > upper[i] or abs(r[i]) > margin_eps[i]
    return out


def _move(codes, moves, a, r, C):
    """The next guess of the sets: a bound point that breaks its condition becomes free; a free one that
    left [0, C] goes to the bound it crossed. A free one held on a bound by the bounded least-squares
    fallback of _solve_sets (a = 0 or C exactly, its margin equation unmet) goes to that bound when its
    margin says the bound is right (r > 0 at 0, r < 0 at C): without this move the sets never changed
    and the rounds ran out (breast cancer, RBF, C = 0.1, gamma = 0.1: 2 of 5 folds, left to the weaker
    gap bound, one of them then unverified)."""
    new = codes.copy()
    free_moved = moves & (codes == FREE)
    new[moves & (codes != FREE)] = FREE
    new[free_moved & ((a < 0) | ((a <= 0) & (r > 0)))] = ZERO
    new[free_moved & ((a > C) | ((a >= C) & (r < 0)))] = AT_BOUND
    return new


def _middle(lo: float, hi: float) -> float:
    if math.isfinite(lo) and math.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if math.isfinite(lo) else hi


def gap_bound(gram: Gram, y: np.ndarray, C: float, alpha: np.ndarray, g: np.ndarray, b: float, ww: float) -> float:
    """A rigorous bound on max_i |f(x_i) - f*(x_i)| from feasible points' duality gap (margin units).

    The dual point is alpha clipped to [0, C] with the larger class scaled down until
    sum alpha_i y_i = 0; the primal point is (w, b) with its best slacks, scaled by 1/m
    for the hard margin when its smallest y_i f_i = m < 1 (then feasible). inf when no
    feasible primal is at hand (hard margin, m <= 0). g = f - b at the point, ww = ||w||^2.
    The bound on g is doubled for b: the optimal b's move with g by at most as much.
    """
    a = np.clip(alpha, 0.0, None if penalty.is_hard(C) else C)
    pos, neg = y > 0, y < 0
    sp, sn = a[pos].sum(), a[neg].sum()
    if sp > sn:
        a[pos] *= sn / sp
    elif sn > sp:
        a[neg] *= sp / sn
    u = y * a
    dual = float(a.sum()) - 0.5 * float(u @ gram.times(u))
    ww = max(ww, 0.0)
    f = g + b
    if not penalty.is_hard(C):
        primal, shift = 0.5 * ww + penalty.weighted_sum(C, np.maximum(0.0, 1.0 - y * f)), 0.0
    else:
        m = float(np.min(y * f))
        if not m > 0:
            return math.inf
        m = min(m, 1.0)
        primal = 0.5 * ww / m ** 2
        shift = float(np.max(np.abs(f))) * (1.0 / m - 1.0)  # moving to the feasible (w/m, b/m)
    gap = max(primal - dual, 0.0)
    return 2.0 * (math.sqrt(gram.max_diagonal()) * math.sqrt(2.0 * gap) + shift) + _b_slack(y, g, b, C)


def _b_slack(y, g, b, C) -> float:
    lo, hi = hinge_argmin(y, g, penalty.hinge_weights(C))
    return max(lo - b, b - hi, 0.0)


def warm() -> None:
    """The proof's compiled parts (the equilibration, the residual's Dot2, the in-place route's scan, residual and
    mirror, _within, _free_system, _violated) loaded
    from numba's cache (or compiled), in the types the proof calls them with."""
    _equilibrated_solve(np.eye(2), np.ones(2))
    _equilibrated_solve(np.array([[2.0, 1.0], [1.0, 0.0]]), np.ones(2), saddle=True)
    _in_place_solve(np.eye(2), np.array([1.0, -1.0]), np.ones(3))
    _unfactor(np.eye(2), np.ones(2))
    a = np.array([0.5, 0.0])
    _in_bounds(a, 1.0)
    _free_system(np.eye(2), a, a, 0.0)
    _violations(np.array([FREE, ZERO], dtype=np.int8), a, np.zeros(2), 1.0, 1.0, POLISH_TOL, np.zeros(2))
