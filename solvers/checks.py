"""Verify, don't trust: duality gap, KKT residuals and the distance to the proved optimum.

Notation of the lecture notes: u_i = alpha_i y_i, f(x_i) = sum_j u_j K_ij + b
(K = X X' for the linear SVM), xi_i = max(0, 1 - y_i f(x_i)).

    P(w, b)   = 1/2 ||w||^2 + C sum_i xi_i      (hard margin: 1/2 ||w||^2, xi must be 0)
    D(alpha)  = sum_i alpha_i - 1/2 ||sum_i alpha_i y_i x_i||^2

What `optimal` certifies. A row is `optimal` only when the solver claimed an optimum and
every one of these holds at the returned point to the profile's tolerance `tol` (1e-4 by
default, 1e-6 under `high`), each measured on its own scale so that the verdict is the same
for X in metres or in millimetres, for C = 1e-5 or 1e10, for n = 10 or 10^6:

  primal feasibility   y_i f(x_i) >= 1 - xi_i                  violation in margin units (y f = 1)
  dual feasibility     0 <= alpha_i <= C                         below 0 relative to max alpha, above C relative to C
                       (per-sample C, formulations.penalty: alpha_i <= C_i relative to C_i, C_i in place of C below)
  balance              sum_i alpha_i y_i = 0                     relative to sum_i alpha_i
  stationarity         w = sum_i alpha_i y_i x_i                 relative to ||w||, or where w* is near 0 to the
                                                                 w that moves f by max|f| (w_scale)
  complementarity      alpha_i > 0 only on or inside the margin, alpha_i < C only on or outside it
                       (alpha_i max(0, y_i f_i - 1) / max alpha and (C - alpha_i) xi_i / C)
  the gap              |P - D| relative to P (P > 0 for every SVM with both classes); for the
                       dual formulations less its own rounding (gap_rounding: at C = 1e9 each
                       point on its margin adds C times the rounding of its f_i to P, 1e-6 of P
                       on breast cancer). Not for the primal ones: there P is the row's claimed
                       objective, and one whose rounding exceeds tol is not verified (d >> n
                       at C = 1e6: 5.7e-6 of P; the dual formulations verify there).
  the point itself     the objective relative to P*, w relative to ||w*||, every decision value
                       f(x_i) and b (inside the interval of optimal b's, seed 000's rule) relative
                       to max_i |f*(x_i)| (at a tiny C every |f*| is far below the margin's 1; where
                       f* is b alone, any b of an interval, the interval's largest |b|: b_only_scale),
                       against the optimum the project computes and proves from the point's
                       active set (solvers.reference.polish); where no proof is found, a rigorous
                       bound from the gap of feasible points must be within tol instead.

A point whose objective is near-optimal but whose w, b or f are not gets `optimal_inaccurate`.
No tolerance is taken relative to max(1, .): that would make every check absolute for data
whose numbers are small. By hand: take w, b from the table, compute y_i (w'x_i + b) for every
point, the alphas' sums, and P - D; each line above is one comparison.

A primal solve whose backend returns no multipliers (cvxpy's Ipopt path) gets
them estimated from the point: a bounded least-squares fit of the stationarity
equations over the points on or inside the margin. The estimate is recorded as
such; it can only make the gap larger, never hide one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from formulations import penalty
from formulations.data_matrix import absolute, one_type, signed, squared_row_norms
from formulations.model import HARD_PRIMAL, KERNEL_DUAL, PRIMAL_FORMULATIONS
from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once
from formulations.recovery import AT_BOUND, FREE, classify, nan_max, per_point
from solvers.solution import (
    ERROR, INFEASIBLE, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, Solution, TIME_LIMIT, UNBOUNDED
)
from solvers.deadline import NEVER, Deadline
from solvers.kernel_audit import kernel_error
from solvers.reference import BVLS_MAX_ENTRIES, MARGIN_ROUNDING, Gram, gap_bound, polish
from formulations.kernels import factorize

_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps


@dataclass
class Checks:
    """Residuals as the verdict measures them (each relative to its own scale, see the module doc)."""

    primal_objective: float = math.nan
    dual_objective: float = math.nan
    duality_gap: float = math.nan
    rel_duality_gap: float = math.nan  # |P - D| / P
    gap_rounding: float = 0.0  # how much of rel_duality_gap rounding alone can make (the module doc)
    kkt_stationarity: float = math.nan  # ||w - X'(y alpha)|| / w_scale (||w||, or max|f| / max||x|| if larger)
    kkt_balance: float = math.nan  # |y'alpha| / sum alpha
    kkt_primal_feasibility: float = math.nan  # max(0, 1 - y f) (hard margin), margin units
    kkt_dual_feasibility: float = math.nan  # max(-alpha)/max alpha, max(alpha - C)/C
    kkt_complementarity: float = math.nan  # margin units
    reference: str = ""  # how the point's error was measured: "proved optimum", "gap bound", or why neither
    err_objective: float = math.nan  # |objective - P*| / P*
    err_w: float = math.nan  # ||w - w*|| / ||w*|| (linear formulations)
    err_b: float = math.nan  # distance of b from the optimal b's / max |f*|
    err_decision: float = math.nan  # max_i |f(x_i) - f*(x_i)| / max |f*| (a bound where no proof)
    # what the kernel dual's K, beyond rounding, moves f by / max |f|, on entries recomputed by another formula
    # (solvers.kernel_audit); nan for a precomputed K or without a point
    err_kernel: float = math.nan
    kernel_entries_checked: int = 0
    b_lower: float = math.nan  # the optimal b's, from the proved optimum
    b_upper: float = math.nan
    n_sv: int = 0
    n_free_sv: int = 0
    n_bound_sv: int = 0
    margin: float = math.nan
    train_accuracy: float = math.nan
    alpha_source: str = ""
    verified: bool = False
    verdict: str = ""
    timed_out: bool = False  # the solve's time limit passed before the proof of the optimum finished (not verified)
    # the proved optimum's alpha (exact zeros off the support); not a table column (as_dict leaves it out)
    proved_alpha: np.ndarray | None = field(default=None, repr=False)
    # ... and its b: the midpoint of [b_lower, b_upper] where no alpha is free (LIBSVM's rule); not a column
    proved_b: float = field(default=math.nan, repr=False)

    def as_dict(self) -> dict:
        """The table's columns (every field but the proved optimum's alpha and b: asdict would deep-copy alpha)."""
        return {name: getattr(self, name) for name in _COLUMNS}


#: Checks' fields that are table columns, in order (dataclasses.fields builds its tuple anew at every call).
_COLUMNS = tuple(f.name for f in fields(Checks) if f.name not in ("proved_alpha", "proved_b"))


def estimate_multipliers(X: np.ndarray, y: np.ndarray, w: np.ndarray, decision: np.ndarray, C: float,
                         band: float = 1e-6) -> np.ndarray:
    """alpha for a primal point (w, b) that came without multipliers.

    Points strictly outside the margin get alpha_i = 0, points strictly inside get
    alpha_i = C; those on the margin (|y_i f_i - 1| <= band, margin units) get the
    bounded least-squares solution of X'(y*alpha) = w, y'alpha = 0. A point handed in to
    a stated accuracy (solvers.grading) sits on its margin only to that accuracy: band = its tolerance.
    """
    n = len(y)
    slack = 1.0 - y * decision
    on = np.abs(slack) <= band
    inside = slack > band
    alpha = np.zeros(n)
    if not penalty.is_hard(C):
        alpha[inside] = penalty.at(C, inside)
    if not on.any():
        return alpha
    fixed = X[inside].T @ (y[inside] * alpha[inside]) if inside.any() else np.zeros(X.shape[1])
    rows = signed(y[on], X[on]).T  # sparse where X is: lsq_linear then solves by LSMR
    M = sp.vstack([rows, y[on][None, :]], format="csr") if sp.issparse(rows) else np.vstack([rows, y[on][None, :]])
    target = np.concatenate([w - fixed, [-float(np.sum(y[inside] * alpha[inside]))]])
    upper = np.inf if penalty.is_hard(C) else penalty.at(C, on)
    # BVLS solves the fit exactly where it is small enough; trf stops at its tolerance, which over large x
    # (a degenerate optimum, x ~ 1e3) left w 400 times its own size off
    exact = not sp.issparse(M) and M.size <= BVLS_MAX_ENTRIES
    alpha[on] = lsq_linear(M, target, bounds=(0.0, upper), method="bvls" if exact else "trf").x
    return alpha


def compute_checks(sol: Solution, X, y: np.ndarray, C: float, K: np.ndarray | None = None,
                   tol: float = 1e-4, *, Ku: np.ndarray | None = None, deadline: Deadline = NEVER,
                   kernel=None, alpha_claimed: bool = False) -> Checks:
    """The checks at `sol`'s point (_checks_at). A primal point whose solver's multipliers fail them gets a second
    hearing with multipliers estimated from the point itself (estimate_multipliers), every check again: the
    primal row claims (w, b), and a solver's inaccurate duals (a degenerate optimum, w* = 0 with most points
    on the margin) must not refuse a right point, while no multipliers can make a wrong one pass.
    alpha_claimed: the multipliers are part of the claim (a handed-in answer, solvers.grading): no second hearing."""
    out = _checks_at(sol, X, y, C, K, tol, Ku=Ku, deadline=deadline, kernel=kernel)
    if (out.verified or out.timed_out or alpha_claimed or out.alpha_source != "solver" or sol.w is None
            or sol.formulation not in PRIMAL_FORMULATIONS or not out.kkt_primal_feasibility <= tol):
        return out  # (an infeasible point fails whatever its multipliers: no second pass over the data)
    with np.errstate(over="ignore", invalid="ignore"):  # a wild point's estimate overflows: it fails, quietly
        second = _checks_at(replace(sol, alpha=None), X, y, C, K, tol, Ku=Ku, deadline=deadline, kernel=kernel)
    if not second.verified:
        return out
    second.alpha_source = f"estimated (the solver's failed: {out.verdict})"
    return second


def _checks_at(sol: Solution, X, y: np.ndarray, C: float, K: np.ndarray | None = None,
               tol: float = 1e-4, *, Ku: np.ndarray | None = None, deadline: Deadline = NEVER,
               kernel=None) -> Checks:
    """Recompute objectives, gap and KKT residuals at `sol`'s point; `tol` is the verdict's bar.

    For the kernel dual, `Ku` = K u (u = y * sol.alpha) if the caller has it
    already (solvers.closing.recover returns it); otherwise it is computed here. `kernel`: the
    formulations.kernels.Kernel that made K from the data X (or K's own, a row source's: its kernel and
    data), whose entries are then recomputed by another formula (solvers.kernel_audit).
    deadline: the solve's time limit (solvers.deadline). The residuals are O(n) and always computed; the
    proof of the optimum (the long part: dense solves for the free points) does not start, or stops between
    its rounds, once it has passed: the point is then not verified (timed_out), never judged by less.
    """
    out = Checks()
    if sol.decision is None:
        out.verdict = "no point returned"
        return out
    hard = sol.formulation == HARD_PRIMAL or penalty.is_hard(C)
    f = sol.decision
    hinge = np.maximum(0.0, 1.0 - y * f)
    alpha, out.alpha_source = _multipliers(sol, X, y, f, C)
    kernel, X = _audited_kernel(sol, K, X, kernel)
    kernel_dual = sol.formulation == KERNEL_DUAL
    # a Gram already (solvers.algorithms.kernel_rows: kernel rows on demand, no n x n matrix), or X or K
    gram = K if isinstance(K, Gram) else Gram(None if kernel_dual else X, K if kernel_dual else None)
    ww, w_from_alpha_sq, w_gap = _w_terms(sol, gram, X, y, alpha, Ku, kernel_dual)
    # relative to w_scale: ||w|| or, where w* is (nearly) 0, the w that moves f by max|f| (||w|| alone would
    # make rounding-sized errors in a w* = 0 fail)
    stationarity = 0.0 if kernel_dual else w_gap / w_scale(sol.w, X, decision_scale(f))

    out.primal_objective = 0.5 * ww + (0.0 if hard else penalty.weighted_sum(C, hinge))
    out.kkt_primal_feasibility = float(hinge.max()) if hard else 0.0
    out.margin = 2.0 / math.sqrt(ww) if ww > 0 else math.inf
    # np.mean's value (an exact count over n) without its float conversion and sum
    out.train_accuracy = np.count_nonzero(np.sign(f) == y) / f.size if f.size else math.nan
    if alpha is None:
        out.verdict = "no multipliers"
        return out
    _kkt_residuals(out, alpha, y, f, hinge, C, hard, w_from_alpha_sq, stationarity)
    primal = sol.formulation in PRIMAL_FORMULATIONS
    codes = classify(alpha, y, f, C)
    counts = np.bincount(codes, minlength=3)  # ZERO, FREE, AT_BOUND
    out.n_sv, out.n_bound_sv, out.n_free_sv = int(codes.size - counts[0]), int(counts[AT_BOUND]), int(counts[FREE])
    scaled = _residuals(out, sol, gram, kernel, X, alpha, y, f, C, hard, primal, codes)
    # where every b of an interval is optimal and f* is b alone, w's scale is the interval's: the proof's
    # (b_only_scale), never the point's own, which a wrong w would choose
    widen = stationarity > tol and not hard
    if all(v <= tol for name, v in scaled.items() if not (widen and name == "stationarity")):
        scaled.update(_errors(out, sol, gram, alpha, y, f, C, ww, primal, deadline, codes,
                              w_gap if widen else None))
    failed = {name: value for name, value in scaled.items() if not value <= tol}
    out.verified = not failed and not out.timed_out
    out.verdict = (deadline.stopped("in the closing checks, before the proof of the optimum") + ": not verified"
                   if out.timed_out else "verified" if not failed
                   else "; ".join(f"{k} {v:.2e} > {tol:.0e}" for k, v in failed.items()))
    return out


def _multipliers(sol: Solution, X, y: np.ndarray, f: np.ndarray, C) -> tuple[np.ndarray | None, str]:
    """The multipliers the checks judge and where they come from: the solver's, or estimated from a primal
    point that came without them (estimate_multipliers)."""
    if sol.alpha is None and sol.formulation in PRIMAL_FORMULATIONS and sol.w is not None:
        return estimate_multipliers(X, y, sol.w, f, C), "estimated"
    return sol.alpha, "solver"


def _audited_kernel(sol: Solution, K, X, kernel):
    """(kernel, X): the kernel whose entries the kernel dual's checks recompute from the data X, or None (no
    audit: another formulation, a precomputed K)."""
    if sol.formulation != KERNEL_DUAL:
        return None, X
    if kernel is None and getattr(K, "kernel", None) is not None:  # a row source knows its kernel and data
        kernel, X = K.kernel, K.data
    if kernel is not None and kernel.name == "precomputed":
        kernel = None
    return kernel, X


def _w_terms(sol: Solution, gram: Gram, X, y: np.ndarray, alpha, Ku,
             kernel_dual: bool) -> tuple[float, float, float]:
    """(||w||^2, ||sum_i alpha_i y_i x_i||^2, ||w - sum_i alpha_i y_i x_i||), through K for the kernel dual (where
    w is defined by alpha: no gap); nan where there are no multipliers."""
    if kernel_dual:
        u = y * alpha
        # ||w||^2 = u'Ku >= 0; rounding makes it negative for huge u (an unbounded dual's ray).
        ww = max(0.0, float(u @ (gram.times(u) if Ku is None else Ku)))
        return ww, ww, 0.0
    if alpha is None:
        return float(sol.w @ sol.w), math.nan, math.nan
    w_alpha = X.T @ (y * alpha)
    return float(sol.w @ sol.w), float(w_alpha @ w_alpha), float(np.linalg.norm(sol.w - w_alpha))


def _residuals(out: Checks, sol: Solution, gram: Gram, kernel, X, alpha, y, f, C, hard: bool,
               primal: bool, codes: np.ndarray) -> dict:
    """The residuals the verdict compares with tol, each on its own scale (the module doc), and the gap's
    rounding (the dual's gap is judged less it; a primal's rounding is judged itself)."""
    if not hard:
        size = decision_terms(gram, alpha, sol.b, sol.w if primal else None)
        out.gap_rounding = gap_rounding(C, alpha, y, f, size) / max(out.primal_objective, _TINY)
    scaled = {
        **(_kernel_values(out, gram, kernel, X, alpha, y, f, codes) if kernel else {}),
        "relative duality gap": out.rel_duality_gap if primal else max(0.0, out.rel_duality_gap - out.gap_rounding),
        "stationarity": out.kkt_stationarity if math.isfinite(out.kkt_stationarity) else 0.0,
        "balance": out.kkt_balance,
        "primal feasibility": out.kkt_primal_feasibility,
        "dual feasibility": out.kkt_dual_feasibility,
        "complementarity": out.kkt_complementarity,
    }
    if primal:
        scaled["rounding of the primal objective"] = out.gap_rounding
    return scaled


def _kernel_values(out: Checks, gram: Gram, kernel, X: np.ndarray, alpha, y, f, codes) -> dict:
    """The kernel dual's K checked against entries recomputed by another formula (solvers.kernel_audit)."""
    out.err_kernel, out.kernel_entries_checked = kernel_error(kernel, X, gram, y * alpha, y * f - 1.0, codes,
                                                              decision_scale(f))
    return {"kernel values (recomputed)": out.err_kernel}


