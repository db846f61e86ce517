r"""scikit-learn's NuSVC, SVR, NuSVR and OneClassSVM as the project's estimators, solved by the SVM family's kernel
duals (formulations.family) through solvers.family.solve, every fit verified as SVMClassifier's.

    NuSVMClassifier      NuSVC's drop-in: SVMClassifier's one-vs-one machinery (pairs, votes, "ovr", attributes),
                         each pair the nu-SVC dual
    SVMRegressor         SVR's drop-in: the epsilon-SVR dual
    NuSVMRegressor       NuSVR's drop-in: the nu-SVR dual
    OneClassSVMDetector  OneClassSVM's drop-in: the one-class dual

Each dual is solved by the compiled SMO first (LIBSVM's methods: solvers.family_smo), by the estimator's layer and
backend where SMO's point is neither verified nor proved (_smo_fit says when else). A fit keeps the optimum the
family's checks proved from the solver's point (extras["proved"]); a point they could
not prove is kept with a ConvergenceWarning, a fit with no usable point raises SVMFitError (SVMClassifier._accept).
The fitted attributes are scikit-learn's, in LIBSVM's scale (docs/family.md), from the formulations' with l points:

    NuSVC        dual_coef_ = y alpha / rho, intercept_ = b / rho: decision_function = f / rho
    OneClassSVM  dual_coef_ = nu W alpha, offset_ = nu W rho = -intercept_: decision_function = nu W f
    SVR          dual_coef_ = alpha - alpha*, intercept_ = b: predict = f
    NuSVR(C=c)   the formulation's C is c W (LIBSVM's C is C/W); then as SVR

Weights, as LIBSVM's: a sample of weight <= 0 is left out, and the others scale their points' bounds in the dual
(formulations.family: SVR's C_i = C w_i; the nu members' bounds w_i / sum w, so that nu bounds the weighted
shares). NuSVC ignores class_weight, as scikit-learn's (LIBSVM weighs classes in C-SVC's C only), with a warning.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, OutlierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d, validate_data

from experiments.estimator import (_EARLY_STOP, NONCONVEX_BACKEND, PIPELINE_ADVICE, IndefiniteKernelWarning,
                                   SVMClassifier, SVMFitError, _blas_threads_for, _class_pairs, _num_rows, _numeric,
                                   _PairFit, check_libsvm_parameters, iteration_options,
                                   note_model_is_proof)
from formulations.errors import SVMInputError, plain
from formulations.family import MEMBERS
from formulations.family import validation as family_validation
from formulations.family.common import AT_BOUND
from formulations.family.names import EPS_SVR, NU_SVC, NU_SVR, ONE_CLASS
from formulations.kernels import gram
from formulations.scaling import BadScalingWarning, check_scaling, scaling_effect
from formulations.validation import refuse_masked
from solvers.family import solve as family_solve
from solvers.solution import OPTIMAL

__all__ = ["NuSVMClassifier", "NuSVMRegressor", "OneClassSVMDetector", "SVMFitError", "SVMRegressor"]

#: the fastest verified pair on the family's kernel duals (docs/family.md), as SVMClassifier's
DEFAULT_LAYER, DEFAULT_BACKEND = "pyomo", "piqp"
_ALL_NON_POSITIVE = "Invalid input - all samples have zero or negative weights."


def _solve_member(est, member: str, X, K, y, params: dict):
    """The member's kernel dual on the kept samples (X, or K's block where the kernel is precomputed or callable),
    accepted as SVMClassifier accepts a pair: (Solution, stopped by max_iter). A row whose point the checks did not
    verify, but proved the optimum from, says that the model is that optimum (note_model_is_proof, as
    SVMClassifier's pairs)."""
    sol, stopped_early = _accepted_member(est, member, X, K, y, params)
    if "proved" in sol.extras:
        note_model_is_proof(sol)
    return sol, stopped_early


def _accepted_member(est, member: str, X, K, y, params: dict):
    """_solve_member's row: the compiled SMO first (_smo_fit), then the estimator's layer and backend. The sigmoid
    kernel is solved where its Gram matrix is indefinite, as SVC's: a convex QP solver that finds no KKT point of
    that non-convex dual hands it to Ipopt (through Pyomo), a method for non-convex programs."""
    formulation = f"{member}_kernel_dual"
    fitted = _smo_fit(est, member, X, K, y, params)
    if fitted is not None:
        return fitted
    sol = _solve_with(est, formulation, X, K, y, params, est.backend)
    if sol.extras.get("indefinite_kernel") and not sol.extras.get("kkt_verified") and est.backend != NONCONVEX_BACKEND:
        sol = _handed_over(est, formulation, X, K, y, params, sol, NONCONVEX_BACKEND, layer="pyomo")
    try:
        return sol, est._accept(sol, formulation)
    except SVMFitError as failure:
        if est.max_iter != -1 or est.backend == SECOND_BACKEND or sol.extras.get("indefinite_kernel"):
            raise
        # a backend that stops without a usable point (PIQP at its own iteration cap on x 1e-3 targets, C = 1e5)
        # is not the problem's fault: another method's point, judged by the same checks, before giving up
        second = _handed_over(est, formulation, X, K, y, params, sol, SECOND_BACKEND)
        try:
            return second, est._accept(second, formulation)
        except SVMFitError:
            raise failure from None  # neither: the first backend's failure is the one named


def _handed_over(est, formulation: str, X, K, y, params: dict, first, backend: str, layer: str | None = None):
    """The dual solved again through `backend` (in `layer`) after the `first` row's backend gave no usable point;
    extras["first_backend"] says what the first one ended with."""
    sol = _solve_with(est, formulation, X, K, y, params, backend, layer=layer)
    sol.extras["first_backend"] = f"{first.backend}: {first.status} ({first.message})"
    return sol


#: The backend a fit tries where the estimator's own stops without a usable point (an interior-point method
#: whose iteration cap is its own, not the user's max_iter).
SECOND_BACKEND = "clarabel"


def _smo_fit(est, member: str, X, K, y, params: dict):
    """(Solution, False) from the compiled SMO (solvers.family method "smo", LIBSVM's methods) where the checks
    verified its point or proved the optimum from it; None otherwise, where max_iter caps a backend's iterations,
    and for the sigmoid kernel, weighted points or C = inf (the estimator's layer and backend then fit)."""
    weighted = params.get("sample_weight") is not None
    hard = not math.isfinite(float(params.get("C") or 0.0))
    if est.max_iter != -1 or (K is None and not est.kernel_.mercer_by_theorem) or weighted or hard:
        return None  # solvers.family.choose_method: SMO's form has one finite bound for every point
    formulation = f"{member}_kernel_dual"
    n = K.shape[0] if K is not None else X.shape[0]
    variables = n * (2 if member in (EPS_SVR, NU_SVR) else 1)  # alpha and alpha* per point
    steps = max(SMO_MIN_STEPS, SMO_STEPS_PER_VARIABLE * variables)
    sol = _solve_with(est, formulation, X, K, y, params, est.backend, method="smo", options={"max_iter": steps})
    if sol.status != OPTIMAL and sol.proved_alpha is None:
        return None
    try:
        return sol, est._accept(sol, formulation)
    except SVMFitError:
        return None


#: SMO's steps in a fit before the layer and backend take over: a few hundred per variable is far more than any
#: well-scaled problem takes, while SMO's worst case (a huge effective C: targets in units 1e-6) runs to LIBSVM's
#: 10^7 steps, where the interior-point QP is verified in seconds (docs/family.md)
SMO_STEPS_PER_VARIABLE = 500
SMO_MIN_STEPS = 100_000


def _solve_with(est, formulation: str, X, K, y, params: dict, backend: str, layer: str | None = None,
                method: str = "full", options: dict | None = None):
    """The member's kernel dual through `backend` in the estimator's layer (or `layer`) and profile (method
    "full"), or by the compiled SMO (method "smo", with its options); the sigmoid kernel's Gram matrix allowed to
    be indefinite (as SVC's), a precomputed or callable one not (as SVMClassifier's: there the project cannot tell
    an indefinite matrix was meant)."""
    kwargs = {"layer": layer or est.layer, "backend": backend, "profile": est.profile, "method": method,
              **(iteration_options(backend, est.max_iter) if options is None else {"options": options})}
    n = K.shape[0] if K is not None else X.shape[0]
    with _blas_threads_for(n):  # SVMClassifier's rule: small dense algebra on one BLAS thread
        if K is not None:
            return family_solve(formulation, None, y, K=K, **params, **kwargs)
        return family_solve(formulation, X, y, kernel=est.kernel_, allow_indefinite=not est.kernel_.mercer_by_theorem,
                            **params, **kwargs)


def _point(sol) -> dict:
    """The model's values: the proved optimum where the checks proved one (a non-convex dual's KKT point), else
    the row's own point."""
    proved = sol.extras.get("proved", sol.extras.get("kkt_point"))
    if proved is not None:
        return proved
    b = sol.b if math.isfinite(sol.b) else sol.extras.get("unverified", {}).get("b", math.nan)
    point = {**sol.extras, "alpha": sol.alpha, "b": b}
    if not np.all(np.isfinite(point["coef"])) or not math.isfinite(b):
        raise SVMFitError(f"{sol.formulation}: the solver's point is not finite")
    return point


def _support(point: dict, bound: float, proved: bool) -> np.ndarray:
    """Where alpha (or alpha*) is nonzero: exactly for a proved optimum (its zeros are exact), above AT_BOUND of
    `bound` (the box's bound, or the largest coefficient) for a solver's point."""
    alpha = np.asarray(point["alpha"], dtype=float)
    if "alpha_star" in point:
        alpha = np.maximum(alpha, np.asarray(point["alpha_star"], dtype=float))
    return alpha > (0.0 if proved else AT_BOUND * bound)


# --------------------------------------------------------------------------- NuSVC


class NuSVMClassifier(SVMClassifier):
    """NuSVC's interface and defaults: each pair of classes solved as the nu-SVC kernel dual (0 < alpha_i <= 1/l,
    sum alpha_i = nu, sum alpha_i y_i = 0) and verified; the rest (one-vs-one, predict, decision_function,
    attributes) as SVMClassifier's. nu in (0, 1] must be feasible for every pair's class balance:
    nu <= 2 min(l_i, l_j) / (l_i + l_j). layer, backend, profile: as SVMClassifier's."""

    def __init__(self, nu: float = 0.5, kernel="rbf", degree: int = 3, gamma="scale", coef0: float = 0.0,
                 shrinking: bool = True, probability="deprecated", tol: float = 1e-3, cache_size: float = 200,
                 class_weight=None, verbose: bool = False, max_iter: int = -1, decision_function_shape: str = "ovr",
                 break_ties: bool = False, random_state=None, layer: str = DEFAULT_LAYER,
                 backend: str = DEFAULT_BACKEND, profile: str = "default"):
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.layer = layer
        self.backend = backend
        self.profile = profile

    def _resolved_formulation(self) -> str:
        self._check_svc_parameters()
        return f"{NU_SVC}_kernel_dual"

    def _resolved_C(self, formulation: str) -> float:
        return family_validation.check_nu(self.nu)  # nu takes C's place in SVMClassifier's fit

    def _sample_C(self, nu: float, y_index: np.ndarray, sample_weight):
        """(rows kept, nu): rows of weight <= 0 left out, as LIBSVM; the kept rows' weights (self._row_weights, by
        row of X, None without sample_weight) scale their bounds in each pair's dual. class_weight is ignored,
        as NuSVC's."""
        if self.class_weight is not None:
            warnings.warn("class_weight is ignored by NuSVMClassifier, as by scikit-learn's NuSVC (LIBSVM weighs the "
                          "classes in C-SVC's C only, and nu-SVC has no C): weigh the samples with sample_weight",
                          UserWarning, stacklevel=3)
        keep, weights = _kept(sample_weight, y_index.size)
        if np.unique(y_index[keep]).size < 2:
            raise SVMInputError("specified nu is infeasible: all samples with positive weights belong to the same "
                                "class (nu-SVC needs nu <= 2 min(n+, n-)/n = 0 here)")
        self._row_weights = None
        if weights is not None:
            self._row_weights = np.full(y_index.size, np.nan)
            self._row_weights[keep] = weights
        return keep, nu

    def _pair_weights_of(self, rows: np.ndarray) -> np.ndarray | None:
        """The weights of a pair's rows (None: unweighted)."""
        return None if self._row_weights is None else self._row_weights[rows]

    def _fit_pairs(self, formulation: str, X, K, C, kept: np.ndarray, y_index: np.ndarray, row_C) -> list[_PairFit]:
        for i, j in _class_pairs(self.classes_.size):  # every pair's nu checked before any solve
            rows = kept[np.isin(y_index[kept], (i, j))]
            why = family_validation.nu_balance_problem(C, np.where(y_index[rows] == j, 1.0, -1.0),
                                                       self._pair_weights_of(rows))
            if why:
                raise SVMInputError(f"specified nu is infeasible for classes {plain(self.classes_[i])!r} and "
                                    f"{plain(self.classes_[j])!r} (nu = {C:g}): {why}")
        return super()._fit_pairs(formulation, X, K, C, kept, y_index, row_C)

    def _smo_first(self) -> bool:
        """Never: the compiled SMO solves the C-SVM's dual; nu-SVC's pairs go through the family's solve."""
        return False

    def _fit_pair(self, formulation: str, X, K, rows: np.ndarray, signs: np.ndarray, nu, *_) -> _PairFit:
        """The pair's nu-SVC, in LIBSVM's scale (coef = y alpha / rho, b / rho: f / rho, module docstring). `*_`:
        what SVMClassifier's SMO path hands a pair (its first solve), which nu-SVC has not."""
        K_pair = K[np.ix_(rows, rows)] if K is not None else None
        params = {"nu": nu, "sample_weight": self._pair_weights_of(rows)}
        sol, stopped_early = _solve_member(self, NU_SVC, None if K is not None else X[rows], K_pair, signs, params)
        proved = "proved" in sol.extras or "kkt_point" in sol.extras
        point = _point(sol)
        rho = float(point["rho"])
        # rho* = 0 refused whatever the sign of its rounding (+4e-17 divided into coefficients of 1e16); a non-convex
        # dual's KKT point may have rho < 0: LIBSVM divides by it all the same (f / rho)
        if _rho_is_zero(rho, sol) or not (rho > 0 or sol.extras.get("indefinite_kernel")):
            raise SVMFitError(_no_margin(rho, nu, signs, params["sample_weight"], sol))
        alpha = np.asarray(point["alpha"], dtype=float)
        weights = params["sample_weight"]
        bound = 1.0 / rows.size if weights is None else float(np.max(weights) / weights.sum())  # the box's largest
        return _PairFit(rows, alpha * signs / rho, _support(point, bound, proved), float(point["b"]) / rho,
                        sol, stopped_early)


#: |rho| at most this fraction of the size of the terms f is made of is rho = 0 to rounding
RHO_ROUNDING = 1e-9


def _terms_of_f(sol) -> float:
    """The size of the terms f is made of where the proved optimum is degenerate (w* = 0), else 0."""
    return float(sol.checks.get("degenerate_floor") or 0.0)


def _rho_is_zero(rho: float, sol) -> bool:
    """Whether a pair's rho is rho* = 0 to rounding: the proved optimum is degenerate (w* = 0, so rho* = 0), or
    |rho| is at most RHO_ROUNDING times the size of the terms f is made of."""
    return bool(sol.extras.get("degenerate")) or abs(rho) <= RHO_ROUNDING * _terms_of_f(sol)


def _no_margin(rho: float, nu: float, signs: np.ndarray, weights, sol) -> str:
    """Why a pair's nu-SVC has no decision function: rho* = 0 (_rho_is_zero, said as 0 whatever its rounding) or
    rho < 0."""
    # rho = 0 when the classes' reduced convex hulls meet; a larger nu shrinks them (each point's weight in its
    # hull is at most 2 / (nu l)), so the way out is a larger nu, up to the balance bound
    limit = family_validation.nu_svc_limit(signs, weights)
    terms = _terms_of_f(sol)
    if _rho_is_zero(rho, sol):
        what = "rho is 0 to rounding" + (f" (|rho| = {abs(rho):.1e}, the terms of f {terms:.3g})" if terms else "")
    else:
        what = f"rho is {rho:.6g}"
    return (f"nu-SVC for classes of this pair at nu = {nu:g}: {what}, so there is no margin: the classes overlap "
            "completely at this nu (their reduced convex hulls meet) and LIBSVM's decision function f / rho is not "
            f"defined; try a larger nu (a small nu lets the hulls grow; nu <= 2 min(n+, n-)/n = {limit:.6g} here) or "
            "a kernel that separates the classes")


# --------------------------------------------------------------------------- one model: SVR, NuSVR, OneClassSVM


class _FamilyModel(BaseEstimator):
    """What SVR, NuSVR and OneClassSVM share: one kernel dual of the kept samples, f(x) = sum_SV dual_coef_
    k(sv, x) + intercept_. The kernel, Gram matrix and acceptance are SVMClassifier's own."""

    _member: str  # formulations.family's member name

    _resolved_kernel = SVMClassifier._resolved_kernel
    _training_gram = SVMClassifier._training_gram
    _call_kernel = SVMClassifier._call_kernel
    _sparse_options = SVMClassifier._sparse_options
    _accept = SVMClassifier._accept

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def _parameters(self, total: float) -> dict:
        """The member's parameters in the formulation's scale (total: the kept samples' weights' sum, their
        number without weights)."""
        raise NotImplementedError

    def _scale(self, total: float) -> float:
        """LIBSVM's scale of the dual coefficients and intercept against the formulation's (total: _parameters')."""
        return 1.0

    def _fit(self, X, y, sample_weight):
        refuse_masked(X, "X")
        if sparse.issparse(X) and self.kernel == "precomputed":
            raise TypeError("Sparse precomputed kernels are not supported.")
        member = MEMBERS[self._member]
        given = {name: getattr(self, name) for name in member.parameters}
        family_validation.check_parameters(member, given)  # each refused by name before any work
        check_libsvm_parameters(self)
        self._raw_X = callable(self.kernel) and not _numeric(X)
        if self._raw_X:  # X goes to the callable as given (scikit-learn's: strings too)
            if y is not None:
                check_consistent_length(X, y)
                y = family_validation.check_targets(column_or_1d(y, warn=True), _num_rows(X))
        elif y is None:
            X = validate_data(self, X, dtype=np.float64, **self._sparse_options())
        else:
            refuse_masked(y, "y")
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, **self._sparse_options())
        self._sparse = sparse.issparse(X) and not callable(self.kernel)
        keep, weights = _kept(sample_weight, _num_rows(X))
        if y is None and keep.size < 2:  # before the kernel: one point is its own region, nothing to learn
            raise SVMInputError(f"{type(self).__name__} needs at least 2 samples, got n_samples = {keep.size}")
        self._total_weight = float(keep.size if weights is None else weights.sum())
        params = {**self._parameters(self._total_weight), "sample_weight": weights}
        self.kernel_ = self._resolved_kernel(None if self._raw_X else X)
        K = self._training_gram(X)
        self.shape_fit_ = X.shape if hasattr(X, "shape") else (_num_rows(X),)
        if K is None:
            check_scaling(X, advice=PIPELINE_ADVICE.replace("SVMClassifier", type(self).__name__),
                          effect=scaling_effect(self.kernel_))
        began = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BadScalingWarning)
            sol, stopped_early = _solve_member(self, self._member, None if K is not None else X[keep],
                                               None if K is None else K[np.ix_(keep, keep)],
                                               None if y is None else y[keep], params)
        if self.verbose:
            print(f"[{type(self).__name__}] {sol.status} via {sol.layer}/{sol.backend}, {sol.iterations} iterations, "
                  f"{time.perf_counter() - began:.3g} s")
        self._store(X, keep, sol, stopped_early)
        if sol.extras.get("indefinite_kernel"):
            warnings.warn(f"the kernel matrix is not positive semidefinite ({sol.extras.get('kernel')}, min eigenvalue "
                          f"{sol.extras.get('min_eigenvalue', math.nan):.3g}): the dual is non-convex, and the point "
                          f"kept meets its KKT conditions but is not proved to be the global optimum (LIBSVM returns "
                          f"such a point too)", IndefiniteKernelWarning, stacklevel=3)
        return self

    def _store(self, X, keep: np.ndarray, sol, stopped_early: bool) -> None:
        proved = "proved" in sol.extras or "kkt_point" in sol.extras
        point = _point(sol)
        scale = self._scale(self._total_weight)
        bound = max(np.max(np.abs(point["coef"])), np.finfo(float).tiny)
        inside = _support(point, bound, proved)
        self.support_ = keep[inside].astype(np.int32)
        self.support_vectors_ = np.empty((0, 0)) if self.kernel == "precomputed" else _safe_indexing(X, self.support_)
        self._X_fit = X if callable(self.kernel) else None
        self._dual_coef = scale * np.asarray(point["coef"], dtype=float)[inside][None, :]
        self.dual_coef_ = sparse.csr_matrix(self._dual_coef) if self._sparse else self._dual_coef
        self.intercept_ = np.array([scale * float(point["b"])])
        self._n_support = np.array([inside.sum()], dtype=np.int32)
        self.n_iter_ = int(sol.iterations or 0)
        self.fit_status_ = int(stopped_early)
        self.solution_ = sol
        if stopped_early:
            warnings.warn(_EARLY_STOP.format(self.max_iter), ConvergenceWarning, stacklevel=3)

    @property
    def n_support_(self) -> np.ndarray:
        """Number of support vectors (one entry, as scikit-learn's for SVR, NuSVR and OneClassSVM)."""
        check_is_fitted(self, "_n_support")
        return self._n_support

    @property
    def coef_(self):
        """w = sum_SV dual_coef_ sv (linear kernel only), read-only, as scikit-learn's."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        check_is_fitted(self, "_n_support")
        coef = self.support_vectors_.T @ self._dual_coef.ravel()
        coef = np.asarray(coef, dtype=float).reshape(1, -1)
        if self._sparse:
            return sparse.csr_matrix(coef)
        coef.flags.writeable = False
        return coef

    def _decision(self, X) -> np.ndarray:
        """f(x) in LIBSVM's scale: sum_SV dual_coef_ k(sv, x) + intercept_."""
        return self._decision_and_rounding(X)[0]

    def _decision_and_rounding(self, X) -> tuple[np.ndarray, np.ndarray]:
        """f(x), and the rounding of its sum: 16 eps (sum_SV |dual_coef_ k(sv, x)| + |intercept_|)."""
        check_is_fitted(self, "_n_support")
        refuse_masked(X, "X")
        if sparse.issparse(X) and not self._sparse and not callable(self.kernel):
            raise ValueError(f"cannot use sparse input in {type(self).__name__!r} trained on dense data")
        if not self._raw_X:
            X = validate_data(self, X, dtype=np.float64, reset=False, **self._sparse_options())
        if self.kernel == "precomputed":
            if X.shape[1] != self.shape_fit_[0]:
                raise SVMInputError(f"X.shape[1] = {X.shape[1]} should be equal to {self.shape_fit_[0]}, "
                                    "the number of samples at training time")
            G = X[:, self.support_]
        elif callable(self.kernel):
            G = self._call_kernel(X, self._X_fit)[:, self.support_]
        else:
            G = gram(self.kernel_, X, self.support_vectors_)
        coef = self._dual_coef.ravel()
        f = np.asarray(G @ coef, dtype=float).ravel() + self.intercept_[0]
        terms = np.asarray(abs(G) @ np.abs(coef), dtype=float).ravel() + abs(self.intercept_[0])
        return f, 16 * np.finfo(float).eps * terms


