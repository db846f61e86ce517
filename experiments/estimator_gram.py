"""One Gram matrix per fit, each pair of classes' block cut from it (the estimator's fast one-vs-one path).

A pair (i, j) needs the kernel values among the samples of classes i and j. Over all pairs these are every
entry of the n x n matrix (the blocks (i, i) once per pair that holds class i), so the matrix is formed once,
on the samples ordered by class (stable), and a pair's block is four contiguous slices of
it. The samples are checked once, at fit; the blocks carry the kernel and the pair's samples, from which the
closing checks recompute some of the entries used (solvers.kernel_audit). A class's own block of the matrix is
audited once for the fit (solvers.kernel_audit.SpanAudit), not again by each pair that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from formulations.kernels import Kernel, gram
from solvers.algorithms.compiled_gram import rbf_gram
from solvers.algorithms.kernel_rows import FullGram, GramBlock, compiled_ok
from solvers.kernel_audit import SpanAudit


#: The fewest pairs that hold each class (classes - 1) for which a class's own block is audited once for the fit:
#: the block's every entry against what each pair would recompute of it (its rows against its support vectors of
#: that class). With 3 classes of 650 (n = 1,950, d = 20) the class audits cost more than the pairs' (51 against
#: 43 ms a fit); with 10 classes (digits) they save a third of the entries.
SHARED_AUDIT_MIN_PAIRS = 4


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
    _audits: list | None = field(default=None, repr=False)  # each class's block audited once (class_audit)

    def class_audit(self, c: int) -> SpanAudit:
        """The audit of class c's own block K[c, c], shared by the pairs that hold c (audited at its first use)."""
        if self._audits is None:
            self._audits = [SpanAudit(self.kernel, self.data, self.K, int(self.bounds[k]), int(self.bounds[k + 1]))
                            for k in range(len(self.bounds) - 1)]
        return self._audits[c]

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
        block = PairBlock(self.K, [(a.start, a.stop), (b.start, b.stop)], self.kernel, self.data, self._diagonal)
        if self.kernel.name == "rbf" and len(self.bounds) - 2 >= SHARED_AUDIT_MIN_PAIRS:  # (SpanAudit: the rbf's)
            block.audits = (self.class_audit(i), self.class_audit(j))
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


class PairBlock(GramBlock):
    """A pair's block read in place (GramBlock), whose two classes' own blocks are audited once for the fit:
    `audits`, class i's and class j's SpanAudit (the closing checks' solvers.kernel_audit.kernel_error reads the
    entries within a class from them and recomputes those between the classes).

    `data`, the pair's samples, is copied out of the fit's (`points`, in the matrix's order) at its first use, the
    closing's: the fit lets each pair's block go once the pair is fitted, so each copy reuses the memory of the one
    before, where copies cut ahead with the blocks were all held at once, in fresh memory (a page fault each 4 KiB:
    docs/benchmarks.md)."""

    audits: tuple[SpanAudit, SpanAudit] = ()

    def __init__(self, K: np.ndarray, spans, kernel, points: np.ndarray, diagonal: np.ndarray | None = None):
        super().__init__(K, spans, kernel, None, diagonal)
        self._points = points

    @property
    def data(self) -> np.ndarray:
        if self._samples is None:
            self._samples = np.concatenate([self._points[first:stop] for first, stop, _ in self._runs])
        return self._samples

    @data.setter
    def data(self, value) -> None:  # GramBlock's __init__ sets it
        self._samples = value

    def audited_spans(self) -> list[tuple[int, int, SpanAudit]]:
        """(first, stop, audit) of the block's positions of each class."""
        return [(offset, offset + stop - first, audit) for (first, stop, offset), audit in zip(self._runs, self.audits)]

    def in_place(self) -> tuple[np.ndarray, np.ndarray]:
        """(the fit's Gram matrix, the block's positions in it): the audit's compiled pass reads the entries there."""
        return self.whole, self.at

    def audit_classes(self) -> None:
        """Both classes' blocks audited now where they were not yet (the fit's SMO thread, ahead of the closing)."""
        for audit in self.audits:
            audit.found()


def _gram(kernel: Kernel, data: np.ndarray) -> np.ndarray:
    """The Gram matrix of the fit: the rbf's on dense data by row blocks on every core
    (solvers.algorithms.compiled_gram.rbf_gram: gram()'s rule, right to rounding), the others by gram()."""
    if kernel.name == "rbf" and isinstance(data, np.ndarray):
        return rbf_gram(kernel.resolved_gamma(data.shape[1]), data)
    return gram(kernel, data)