def _kkt_residuals(out: Checks, alpha, y, f, hinge, C, hard, w_from_alpha_sq, stationarity) -> None:
    """The objective of the dual, the gap and the KKT residuals, each on its own scale."""
    out.dual_objective = float(alpha.sum()) - 0.5 * w_from_alpha_sq
    out.duality_gap = out.primal_objective - out.dual_objective
    # P > 0 for every SVM with both classes (w = 0 leaves some xi_i >= 1); the dual's terms
    # bound it from the other side when a wrong point makes P tiny.
    scale = max(out.primal_objective, abs(out.dual_objective), _TINY)
    out.rel_duality_gap = abs(out.duality_gap) / scale
    out.kkt_stationarity = stationarity
    out.kkt_balance = float(abs(y @ alpha)) / max(float(np.abs(alpha).sum()), _TINY)
    # kkt_by_point's maxima in one compiled pass (its dozen array steps cost more than the arithmetic)
    n = np.shape(alpha)
    dual, comp = _kkt_maxima(one_type(alpha), per_point(y, n), per_point(f, n), per_point(C, n), penalty.is_hard(C), hard)
    out.kkt_dual_feasibility, out.kkt_complementarity = float(dual), float(comp)


def kkt_by_point(alpha: np.ndarray, y: np.ndarray, f: np.ndarray, C, hard: bool) -> dict[str, np.ndarray]:
    """Each point's residual of the pointwise KKT conditions, on the scales of the module doc: the verdict takes
    their maxima, and a grader (solvers.grading) names the point where each is worst.

      primal feasibility   max(0, 1 - y_i f_i) for the hard margin (0 for the soft: xi_i takes it up)
      dual feasibility     max(0, -alpha_i / max alpha, (alpha_i - C_i) / C_i)
      complementarity      alpha_i max(0, y_i f_i - 1) / max alpha, and (C_i - alpha_i) xi_i / C_i
    """
    top = max(float(np.max(np.abs(alpha))), _TINY)
    hinge = np.maximum(0.0, 1.0 - y * f)
    over = np.zeros_like(alpha) if penalty.is_hard(C) else (alpha - C) / C  # each alpha_i against its C_i
    outside = np.maximum(0.0, y * f - 1.0)  # alpha_i > 0 needs the point on or inside its margin
    comp = np.abs(alpha) * outside / top
    if not hard:
        comp = np.maximum(comp, np.abs(C - alpha) * hinge / C)  # xi_i > 0 needs alpha_i = C
    return {"primal feasibility": hinge if hard else np.zeros_like(hinge),
            "dual feasibility": np.maximum(0.0, np.maximum(-alpha / top, over)),
            "complementarity": comp}


