"""The Pyomo standard-form bridge: Ipopt (cyipopt) and qpsolvers behind Pyomo models.

Primal values and multipliers must match what Pyomo's own HiGHS interface loads
into the same models; models outside the QP class must be refused.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest

import formulations
from experiments.datasets import example_5_1, exercise_5_4, exercise_5_5
from formulations.kernels import Kernel, gram
from solvers.solution import ERROR, ITERATION_LIMIT, OPTIMAL
from solvers.errors import UnsupportedModelError
from solvers.profiles import backend_options
from solvers.bridge.pyomo_standard_form import from_pyomo
from solvers.registry import BACKENDS, availability
from tests.conftest import installed, skip_unless_available

PYOMO_BRIDGED = [name for (layer, name) in BACKENDS if layer == "pyomo" and name != "highs"]


def _models():
    ds4, ds5 = exercise_5_4(), exercise_5_5()
    K = gram(Kernel("rbf", gamma=1.0), ds5.X)
    yield "soft_primal", lambda: formulations.build("soft_primal", "pyomo", X=ds4.X, y=ds4.y, C=10.0)
    yield "dual", lambda: formulations.build("dual", "pyomo", X=ds4.X, y=ds4.y, C=10.0)
    yield "hard_primal", lambda: formulations.build("hard_primal", "pyomo", X=example_5_1().X, y=example_5_1().y)
    yield "kernel_dual", lambda: formulations.build("kernel_dual", "pyomo", K=K, y=ds5.y, C=1.0)


def _solve(model, backend):
    adapter = BACKENDS[("pyomo", backend)]
    return adapter.solve(model, backend_options(backend, "high"))


def _snapshot(model):
    values = {v.name: v.value for v in model.component_data_objects(pyo.Var)}
    duals = {c.name: model.dual[c] for c in model.component_data_objects(pyo.Constraint) if c in model.dual}
    return values, duals


@pytest.mark.parametrize("backend", PYOMO_BRIDGED)
@pytest.mark.parametrize("name,make", list(_models()), ids=[n for n, _ in _models()])
def test_bridge_matches_pyomo_highs(backend, name, make):
    skip_unless_available("pyomo", backend)
    ref_model, model = make(), make()
    assert _solve(ref_model, "highs").status == OPTIMAL
    raw = _solve(model, backend)
    assert raw.status == OPTIMAL, raw.raw_status
    ref_values, ref_duals = _snapshot(ref_model)
    values, duals = _snapshot(model)
    assert set(duals) == set(ref_duals) and duals
    scale = max(1.0, max(abs(v) for v in ref_duals.values()))
    for key, ref in ref_values.items():
        assert values[key] == pytest.approx(ref, abs=2e-4 * max(1.0, abs(ref))), key
    for key, ref in ref_duals.items():
        # HiGHS stops at 1e-9 feasibility: multipliers agree to about 1e-4 of their scale
        assert duals[key] == pytest.approx(ref, abs=2e-4 * scale), key


def test_standard_form_of_a_ranged_maximisation():
    """max -(x0-3)^2 - x1^2 - y^2 + 1  s.t.  -1 <= x0 - y <= 3,  x0 + x1 = 2,  0 <= x <= 4.

    The optimum is x = (2, 0), y = 0 (x1 sits on its bound); the ranged row is slack
    (dual 0) and raising the rhs of x0 + x1 = 2 by t gives -(t - 1)^2, so its dual is 2.
    """
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1], bounds=(0, 4))
    m.y = pyo.Var()
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    m.r = pyo.Constraint(expr=pyo.inequality(-1, m.x[0] - m.y, 3))
    m.e = pyo.Constraint(expr=m.x[0] + m.x[1] == 2)
    m.obj = pyo.Objective(expr=-((m.x[0] - 3) ** 2) - m.x[1] ** 2 - m.y**2 + 1, sense=pyo.maximize)
    qp = from_pyomo(m)
    assert qp.sense == -1 and qp.A.shape == (1, 3) and qp.G.shape == (2, 3)
    np.testing.assert_allclose(qp.P.diagonal(), [2.0, 2.0, 2.0])
    assert qp.c0 == pytest.approx(8.0)  # the constant -9 + 1 of the maximisation, negated
    for backend in ("highs", "ipopt", "clarabel", "piqp"):
        if not availability("pyomo", backend)[0] and not installed(backend):
            continue  # not installed here; installed but unusable fails below, naming why
        raw = BACKENDS[("pyomo", backend)].solve(m, backend_options(backend, "high"))
        assert raw.status == OPTIMAL
        assert raw.objective == pytest.approx(0.0, abs=1e-7)  # -(2 - 3)^2 + 1
        assert pyo.value(m.x[0]) == pytest.approx(2.0, abs=1e-6)
        assert m.dual[m.e] == pytest.approx(2.0, abs=1e-5), backend
        assert m.dual[m.r] == pytest.approx(0.0, abs=1e-5), backend


def _column_order(qp, var):
    """The QP's column of each member of an indexed variable (by identity: Pyomo's == builds an expression)."""
    where = {id(v): k for k, v in enumerate(qp.columns)}
    return [where[id(v)] for v in var.values()]


def test_linear_terms_next_to_a_quadratic_form_are_read_exactly():
    """The objective of a working-set block, p'x + 1/2 x'Qx with p from an array (one number-times-variable
    term each, read in one pass), next to terms the one-pass read must leave to the general path:
    a mutable Param coefficient, a fixed variable (a constant), an integer coefficient."""
    from formulations.model import linear_sum
    from formulations.quadratic_form import QuadraticForm

    p = np.array([1.5, -2.0, 0.25, 3.0])
    Q = np.array([[2.0, 0.5, 0.0, 0.0], [0.5, 1.0, 0.0, 0.0], [0.0, 0.0, 3.0, 1.0], [0.0, 0.0, 1.0, 4.0]])
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4), bounds=(0, 1))
    m.z = pyo.Var(initialize=2.0)
    m.z.fix()
    m.c = pyo.Param(initialize=7.0, mutable=True)
    m.quad = QuadraticForm(Q, m.x)
    m.obj = pyo.Objective(expr=linear_sum(p, m.x) + 0.5 * m.quad + m.c * m.x[0] + 3 * m.x[3] + 5.0 * m.z)
    qp = from_pyomo(m)
    assert qp.sense == 1 and qp.n == 4
    order = _column_order(qp, m.x)
    np.testing.assert_allclose(qp.q[order], p + [7.0, 0.0, 0.0, 3.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(qp.P.toarray()[np.ix_(order, order)], Q, rtol=0, atol=1e-15)
    assert qp.c0 == pytest.approx(10.0, rel=1e-15)  # 5 z with z fixed at 2
    m.obj.deactivate()
    m.obj2 = pyo.Objective(expr=linear_sum(p, m.x) + m.x[1] * m.x[2])  # a product of variables: general path
    qp2 = from_pyomo(m)
    order2 = _column_order(qp2, m.x)
    np.testing.assert_allclose(qp2.q[order2], p, rtol=0, atol=1e-15)
    assert qp2.P.toarray()[order2[1], order2[2]] == pytest.approx(1.0, rel=1e-15)


def test_bridge_refuses_nonlinear_constraints_and_objectives():
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1])
    m.c = pyo.Constraint(expr=m.x[0] ** 2 + m.x[1] >= 1)
    m.obj = pyo.Objective(expr=m.x[0] ** 2)
    with pytest.raises(UnsupportedModelError, match="linear constraints"):
        from_pyomo(m)
    m.c.deactivate()
    m.obj.deactivate()
    m.obj2 = pyo.Objective(expr=pyo.exp(m.x[0]))
    with pytest.raises(UnsupportedModelError, match="not quadratic"):
        from_pyomo(m)
    m.obj2.deactivate()
    m.obj3 = pyo.Objective(expr=m.x[0] ** 4)
    with pytest.raises(UnsupportedModelError, match="not quadratic"):
        from_pyomo(m)
    m.obj3.deactivate()
    m.z = pyo.Var(domain=pyo.Integers)
    m.obj4 = pyo.Objective(expr=m.z**2)
    with pytest.raises(UnsupportedModelError, match="not continuous"):
        from_pyomo(m)


def test_ipopt_iteration_cap_is_not_called_optimal():
    skip_unless_available("pyomo", "ipopt")
    ds = exercise_5_4()
    model = formulations.build("soft_primal", "pyomo", X=ds.X, y=ds.y, C=10.0)
    raw = BACKENDS[("pyomo", "ipopt")].solve(model, {"max_iter": 2})
    assert raw.status == ITERATION_LIMIT
    assert raw.raw_status.startswith("-1")


def test_unsupported_model_through_solve_becomes_an_error_row(monkeypatch):
    """The facade turns a refused model into an `error` Solution with the reason."""
    from solvers import api

    def nonlinear_build(*args, **kwargs):
        m = pyo.ConcreteModel()
        m.w = pyo.Var([0])
        m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
        m.c = pyo.Constraint(expr=m.w[0] ** 3 >= 1)
        m.obj = pyo.Objective(expr=m.w[0] ** 2)
        return m

    monkeypatch.setattr(api.formulations, "build", nonlinear_build)
    ds = example_5_1()
    sol = api.solve("hard_primal", ds.X, ds.y, layer="pyomo", backend="clarabel")
    assert sol.status == ERROR and "linear constraints" in sol.message
