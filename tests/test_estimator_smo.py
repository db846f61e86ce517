"""The estimator's default path: a kernel SVM's pairs solved by SMO on blocks of one Gram matrix per fit
(experiments.estimator_gram, solvers.algorithms.smo_gram), closed by the project's checks, with a second solve
through the model layer where SMO does not settle; and the one-sort hinge interval the checks now use."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from sklearn.datasets import load_iris, load_wine, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import experiments.estimator as estimator_module
import experiments.estimator_gram as estimator_gram
from experiments.estimator import SVMClassifier
from formulations.recovery import hinge_argmin
from solvers.solution import ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE


def _wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_pairs_are_solved_by_smo_on_one_gram_matrix_and_verified(monkeypatch):
    """Default settings: one Gram matrix for the fit, every pair by SMO and verified, the same model as the Pyomo
    path's proved optima (decision values within 1e-9 of their size)."""
    X, y = _wine()
    made = []
    real_gram = estimator_gram._gram
    monkeypatch.setattr(estimator_gram, "_gram", lambda *a, **k: made.append(1) or real_gram(*a, **k))
    est = SVMClassifier(C=3.0).fit(X, y)
    assert len(made) == 1
    assert [(s.layer, s.backend, s.status) for s in est.solutions_] == [("direct", "smo", OPTIMAL)] * 3
    assert all(s.checks["verdict"] == "verified" and s.checks["kernel_entries_checked"] > 0 for s in est.solutions_)
    models = SVMClassifier(C=3.0, layer="pyomo").fit(X, y)
    f, g = est.decision_function(X), models.decision_function(X)
    np.testing.assert_allclose(f, g, rtol=0, atol=1e-9 * np.max(np.abs(g)))
    np.testing.assert_array_equal(est.support_, models.support_)


def test_a_pair_smo_does_not_settle_is_solved_again_through_the_model_layer(monkeypatch):
    """A pair whose SMO point the checks neither verify nor prove optimal goes through Pyomo (layer 'auto'),
    and its model is that solve's proved optimum, no ConvergenceWarning."""
    X, y = _wine()
    real = estimator_module.smo_gram.solve

    def unsettled(*args, **kwargs):
        sol = real(*args, **kwargs)
        sol.status, sol.proved_alpha = OPTIMAL_INACCURATE, None
        return sol

    monkeypatch.setattr(estimator_module.smo_gram, "solve", unsettled)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = SVMClassifier(C=3.0).fit(X, y)
    assert [(s.layer, s.backend, s.status) for s in est.solutions_] == [("pyomo", "piqp", OPTIMAL)] * 3
    reference = SVMClassifier(C=3.0, layer="pyomo").fit(X, y).decision_function(X)
    np.testing.assert_allclose(est.decision_function(X), reference, rtol=0, atol=1e-9 * np.max(np.abs(reference)))


def test_a_kernel_pair_past_its_budget_is_solved_by_the_solver_alone(monkeypatch):
    """Noisy moons at C = 1e3: SMO needs about 360 steps a point to finish; past KERNEL_SMO_STEPS_PER_POINT the pair
    goes to the kernel dual's solver alone (a loose SMO, then its free points' block), `optimal`, the same model as
    SMO run to the end: both are the optimum proved from one active set (decision values within 1e-9 of their size,
    the same support vectors). Below the budget (C = 1) SMO finishes the pair itself."""
    X, y = make_moons(300, noise=0.3, random_state=0)
    X = StandardScaler().fit_transform(X)
    est = SVMClassifier(C=1e3).fit(X, y)
    (sol,) = est.solutions_
    assert (sol.layer, sol.status) == ("direct", OPTIMAL) and sol.backend != "smo"
    monkeypatch.setattr(estimator_module, "KERNEL_SMO_STEPS_PER_POINT", 10**9)
    to_the_end = SVMClassifier(C=1e3).fit(X, y)
    (smo,) = to_the_end.solutions_
    assert (smo.backend, smo.status) == ("smo", OPTIMAL) and smo.iterations > 200 * len(y)
    f, g = est.decision_function(X), to_the_end.decision_function(X)
    np.testing.assert_allclose(f, g, rtol=0, atol=1e-9 * np.abs(g).max())
    np.testing.assert_array_equal(est.support_, to_the_end.support_)
    monkeypatch.undo()
    (easy,) = SVMClassifier(C=1.0).fit(X, y).solutions_
    assert (easy.backend, easy.status) == ("smo", OPTIMAL) and easy.iterations < 100 * len(y)


