"""The exact optimum of a family member's box-QP dual (formulations.family.common.BoxQP), proved from the active set
a point suggests: what solvers.family measures a row's point against.

The free coordinates solve the dual's linear KKT system; where that system is singular (a linear or low-rank
kernel, a degenerate optimum) its minimum-norm solution can leave the box although a solution inside it exists,
and then the bounded least-squares fit the C-SVM's proof uses (solvers.reference.bounded_fit, exact up to
BVLS_MAX_ENTRIES) picks one inside the box.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from formulations.family.common import AT_BOUND, BoxQP, top, zero_level
from solvers.reference import BVLS_MAX_ENTRIES, NotTried, bounded_fit

_TINY = np.finfo(float).tiny
#: the proof's rounds: each moves the coordinates its previous guess of the active set got wrong
PROOF_ROUNDS = 20
#: what the proof's conditions allow, relative to the size of the terms that make them (their rounding)
PROOF_RTOL = 1e-9
#: the careful rounds move one coordinate each, so they get this many times the proof's rounds
CAREFUL_ROUNDS = 3


def prove(qp: BoxQP, a: np.ndarray) -> np.ndarray | None:
    """The exact optimum of `qp` on the active set the point `a` suggests, or None where no guess is proved.

    Coordinates within AT_BOUND of a bound are fixed there, and the free ones solve the linear KKT system
    Q_FF a_F + A_F' mu = -p_F - Q_FB a_B,  A_F a_F = c - A_B a_B  (`_solve_free`; free coordinates it puts on a
    bound join that bound). The result is the optimum when every free a_i is in [0, U] and some multipliers mu
    make the reduced gradient G = Q a + p + A' mu zero on the free coordinates, >= 0 at the lower bounds and
    <= 0 at the upper ones, to the rounding of its terms (`_multipliers`: a group whose coordinates are all at
    bounds leaves its multiplier an interval); otherwise the wrong guesses move and the system is solved again.
    Only a point meeting every condition above is returned, whichever guess it came from.

    Where these rounds prove nothing (on duals of at most BVLS_MAX_ENTRIES entries, where the bounded fit is
    tried too), they run again moving one coordinate per round: the free one farthest outside the box to its
    bound, else the bound one whose gradient is most wrong to the free set. From an inaccurate point's guess with
    too many free coordinates, moving all that cross at once can overshoot the optimum's set. An interior
    point's alpha can leave most coordinates strictly inside the box; the last guesses read the active set from
    its reduced gradient instead (`_gradient_guess`)."""
    a = np.asarray(a, dtype=float)
    qp = replace(qp, U=np.broadcast_to(np.asarray(qp.U, dtype=float), a.shape))  # one bound per coordinate
    # near 0: against the box's size, or the largest a where smaller (zero_level); near U_i: its own bound
    state = np.where(a <= zero_level(a, qp.U), -1, np.where(a >= (1.0 - AT_BOUND) * qp.U, 1, 0))
    x = _rounds(qp, state, careful=False)
    if qp.Q.size > BVLS_MAX_ENTRIES:  # the careful rounds' one move per solve is for small duals only
        return x
    if x is None:
        x = _rounds(qp, state, careful=True)
    for band in ROUNDING_BANDS:  # an interior point a little inside its bounds: rounded to them
        if x is not None:
            break
        x = _rounds(qp, _rounded_guess(qp, a, band), careful=True)
    for band in GRADIENT_BANDS:
        if x is not None:
            break
        x = _rounds(qp, _gradient_guess(qp, a, state, band), careful=True)
    return x


#: the reduced gradient's bands (relative to the size of its terms) within which a point is guessed free
GRADIENT_BANDS = (1e-6, 1e-4, 1e-2)
#: the bands (relative to each bound) within which a coordinate is guessed at that bound
ROUNDING_BANDS = (1e-4, 1e-2)


def _rounded_guess(qp: BoxQP, a: np.ndarray, band: float) -> np.ndarray:
    """The active set with every coordinate within `band` of a bound put on it (of 0: band times zero_level's
    reach), free between."""
    low = band / AT_BOUND * zero_level(a, qp.U)
    return np.where(a <= low, -1, np.where(a >= (1.0 - band) * qp.U, 1, 0))


def _gradient_guess(qp: BoxQP, a: np.ndarray, state: np.ndarray, band: float) -> np.ndarray:
    """The active set the reduced gradient G = Q a + p + A'mu at `a` suggests: a_i = 0 where G_i > band times the
    size of its terms, a_i = U where G_i < -band times it, free between."""
    r = qp.Q @ a + qp.p
    mu = _multipliers(qp.A, r, state)
    G = r + qp.A.T @ mu
    size = band * max(float(np.max(np.abs(qp.Q) @ np.abs(a) + np.abs(qp.p) + np.abs(qp.A.T) @ np.abs(mu))), _TINY)
    guess = np.where(G > size, -1, np.where(G < -size, 1, 0))
    guess[(guess == 1) & ~np.isfinite(qp.U)] = 0  # no upper bound to sit on
    return guess


def _outside(x: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(below 0, above U_i) beyond rounding: below against the size of x's entries (capped by the box's size: a
    large C leaves the multipliers far below U, where 1e-9 U is no rounding), above against each one's bound."""
    finite = U[np.isfinite(U)]
    level = max(top(x), _TINY) if finite.size == 0 else min(float(np.max(finite)), max(top(x), _TINY))
    return x < -PROOF_RTOL * level, x > U * (1.0 + PROOF_RTOL)


