r"""What the LIBLINEAR members (squared hinge, Crammer-Singer) share: their bias's conventions, and the scales their
optimality conditions are measured on.

The bias (params["intercept"], checked by formulations.family.validation.check_intercept):
    "free"         b unregularized, as the lecture notes' C-SVM (the squared hinge only)
    "none"         no bias, as LIBLINEAR without -B
    "regularized"  LIBLINEAR's -B s, scikit-learn's fit_intercept with intercept_scaling = s: a constant feature s
                   appended to X, so its weight w_{d+1} is regularized like any other and b = s w_{d+1}

The point's distance to the optimum: against the optimum proved from the point's active set (each member's
`optimum`), or, where none is proved, by the gap's bound. P is 1-strongly convex in w (in W for Crammer-Singer)
and D(alpha) <= P* for any dual feasible alpha, so

    1/2 ||w - w*||^2 <= P(w) - P* <= P(w) - D(alpha),

a bound that holds whatever the solver's rounding once alpha is made feasible (each member's `feasible_alpha`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from formulations.data_matrix import squared_row_norms
from formulations.family.common import top

_TINY = np.finfo(float).tiny
EPS = np.finfo(float).eps
#: The proofs' KKT conditions hold to this, in margin units and relative to C (solvers.reference.POLISH_TOL's)
PROOF_TOL = 1e-8


def features(X, params: dict):
    """X as the member's models see it: with the constant feature intercept_scaling appended under "regularized"."""
    if params.get("intercept") != "regularized":
        return X
    column = np.full((X.shape[0], 1), float(params["intercept_scaling"]))
    return sp.hstack([X, column], format="csr") if sp.issparse(X) else np.hstack([X, column])


def row_reach(X) -> float:
    """max_i ||x_i||."""
    return float(np.sqrt(np.max(squared_row_norms(X)))) if X.shape[0] * X.shape[1] else 0.0


def w_size(w, X, f) -> float:
    """What an error in w is measured against: ||w||, or, where w is (nearly) 0, the w that moves f by max |f|
    (max|f| / max ||x_i||; solvers.checks.w_scale's rule)."""
    reach = row_reach(X)
    return max(float(np.linalg.norm(np.ravel(w))), top(f) / reach if reach > 0 else 0.0, _TINY)


def gap_bound(primal: float, feasible_dual: float, w, X, f) -> float:
    """||w - w*|| / w_size bounded by the gap (module docstring)."""
    return math.sqrt(2.0 * max(primal - feasible_dual, 0.0)) / w_size(w, X, f)


def point_errors(own: float, optimum: float, w, w_opt, X, f, f_opt) -> dict:
    """The point against the proved optimum: its objective relative to the optimum's, w relative to w_size(w*),
    the decision values relative to max |f*|."""
    f_scale = max(top(f_opt), _TINY)
    return {"objective error": abs(own - optimum) / max(abs(optimum), _TINY),
            "w error": float(np.linalg.norm(np.ravel(w) - np.ravel(w_opt))) / w_size(w_opt, X, f_opt),
            "decision value error": float(np.max(np.abs(f - f_opt))) / f_scale}