def test_identical_samples_share_their_alpha_whatever_their_order():
    """Identical samples of one class are interchangeable at the optimum: they hold equal shares, so the model
    (support_ by sample, dual_coef_) does not depend on the order of the samples or on the solver's path."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X, y = np.vstack([X, X[[101, 70, 70]]]), np.concatenate([y, y[[101, 70, 70]]])  # iris has 101 = 142 already
    est = SVMClassifier().fit(X, y)
    order = np.random.default_rng(0).permutation(len(y))
    shuffled = SVMClassifier().fit(X[order], y[order])
    column = {int(i): k for k, i in enumerate(est.support_)}
    for twins in ([101, 142, 150], [70, 151, 152]):
        assert all(i in column for i in twins)
        coef = est.dual_coef_[:, [column[i] for i in twins]]
        np.testing.assert_array_equal(coef, coef[:, :1].repeat(len(twins), axis=1))
    np.testing.assert_array_equal(np.sort(order[shuffled.support_]), np.sort(est.support_))
    f = est.decision_function(X)
    np.testing.assert_allclose(shuffled.decision_function(X), f, rtol=0, atol=1e-9 * np.max(np.abs(f)))


def test_max_iter_caps_the_smo_steps_as_svc():
    X, y = _wine()
    with pytest.warns(ConvergenceWarning, match=r"Solver terminated early \(max_iter=3\)"):
        est = SVMClassifier(max_iter=3).fit(X, y)
    assert est.fit_status_ == 1
    assert np.all(est.n_iter_ <= 3)
    assert all(s.status == ITERATION_LIMIT for s in est.solutions_)


def _hinge_minimisers(y, g, c):
    """The interval of b minimising sum_i c_i max(0, 1 - y_i (g_i + b)), by evaluating it at every kink (and
    one step past the outer ones: a side without points of one class is unbounded)."""
    t = np.unique(y - g)
    value = [float(c @ np.maximum(0.0, 1.0 - y * (g + b))) for b in t]
    best = min(value)
    at = np.flatnonzero(np.isclose(value, best, rtol=1e-12, atol=1e-12))
    lo, hi = float(t[at[0]]), float(t[at[-1]])
    if float(c @ np.maximum(0.0, 1.0 - y * (g + lo - 1.0))) <= best + 1e-12:
        lo = -math.inf
    if float(c @ np.maximum(0.0, 1.0 - y * (g + hi + 1.0))) <= best + 1e-12:
        hi = math.inf
    return lo, hi


@settings(max_examples=300, deadline=None)
@given(hs.lists(hs.tuples(hs.sampled_from([-1.0, 1.0]), hs.integers(-6, 6), hs.sampled_from([0.5, 1.0, 2.0])),
                min_size=1, max_size=12),
       hs.booleans())
def test_hinge_interval_is_the_set_of_minimisers(points, weighted):
    """hinge_argmin's interval (one sort, running sums) against the objective evaluated at every kink."""
    y = np.array([p[0] for p in points])
    g = np.array([p[1] / 2.0 for p in points])  # ties on purpose
    c = np.array([p[2] for p in points]) if weighted else np.ones(len(points))
    assert hinge_argmin(y, g, c if weighted else None) == _hinge_minimisers(y, g, c)


def test_a_class_without_weight_is_refused_as_on_the_model_path():
    """A class whose samples all weigh 0 leaves pairs of one class: refused with the model path's error, not
    fitted as a pair of one class on the fit's Gram matrix."""
    X, y = _wine()
    weight = np.where(y == 0, 0.0, 1.0)
    for layer in ("auto", "pyomo"):
        with pytest.raises(ValueError, match="exactly two classes"):
            SVMClassifier(layer=layer).fit(X, y, sample_weight=weight)


