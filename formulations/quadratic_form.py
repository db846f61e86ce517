r"""A quadratic form x' Q x as a named Pyomo expression backed by the matrix Q.

The kernel dual's objective holds (y*alpha)' K (y*alpha) = alpha' Q alpha with a
dense n x n matrix Q = Y K Y. Written as a Pyomo expression it has n^2 terms, too
slow to build and read back at a few thousand points, while the solver needs nothing but Q.

`QuadraticForm` keeps Q and the variables x as arrays, the way
`formulations.model.MatrixRows` keeps a constraint matrix in CSR form:

- the standard-form bridge (solvers.bridge.pyomo_standard_form through
  solvers.bridge.pyomo_quadratic) reads Q directly: O(n^2) numpy work, no Python
  object per term;
- every other Pyomo tool sees an ordinary named expression
  sum_i x_i (sum_j Q_ij x_j), built on first request only (e.g. by Pyomo's
  HiGHS interface, which walks the expression) and then kept;
- its value at the current point is x' Q x, computed with numpy.

If the expression is replaced (``form.set_value(other)``), the matrix no longer
describes it and `matrix` returns None: readers then walk the expression.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.common.numeric_types import native_types
from pyomo.core.expr.numeric_expr import LinearExpression

from formulations.internals import LazyExpression


class QuadraticForm(LazyExpression):
    """x' Q x for a square matrix Q (made symmetric: (Q + Q')/2) and variables x.

    Assign it to a model like any component: ``m.quad = QuadraticForm(Q, m.alpha)``.
    """

    def __init__(self, Q, variables, **kwds):
        Q = np.asarray(Q, dtype=float)
        var_list = list(variables.values()) if hasattr(variables, "values") else list(variables)
        if Q.ndim != 2 or Q.shape[0] != Q.shape[1] or Q.shape[0] != len(var_list):
            raise ValueError(
                f"QuadraticForm: Q must be square with one row per variable; got Q of shape "
                f"{Q.shape} and {len(var_list)} variables"
            )
        self._Q = 0.5 * (Q + Q.T)
        self._x = tuple(var_list)
        super().__init__(**kwds)  # the expression is built from Q when first read (LazyExpression)

    def build_expression(self):
        """sum_i x_i (Q x)_i as an ordinary Pyomo expression (one row expression per i)."""
        x = self._x
        terms = []
        for i, row in enumerate(self._Q):
            nz = np.flatnonzero(row)
            if nz.size == 0:
                continue
            vars_i = list(x) if nz.size == len(x) else [x[k] for k in nz]
            terms.append(x[i] * LinearExpression(constant=0.0, linear_coefs=row[nz].tolist(),
                                                 linear_vars=vars_i))
        return pyo.quicksum(terms) if terms else 0.0

    @property
    def matrix(self) -> np.ndarray | None:
        """Q (symmetric) when it still defines this expression, else None."""
        return None if self.replaced else self._Q

    @property
    def variables(self) -> tuple:
        return self._x

    def polynomial_degree(self):
        if self.zeroed:
            return 0
        if self.replaced:
            return super().polynomial_degree()
        return 2 if np.any(self._Q) else 0

    def __call__(self, exception=True):
        """x' Q x at the variables' current values (numpy; no expression is built)."""
        if self.replaced or self.zeroed:
            return super().__call__(exception)
        values = [v.value for v in self._x]
        if any(v is None for v in values):
            if exception:
                raise ValueError(f"QuadraticForm {self.name}: a variable has no value")
            return None
        x = np.asarray(values, dtype=float)
        return float(x @ self._Q @ x)

    def is_fixed(self):
        if self.replaced or self.zeroed:
            e = self.expr
            return e.__class__ in native_types or e.is_fixed()
        return all(v.fixed for v in self._x)