@njit(cache=True, nogil=True, error_model="numpy")
def _kkt_maxima(alpha, y, f, C, no_upper, hard):
    """(max dual feasibility, max complementarity) of kkt_by_point's arrays, entry by entry with the same
    operations, a nan anywhere giving nan as np.max does; C: C_i for every point, no_upper: C is inf (the hard
    margin's dual: no upper bound), hard: the hard margin (no slack's complementarity)."""
    top = 0.0
    for i in range(alpha.size):
        top = nan_max(top, abs(alpha[i]))
    top = _TINY if _TINY > top else top  # Python's max(top, tiny): nan stays
    dual = comp = -math.inf
    for i in range(alpha.size):
        margin = y[i] * f[i]
        over = 0.0 if no_upper else (alpha[i] - C[i]) / C[i]
        dual = nan_max(dual, nan_max(0.0, nan_max(-alpha[i] / top, over)))
        c = abs(alpha[i]) * nan_max(0.0, margin - 1.0) / top
        if not hard:
            c = nan_max(c, abs(C[i] - alpha[i]) * nan_max(0.0, 1.0 - margin) / C[i])
        comp = nan_max(comp, c)
    return dual, comp


def decision_size(max_diagonal: float, alpha: np.ndarray, b: float) -> float:
    """A bound on the size of the terms that make up every f(x_i) = sum_j u_j K_ij + b: |K_ij| <= max_k K_kk
    (K positive semidefinite), so sum_j |u_j K_ij| <= max K_kk sum_j alpha_j. Its rounding, eps times it,
    is what f_i cannot be computed closer than."""
    return _plus_b(max_diagonal * float(np.abs(alpha).sum()), b)


