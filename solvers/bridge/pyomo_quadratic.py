r"""Fast path of the standard-form bridge for matrix-backed quadratic forms.

A `formulations.quadratic_form.QuadraticForm` is x' Q x with Q kept as an array
(the kernel dual's alpha' Y K Y alpha). Walking it as an expression costs a
Python object per term (n^2 of them); here it is read as the matrix:

1. find every QuadraticForm that enters the objective affinely (through sums,
   negations, constant multiples and named expressions) and its multiplier c;
2. compile the rest of the model with those forms read as 0 (the ordinary
   path of solvers.bridge.pyomo_standard_form.from_pyomo);
3. add c * (Q + Q') on the forms' columns to P (P is in the minimisation sense:
   P += sense * c * 2 Q for 1/2 x'Px).

A form found anywhere else in the objective (under a product with a variable, a
power, a function), a replaced form, or no form at all: `compile_quadratic_forms`
returns None and the caller takes the ordinary path, which walks the expression.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp

from formulations.quadratic_form import QuadraticForm
from solvers.errors import UnsupportedModelError


def _affine_forms(expr) -> list | None:
    """[(form, multiplier)] for the forms in `expr`; None if one is not affine there."""
    from pyomo.core.base.var import VarData
    from pyomo.core.expr import numeric_expr as ne

    found: list = []
    stack = [(expr, 1.0, True)]
    while stack:
        node, mult, affine = stack.pop()
        if isinstance(node, QuadraticForm):
            if node.zeroed:
                continue
            if not affine or node.matrix is None:
                return None
            found.append((node, mult))
            continue
        if not hasattr(node, "is_expression_type") or isinstance(node, VarData) or not node.is_expression_type():
            continue  # constants, parameters, variables
        if node.is_named_expression_type():
            stack.append((node.expr, mult, affine))
        elif type(node) in (ne.LinearExpression, ne.MonomialTermExpression):
            continue  # constant multiples of variables only: no form below (and one object per term to skip)
        elif type(node) in (ne.SumExpression, ne.NPV_SumExpression):
            stack.extend((a, mult, affine) for a in node.args)
        elif type(node) is ne.NegationExpression:
            stack.append((node.args[0], -mult, affine))
        elif type(node) in (ne.ProductExpression, ne.MonomialTermExpression) and _is_constant(node.args[0]):
            stack.append((node.args[1], mult * float(pyo.value(node.args[0])), affine))
        elif type(node) is ne.ProductExpression and _is_constant(node.args[1]):
            stack.append((node.args[0], mult * float(pyo.value(node.args[1])), affine))
        elif type(node) is ne.DivisionExpression and _is_constant(node.args[1]):
            stack.append((node.args[0], mult / float(pyo.value(node.args[1])), affine))
        else:  # anything else: a form below it would not be affine
            stack.extend((a, mult, False) for a in node.args)
    return found


def _is_constant(obj) -> bool:
    return not (hasattr(obj, "is_potentially_variable") and obj.is_potentially_variable())


@contextmanager
def _zeroed(forms):
    """Read the forms as the constant 0 while the rest of the model is compiled."""
    for form in forms:
        form.zeroed = True
    try:
        yield
    finally:
        for form in forms:
            form.zeroed = False


def _add_columns(qp, variables) -> None:
    """Append variables that appear only in a quadratic form as new columns."""
    k = len(variables)
    qp.columns.extend(variables)
    n = len(qp.columns)
    qp.P = sp.csc_matrix(sp.block_diag([qp.P, sp.csc_matrix((k, k))]), shape=(n, n))
    qp.q = np.concatenate([qp.q, np.zeros(k)])
    qp.A = sp.csc_matrix(sp.hstack([qp.A, sp.csc_matrix((qp.A.shape[0], k))]))
    qp.G = sp.csc_matrix(sp.hstack([qp.G, sp.csc_matrix((qp.G.shape[0], k))]))
    lb = [-np.inf if v.lb is None else float(v.lb) for v in variables]
    ub = [np.inf if v.ub is None else float(v.ub) for v in variables]
    for j, var in enumerate(variables):
        if var.fixed:
            lb[j] = ub[j] = float(var.value)
        if not var.is_continuous():
            raise UnsupportedModelError(f"variable {var.name} is not continuous; only continuous QPs are supported")
    qp.lb = np.concatenate([qp.lb, lb])
    qp.ub = np.concatenate([qp.ub, ub])


def compile_quadratic_forms(model, compile_rest):
    """A StandardQP for `model` with its QuadraticForms read as matrices, or None.

    `compile_rest(model)` compiles the model (solvers.bridge.pyomo_standard_form.from_pyomo);
    it is called with the forms reading as 0, so it takes its ordinary path.
    """
    objectives = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objectives) != 1:
        return None  # the ordinary path gives the error
    forms = _affine_forms(objectives[0].expr)
    if not forms:
        return None
    with _zeroed([form for form, _ in forms]):
        qp = compile_rest(model)

    index = {id(v): k for k, v in enumerate(qp.columns)}
    missing = list({id(v): v for form, _ in forms for v in form.variables if id(v) not in index}.values())
    if missing:
        _add_columns(qp, missing)
        index.update((id(v), len(qp.columns) - len(missing) + j) for j, v in enumerate(missing))

    n = len(qp.columns)
    extra = None
    for form, mult in forms:
        Q = form.matrix
        cols = np.fromiter((index[id(v)] for v in form.variables), dtype=np.int64, count=len(form.variables))
        # c x'Qx = 1/2 x' (2c Q) x with Q symmetric; P is stored in the minimisation sense.
        scaled = (2.0 * qp.sense * mult) * Q
        if len(cols) == n and np.array_equal(cols, np.arange(n)) and np.all(scaled != 0):
            # The usual case (a Gram matrix without zeros on the model's columns in order):
            # CSC arrays written down directly, without scipy's coordinate round trip.
            # Q is exactly symmetric (QuadraticForm), so its rows in order are its columns: no transposed copy.
            part = sp.csc_matrix((scaled.ravel(), np.tile(np.arange(n), n), np.arange(0, n * n + 1, n)),
                                 shape=(n, n))
        else:
            block = sp.coo_matrix(scaled)
            part = sp.csc_matrix((block.data, (cols[block.row], cols[block.col])), shape=(n, n))
        extra = part if extra is None else extra + part
    qp.P = extra if qp.P.nnz == 0 else sp.csc_matrix(qp.P + extra)
    return qp
