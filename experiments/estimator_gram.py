"""One Gram matrix per fit, each pair of classes' block cut from it (the estimator's fast one-vs-one path).

A pair (i, j) needs the kernel values among the samples of classes i and j. Over all pairs these are every
entry of the n x n matrix (the blocks (i, i) once per pair that holds class i), so the matrix is formed once,
on the samples ordered by class (stable), and a pair's block is four contiguous slices of
it. The samples are checked once, at fit; the blocks carry the kernel and the pair's samples, from which the
closing checks recompute some of the entries used (solvers.kernel_audit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from formulations.kernels import Kernel, gram
from solvers.algorithms.compiled_gram import rbf_gram
from solvers.algorithms.kernel_rows import FullGram, GramBlock, compiled_ok


@dataclass
class SharedGram:
    """The Gram matrix of X[order] (the kept samples ordered by class); class c holds positions bounds[c] to
    bounds[c + 1]."""

    kernel: Kernel
    data: np.ndarray  # X[order]
    K: np.ndarray
    order: np.ndarray  # rows of the training set, by class
    bounds: np.ndarray
    _diagonal: np.ndarray | None = field(default=None, repr=False)  # K's, read once (pair_in_place)

    @classmethod
    def of(cls, kernel: Kernel, X: np.ndarray, kept: np.ndarray, y_index: np.ndarray, n_classes: int) -> SharedGram:
        """The Gram matrix of X[kept] for `kernel` (y_index: the class of each sample of X)."""
        order = kept[np.argsort(y_index[kept], kind="stable")]
        data = np.ascontiguousarray(X[order])
        bounds = np.searchsorted(y_index[order], np.arange(n_classes + 1))
        return cls(kernel, data, _gram(kernel, data), order, bounds)

    def pair_in_place(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, GramBlock]:
        """pair's rows and labels, and the pair's block read in place from the fit's matrix (GramBlock: no copy;
        the fit's SMO and closing checks read only the rows they use). Two classes: pair's, the whole matrix as it
        is (its rows used in place by SMO, where a block's are gathered)."""
        if self.bounds[j + 1] - self.bounds[j] + self.bounds[i + 1] - self.bounds[i] == len(self.order) or not (
                compiled_ok(self.K)):
            return self.pair(i, j)
        a, b = slice(self.bounds[i], self.bounds[i + 1]), slice(self.bounds[j], self.bounds[j + 1])
        if self._diagonal is None:  # read once for every pair
            self._diagonal = np.diag(self.K).copy()
        block = GramBlock(self.K, [(a.start, a.stop), (b.start, b.stop)], self.kernel,
                          np.concatenate([self.data[a], self.data[b]]), self._diagonal)
        signs = np.ones(block.n)
        signs[:a.stop - a.start] = -1.0
        return np.concatenate([self.order[a], self.order[b]]), signs, block

    def _positions(self, i: int, j: int) -> np.ndarray:
        """The pair's positions in the matrix: class i's, then class j's."""
        return np.concatenate([np.arange(self.bounds[i], self.bounds[i + 1]),
                               np.arange(self.bounds[j], self.bounds[j + 1])])

    def pair(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, FullGram]:
        """(rows of the training set, their labels: -1 for class i and +1 for class j, the pair's Gram block with its
        kernel and samples)."""
        a, b = slice(self.bounds[i], self.bounds[i + 1]), slice(self.bounds[j], self.bounds[j + 1])
        m = a.stop - a.start
        size = m + b.stop - b.start
        if size == len(self.order):  # two classes: the whole matrix, not a copy of it
            block = self.K
        else:
            block = np.empty((size, size))
            block[:m, :m] = self.K[a, a]
            block[:m, m:] = self.K[a, b]
            block[m:, :m] = self.K[b, a]
            block[m:, m:] = self.K[b, b]
        at = self._positions(i, j)
        signs = np.ones(size)
        signs[:m] = -1.0
        return self.order[at], signs, FullGram(block, self.kernel, self.data[at])


def _gram(kernel: Kernel, data: np.ndarray) -> np.ndarray:
    """The Gram matrix of the fit: the rbf's on dense data by row blocks on every core
    (solvers.algorithms.compiled_gram.rbf_gram: gram()'s rule, right to rounding), the others by gram()."""
    if kernel.name == "rbf" and isinstance(data, np.ndarray):
        return rbf_gram(kernel.resolved_gamma(data.shape[1]), data)
    return gram(kernel, data)
