"""Every use of a dependency's private internals in the project, in this one module (numba's cache aside).

The Pyomo internals are here because the public API is too slow at the sizes the project solves
(n = 1e5 rows; docs/benchmarks.md); the solvers' warnings, because they have no class of their own.
numba's cache file is wrapped in formulations/numba_cache.py instead: every compiled module imports it, and
those load without Pyomo. Everything else uses public APIs. pyproject.toml bounds Pyomo, cvxpy and qpsolvers
below the next minor version the test suite has not passed on, and tests/test_internals.py fails, naming the
internal, when one of them changes (`check_internals` and the warning tests).

- `MatrixRows`: Pyomo's `MatrixConstraint` (pyomo.repn.beta.matrix, constraint rows kept as CSR
  arrays) whose rows are built without the per-row constructor (one shared weak reference) and
  give an `expr` and a `LinearExpression` body on request, so Pyomo's solver interfaces accept them.
  It reads the CSR arrays (`_prows`, `_jcols`, `_vals`, `_ranges`, `_varmap`, `_range_types`) and
  writes each row's `_component`, `_index`, `_active` and the component's `_data`.
- `LazyExpression`: a named expression whose expression is built on first read, through the
  storage slot `_args_` of `ExpressionData` (formulations.quadratic_form: x'Qx kept as a matrix,
  not an expression of n^2 terms).
- `plain_bounds`: the bounds a variable was given, read from its `_lb`/`_ub` slots, far faster
  than `var.lb`/`var.ub` over 1e5 variables.
- `is_status_warning`: the warnings that only say how a solve ended, told by where qpsolvers
  issues them and by cvxpy's text (solvers.adapters.base.status_warnings folds them into the row).
"""

from __future__ import annotations

import weakref
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
from pyomo.core.base.expression import ExpressionData, ScalarExpression
from pyomo.core.base.var import VarData
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.repn.beta import matrix as pyomo_matrix

# The private names this module relies on, by owner: check_internals verifies each one.
MATRIX_ROW_BASE = "_LinearMatrixConstraintData"
MATRIX_ARRAYS = ("_prows", "_jcols", "_vals", "_ranges", "_varmap", "_range_types", "_data")
ROW_FIELDS = ("_component", "_index", "_active")
EXPRESSION_SLOT = "_args_"
VAR_BOUND_SLOTS = ("_lb", "_ub")
#: qpsolvers' solver modules warn a solver's end ("OSQP exited with status ...", "Clarabel.rs terminated with
#: status ...", "SCS returned -2: ..."): plain UserWarnings, told apart only by the folders they come from.
QPSOLVERS_SOLVER_FOLDERS = ("qpsolvers", "solvers")
#: cvxpy's warning at an inaccurate status; it points at the caller's line, so only its text tells it.
CVXPY_INACCURATE = "Solution may be inaccurate"
#: OSQP's notice when solve() is called without raise_error, which qpsolvers does not pass.
OSQP_RAISE_ERROR_NOTICE = "The default value of raise_error"


class _MatrixRowData(getattr(pyomo_matrix, MATRIX_ROW_BASE)):
    """One row of a `MatrixRows`: its body and expression are built on request only."""

    __slots__ = ()

    @property
    def body(self):
        comp = self.parent_component()
        lo, hi = comp._prows[self._index], comp._prows[self._index + 1]
        return LinearExpression(
            constant=0.0,
            linear_coefs=comp._vals[lo:hi].tolist(),
            linear_vars=[comp._varmap[k] for k in comp._jcols[lo:hi]],
        )

    @property
    def expr(self):
        lower, body, upper = self.lower, self.body, self.upper
        if self.equality:
            return body == upper
        if lower is not None and upper is not None:
            return pyo.inequality(lower, body, upper)
        return body >= lower if lower is not None else body <= upper


class MatrixRows(pyomo_matrix.MatrixConstraint):
    """Pyomo's `MatrixConstraint` (rows in CSR form) whose rows give `expr` and a
    `LinearExpression` body, so Pyomo's solver interfaces accept them."""

    def construct(self, data=None):
        if self._constructed:
            return
        self._constructed = True
        # One weak reference shared by all rows (the parent constructor makes one per row).
        ref = weakref.ref(self)
        new = object.__new__
        data = []
        for i in range(len(self._range_types)):
            row = new(_MatrixRowData)
            row._component, row._index, row._active = ref, i, True
            data.append(row)
        self._data = tuple(data)

    def csr(self):
        """(indptr, indices, data, lower, upper, variables) of the rows."""
        return (self._prows, self._jcols, self._vals, self._ranges[0::2], self._ranges[1::2], self._varmap)

    def rows(self) -> tuple:
        """The row objects (ConstraintData), in row order: what the multipliers are loaded into."""
        return self._data