def decision_terms(gram: Gram, alpha: np.ndarray, b: float, w: np.ndarray | None = None):
    """The size of the terms that make up each f(x_i), as the point's f is computed: sum_k |x_ik w_k| + |b|
    for a primal point (X w + b), |X| |X|' |alpha| + |b| for the linear dual, decision_size for a kernel.
    Per point, not through ||w|| ||x_i||: with one feature 1e8 times another that bound was 1e8 times too big."""
    if gram.X is None:
        return decision_size(gram.max_diagonal(), alpha, b)
    X = absolute(gram.X)
    return _plus_b(X @ (np.abs(w) if w is not None else X.T @ np.abs(alpha)), b)


def _plus_b(terms, b: float):
    """The terms of f(x_i) and b's own (none where b is not a number)."""
    return terms + abs(float(b)) if math.isfinite(b) else terms


def gap_rounding(C, alpha: np.ndarray, y: np.ndarray, f: np.ndarray, size) -> float:
    """How far P - D can be from its exact value through the rounding of f alone (first order).

    P - D = ||w||^2 + sum_i C_i xi_i - sum_i alpha_i, with xi_i = max(0, 1 - y_i f_i): an error e in
    each f_i moves C_i xi_i by C_i e where the hinge is active or within e of its kink, and
    ||w||^2 = sum_i u_i (f_i - b) by sum_i alpha_i e. With e_i = eps * size_i (decision_terms; one
    number or one per point) this is sum_{i near} C_i e_i + sum_i alpha_i e_i: 1e-8 of P at C = 1e6
    on breast cancer (rbf, 77 free points), 1e-5 at C = 1e9, negligible at ordinary C (the point's
    own gap is what counts)."""
    size = np.asarray(size, dtype=float)
    # one size for every point (a kernel's decision_size): np.full, without broadcast_to's view (slower to make)
    e = np.full(f.shape, _EPS * float(size)) if size.ndim == 0 else np.broadcast_to(_EPS * size, f.shape)
    near = (1.0 - y * f) > -e
    return penalty.weighted_sum(C, near * e) + float(np.abs(alpha) @ e)


