"""A pair's closing passes made ahead on the estimator's SMO thread (PairBlock.prepare_closing,
kernel_audit.AuditAhead): the closing takes them only at exactly the point they were made for, so its verdict and
values are those it reaches alone, a wrong point is still refused, and a wrong entry of the fit's Gram matrix still
fails its pairs."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

import experiments.estimator as estimator_module
from experiments.estimator_gram import PairBlock, SharedGram
from formulations.kernels import Kernel
from solvers import kernel_audit
from solvers.algorithms import compiled_gram, smo_gram
from solvers.algorithms.smo import smo
from solvers.profiles import get_profile
from solvers.solution import OPTIMAL

TOL = get_profile("default").check_tol


def _digits(classes: int = 5) -> SharedGram:
    """The first `classes` digits' shared Gram matrix (rbf, SVC's gamma="scale"): each class's block audited once."""
    X, y = load_digits(return_X_y=True)
    keep = y < classes
    X, y = X[keep][:450], y[keep][:450]
    return SharedGram.of(Kernel("rbf", gamma=1 / (X.shape[1] * X.var())), X, np.arange(len(y)), y, classes)


def _first_alpha(block: PairBlock, signs: np.ndarray, C: float = 1.0) -> np.ndarray:
    """The alpha of smo_gram.solve's first SMO run on the block (its tolerance: smo_gram.TIGHTEN below the bar)."""
    return smo(block.row_cache(), signs, C, tol=TOL / smo_gram.TIGHTEN).alpha


@pytest.fixture
def taken(monkeypatch):
    """The AuditAhead answers kernel_error took (not None) and those it refused (None)."""
    answers = []
    real = kernel_audit.AuditAhead.answer
    monkeypatch.setattr(kernel_audit.AuditAhead, "answer",
                        lambda self, *a: answers.append(real(self, *a)) or answers[-1])
    return answers


def test_a_closing_prepared_ahead_is_the_closing_made_alone(taken):
    """Each of the ten pairs closed twice from the same SMO point, on a fresh block and on one whose K u and kernel
    audit were made ahead at that point: the same checks (every figure, to the bit), status, decision values and
    proved optimum; both passes made ahead were taken (one audit answer a pair, the K u consumed)."""
    shared = _digits()
    for i, j in [(i, j) for i in range(5) for j in range(i + 1, 5)]:
        _, signs, alone = shared.pair_in_place(i, j)
        _, _, ahead = shared.pair_in_place(i, j)
        ahead.prepare_closing(signs * _first_alpha(ahead, signs))
        assert ahead.audit_ahead is not None
        a, b = smo_gram.solve(alone, signs, 1.0), smo_gram.solve(ahead, signs, 1.0)
        assert a.status == b.status == OPTIMAL, (i, j)
        assert a.checks == b.checks, (i, j)
        np.testing.assert_array_equal(a.decision, b.decision)
        np.testing.assert_array_equal(a.proved_alpha, b.proved_alpha)
        assert a.proved_b == b.proved_b and a.b == b.b
        assert ahead._times_ahead is None, (i, j)  # K u taken by the closing
    assert len(taken) == 10 and all(answer is not None for answer in taken)


def test_a_wrong_point_is_refused_whatever_was_made_ahead(taken):
    """Pair (1, 3) at SMO's point with its largest multiplier halved: closed with the passes made ahead for the right
    point (not taken: the audit and K u recomputed) and with those made ahead for the wrong point itself (taken),
    the point is refused both times, with the same checks as a closing of it alone."""
    shared = _digits()
    _, signs, block = shared.pair_in_place(1, 3)
    alpha = _first_alpha(block, signs)
    wrong = alpha.copy()
    wrong[np.argmax(wrong)] *= 0.5
    res = smo(block.row_cache(), signs, 1.0, tol=TOL / smo_gram.TIGHTEN)
    res.alpha, res.grad = wrong, None
    prof = get_profile("default")

    def closed(prepared_at):
        _, _, fresh = shared.pair_in_place(1, 3)
        if prepared_at is not None:
            fresh.prepare_closing(signs * prepared_at)
        res.grad = np.zeros_like(wrong)  # the claimed objective only: the checks recompute K u
        return smo_gram._closed(res, fresh, signs, 1.0, prof, res.iterations, TOL, 0.0, smo_gram.NEVER)

    alone, right_ahead, wrong_ahead = closed(None), closed(alpha), closed(wrong)
    assert [answer is not None for answer in taken] == [False, True]
    assert alone.status != OPTIMAL and not alone.checks["verdict"].startswith("optimal")
    for sol in (right_ahead, wrong_ahead):
        assert sol.status == alone.status and sol.checks == alone.checks