def _rounds(qp: BoxQP, state: np.ndarray, careful: bool) -> np.ndarray | None:
    """prove's rounds from the active set `state` (-1 at 0, 1 at U, 0 free; careful: one coordinate at a time
    joins its bound)."""
    U = qp.U
    state = state.copy()
    for _ in range(PROOF_ROUNDS * (CAREFUL_ROUNDS if careful else 1)):
        x, bounded = _solve_free(qp, state)
        if x is None:
            return None
        if bounded:  # the coordinates the bounded fit put on a bound are at that bound
            free = state == 0
            state[free & (x <= 0.0)], state[free & (x >= U)] = -1, 1
        unmet = np.abs(qp.A @ x - qp.c) > PROOF_RTOL * (np.abs(qp.A) @ np.abs(x) + np.abs(qp.c))
        if unmet.any():  # the fixed coordinates leave the equalities no free coordinate to meet them with
            return None
        r = qp.Q @ x + qp.p
        size = np.abs(qp.Q) @ np.abs(x) + np.abs(qp.p)
        mu = _multipliers(qp.A, r, state)
        size = size + np.abs(qp.A.T) @ np.abs(mu)
        slack = PROOF_RTOL * max(float(size.max()), _TINY)
        G = r + qp.A.T @ mu
        free = state == 0
        below, above = _outside(x, U)
        low, high = free & below, free & above
        wrong = ((state == -1) & (G < -slack)) | ((state == 1) & (G > slack)) | (free & (np.abs(G) > slack))
        if not (low.any() or high.any() or wrong.any()):
            return np.clip(x, 0.0, U)
        if careful:  # one coordinate per round: the one farthest outside the box, else the most wrong at a bound
            out = np.maximum(-x, x - U) * (low | high)
            i = int(np.argmax(out)) if (low | high).any() else int(np.argmax(np.abs(G) * (wrong & ~free)))
            state[i] = (-1 if low[i] else 1) if free[i] else 0
            continue
        state[low], state[high] = -1, 1
        state[wrong & ~free] = 0
    return None


def _multipliers(A: np.ndarray, r: np.ndarray, state: np.ndarray) -> np.ndarray:
    """The equalities' multipliers mu that make G = r + A'mu most nearly what each coordinate's state asks
    (0 free, >= 0 at the lower bound, <= 0 at the upper one): min s s.t. those within s, a small LP."""
    k = A.shape[0]
    if k == 0:  # no equalities (a dual without a bias): nothing to choose
        return np.zeros(0)
    unit = max(float(np.max(np.abs(r))), _TINY)  # the LP in units of r: HiGHS's tolerances are absolute
    r = r / unit
    rows, rhs = [], []
    for sign, mask in ((1.0, state != -1), (-1.0, state != 1)):  # sign * G_i <= s
        rows.append(np.hstack([sign * A[:, mask].T, -np.ones((int(mask.sum()), 1))]))
        rhs.append(-sign * r[mask])
    result = linprog(np.r_[np.zeros(k), 1.0], A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                     bounds=[(None, None)] * k + [(0, None)], method="highs")
    return unit * result.x[:k] if result.status == 0 else np.zeros(k)


