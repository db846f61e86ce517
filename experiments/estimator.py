r"""`SVMClassifier`: the project's SVMs behind scikit-learn's estimator interface, a drop-in for `SVC`.

A student can use it wherever they would use ``sklearn.svm.SVC`` (``fit``/``predict``/
``decision_function``/``score``, ``GridSearchCV``, ``Pipeline``, ``sample_weight``,
``class_weight``, ``kernel="precomputed"`` or a callable kernel, any number of classes), but
choose *what* is solved (the formulation), *in which modelling layer* (Pyomo or cvxpy) and
*by which solver* (the backend). Every two-class problem goes through
:func:`solvers.api.solve`, so the returned point is verified (duality gap and KKT residuals
recomputed by the project) before it is accepted.

Two classes. ``classes_[1]`` is the positive class (+1 in the notes' notation):

    decision_function(x) = sum_{i in SV} dual_coef_[0, i] k(support_vectors_[i], x) + intercept_[0]
                         = coef_[0] . x + intercept_[0]           (linear kernel)

with ``dual_coef_[0, i] = alpha_i y_i`` (the notes' lambda_i y^i) for the support vectors.

More classes: one-vs-one, as LIBSVM. One SVM per pair (i, j), i < j, in the order of
``classes_``; its decision value is positive for class i (``decision_function_shape="ovo"``).
``predict`` takes the class with the most votes, ties to the lower index (``break_ties=True``:
the largest "ovr" value); ``decision_function_shape="ovr"`` turns the pairs' values into votes
plus a confidence in (-1/3, 1/3), as ``SVC``. ``dual_coef_`` has SVC's (n_classes - 1, n_SV)
layout: a support vector of class c holds its coefficient for the pair (c, o) in row o - 1 if
o > c, else in row o; ``intercept_`` has one entry per pair.

Weights. Sample i is penalised by C_i = C * class_weight[y_i] * sample_weight_i (SVC's rule):
the soft primal's weighted hinge sum_i C_i xi_i, the duals' bounds 0 <= alpha_i <= C_i
(formulations.penalty). Samples of weight 0 are left out, as removing them is what a weight of
0 means.

Formulations (001 / 000 notation):

* ``hard_primal``  min 1/2 ||w||^2  s.t. y_i (w'x_i + b) >= 1          (C is ignored)
* ``soft_primal``  min 1/2 ||w||^2 + sum_i C_i xi_i  s.t. y_i (w'x_i + b) >= 1 - xi_i, xi >= 0
* ``dual``         max sum alpha_i - 1/2 ||sum alpha_i y_i x_i||^2,  sum alpha_i y_i = 0,
                   0 <= alpha_i <= C_i  (C = inf: the hard-margin dual of Example 5.2)
* ``kernel_dual``  the dual with K_ij = k(x_i, x_j) in place of x_i'x_j (any kernel)
* ``auto``         ``soft_primal`` for the linear kernel, ``kernel_dual`` otherwise.

The first three are linear SVMs and accept only ``kernel="linear"``.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import _ovr_decision_function, check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram
from formulations.recovery import support_mask
from solvers import blas
from solvers import solution as st
from solvers.api import solve
from solvers.checks import estimate_multipliers

__all__ = ["FORMULATION_CHOICES", "KERNEL_CHOICES", "SVMClassifier", "SVMFitError"]

FORMULATION_CHOICES = ("auto", "soft_primal", "dual", "kernel_dual", "hard_primal")
KERNEL_CHOICES = ("linear", "poly", "rbf", "sigmoid", "precomputed")
_LINEAR_ONLY = ("soft_primal", "dual", "hard_primal")
# Statuses whose point is kept: `optimal` is verified by the project's checks;
# `optimal_inaccurate` is kept with a ConvergenceWarning (the solver claimed optimal
# but a residual missed the profile's bar).
_ACCEPTED = (st.OPTIMAL, st.OPTIMAL_INACCURATE)


#: Up to this many samples a pair is solved, and predicted, with one BLAS thread. Its dense algebra (the
#: Gram matrix of few features, the solver's factorizations, the working set's blocks, the checks' proved
#: optimum) is too small to gain from threads, and threads that wait for busy cores cost more than the
#: work. RBF fit, Pyomo/PIQP, 2-core machine shared with other jobs, one thread against OpenBLAS's
#: default: n = 455 0.10 s vs 2.07 s (an earlier run); in one run: n = 1,000 0.24-0.29 s vs 0.43-0.45 s,
#: n = 3,000 0.29-0.48 s vs 0.36-0.66 s, n = 5,000 0.86-0.99 s vs 1.14-1.53 s (the checks' 398 x 398
#: solve alone took 0.2 s on two threads), n = 10,000 3.6-3.7 s vs 3.7-3.8 s; linear soft primal
#: n = 20,000 0.24-0.31 s vs 0.43-0.59 s. Above it (not measured) BLAS keeps its own thread count.
ONE_BLAS_THREAD_UP_TO = 10_000


def _class_pairs(n_classes: int) -> list[tuple[int, int]]:
    """The one-vs-one pairs (i, j), i < j, in LIBSVM's order: the order of intercept_ and solutions_."""
    return list(itertools.combinations(range(n_classes), 2))