def decision_scale(f: np.ndarray) -> float:
    """What an error in the decision values (and in b) is measured against: max_i |f*(x_i)|.

    Not max(1, .): the margin sits at y f = 1, but at a tiny C every point is inside it and
    |f*| can be 1e-4 (corpus: "rbf C=1e-5"); an absolute 1e-6 there would pass a 1% error."""
    return max(float(np.max(np.abs(f))), _TINY)


def b_only_scale(gram: Gram, u: np.ndarray, g: np.ndarray, b_lower: float, b_upper: float) -> float:
    """The size of the decision values where b alone makes them: every b of [b_lower, b_upper] is optimal and
    g = f - b = K u is 0 to the rounding of its terms sum_j |u_j K_ij| (w* = 0: each point twice with opposite
    labels). There max|f| at one b of the interval (its midpoint, 0) is no size at all: the optimal points' f
    reach max(|b_lower|, |b_upper|), which is. 0 where b is unique or g is not 0 (decision_scale alone)."""
    if not (math.isfinite(b_lower) and math.isfinite(b_upper) and b_upper > b_lower):
        return 0.0
    if np.any(np.abs(g) > MARGIN_ROUNDING * gram.magnitudes(u)):
        return 0.0
    return max(abs(b_lower), abs(b_upper))


def w_scale(w_ref: np.ndarray, X: np.ndarray, f_scale: float) -> float:
    """What an error in w is measured against: ||w*||, or, when w* is (nearly) 0, the size of a w that
    moves the decision values by f_scale (f_scale / max_i ||x_i||): w* = 0 happens at a tiny C with
    the class means together, and then only w's effect on f has a scale."""
    reach = float(np.sqrt(np.max(squared_row_norms(X)))) if X.shape[0] * X.shape[1] else 0.0
    return max(float(np.linalg.norm(w_ref)), f_scale / reach if reach > 0 else 0.0, _TINY)


def _errors(out: Checks, sol: Solution, gram: Gram, alpha, y, f, C, ww, primal: bool,
            deadline: Deadline = NEVER, codes: np.ndarray | None = None, w_gap: float | None = None) -> dict:
    """The point's distance to the optimum proved from its active set (or the gap's bound); primal: the
    row reports P (a primal formulation), else D. Nothing where the deadline stops the proof (out.timed_out):
    the gap's bound is for a proof that failed, not for one that was not given the time. codes: the points' classes
    at (alpha, f) (formulations.recovery.classify), the proof's first guess. w_gap: ||w - X'(y alpha)|| where
    stationarity failed on max|f|'s scale: judged again on the proved optimum's interval of b's (b_only_scale)."""
    g = f - sol.b
    ref = polish(gram, y, C, alpha, f, deadline=deadline, codes=codes)
    if not ref.ok and deadline.passed():
        out.timed_out, out.reference = True, "none: the time limit passed before the proof finished"
        return {}
    if not ref.ok:
        out.reference = f"gap bound (no proved optimum: {ref.reason})"
        out.err_decision = gap_bound(gram, y, C, alpha, g, sol.b, ww) / decision_scale(f)
        return {"decision values (bound)": out.err_decision}
    out.reference = "proved optimum"
    out.b_lower, out.b_upper = ref.b_lower, ref.b_upper
    out.proved_alpha, out.proved_b = ref.alpha, ref.b
    # Like with like: a primal's P(w, b) against P(w*, b*), a dual's D(alpha) against D(alpha*) (not
    # against P*: at C = 1e12 P's rounding is 1e-3 of P on breast cancer, where D(alpha) and D(alpha*)
    # agree to 1e-15).
    if primal:
        own, best = out.primal_objective, ref.objective
    else:
        own, best = out.dual_objective, ref.dual_objective
    out.err_objective = abs(own - best) / max(ref.objective, _TINY)
    f_scale = max(decision_scale(ref.g + ref.b),
                  b_only_scale(gram, y * ref.alpha, ref.g, ref.b_lower, ref.b_upper))
    out.err_b = max(ref.b_lower - sol.b, sol.b - ref.b_upper, 0.0) / f_scale
    errors = {}
    if w_gap is not None:
        out.kkt_stationarity = w_gap / w_scale(sol.w, gram.X, max(decision_scale(f), f_scale))
        errors["stationarity"] = out.kkt_stationarity
    # the point's g and the proof's add terms of these sizes: a difference within their rounding is no error
    rounding = MARGIN_ROUNDING * decision_terms(gram, np.maximum(np.abs(alpha), np.abs(ref.alpha)), math.nan,
                                                sol.w if primal else None)
    out.err_decision = float(np.max(np.maximum(np.abs(g - ref.g) - rounding, 0.0))) / f_scale + out.err_b
    errors.update({"objective error": out.err_objective, "b outside the optimal interval": out.err_b,
                   "decision value error": out.err_decision})
    if sol.w is not None and gram.X is not None:
        w_ref = ref.weights(gram.X, y)
        out.err_w = float(np.linalg.norm(sol.w - w_ref)) / w_scale(w_ref, gram.X, f_scale)
        errors["w error"] = out.err_w
    return errors


