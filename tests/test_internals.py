"""The private Pyomo internals the project relies on (formulations/internals.py) still hold, and
nothing else in the project reaches into Pyomo's or cvxpy's private names."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest

from formulations.internals import LazyExpression, MatrixRows, check_internals, plain_bounds
from formulations.model import matrix_rows

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("formulations", "solvers", "experiments")
# The private Pyomo/cvxpy names that may appear only in formulations/internals.py.
PRIVATE = re.compile(r"_LinearMatrixConstraintData|ExpressionData\.__dict__|\._compilation_time|"
                     r"\.(_domain|_lb|_ub|_fixed|_data|_prows|_jcols|_vals|_ranges|_varmap|_range_types)\b")


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