def _ovr(pair_values: np.ndarray, n_classes: int) -> np.ndarray:
    """SVC's "ovr" values from the pairs' (votes + a confidence in (-1/3, 1/3) that breaks ties)."""
    return _ovr_decision_function(pair_values < 0, -pair_values, n_classes)


def _blas_threads_for(n: int):
    """One BLAS thread for a small problem (ONE_BLAS_THREAD_UP_TO), the library's default otherwise."""
    return blas.one_thread_if(n <= ONE_BLAS_THREAD_UP_TO)


class SVMFitError(RuntimeError):
    """The solver did not return a usable optimum; the message says why."""


@dataclass
class _PairFit:
    """One two-class SVM: the samples it was fitted on and its verified optimum."""

    index: np.ndarray  # rows of the training set (class i and class j, weight > 0)
    coef: np.ndarray  # alpha_t y_t on those rows (y_t = +1 for the pair's higher class j)
    support: np.ndarray  # mask over `index`: alpha_t > 0
    b: float
    w: np.ndarray | None  # the linear kernel's w (positive towards class j)
    solution: st.Solution


class SVMClassifier(ClassifierMixin, BaseEstimator):
    """SVM classifier solved by the project's formulations and backends (SVC's interface).

    Parameters
    ----------
    formulation : {"auto", "soft_primal", "dual", "kernel_dual", "hard_primal"}, default="auto"
        Which optimization problem is solved (see the module docstring).
    layer : {"pyomo", "cvxpy"}, default="pyomo"
        The modelling layer.
    backend : str, default="piqp"
        The solver (``highs, ipopt, clarabel, osqp, scs, piqp, proxqp, daqp``);
        ``solvers.registry.available_backends()`` lists what is installed. The default,
        Pyomo with PIQP, was the fastest verified pair on a breast-cancer fold (n = 455, RBF,
        best of 3 fits, C and gamma from the benchmark's grid: 37-47 ms, against 72-75 ms for
        cvxpy/PIQP, 49-163 ms for DAQP, 150-232 ms for Clarabel, 2.1-3.0 s for Pyomo/HiGHS;
        OSQP's points missed the checks' bar; machine shared, measured here).
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"} or callable, default="linear"
        k(x, x'), with scikit-learn's formulas and parameter names. "precomputed": X is the
        Gram matrix (n x n at fit, n_test x n_train at predict). A callable k(X, Z) returns
        the matrix of kernel values, shape (len(X), len(Z)). A kernel whose Gram matrix is not
        positive semidefinite (sigmoid, usually) makes the dual non-convex: fit refuses it
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
    class_weight : dict, "balanced" or None, default=None
        C of class c is C * class_weight[c]; "balanced": n / (n_classes * count(c)), as SVC.
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        The shape of decision_function with more than two classes (as SVC).
    break_ties : bool, default=False
        With more than two classes and "ovr", predict by the largest decision value instead
        of the votes (as SVC).
    method : str, default="auto"
        How each QP is solved, handed to ``solvers.api.solve(method=...)`` ("auto" picks
        the working set when n is large enough for it to pay).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class (1 without class_weight).
    formulation_ : str
        The formulation actually solved ("auto" resolved).
    kernel_ : formulations.kernels.Kernel
        The kernel with gamma resolved to a number (a "precomputed" Kernel for a callable).
    coef_ : ndarray of shape (n_classes * (n_classes - 1) / 2, n_features)
        w* of each pair, for the linear kernel only (an AttributeError otherwise, as in SVC).
    intercept_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        b* of each pair.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors (alpha_i > 0 in some pair), by class, then by index.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty for a precomputed kernel (as in SVC).
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV)
        alpha_i y_i of the support vectors in SVC's layout (module docstring).
    n_support_ : ndarray of shape (n_classes,), dtype int32
        Number of support vectors in each class.
    solution_ : solvers.solution.Solution
        The full record of the (first pair's) solve: status, objective, alpha, checks, timings.
    solutions_ : list of solvers.solution.Solution
        One per pair, in the order of intercept_.
    shape_fit_ : tuple
        The shape of the training X (for a precomputed kernel: the number of columns expected).
    n_features_in_, feature_names_in_ : as in every scikit-learn estimator.
    """

    def __init__(
        self,
        formulation: str = "auto",
        layer: str = "pyomo",
        backend: str = "piqp",
        kernel="linear",
        C: float = 1.0,
        gamma="scale",
        degree: int = 3,
        coef0: float = 0.0,
        profile: str = "default",
        class_weight=None,
        decision_function_shape: str = "ovr",
        break_ties: bool = False,
        method: str = "auto",
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
        self.class_weight = class_weight
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.method = method

    # ------------------------------------------------------------------ tags

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"  # as SVC: CSR/CSC fits, predicts
        tags.input_tags.pairwise = self.kernel == "precomputed"  # X is a Gram matrix (cross_val_score slices it)
        return tags

    # ------------------------------------------------------------------ parameters

    def _resolved_formulation(self) -> str:
        if self.formulation not in FORMULATION_CHOICES:
            raise SVMInputError(
                f"formulation must be one of {FORMULATION_CHOICES}, got {self.formulation!r}"
            )
        if not callable(self.kernel) and self.kernel not in KERNEL_CHOICES:
            raise SVMInputError(f"kernel must be one of {KERNEL_CHOICES} or a callable, got {self.kernel!r}")
        if self.decision_function_shape not in ("ovr", "ovo"):
            raise SVMInputError(
                f"decision_function_shape must be 'ovr' or 'ovo', got {self.decision_function_shape!r}"
            )
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
        if callable(self.kernel) or self.kernel == "precomputed":
            return Kernel("precomputed")
        gamma = self.gamma
        if isinstance(gamma, str):
            if gamma == "scale":
                var = float(X.multiply(X).mean() - X.mean() ** 2) if sp.issparse(X) else float(X.var())
                gamma = 1.0 / (X.shape[1] * var) if var != 0 else 1.0
            elif gamma == "auto":
                gamma = 1.0 / X.shape[1]
            else:
                raise SVMInputError(f"gamma must be 'scale', 'auto' or a number > 0, got {gamma!r}")
        return Kernel(self.kernel, gamma=gamma, degree=self.degree, coef0=self.coef0)

    def _training_gram(self, X: np.ndarray) -> np.ndarray | None:
        """The n x n kernel matrix for a precomputed or callable kernel (None: solve forms it)."""
        if self.kernel == "precomputed":
            if X.shape[0] != X.shape[1]:
                raise SVMInputError(
                    f"kernel='precomputed' needs the square Gram matrix of the training samples, "
                    f"got X of shape {X.shape}"
                )
            return X
        if callable(self.kernel):
            return self._call_kernel(X, X)
        return None

    def _call_kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        K = np.asarray(self.kernel(A, B), dtype=float)
        if K.shape != (A.shape[0], B.shape[0]):
            raise SVMInputError(
                f"the kernel callable must return an array of shape ({A.shape[0]}, {B.shape[0]}) "
                f"(len(X), len(Y)), got {K.shape}"
            )
        return K

    def _sample_C(self, C: float | None, y_index: np.ndarray, sample_weight) -> tuple[np.ndarray, object]:
        """(rows kept, C of those rows): C_i = C * class_weight[y_i] * sample_weight_i; one C when all are C.

        Rows of weight 0 are dropped (a weight of 0 removes the sample).
        """
        n = y_index.size
        if sample_weight is None:
            weights = np.ones(n)
        else:
            try:
                weights = _check_sample_weight(sample_weight, np.empty((n, 0)), dtype=np.float64,
                                               allow_all_zero_weights=True)
            except (TypeError, ValueError) as exc:
                raise SVMInputError(f"sample_weight: {exc}") from None
            bad = ~np.isfinite(weights) | (weights < 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise SVMInputError(f"sample_weight must be finite and >= 0; sample_weight[{i}] = {weights[i]:g}")
        per_sample = weights * self.class_weight_[y_index]
        keep = np.flatnonzero(per_sample > 0)
        if keep.size == 0:
            raise SVMInputError("every sample has zero weight (sample_weight x class_weight): nothing to fit")
        if np.unique(y_index[keep]).size < 2:
            raise SVMInputError(
                "without the samples of zero weight (sample_weight x class_weight) fewer than two classes "
                "remain: an SVM needs samples of two classes"
            )
        if C is None:  # hard_primal: no penalty to weigh
            return keep, None
        if sample_weight is None and self.class_weight is None:
            return keep, C  # the notes' one C: every solve path computes exactly what it always did
        return keep, C * per_sample[keep]

    # ------------------------------------------------------------------ fit

    def fit(self, X, y, sample_weight=None):
        """Solve one SVM per pair of classes on (X, y) and keep the verified optima."""
        if sp.issparse(X) and self.kernel == "precomputed":  # SVC's error
            raise TypeError("Sparse precomputed kernels are not supported.")
        # a sparse X as CSR, passed to solve() as it is (no dense copy for the linear formulations)
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse="csr", accept_large_sparse=False)
        self._sparse = sp.issparse(X) and not callable(self.kernel)
        check_classification_targets(y)
        formulation = self._resolved_formulation()
        C = self._resolved_C(formulation)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise SVMInputError(
                f"y has 1 class ({self.classes_[0]!r}): an SVM needs samples of two classes"
            )
        try:
            self.class_weight_ = compute_class_weight(self.class_weight, classes=self.classes_, y=y)
        except (TypeError, ValueError) as exc:
            raise SVMInputError(f"class_weight: {exc}") from None
        kept, C_samples = self._sample_C(C, y_index, sample_weight)
        kernel = self._resolved_kernel(X)
        K = self._training_gram(X)
        self.shape_fit_ = X.shape
        self.formulation_, self.kernel_ = formulation, kernel

        fits = []
        for i, j in _class_pairs(self.classes_.size):
            in_pair = np.isin(y_index[kept], (i, j))
            rows = kept[in_pair]
            pair_C = C_samples[in_pair] if isinstance(C_samples, np.ndarray) else C_samples  # C of `kept`
            fits.append(self._fit_pair(formulation, X, K, rows, np.where(y_index[rows] == j, 1.0, -1.0), pair_C))
        self._store(X, y_index, fits)
        return self

    def _solve_kwargs(self) -> dict:
        return {"layer": self.layer, "backend": self.backend, "profile": self.profile, "method": self.method}

    def _fit_pair(self, formulation: str, X, K, rows: np.ndarray, signs: np.ndarray, C) -> _PairFit:
        """The two-class SVM on X[rows] with labels `signs` (+1: the pair's higher class)."""
        X_pair = None if K is not None else X[rows]  # the pair's samples, copied once
        with _blas_threads_for(rows.size):
            if K is not None:  # precomputed or callable kernel: the pair's block of K
                sol = solve(formulation, None, signs, K=K[np.ix_(rows, rows)], C=C, **self._solve_kwargs())
            else:
                sol = solve(formulation, X_pair, signs, C=C, **self._solve_kwargs(),
                            kernel=self.kernel_ if formulation == "kernel_dual" else None)
        self._accept(sol, formulation)
        C_eff = math.inf if C is None else C
        alpha = sol.alpha
        if alpha is None:  # a primal solved by a backend that returns no multipliers
            alpha = estimate_multipliers(X_pair, signs, sol.w, sol.decision, C_eff)
        alpha, b = np.asarray(alpha, dtype=float), float(sol.b)
        proved = sol.proved_alpha is not None  # _accept let only optimal and optimal_inaccurate through
        if proved:
            # The optimum the checks proved from the point's active set, whose zeros are exact, with b in its
            # interval. Told apart by the solver's values alone (support_mask), a free point with alpha 2.6e-5
            # and its margin 3.9e-5 off (within the checks' tolerance) was dropped: digits, standardized, poly
            # degree 3, Clarabel, pair (1, 5), where that point's k(x, x) is 3.8e4; its decision values moved
            # by 0.99 (0.21 of their size on an unverified pair).
            alpha = np.clip(sol.proved_alpha, 0.0, C_eff)
            support = alpha > 0
            b = float(np.clip(b, sol.checks["b_lower"], sol.checks["b_upper"]))
        else:
            support = support_mask(alpha, signs, sol.decision, C_eff)
        w = None
        if self.kernel_.name == "linear":
            from_alpha = proved or sol.w is None
            w = X_pair[support].T @ (alpha * signs)[support] if from_alpha else sol.w
        return _PairFit(rows, alpha * signs, support, b, w, sol)

    def _store(self, X: np.ndarray, y_index: np.ndarray, fits: list[_PairFit]) -> None:
        """The fitted attributes in SVC's layout (module docstring)."""
        n_classes = self.classes_.size
        # Two classes: positive towards classes_[1] (as fitted). More: LIBSVM's pair sign,
        # positive towards the pair's lower class i, so every coefficient and b flips.
        flip = 1.0 if n_classes == 2 else -1.0
        is_sv = np.zeros(y_index.size, dtype=bool)
        for fit in fits:
            is_sv[fit.index[fit.support]] = True
        support = np.concatenate([np.flatnonzero(is_sv & (y_index == c)) for c in range(n_classes)])
        position = np.full(y_index.size, -1)
        position[support] = np.arange(support.size)
        dual_coef = np.zeros((n_classes - 1, support.size))
        for (i, j), fit in zip(_class_pairs(n_classes), fits):
            rows = fit.index[fit.support]
            own = y_index[rows]
            other = np.where(own == i, j, i)
            dual_coef[np.where(other > own, other - 1, other), position[rows]] = flip * fit.coef[fit.support]

        self.solutions_ = [fit.solution for fit in fits]
        self.solution_ = self.solutions_[0]
        self.support_ = support.astype(np.int32)
        self.support_vectors_ = np.empty((0, 0)) if self.kernel == "precomputed" else X[support]  # sparse as X
        self.dual_coef_ = sp.csr_matrix(dual_coef) if self._sparse else dual_coef  # SVC's: sparse after a sparse fit
        self.n_support_ = np.bincount(y_index[support], minlength=n_classes).astype(np.int32)
        self.intercept_ = np.array([flip * fit.b for fit in fits])
        if hasattr(self, "coef_"):
            del self.coef_  # a refit with a non-linear kernel must not keep a stale w
        if self.kernel_.name == "linear":
            self.coef_ = np.vstack([flip * np.asarray(fit.w, dtype=float) for fit in fits])
            if self._sparse:
                self.coef_ = sp.csr_matrix(self.coef_)

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
            advice = "another backend" if self.profile == "high" else "profile='high' or another backend"
            kept = ("; the model holds the optimum the checks proved from the solver's active set"
                    if sol.proved_alpha is not None else "")
            warnings.warn(
                f"{where}: the solver claimed optimal but the project's checks did not pass "
                f"({sol.checks.get('verdict', '')}){kept}; try {advice}",
                ConvergenceWarning,
                stacklevel=4,
            )

    # ------------------------------------------------------------------ predict

    def _pair_values(self, X) -> np.ndarray:
        """The pairs' decision values, shape (n_samples, n_pairs), in the fitted sign convention."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse="csr", accept_large_sparse=False)
        if sp.issparse(X) and not getattr(self, "_sparse", False) and not callable(self.kernel):  # SVC's rule
            raise ValueError(f"cannot use sparse input in {type(self).__name__!r} trained on dense data")
        # the kernel values of X against the support vectors: small products, one BLAS thread as in fit
        with _blas_threads_for(max(X.shape[0], self.support_.size)):
            return self._pair_values_of(X)

    def _pair_values_of(self, X: np.ndarray) -> np.ndarray:
        coef, dual_coef = (A.toarray() if sp.issparse(A) else A for A in (getattr(self, "coef_", None), self.dual_coef_))
        if self.kernel_.name == "linear":
            return X @ coef.T + self.intercept_
        if self.kernel == "precomputed":  # validate_data checked: one column per training sample
            G = X[:, self.support_]
        elif callable(self.kernel):
            G = self._call_kernel(X, self.support_vectors_)
        else:
            G = gram(self.kernel_, X, self.support_vectors_)
        start = np.concatenate([[0], np.cumsum(self.n_support_)])
        values = np.empty((X.shape[0], self.intercept_.size))
        for k, (i, j) in enumerate(_class_pairs(self.classes_.size)):
            Si, Sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            # class i's coefficients for the pair (i, j) are in row j - 1, class j's in row i
            values[:, k] = G[:, Si] @ dual_coef[j - 1, Si] + G[:, Sj] @ dual_coef[i, Sj]
        return values + self.intercept_

    def decision_function(self, X) -> np.ndarray:
        """Two classes: f(x), positive for classes_[1]. More: the pairs' values ("ovo", positive
        for the pair's lower class) or votes plus confidences per class ("ovr"), as SVC."""
        values = self._pair_values(X)
        if self.classes_.size == 2:
            return values[:, 0]
        if self.decision_function_shape == "ovo":
            return values
        return _ovr(values, self.classes_.size)

    def predict(self, X) -> np.ndarray:
        """The class of most votes over the pairs (ties: the lower index), as LIBSVM; two classes:
        classes_[1] where f(x) > 0."""
        values = self._pair_values(X)  # checks fitted-ness before classes_ is read
        n_classes = self.classes_.size
        if n_classes == 2:
            return self.classes_[(values[:, 0] > 0).astype(int)]
        if self.break_ties and self.decision_function_shape == "ovr":
            return self.classes_[np.argmax(_ovr(values, n_classes), axis=1)]
        votes = np.zeros((values.shape[0], n_classes), dtype=int)
        for k, (i, j) in enumerate(_class_pairs(n_classes)):
            winner = np.where(values[:, k] > 0, i, j)
            np.add.at(votes, (np.arange(values.shape[0]), winner), 1)
        return self.classes_[np.argmax(votes, axis=1)]
