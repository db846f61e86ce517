"""The private internals the project relies on (formulations/internals.py) still hold: Pyomo's names, and
where qpsolvers and cvxpy issue the warnings that only say how a solve ended; nothing else in the project
reaches into Pyomo's or cvxpy's private names or tells those warnings apart by file or text."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest

from formulations.internals import LazyExpression, MatrixRows, check_internals, is_status_warning, plain_bounds
from formulations.model import matrix_rows

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("formulations", "solvers", "experiments")
# The private Pyomo/cvxpy names that may appear only in formulations/internals.py.
# Also the ways to tell a solver's status warning by its file or text (is_status_warning).
PRIVATE = re.compile(r"_LinearMatrixConstraintData|ExpressionData\.__dict__|\._compilation_time|"
                     r"\.(_domain|_lb|_ub|_fixed|_data|_prows|_jcols|_vals|_ranges|_varmap|_range_types)\b|"
                     r"\.filename\)\.parts|startswith\([\"']Solution may be inaccurate|message=[\"']The default value of")


def test_the_internals_still_hold():
    problems = check_internals()
    assert not problems, ("Pyomo changed an internal that formulations/internals.py relies on "
                          "(update it, or pin Pyomo below this version in pyproject.toml):\n- " + "\n- ".join(problems))


def test_no_private_internal_outside_the_internals_module():
    offenders = []
    for folder in PROJECT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "internals.py" and path.parent.name == "formulations":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if PRIVATE.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "private Pyomo/cvxpy internals outside formulations/internals.py:\n" + "\n".join(offenders)


def test_matrix_rows_read_back_as_pyomo_constraints():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), bounds=(0.0, None))
    M = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    m.rows = matrix_rows(M, m.x, lower=np.array([1.0, -np.inf]), upper=np.array([np.inf, 4.0]))
    assert isinstance(m.rows, MatrixRows)
    first, second = m.rows.rows()
    assert str(first.body) == "x[0] + 2.0*x[2]" and first.lower == 1.0 and first.upper is None
    assert str(second.body) == "3.0*x[1]" and second.upper == 4.0
    m.x[0], m.x[1], m.x[2] = 1.0, 1.0, 2.0
    assert pyo.value(first.body) == pytest.approx(5.0)


class _Twice(LazyExpression):
    def __init__(self, var, **kwds):
        self.var, self.builds = var, 0
        super().__init__(**kwds)

    def build_expression(self):
        self.builds += 1
        return 2 * self.var


def test_a_lazy_expression_is_built_once_on_first_read_and_can_be_replaced():
    m = pyo.ConcreteModel()
    m.v = pyo.Var(initialize=3.0)
    m.e = _Twice(m.v)
    assert m.e.builds == 0
    assert pyo.value(m.e) == pytest.approx(6.0) and pyo.value(m.e) == pytest.approx(6.0)
    assert m.e.builds == 1 and not m.e.replaced
    m.e.zeroed = True
    assert pyo.value(m.e) == 0.0
    m.e.zeroed = False
    m.e.set_value(5 * m.v)
    assert m.e.replaced and pyo.value(m.e) == pytest.approx(15.0)


def test_plain_bounds_are_the_given_ones():
    m = pyo.ConcreteModel()
    m.p = pyo.Param(initialize=2.0, mutable=True)
    m.x = pyo.Var(range(2), bounds=(0.0, 1.5))
    m.y = pyo.Var(bounds=(None, m.p))
    lo, hi = plain_bounds([m.x[0], m.x[1], m.y])
    assert lo == [0.0, 0.0, None] and hi[:2] == [1.5, 1.5] and pyo.value(hi[2]) == 2.0


def _caught(call) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("solver", ["osqp", "clarabel", "scs"])
def test_qpsolvers_status_warnings_are_recognised(solver):
    """qpsolvers warns an infeasible end from its solver module: is_status_warning knows it by that folder."""
    from qpsolvers import Problem, solve_problem
    from scipy import sparse

    # x0 <= -1 and x0 >= 1: infeasible, so every solver ends with a status qpsolvers warns about
    problem = Problem(sparse.eye(2, format="csc"), np.ones(2), sparse.csc_matrix([[1.0, 0.0], [-1.0, 0.0]]),
                      np.array([-1.0, -1.0]))
    caught = _caught(lambda: solve_problem(problem, solver=solver))
    assert caught, f"qpsolvers no longer warns {solver}'s end status"
    assert all(is_status_warning(w) for w in caught), [(str(w.message), w.filename) for w in caught]


def test_cvxpy_inaccurate_warning_is_recognised():
    """cvxpy's warning at optimal_inaccurate points at the caller's line: is_status_warning knows its text."""
    import cvxpy as cp

    x = cp.Variable(2)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x - np.array([1.0, 2.0]))), [x >= 0, cp.sum(x) <= 1])
    caught = _caught(lambda: problem.solve(solver="SCS", max_iters=2))
    assert problem.status == "optimal_inaccurate" and caught
    assert all(is_status_warning(w) for w in caught), [str(w.message) for w in caught]


def test_other_warnings_are_not_status_warnings():
    caught = _caught(lambda: warnings.warn("OSQP exited with status 'solved'", UserWarning))
    assert len(caught) == 1 and not is_status_warning(caught[0])
    caught = _caught(lambda: warnings.warn("Solution may be inaccurate.", RuntimeWarning))
    assert caught == []  # not a UserWarning at all