def test_the_pairs_smo_run_ahead_on_another_thread_gives_the_same_model_to_the_bit(monkeypatch):
    """Digits (45 pairs): each pair's first SMO run made on a second thread while the previous pair is closed is
    the run made in turn, so the fitted model is the same to the bit; SVM_THREADS=1 keeps it on one thread."""
    from sklearn.datasets import load_digits
    from solvers.algorithms import compiled_gram

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    ahead = SVMClassifier().fit(X, y)
    made = []
    real = estimator_module.SVMClassifier._smo_ahead

    def spied(self, *args):
        blocks, futures = real(self, *args)
        made.append(futures)
        return blocks, futures

    monkeypatch.setattr(estimator_module.SVMClassifier, "_smo_ahead", spied)
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "1")
    in_turn = SVMClassifier().fit(X, y)
    assert made == [None]
    np.testing.assert_array_equal(ahead.dual_coef_, in_turn.dual_coef_)
    np.testing.assert_array_equal(ahead.intercept_, in_turn.intercept_)
    np.testing.assert_array_equal(ahead.support_, in_turn.support_)
    assert [s.status for s in ahead.solutions_] == [s.status for s in in_turn.solutions_] == [OPTIMAL] * 45
    monkeypatch.setenv(compiled_gram.THREADS_ENV, "2")
    SVMClassifier().fit(X, y)
    assert made[-1] is not None and len(made[-1]) == 45


def test_a_pair_block_copies_its_samples_when_read_and_the_fit_lets_each_block_go(monkeypatch):
    """A pair's block holds no copy of its samples until one is read (then the pair's rows of X, in the block's
    order); the fit lets each pair's block go once it is fitted, so at each pair's closing at most the current
    pair's copy (and the one before, not yet collected) is held, not all 45."""
    import weakref

    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    made = []

    class Counted(estimator_gram.PairBlock):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(estimator_gram, "PairBlock", Counted)
    shared = estimator_gram.SharedGram.of(SVMClassifier()._resolved_kernel(X), X, np.arange(600), y, 10)
    rows, _, block = shared.pair_in_place(2, 7)
    assert block._samples is None
    np.testing.assert_array_equal(block.data, X[rows])

    held = []
    real = estimator_module.smo_gram.solve

    def counted(*args, **kwargs):
        held.append(sum(1 for ref in made if ref() is not None and ref()._samples is not None))
        return real(*args, **kwargs)

    monkeypatch.setattr(estimator_module.smo_gram, "solve", counted)
    made.clear()
    SVMClassifier().fit(X, y)
    assert len(made) == 45 and len(held) == 45 and max(held) <= 2


def test_the_switch_interval_is_short_while_the_smo_runs_ahead_and_put_back_after(monkeypatch):
    """While a fit's SMO runs ahead on another thread the interpreter switches threads at least every
    AHEAD_SWITCH_INTERVAL; the interval found is put back after the fit, after a failed one, and only when the last
    of two overlapping contexts ends."""
    import sys

    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    before = sys.getswitchinterval()
    seen = []
    real = estimator_module.smo_gram.solve

    def watched(*args, **kwargs):
        seen.append(sys.getswitchinterval())
        return real(*args, **kwargs)

    monkeypatch.setattr(estimator_module.smo_gram, "solve", watched)
    SVMClassifier().fit(X, y)
    assert len(seen) == 45 and max(seen) <= estimator_module.AHEAD_SWITCH_INTERVAL
    assert sys.getswitchinterval() == before

    def failing(*args, **kwargs):
        raise RuntimeError("a pair failed")

    monkeypatch.setattr(estimator_module.smo_gram, "solve", failing)
    with pytest.raises(RuntimeError, match="a pair failed"):
        SVMClassifier().fit(X, y)
    assert sys.getswitchinterval() == before

    first, second = estimator_module._short_switch_interval(), estimator_module._short_switch_interval()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert sys.getswitchinterval() <= estimator_module.AHEAD_SWITCH_INTERVAL  # the other fit still runs
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before