def _solve_free(qp: BoxQP, state: np.ndarray) -> tuple[np.ndarray | None, bool]:
    """(a, whether the bounded fit gave it): a with the bound coordinates at their bounds (qp.U: one per
    coordinate, prove's) and the free ones from
    the KKT system: least squares (Q_FF is singular for a linear kernel with fewer features than free points),
    and where its minimum-norm solution leaves [0, U], the bounded fit inside the box when it solves the system
    exactly (else the rounds move the coordinates that crossed a bound)."""
    x = np.where(state == 1, qp.U, 0.0)
    F = np.flatnonzero(state == 0)
    B = state != 0
    k = qp.A.shape[0]
    # the equalities' rows times the size of Q: least squares then weighs them alike whatever the data's units
    unit = max(float(np.max(np.abs(qp.Q))), _TINY)
    rhs = np.concatenate([-qp.p[F] - qp.Q[np.ix_(F, B)] @ x[B], unit * (qp.c - qp.A[:, B] @ x[B])])
    M = np.block([[qp.Q[np.ix_(F, F)], unit * qp.A[:, F].T], [unit * qp.A[:, F], np.zeros((k, k))]])
    if not np.all(np.isfinite(M)):
        return None, False
    bounded = False
    solved = np.linalg.lstsq(M, rhs, rcond=None)[0]
    UF = qp.U[F]
    if F.size and any(part.any() for part in _outside(solved[:len(F)], UF)):
        try:
            fit = bounded_fit(M, rhs, np.r_[np.zeros(len(F)), np.full(k, -np.inf)], np.r_[UF, np.full(k, np.inf)])
        except NotTried:
            fit = None
        # only an exact fit solves the system: an inexact one leaves the rounds to move what crossed a bound
        if fit is not None and np.all(np.abs(M @ fit - rhs) <= PROOF_RTOL * (np.abs(M) @ np.abs(fit) + np.abs(rhs))):
            solved, bounded = fit, True
    x[F] = solved[:len(F)]
    return x, bounded


class TubeLPFailed(RuntimeError):
    """The LP of hard_tube_width found no answer (its message says why): the hard tube's width is unknown."""


def hard_tube_width(data, y: np.ndarray) -> float:
    """The narrowest hard tube the data allow: min over f of max_i |y_i - f(x_i)|, f = w'x + b (data.X, dense or
    scipy.sparse; no K) or sum_j c_j K_ij + b, a small LP (HiGHS) independent of the solve it judges. epsilon-SVR
    with C = inf has a point exactly when its epsilon is at least this. TubeLPFailed where the LP has no answer."""
    M = data.K if data.K is not None else data.X
    n, m = M.shape
    unit = max(float(np.max(np.abs(y - np.mean(y)))), _TINY)  # in the targets' units: HiGHS's tolerances are absolute
    ones = np.ones((n, 1))
    # variables (c, b, t): y_i - f_i <= t and f_i - y_i <= t; sparse X stays sparse (HiGHS takes it as it is)
    if sparse.issparse(M):
        M = sparse.csr_matrix(M, dtype=float)
        A = sparse.vstack([sparse.hstack([-M, -ones, -ones]), sparse.hstack([M, ones, -ones])], format="csr")
    else:
        M = np.asarray(M, dtype=float)
        A = np.vstack([np.hstack([-M, -ones, -ones]), np.hstack([M, ones, -ones])])
    rhs = np.concatenate([-y, y]) / unit
    result = linprog(np.r_[np.zeros(m + 1), 1.0], A_ub=A, b_ub=rhs, bounds=[(None, None)] * (m + 1) + [(0, None)],
                     method="highs")
    if result.status != 0:
        raise TubeLPFailed(f"the LP (HiGHS) for the narrowest tube ended with status {result.status}: "
                           f"{result.message}")
    return unit * float(result.x[-1])


def second_order(qp: BoxQP, x: np.ndarray) -> str:
    """Whether the KKT point x of a (non-convex) box QP has a reduced Hessian Z'Q_FF Z positive semidefinite on its
    face (F: the coordinates strictly inside the box; Z: the null space of the equalities' rows there), to the
    rounding of Q: a local minimum's necessary condition. "holds" or "fails (a saddle point)"."""
    U = np.broadcast_to(np.asarray(qp.U, dtype=float), x.shape)
    F = np.flatnonzero((x > zero_level(x, U)) & (x < (1.0 - AT_BOUND) * U))
    if F.size == 0:
        return "holds (a vertex of the box: no free coordinate)"
    A = qp.A[:, F]
    _, singular, vt = np.linalg.svd(A, full_matrices=True) if A.size else (None, np.zeros(0), np.eye(F.size))
    rank = int(np.sum(singular > 1e-12 * max(float(singular.max()) if singular.size else 0.0, _TINY)))
    Z = vt[rank:].T
    if Z.shape[1] == 0:
        return "holds (the equalities fix the free coordinates)"
    lowest = float(np.linalg.eigvalsh(Z.T @ qp.Q[np.ix_(F, F)] @ Z).min())
    size = max(float(np.max(np.abs(qp.Q[np.ix_(F, F)]))), _TINY)
    return "holds" if lowest >= -1e-9 * size * F.size else f"fails (a saddle point: curvature {lowest:.3g} on its face)"
