"""The rbf's Gram matrix formed on another core while the compiled SMO computes its rows on this one.

`BackgroundGram` runs compiled_gram.rbf_gram on one thread of its own (BLAS on one thread), so the matrix is
rbf_gram's to the bit. rbf_gram looks at the stop flag between row blocks, so a solve that ends before it needs
the matrix drops the work within one block. The thread runs at the lowest priority: on a machine whose cores are
all busy it does not slow the SMO it is meant to help.

BLAS's thread count is process-wide (solvers.blas): it is one while the thread runs. The one who starts it must
therefore do no BLAS work of its own until `result` or `drop` has joined the thread (the compiled SMO does none:
its rows are numba loops), so that neither side's BLAS runs with the other's thread count.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from formulations.data_matrix import one_type
from solvers.algorithms.compiled_gram import rbf_gram


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
        self._stop = threading.Event()
        self._matrix: np.ndarray | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._form, args=(float(gamma), one_type(X)),
                                        name="form the Gram matrix", daemon=True)
        self._thread.start()

    def _form(self, gamma: float, X: np.ndarray) -> None:
        try:
            _yield_to_others()
            self._matrix = rbf_gram(gamma, X, threads=1, stop=self._stop)
        except BaseException as error:  # raised again where the matrix is asked for
            self._error = error

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