def _kept(sample_weight, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(the rows of weight > 0, their weights: None without sample_weight); LIBSVM leaves samples of weight <= 0
    out."""
    if sample_weight is None:
        return np.arange(n), None
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    if weights.shape != (n,):
        raise SVMInputError(f"sample_weight must have shape ({n},) (one weight per sample), got shape {weights.shape}")
    if not np.all(np.isfinite(weights)):
        raise SVMInputError("sample_weight must be finite")
    keep = np.flatnonzero(weights > 0)
    if keep.size == 0:
        raise SVMInputError(_ALL_NON_POSITIVE)
    return keep, weights[keep]


class _Regressor(RegressorMixin, _FamilyModel):
    def fit(self, X, y, sample_weight=None):
        """Solve the member's kernel dual on (X, y) and keep the verified optimum."""
        if y is None:
            raise SVMInputError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        return self._fit(X, y, sample_weight)

    def predict(self, X) -> np.ndarray:
        """f(x) = sum_SV dual_coef_ k(sv, x) + intercept_."""
        return self._decision(X)


class SVMRegressor(_Regressor):
    """SVR's interface and defaults, solved as the epsilon-SVR kernel dual (0 <= alpha, alpha* <= C,
    sum (alpha - alpha*) = 0) and verified. C > 0, epsilon >= 0 (the tube's half-width); kernel, degree, gamma,
    coef0 as SVR's; tol, shrinking, cache_size accepted for SVR's interface (the profile sets the accuracy);
    max_iter caps the backend's iterations. layer, backend, profile: as SVMClassifier's."""

    _member = EPS_SVR

    def __init__(self, *, kernel="rbf", degree: int = 3, gamma="scale", coef0: float = 0.0, tol: float = 1e-3,
                 C: float = 1.0, epsilon: float = 0.1, shrinking: bool = True, cache_size: float = 200,
                 verbose: bool = False, max_iter: int = -1, layer: str = DEFAULT_LAYER,
                 backend: str = DEFAULT_BACKEND, profile: str = "default"):
        self.kernel, self.degree, self.gamma, self.coef0, self.tol = kernel, degree, gamma, coef0, tol
        self.C, self.epsilon, self.shrinking, self.cache_size = C, epsilon, shrinking, cache_size
        self.verbose, self.max_iter = verbose, max_iter
        self.layer, self.backend, self.profile = layer, backend, profile

    def _parameters(self, total: float) -> dict:
        return {"C": float(self.C), "epsilon": float(self.epsilon)}


class NuSVMRegressor(_Regressor):
    """NuSVR's interface and defaults, solved as the nu-SVR kernel dual and verified: nu in (0, 1] bounds the
    fraction of points outside the tube from above and of support vectors from below; the formulation's C is
    C l (LIBSVM's C is the formulation's C / l, docs/family.md). layer, backend, profile: as SVMClassifier's."""

    _member = NU_SVR

    def __init__(self, *, nu: float = 0.5, C: float = 1.0, kernel="rbf", degree: int = 3, gamma="scale",
                 coef0: float = 0.0, shrinking: bool = True, tol: float = 1e-3, cache_size: float = 200,
                 verbose: bool = False, max_iter: int = -1, layer: str = DEFAULT_LAYER,
                 backend: str = DEFAULT_BACKEND, profile: str = "default"):
        self.nu, self.C, self.kernel, self.degree, self.gamma, self.coef0 = nu, C, kernel, degree, gamma, coef0
        self.shrinking, self.tol, self.cache_size = shrinking, tol, cache_size
        self.verbose, self.max_iter = verbose, max_iter
        self.layer, self.backend, self.profile = layer, backend, profile

    def _parameters(self, total: float) -> dict:
        return {"C": float(self.C) * total, "nu": float(self.nu)}  # LIBSVM's box c w_i is C w_i / W


class OneClassSVMDetector(OutlierMixin, _FamilyModel):
    """OneClassSVM's interface and defaults, solved as the one-class kernel dual (0 <= alpha_i <= 1/(nu l),
    sum alpha_i = 1) and verified: decision_function = nu l f (LIBSVM's scale), positive inside the region;
    offset_ = nu l rho; score_samples = decision_function + offset_. Needs two points at least.
    layer, backend, profile: as SVMClassifier's."""

    _member = ONE_CLASS

    def __init__(self, *, kernel="rbf", degree: int = 3, gamma="scale", coef0: float = 0.0, tol: float = 1e-3,
                 nu: float = 0.5, shrinking: bool = True, cache_size: float = 200, verbose: bool = False,
                 max_iter: int = -1, layer: str = DEFAULT_LAYER, backend: str = DEFAULT_BACKEND,
                 profile: str = "default"):
        self.kernel, self.degree, self.gamma, self.coef0, self.tol, self.nu = kernel, degree, gamma, coef0, tol, nu
        self.shrinking, self.cache_size, self.verbose, self.max_iter = shrinking, cache_size, verbose, max_iter
        self.layer, self.backend, self.profile = layer, backend, profile

    def _parameters(self, total: float) -> dict:
        return {"nu": float(self.nu)}

    def _scale(self, total: float) -> float:
        return float(self.nu) * total  # LIBSVM's alpha: nu W times the formulation's

    def fit(self, X, y=None, sample_weight=None):
        """Solve the one-class kernel dual on X (y is ignored, as scikit-learn's) and keep the verified optimum."""
        self._fit(X, None, sample_weight)
        self.offset_ = -self.intercept_[0]
        return self

    def decision_function(self, X) -> np.ndarray:
        """nu l f(x): positive inside the learned region, negative outside (LIBSVM's scale). The proved optimum
        puts the free support vectors on the boundary, at 0 up to the rounding of the kernel sum: a value within
        that rounding is 0, so that a point's side does not depend on how the sum was rounded (dense or sparse X,
        one point or many)."""
        f, rounding = self._decision_and_rounding(X)
        return np.where(np.abs(f) <= rounding, 0.0, f)

    def score_samples(self, X) -> np.ndarray:
        """decision_function(X) + offset_ (the kernel part, LIBSVM's scale)."""
        return self.decision_function(X) + self.offset_

    def predict(self, X) -> np.ndarray:
        """+1 inside the region or on its boundary (decision value >= 0, scikit-learn's rule for outlier
        detectors), -1 outside."""
        return np.where(self.decision_function(X) >= 0, 1, -1)
