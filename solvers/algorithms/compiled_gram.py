"""The dense Gram matrix and products with its rows, compiled (numba): the rbf's K formed on every core, and
combinations of K's rows read in place. Shared by the compiled SMO, the kernel rows and the estimator's one Gram
matrix per fit."""

from __future__ import annotations

import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from formulations.data_matrix import one_type
from formulations.kernels import Points, RbfRows
from formulations.numba_cache import njit  # numba's, its cache locked against processes filling it at once
from solvers import blas


#: Rows of the Gram matrix a thread takes at a time (RbfRows.fill then works through them in cache-sized blocks).
GRAM_ROWS = 256


#: The environment variable that sets gram_threads() (a machine shared with other jobs may want 1).
THREADS_ENV = "SVM_THREADS"


def gram_threads() -> int:
    """Threads that form a Gram matrix and combine its rows: $SVM_THREADS, else one per core this process may run
    on."""
    setting = os.environ.get(THREADS_ENV)
    if setting:
        threads = int(setting) if setting.strip().isdigit() else 0
        if threads < 1:
            raise ValueError(f"${THREADS_ENV} must be a whole number of threads >= 1, got {setting!r}")
        return threads
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # platforms without affinity masks
        return max(1, os.cpu_count() or 1)


def rbf_gram(gamma: float, X: np.ndarray, threads: int | None = None) -> np.ndarray:
    """The rbf's Gram matrix of dense X by formulations.kernels.gram's rule (formulations.kernels.RbfRows: right to
    rounding at any translation and scale; the same values to the last few bits, each row block's product being
    its own BLAS call), by row blocks on several threads: the lower triangle, then mirrored
    (exactly symmetric, 1 on the diagonal).

    threads (default: gram_threads()): that many threads take the row blocks (GramWork), the largest first
    (BLAS's product, the compiled pass and numpy's exp all release the interpreter's lock); then the mirror, by
    bands of rows. BLAS runs on one thread, so every entry is made by the same operations whatever the number of
    threads: the matrix is the same to the bit."""
    X = one_type(X)
    n = X.shape[0]
    threads = gram_threads() if threads is None else int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    threads = min(threads, max(1, -(-n // GRAM_ROWS)))
    # one thread: the whole matrix mapped in by the kernel at once; several: each faults in the rows it writes
    work = GramWork(gamma, X, populate=threads == 1)
    with blas.one_thread_if(n > GRAM_ROWS):  # and these threads are the parallelism: BLAS's would contend
        in_threads(lambda _: work.work(), range(threads), threads)
    return work.matrix


class GramWork:
    """rbf_gram's work as blocks any thread may take: the lower triangle's row blocks, the longest first, then the
    mirror's bands, the first rows first (the most to mirror); each phase begins only once every block of the one
    before is done. Threads join by calling `work`: rbf_gram's own, and a caller that needs the matrix before the
    thread forming it on another core is done (solvers.algorithms.background_gram).

    populate: the matrix's memory mapped in whole at once (else its pages are faulted in as the blocks are
    written: a matrix that may be dropped). stop: set (`halt`) to leave out the blocks not begun."""

    def __init__(self, gamma: float, X: np.ndarray, populate: bool = False):
        X = one_type(X)
        n = X.shape[0]
        points = Points.of(X)
        self.rows = RbfRows(gamma, points, points, _fresh_matrix(n, populate=populate))
        blocks = range(0, n, GRAM_ROWS)
        self._phases = ((self.rows.fill, tuple(reversed(blocks))), (self.rows.mirror, tuple(blocks)))
        self._taken, self._done = [0, 0], [0, 0]
        self._changed = threading.Condition()
        self.stop = threading.Event()

    def work(self) -> None:
        """Take blocks until none is left, waiting between the phases for those other threads hold; return once
        every block is done, or at once where the work is halted. An error in a block halts the others' work too."""
        for phase, (step, starts) in enumerate(self._phases):
            while (k := self._take(phase)) is not None:
                try:
                    step(starts[k], starts[k] + GRAM_ROWS)
                except BaseException:
                    self.halt()
                    raise
                with self._changed:
                    self._done[phase] += 1
                    self._changed.notify_all()
            with self._changed:
                self._changed.wait_for(lambda: self._done[phase] == len(starts) or self.stop.is_set())
            if self.stop.is_set():
                return

    def _take(self, phase: int) -> int | None:
        with self._changed:
            if self.stop.is_set() or self._taken[phase] == len(self._phases[phase][1]):
                return None
            self._taken[phase] += 1
            return self._taken[phase] - 1

    def halt(self) -> None:
        """The blocks not begun left out; the threads waiting between phases woken."""
        self.stop.set()
        with self._changed:
            self._changed.notify_all()

    @property
    def matrix(self) -> np.ndarray | None:
        """The matrix once `work` has returned (None where the work was halted)."""
        return None if self.stop.is_set() else self.rows.out


def in_threads(work, items, threads: int) -> list:
    """[work(item) for item in items], on `threads` threads taking the next item as they finish one, this thread
    one of them (the only one where threads <= 1), the results in the items' order; an exception in one is
    raised here, once every thread is done. Why this thread works rather than waits: a thread started for the work
    is one more whose stack, memory arena and BLAS buffers are first touched (page faults) in a fresh process."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    results, taken, lock = [None] * len(items), [0], threading.Lock()

    def take() -> None:
        while True:
            with lock:
                k = taken[0]
                if k == len(items):
                    return
                taken[0] += 1
            results[k] = work(items[k])

    with ThreadPoolExecutor(max_workers=threads - 1) as pool:  # its end waits for the helpers, whatever take raised
        helpers = [pool.submit(take) for _ in range(min(threads, len(items)) - 1)]
        take()
    for done in helpers:
        done.result()
    return results


def in_bands(work, n: int, band: int, threads: int) -> None:
    """work(lo, hi) over 0..n in bands of `band` on `threads` threads (in_threads); on one thread a single
    work(0, n), one compiled call. For work whose result for an index does not depend on its band."""
    if threads <= 1:
        work(0, n)
        return
    in_threads(lambda lo: work(lo, min(lo + band, n)), range(0, n, band), threads)


#: Rows summed into a partial sum before it is added to the result: the rounding of a combination of m rows then
#: grows like m / SUM_BLOCK + SUM_BLOCK / 4 additions, not m / 4 (the sums of solvers.reference's KKT tests allow a
#: few eps of their terms: MARGIN_ROUNDING).
SUM_BLOCK = 64


@njit(cache=True, nogil=True)
def add_combination(K, I, coef, out, lo, hi, absolute, shift):
    """out[shift + lo:shift + hi] += sum_k coef_k K[I_k, lo:hi] (K symmetric: rows, read in place), four rows a pass
    over a partial sum of SUM_BLOCK rows; absolute: |coef_k| |K[I_k, lo:hi]| instead. Each out[shift + t] gets the
    same sums in the same order whatever lo, hi."""
    m = I.shape[0]
    part = np.empty(hi - lo)
    for first in range(0, m, SUM_BLOCK):
        last = min(m, first + SUM_BLOCK)
        part[:] = 0.0
        whole = last - (last - first) % 4
        for k in range(first, whole, 4):
            c0, c1, c2, c3 = coef[k], coef[k + 1], coef[k + 2], coef[k + 3]
            r0, r1, r2, r3 = K[I[k]], K[I[k + 1]], K[I[k + 2]], K[I[k + 3]]
            if absolute:
                c0, c1, c2, c3 = abs(c0), abs(c1), abs(c2), abs(c3)
                for t in range(lo, hi):
                    part[t - lo] += (c0 * abs(r0[t]) + c1 * abs(r1[t])) + (c2 * abs(r2[t]) + c3 * abs(r3[t]))
            else:
                for t in range(lo, hi):
                    part[t - lo] += (c0 * r0[t] + c1 * r1[t]) + (c2 * r2[t] + c3 * r3[t])
        for k in range(whole, last):
            c = abs(coef[k]) if absolute else coef[k]
            row = K[I[k]]
            if absolute:
                for t in range(lo, hi):
                    part[t - lo] += c * abs(row[t])
            else:
                for t in range(lo, hi):
                    part[t - lo] += c * row[t]
        for t in range(lo, hi):
            out[shift + t] += part[t - lo]


@njit(cache=True, nogil=True)
def combine_runs(K, I, coef, runs, out, absolute):
    """out += sum_k coef_k K[I_k, cols] (|.| where absolute: add_combination's sums) over the columns of `runs`,
    rows (first, stop, offset) of runs of consecutive columns first..stop - 1 written at out[offset:]: a block of K
    read in place (kernel_rows.GramBlock), in one call."""
    for r in range(runs.shape[0]):
        first, stop, offset = runs[r, 0], runs[r, 1], runs[r, 2]
        add_combination(K, I, coef, out, first, stop, absolute, offset - first)


#: Entries of K read from which a combination of rows is split between threads (below, one thread is faster
#: than starting them).
THREADED_ENTRIES = 2**22
#: Bands of columns per thread that a combination is split into (the threads take the next band as they finish
#: one: a thread slowed by another process does less of the work).
BANDS_PER_THREAD = 4


def _rows_combined(K: np.ndarray, I, coef, absolute: bool, threads: int | None) -> np.ndarray:
    """combination's and abs_combination's sums, by bands of columns on gram_threads() threads where they are
    large enough (the same numbers as on one thread: each column's sum is taken in one order)."""
    I = _indices(I, K.shape[0])
    coef = np.ascontiguousarray(coef, dtype=float).ravel()
    if coef.shape != I.shape:
        raise ValueError(f"{I.size} rows but {coef.size} coefficients")
    n = K.shape[1]
    out = np.zeros(n)
    threads = (gram_threads() if I.size * n >= THREADED_ENTRIES else 1) if threads is None else int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    step = max(1, -(-n // (BANDS_PER_THREAD * threads)))
    in_bands(lambda lo, hi: add_combination(K, I, coef, out, lo, hi, absolute, 0), n, step, threads)
    return out


def abs_combination(K: np.ndarray, I, coef, threads: int | None = None) -> np.ndarray:
    """|coef|' |K[I, :]| for a K in memory, without gathering the rows into a copy (threads: _rows_combined)."""
    return _rows_combined(K, I, coef, True, threads)


def combination(K: np.ndarray, I, coef, threads: int | None = None) -> np.ndarray:
    """coef' K[I, :] for a symmetric K in memory, without gathering the rows into a copy (a block's rows would be
    copied whole before the product); threads: _rows_combined."""
    return _rows_combined(K, I, coef, False, threads)


@njit(cache=True, nogil=True)
def _submatrix(K, I, J, out):
    """out[a, b] = K[I_a, J_b], row by row."""
    for a in range(I.shape[0]):
        row = K[I[a]]
        for b in range(J.shape[0]):
            out[a, b] = row[J[b]]


#: Rows of a large submatrix a thread takes at a time.
SUBMATRIX_ROWS = 256


def submatrix(K: np.ndarray, I, J, threads: int | None = None) -> np.ndarray:
    """K[I][:, J] for a K in memory, each entry read where it is: numpy's two takes copy the whole rows of I (or
    columns of J) first, several times the entries kept. A large one (THREADED_ENTRIES) goes into fresh memory
    mapped in whole (fresh_doubles: no wait for huge pages), by bands of rows on gram_threads() threads (threads:
    that many); each entry is a copy, the same whatever the threads."""
    I, J = _indices(I, K.shape[0]), _indices(J, K.shape[1])
    large = I.size * J.size >= THREADED_ENTRIES
    threads = (gram_threads() if large else 1) if threads is None else int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    out = fresh_doubles(I.size * J.size, populate=True) if large else np.empty(I.size * J.size)
    out = out.reshape(I.size, J.size)
    in_bands(lambda lo, hi: _submatrix(K, I[lo:hi], J, out[lo:hi]), I.size, SUBMATRIX_ROWS, threads)
    return out


def _indices(I, size: int) -> np.ndarray:
    """I as int64 positions in 0..size-1, or an IndexError (the compiled loops do not check their bounds)."""
    I = np.asarray(I)
    if I.size and I.dtype.kind not in "iu":
        raise IndexError(f"positions must be integers, got {I.dtype}")
    if I.size and not (0 <= I.min() and I.max() < size):
        raise IndexError(f"positions out of range 0..{size - 1}")
    return np.ascontiguousarray(I, dtype=np.int64).ravel()


#: The largest matrix taken from the heap (glibc's largest threshold for a fresh mapping, 32 MiB on 64-bit
#: machines): one freed by an earlier fit is reused there, its pages already in memory.
HEAP_BYTES = 32 * 2**20


_AHEAD: list = []  # at most one (doubles, the thread mapping them in, [the array once mapped])
_AHEAD_LOCK = threading.Lock()


def map_ahead(count: int) -> None:
    """`count` doubles mapped in on a thread of their own, for the next fresh_doubles(populate=True) of at most that
    many (in any thread: it is only memory). Why: a process's first touch of fresh memory costs what the
    kernel (and, in a virtual machine, the host) does per page, 2.5 ms per MB on some machines; the caller knows the
    size of a matrix it will need while its own core is busy with other work. A later call replaces an unused one."""
    if _from_heap(count):
        return
    mapped: list = []
    thread = threading.Thread(target=lambda: mapped.append(_touched(count)), name="map memory ahead", daemon=True)
    with _AHEAD_LOCK:
        _AHEAD[:] = [(count, thread, mapped)]
    thread.start()


def _touched(count: int) -> np.ndarray:
    """`count` doubles in fresh memory, each page written once. Why not MAP_POPULATE: it holds the process's
    memory-map lock until every page is in, and the other threads' allocations wait for it that long."""
    out = _mapped(count, populate=False)
    out[::mmap.PAGESIZE // 8] = 0.0
    return out


def drop_ahead() -> None:
    """The memory mapped ahead let go where no one took it (freed once its thread is done)."""
    with _AHEAD_LOCK:
        _AHEAD.clear()


def let_go(held: list, largest: int) -> None:
    """Empty `held`, a list of the last references to objects whose largest matrix has `largest` doubles: on a
    thread of its own where that matrix is fresh memory (fresh_doubles), whose unmapping costs 14 ms per 200 MB
    (4 KiB pages) and releases the interpreter's lock, so the caller goes on while another core frees it; here
    where it came from the heap (a thread's start would cost more). Where the caller still refers to one of them,
    it is freed where that reference goes, as without this."""
    if _from_heap(largest):
        held.clear()
        return
    threading.Thread(target=held.clear, name="let memory go", daemon=True).start()


def _take_ahead(count: int) -> np.ndarray | None:
    """The first `count` doubles of the memory mapped ahead (waiting for its thread), if it holds that many."""
    with _AHEAD_LOCK:
        if not _AHEAD or _AHEAD[0][0] < count:
            return None
        _, thread, mapped = _AHEAD.pop()
    thread.join()
    return mapped[0][:count] if mapped else None


def _fresh_matrix(n: int, populate: bool = True) -> np.ndarray:
    """An n x n float64 array (fresh_doubles), mapped in whole where `populate`."""
    return fresh_doubles(n * n, populate).reshape(n, n)


def fresh_doubles(count: int, populate: bool = False) -> np.ndarray:
    """`count` float64 values: from the heap up to HEAP_BYTES, else in fresh memory, mapped in whole where `populate`
    (MAP_POPULATE where the platform has it; memory mapped in ahead, map_ahead, where it is large enough). numpy asks
    large arrays for transparent huge pages, whose first use in a process waited for the kernel to compact memory:
    the first write of a large matrix (or of the compiled SMO's rows) then took several times longer
    (docs/kernel_smo.md)."""
    if count == 0 or _from_heap(count):
        return np.empty(count)
    ahead = _take_ahead(count) if populate else None
    return ahead if ahead is not None else _mapped(count, populate)


def _from_heap(count: int) -> bool:
    """Whether `count` doubles come from the heap (fresh_doubles' rule): up to HEAP_BYTES, or where there is no
    anonymous mapping."""
    return 8 * count <= HEAP_BYTES or not hasattr(mmap, "MAP_ANONYMOUS")


def _mapped(count: int, populate: bool) -> np.ndarray:
    """`count` float64 values in fresh memory, mapped in whole where `populate`."""
    populate = getattr(mmap, "MAP_POPULATE", 0) if populate else 0
    buffer = mmap.mmap(-1, 8 * count, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return np.frombuffer(buffer, dtype=np.float64)
