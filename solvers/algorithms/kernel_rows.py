"""Rows of the kernel matrix on demand, through a bounded LRU cache (LIBSVM's design).

The kernel working set (solvers.algorithms.working_set) needs, per outer step, the rows K[B] of the
points whose alpha changed (the gradient update) and the block K[B, B] (the subproblem).
At n = 50,000 the whole Gram matrix is 20 GB; its rows are computed from X when asked
(formulations.kernels.gram on X[rows] against X) and the most recently used ones are kept,
never more than `capacity` rows (cache_bytes / (8 n)). Both row sources below answer the
same questions, and both are a solvers.reference.Gram, so the closing step's checks and
the proved optimum use them as they are, without an n x n matrix:

    rows(I)          K[I, :] (len(I) x n)
    submatrix(I, J)  K[I][:, J]
    times(u)         K u, from the rows where u != 0 (or where u moved since a kept product), in chunks of
                     bounded size
    combination(I, c)  c' K[I, :] (the gradient's update after a step on the points I)
    diagonal()       K_ii

The linear kernel's rows have a cheaper answer to the last two: K u = X (X' u) costs O(n d), where
rows cost O(|u| n d) (`LinearRows`).

`row_source` picks the full Gram matrix at small n when it fits the memory budget (one matrix
product, no cache misses), rows that become it where the compiled SMO computes many (`AdaptiveRows`)
at larger n while it fits, and the cached rows otherwise.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from formulations import validation
from formulations.data_matrix import as_data, issparse, squared_row_norms
from formulations.kernels import Points, gram, rbf_values
from solvers.reference import Gram, digest

#: Rows cached by default: LIBSVM's SVC uses 200 MB; more rows mean fewer recomputed ones.
DEFAULT_CACHE_BYTES = 512 * 2**20
#: Largest temporary block of kernel values made at once by times() and the gradient update (bytes).
#: Below glibc's largest mmap threshold (32 MB), so a freed block is reused from the heap instead of
#: being mapped and faulted in again.
CHUNK_BYTES = 16 * 2**20

#: Products K u that times() keeps to start the next one from (the working set's start makes one from the
#: points at C and adds its block's; the proof asks for the bound points' and the free points' apart).
KEPT_PRODUCTS = 3


def chunk_rows(n: int) -> int:
    """How many kernel rows of n entries make one CHUNK_BYTES block."""
    return max(1, int(CHUNK_BYTES // (8 * max(n, 1))))


def compiled_ok(K: np.ndarray) -> bool:
    """Whether K goes to solvers.algorithms.smo's compiled functions as it is: numba compiles once per array type,
    and a copy into that type would cost more than the compiled loop saves."""
    return K.dtype == np.float64 and K.flags.c_contiguous and K.flags.writeable


class FullGram(Gram):
    """A Gram matrix already in memory, as a row source; `kernel` and `data` where it was made from data (the
    closing checks then recompute some of its entries: solvers.kernel_audit), else None (a precomputed K)."""

    def __init__(self, K: np.ndarray, kernel=None, data: np.ndarray | None = None):
        super().__init__(None, np.asarray(K, dtype=float))
        self.kernel, self.data = kernel, data
        self.n = len(self.K)
        self.capacity = self.n  # every row is held
        self.rows_computed = 0  # nothing is computed: every row is there
        self._products_kept: tuple = ()  # (digest, product) of the last PRODUCTS_KEPT (_remembered), the newest last

    def rows(self, I) -> np.ndarray:
        return self.K[I]

    def row_cache(self):
        """The matrix as the compiled SMO's rows (solvers.algorithms.smo.RowCache.full)."""
        from solvers.algorithms.smo import RowCache  # numba, loaded where it is used

        return RowCache.full(self.K)

    def restricted(self, S) -> "FullGram":
        """The Gram matrix of the points S alone."""
        return FullGram(self.K[np.ix_(S, S)], self.kernel, None if self.data is None else self.data[S])

    def submatrix(self, I, J) -> np.ndarray:
        """K[I][:, J], each entry read in place (compiled_gram.submatrix) where K goes to the compiled functions."""
        if not compiled_ok(self.K):
            return super().submatrix(I, J)
        from solvers.algorithms.compiled_gram import submatrix  # numba, loaded where it is used

        return submatrix(self.K, I, J)

    def diagonal(self) -> np.ndarray:
        return np.diag(self.K).copy()

    def combination(self, I, coef) -> np.ndarray:
        """coef' K[I, :] (K symmetric: rows, not columns), read in place where K goes to the compiled functions."""
        if not compiled_ok(self.K):
            return coef @ self.K[I]
        from solvers.algorithms.compiled_gram import combination  # numba, loaded where it is used

        return combination(self.K, I, coef)

    def times(self, u: np.ndarray) -> np.ndarray:
        """K u: the whole product where u is mostly nonzero, else from the rows where u != 0 (K symmetric: rows
        are contiguous, columns are not), read in place where K goes to the compiled functions
        (compiled_gram.combination) and gathered otherwise. The last products are remembered by u's digest: the
        closing checks prove the finish's point from the same sets, asking for the same products again, each a
        pass over all of K (the product over the bound points, then over the free ones)."""
        return self._remembered(0, u, self._times)

    #: Products (K u, and sum_j |K_ij u_j|) that `times` and `magnitudes` remember.
    PRODUCTS_KEPT = 3

    def _remembered(self, kind: int, u: np.ndarray, compute) -> np.ndarray:
        """compute(u), or a copy of it where one of the last PRODUCTS_KEPT products asked was this one (kind: which
        product; u by its digest)."""
        key = digest((u,), (kind,))
        kept = self._products_kept  # one snapshot: another thread may replace it meanwhile
        for known, product in kept:
            if known == key:
                return product.copy()
        out = compute(u)
        self._products_kept = (*kept, (key, out.copy()))[-self.PRODUCTS_KEPT:]
        return out

    def _whole(self, nonzeros: int) -> bool:
        """Whether a product with u reads all of K in one BLAS call rather than the rows of u's nonzeros (compiled):
        from one nonzero in eight, BLAS's pass over the whole matrix is the faster."""
        return 8 * nonzeros > self.n

    def _times(self, u: np.ndarray) -> np.ndarray:
        nz = np.flatnonzero(u)
        if self._whole(nz.size):  # K u itself: a user's K is symmetric only to validation's tolerance
            return self.K @ u
        if compiled_ok(self.K):
            from solvers.algorithms.compiled_gram import combination  # numba, loaded where it is used

            return combination(self.K, nz, u[nz])
        return u[nz] @ self.K[nz] if nz.size else np.zeros(self.n)

    def nonnegative(self) -> bool:
        """Whether every entry is >= 0 by how K was made: an rbf's values are exp(-gamma ||x - z||^2)."""
        return self.kernel is not None and self.kernel.name == "rbf"

    def magnitudes(self, u: np.ndarray) -> np.ndarray:
        """sum_j |K_ij u_j| for each i (solvers.reference.Gram's), from the rows of u's nonzeros read in place (K
        symmetric): gathering |K[:, nz]| would copy most of K twice, a large share of the solve. Remembered as
        `times`' products are (the closing checks' proof asks for the finish's again)."""
        return self._remembered(1, u, self._magnitudes)

    def _magnitudes(self, u: np.ndarray) -> np.ndarray:
        K = self.K
        if self.nonnegative() and self._whole(np.count_nonzero(u)):
            return K @ np.abs(u)  # |K| |u| = K |u|: one BLAS product, a third of the compiled pass's time at n = 5,000
        if not compiled_ok(K):
            return super().magnitudes(u)
        from solvers.algorithms.compiled_gram import abs_combination  # numba, loaded where it is used

        nz = np.flatnonzero(u)
        return abs_combination(K, nz, u[nz])


