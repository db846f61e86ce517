"""The rbf's Gram matrix formed on another core while the compiled SMO computes its rows on this one.

`BackgroundGram` works through compiled_gram.GramWork, rbf_gram's blocks, on one thread of its own (BLAS on one
thread), so the matrix is rbf_gram's to the bit. Blocks are taken one at a time, so a solve that ends before it
needs the matrix drops the work within one block, and one that needs it before it is done takes the blocks left
itself (`result`) instead of waiting: the thread runs at the lowest priority, which on a machine whose cores are
all busy keeps it from slowing the SMO it is meant to help, and leaves most of the matrix to that SMO's thread.

BLAS's thread count is process-wide (solvers.blas): it is one while the thread works. The one who starts it must
therefore do no BLAS work of its own until `result` or `drop` has joined the thread (the compiled SMO does none:
its rows are numba loops), so that neither side's BLAS runs with the other's thread count; `result`'s blocks are
taken only while the thread holds BLAS at one thread, which it does until every block is done.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from solvers import blas
from solvers.algorithms.compiled_gram import GramWork


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
    """The rbf's Gram matrix of dense X with parameter gamma, formed on a thread started at once (module docstring)."""

    def __init__(self, gamma: float, X: np.ndarray):
        self._work = GramWork(gamma, X)  # its memory faulted in as the blocks are written: it may be dropped
        self._holding_blas = threading.Event()  # BLAS is at one thread until every block is done: others may help
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._form, name="form the Gram matrix", daemon=True)
        self._thread.start()

    def _form(self) -> None:
        try:
            _yield_to_others()
            with blas.one_thread():
                self._holding_blas.set()
                self._work.work()
        except BaseException as error:  # raised again where the matrix is asked for
            self._error = error

    def result(self) -> np.ndarray:
        """The matrix: the blocks left taken on this thread too, then the thread joined; its error, if it failed."""
        work = self._work
        if work is not None and self._holding_blas.is_set():  # else its one-thread BLAS is not in force yet
            work.work()
        self._thread.join()
        if self._error is not None:
            raise self._error
        if work is None or work.matrix is None:
            raise RuntimeError("the background Gram matrix was dropped before it was asked for")
        return work.matrix

    def drop(self) -> None:
        """Stop the work (after the block in hand) and wait for the thread: the matrix is let go."""
        if self._work is not None:
            self._work.halt()
        self._thread.join()
        self._work = None
