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
    times(u)         K u, from the rows where u != 0, in chunks of bounded size
    diagonal()       K_ii

`row_source` picks the full Gram matrix at small n when it fits the memory budget (one matrix
product, no cache misses), and the cached rows otherwise.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from formulations import validation
from formulations.kernels import gram
from solvers.reference import Gram

#: Rows cached by default: LIBSVM's SVC uses 200 MB; more rows mean fewer recomputed ones.
DEFAULT_CACHE_BYTES = 512 * 2**20
#: Largest temporary block of kernel values made at once by times() and the gradient update (bytes).
#: Below glibc's largest mmap threshold (32 MB), so a freed block is reused from the heap instead of
#: being mapped and faulted in again: n = 5,000, C = 1, a fresh process, 0.26-0.27 s with 16 MB blocks
#: against 0.32-0.44 s with 64 MB (LIBSVM 0.18 s in the same runs).
CHUNK_BYTES = 16 * 2**20
#: Size of one slab of the row cache (KernelRows): just under numpy's 4 MiB threshold for asking the kernel
#: for transparent huge pages. With 16 MiB slabs the run at n = 5,000 (C = 1) took either 0.46 s or, when
#: the kernel compacted memory to find huge pages, 1.13-1.15 s (sys time 0.23-0.27 s against 0.04-0.06);
#: with slabs below the threshold 0.48-0.83 s (sys 0.08-0.11), fresh processes side by side, machine shared
#: by 5 agents. At n = 50,000 both took the same (user 40.4 s against 39.4 s, 10 rows a slab against 41).
SLAB_BYTES = 4 * 2**20 - 1
#: Rows per run of consecutive cache slots, on average, from which KernelRows computes them in place.
MIN_RUN = 32


class FullGram(Gram):
    """A Gram matrix already in memory, as a row source."""

    def __init__(self, K: np.ndarray):
        super().__init__(None, np.asarray(K, dtype=float))
        self.n = len(self.K)
        self.capacity = self.n  # every row is held
        self.rows_computed = 0  # nothing is computed: every row is there

    def rows(self, I) -> np.ndarray:
        return self.K[I]

    def restricted(self, S) -> "FullGram":
        """The Gram matrix of the points S alone."""
        return FullGram(self.K[np.ix_(S, S)])

    # submatrix(I, J): solvers.reference.Gram's, K[np.ix_(I, J)]

    def diagonal(self) -> np.ndarray:
        return np.diag(self.K).copy()

    def times(self, u: np.ndarray) -> np.ndarray:
        """K u from the rows where u != 0 (K symmetric: rows are contiguous, columns are not)."""
        nz = np.flatnonzero(u)
        if 8 * nz.size > self.n:  # gathering rows copies them: at n = 5,000 half the rows took 70 ms, K u 10 ms
            return self.K @ u
        return u[nz] @ self.K[nz] if nz.size else np.zeros(self.n)