def verified_status(claimed: str, checks: Checks) -> str:
    """The project's status: `optimal` only when the solver says so AND the checks pass."""
    if claimed in (OPTIMAL, OPTIMAL_INACCURATE):
        return OPTIMAL if checks.verified else OPTIMAL_INACCURATE
    return claimed


# --------------------------------------------------------------------------- claims


def objective_scale(checks: Checks) -> float:
    """The size of the objective's terms at the point (1/2 ||w||^2 + C sum xi, sum alpha): what
    an objective's rounding is relative to. 0 when the checks have no point."""
    values = [abs(v) for v in (checks.primal_objective, checks.dual_objective) if math.isfinite(v)]
    return max(values, default=0.0)


def objective_claim_check(sol: Solution, checks: Checks, tol: float) -> str:
    """Compare the solver's claimed objective with the one recomputed at its point.

    Every SVM objective is >= 0 at the optimum (the primal is a sum of squares and
    C-weighted slacks; the dual has alpha = 0 feasible, objective 0), so a negative
    claim is impossible. The claim must also match the project's recomputation
    (the primal objective for a primal formulation, the dual one for a dual) to
    `tol`, relative to the objective's size at the point. Returns "" when the claim
    holds, else the reason.
    """
    claimed = sol.objective
    if claimed is None or not math.isfinite(claimed):
        return f"the solver's objective is {claimed}"
    scale = objective_scale(checks)
    if claimed < -tol * scale:
        return f"impossible objective {claimed:.6g} < 0 claimed by the solver"
    recomputed = checks.primal_objective if sol.formulation in PRIMAL_FORMULATIONS else checks.dual_objective
    if not math.isfinite(recomputed):
        return ""
    if abs(claimed - recomputed) > tol * scale:
        return f"the solver's objective {claimed:.6g} differs from the recomputed {recomputed:.6g}"
    return ""


def impossible_claim(claimed: str, primal: bool, hard: bool, C: float) -> str:
    """Why a solver's infeasible/unbounded claim cannot be true for an SVM formulation ("" if it can).

    A primal SVM objective is >= 0 (never unbounded); alpha = 0 is feasible for a dual
    (never infeasible); with C finite the soft margin is always feasible and bounded.
    """
    if claimed == UNBOUNDED and primal:
        return "a primal SVM objective is >= 0, so it cannot be unbounded"
    if claimed == INFEASIBLE and not primal:
        return "alpha = 0 is feasible for the dual, so it cannot be infeasible"
    if claimed in (INFEASIBLE, UNBOUNDED) and not hard:
        return f"the soft-margin problem (C = {penalty.describe(C)} > 0 finite) is always feasible and bounded"
    return ""


# --------------------------------------------------------------------------- infeasibility


@dataclass
class Certificate:
    r"""A Farkas certificate that no hyperplane separates the two classes.

    y_i (w' x_i + b) >= 1 (all i) has no solution  <=>  there is lambda with

        lambda >= 0,   X'(lambda * y) = 0,   y'lambda = 0,   sum_i lambda_i > 0

    (Farkas' lemma; the two classes' convex hulls meet at
    sum_{y_i=+1} lambda_i x_i / sum_{y_i=+1} lambda_i, the same point for y_i = -1).
    The same lambda is an unbounded ray of the hard-margin dual: along alpha = t lambda
    its objective grows like t sum lambda_i. Residuals are measured on lambda
    normalised to sum 1, relative to the largest ||x_i||.
    """

    source: str  # "solver" (multipliers or ray the backend returned) or "project" (own LP)
    holds: bool = False
    stationarity: float = math.nan  # ||X'(lambda*y)|| / max_i ||x_i||
    balance: float = math.nan  # |y'lambda|
    negativity: float = math.nan  # max(0, -min lambda) / max lambda
    sign: int = 1  # -1 when the backend's vector had to be negated (its sign convention)
    lam: np.ndarray | None = None
    note: str = ""

    def as_dict(self) -> dict:
        out = asdict(self)
        out["lam"] = None if self.lam is None else np.asarray(self.lam).tolist()
        return out


def farkas_check(X: np.ndarray, y: np.ndarray, lam, tol: float = 1e-6, source: str = "solver") -> Certificate:
    """Check that `lam` (either sign) proves the hard margin infeasible on (X, y)."""
    cert = Certificate(source=source)
    if lam is None:
        cert.note = "no certificate returned"
        return cert
    lam = np.asarray(lam, dtype=float).ravel()
    if lam.shape != y.shape or not np.all(np.isfinite(lam)):
        cert.note = "certificate has the wrong size or non-finite entries"
        return cert
    total = float(lam.sum())
    if total < 0:
        lam, total, cert.sign = -lam, -total, -1
    if not total > 1e-300:
        cert.note = "sum of lambda is not positive"
        return cert
    lam = lam / total
    scale = max(float(np.sqrt(squared_row_norms(X)).max()), _TINY)
    cert.lam = lam
    cert.stationarity = float(np.linalg.norm(X.T @ (lam * y))) / scale
    cert.balance = float(abs(y @ lam))
    cert.negativity = float(max(0.0, -lam.min()) / max(lam.max(), 1e-300))
    failed = [name for name in ("stationarity", "balance", "negativity") if not getattr(cert, name) <= tol]
    cert.holds = not failed
    cert.note = "holds" if cert.holds else "fails: " + ", ".join(
        f"{name} {getattr(cert, name):.2e} > {tol:.0e}" for name in failed)
    return cert


