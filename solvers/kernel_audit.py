"""The closing checks' own kernel values: entries of the K a solve used, recomputed by another formula.

The checks measure a kernel dual's point against the optimum of the K they are given, so a wrong K (digits
lost to cancellation far from the origin, a faulty row source) would be checked against itself and pass.
Here the entries that matter most are computed again, independently of formulations.kernels.gram:

    rbf            exp(-gamma ||x - z||^2) from the differences x - z (a compiled loop: no expansion)
    linear, poly,  x'z summed by numpy's einsum (its own loops, not BLAS; extended precision was far slower
    sigmoid        for the same entries, einsum ...)

and each is compared with the entry used, less what rounding allows (`exact_values`: the kernels' own bound,
formulations.kernels.EXACT_SLACK, and the recomputation's). The excess counts by what it moves the decision
values f(x_i) = sum_j u_j K_ij + b: max_i sum_j excess_ij |u_j| / max_i |f(x_i)|, held to the profile's
tolerance like every other check (solvers.checks).

Which entries: the columns of the support vectors (u_j != 0: no other column enters f), largest |u_j| first;
the rows of the free support vectors (they pin b), then those at a bound, then the other points nearest their
margins, within AUDIT_COST (entries x (features + ENTRY_COST)); every such entry for small problems. A
precomputed K has no formula to recompute: it is the user's, and not audited.

A multiclass fit's pairs read one Gram matrix (experiments.estimator_gram.PairBlock): there each class's own block
is audited once for the fit, every entry (SpanAudit), and each pair recomputes only its entries between its two
classes, adding the within-class entries' excess found once, so its verdict is the one it would reach alone.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from scipy.sparse import issparse

from formulations.data_matrix import one_type
from formulations.kernels import EXACT_SLACK, Kernel
from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once
from formulations.recovery import AT_BOUND, FREE

#: Entries x (features + ENTRY_COST) recomputed at most (n = 5,000, d = 10, 2,400 support vectors: 170 rows): a
#: fraction of a second, where five times more took seconds for poly in extended precision.
AUDIT_COST = 1.8e7
#: An entry's own cost (its exp, its test) in features' differences: at d = 2 the features are not what costs.
ENTRY_COST = 35

_EPS = np.finfo(float).eps


def kernel_error(kernel: Kernel, X: np.ndarray, gram, u: np.ndarray, margins: np.ndarray,
                 codes: np.ndarray, f_scale: float) -> tuple[float, int]:
    """(max_i sum_j excess_ij |u_j| / f_scale, the number of entries audited) for the K behind `gram`
    (a solvers.reference.Gram: its submatrix) at u = y * alpha. margins: y_i f(x_i) - 1; codes: the points'
    classes (formulations.recovery.classify).

    A gram that answers `audited_spans()` and `in_place()` (a pair's block of a multiclass fit's Gram matrix,
    experiments.estimator_gram.PairBlock) holds runs of its positions whose entries among themselves were audited
    once for the fit (SpanAudit): for the rbf those entries' excess is read from there, the others recomputed here."""
    sv = np.flatnonzero(u)
    if sv.size == 0:
        return 0.0, 0
    worst, entries = _audit(kernel, X, gram, u, *audited_entries(u, sv, margins, codes, X.shape[1]))
    return worst / f_scale, entries


