"""A pair's block read in place from the fit's Gram matrix (solvers.algorithms.kernel_rows.GramBlock) answers what
the copied block (FullGram) answers, and a pair solved and closed on it gets the same status, verdict, b and
residuals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from experiments.estimator_gram import SharedGram
from formulations.kernels import Kernel
from solvers.algorithms import smo_gram
from solvers.algorithms.compiled_gram import abs_combination, combination
from solvers.algorithms.kernel_rows import FullGram, GramBlock
from solvers.algorithms.smo import smo
from solvers.closing import close
from solvers.deadline import NEVER
from solvers.profiles import get_profile
from solvers.solution import OPTIMAL, Solution


def _shared(seed: int, classes: int = 4):
    """A random multiclass problem's shared Gram matrix (classes of unequal sizes, shuffled in y)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 60, size=classes)
    y = rng.permutation(np.repeat(np.arange(classes), sizes))
    X = rng.normal(size=(y.size, int(rng.integers(1, 9)))) * 10.0 ** rng.uniform(-2, 2)
    X += np.arange(classes)[y][:, None] * rng.uniform(0, 2)  # classes apart, not always separable
    kernel = Kernel("rbf", gamma=float(10.0 ** rng.uniform(-1, 0.5)) / (X.shape[1] * X.var()))
    return SharedGram.of(kernel, X, np.arange(y.size), y, classes), rng


def _by_rows(self, u):
    """FullGram.times through the rows of u's nonzeros whatever their number (GramBlock's way)."""
    nz = np.flatnonzero(u)
    return combination(self.K, nz, u[nz])


@pytest.mark.parametrize("seed", range(6))
def test_the_block_answers_what_the_copied_block_answers(seed):
    """Entries, rows, diagonal and the combinations of rows to the bit; K u, and sum_j |K_ij u_j| (the copy's is one
    product K |u|: an rbf's K >= 0), as the copy's products to rounding."""
    shared, rng = _shared(seed)
    for i, j in [(0, 1), (0, 3), (1, 2), (2, 3)]:
        rows, signs, block = shared.pair_in_place(i, j)
        rows_copy, signs_copy, copy = shared.pair(i, j)
        assert isinstance(block, GramBlock) and np.array_equal(rows, rows_copy)
        assert np.array_equal(signs, signs_copy) and np.array_equal(block.data, copy.data)
        n = block.n
        I, J = rng.choice(n, size=rng.integers(1, n), replace=False), rng.choice(n, size=rng.integers(1, n))
        assert np.array_equal(block.submatrix(I, J), copy.K[np.ix_(I, J)])
        assert np.array_equal(block.rows(I), copy.K[I])
        assert np.array_equal(block.columns(J), copy.K[:, J])
        assert np.array_equal(block.diagonal(), np.diag(copy.K)) and block.max_diagonal() == copy.max_diagonal()
        u = np.where(rng.random(n) < 0.3, rng.normal(size=n), 0.0)
        assert np.all(np.abs(block.magnitudes(u) - copy.magnitudes(u)) <= 1e-13 * copy.magnitudes(u))
        assert np.array_equal(block.times(u), _by_rows(copy, u))
        nz = np.flatnonzero(u)
        assert np.array_equal(block.magnitudes(u), abs_combination(copy.K, nz, u[nz]))  # the rows' sums, to the bit
        assert np.array_equal(block.combination(I, u[I]), copy.combination(I, u[I]))
        dense = rng.normal(size=n)
        assert np.all(np.abs(block.times(dense) - copy.times(dense)) <= 1e-14 * copy.magnitudes(dense))


def test_smo_on_the_block_is_smo_on_the_copy():
    """The same steps: alpha, the gradient and the step count to the bit."""
    for seed in range(4):
        shared, _ = _shared(seed)
        for i, j in [(0, 2), (1, 3)]:
            _, signs, block = shared.pair_in_place(i, j)
            _, _, copy = shared.pair(i, j)
            for C in (0.1, 10.0):
                a, b = smo(block.row_cache(), signs, C, tol=1e-6), smo(copy.K, signs, C, tol=1e-6)
                assert np.array_equal(a.alpha, b.alpha) and np.array_equal(a.grad, b.grad)
                assert a.iterations == b.iterations


