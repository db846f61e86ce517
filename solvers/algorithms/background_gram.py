"""The rbf's Gram matrix formed on another core while the compiled SMO computes its rows on this one.

`BackgroundGram` does compiled_gram.rbf_gram's work (the lower triangle by blocks of GRAM_ROWS rows, the longest
first, then the mirror) on one thread of its own with BLAS on one thread: every entry is made by the same operations
as rbf_gram's, so the matrix is the same to the bit. It looks at its stop flag between row blocks, so a solve that
ends before it needs the matrix drops the work within one block. The thread runs at the lowest priority: on a
machine whose cores are all busy it does not slow the SMO it is meant to help.

BLAS's thread count is process-wide (solvers.blas): it is one while the thread runs. The one who starts it must
therefore do no BLAS work of its own until `result` or `drop` has joined the thread (the compiled SMO does none:
its rows are numba loops), so that neither side's BLAS runs with the other's thread count.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from formulations.data_matrix import one_type
from formulations.kernels import Points, RbfRows
from solvers import blas
from solvers.algorithms.compiled_gram import GRAM_ROWS, fresh_doubles


#: The background thread's niceness: on a machine whose cores are all busy it takes the time others leave (the SMO
#: beside it among them), on one with an idle core it has that core.
NICENESS = 19


def _yield_to_others() -> None:
    """This thread at NICENESS where the platform sets a thread's own priority (Linux: a thread is a process to
    setpriority); as it is elsewhere."""
    native = getattr(threading, "get_native_id", None)
    if native is None or not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, native(), NICENESS)
    except OSError:  # a sandbox that refuses it: the work is the same, only less polite
        pass


class BackgroundGram:
    """The rbf's Gram matrix of dense X with parameter gamma, formed on a thread started at once (module docstring).

    gate: an event the thread waits for before its first block (None: none); for tests that make the matrix arrive
    late, after the solve has reached the point where it needs it."""

    def __init__(self, gamma: float, X: np.ndarray, gate: threading.Event | None = None):
        self._stop = threading.Event()
        self._matrix: np.ndarray | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._form, args=(float(gamma), one_type(X), gate),
                                        name="form the Gram matrix", daemon=True)
        self._thread.start()

    def _form(self, gamma: float, X: np.ndarray, gate: threading.Event | None) -> None:
        try:
            _yield_to_others()
            while gate is not None and not gate.wait(0.01):  # a test's late matrix; still droppable meanwhile
                if self._stop.is_set():
                    return
            n = X.shape[0]
            points = Points.of(X)
            # pages faulted in by the blocks as they are written, on this thread (no populated mapping up front)
            rows = RbfRows(gamma, points, points, fresh_doubles(n * n).reshape(n, n))
            blocks = range(0, n, GRAM_ROWS)
            with blas.one_thread():
                for lo in reversed(blocks):  # rbf_gram's order: the longest rows first
                    if self._stop.is_set():
                        return
                    rows.fill(lo, lo + GRAM_ROWS)
            for lo in blocks:
                if self._stop.is_set():
                    return
                rows.mirror(lo, lo + GRAM_ROWS)
            self._matrix = rows.out
        except BaseException as error:  # raised again where the matrix is asked for
            self._error = error

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def ready(self) -> bool:
        """Whether the matrix is formed (the thread has ended without being stopped)."""
        return not self._thread.is_alive() and self._matrix is not None

    def result(self) -> np.ndarray:
        """The matrix, waiting for the thread if it is not done; its error, if it failed."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._matrix is None:
            raise RuntimeError("the background Gram matrix was dropped before it was asked for")
        return self._matrix

    def drop(self) -> None:
        """Stop the work (after the block in hand) and wait for the thread: the matrix is let go."""
        self._stop.set()
        self._thread.join()
        self._matrix = None