def _audit(kernel: Kernel, X, gram, u: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[float, int]:
    """(max over `rows` of sum_j excess_ij |u_j| over `cols`, the entries audited): kernel_error's sums. The rbf
    on a gram read in place with audited spans (experiments.estimator_gram.PairBlock): the entries between spans
    recomputed (their exponents and excess by compiled passes over K in place, their exp by numpy's), those within
    a span read from its SpanAudit."""
    weights = np.abs(u[cols])
    spans = getattr(gram, "audited_spans", None)
    if kernel.name != "rbf" or spans is None or issparse(X):
        return float(np.max(row_excess(kernel, X, gram, rows, cols, weights))), rows.size * cols.size
    spans = spans()
    span_of = np.full(u.size, -1, dtype=np.int64)
    for k, (lo, hi, _) in enumerate(spans):
        span_of[lo:hi] = k
    K, at = gram.in_place()
    t = np.empty((cols.size, rows.size))
    _rbf_exponents_between(one_type(X), rows, cols, span_of, kernel.resolved_gamma(X.shape[1]), t)
    values = np.exp(np.negative(t))  # numpy's vectorized exp: several times a compiled loop's scalar one
    totals = np.empty(rows.size)
    # the copy of each entry GramBlock.submatrix reads: K[col, row] where the columns are fewer
    _rbf_excess_between(K, at, rows, cols, weights, span_of, t, values, RBF_ALLOWANCE * _EPS, X.shape[1],
                        cols.size < rows.size, totals)
    for lo, hi, audit in spans:
        if audit.found()[2].size == 0:  # no wrong entry within the span (the rule): nothing to add
            continue
        in_rows, in_cols = (rows >= lo) & (rows < hi), (cols >= lo) & (cols < hi)
        if in_rows.any() and in_cols.any():
            at_rows = np.flatnonzero(in_rows)
            audit.add_row_sums(rows[at_rows] - lo, cols[in_cols] - lo, weights[in_cols], totals, at_rows)
    return float(np.max(totals)), rows.size * cols.size  # np.max: a nan total stays nan


def audited_entries(u: np.ndarray, sv: np.ndarray, margins: np.ndarray, codes: np.ndarray,
                    d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the entries audited (the module doc's choice within AUDIT_COST); sv: u's nonzeros."""
    per_row = max(1, int(AUDIT_COST // (d + ENTRY_COST)))
    cols = sv[np.argsort(-np.abs(u[sv]), kind="stable")][:per_row]
    take = max(1, per_row // cols.size)
    if take >= u.size:  # every point's row: which come first does not matter
        return np.arange(u.size), cols
    rank = np.where(codes == FREE, 0, np.where(codes == AT_BOUND, 1, 2))
    return np.lexsort((np.abs(margins), -np.abs(u), rank))[:take], cols


def row_excess(kernel: Kernel, X, gram, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_j max(|used_ij - k(x_i, x_j)| - allowed_ij, 0) weights_j for each of `rows` (cols: the j), the entries
    used read from `gram` and recomputed from X by the other formula; nan where an entry used is nan."""
    A = X if rows.size == X.shape[0] and np.array_equal(rows, np.arange(rows.size)) else X[rows]
    B = X[cols]
    if issparse(X):  # the few sampled rows dense: the other formula needs their differences
        A, B = A.toarray(), B.toarray()
    used = gram.submatrix(rows, cols)
    if kernel.name == "rbf":
        return rbf_row_excess(kernel.resolved_gamma(A.shape[1]), A, B, used, weights)
    exact, allowed = exact_values(kernel, A, B)
    return np.maximum(np.abs(used - exact) - allowed, 0.0) @ weights


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """||a_i - b_j||^2 from the differences, for dense A and B. Summed in whatever order the compiler vectorises:
    the rounding bound of a sum of d nonnegative terms, (d - 1) eps times the sum, holds for every order (and
    a fused multiply-add only rounds less). Several times faster than scipy's cdist on a pair's block."""
    out = np.empty((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            total = 0.0
            for k in range(A.shape[1]):
                t = A[i, k] - B[j, k]
                total += t * t
            out[i, j] = total
    return out


#: The rbf's allowance per unit of eps (1 + (d + 2) t) exp(-t), t = gamma ||x - z||^2: twice the Gram matrix's
#: bound (formulations.kernels.rbf_values) and the recomputation's together.
RBF_ALLOWANCE = 2 * (EXACT_SLACK + 2)


def exact_values(kernel: Kernel, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """k(a, b) for the rows of A against B by the other formula (module doc), and how far a right value may be
    from it: twice the two computations' rounding bounds together, plus the smallest normal number (subnormal
    values near exp's underflow). The rbf's: from the differences, within RBF_ALLOWANCE (rbf_excess's test)."""
    d = A.shape[1]
    gamma = kernel.resolved_gamma(d)
    if kernel.name == "rbf":
        t, values = rbf_values(gamma, A, B)
        allowed = RBF_ALLOWANCE * _EPS * (1.0 + (d + 2) * t) * values
    else:
        inner = np.einsum("ik,jk->ij", A, B)  # optimize=False: numpy's loops, another summation than BLAS
        reach = np.linalg.norm(A, axis=1)[:, None] * np.linalg.norm(B, axis=1)[None, :]  # |x'z| <= ||x|| ||z||
        if kernel.name == "linear":
            values, allowed = inner, 2 * (d + 2) * _EPS * reach
        elif kernel.name == "poly":
            # libm's pow (float_power: numpy's power is several times slower), not gram's repeated products
            values = np.float_power(kernel.coef0 + gamma * inner, kernel.degree)
            allowed = 2 * (d + 2) * kernel.degree * _EPS * (kernel.coef0 + gamma * reach) ** kernel.degree
        else:  # sigmoid: tanh' <= 1
            values = np.tanh(gamma * inner + kernel.coef0)
            allowed = 2 * (d + 2) * _EPS * (gamma * reach + abs(kernel.coef0) + 1.0)
    return values, allowed + np.finfo(float).tiny


def rbf_values(gamma: float, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, exp(-t)), t = gamma ||a_i - b_j||^2 from the differences (squared_distances): the rbf's other formula."""
    t = squared_distances(one_type(A), one_type(B))  # one array type: the one the warm-up loads
    t *= gamma
    return t, np.exp(-t)


def rbf_excess(gamma: float, A: np.ndarray, B: np.ndarray, used: np.ndarray, weights: np.ndarray) -> float:
    """max_i sum_j max(|used_ij - k(a_i, b_j)| - allowed_ij, 0) weights_j for the rbf (rbf_row_excess's maximum):
    nan where an entry used is nan."""
    return float(np.max(rbf_row_excess(gamma, A, B, used, weights)))


def rbf_row_excess(gamma: float, A: np.ndarray, B: np.ndarray, used: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_j max(|used_ij - k(a_i, b_j)| - allowed_ij, 0) weights_j for each row a_i, for the rbf: exact_values'
    values (numpy's vectorized exp) and allowance, then the excess in one compiled pass (no temporaries of the
    block's size for the allowance and the excess: half the time). nan where an entry used is nan."""
    t, values = rbf_values(gamma, A, B)
    out = np.empty(t.shape[0])
    _rbf_excess(np.ascontiguousarray(used, dtype=float), values, t, np.ascontiguousarray(weights, dtype=float),
                RBF_ALLOWANCE * _EPS, A.shape[1], out)
    return out


@njit(cache=True, nogil=True)
def _rbf_value_excess(used, value, t, slack, d):
    """|used - value| less the rbf's allowance for value = exp(-t), t = gamma ||x - z||^2 (RBF_ALLOWANCE eps in slack,
    d features): the one test every compiled audit pass makes of an entry."""
    return abs(used - value) - (slack * (1.0 + (d + 2) * t) * value + np.finfo(np.float64).tiny)


@njit(cache=True, nogil=True)
def _rbf_excess(used, values, t, weights, slack, d, out):
    """rbf_row_excess's pass into out (one total a row); slack: RBF_ALLOWANCE eps, d: the features."""
    for i in range(used.shape[0]):
        total = 0.0
        for j in range(used.shape[1]):
            excess = _rbf_value_excess(used[i, j], values[i, j], t[i, j], slack, d)
            if not excess <= 0.0:  # a nan entry counts (as nan), never as right
                total += excess * weights[j]
        out[i] = total


class SpanAudit:
    """The entries of K[lo:hi, lo:hi] (one class's block of a multiclass fit's Gram matrix, the rbf's) audited once,
    for every pair that holds the class: the entries whose excess is not 0 are kept (normally none), each as the
    larger of its two copies K_ij, K_ji (a pair reads either, GramBlock.submatrix), and each pair adds the ones its
    audit covers (add_row_sums), as if it had recomputed them: a wrong entry fails every pair whose support vectors
    reach it. The pairs' own entries between classes are recomputed by each pair (kernel_error).

    Why: a class's block is audited by each of the pairs that hold it (9 on digits), its entries recomputed each
    time; this audits it once (its upper triangle: both copies against one recomputed value). Thread-safe: the
    fit's SMO thread audits the classes ahead of the closings."""

    def __init__(self, kernel: Kernel, data: np.ndarray, K: np.ndarray, lo: int, hi: int):
        if kernel.name != "rbf":
            raise ValueError(f"a span's audit recomputes the rbf's entries, not the {kernel.name} kernel's")
        self._args = (kernel, data, K, lo, hi)
        self._lock = threading.Lock()
        self._found = None

    def found(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, cols, excess) of the entries whose excess is not 0 (both (i, j) and (j, i)), positions within the
        span (audited at the first call)."""
        with self._lock:
            if self._found is None:
                kernel, data, K, lo, hi = self._args
                rows = np.empty(SPAN_FOUND, dtype=np.int64)
                cols, excess = np.empty(SPAN_FOUND, dtype=np.int64), np.empty(SPAN_FOUND)
                count = _rbf_span_excess(K, lo, hi, one_type(data), kernel.resolved_gamma(data.shape[1]),
                                         RBF_ALLOWANCE * _EPS, rows, cols, excess)
                if count < 0:  # more wrong entries than kept: all of them, from the arrays
                    rows, cols, excess = _span_excess_by_arrays(kernel, data[lo:hi], K[lo:hi, lo:hi])
                else:
                    rows, cols, excess = rows[:count], cols[:count], excess[:count]
                self._found = rows, cols, excess
            return self._found

    def add_row_sums(self, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, totals: np.ndarray,
                     at: np.ndarray) -> None:
        """totals[at[k]] += sum_j excess_(rows[k], cols[j]) weights[j] over the kept entries (positions within the
        span)."""
        found_rows, found_cols, excess = self.found()
        if excess.size == 0:
            return
        size = self._args[4] - self._args[3]
        row_at, col_at = np.full(size, -1), np.full(size, -1)
        row_at[rows], col_at[cols] = np.arange(rows.size), np.arange(cols.size)
        hit = (row_at[found_rows] >= 0) & (col_at[found_cols] >= 0)  # entries of this audit: not 0 x nan
        np.add.at(totals, at[row_at[found_rows[hit]]], excess[hit] * weights[col_at[found_cols[hit]]])


#: Wrong entries a span's compiled audit keeps (both copies of an entry count once each); beyond, they are found
#: again from the block's arrays.
SPAN_FOUND = 4096


def _span_excess_by_arrays(kernel: Kernel, A: np.ndarray, used: np.ndarray):
    """SpanAudit.found's entries from whole arrays (exact_values' values and allowance)."""
    values, allowed = exact_values(kernel, A, A)
    excess = np.abs(used - values) - allowed
    excess = np.where(excess <= 0.0, 0.0, excess)  # nan stays nan
    excess = np.maximum(excess, excess.T)  # either copy wrong: the entry is (np.maximum keeps nan)
    rows, cols = np.nonzero(excess != 0.0)  # nan != 0
    return rows, cols, excess[rows, cols]


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _distance(a, b):
    """||a - b||^2 from the differences (squared_distances' sum)."""
    total = 0.0
    for k in range(a.shape[0]):
        t = a[k] - b[k]
        total += t * t
    return total


@njit(cache=True, nogil=True)
def _rbf_entry_excess(used, t, slack, d):
    """|used - exp(-t)| less the rbf's allowance (rbf_row_excess's test), t = gamma ||x - z||^2."""
    return _rbf_value_excess(used, math.exp(-t), t, slack, d)


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _rbf_exponents_between(data, rows, cols, span_of, gamma, t):
    """t[j, k] = gamma ||data[rows[k]] - data[cols[j]]||^2 from the differences (squared_distances' sum) for the
    entries between spans (span_of: each position's span, -1 for none); 0 within one (not read: numpy's exp of
    a special value such as inf takes a slower path)."""
    for j in range(cols.size):
        c = cols[j]
        b = data[c]
        for k in range(rows.size):
            r = rows[k]
            t[j, k] = 0.0 if span_of[r] >= 0 and span_of[r] == span_of[c] else gamma * _distance(data[r], b)


@njit(cache=True, nogil=True)
def _rbf_excess_between(K, at, rows, cols, weights, span_of, t, values, slack, d, transposed, out):
    """out[k] = sum_j excess(K[at[rows[k]], at[cols[j]]]) weights[j] over the cols j outside rows[k]'s span (all of
    them where it has none: span_of -1), against values[j, k] = exp(-t[j, k]) recomputed (_rbf_exponents_between)
    and rbf_row_excess's allowance; transposed: K's other copy of each entry, K[at[cols[j]], at[rows[k]]]. A nan
    entry counts (as nan), never as right."""
    out[:] = 0.0
    for j in range(cols.size):  # column by column: K's rows read in order where transposed
        c = cols[j]
        for k in range(rows.size):
            r = rows[k]
            if span_of[r] >= 0 and span_of[r] == span_of[c]:
                continue
            used = K[at[c], at[r]] if transposed else K[at[r], at[c]]
            excess = _rbf_value_excess(used, values[j, k], t[j, k], slack, d)
            if not excess <= 0.0:
                out[k] += excess * weights[j]


@njit(cache=True, nogil=True)
def _rbf_span_excess(K, lo, hi, data, gamma, slack, rows, cols, excess):
    """SpanAudit's pass over K[lo:hi, lo:hi]'s upper triangle: each entry's excess over both its copies (nan where
    either is nan), those not <= 0 written at (i, j) and (j, i) (positions from lo) into rows, cols, excess; their
    number, or -1 where they do not fit."""
    d = data.shape[1]
    count = 0
    for i in range(lo, hi):
        for j in range(i, hi):
            t = gamma * _distance(data[i], data[j])
            upper = _rbf_entry_excess(K[i, j], t, slack, d)
            lower = _rbf_entry_excess(K[j, i], t, slack, d)
            worst = upper if math.isnan(upper) or upper > lower else lower
            if worst <= 0.0:
                continue
            if count + 2 > rows.size:
                return -1
            rows[count], cols[count], excess[count] = i - lo, j - lo, worst
            count += 1
            if i != j:
                rows[count], cols[count], excess[count] = j - lo, i - lo, worst
                count += 1
    return count


def warm() -> None:
    """The compiled functions loaded from numba's cache (or compiled), so that the checks do not wait for them."""
    point = np.zeros((1, 1))
    rbf_row_excess(1.0, point, point, np.ones((1, 1)), np.ones(1))
    one, position = np.ones(1), np.zeros(1, dtype=np.int64)
    _rbf_exponents_between(point, position, position, position, 1.0, point.copy())
    _rbf_excess_between(point, position, position, position, one, position, point, point, 1.0, 1, False, np.empty(1))
    _rbf_span_excess(point, 0, 1, point, 1.0, 1.0, position, position.copy(), np.empty(1))