class KernelRows(Gram):
    """K[i, :] = k(x_i, x_j) for all j, computed from X when asked and kept in an LRU cache.

    The cache's rows live in slabs of SLAB_BYTES, allocated as it fills and never more than
    `capacity` rows in all; rows computed for the cache in long runs of slots are written straight
    into them (formulations.kernels.gram(out=...)), others copied in (`_fill`). Before, each row
    was computed in a block and copied into an array of its own: 2,200 rows at n = 5,000 (the split
    start's product) took 0.18-0.28 s that way against 0.11-0.16 s written in place (5 fresh
    processes each, machine shared; the copies and the fresh memory of 2,200 small arrays).

    `rows_computed` counts the rows evaluated (hits cost nothing), `max_held` the most rows the
    cache ever held (never above `capacity`).
    """

    def __init__(self, kernel, X: np.ndarray, cache_bytes: float = DEFAULT_CACHE_BYTES):
        super().__init__(None, None)
        self.kernel, self.data = kernel, np.ascontiguousarray(X, dtype=float)
        self.n = len(self.data)
        self.capacity = max(2, int(cache_bytes // (8 * max(self.n, 1))))
        self._slab_rows = min(self.capacity, max(1, int(SLAB_BYTES // (8 * max(self.n, 1)))))
        self._slabs: list[np.ndarray] = []
        self._cache: OrderedDict[int, int] = OrderedDict()  # row -> its slot, least recently used first
        self._free: list[int] = []  # slots of allocated slabs that hold no row
        self.rows_computed = 0
        self.max_held = 0
        self._diagonal = None

    def _compute(self, I, out: np.ndarray | None = None) -> np.ndarray:
        block = gram(self.kernel, self.data[I], self.data, out=out)
        # k(x_i, x_i) as the full Gram matrix has it (the rbf's exact 1, not rounding noise)
        block[np.arange(len(I)), I] = self.diagonal()[I]
        return block

    def _row(self, slot: int) -> np.ndarray:
        return self._slabs[slot // self._slab_rows][slot % self._slab_rows]

    def _take_slots(self, count: int, keep) -> list[int]:
        """`count` slots for new rows: free ones, then a new slab while under capacity, then those of the
        least recently used rows not in `keep` (at most capacity - len(keep) are there to take)."""
        while len(self._free) < count and len(self._slabs) * self._slab_rows < self.capacity:
            first = len(self._slabs) * self._slab_rows
            size = min(self._slab_rows, self.capacity - first)
            self._slabs.append(np.empty((size, self.n)))
            self._free.extend(range(first + size - 1, first - 1, -1))  # pop() hands out ascending slots
        need = count - len(self._free)
        if need > 0:  # from the least recently used end, stopping when enough are found (not the whole cache)
            victims = []
            for i in self._cache:
                if i not in keep:
                    victims.append(i)
                    if len(victims) == need:
                        break
            self._free.extend(self._cache.pop(i) for i in victims)
        return [self._free.pop() for _ in range(min(count, len(self._free)))]

    def _store(self, rows: list[int], block, keep) -> None:
        """Copy computed rows (block[k] = K[rows[k]]) into cache slots."""
        slots = self._take_slots(len(rows), keep)
        for slot, row in zip(slots, block):
            self._row(slot)[:] = row
        self._cache.update(zip(rows, slots))
        self.max_held = max(self.max_held, len(self._cache))

    def _fill(self, rows: list[int], keep) -> list[tuple[slice, np.ndarray]]:
        """Compute `rows` into cache slots; returns the runs of consecutive slots within one slab as
        (its part of `rows`, its rows of K), for a product without gathering them.

        Long runs (fresh slabs at moderate n) are written in place. Slots freed one by one by the LRU
        are scattered, and a slab holds few rows at large n (10 at n = 50,000): each kernel evaluation
        costs O(n d) besides its rows (formulations.kernels.gram's checks and norms), so there the rows
        are computed a chunk at a time and copied into their slots."""
        slots = self._take_slots(len(rows), keep)
        R = self._slab_rows
        runs, start = [], 0
        while start < len(slots):
            stop = start + 1
            while stop < len(slots) and slots[stop] == slots[stop - 1] + 1 and slots[stop] % R:
                stop += 1
            first = slots[start] % R
            runs.append((slice(start, stop), self._slabs[slots[start] // R][first:first + stop - start]))
            start = stop
        self.rows_computed += len(rows)
        if MIN_RUN * len(runs) <= len(rows):
            for part, block in runs:
                self._compute(np.asarray(rows[part]), out=block)
        else:
            step = max(1, int(CHUNK_BYTES // (8 * max(self.n, 1))))
            for lo in range(0, len(rows), step):
                for slot, row in zip(slots[lo:lo + step], self._compute(np.asarray(rows[lo:lo + step]))):
                    self._row(slot)[:] = row
        self._cache.update(zip(rows, slots))
        self.max_held = max(self.max_held, len(self._cache))
        return runs

    def rows(self, I) -> np.ndarray:
        I = np.asarray(I, dtype=int)
        wanted = list(dict.fromkeys(I.tolist()))
        missing = [i for i in wanted if i not in self._cache]
        if len(missing) == len(I) and len(I) <= self.capacity:  # none cached, none repeated: the block is
            out = self._compute(I)  # the answer, copied once into the cache
            self.rows_computed += len(I)
            self._store(missing, out, set(missing))
            return out
        if len(wanted) > self.capacity:  # more than the cache holds: computed for this call, the newest kept
            out = self._compute(I)
            self.rows_computed += len(wanted)
            where = {i: r for r, i in enumerate(I.tolist())}
            keep = wanted[-self.capacity:]
            new = [i for i in keep if i not in self._cache]
            self._store(new, out[[where[i] for i in new]], set(keep))
            return out
        if missing:
            self._fill(missing, set(wanted))
        out = np.empty((len(I), self.n))
        for r, i in enumerate(I.tolist()):
            out[r] = self._row(self._cache[i])
            self._cache.move_to_end(i)
        return out

    def restricted(self, S) -> "KernelRows":
        """Rows of the points S alone, through a cache of the same size."""
        return KernelRows(self.kernel, self.data[S], cache_bytes=self.capacity * 8.0 * self.n)

    def submatrix(self, I, J) -> np.ndarray:
        I, J = np.asarray(I, dtype=int), np.asarray(J, dtype=int)
        block = gram(self.kernel, self.data[I], self.data[J])
        same = I[:, None] == J[None, :]
        block[same] = self.diagonal()[np.broadcast_to(I[:, None], same.shape)[same]]
        return block

    def times(self, u: np.ndarray) -> np.ndarray:
        """K u without the n x n matrix: rows of the nonzeros of u, a bounded chunk at a time.

        Cached rows are used as they are; the others are computed into the cache while it has room,
        never evicting a row (the working set's rows stay), and beyond that a chunk at a time for this
        product alone. At n = 5,000 (C = 1) the split start, the loop's end and the checks' proved
        optimum each asked for the ~2,400 rows of the points at C: 0.2 s of a 0.6 s solve when every
        call recomputed them.
        """
        nz = np.flatnonzero(u)
        out = np.zeros(self.n)
        step = max(1, int(CHUNK_BYTES // (8 * max(self.n, 1))))
        held = np.array([i in self._cache for i in nz.tolist()], dtype=bool)
        cached, missing = nz[held], nz[~held]
        room = max(0, self.capacity - len(self._cache))
        if room and missing.size:  # into free slots and new slabs only: no row is evicted
            fresh = missing[:room]
            for part, block in self._fill(fresh.tolist(), set()):
                out += u[fresh[part]] @ block
            missing = missing[room:]
        for lo in range(0, cached.size, step):
            J = cached[lo:lo + step]
            out += u[J] @ np.stack([self._row(self._cache[i]) for i in J.tolist()])
        for lo in range(0, missing.size, step):
            J = missing[lo:lo + step]
            self.rows_computed += J.size
            out += u[J] @ self._compute(J)
        return out

    def diagonal(self) -> np.ndarray:
        if self._diagonal is None:
            self._diagonal = kernel_diagonal(self.kernel, self.data)
        return self._diagonal

    def max_diagonal(self) -> float:
        return float(np.max(self.diagonal()))


def kernel_diagonal(kernel, X: np.ndarray) -> np.ndarray:
    """k(x_i, x_i) for every i, one point at a time in chunks (exactly the Gram matrix's diagonal)."""
    if kernel.name == "rbf":
        return np.ones(len(X))  # the Gram matrix sets ||x - x|| = 0 exactly
    return np.array([gram(kernel, X[i:i + 1])[0, 0] for i in range(len(X))])


#: From this n the working set's rows are computed on demand even when the Gram matrix fits: the
#: loop needs far fewer rows than n (bench data, rbf, C = 1: 1,082 of 5,000), and the 200 MB matrix
#: cost more than the whole loop. Side by side (solve() in "direct", PIQP, machine shared by 4
#: agents): n = 2,000: 0.23-0.24 s with rows against 0.28-0.29 s with the matrix; n = 5,000:
#: 0.54 s against 0.70-1.90 s (C = 1), 3.1 s against 4.5 s (C = 10).
ROWS_FROM_N = 2000


def gram_fits(n: int, allowed: float) -> bool:
    """Whether the n x n Gram matrix fits `allowed` bytes: 3 n^2 doubles (it, and gram's temporaries)."""
    return 3 * 8.0 * n * n <= allowed


def row_source(kernel, X: np.ndarray, *, budget: float | None = None,
               cache_bytes: float = DEFAULT_CACHE_BYTES) -> Gram:
    """Cached rows from ROWS_FROM_N points on; below, the full Gram matrix if 3 n^2 doubles (it, and gram's
    temporaries) fit `budget` bytes, else cached rows.

    budget None: formulations.validation.memory_budget() ($SVM_MEMORY_BUDGET or half the free memory).
    """
    n = len(X)
    allowed = validation.memory_budget(budget)
    if n < ROWS_FROM_N and gram_fits(n, allowed):
        return FullGram(gram(kernel, X))
    return KernelRows(kernel, X, cache_bytes=min(cache_bytes, allowed / 2))