class GramBlock(Gram):
    """The block K[at][:, at] of a Gram matrix K in memory (a multiclass fit's pair of classes), read in place: no
    copy of it is made. What it answers is what FullGram answers on the copied block, entry for entry, but for K u
    and an rbf's sum_j |K_ij u_j|, which come from the rows of u's nonzeros (combination) where FullGram takes one
    matrix product over a mostly nonzero u: K is the fit's own Gram matrix, symmetric, and the product would need
    the block. `kernel` and `data` (the block's samples) as FullGram's, for the closing checks' recomputed entries.

    Why: the copy of each pair's block read the whole block out of the fit's matrix, where SMO reads the rows of
    the points it steps on and the closing checks those of the support vectors (docs/estimator_speed.md)."""

    def __init__(self, K: np.ndarray, spans, kernel=None, data: np.ndarray | None = None,
                 diagonal: np.ndarray | None = None):
        """spans: the block's positions in K as runs of consecutive ones, (first, stop) each, in the block's order.
        diagonal: K's diagonal (all of it) where the caller keeps it: the block's is then two slices of it, not one
        entry read from each of its rows."""
        super().__init__(None, None)
        if not compiled_ok(K):
            raise ValueError("a Gram block is read from a C-ordered, writable float64 matrix")
        self.whole = K
        self._runs, offset = [], 0  # (first position, stop, where the run starts in the block)
        for first, stop in spans:
            first, stop = int(first), int(stop)
            if not 0 <= first <= stop <= len(K):
                raise IndexError(f"block positions {first}..{stop - 1} out of range 0..{len(K) - 1}")
            self._runs.append((first, stop, offset))
            offset += stop - first
        self._run_table = np.array(self._runs, dtype=np.int64).reshape(-1, 3)  # as compiled_gram.combine_runs reads it
        self.at = np.concatenate([np.arange(first, stop) for first, stop, _ in self._runs] or [np.zeros(0, int)])
        self.kernel, self.data = kernel, data
        self.n = self.capacity = offset
        self.rows_computed = 0
        self._diagonal = None if diagonal is None else np.concatenate(
            [diagonal[first:stop] for first, stop, _ in self._runs] or [np.zeros(0)])

    def row_cache(self):
        """The block as the compiled SMO's rows (solvers.algorithms.smo.RowCache.full through the positions)."""
        from solvers.algorithms.smo import RowCache  # numba, loaded where it is used

        if self._diagonal is None:
            self.diagonal()
        return RowCache.full(self.whole, index=self.at, diag=self._diagonal)

    def rows(self, I) -> np.ndarray:
        return self.whole[self.at[np.asarray(I, dtype=np.int64)]][:, self.at]

    def columns(self, J) -> np.ndarray:
        return self.submatrix(np.arange(self.n), J)

    def submatrix(self, I, J) -> np.ndarray:
        """K[I][:, J], read along the rows of the shorter side (the fit's K is exactly symmetric: formulations.kernels
        .gram, compiled_gram.rbf_gram):
        the closing's K[:, support vectors] are then a few rows read in order, not an entry from every row."""
        from solvers.algorithms.compiled_gram import submatrix  # numba, loaded where it is used

        I, J = self.at[np.asarray(I, dtype=np.int64)], self.at[np.asarray(J, dtype=np.int64)]
        if J.size < I.size:  # K[J][:, I] read along J's rows, transposed (K symmetric)
            return np.ascontiguousarray(submatrix(self.whole, J, I).T)
        return submatrix(self.whole, I, J)

    def diagonal(self) -> np.ndarray:
        if self._diagonal is None:
            self._diagonal = self.whole[self.at, self.at]
        return self._diagonal.copy()

    def max_diagonal(self) -> float:
        if self._diagonal is None:
            self.diagonal()
        return float(np.max(self._diagonal))

    def _combined(self, I, coef, absolute: bool) -> np.ndarray:
        """sum_k coef_k K[at[I_k], at] (|coef_k| |.| where absolute), each run of consecutive positions of `at`
        summed by compiled_gram's loop over those columns of the whole rows: each entry the sums FullGram's
        combination gives on the copied block, in the same order."""
        from solvers.algorithms.compiled_gram import combine_runs  # numba, loaded where it is used

        out = np.zeros(self.n)
        combine_runs(self.whole, self.at[np.asarray(I, dtype=np.int64)], np.ascontiguousarray(coef, dtype=float),
                     self._run_table, out, absolute)
        return out

    def combination(self, I, coef) -> np.ndarray:
        return self._combined(I, coef, False)

    def times(self, u: np.ndarray) -> np.ndarray:
        nz = np.flatnonzero(u)
        return self._combined(nz, u[nz], False)

    def magnitudes(self, u: np.ndarray) -> np.ndarray:
        nz = np.flatnonzero(u)
        return self._combined(nz, u[nz], True)


