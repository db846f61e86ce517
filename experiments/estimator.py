r"""`SVMClassifier`: the project's SVMs behind scikit-learn's estimator interface.

A student can use it wherever they would use ``sklearn.svm.SVC`` for a binary
problem (``fit``/``predict``/``decision_function``/``score``, ``GridSearchCV``,
``Pipeline``), but choose *what* is solved (the formulation), *in which modelling
layer* (Pyomo or cvxpy) and *by which solver* (the backend). Every fit goes through
:func:`solvers.api.solve`, so the returned point is verified (duality gap and KKT
residuals recomputed by the project) before it is accepted.

Fitted attributes have scikit-learn's meanings (``classes_[1]`` is the positive
class, +1 in the notes' notation; ``classes_[0]`` is -1):

    decision_function(x) = sum_{i in SV} dual_coef_[0, i] k(support_vectors_[i], x) + intercept_[0]
                         = coef_[0] . x + intercept_[0]           (linear kernel)

with ``dual_coef_[0, i] = alpha_i y_i`` (the notes' lambda_i y^i) for the support
vectors, those with alpha_i > 0 (up to a tolerance relative to max(alpha, C)).

Formulations (001 / 000 notation):

* ``hard_primal``  min 1/2 ||w||^2  s.t. y_i (w'x_i + b) >= 1          (C is ignored)
* ``soft_primal``  min 1/2 ||w||^2 + C sum xi_i  s.t. y_i (w'x_i + b) >= 1 - xi_i, xi >= 0
* ``dual``         max sum alpha_i - 1/2 ||sum alpha_i y_i x_i||^2,  sum alpha_i y_i = 0,
                   0 <= alpha_i <= C  (C = inf: the hard-margin dual of Example 5.2)
* ``kernel_dual``  the dual with K_ij = k(x_i, x_j) in place of x_i'x_j (any kernel)
* ``auto``         ``soft_primal`` for the linear kernel, ``kernel_dual`` otherwise.

The first three are linear SVMs and accept only ``kernel="linear"``. Only binary
problems are supported (the lecture formulations are two-class); more classes are
refused with a clear error.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from formulations.errors import SVMInputError
from formulations.kernels import Kernel, decision_function as kernel_decision
from formulations.recovery import support_mask
from solvers import solution as st
from solvers.api import solve
from solvers.checks import estimate_multipliers

__all__ = ["FORMULATION_CHOICES", "KERNEL_CHOICES", "SVMClassifier", "SVMFitError"]

FORMULATION_CHOICES = ("auto", "soft_primal", "dual", "kernel_dual", "hard_primal")
KERNEL_CHOICES = ("linear", "poly", "rbf", "sigmoid")
_LINEAR_ONLY = ("soft_primal", "dual", "hard_primal")
# Statuses whose point is kept: `optimal` is verified by the project's checks;
# `optimal_inaccurate` is kept with a ConvergenceWarning (the solver claimed optimal
# but a residual missed the profile's bar).
_ACCEPTED = (st.OPTIMAL, st.OPTIMAL_INACCURATE)


class SVMFitError(RuntimeError):
    """The solver did not return a usable optimum; the message says why."""


class SVMClassifier(ClassifierMixin, BaseEstimator):
    """Binary SVM classifier solved by the project's formulations and backends.

    Parameters
    ----------
    formulation : {"auto", "soft_primal", "dual", "kernel_dual", "hard_primal"}, default="auto"
        Which optimization problem is solved (see the module docstring).
    layer : {"cvxpy", "pyomo"}, default="cvxpy"
        The modelling layer.
    backend : str, default="clarabel"
        The solver (``highs, ipopt, clarabel, osqp, scs, piqp, proxqp, daqp``);
        ``solvers.registry.available_backends()`` lists what is installed.
    kernel : {"linear", "poly", "rbf", "sigmoid"}, default="linear"
        k(x, x'), with scikit-learn's formulas and parameter names. The sigmoid
        kernel is not a Mercer kernel in general: when its Gram matrix is not
        positive semidefinite the dual is not convex and fit refuses it
        (IndefiniteKernelError, a ValueError) rather than solve a non-convex QP.
    C : float, default=1.0
        Penalty on the slacks, C > 0; ``math.inf`` gives the hard margin for the
        dual formulations. Ignored by ``hard_primal``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for poly, rbf and sigmoid; "scale" is 1 / (d Var(X)) and
        "auto" is 1 / d, as in ``SVC``.
    degree : int, default=3
        Degree Q of the poly kernel (zeta + gamma x'x')^Q.
    coef0 : float, default=0.0
        zeta of the poly kernel, the additive constant of the sigmoid kernel.
    profile : {"default", "high"}, default="default"
        Solver accuracy profile (solvers.profiles).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class (y = +1).
    formulation_ : str
        The formulation actually solved ("auto" resolved).
    kernel_ : formulations.kernels.Kernel
        The kernel with gamma resolved to a number.
    coef_ : ndarray of shape (1, n_features)
        w*, for the linear kernel only (an AttributeError otherwise, as in SVC).
    intercept_ : ndarray of shape (1,)
        b*.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors (alpha_i > 0), class 0's first, as in SVC.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    dual_coef_ : ndarray of shape (1, n_SV)
        alpha_i y_i for the support vectors (positive for classes_[1]).
    n_support_ : ndarray of shape (2,), dtype int32
        Number of support vectors in each class.
    solution_ : solvers.solution.Solution
        The full record of the solve: status, objective, alpha, xi, checks, timings.
    n_features_in_, feature_names_in_ : as in every scikit-learn estimator.
    """

    def __init__(
        self,
        formulation: str = "auto",
        layer: str = "cvxpy",
        backend: str = "clarabel",
        kernel: str = "linear",
        C: float = 1.0,
        gamma="scale",
        degree: int = 3,
        coef0: float = 0.0,
        profile: str = "default",
    ):
        self.formulation = formulation
        self.layer = layer
        self.backend = backend
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.profile = profile

    # ------------------------------------------------------------------ tags

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # the lecture SVMs are two-class
        tags.input_tags.sparse = False
        return tags

    # ------------------------------------------------------------------ parameters

    def _resolved_formulation(self) -> str:
        if self.formulation not in FORMULATION_CHOICES:
            raise SVMInputError(
                f"formulation must be one of {FORMULATION_CHOICES}, got {self.formulation!r}"
            )
        if self.kernel not in KERNEL_CHOICES:
            raise SVMInputError(f"kernel must be one of {KERNEL_CHOICES}, got {self.kernel!r}")
        if self.formulation == "auto":
            return "soft_primal" if self.kernel == "linear" else "kernel_dual"
        if self.formulation in _LINEAR_ONLY and self.kernel != "linear":
            raise SVMInputError(
                f"formulation {self.formulation!r} is a linear SVM and takes kernel='linear' "
                f"only, got kernel={self.kernel!r}; use formulation='kernel_dual' (or 'auto')"
            )
        return self.formulation

    def _resolved_C(self, formulation: str) -> float | None:
        if formulation == "hard_primal":
            return None
        C = self.C
        if isinstance(C, bool) or not isinstance(C, numbers.Real) or math.isnan(C) or C <= 0:
            raise SVMInputError(f"C must be a number > 0, got {C!r}")
        if math.isinf(C) and formulation == "soft_primal":
            raise SVMInputError(
                "C = inf is the hard margin: use formulation='hard_primal' or 'dual' "
                "(soft_primal needs a finite C)"
            )
        return float(C)

    def _resolved_kernel(self, X: np.ndarray) -> Kernel:
        gamma = self.gamma
        if isinstance(gamma, str):
            if gamma == "scale":
                var = float(X.var())
                gamma = 1.0 / (X.shape[1] * var) if var != 0 else 1.0
            elif gamma == "auto":
                gamma = 1.0 / X.shape[1]
            else:
                raise SVMInputError(f"gamma must be 'scale', 'auto' or a number > 0, got {gamma!r}")
        return Kernel(self.kernel, gamma=gamma, degree=self.degree, coef0=self.coef0)

    # ------------------------------------------------------------------ fit

    def fit(self, X, y):
        """Solve the chosen formulation on (X, y) and keep the verified optimum."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y")
        if y_type != "binary":
            n_classes = np.unique(y).size
            raise SVMInputError(
                "Only binary classification is supported. The type of the target is "
                f"{y_type} ({n_classes} class{'es' if n_classes != 1 else ''}); the lecture "
                "SVMs separate exactly two classes"
            )
        formulation = self._resolved_formulation()
        C = self._resolved_C(formulation)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:  # type_of_target calls a single class "binary"
            raise SVMInputError(
                f"y has 1 class ({self.classes_[0]!r}): an SVM needs samples of two classes"
            )
        kernel = self._resolved_kernel(X)
        signs = np.where(y == self.classes_[1], 1.0, -1.0)

        sol = solve(
            formulation, X, signs, layer=self.layer, backend=self.backend, C=C,
            kernel=kernel if formulation == "kernel_dual" else None, profile=self.profile,
        )
        self._accept(sol, formulation)

        C_eff = math.inf if C is None else C
        alpha = sol.alpha
        if alpha is None:  # a primal solved by a backend that returns no multipliers
            alpha = estimate_multipliers(X, signs, sol.w, sol.decision, C_eff)
        alpha = np.asarray(alpha, dtype=float)
        sv = support_mask(alpha, signs, sol.decision, C_eff)
        # sklearn orders the support vectors by class, then by index.
        support = np.concatenate([np.flatnonzero(sv & (signs < 0)), np.flatnonzero(sv & (signs > 0))])

        self.formulation_ = formulation
        self.kernel_ = kernel
        self.solution_ = sol
        self.support_ = support.astype(np.int32)
        self.support_vectors_ = X[support]
        self.dual_coef_ = (alpha[support] * signs[support])[None, :]
        self.n_support_ = np.array([np.sum(signs[support] < 0), np.sum(signs[support] > 0)], dtype=np.int32)
        self.intercept_ = np.array([float(sol.b)])
        if hasattr(self, "coef_"):
            del self.coef_  # a refit with a non-linear kernel must not keep a stale w
        if kernel.name == "linear":
            w = sol.w if sol.w is not None else (self.dual_coef_ @ self.support_vectors_)[0]
            self.coef_ = np.asarray(w, dtype=float).reshape(1, -1)
        return self

    def _accept(self, sol: st.Solution, formulation: str) -> None:
        """Raise SVMFitError unless `sol` holds a usable optimum."""
        where = f"{formulation} via {self.layer}/{self.backend} (profile {self.profile!r})"
        if sol.status not in _ACCEPTED or sol.decision is None or not math.isfinite(sol.b):
            hint = ""
            if sol.status == st.INFEASIBLE and formulation == "hard_primal":
                hint = " The data are not linearly separable: use 'soft_primal' with a finite C."
            elif sol.status == st.UNBOUNDED and math.isinf(self.C if self.C is not None else 0):
                hint = " With C = inf the dual is unbounded on non-separable data: use a finite C."
            elif sol.status in _ACCEPTED:
                hint = f" The solver reported {sol.status} but returned no usable w, b."
            detail = f": {sol.message}" if sol.message else ""
            raise SVMFitError(
                f"SVM fit failed: {where} ended with status {sol.status!r} "
                f"(solver said {sol.raw_status!r}){detail}.{hint}"
            )
        if sol.status == st.OPTIMAL_INACCURATE:
            warnings.warn(
                f"{where}: the solver claimed optimal but the project's checks did not pass "
                f"({sol.checks.get('verdict', '')}); try profile='high' or another backend",
                ConvergenceWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ predict

    def decision_function(self, X) -> np.ndarray:
        """f(x) = sum_i alpha_i y_i k(x_i, x) + b; positive means classes_[1]."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.kernel_.name == "linear":
            return X @ self.coef_[0] + self.intercept_[0]
        if self.support_.size == 0:
            return np.full(X.shape[0], self.intercept_[0])
        return kernel_decision(self.kernel_, self.support_vectors_, self.dual_coef_[0], self.intercept_[0], X)

    def predict(self, X) -> np.ndarray:
        """classes_[1] where f(x) > 0, classes_[0] elsewhere."""
        positive = self.decision_function(X) > 0  # checks fitted-ness before classes_ is read
        return self.classes_[positive.astype(int)]
