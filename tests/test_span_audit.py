"""A multiclass fit's kernel audit with each class's own block audited once (solvers.kernel_audit.SpanAudit,
experiments.estimator_gram.PairBlock): a wrong within-class entry still fails every pair that uses it, the audit
of a pair gives what the per-pair audit of its copied block gives, and a class's block is recomputed once a fit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from experiments.estimator_gram import PairBlock, SharedGram
from formulations.kernels import Kernel
from formulations.recovery import classify
from solvers import kernel_audit
from solvers.algorithms import smo_gram
from solvers.algorithms.smo import smo
from solvers.profiles import get_profile
from solvers.solution import OPTIMAL

TOL = get_profile("default").check_tol


def _digits(classes: int = 5) -> SharedGram:
    """The first `classes` digits' shared Gram matrix (rbf, SVC's gamma="scale"); 5 classes: each class in 4 pairs
    (SHARED_AUDIT_MIN_PAIRS), its block audited once."""
    X, y = load_digits(return_X_y=True)
    keep = y < classes
    X, y = X[keep][:450], y[keep][:450]
    return SharedGram.of(Kernel("rbf", gamma=1 / (X.shape[1] * X.var())), X, np.arange(len(y)), y, classes)


def _pairs(classes: int):
    return [(i, j) for i in range(classes) for j in range(i + 1, classes)]


def _corrupt(shared: SharedGram, c: int, point: int, factor: float, both: bool = True) -> None:
    """Class c's within-class entries of its `point`-th sample times `factor` (the diagonal kept): its row, and
    its column where `both` (else only the row: one copy of each entry wrong)."""
    lo, hi = shared.bounds[c], shared.bounds[c + 1]
    p = lo + point
    others = np.r_[lo:p, p + 1:hi]
    shared.K[p, others] *= factor
    if both:
        shared.K[others, p] *= factor


def _audit(block, signs, C=1.0):
    """kernel_error at the SMO point of the pair (tol 1e-8) on `block`: (err_kernel, entries)."""
    alpha = smo(block.row_cache(), signs, C, tol=1e-8).alpha
    u = signs * alpha
    f = block.times(u)
    codes = classify(alpha, signs, f, C)
    return kernel_audit.kernel_error(block.kernel, block.data, block, u, signs * f - 1.0, codes,
                                     float(np.max(np.abs(f))))


@pytest.mark.parametrize("both", [True, False])
def test_a_wrong_within_class_entry_fails_every_pair_that_holds_the_class(both):
    """Class 1's entries of one sample 1e-3 off (both copies, or only its row): each of the 4 pairs holding class 1
    is refused by the kernel audit (err_kernel past the tolerance, status not optimal); the other pairs verify."""
    shared = _digits()
    _corrupt(shared, 1, 5, 1.0 + 1e-3, both)
    for i, j in _pairs(5):
        _, signs, block = shared.pair_in_place(i, j)
        assert isinstance(block, PairBlock) and len(block.audits) == 2
        sol = smo_gram.solve(block, signs, 1.0)
        if 1 in (i, j):
            assert sol.status != OPTIMAL and sol.checks["err_kernel"] > TOL, (i, j)
            assert "kernel values (recomputed)" in sol.checks["verdict"], (i, j)
        else:
            assert sol.status == OPTIMAL and sol.checks["err_kernel"] == 0.0, (i, j)


@pytest.mark.parametrize("where", ["within", "between", "nan"])
def test_the_shared_audit_is_the_pairs_own_audit(where):
    """err_kernel and the entries counted on the pair's block (class blocks audited once) against the per-pair audit
    of its copied block (every entry recomputed by the pair), to 1e-12 of each: right entries (0), a wrong
    entry within a class, one between two classes, and nan within a class (nan, never right)."""
    shared = _digits()
    lo = shared.bounds[2]
    if where == "within":
        _corrupt(shared, 2, 3, 1.0 + 1e-2)
    elif where == "between":
        other = shared.bounds[0] + 4
        shared.K[lo + 3, other] *= 1.0 + 1e-2
        shared.K[other, lo + 3] *= 1.0 + 1e-2
    else:
        _corrupt(shared, 2, 3, np.nan)
    for i, j in _pairs(5):
        _, signs, block = shared.pair_in_place(i, j)
        _, _, copy = shared.pair(i, j)
        alpha = smo(copy.K, signs, 1.0, tol=1e-8).alpha
        if where == "nan":  # SMO on a nan entry is no point: the closing's audit of a right point is what counts
            alpha = smo(np.nan_to_num(copy.K, nan=0.0), signs, 1.0, tol=1e-8).alpha
        u = signs * alpha
        f = np.nan_to_num(copy.K, nan=0.0) @ u
        codes = classify(alpha, signs, f, 1.0)
        args = (u, signs * f - 1.0, codes, float(np.max(np.abs(f))))
        shared_err, shared_entries = kernel_audit.kernel_error(block.kernel, block.data, block, *args)
        own_err, own_entries = kernel_audit.kernel_error(copy.kernel, copy.data, copy, *args)
        assert shared_entries == own_entries
        if np.isnan(own_err):
            assert np.isnan(shared_err), (i, j)
        else:
            assert shared_err == pytest.approx(own_err, rel=1e-12, abs=0), (i, j)
        if where != "between" and 2 in (i, j):
            assert not shared_err <= TOL, (i, j)  # the wrong entry reaches every pair of class 2


def test_each_class_block_is_recomputed_once_a_fit(monkeypatch):
    """Ten pairs of five classes: each class's block is recomputed by one compiled pass, five in all, however many
    pairs hold it; the pairs recompute only their entries between the classes."""
    shared = _digits()
    passes = []
    real = kernel_audit._rbf_span_excess
    monkeypatch.setattr(kernel_audit, "_rbf_span_excess", lambda K, lo, hi, *rest: passes.append((lo, hi)) or
                        real(K, lo, hi, *rest))
    for i, j in _pairs(5):
        _, signs, block = shared.pair_in_place(i, j)
        err, _ = _audit(block, signs)
        assert err == 0.0
    assert sorted(passes) == [(shared.bounds[c], shared.bounds[c + 1]) for c in range(5)]


def test_few_classes_keep_the_pairs_own_audit():
    """Three classes (each in 2 pairs, below SHARED_AUDIT_MIN_PAIRS): no class block is audited for the fit, each
    pair recomputes all its entries (a class's whole block cost more than its pairs' share of it)."""
    shared = _digits(3)
    for i, j in _pairs(3):
        _, signs, block = shared.pair_in_place(i, j)
        assert block.audits == () and block.audited_spans() == []
    assert shared._audits is None


def test_many_wrong_entries_are_all_found():
    """More wrong entries in a class's block than the compiled pass keeps: found again from the arrays, every one
    (a whole class's block scaled, its diagonal too)."""
    shared = _digits(3)
    lo, hi = shared.bounds[0], shared.bounds[1]
    shared.K[lo:hi, lo:hi] *= 1.0 + 1e-3
    rows, cols, excess = shared.class_audit(0).found()
    m = hi - lo
    assert m * m > kernel_audit.SPAN_FOUND  # past what the pass keeps
    assert rows.size == m * m and np.all(excess > 0)
    assert set(zip(rows.tolist(), cols.tolist())) == {(a, b) for a in range(m) for b in range(m)}


def test_a_fit_on_a_wrong_class_block_solves_its_pairs_again(monkeypatch):
    """Five digits (10 pairs, SMO made ahead on the second thread) with class 1's own block of the fit's Gram matrix
    1e-3 off: the four pairs that hold class 1 are refused on it and solved again from their samples through the
    model layer; the others keep SMO's verified point; the model is SVC's (the same predictions)."""
    from sklearn.svm import SVC

    from experiments.estimator import SVMClassifier

    real = SharedGram.of.__func__

    def wrong(cls, *args):
        shared = real(cls, *args)
        for point in range(shared.bounds[2] - shared.bounds[1]):
            _corrupt(shared, 1, point, 1.0 + 1e-3, both=False)
        return shared

    monkeypatch.setattr(SharedGram, "of", classmethod(wrong))
    X, y = load_digits(return_X_y=True)
    X, y = X[y < 5], y[y < 5]
    fit = SVMClassifier().fit(X, y)
    layers = [(s.layer, s.status) for s in fit.solutions_]
    assert layers == [("pyomo" if 1 in pair else "direct", OPTIMAL) for pair in _pairs(5)]
    np.testing.assert_array_equal(fit.predict(X), SVC().fit(X, y).predict(X))