class KernelRows(Gram):
    """K[i, :] = k(x_i, x_j) for all j, computed from X when asked and kept in an LRU cache.

    `rows_computed` counts the rows evaluated (hits cost nothing), `max_held` the most rows the
    cache ever held (never above `capacity`).
    """

    def __init__(self, kernel, X: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES):
        super().__init__(None, None)
        # a sparse X stays sparse (CSR): its rows are computed by gram's sparse branch
        self.kernel = kernel
        self.data = as_data(X) if issparse(X) else np.ascontiguousarray(X, dtype=float)
        self.n = self.data.shape[0]
        self.capacity = max(2, int(cache_bytes // (8 * max(self.n, 1))))
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self.rows_computed = 0
        self.max_held = 0
        self._diagonal = None
        self._products: deque = deque(maxlen=KEPT_PRODUCTS)  # (u, K u) of the last times() calls
        self._prefetched: deque = deque()  # (u, rows computed apart, their product's future): prefetch()
        # the rbf's points centered once (formulations.kernels.rbf_values), not at every call; a sparse X's rows
        # come from gram's sparse branch (centering would densify it)
        self._points = Points.of(self.data) if kernel.name == "rbf" and not issparse(self.data) else None

    def row_cache(self, **switch):
        """The same kernel on the same data as the compiled SMO's rows (solvers.algorithms.smo.RowCache.from_data),
        through a cache as large as this one's; for dense data and a kernel the compiled rows compute. switch:
        from_data's entries_limit and on_limit (AdaptiveRows)."""
        from solvers.algorithms.smo import RowCache  # numba, loaded where it is used

        return RowCache.from_data(self.kernel, self.data, cache_bytes=8.0 * self.capacity * self.n, **switch)

    def magnitudes(self, u: np.ndarray) -> np.ndarray:
        """A bound on sum_j |K_ij u_j| without computing rows: |K_ij| <= sqrt(K_ii K_jj) (K is PSD)."""
        root = np.sqrt(np.maximum(self.diagonal(), 0.0))
        return root * float(np.abs(u) @ root)

    def _values(self, I, J=None) -> np.ndarray:
        """k(x_i, x_j) for the points I against J (None: all), as formulations.kernels.gram gives them."""
        if self._points is None:
            return gram(self.kernel, self.data[I], self.data if J is None else self.data[J])
        gamma = self.kernel.resolved_gamma(self.data.shape[1])
        return rbf_values(gamma, self._points.take(I), self._points if J is None else self._points.take(J))

    def _compute(self, I) -> np.ndarray:
        block = self._values(I)
        # k(x_i, x_i) as the full Gram matrix has it (the rbf's exact 1, not rounding noise)
        block[np.arange(len(I)), I] = self.diagonal()[I]
        return block

    def rows(self, I) -> np.ndarray:
        I = np.asarray(I, dtype=int)
        missing = np.array([i for i in dict.fromkeys(I.tolist()) if i not in self._cache], dtype=int)
        fresh = {}
        if missing.size:
            block = self._compute(missing)
            self.rows_computed += missing.size
            fresh = dict(zip(missing.tolist(), block))
        if missing.size == len(I):  # none cached, none repeated: the block is the answer (no second copy)
            out = block
        else:
            out = np.empty((len(I), self.n))
            for r, i in enumerate(I.tolist()):
                row = self._cache.get(i)
                if row is None:
                    row = fresh[i]
                else:
                    self._cache.move_to_end(i)
                out[r] = row
        for i in missing.tolist()[-self.capacity:]:
            self._cache[i] = self._kept(fresh[i])
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        self.max_held = max(self.max_held, len(self._cache))
        return out

    def _kept(self, row: np.ndarray) -> np.ndarray:
        """A computed row as the cache keeps it: a copy where rows can be evicted, since a view would keep
        its whole block alive after the LRU evicts the row's neighbours (the peak then grows far past the
        cache's size); the view itself where every row fits (nothing is evicted, and copies would cost time)."""
        return row if self.capacity >= self.n else row.copy()

    def restricted(self, S) -> "KernelRows":
        """Rows of the points S alone, through a cache of the same size."""
        sub = self._like(self.data[S], cache_bytes=self.capacity * 8.0 * self.n)
        sub._diagonal = self.diagonal()[S]  # the parent's, not computed again (point by point for poly, sigmoid)
        return sub

    def _like(self, X, cache_bytes) -> "KernelRows":
        """A row source of this kind for other points."""
        return KernelRows(self.kernel, X, cache_bytes)

    def submatrix(self, I, J) -> np.ndarray:
        I, J = np.asarray(I, dtype=int), np.asarray(J, dtype=int)
        block = self._values(I, J)
        same = I[:, None] == J[None, :]
        block[same] = self.diagonal()[np.broadcast_to(I[:, None], same.shape)[same]]
        return block

    def combination(self, I, coef) -> np.ndarray:
        """coef' K[I, :] from the rows of I (cached ones as they are, the others computed and cached), a
        bounded chunk at a time (a block's rows at n = 50,000 are 800 MB; the cache keeps its own copies)."""
        I = np.asarray(I, dtype=int)
        out = np.zeros(self.n)
        step = chunk_rows(self.n)
        for lo in range(0, I.size, step):
            out += coef[lo:lo + step] @ self.rows(I[lo:lo + step])
        return out

    def times(self, u: np.ndarray) -> np.ndarray:
        """K u without the n x n matrix, from the last product this source made where u differs from its u in
        fewer entries than it has nonzeros (K u = K u_last + K (u - u_last)), else from the rows of u's
        nonzeros; rows a bounded chunk at a time, cached ones as they are.

        The working set asks for K (y . alpha) at its start, its loop's end and its proof, and alpha moved
        only on the free points in between: recomputing the rows of the points at C at every call, or keeping
        them, would cost a large share of the solve.
        """
        self._take_prefetched()
        u = np.asarray(u, dtype=float)
        nz = np.flatnonzero(u)
        nearest = min(((np.flatnonzero(u != u_last), u_last, Ku_last) for u_last, Ku_last in self._products),
                      key=lambda found: found[0].size, default=None)
        if nearest is not None and nearest[0].size < nz.size:
            changed, u_last, Ku_last = nearest
            out = Ku_last + self._rows_times(changed, u[changed] - u_last[changed])
        else:
            out = self._rows_times(nz, u[nz])
        self._products.append((u.copy(), out.copy()))
        return out

    def prefetch(self, u: np.ndarray) -> None:
        """Start K u on another thread where a second core is allowed (compiled_gram.gram_threads): the rows of
        u's nonzeros that no cache holds now, computed there a chunk at a time (not kept); the next times() takes
        the product up as a kept one, the held rows added then. The caller goes on meanwhile.

        Why: the kernel working set's proof asks for K u over the points at C (solvers.reference), most of whose
        rows SMO left out by shrinking; the set is known after SMO's first run, and its rows can be computed while
        the block is solved instead of after it."""
        from solvers.algorithms.compiled_gram import gram_threads  # numba, loaded where it is used

        if gram_threads() < 2:
            return
        u = np.array(u, dtype=float)
        nz = np.flatnonzero(u)
        apart = nz[~self._holds(nz)]
        if apart.size == 0:
            return
        self.diagonal()  # made once, before the thread reads it
        coef, step = u[apart], chunk_rows(self.n)

        def product() -> np.ndarray:
            out = np.zeros(self.n)
            for lo in range(0, apart.size, step):
                out += coef[lo:lo + step] @ self._compute(apart[lo:lo + step])
            return out

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel product ahead")
        self._prefetched.append((u, apart, pool.submit(product)))
        pool.shutdown(wait=False)

    def _take_prefetched(self) -> None:
        """The prefetched products, waited for and completed from the rows held now, kept as times()'s own."""
        while self._prefetched:
            u, apart, future = self._prefetched.popleft()
            rest = np.setdiff1d(np.flatnonzero(u), apart, assume_unique=True)
            out = future.result()
            if rest.size:
                out += self._rows_times(rest, u[rest])
            self.rows_computed += apart.size
            self._products.append((u, out))

    def _holds(self, I: np.ndarray) -> np.ndarray:
        """Which of the points I have their row cached."""
        return np.array([i in self._cache for i in I.tolist()], dtype=bool)

    def _rows_times(self, I: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """coef' K[I, :]: cached rows as they are, the others computed a chunk at a time and not kept."""
        out = np.zeros(self.n)
        step = chunk_rows(self.n)
        held = self._holds(I)
        cached, c_cached, missing, c_missing = I[held], coef[held], I[~held], coef[~held]
        for lo in range(0, cached.size, step):
            out += c_cached[lo:lo + step] @ np.stack([self._cache[i] for i in cached[lo:lo + step].tolist()])
        self.diagonal()  # made once, before the threads read it
        chunks = [(missing[lo:lo + step], c_missing[lo:lo + step]) for lo in range(0, missing.size, step)]
        from solvers.algorithms.compiled_gram import gram_threads, in_threads  # numba, loaded where it is used

        # BLAS's product and numpy's exp release the interpreter's lock: the chunks on the cores
        parts = in_threads(lambda chunk: chunk[1] @ self._compute(chunk[0]), chunks, min(gram_threads(), len(chunks)))
        for part in parts:
            out += part  # in the chunks' order: the same sums on any number of threads
        self.rows_computed += missing.size
        return out

    def diagonal(self) -> np.ndarray:
        if self._diagonal is None:
            self._diagonal = kernel_diagonal(self.kernel, self.data)
        return self._diagonal

    def max_diagonal(self) -> float:
        return float(np.max(self.diagonal()))


class LinearRows(KernelRows):
    """The linear kernel K = X X' as cached rows, whose products go through X instead of rows: K u =
    X (X' u) and c' K[I, :] = X (X[I]' c) cost O(n d) each, where rows cost O(|I| n d).

    Why: the gradient's update after each block through the block's rows is q n d flops; through X it is
    2 n d. Rows are still computed (and cached) where
    single ones are asked for: the second-order selection's two, the SMO steps'."""

    def __init__(self, X: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES):
        super().__init__(validation.check_kernel("linear"), X, cache_bytes)
        self.X = self.data  # the checks' proof then solves for (w, b) (solvers.reference's primal form)

    def _like(self, X, cache_bytes) -> "LinearRows":
        return LinearRows(X, cache_bytes)

    def combination(self, I, coef) -> np.ndarray:
        return self.data @ np.asarray(np.asarray(coef, dtype=float) @ self.data[I]).ravel()

    def times(self, u: np.ndarray) -> np.ndarray:
        nz = np.flatnonzero(u)
        return self.combination(nz, u[nz]) if nz.size else np.zeros(self.n)


def kernel_diagonal(kernel, X: np.ndarray) -> np.ndarray:
    """k(x_i, x_i) for every i, one point at a time in chunks (exactly the Gram matrix's diagonal)."""
    if kernel.name == "rbf":
        return np.ones(X.shape[0])  # the Gram matrix sets ||x - x|| = 0 exactly
    if kernel.name == "linear":  # ||x_i||^2 at once, not n calls of gram
        return squared_row_norms(X)
    return np.array([gram(kernel, X[i:i + 1])[0, 0] for i in range(X.shape[0])])


#: From this n the working set's rows are computed on demand even when the Gram matrix fits: the
#: loop needs far fewer rows than n, and the whole matrix costs more than the loop (docs/benchmarks.md).
ROWS_FROM_N = 2000


#: Up to this size the Gram matrix may be formed from ROWS_FROM_N points: at once for kernels other than the rbf, and
#: for the rbf once the compiled SMO has computed rows worth it (AdaptiveRows): at a large C it reads two rows a step,
#: hundreds of thousands of steps, and copies the short rows of the points still in play out of the matrix where rows
#: on demand would compute them again after each shrinking.
GRAM_BYTES = 2**30


def gram_fits(n: int, allowed: float) -> bool:
    """Whether the n x n Gram matrix fits `allowed` bytes: 3 n^2 doubles (it, and gram's temporaries)."""
    return 3 * 8.0 * n * n <= allowed


def gram_allowed(n: int, budget: float | None = None) -> bool:
    """Whether the Gram matrix of n points may be formed: at most GRAM_BYTES, and within `budget` bytes (gram_fits;
    None: validation.memory_budget())."""
    return 8.0 * n * n <= GRAM_BYTES and gram_fits(n, validation.memory_budget(budget))


def gram_first(n: int, budget: float | None = None) -> bool:
    """Whether the kernel dual of n points starts from its whole Gram matrix, formed before SMO's first step:
    below ROWS_FROM_N points, where it is allowed (gram_allowed). From ROWS_FROM_N on the rows come on demand and
    become the matrix only where SMO shows it needs many (AdaptiveRows). row_source's rule, and the estimator's
    for each pair of classes (experiments.estimator): one rule, so that a pair is solved on the same kind of
    source inside the estimator as through solvers.api.solve."""
    return n < ROWS_FROM_N and gram_allowed(n, budget)


#: The compiled SMO's rows give way to the whole Gram matrix (AdaptiveRows) once what they cost adds up to what the
#: matrix costs (rent or buy: never more than twice the cheaper of the two). An entry of a computed row costs about
#: d + ROW_EXP units (a pass over the d features, then exp; one thread), one of the matrix's about MATRIX_ENTRY
#: (BLAS's product and the exp, on every core): at d = 10 the rows may hold about 0.9 n^2 entries, at d = 100 0.15
#: n^2 (docs/benchmarks.md).
ROW_EXP, MATRIX_ENTRY = 8.0, 16.0


def switch_entries(n: int, d: int) -> float:
    """Entries of rows the compiled SMO computes from n points of d features before the Gram matrix is formed."""
    return n * n * MATRIX_ENTRY / (d + ROW_EXP)


#: Where the matrix may be formed on another core while SMO runs (background_allowed), the other core starts on it
#: once SMO's rows hold START_SHARE of the switch point's entries (SMO on data that needs few rows ends before and
#: leaves that core alone), and SMO's rows give way to it once they hold OVERLAP_SHARE n^2 entries, or
#: switch_entries if fewer (docs/background_gram.md).
START_SHARE, OVERLAP_SHARE = 0.25, 0.6


def overlap_entries(n: int, d: int) -> float:
    """Entries of rows the compiled SMO computes from n points of d features before it reads the matrix formed on
    another core (finishing its blocks left where it is not done): a count of work, never a time, so that the steps
    and the answer are the same bits however fast the other core is."""
    return min(switch_entries(n, d), OVERLAP_SHARE * n * n)


def background_allowed(n: int, budget: float | None = None) -> bool:
    """Whether the Gram matrix of n points is formed on another core while SMO runs: where a second core is there
    for it (compiled_gram.gram_threads() >= 2: $SVM_THREADS=1 keeps every step on one core) and the matrix is
    allowed (gram_allowed: beside SMO's rows, at most half the budget, it takes at most a third of it)."""
    from solvers.algorithms.compiled_gram import gram_threads  # numba, loaded where it is used

    return n > 0 and gram_threads() >= 2 and gram_allowed(n, budget)


class AdaptiveRows(KernelRows):
    """Rows on demand that become the whole Gram matrix once the compiled SMO has shown it needs many of them.

    The compiled SMO's rows (row_cache) are computed from the data until they hold switch_entries entries; then
    the matrix is formed (`form`: row_source's, the same bits as a FullGram of the same data) and the steps go on
    from the same alpha and gradient, reading it. From then on every question (the block, the closing's checks,
    the proof) is answered by that matrix (`gram`), the one copy; before, by the rows (KernelRows: the products
    reuse the rows and products already computed).

    With a second core (background_allowed) the matrix is formed on it while SMO computes rows, from the start
    point (START_SHARE) on, and SMO reads it from overlap_entries on, forming its blocks left if it is not done: both
    points are counts of work, and the matrix is the same bits either way, so the answer does not depend on when
    it arrives. An SMO run that ends before drops the work (drop_background; docs/background_gram.md).

    Why: SMO from alpha = 0 computes about two new rows a step until it has met the support vectors. Where they
    are few (separated classes, most of them at C) the rows cost far less than the matrix; where rows are computed
    again and again (a cache smaller than n rows, many rounds at a large C) or cost more (many features), the
    matrix costs less. Which case it is shows only as the rows are computed.
    """

    def __init__(self, kernel, X: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES,
                 entries: float | None = None, budget: float | None = None):
        """entries: of rows computed by the compiled SMO before the matrix is formed (None: switch_entries, or
        overlap_entries where it is formed on another core meanwhile; infinite: never). budget: bytes for the
        matrix formed on another core (background_allowed; None: validation.memory_budget())."""
        if kernel.name != "rbf" or issparse(X):
            raise ValueError("adaptive rows are the rbf kernel's on dense data (the compiled SMO's and rbf_gram's)")
        super().__init__(kernel, X, cache_bytes)
        self.switch_entries = switch_entries(*self.data.shape) if entries is None else float(entries)
        # with the matrix formed on another core (background_allowed)
        self.overlap_entries = overlap_entries(*self.data.shape) if entries is None else float(entries)
        self.gram: FullGram | None = None
        self._compiled = None  # the compiled rows handed out from the data (their count of entries computed)
        self._background = None  # the matrix being formed on another core (background_gram.BackgroundGram)
        self._overlap = False  # whether the compiled rows may still start it (row_cache, _on_limit)
        self.budget = budget

    def row_cache(self, y: np.ndarray | None = None, upper: np.ndarray | None = None):
        """The compiled SMO's rows: from the data, forming the matrix (`form`) once they hold switch_entries
        entries; the matrix's, once formed. y, upper (labels and bounds C_i): the matrix is formed at once where
        the support vectors (each a row SMO computes) will surely hold half of switch_entries (`fewest_support`)."""
        if self.gram is None and y is not None and 2.0 * fewest_support(y, upper, self.max_diagonal()) * self.n \
                >= self.switch_entries:
            self.form()
        if self.gram is not None:
            return self.gram.row_cache()
        self.drop_background()
        # the other core is started at a point of the work (_on_limit), if at all; without it the matrix is formed
        # here once the rows hold switch_entries
        self._overlap = math.isfinite(self.overlap_entries) and background_allowed(self.n, self.budget)
        limit = START_SHARE * self.overlap_entries if self._overlap else self.switch_entries
        self._compiled = super().row_cache(entries_limit=limit, on_limit=self._on_limit)
        return self._compiled

    def _on_limit(self) -> np.ndarray | None:
        """The compiled rows' on_limit: at the start point the matrix begun on another core (None: the rows go on
        up to overlap_entries); at the switch, the matrix (form)."""
        if self._overlap and self._background is None:
            from solvers.algorithms.background_gram import BackgroundGram  # numba, loaded where it is used

            self._background = BackgroundGram(self.kernel.resolved_gamma(self.data.shape[1]), self.data)
            self._compiled.entries_limit = self.overlap_entries
            return None
        return self.form()

    def drop_background(self) -> None:
        """The matrix not formed on another core from here on, and the work stopped where SMO has not needed it
        yet: the compiled rows' switch is back at switch_entries (the steps after go as without the background
        work). The caller does no BLAS work of its own before this (background_gram's docstring)."""
        self._overlap = False
        if self._compiled is not None and self._compiled.on_limit is not None:
            self._compiled.entries_limit = self.switch_entries
        if self._background is not None:
            self._background.drop()
            self._background = None

    @property
    def entries_computed(self) -> int:
        """Kernel values the compiled SMO computed from the data through the last row_cache (0 before one)."""
        return 0 if self._compiled is None else self._compiled.entries_computed

    def form(self) -> np.ndarray:
        """The whole Gram matrix, formed once (the rows cached so far are let go)."""
        if self.gram is None:
            if self._background is not None:  # formed on another core: its blocks left taken here (result)
                background, self._background = self._background, None
                self.gram = FullGram(background.result(), self.kernel, self.data)
            else:
                self.gram = full_gram(self.kernel, self.data)
            self.capacity = self.n
            self._cache.clear()
            self._products.clear()
            self._prefetched.clear()  # the matrix answers from now on
        return self.gram.K

    def rows(self, I) -> np.ndarray:
        return super().rows(I) if self.gram is None else self.gram.rows(I)

    def restricted(self, S) -> Gram:
        return super().restricted(S) if self.gram is None else self.gram.restricted(S)

    def submatrix(self, I, J) -> np.ndarray:
        return super().submatrix(I, J) if self.gram is None else self.gram.submatrix(I, J)

    def combination(self, I, coef) -> np.ndarray:
        if self.gram is not None:
            return self.gram.combination(I, coef)
        I, coef = np.asarray(I, dtype=int), np.asarray(coef, dtype=float)
        held, slot = self._held(I)
        out = super().combination(I[~held], coef[~held])
        return out + self._from_held(slot[held], coef[held]) if held.any() else out

    def times(self, u: np.ndarray) -> np.ndarray:
        return super().times(u) if self.gram is None else self.gram.times(u)

    def prefetch(self, u: np.ndarray) -> None:
        if self.gram is None:  # the formed matrix's product is one pass over it
            super().prefetch(u)

    def _holds(self, I: np.ndarray) -> np.ndarray:
        """Which of the points I have their row cached, here or whole in the compiled SMO's cache."""
        return self._held(I)[0] | super()._holds(I)

    def _rows_times(self, I: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """coef' K[I, :]: the rows the compiled SMO holds read where they are, the others as KernelRows'."""
        held, slot = self._held(I)
        out = super()._rows_times(I[~held], coef[~held])
        return out + self._from_held(slot[held], coef[held]) if held.any() else out

    def _held(self, I: np.ndarray):
        """(which of the points I have their whole row in the compiled SMO's cache, each one's slot there): the
        rows it computed are not computed again. Only after a run that ended with every point in play: the cache
        then holds rows over every point, at the points' own positions."""
        compiled = self._compiled
        if compiled is None or not compiled.whole_rows:
            return np.zeros(len(I), dtype=bool), np.zeros(len(I), dtype=np.int64)
        slot = compiled.slots[0][I]
        return slot >= 0, slot

    def _from_held(self, slots: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """coef' (the compiled cache's rows in `slots`), read in place."""
        from solvers.algorithms.compiled_gram import combination  # numba, loaded where it is used

        used = int(self._compiled.meta[1])
        return combination(self._compiled.buffer[:used * self.n].reshape(used, self.n), slots, coef)

    def magnitudes(self, u: np.ndarray) -> np.ndarray:
        return super().magnitudes(u) if self.gram is None else self.gram.magnitudes(u)


def fewest_support(y: np.ndarray, upper: np.ndarray, max_diagonal: float) -> float:
    """A lower bound on the kernel dual's support vectors (labels y, bounds C_i): where C_max n max K_ii < 1,
    |f(x_i) - b| < 1 at every point, so every point of the class with y_i b <= 0 violates its margin (alpha_i =
    C_i), and y'alpha = 0 then puts at least C_min / C_max as many of the other class in play; 0 otherwise."""
    upper = np.broadcast_to(np.asarray(upper, dtype=float), np.shape(y))
    if y.size == 0 or float(upper.max()) * y.size * max_diagonal >= 1.0:
        return 0.0
    smaller = min(int(np.count_nonzero(y > 0)), int(np.count_nonzero(y < 0)))
    return smaller * (1.0 + float(upper.min()) / float(upper.max()))


def gram_formed(src) -> bool:
    """Whether a row source holds the whole Gram matrix: a FullGram (or a block of one), or AdaptiveRows that formed
    it."""
    return isinstance(src, (FullGram, GramBlock)) or getattr(src, "gram", None) is not None


def full_gram(kernel, X: np.ndarray) -> FullGram:
    """The whole Gram matrix of X as a FullGram: the rbf's on dense X by the compiled, threaded rbf_gram, the other
    kernels' by formulations.kernels.gram."""
    if kernel.name == "rbf" and not issparse(X):
        from solvers.algorithms.compiled_gram import rbf_gram  # numba, loaded where it is used

        return FullGram(rbf_gram(kernel.resolved_gamma(X.shape[1]), X), kernel, X)
    return FullGram(gram(kernel, X), kernel, X)


def row_source(kernel, X: np.ndarray, *, budget: float | None = None,
               cache_bytes: float = DEFAULT_CACHE_BYTES) -> Gram:
    """LinearRows for the linear kernel at any n; for the others the full Gram matrix at once where gram_first, and
    up to GRAM_BYTES rows that become it where SMO needs many (AdaptiveRows: the rbf on dense X; the full
    matrix for the others), if 3 n^2 doubles (it, and gram's temporaries) fit `budget` bytes; else cached rows.

    The linear kernel's Gram matrix is never needed: its products go through X, and the checks' proof solves
    for (w, b) from X (LinearRows); rows through X are as fast as the Gram matrix at the sizes where it fits.
    Sigmoid's matrix is formed whole where it fits: Mercer's condition is then checked on it (solvers.api).

    budget None: formulations.validation.memory_budget() ($SVM_MEMORY_BUDGET or half the free memory).
    """
    n = X.shape[0]
    allowed = validation.memory_budget(budget)
    if kernel.name == "linear":
        return LinearRows(X, cache_bytes=min(cache_bytes, allowed / 2))
    if gram_allowed(n, allowed):
        if not gram_first(n, allowed) and kernel.name == "rbf" and not issparse(X):
            return AdaptiveRows(kernel, X, cache_bytes=min(cache_bytes, allowed / 2), budget=allowed)
        return full_gram(kernel, X)
    return KernelRows(kernel, X, cache_bytes=min(cache_bytes, allowed / 2))