def test_a_wrong_entry_between_classes_still_fails_its_pair_when_audited_ahead(taken):
    """One entry between classes 0 and 2 (and its mirror) 1e-3 off, the audit made ahead at SMO's point: pair (0, 2)
    is refused by the kernel audit (err_kernel past the tolerance), as without the pass made ahead."""
    shared = _digits()
    _, signs, alone = shared.pair_in_place(0, 2)
    # one end a support vector (the audit reads their columns): class 0's largest multiplier
    a = shared.bounds[0] + int(np.argmax(_first_alpha(alone, signs)[:shared.bounds[1] - shared.bounds[0]]))
    b = shared.bounds[2] + 3
    shared.K[a, b] *= 1.0 + 1e-3
    shared.K[b, a] *= 1.0 + 1e-3
    _, _, ahead = shared.pair_in_place(0, 2)
    ahead.prepare_closing(signs * _first_alpha(ahead, signs))
    first, second = smo_gram.solve(alone, signs, 1.0), smo_gram.solve(ahead, signs, 1.0)
    assert taken and taken[0] is not None
    for sol in (first, second):
        assert sol.status != OPTIMAL and sol.checks["err_kernel"] > TOL
        assert "kernel values (recomputed)" in sol.checks["verdict"]
    assert first.checks["err_kernel"] == second.checks["err_kernel"]


def test_a_fit_prepares_closings_ahead_and_keeps_the_model_to_the_bit(monkeypatch):
    """Digits (600 samples, 45 pairs) on two threads: closings' passes made ahead for some pairs, every one taken; the
    model is the one fitted on one thread (nothing ahead) to the bit."""
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    prepared, answers = [], []
    real_prepare, real_answer = PairBlock.prepare_closing, kernel_audit.AuditAhead.answer
    monkeypatch.setattr(PairBlock, "prepare_closing", lambda self, u: prepared.append(1) or real_prepare(self, u))
    monkeypatch.setattr(kernel_audit.AuditAhead, "answer",
                        lambda self, *a: answers.append(real_answer(self, *a)) or answers[-1])
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "2")
    ahead = estimator_module.SVMClassifier().fit(X, y)
    assert prepared and len(answers) == len(prepared) and all(answer is not None for answer in answers)
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "1")
    alone = estimator_module.SVMClassifier().fit(X, y)
    assert len(answers) == len(prepared)  # one thread: nothing made ahead
    np.testing.assert_array_equal(ahead.dual_coef_, alone.dual_coef_)
    np.testing.assert_array_equal(ahead.intercept_, alone.intercept_)
    assert [s.checks for s in ahead.solutions_] == [s.checks for s in alone.solutions_]


def test_a_pass_ahead_that_fails_leaves_the_closing_its_own(monkeypatch):
    """The audit made ahead raising on the SMO thread: the fit still ends, every pair closed by its own passes, with
    the model of a fit on one thread (to the bit)."""
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    calls = []

    def broken(cls, *args):
        calls.append(1)
        raise FloatingPointError("made to fail")

    monkeypatch.setattr(kernel_audit.AuditAhead, "at", classmethod(broken))
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "2")
    ahead = estimator_module.SVMClassifier().fit(X, y)
    assert calls  # the passes were tried ahead
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "1")
    alone = estimator_module.SVMClassifier().fit(X, y)
    np.testing.assert_array_equal(ahead.dual_coef_, alone.dual_coef_)
    np.testing.assert_array_equal(ahead.intercept_, alone.intercept_)
    assert [s.status for s in ahead.solutions_] == [OPTIMAL] * 45