def separability_certificate(X: np.ndarray, y: np.ndarray, tol: float = 1e-7) -> Certificate:
    """The project's own answer: a Farkas certificate from an LP, or `holds=False` if none exists.

    Solves the feasibility LP  lambda >= 0, X'(lambda*y) = 0, y'lambda = 0, sum lambda = 1
    with HiGHS (scipy.optimize.linprog) and checks the returned lambda with
    `farkas_check`; the LP being infeasible means the data are strictly linearly
    separable (the hard-margin primal is feasible).
    """
    from scipy.optimize import linprog

    n = len(y)
    stack = sp.vstack if sp.issparse(X) else np.vstack  # HiGHS takes a sparse A_eq as it is
    A_eq = stack([signed(y, X).T, y[None, :], np.ones((1, n))])
    b_eq = np.concatenate([np.zeros(X.shape[1] + 1), [1.0]])
    res = linprog(np.zeros(n), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 2:  # infeasible: no certificate exists, the classes are separable
        cert = Certificate(source="project", note="linearly separable (the Farkas LP is infeasible)")
        return cert
    if res.status != 0 or res.x is None:
        return Certificate(source="project", note=f"the Farkas LP did not finish: {res.message}")
    cert = separability_verdict(X, y, lam=res.x, tol=max(tol, 1e-9), source="project").certificate
    if cert.holds:
        cert.note = "not linearly separable (Farkas certificate found by the project's LP, checked)"
    return cert


@dataclass
class SeparabilityVerdict:
    """Strict linear separability decided from proofs: `separable` is True, False or None (undecided)."""

    separable: bool | None
    min_margin: float  # min_i y_i (w'x_i + b) of the plane given; NaN without one
    certificate: Certificate  # the Farkas check of the weights given


def separability_verdict(X: np.ndarray, y: np.ndarray, *, w=None, b: float = math.nan, lam=None,
                         tol: float = 1e-8, source: str = "solver") -> SeparabilityVerdict:
    """The one place that decides separability, from proofs and never from a solver's status.

    True only with a plane (w, b) that separates the data, min_i y_i (w'x_i + b) > 0 computed here;
    False only with weights `lam` (one per row) that pass `farkas_check` at `tol`, i.e. a common
    point of both classes' convex hulls; None with neither. A separating plane wins over a
    certificate (two proofs cannot both hold; the caller reports the inconsistency).
    `separability_certificate` (the project's own LP) and `experiments.separability.is_separable`
    (any LP backend) both hand their proofs here.
    """
    cert = farkas_check(X, y, lam, tol=tol, source=source)
    min_margin = math.nan
    if w is not None and np.all(np.isfinite(w)) and math.isfinite(b):
        min_margin = float(np.min(y * (X @ np.asarray(w, dtype=float) + b)))
    separable = True if min_margin > 0 else (False if cert.holds else None)
    return SeparabilityVerdict(separable, min_margin, cert)


# --------------------------------------------------------------------------- review


def _features(X: np.ndarray | None, K: np.ndarray | None) -> np.ndarray:
    """Rows phi(x_i) with phi(x_i)'phi(x_j) = K_ij: X itself, or a factor L of K = L L'."""
    if K is None:
        return X

    return factorize(K, rtol=1e-12).L


def review(sol: Solution, checks: Checks, X: np.ndarray | None, y: np.ndarray, C: float,
           K: np.ndarray | None = None, tol: float = 1e-4, candidate=None) -> None:
    """Refute false solver claims in place; the project's status is set from evidence only.

    Facts about every SVM formulation used here (C > 0):
      - the primal objective is >= 0, so a primal is never unbounded;
      - alpha = 0 is dual feasible, so a dual is never infeasible;
      - the soft margin (C finite) is always feasible (xi large) and bounded (0 <= alpha <= C);
      - the hard margin is feasible exactly when the data are strictly linearly separable,
        and then its dual is bounded; otherwise the primal is infeasible and the dual unbounded.
    A claim that contradicts these is a backend failure (`error`). For the hard margin
    without a verified optimum the project decides separability with its own LP
    (`separability_certificate`) and checks `candidate` (the backend's multipliers of
    the margin rows, or its alpha for the dual) as a Farkas certificate / unbounded ray.
    """
    hard = sol.formulation == HARD_PRIMAL or penalty.is_hard(C)
    primal = sol.formulation in PRIMAL_FORMULATIONS
    claimed = sol.solver_status
    notes, false_claims = [], []

    # 1. a claimed optimum must state the objective of the point it returned
    if sol.status == OPTIMAL:
        reason = objective_claim_check(sol, checks, tol)
        sol.checks["objective_claim"] = reason or "consistent"
        if reason:
            sol.status = OPTIMAL_INACCURATE
            sol.checks["verified"] = False
            sol.checks["verdict"] = f"{sol.checks.get('verdict', '')}; {reason}".lstrip("; ")
            false_claims.append(reason)
    elif checks.timed_out and claimed in (OPTIMAL, OPTIMAL_INACCURATE):  # neither refuted nor verified: the
        notes.append(checks.verdict)  # proof was not given the time (compute_checks)
    elif claimed == OPTIMAL and sol.decision is not None:
        false_claims.append(f"claimed {claimed}, but verification failed: {sol.checks.get('verdict', '')}")
    elif claimed == OPTIMAL_INACCURATE and sol.status == OPTIMAL_INACCURATE and sol.checks.get("verdict"):
        # the solver said its point is inaccurate and the checks agree: the row says what they found
        notes.append(f"not verified: {sol.checks['verdict']}")
    stopped = (OPTIMAL_INACCURATE, ITERATION_LIMIT, TIME_LIMIT) if primal else (OPTIMAL_INACCURATE,)
    if claimed in stopped and math.isfinite(sol.objective) and sol.objective < -tol * objective_scale(checks):
        # every SVM optimum is >= 0, and so is a primal's objective at any point it may take: a negative value
        # returned as a result (e.g. a primal's at an iteration limit) is not an estimate of anything. A dual's
        # point short of its optimum may well be below 0 (alpha = 0 gives 0; the working set stopped at a time
        # limit on moons, C = 1e6, at -1.6e15): there only a claimed near-optimum is held to it.
        false_claims.append(f"the backend returned an impossible objective {sol.objective:.6g} < 0 ({claimed})")

    # 2. statuses that cannot be true for this formulation
    impossible = impossible_claim(claimed, primal, hard, C)
    if impossible:
        sol.status = ERROR
        false_claims.append(f"backend failure: it reported {claimed}, but {impossible}")

    # 3. the hard margin without a verified optimum: is the data set separable at all?
    if hard and sol.status != OPTIMAL and not impossible:
        features = _features(X, K)
        project = separability_certificate(features, y)
        sol.extras["separability"] = _brief(project)
        expected = INFEASIBLE if primal else UNBOUNDED
        if project.holds:
            notes.append(f"not linearly separable{' in feature space' if K is not None else ''}: "
                         f"the hard-margin {'primal is infeasible' if primal else 'dual is unbounded'}")
            cert = farkas_check(features, y, candidate, tol=tol, source="solver")
            sol.extras["certificate"] = _brief(cert)
            if candidate is not None:
                notes.append(f"backend's {'Farkas certificate' if primal else 'unbounded ray'} {cert.note}")
            if claimed in (OPTIMAL, OPTIMAL_INACCURATE):
                sol.status = expected if cert.holds and not primal else ERROR
                false_claims.append(f"claimed {claimed} on a problem with no optimum ({expected})")
        elif project.note.startswith("linearly separable") and claimed == expected:
            sol.status = ERROR
            false_claims.append(f"backend failure: it reported {claimed}, but the data are linearly separable "
                                "(the project's Farkas LP is infeasible)")

    if false_claims:
        sol.extras["false_status"] = "; ".join(false_claims)
        notes = false_claims + notes
    if not sol.message and not notes and sol.status != OPTIMAL:
        notes.append(ending_note(sol))
    if notes:
        sol.message = "; ".join([m for m in [sol.message] if m] + notes)


def ending_note(sol: Solution) -> str:
    """What a row without an optimum says where the backend said nothing: how the solve ended and what the
    checks found (pyomo/HiGHS's error rows were blank, with raw status error/noSolution; iteration-limit rows too)."""
    raw = f" (raw status {sol.raw_status})" if sol.raw_status else ""
    if sol.solver_status == ITERATION_LIMIT:
        done = f" after {sol.iterations} iterations" if sol.iterations else ""
        ending = f"stopped at its iteration limit{done}{raw}"
    elif sol.solver_status == TIME_LIMIT:
        ending = f"stopped at the time limit{raw}"
    elif sol.solver_status == ERROR:
        ending = f"the backend failed{raw}" + ("" if sol.decision is not None else ": no point to check")
    else:
        ending = f"the backend reported {sol.solver_status}{raw}"
    verdict = sol.checks.get("verdict") if sol.decision is not None else ""
    if verdict == "verified":  # the point passed the checks, but the backend stopped short of claiming it
        return f"{ending}; its point passes the project's checks, but the backend did not claim an optimum"
    return f"{ending}; not verified: {verdict}" if verdict else ending


def _brief(cert: Certificate) -> dict:
    """A certificate for a table row: residuals and support, not the whole vector."""
    out = cert.as_dict()
    lam = out.pop("lam")
    out["support"] = None if lam is None else [int(i) for i in np.flatnonzero(np.asarray(lam) > 1e-9)][:20]
    return out


def withhold_unverified(sol: Solution) -> None:
    """No w*, b* or objective as a result when the solve ended without an optimum.

    Infeasible, unbounded, error, iteration- and time-limit stops have their
    point moved to extras["unverified"] (for diagnosis only). `optimal_inaccurate`
    (the solver claimed an optimum the project could not verify) keeps its point:
    the status says it is unverified, the results table leaves it blank and the
    estimator accepts it only with a ConvergenceWarning.
    """
    if sol.status in (OPTIMAL, OPTIMAL_INACCURATE):
        return
    if sol.w is not None or math.isfinite(sol.b) or math.isfinite(sol.objective):
        sol.extras["unverified"] = {
            "objective": sol.objective,
            "w": None if sol.w is None else np.asarray(sol.w).tolist(),
            "b": sol.b,
        }
    sol.objective, sol.w, sol.b = math.nan, None, math.nan


def warm() -> None:
    """The checks' compiled pass (_kkt_maxima) loaded from numba's cache (or compiled), in the types it is called with."""
    one = np.ones(2)
    _kkt_maxima(one, one, one, one, False, False)