def _closing(source, signs, C, alpha, b_shift):
    """alpha closed on `source` as smo_gram closes it; b_shift: b handed in moved by this much from the one the
    copy's recovery finds (0: b recovered)."""
    u = signs * alpha
    objective = float(alpha.sum() - 0.5 * u @ source.times(u))  # the claim: D(alpha)
    sol = Solution(formulation="kernel_dual", layer="direct", backend="smo", status=OPTIMAL, solver_status=OPTIMAL,
                   raw_status="", objective=objective, profile="default", extras={"psd": True})
    values = {"alpha": alpha}
    if b_shift:
        values["claimed_b"] = b_shift
    return close(sol, values, X=np.zeros((signs.size, 0)), y=signs, C=C, K=source, profile=get_profile("default"),
                 deadline=NEVER)


def _same_closing(a, b):
    assert a.status == b.status and a.checks["verdict"] == b.checks["verdict"]
    assert a.b == pytest.approx(b.b, rel=1e-12, abs=0)
    for key, value in b.checks.items():
        if isinstance(value, float):
            assert a.checks[key] == pytest.approx(value, rel=1e-12, abs=0, nan_ok=True), key
        else:
            assert a.checks[key] == value, key


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return SharedGram.of(Kernel("rbf", gamma=1 / (X.shape[1] * X.var())), X, np.arange(len(y)), y, 10)


@pytest.mark.parametrize("perturb", ["none", "alpha", "b"])
def test_a_closing_on_the_block_is_the_closing_on_the_copy(digits, monkeypatch, perturb):
    """Right points of random problems and of digits pairs, alpha moved by 1e-3 of itself, and b moved: the same
    status, verdict, b and every residual as on the copied block whose K u is taken through the same rows (to
    1e-12 of each)."""
    monkeypatch.setattr(FullGram, "times", _by_rows)
    rng = np.random.default_rng(7)
    cases = [(digits, (i, j)) for i, j in [(0, 1), (3, 8), (1, 7), (5, 9)]]
    cases += [(_shared(seed)[0], (0, 2)) for seed in range(10, 22)]
    statuses = set()
    for shared, (i, j) in cases:
        _, signs, block = shared.pair_in_place(i, j)
        _, _, copy = shared.pair(i, j)
        C = float(10.0 ** rng.uniform(-1, 2))
        alpha = smo(copy.K, signs, C, tol=1e-8).alpha
        shift = 0.0
        if perturb == "alpha":
            alpha = np.clip(alpha * (1 + 1e-3 * rng.normal(size=alpha.size)), 0.0, C)
        elif perturb == "b":
            shift = _closing(copy, signs, C, alpha, 0.0).b + 1e-3 * rng.choice([-1.0, 1.0])
        a, b = _closing(block, signs, C, alpha, shift), _closing(copy, signs, C, alpha, shift)
        _same_closing(a, b)
        statuses.add(b.status)
    assert statuses == ({"optimal"} if perturb == "none" else {"optimal_inaccurate"})


def test_the_estimators_pairs_solve_as_on_the_copies(digits):
    """smo_gram on the block against the copy (its own K u): the same status and verdict, b to 1e-12 of itself."""
    for i, j in [(0, 1), (2, 7), (4, 6)]:
        _, signs, block = digits.pair_in_place(i, j)
        _, _, copy = digits.pair(i, j)
        a, b = smo_gram.solve(block, signs, 1.0), smo_gram.solve(copy, signs, 1.0)
        assert a.status == b.status == "optimal" and a.checks["verdict"] == b.checks["verdict"]
        assert a.iterations == b.iterations and np.array_equal(a.alpha, b.alpha)
        assert a.b == pytest.approx(b.b, rel=1e-12, abs=0)


def test_a_diagonal_handed_to_the_rows_is_checked():
    """RowCache.full takes the variables' K_ii from its caller (the block's, from the fit's diagonal read once):
    the one it reads itself, and a wrong shape is one clear error."""
    from solvers.algorithms.smo import RowCache

    shared, _ = _shared(1)
    _, _, block = shared.pair_in_place(0, 2)
    rows = block.row_cache()
    assert np.array_equal(rows.diag, np.diag(shared.K)[block.at])
    assert np.array_equal(rows.diag, RowCache.full(shared.K, index=block.at).diag)
    with pytest.raises(ValueError, match="diag"):
        RowCache.full(shared.K, index=block.at, diag=np.ones(block.n + 1))