# The storage slot of ExpressionData, used under LazyExpression's `_args_` below.
_ARGS_SLOT = ExpressionData.__dict__[EXPRESSION_SLOT]


class LazyExpression(ScalarExpression):
    """A named Pyomo expression built by `build_expression()` when it is first read.

    Until then readers that know the subclass (the standard-form bridge) use its own data; every
    other Pyomo tool sees an ordinary named expression. `zeroed` reads it as the constant 0 (the
    bridge compiles the rest of a model around it); `replaced` says a user set another expression.
    """

    def __init__(self, **kwds):
        self._lazy_state = "lazy"  # "lazy" -> "built" (walked once) | "replaced" (set_value by a user)
        self.zeroed = False
        super().__init__(**kwds)

    def build_expression(self):
        raise NotImplementedError

    @property
    def replaced(self) -> bool:
        return self._lazy_state == "replaced"

    @property
    def _args_(self):
        if self.zeroed:
            return (0.0,)
        if self._lazy_state == "lazy":
            _ARGS_SLOT.__set__(self, (self.build_expression(),))
            self._lazy_state = "built"
        return _ARGS_SLOT.__get__(self)

    @_args_.setter
    def _args_(self, value):
        if self.__dict__.get("_lazy_state") == "lazy" and value == (None,):
            return  # Pyomo's construct() initialising an empty expression: the subclass defines it
        self.__dict__["_lazy_state"] = "replaced"
        _ARGS_SLOT.__set__(self, value)


def plain_bounds(columns) -> tuple[list, list]:
    """The bounds each variable was given (a number, None, or a Param/expression), not combined
    with its domain's: the fast path of solvers.bridge.pyomo_standard_form."""
    return [v._lb for v in columns], [v._ub for v in columns]


def is_status_warning(caught) -> bool:
    """A caught warning (warnings.WarningMessage) that only says how a solve ended: qpsolvers' or cvxpy's."""
    if not issubclass(caught.category, UserWarning):
        return False
    parts = Path(caught.filename).parts
    return all(folder in parts for folder in QPSOLVERS_SOLVER_FOLDERS) or \
        str(caught.message).startswith(CVXPY_INACCURATE)


def check_internals() -> list[str]:
    """What no longer holds of the internals above (empty when all do), each naming the internal."""
    problems = []
    if not isinstance(getattr(pyomo_matrix, MATRIX_ROW_BASE, None), type):
        problems.append(f"pyomo.repn.beta.matrix.{MATRIX_ROW_BASE} is gone (formulations.internals.MatrixRows)")
        return problems
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(2), bounds=(0.0, 2.0))
    try:
        m.rows = MatrixRows(1, 2, 2, np.array([0, 2]), np.array([0, 1]), np.array([1.0, 1.0]),
                            np.array([1.0, np.inf]), np.array([MatrixRows.LowerBound]), list(m.x.values()))
        row = m.rows.rows()[0]
        for name in MATRIX_ARRAYS:
            if not hasattr(m.rows, name):
                problems.append(f"MatrixConstraint has no attribute {name} (formulations.internals.MatrixRows)")
        for name in ROW_FIELDS:
            if not hasattr(row, name):
                problems.append(f"{MATRIX_ROW_BASE} has no field {name} (formulations.internals.MatrixRows)")
        if row.lower != 1.0 or str(row.body) != "x[0] + x[1]" or list(m.rows.values()) != [row]:
            problems.append(f"a MatrixRows row reads back wrong: lower {row.lower}, body {row.body} "
                            "(formulations.internals.MatrixRows: MatrixConstraint's CSR fields changed meaning)")
    except Exception as exc:
        problems.append(f"MatrixRows no longer builds on Pyomo's MatrixConstraint: {type(exc).__name__}: {exc}")
    slot = ExpressionData.__dict__.get(EXPRESSION_SLOT)
    if not (hasattr(slot, "__get__") and hasattr(slot, "__set__")):
        problems.append(f"ExpressionData.{EXPRESSION_SLOT} is no longer a storage slot "
                        "(formulations.internals.LazyExpression)")
    for name in VAR_BOUND_SLOTS:
        if name not in getattr(VarData, "__slots__", ()) and not hasattr(m.x[0], name):
            problems.append(f"VarData has no slot {name} (formulations.internals.plain_bounds)")
    if not problems and plain_bounds([m.x[0]]) != ([0.0], [2.0]):
        problems.append(f"VarData's {VAR_BOUND_SLOTS} no longer hold the given bounds "
                        "(formulations.internals.plain_bounds)")
    return problems
