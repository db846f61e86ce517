"""Bad input to the family's members: one clear SVMInputError naming the problem, before any Gram matrix or
model is made (the Gram matrix's builder is replaced by one that fails the test if it is reached)."""

from __future__ import annotations

import numpy as np
import pytest

from formulations import kernels
from formulations.errors import SVMInputError
from solvers import family as solvers_family
from solvers.family import solve

RNG = np.random.default_rng(0)
X = RNG.normal(size=(20, 3))
LABELS = np.array([0, 1] * 10)
TARGETS = RNG.normal(size=20)


@pytest.fixture(autouse=True)
def _no_work(monkeypatch):
    """Nothing may be built for a bad input: the Gram matrix and the models' builders fail if called."""
    def refuse(*args, **kwargs):
        raise AssertionError("work was started for a bad input")

    monkeypatch.setattr(kernels, "gram", refuse)
    monkeypatch.setattr(solvers_family, "_solve_model", refuse)


def _refused(formulation, X_, y_, match, **kw):
    kw.setdefault("layer", "cvxpy")
    kw.setdefault("backend", "clarabel")
    with pytest.raises(SVMInputError, match=match) as info:
        solve(formulation, X_, y_, **kw)
    assert "\n" not in str(info.value)  # one line


@pytest.mark.parametrize("nu", [0.0, -0.1, 1.5, float("nan"), float("inf")])
@pytest.mark.parametrize("formulation,y", [("nu_svc_kernel_dual", LABELS), ("one_class_kernel_dual", None),
                                          ("nu_svr_primal", TARGETS)])
def test_nu_outside_zero_one(formulation, y, nu):
    extra = {"C": 1.0} if formulation.startswith("nu_svr") else {}
    _refused(formulation, X, y, r"nu (must be in \(0, 1\]|is NaN)", nu=nu, **extra)


def test_nu_infeasible_for_the_class_balance():
    y = np.array([0] * 16 + [1] * 4)  # 2 min(n+, n-) / n = 0.4
    _refused("nu_svc_primal", X, y, r"infeasible for this class balance.*2 \* 4 / 20 = 0.4", nu=0.45)
    _refused("nu_svc_linear_dual", X, y, "infeasible for this class balance", nu=0.41)


def test_nu_at_the_class_balance_bound_is_accepted(monkeypatch):
    """The boundary itself is feasible (every alpha at 1/l on the smaller class): the call gets past the checks."""
    y = np.array([0] * 16 + [1] * 4)
    with pytest.raises(AssertionError, match="work was started"):
        solve("nu_svc_primal", X, y, layer="cvxpy", backend="clarabel", nu=0.4)


@pytest.mark.parametrize("epsilon", [-1e-9, -3.0, float("inf"), float("nan")])
def test_epsilon_must_be_finite_and_not_negative(epsilon):
    _refused("eps_svr_kernel_dual", X, TARGETS, "epsilon", C=1.0, epsilon=epsilon)


@pytest.mark.parametrize("bad,word", [(np.nan, "NaN at row 7"), (np.inf, "infinity at row 7"),
                                      (-np.inf, "infinity at row 7")])
@pytest.mark.parametrize("formulation", ["eps_svr_primal", "nu_svr_kernel_dual"])
def test_regression_targets_with_nan_or_inf(formulation, bad, word):
    y = TARGETS.copy()
    y[7] = bad
    params = {"C": 1.0, "epsilon": 0.1} if formulation.startswith("eps") else {"C": 1.0, "nu": 0.5}
    _refused(formulation, X, y, f"regression targets y contain {word}", **params)


def test_regression_targets_must_be_numbers_one_per_row():
    _refused("eps_svr_primal", X, np.array(["a"] * 20), "must be real numbers", C=1.0, epsilon=0.1)
    _refused("eps_svr_primal", X, TARGETS[:19], "20 rows but y has 19", C=1.0, epsilon=0.1)


def test_one_class_set_with_one_point():
    _refused("one_class_kernel_dual", X[:1], None, "at least 2 points, got 1", nu=0.5)
    _refused("one_class_primal", X[:1], None, "at least 2 points, got 1", nu=0.5)


def test_one_class_takes_no_labels():
    _refused("one_class_kernel_dual", X, LABELS, "takes no y", nu=0.5)


def test_a_parameter_the_member_does_not_take():
    _refused("nu_svc_kernel_dual", X, LABELS, "nu_svc takes nu, not C", nu=0.5, C=1.0)
    _refused("eps_svr_primal", X, TARGETS, "eps_svr takes C, epsilon, not nu", C=1.0, epsilon=0.1, nu=0.5)


def test_a_missing_parameter_and_a_bad_C():
    _refused("eps_svr_primal", X, TARGETS, "epsilon is missing", C=1.0)
    _refused("nu_svr_primal", X, TARGETS, "C", C=-1.0, nu=0.5)


def test_a_kernel_for_a_linear_formulation_and_an_unknown_name():
    _refused("nu_svc_primal", X, LABELS, "kernel duals", nu=0.5, kernel="rbf")
    _refused("nu_svc_dual", X, LABELS, "unknown family formulation", nu=0.5)


def test_nan_in_X_names_the_cell():
    Xb = X.copy()
    Xb[3, 1] = np.nan
    _refused("one_class_kernel_dual", Xb, None, "row 3, column 1", nu=0.5)


def test_memory_budget_refuses_the_regressions_paired_gram_before_it_is_made():
    """alpha and alpha* make a 2n x 2n form: 4 times the Gram matrix's bytes."""
    from formulations.errors import MemoryBudgetError

    with pytest.raises(MemoryBudgetError, match="Gram matrix"):
        solve("eps_svr_kernel_dual", X, TARGETS, layer="cvxpy", backend="clarabel", C=1.0, epsilon=0.1,
              memory_budget=1e3)


def test_the_c_svm_entry_point_names_the_familys():
    from solvers.api import solve as solve_c_svm

    with pytest.raises(SVMInputError, match=r"member of the SVM family: solve it with solvers.family.solve"):
        solve_c_svm("nu_svc_kernel_dual", X, LABELS, layer="cvxpy", backend="clarabel")


def test_a_bad_precomputed_K_is_named():
    _refused("one_class_kernel_dual", None, None, "must be square, got shape", K=np.ones((3, 4)), nu=0.5)
    K = np.eye(20)
    K[0, 1] = 0.5  # not symmetric
    _refused("eps_svr_kernel_dual", None, TARGETS, "symmetric", K=K, C=1.0, epsilon=0.1)
    _refused("nu_svc_kernel_dual", None, LABELS[:10], "20 x 20 but y has 10 labels", K=np.eye(20), nu=0.5)
