r"""`SVMClassifier`: the project's SVMs behind scikit-learn's estimator interface, a drop-in for `SVC`.

A student can use it wherever they would use ``sklearn.svm.SVC`` (``fit``/``predict``/
``decision_function``/``score``, ``GridSearchCV``, ``Pipeline``, ``sample_weight``,
``class_weight``, ``kernel="precomputed"`` or a callable kernel, any number of classes), but
choose *what* is solved (the formulation), *in which modelling layer* (Pyomo or cvxpy) and
*by which solver* (the backend). By default (``layer="auto"``) a kernel SVM's pairs are solved by the
compiled SMO on blocks of one Gram matrix per fit (solvers.algorithms.smo_gram), anything else through
:func:`solvers.api.solve`; either way every two-class point goes through the project's closing checks
(duality gap, KKT residuals, kernel values recomputed, the optimum proved) before it is accepted.

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
(formulations.penalty). Samples of weight <= 0 are left out, as SVC does (a weight of 0 means
removing the sample; a negative bound has no meaning).

The intercept. Where some alpha_i of a pair is strictly between 0 and C_i, b is unique; where none is,
every b of an interval is optimal and ``intercept_`` is its midpoint, as LIBSVM's rule (for one C and
per-sample C_i alike, so weights all 1.0 give the unweighted fit). The stored model is the optimum the
project's checks proved from the solver's point (solvers.reference), whatever the solver's own claim:
a fit warns (ConvergenceWarning) only where no such proof was found, or where ``max_iter`` stopped it.

Beyond SVC: ``formulation``, ``layer``, ``backend``, ``profile`` and ``method`` choose what is solved
and how. ``probability`` is deprecated as in SVC (scikit-learn 1.9): for probabilities wrap the
estimator, ``CalibratedClassifierCV(SVMClassifier(), ensemble=False)``. SVC parameters that mean
nothing here (``shrinking``, ``cache_size``, ``tol``, ``random_state``) are accepted and validated,
and their docstrings say so. Sparse X: a callable kernel takes it as it is.

Formulations (001 / 000 notation):

* ``hard_primal``  min 1/2 ||w||^2  s.t. y_i (w'x_i + b) >= 1          (C is ignored)
* ``soft_primal``  min 1/2 ||w||^2 + sum_i C_i xi_i  s.t. y_i (w'x_i + b) >= 1 - xi_i, xi >= 0
* ``dual``         max sum alpha_i - 1/2 ||sum alpha_i y_i x_i||^2,  sum alpha_i y_i = 0,
                   0 <= alpha_i <= C_i  (C = inf: the hard-margin dual of Example 5.2)
* ``kernel_dual``  the dual with K_ij = k(x_i, x_j) in place of x_i'x_j (any kernel)
* ``auto``         ``soft_primal`` for the linear kernel (``dual`` at C = inf), ``kernel_dual`` otherwise
                   (SVC's default kernel, rbf). With layer and method "auto", a linear-kernel pair is first
                   solved as SVC solves it, its dual by SMO on the Gram matrix, for a budget of steps; past it
                   (SMO's steps grow with C and the features' scale), by the soft primal's working set.

The first three are linear SVMs and accept only ``kernel="linear"``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import numbers
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing, deprecated
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d, validate_data

from experiments.estimator_gram import PairBlock, SharedGram
from formulations.errors import SVMInputError, plain
from formulations.kernels import Kernel, gram
from formulations.recovery import support_mask
from formulations.scaling import BadScalingWarning, Standardizer, check_scaling, scaling_effect
from formulations.validation import check_choice, memory_budget, products_finite, refuse_masked
from solvers import blas
from solvers.solution import INFEASIBLE, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, Solution, UNBOUNDED
from solvers.algorithms import smo_gram
from solvers.algorithms.compiled_gram import gram_threads, let_go
from solvers.algorithms.kernel_rows import FullGram, GramBlock, gram_allowed, gram_first
from solvers.api import solve
from solvers.backends import get_record
from solvers.checks import estimate_multipliers
from solvers.reference import Gram, polish
from solvers.registry import BACKEND_NAMES

__all__ = ["FORMULATION_CHOICES", "KERNEL_CHOICES", "IndefiniteKernelWarning", "SVMClassifier", "SVMFitError"]

FORMULATION_CHOICES = ("auto", "soft_primal", "dual", "kernel_dual", "hard_primal")
KERNEL_CHOICES = ("linear", "poly", "rbf", "sigmoid", "precomputed")
LAYER_CHOICES = ("auto", "pyomo", "cvxpy", "direct")
_LINEAR_ONLY = ("soft_primal", "dual", "hard_primal")
#: SVC's message for a fit stopped by max_iter (scikit-learn's tests match it)
_EARLY_STOP = ("Solver terminated early (max_iter={}).  Consider pre-processing your data with StandardScaler "
               "or MinMaxScaler.")
_NOT_FINITE = ("The dual coefficients or intercepts are not finite. The input data may contain large values and "
               "need to be preprocessed.")


#: Up to this many samples a pair is solved, and predicted, with one BLAS thread: its dense algebra is too small
#: to gain from threads, and threads that wait for busy cores cost more than the work (docs/benchmarks.md).
ONE_BLAS_THREAD_UP_TO = 10_000
#: Below this many samples BLAS's threads are left as they are: its calls are too small for them to matter (a fit
#: took the same time either way up to 250 samples, 1.4x longer with them at 300), and limiting them costs a first
#: fit threadpoolctl's scan of the process's libraries, more than such a fit (docs/benchmarks.md).
ONE_BLAS_THREAD_FROM = 251


def _class_pairs(n_classes: int) -> list[tuple[int, int]]:
    """The one-vs-one pairs (i, j), i < j, in LIBSVM's order: the order of intercept_ and solutions_."""
    return list(itertools.combinations(range(n_classes), 2))


def _ovr(pair_values: np.ndarray, n_classes: int) -> np.ndarray:
    """SVC's "ovr" values from the pairs' (LIBSVM's sign: positive for the pair's lower class i): each class's
    votes plus its summed confidence squashed into (-1/3, 1/3), which breaks ties (LIBSVM's formula, as
    scikit-learn's ovr transform; a value of exactly 0 votes for i, as there)."""
    votes = np.zeros((pair_values.shape[0], n_classes))
    confidence = np.zeros_like(votes)
    for k, (i, j) in enumerate(_class_pairs(n_classes)):
        v = pair_values[:, k]
        votes[:, i] += v >= 0
        votes[:, j] += v < 0
        confidence[:, i] += v
        confidence[:, j] -= v
    return votes + confidence / (3 * (np.abs(confidence) + 1))


def _blas_threads_for(n: int):
    """One BLAS thread for a small problem (ONE_BLAS_THREAD_FROM to ONE_BLAS_THREAD_UP_TO samples), the library's
    default otherwise."""
    return blas.one_thread_if(ONE_BLAS_THREAD_FROM <= n <= ONE_BLAS_THREAD_UP_TO)


class SVMFitError(RuntimeError):
    """The solver did not return a usable optimum; the message says why."""


def _pair_C(row_C, rows: np.ndarray):
    """A pair's C: the fit's one C, or its rows' C_i."""
    return row_C[rows] if isinstance(row_C, np.ndarray) else row_C


@contextlib.contextmanager
def _cancelled_on_error(futures):
    """A context in which an exception cancels the futures not started yet: a failed fit leaves no SMO runs behind."""
    try:
        yield
    except BaseException:
        for future in futures or ():
            if future is not None:  # a pair not on the fit's Gram matrix runs no SMO ahead
                future.cancel()
        raise


#: The points of all pairs together from which each pair's SMO runs ahead on a second thread (SVMClassifier.
#: _smo_ahead): below, a thread's start and hand-overs cost more than the overlap saves (docs/estimator_speed.md).
SMO_AHEAD_MIN_POINTS = 2_000


#: The interpreter's switch interval (seconds) while a fit's SMO runs ahead (_short_switch_interval): between its
#: compiled calls the SMO thread waits for the interpreter's lock, which the closings hold, and at Python's
#: 5 ms default it waited up to that long each time.
AHEAD_SWITCH_INTERVAL = 2e-4
_switching = threading.Lock()  # guards the two below
_switch_users = 0  # fits in a short interval now
_switch_found = 0.0  # the interval the first of them found

#: A linear-kernel pair's SMO steps before it goes to the soft primal's working set (_pair_solution): about the
#: primal's time, LINEAR_SMO_WORK point-steps (each step costs up to a pass over the pair's points, ~2.7 ns a
#: point), and at least LINEAR_SMO_STEPS_PER_POINT a point. SMO's steps grow with C and the features' scale, the
#: primal's cost does not (docs/estimator_speed.md).
LINEAR_SMO_WORK = 5_000_000
LINEAR_SMO_STEPS_PER_POINT = 2

#: A kernel pair's SMO steps per point before it goes to the kernel dual's solver alone (_pair_solution: SMO to a
#: loose tolerance, then the free points' block solved exactly, solvers.algorithms.smo_dual). SMO's steps grow with
#: C past anything the block costs (noisy moons, C = 1e5: 86,000 a point); on the data measured a fit that SMO
#: finishes takes at most a few hundred a point (docs/estimator_speed.md).
KERNEL_SMO_STEPS_PER_POINT = 100


@contextlib.contextmanager
def _short_switch_interval():
    """A context in which the interpreter's switch interval is at most AHEAD_SWITCH_INTERVAL; the interval found
    is put back when the last such context (of any thread's fit) ends."""
    global _switch_users, _switch_found
    with _switching:
        if _switch_users == 0:
            _switch_found = sys.getswitchinterval()
            sys.setswitchinterval(min(AHEAD_SWITCH_INTERVAL, _switch_found))
        _switch_users += 1
    try:
        yield
    finally:
        with _switching:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_found)


def _ahead(block, signs: np.ndarray, C, profile: str, max_iter: int | None):
    """A pair's work made ahead on the SMO thread (SVMClassifier._smo_ahead): its classes' own blocks audited where
    no earlier pair audited them (experiments.estimator_gram.PairBlock: one compiled pass a class), then its first
    SMO run (at most max_iter steps). Both hold none of the interpreter's lock while they compute."""
    if isinstance(block, PairBlock):
        block.audit_classes()
    return smo_gram.first_run(block, signs, C, profile, max_iter)


@dataclass
class _PairFit:
    """One two-class SVM: the samples it was fitted on and its optimum (verified, or stopped by max_iter)."""

    index: np.ndarray  # rows of the training set (class i and class j, weight > 0)
    coef: np.ndarray  # alpha_t y_t on those rows (y_t = +1 for the pair's higher class j)
    support: np.ndarray  # mask over `index`: alpha_t > 0
    b: float
    solution: Solution
    stopped_early: bool  # max_iter stopped the solver before a verified optimum


def _moved_back(fit: _PairFit, X_centered: np.ndarray, centering: Standardizer) -> _PairFit:
    """A pair solved on X - mean (centering), its b for X (Standardizer.weights_to_original), w from the centered
    points."""
    sv = fit.index[fit.support]
    fit.b = centering.weights_to_original(fit.coef[fit.support] @ X_centered[sv], fit.b)[1]
    return fit


#: The estimator's advice for badly scaled features: it takes no standardize option; a Pipeline scales the features,
#: and applies the same scaling to the data it predicts on.
PIPELINE_ADVICE = ("Scale them the scikit-learn way: make_pipeline(StandardScaler(), SVMClassifier(...)) "
                   "(sklearn.pipeline, sklearn.preprocessing)")


#: The backend of a sigmoid pair whose non-convex dual the chosen QP solver could not solve (_solve_features).
NONCONVEX_BACKEND = "ipopt"


class IndefiniteKernelWarning(UserWarning):
    """A pair's kernel matrix was not positive semidefinite: its dual is non-convex (the sigmoid kernel)."""


def _warn_indefinite(fits) -> None:
    """One warning for the pairs whose dual was non-convex (solvers.closing.mark_indefinite flags them)."""
    pairs = [fit.solution for fit in fits if fit.solution.extras.get("indefinite_kernel")]
    if pairs:
        warnings.warn(f"the kernel matrix of {len(pairs)} of {len(fits)} class pair(s) is not positive semidefinite "
                      f"(sigmoid): each such dual is non-convex, and its point meets the KKT conditions but is not "
                      f"proved to be the global optimum (SVC returns such a point too)", IndefiniteKernelWarning,
                      stacklevel=3)


def check_libsvm_parameters(est) -> None:
    """The parameters every LIBSVM estimator of scikit-learn shares (kernel, degree, coef0, tol, cache_size,
    max_iter, shrinking, verbose), each refused with a message naming it (scikit-learn's constraints)."""
    def refuse(name, what):
        raise SVMInputError(f"{name} must be {what}, got {plain(getattr(est, name))!r}")

    def is_real(v):
        return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)

    if not callable(est.kernel) and est.kernel not in KERNEL_CHOICES:
        raise SVMInputError(f"kernel must be one of {KERNEL_CHOICES} or a callable, got {est.kernel!r}")
    if not (isinstance(est.degree, numbers.Integral) and not isinstance(est.degree, bool) and est.degree >= 0):
        refuse("degree", "an integer >= 0")
    if not (is_real(est.coef0) and math.isfinite(est.coef0)):
        refuse("coef0", "a finite number")
    if not (is_real(est.tol) and est.tol > 0):
        refuse("tol", "a number > 0")
    if not (is_real(est.cache_size) and est.cache_size > 0):
        refuse("cache_size", "a number > 0")
    if not (isinstance(est.max_iter, numbers.Integral) and not isinstance(est.max_iter, bool)
            and est.max_iter >= -1 and est.max_iter != 0):
        refuse("max_iter", "-1 (no cap) or an integer >= 1")
    for name in ("shrinking", "verbose"):
        if not isinstance(getattr(est, name), (bool, np.bool_)):
            refuse(name, "True or False")


def iteration_options(backend: str, max_iter: int) -> dict:
    """{"options": {the backend's iteration option: max_iter}} for a cap (the backend's record), {} for -1."""
    if max_iter == -1:
        return {}
    record = get_record(backend)
    option = record.iteration_limit_option if record is not None else None
    if option is None:
        raise SVMInputError(f"max_iter: backend {backend!r} has no iteration limit to set")
    return {"options": {option: int(max_iter)}}


class SVMClassifier(ClassifierMixin, BaseEstimator):
    """SVM classifier solved by the project's formulations and backends (SVC's interface and defaults).

    Parameters
    ----------
    C : float, default=1.0
        Penalty on the slacks, C > 0; ``math.inf`` gives the hard margin (as SVC, which takes it too).
        Ignored by ``hard_primal``.
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"} or callable, default="rbf"
        k(x, x'), with scikit-learn's formulas and parameter names. "precomputed": X is the
        Gram matrix (n x n at fit, n_test x n_train at predict). A callable k(X, Z) returns
        the matrix of kernel values, shape (len(X), len(Z)); X is handed to it as given (strings too).
        A Gram matrix that is not positive semidefinite beyond rounding makes the dual non-convex: for
        a precomputed or callable kernel fit refuses it (IndefiniteKernelError, a ValueError); one
        indefinite only by rounding (formulations.kernels.mercer_check) is solved. The sigmoid kernel,
        indefinite for most data, is fitted as SVC fits it: the pair's dual is solved as it is, and
        where its Gram matrix is indefinite an IndefiniteKernelWarning says that the point meets the
        KKT conditions (checked as any other) but is not proved to be the global optimum.
    degree : int, default=3
        Degree Q of the poly kernel (coef0 + gamma x'x')^Q.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for poly, rbf and sigmoid; "scale" is 1 / (d Var(X)) and
        "auto" is 1 / d, as in ``SVC``. The number used is ``_gamma`` after fit.
    coef0 : float, default=0.0
        The additive constant of the poly and sigmoid kernels.
    shrinking : bool, default=True
        SVC's shrinking heuristic of its SMO solver. Not used: the compiled SMO (``layer="auto"``) always
        shrinks, the other paths have no SMO; accepted for SVC's interface.
    probability : bool, default="deprecated"
        Deprecated by scikit-learn 1.9 for SVC; SVMClassifier has no ``predict_proba``. Setting it
        warns (FutureWarning) and changes nothing: use
        ``CalibratedClassifierCV(SVMClassifier(), ensemble=False)`` for probabilities.
    tol : float, default=1e-3
        SVC's stopping tolerance. No meaning for the backends here: a fit is stopped by the
        ``profile``'s solver tolerances and accepted only when the project's checks verify it to the
        profile's check tolerance (1e-4 "default", 1e-6 "high"); validated (> 0) for SVC's interface.
    cache_size : float, default=200
        SVC's kernel cache in MB. No meaning here: the Gram matrix is formed whole, or its rows on
        demand by the working set within the memory budget (solvers.api.solve); validated (> 0).
    class_weight : dict, "balanced" or None, default=None
        C of class c is C * class_weight[c]; "balanced": n / (n_classes * count(c)), as SVC.
    verbose : bool, default=False
        Print one line per pair of classes: the solve's status, the solver's iterations and the time.
    max_iter : int, default=-1
        The cap on each solve's iterations: SMO's steps where SMO solves the pair (as SVC's), else handed to
        the backend's own iteration option (the backend's record: PIQP's interior-point iterations; for a
        working set, each subproblem's, not its outer steps); -1: no cap (the backend's default).
        A fit it stops keeps the solver's last point, unverified, with SVC's ConvergenceWarning and
        ``fit_status_ = 1`` (as SVC); a point the checks prove optimal all the same is kept without one.
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        The shape of decision_function with more than two classes (as SVC).
    break_ties : bool, default=False
        With more than two classes and "ovr", predict by the largest decision value instead
        of the votes (as SVC; with "ovo", predict refuses it).
    random_state : int, RandomState or None, default=None
        No meaning here: every backend is deterministic and no probability calibration is
        drawn; accepted for SVC's interface.
    formulation : {"auto", "soft_primal", "dual", "kernel_dual", "hard_primal"}, default="auto"
        Which optimization problem is solved (see the module docstring).
    layer : {"auto", "pyomo", "cvxpy", "direct"}, default="auto"
        The modelling layer. "auto", the fast path: a kernel dual whose kernel is positive semidefinite by
        theorem (rbf, poly, linear), with finite C, on dense X, is solved by the compiled SMO on blocks of one
        Gram matrix per fit (solvers.algorithms.smo_gram: no model, the same closing checks), what SMO does not bring to
        a verified optimum and every other problem through Pyomo, as "pyomo". "direct": the solver alone
        (solvers.api.solve's working sets; with ``method="auto"`` the kernel dual by SMO first, as "auto").
        "pyomo" and "cvxpy": every pair as a model of that layer.
    backend : str, default="piqp"
        The solver of the models (``highs, ipopt, clarabel, osqp, scs, piqp, proxqp, daqp``; not used by a
        pair SMO solves); ``solvers.registry.available_backends()`` lists what is installed. PIQP is the
        fastest verified one through Pyomo on small folds (docs/benchmarks.md).
    profile : {"default", "high"}, default="default"
        Solver accuracy profile (solvers.profiles).
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
    coef_ : ndarray of shape (n_classes * (n_classes - 1) / 2, n_features), read-only
        w* of each pair, from ``dual_coef_`` and ``support_vectors_``; linear kernel only (an
        AttributeError otherwise, as in SVC).
    intercept_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        b* of each pair; where b* is not unique (no alpha strictly between 0 and C_i), the midpoint
        of the optimal interval, as LIBSVM.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors (alpha_i > 0 in some pair), by class, then by index.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty for a precomputed kernel (as in SVC).
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV)
        alpha_i y_i of the support vectors in SVC's layout (module docstring).
    n_support_ : ndarray of shape (n_classes,), dtype int32
        Number of support vectors in each class.
    n_iter_ : ndarray of shape (n_classes * (n_classes - 1) / 2,), dtype int32
        Each pair's iterations: SMO's steps where its solve took them (as SVC's), also where the kernel working
        set started from SMO (``extras["smo_steps"]``, which max_iter does not cap: there it caps each
        subproblem); else what the solve reports (``Solution.iterations``: PIQP's interior-point iterations for
        a whole QP).
    fit_status_ : int
        0 when every pair was solved and verified, 1 when max_iter stopped a solve (as SVC).
    shape_fit_ : tuple
        The shape of the training X.
    _gamma : float
        The kernel coefficient used (0.0 for a precomputed or callable kernel, as SVC).
    solution_ : solvers.solution.Solution
        The full record of the (first pair's) solve: status, objective, alpha, checks, timings.
    solutions_ : list of solvers.solution.Solution
        One per pair, in the order of intercept_.
    n_features_in_, feature_names_in_ : as in every scikit-learn estimator.
    """

    def __init__(
        self,
        C: float = 1.0,
        kernel="rbf",
        degree: int = 3,
        gamma="scale",
        coef0: float = 0.0,
        shrinking: bool = True,
        probability="deprecated",
        tol: float = 1e-3,
        cache_size: float = 200,
        class_weight=None,
        verbose: bool = False,
        max_iter: int = -1,
        decision_function_shape: str = "ovr",
        break_ties: bool = False,
        random_state=None,
        formulation: str = "auto",
        layer: str = "auto",
        backend: str = "piqp",
        profile: str = "default",
        method: str = "auto",
    ):
        self.C = C
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
        self.formulation = formulation
        self.layer = layer
        self.backend = backend
        self.profile = profile
        self.method = method

    # ------------------------------------------------------------------ tags

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"  # as SVC: CSR/CSC fits, predicts
        tags.input_tags.pairwise = self.kernel == "precomputed"  # X is a Gram matrix (cross_val_score slices it)
        return tags

    # ------------------------------------------------------------------ parameters

    def _check_svc_parameters(self) -> None:
        """SVC's own parameters, each refused with a message naming it (scikit-learn's constraints for SVC)."""
        check_libsvm_parameters(self)
        if self.decision_function_shape not in ("ovr", "ovo"):
            raise SVMInputError(
                f"decision_function_shape must be 'ovr' or 'ovo', got {self.decision_function_shape!r}")
        if not isinstance(self.break_ties, (bool, np.bool_)):
            raise SVMInputError(f"break_ties must be True or False, got {self.break_ties!r}")
        if self.probability != "deprecated":
            if not isinstance(self.probability, (bool, np.bool_)):
                raise SVMInputError(f"probability must be True or False, got {self.probability!r}")
            name = type(self).__name__
            warnings.warn(
                f"The `probability` parameter was deprecated in scikit-learn 1.9 (SVC) and {name} "
                f"ignores it: it has no predict_proba. Use CalibratedClassifierCV({name}(), "
                "ensemble=False) for probabilities.", FutureWarning, stacklevel=3)

    def _resolved_formulation(self) -> str:
        if self.layer not in LAYER_CHOICES:
            raise SVMInputError(f"layer must be one of {LAYER_CHOICES}, got {self.layer!r}")
        check_choice("backend", self.backend, BACKEND_NAMES)  # also where SMO alone solves every pair
        if self.formulation not in FORMULATION_CHOICES:
            raise SVMInputError(
                f"formulation must be one of {FORMULATION_CHOICES}, got {self.formulation!r}"
            )
        self._check_svc_parameters()
        if self.formulation == "auto":
            if self.kernel != "linear":
                return "kernel_dual"
            # C = inf: the hard margin; the linear dual takes it (the soft primal needs a finite C)
            return "dual" if _is_inf(self.C) else "soft_primal"
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
            raise SVMInputError(f"C must be a number > 0, got {plain(C)!r}")
        if math.isinf(C) and formulation == "soft_primal":
            raise SVMInputError(
                "C = inf is the hard margin: use formulation='hard_primal' or 'dual' "
                "(soft_primal needs a finite C)"
            )
        return float(C)

    def _resolved_kernel(self, X: np.ndarray) -> Kernel:
        if callable(self.kernel) or self.kernel == "precomputed":
            self._gamma = 0.0
            return Kernel("precomputed")
        gamma = self.gamma
        if isinstance(gamma, str) and gamma == "scale":
            var = float(X.multiply(X).mean() - X.mean() ** 2) if sparse.issparse(X) else float(X.var())
            gamma = 1.0 / (X.shape[1] * var) if var != 0 else 1.0
        elif isinstance(gamma, str) and gamma == "auto":
            gamma = 1.0 / X.shape[1]
        # refused in the estimator's words: formulations.kernels.Kernel reads None as 1/d (SVC refuses it)
        elif isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not 0 < gamma < math.inf:
            raise SVMInputError(f"gamma must be 'scale', 'auto' or a finite number > 0, got {plain(self.gamma)!r}")
        self._gamma = gamma
        return Kernel(self.kernel, gamma=gamma, degree=self.degree, coef0=self.coef0)

    def _training_gram(self, X) -> np.ndarray | None:
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

    def _call_kernel(self, A, B) -> np.ndarray:
        K = self.kernel(A, B)
        K = K.toarray() if sparse.issparse(K) else np.asarray(K, dtype=float)  # a callable on sparse X
        shape = (_num_rows(A), _num_rows(B))
        if K.shape != shape:
            raise SVMInputError(
                f"the kernel callable must return an array of shape {shape} (len(X), len(Y)), got {K.shape}"
            )
        return K

    def _sample_C(self, C: float | None, y_index: np.ndarray, sample_weight) -> tuple[np.ndarray, object]:
        """(rows kept, C of those rows): C_i = C * class_weight[y_i] * sample_weight_i; one C when all are C.

        Rows of weight <= 0 are left out, as SVC (LIBSVM) does: a weight of 0 removes the sample, and
        a negative C_i has no meaning.
        """
        n = y_index.size
        if sample_weight is None:
            weights = np.ones(n)
        else:
            weights = np.asarray(sample_weight, dtype=np.float64)
            if weights.ndim == 0:
                weights = np.full(n, float(weights))
            if weights.ndim != 1 or weights.size != n:
                raise SVMInputError(f"sample_weight must have shape ({n},) (one weight per sample), "
                                    f"got shape {weights.shape}")
            if not np.all(np.isfinite(weights)):
                i = int(np.argmax(~np.isfinite(weights)))
                raise SVMInputError(f"sample_weight must be finite; sample_weight[{i}] = {weights[i]:g}")
        per_sample = weights * self.class_weight_[y_index]
        keep = np.flatnonzero(per_sample > 0)
        if keep.size == 0:
            raise SVMInputError("Invalid input - all samples have zero or negative weights "
                                "(sample_weight x class_weight): nothing to fit.")
        if np.unique(y_index[keep]).size < 2:
            raise SVMInputError(
                "Invalid input - all samples with positive weights belong to the same class "
                "(sample_weight x class_weight): an SVM needs samples of two classes."
            )
        if C is None:  # hard_primal: no penalty to weigh
            return keep, None
        if sample_weight is None and self.class_weight is None:
            return keep, C  # the notes' one C: every solve path computes exactly what it always did
        return keep, C * per_sample[keep]

    # ------------------------------------------------------------------ fit

    def fit(self, X, y, sample_weight=None):
        """Solve one SVM per pair of classes on (X, y) and keep the verified optima."""
        refuse_masked(X, "X")  # validate_data would use the masked cells as data
        refuse_masked(y, "y")
        if sparse.issparse(X) and self.kernel == "precomputed":
            raise TypeError("Sparse precomputed kernels are not supported.")
        self._raw_X = callable(self.kernel) and not _numeric(X)
        if self._raw_X:  # X goes to the callable as given (SVC: strings too)
            check_consistent_length(X, y)
            y = column_or_1d(y, warn=True)
        else:  # sparse X kept as CSR, as SVC's (no dense copy for the linear formulations)
            X, y = validate_data(self, X, y, dtype=np.float64, **self._sparse_options())
        self._sparse = sparse.issparse(X) and not callable(self.kernel)
        check_classification_targets(y)
        formulation = self._resolved_formulation()
        C = self._resolved_C(formulation)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise SVMInputError(
                f"y has 1 class ({plain(self.classes_[0])!r}): an SVM needs samples of two classes"
            )
        try:
            self.class_weight_ = compute_class_weight(self.class_weight, classes=self.classes_, y=y)
        except (TypeError, ValueError) as exc:
            raise SVMInputError(f"class_weight: {exc}") from None
        kept, C_samples = self._sample_C(C, y_index, sample_weight)
        if not callable(self.kernel) and self.kernel != "precomputed" and not sparse.issparse(X):
            _check_representable(X)
        kernel = self._resolved_kernel(X if not callable(self.kernel) else None)
        K = self._training_gram(X)
        # only a kernel dual's multipliers are split among identical samples (_fit_pair)
        twins_used = formulation == "kernel_dual" and _numeric(X)
        self._twins = _identical_rows(K if self.kernel == "precomputed" else X) if twins_used else None
        self.shape_fit_ = X.shape if hasattr(X, "shape") else (_num_rows(X),)
        self.formulation_, self.kernel_ = formulation, kernel

        if K is None:  # features, not a precomputed or callable kernel's Gram matrix
            check_scaling(X, advice=PIPELINE_ADVICE, effect=scaling_effect(kernel))
        row_C = C_samples
        if isinstance(C_samples, np.ndarray):  # C_i of `kept`, looked up by row of X
            row_C = np.full(y_index.size, math.nan)
            row_C[kept] = C_samples
        self._one_blas_thread = kept.size <= ONE_BLAS_THREAD_UP_TO  # the fit's context settles its pairs' threads
        with warnings.catch_warnings(), _blas_threads_for(kept.size):  # scaling: said once above, not per pair
            warnings.simplefilter("ignore", BadScalingWarning)
            fits = self._fit_pairs(formulation, X, K, C, kept, y_index, row_C)
        self._store(X, y_index, fits)
        _warn_indefinite(fits)
        return self

    def _fit_pairs(self, formulation: str, X, K, C, kept: np.ndarray, y_index: np.ndarray, row_C) -> list[_PairFit]:
        """Every pair of classes fitted (one-vs-one, LIBSVM's order), by SMO on its block of one Gram matrix
        where _pairs_on_gram takes it, else through solvers.api.solve. row_C: C, or C_i by row of X."""
        self._smo = self._smo_pairs(formulation, X, K, C)
        if self._smo and sparse.issparse(X):  # the fitted attributes stay sparse (fit's _store has the CSR X)
            X = X.toarray()
        centering = None
        if self._smo and self.kernel == "linear":
            # x'z depends on the origin and the SVM does not: far from it (X + 1e4 at a spread of 1e-3) x'z's
            # rounding swamps the dual, so it is solved about the data's mean, b moved back after (_moved_back)
            centering = Standardizer.centering(X[kept])
            X = centering.transform(X)
        pairs = _class_pairs(self.classes_.size)
        budget = memory_budget() if self._smo else None  # read once a fit (psutil), not per pair
        on_gram = self._pairs_on_gram(pairs, kept, y_index, budget) if self._smo else []
        shared = self._shared_gram(on_gram, kept, X, y_index, budget)
        blocks, ahead = self._smo_ahead(formulation, shared, on_gram, pairs, row_C)
        fits = []
        with _cancelled_on_error(ahead), _short_switch_interval() if ahead else contextlib.nullcontext():
            for k, (i, j) in enumerate(pairs):  # one after another, as LIBSVM (docs/estimator_speed.md)
                began = time.perf_counter()
                if blocks is not None and blocks[k] is not None:  # the pair's block of the fit's Gram matrix
                    rows, signs, block = blocks[k]
                else:
                    rows, block = kept[np.isin(y_index[kept], (i, j))], None
                    signs = np.where(y_index[rows] == j, 1.0, -1.0)
                pair_C = _pair_C(row_C, rows)
                fits.append(self._fit_pair(formulation, X, K, rows, signs, pair_C, block, ahead[k] if ahead else None))
                if blocks is not None:  # the pair's block let go: the next pair's copy of its samples reuses it
                    blocks[k] = None
                if self.verbose:
                    sol = fits[-1].solution
                    print(f"[{type(self).__name__}] classes ({plain(self.classes_[i])!r}, {plain(self.classes_[j])!r}): "
                          f"{sol.status} via {sol.layer}/{sol.backend}, {sol.iterations} iterations, "
                          f"{time.perf_counter() - began:.3g} s")
        largest = shared.K.size if shared is not None else 0
        held, shared, blocks, block = [shared, blocks], None, None, None
        let_go(held, largest)  # the fit's Gram matrix freed on another core while the fit goes on
        return fits if centering is None else [_moved_back(fit, X, centering) for fit in fits]

    def _smo_ahead(self, formulation: str, shared: SharedGram | None, on_gram, pairs,
                   row_C) -> tuple[list | None, list | None]:
        """(each pair's (rows, signs, block) of the fit's Gram matrix, or None for a pair not on it; futures of each
        pair's first SMO run (smo_gram.first_run) on another thread, in the pairs' order, or None). The runs are
        made ahead where several pairs share the fit's Gram matrix and a second core is allowed
        (compiled_gram.gram_threads): while a pair's point is closed (Python, holding the interpreter's lock) the
        next pairs' SMO (compiled, without it) runs beside it; each is asked for as soon as its block is cut, so
        the first starts while the others are. The same runs as one after another, so the same model to the bit."""
        if shared is None:
            return None, None
        held = [(i, j) for i, j in pairs if (i, j) in on_gram]
        size = np.diff(shared.bounds)
        if (len(held) < 2 or self.max_iter != -1 or gram_threads() < 2
                or sum(int(size[i] + size[j]) for i, j in held) < SMO_AHEAD_MIN_POINTS):
            return [shared.pair_in_place(i, j) if (i, j) in on_gram else None for i, j in pairs], None
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smo ahead")
        blocks, futures = [], []
        try:
            with _cancelled_on_error(futures):
                for i, j in pairs:
                    b = shared.pair_in_place(i, j) if (i, j) in on_gram else None
                    blocks.append(b)
                    if b is None:
                        futures.append(None)
                        continue
                    budget = self._smo_steps(formulation, b[1].size).get("budget")  # none is made ahead at a max_iter
                    futures.append(pool.submit(_ahead, b[2], b[1], _pair_C(row_C, b[0]), self.profile, budget))
        finally:
            pool.shutdown(wait=False)  # the thread ends once the runs asked for are done
        return blocks, futures

    def _sparse_options(self) -> dict:
        """validate_data's sparse options: sparse X as CSR with 32-bit indices, as SVC (not a precomputed K)."""
        return {"accept_sparse": "csr", "accept_large_sparse": False} if self.kernel != "precomputed" else {}

    def _smo_first(self) -> bool:
        """Whether a kernel dual is solved by the compiled SMO first (solvers.algorithms.smo_gram): layer "auto" or
        "direct" with method "auto" (a method named by the user is solvers.api.solve's)."""
        return self.layer in ("auto", "direct") and self.method == "auto"

    def _smo_pairs(self, formulation: str, X, K, C) -> bool:
        """Whether the pairs are solved by SMO first (_smo_first): a kernel dual of dense features with a kernel
        positive semidefinite by theorem and finite C, and so the linear kernel's soft primal that formulation
        "auto" chose, whose dual this is (SVC's problem)."""
        dual_by_smo = formulation == "kernel_dual" or (formulation == "soft_primal" and self.formulation == "auto")
        return (self._smo_first() and dual_by_smo and K is None and _dense_copy_ok(X)
                and self.kernel_.mercer_by_theorem and C is not None and math.isfinite(C))

    def _smo_steps(self, formulation: str, n_points: int) -> dict:
        """SMO's step limit on a pair of n_points, as smo_gram.solve's arguments: the user's max_iter; else a budget,
        past which the pair goes to the solver alone (_pair_solution): KERNEL_SMO_STEPS_PER_POINT a point for a
        kernel dual, LINEAR_SMO_WORK for the linear kernel's soft primal."""
        if self.max_iter != -1:
            return {"max_iter": self.max_iter}
        if formulation == "kernel_dual":
            return {"budget": KERNEL_SMO_STEPS_PER_POINT * n_points}
        return {"budget": max(LINEAR_SMO_WORK // n_points, LINEAR_SMO_STEPS_PER_POINT * n_points)}

    def _pairs_on_gram(self, pairs, kept: np.ndarray, y_index: np.ndarray, budget: float) -> set[tuple[int, int]]:
        """The pairs solved on blocks of the fit's one Gram matrix: those whose dual the kernel working set would
        start from its whole matrix (kernel_rows.gram_first: one rule for both). The others go through
        solvers.api.solve on the row source it picks: from kernel_rows.ROWS_FROM_N points rows on demand, which
        become the matrix only where SMO needs many (on easy or unbalanced data SMO visits few rows, and the whole
        matrix costs more than the fit). None of them where a class has no sample of positive weight (its pairs
        go to solvers.api.solve, which refuses one class). budget: bytes (validation.memory_budget)."""
        counts = np.bincount(y_index[kept], minlength=self.classes_.size)
        if np.any(counts == 0):
            return set()
        return {(i, j) for i, j in pairs if gram_first(int(counts[i] + counts[j]), budget)}

    def _shared_gram(self, on_gram, kept: np.ndarray, X, y_index: np.ndarray, budget) -> SharedGram | None:
        """The fit's one Gram matrix (experiments.estimator_gram) of the samples of the classes in the pairs
        `on_gram`, where kernel_rows.gram_allowed; None where there are none or it is not."""
        classes = sorted({c for pair in on_gram for c in pair})
        held = kept[np.isin(y_index[kept], classes)]
        if not classes or not gram_allowed(held.size, budget):
            return None
        return SharedGram.of(self.kernel_, X, held, y_index, self.classes_.size)

    def _model_layer(self) -> str:
        """The layer of a pair solved through solvers.api.solve: "auto" takes Pyomo there."""
        return "pyomo" if self.layer == "auto" else self.layer

    def _solve_kwargs(self, layer: str | None = None) -> dict:
        kwargs = {"layer": layer or self._model_layer(), "backend": self.backend, "profile": self.profile,
                  "method": self.method}
        return {**kwargs, **iteration_options(self.backend, self.max_iter)}

    def _solve_features(self, formulation: str, X_pair, signs: np.ndarray, C, layer: str | None = None) -> Solution:
        """The pair's solve from its features. The sigmoid kernel is solved where its Gram matrix is indefinite, as
        SVC solves it (fit warns: _warn_indefinite); a convex QP solver that returns no usable point on such a
        non-convex dual (PIQP stops at its iteration limit, OSQP refuses the factorization) hands it to Ipopt,
        a method for non-convex programs, through Pyomo."""
        kernel = self.kernel_ if formulation == "kernel_dual" else None
        sigmoid = self.kernel == "sigmoid"
        sol = solve(formulation, X_pair, signs, C=C, **self._solve_kwargs(layer), kernel=kernel,
                    allow_indefinite=sigmoid)
        if sigmoid and sol.extras.get("indefinite_kernel") and sol.status not in _ACCEPTED:
            # no max_iter option: its name is the first backend's
            sol = solve(formulation, X_pair, signs, C=C, layer="pyomo", backend=NONCONVEX_BACKEND,
                        profile=self.profile, method="full", kernel=kernel, allow_indefinite=True)
        return sol

    def _pair_solution(self, formulation: str, X, K, rows: np.ndarray, signs: np.ndarray, C, block, first=None):
        """(the pair's Solution, its samples where they were taken). SMO first where _smo: on its block of the fit's
        Gram matrix (solvers.algorithms.smo_gram), else with its kernel rows on demand (solvers.api.solve, the
        solver alone); max_iter caps SMO's steps as SVC's. A pair SMO did not bring to a verified (or proved)
        optimum is solved again from its samples through the model layer (_model_layer), as every pair was
        before; a pair SMO did not verify within its budget (_smo_steps) goes to the solver alone first (the
        linear kernel's to the soft primal's working set, the others' to the kernel dual's SMO and block), then
        to the model layer."""
        def settled(sol):
            return sol.status == OPTIMAL or sol.proved_alpha is not None or self.max_iter != -1

        if block is not None:
            steps = self._smo_steps(formulation, signs.size)
            sol = smo_gram.solve(block, signs, C, profile=self.profile, first=first, **steps)
            # the linear kernel's dual stopped at its budget: the primal is the next try, not a proof at the stop
            primal_next = formulation != "kernel_dual" and "budget" in steps
            if sol.status == OPTIMAL or (settled(sol) and not primal_next):
                return sol, None
            X_pair = block.data
            if formulation == "kernel_dual" and sol.iterations < steps.get("budget", math.inf):
                # SMO ended short of its budget unsettled: the model layer (at the budget: the solver alone, below)
                return self._solve_features(formulation, X_pair, signs, C), X_pair
        elif K is not None:  # precomputed or callable kernel: the pair's block of K
            return solve(formulation, None, signs, K=K[np.ix_(rows, rows)], C=C, **self._solve_kwargs()), None
        else:
            X_pair = X[rows]  # the pair's samples, copied once
        if self._smo:  # the solver alone (the linear soft primal's working set), then the model layer
            sol = self._solve_features(formulation, X_pair, signs, C, layer="direct")
            if settled(sol) or self._model_layer() == "direct":
                return sol, X_pair
        return self._solve_features(formulation, X_pair, signs, C), X_pair

    def _fit_pair(self, formulation: str, X, K, rows: np.ndarray, signs: np.ndarray, C,
                  block: FullGram | GramBlock | None = None, first=None) -> _PairFit:
        """The two-class SVM on X[rows] with labels `signs` (+1: the pair's higher class), `block` its block of the
        fit's Gram matrix where there is one (first: its first SMO run, _smo_ahead's): _pair_solution, then the
        model it proves."""
        # the fit's one-thread limit holds already where its samples are few (fit); each context is a threadpoolctl
        # call, a few percent of a small pair's time
        with contextlib.nullcontext() if self._one_blas_thread else _blas_threads_for(rows.size):
            sol, X_pair = self._pair_solution(formulation, X, K, rows, signs, C, block, first)
            C_eff = math.inf if C is None else C
            if sol.proved_alpha is None and sol.status in (OPTIMAL_INACCURATE, ITERATION_LIMIT):
                proof = block if block is not None else self._pair_gram(formulation, X_pair, K, rows)
                _prove_from_point(sol, proof, signs, C_eff)
        stopped_early = self._accept(sol, formulation)
        proved = sol.proved_alpha is not None
        if proved:
            # The optimum the checks proved from the point's active set, whose zeros are exact, and its b (the
            # midpoint of the optimal interval where no alpha is free). Told apart by the solver's values alone
            # (support_mask), a free point with alpha 2.6e-5 and its margin 3.9e-5 off (within the checks'
            # tolerance) was dropped: digits, standardized, poly degree 3, Clarabel, pair (1, 5), where that
            # point's k(x, x) is 3.8e4; its decision values moved by 0.99 (0.21 of their size on an
            # unverified pair).
            alpha, b = np.clip(sol.proved_alpha, 0.0, C_eff), float(sol.proved_b)
            note_model_is_proof(sol)
            if self._twins is not None:
                alpha = _split_among_twins(alpha, signs, C_eff, self._twins[rows])
            support = alpha > 0
        else:
            alpha = sol.alpha
            if alpha is None:  # a primal solved by a backend that returns no multipliers
                alpha = estimate_multipliers(X_pair, signs, sol.w, sol.decision, C_eff)
            alpha = np.asarray(alpha, dtype=float)
            b = float(sol.b) if math.isfinite(sol.b) else float(sol.extras.get("unverified", {}).get("b", math.nan))
            support = support_mask(alpha, signs, sol.decision, C_eff)
        if not (np.all(np.isfinite(alpha)) and math.isfinite(b)):
            raise SVMInputError(_NOT_FINITE)
        return _PairFit(rows, alpha * signs, support, b, sol, stopped_early)

    def _pair_gram(self, formulation: str, X_pair, K, rows: np.ndarray) -> Gram | None:
        """The pair's kernel for a proof: through X for the linear SVMs, its n x n block otherwise (None above
        PROOF_MAX_N points, where the block is not formed for it)."""
        if formulation != "kernel_dual":
            return Gram(X_pair, None)
        if rows.size > PROOF_MAX_N:
            return None
        return Gram(None, K[np.ix_(rows, rows)] if K is not None else gram(self.kernel_, X_pair))

    def _store(self, X, y_index: np.ndarray, fits: list[_PairFit]) -> None:
        """The fitted attributes in SVC's layout (module docstring). Inside, as SVC, each pair's coefficients
        and b have LIBSVM's sign (positive for the pair's lower class i: _dual_coef_, _intercept_, which
        predict reads); with two classes the public dual_coef_ and intercept_ are flipped (positive for
        classes_[1])."""
        n_classes = self.classes_.size
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
            dual_coef[np.where(other > own, other - 1, other), position[rows]] = -fit.coef[fit.support]

        self.solutions_ = [fit.solution for fit in fits]
        self.solution_ = self.solutions_[0]
        self.support_ = support.astype(np.int32)
        if self.kernel == "precomputed":
            self.support_vectors_ = np.empty((0, 0))
        else:
            self.support_vectors_ = _safe_indexing(X, support)
        self._X_fit = X if callable(self.kernel) else None
        self._n_support = np.bincount(y_index[support], minlength=n_classes).astype(np.int32)
        self._dual_coef_ = dual_coef
        self._intercept_ = np.array([-fit.b for fit in fits])
        self.dual_coef_ = -dual_coef if n_classes == 2 else dual_coef
        if self._sparse:
            self.dual_coef_ = sparse.csr_matrix(self.dual_coef_)  # SVC's: sparse after a sparse fit
        self.intercept_ = -self._intercept_ if n_classes == 2 else self._intercept_.copy()
        self.n_iter_ = np.array([_iterations(fit.solution) for fit in fits], dtype=np.int32)
        self.fit_status_ = int(any(fit.stopped_early for fit in fits))
        if self.fit_status_:
            warnings.warn(_EARLY_STOP.format(self.max_iter), ConvergenceWarning, stacklevel=3)

    def _accept(self, sol: Solution, formulation: str) -> bool:
        """Whether max_iter stopped `sol` early (its last point kept); SVMFitError unless `sol` has a usable
        point. A point the checks proved optimal is kept whatever the solver said of it (PIQP stops at its
        iteration cap at C = 1e10 on a point the checks prove optimal): the model then holds the proved
        optimum, verified to far below the profile's tolerance, and no warning is given."""
        where = f"{formulation} via {sol.layer}/{sol.backend} (profile {self.profile!r})"
        if sol.status == ITERATION_LIMIT and self.max_iter != -1 and sol.decision is not None:
            return True  # stopped by the user's cap, as SVC's: _store warns (the model: a proved optimum, if any)
        if sol.proved_alpha is not None and sol.status in (*_ACCEPTED, ITERATION_LIMIT):
            return False
        if sol.status not in _ACCEPTED or sol.decision is None or not math.isfinite(sol.b):
            hint = ""
            if sol.status == INFEASIBLE and formulation == "hard_primal":
                hint = " The data are not linearly separable: use 'soft_primal' with a finite C."
            elif sol.status == UNBOUNDED and _is_inf(self.C):
                hint = " With C = inf the dual is unbounded on non-separable data: use a finite C."
            elif sol.status in _ACCEPTED:
                hint = f" The solver reported {sol.status} but returned no usable w, b."
            detail = f": {sol.message}" if sol.message else ""
            raise SVMFitError(
                f"SVM fit failed: {where} ended with status {sol.status!r} "
                f"(solver said {sol.raw_status!r}){detail}.{hint}"
            )
        if sol.status == OPTIMAL_INACCURATE and sol.extras.get("kkt_verified"):
            return False  # a non-convex dual's checked KKT point: fit's IndefiniteKernelWarning says what it is
        if sol.status == OPTIMAL_INACCURATE:
            advice = "another backend" if self.profile == "high" else "profile='high' or another backend"
            warnings.warn(
                f"{where}: the solver claimed optimal but the project's checks did not pass "
                f"({sol.checks.get('verdict', '')}) and proved no optimum from its active set; try {advice}",
                ConvergenceWarning,
                stacklevel=4,
            )
        return False

    # ------------------------------------------------------------------ fitted values

    @property
    def n_support_(self) -> np.ndarray:
        """Number of support vectors in each class."""
        check_is_fitted(self, "_n_support")
        return self._n_support

    @property
    def coef_(self) -> np.ndarray:
        """w* of each pair (linear kernel only): from dual_coef_ and support_vectors_, read-only (as SVC)."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        coef = self._pair_weights(self._dual_coef_)
        if self.classes_.size == 2:
            coef = -coef  # the public sign: positive for classes_[1], as dual_coef_ and intercept_
        if self._sparse:
            return sparse.csr_matrix(coef)  # SVC's: sparse after a sparse fit
        coef.flags.writeable = False
        return coef

    def _pair_weights(self, dual_coef: np.ndarray) -> np.ndarray:
        """w of each pair from a dual_coef in SVC's layout: sum over both classes' support vectors. Dense ones are
        taken about their mean, which a pair's coefficients (summing to 0) do not see: far from the origin the
        plain sum's terms are 1e7 times w (X + 1e4 at a spread of 1e-3) and its rounding was all of w's digits."""
        n_classes = self.classes_.size
        start = np.concatenate([[0], np.cumsum(self._n_support)])
        sv = self.support_vectors_
        rows = []
        for i, j in _class_pairs(n_classes):
            # class i's coefficients for the pair (i, j) are in row j - 1, class j's in row i
            both = np.r_[start[i]:start[i + 1], start[j]:start[j + 1]]
            coef = np.concatenate([dual_coef[j - 1, start[i]:start[i + 1]], dual_coef[i, start[j]:start[j + 1]]])
            points = sv[both]
            if not sparse.issparse(points) and both.size:
                points = points - points.mean(axis=0)
            rows.append(points.T @ coef)
        return np.vstack(rows)

    @deprecated("Attribute `probA_` was deprecated in version 1.9 (SVC) and SVMClassifier has no Platt scaling: "
                "use CalibratedClassifierCV.")
    @property
    def probA_(self) -> np.ndarray:
        """Empty: no Platt scaling (probability is deprecated; use CalibratedClassifierCV)."""
        return np.empty(0)

    @deprecated("Attribute `probB_` was deprecated in version 1.9 (SVC) and SVMClassifier has no Platt scaling: "
                "use CalibratedClassifierCV.")
    @property
    def probB_(self) -> np.ndarray:
        """Empty: no Platt scaling (probability is deprecated; use CalibratedClassifierCV)."""
        return np.empty(0)

    # ------------------------------------------------------------------ predict

    def _pair_values(self, X) -> np.ndarray:
        """The pairs' decision values, shape (n_samples, n_pairs), with LIBSVM's sign (positive for the
        pair's lower class), from _dual_coef_ and _intercept_ (as SVC: changing them changes predict)."""
        check_is_fitted(self)
        refuse_masked(X, "X")
        if not self._raw_X:
            if sparse.issparse(X) and not self._sparse and not callable(self.kernel):  # SVC's rule
                raise ValueError(f"cannot use sparse input in {type(self).__name__!r} trained on dense data")
            X = validate_data(self, X, dtype=np.float64, reset=False, **self._sparse_options())
            if self.kernel == "precomputed" and X.shape[1] != self.shape_fit_[0]:
                raise SVMInputError(f"X.shape[1] = {X.shape[1]} should be equal to {self.shape_fit_[0]}, "
                                    "the number of samples at training time")
        sv = self.support_vectors_
        if _num_rows(sv) > 0 and self._n_support.sum() != _num_rows(sv):
            raise ValueError(f"The internal representation of {type(self).__name__} was altered")
        # the kernel values of X against the support vectors: small products, one BLAS thread as in fit
        with _blas_threads_for(max(_num_rows(X), self.support_.size)):
            return self._pair_values_of(X)

    def _pair_values_of(self, X) -> np.ndarray:
        if self.kernel == "linear":  # w of each pair first: n_SV x d once, not n x n_SV
            return X @ self._pair_weights(self._dual_coef_).T + self._intercept_
        if self.kernel == "precomputed":  # validate_data checked: one column per training sample
            G = X[:, self.support_]
        elif callable(self.kernel):  # against every training sample, as SVC calls it: k(X, X_fit)
            G = self._call_kernel(X, self._X_fit)[:, self.support_]
        else:
            G = gram(self.kernel_, X, self.support_vectors_)
        start = np.concatenate([[0], np.cumsum(self._n_support)])
        values = np.empty((G.shape[0], self._intercept_.size))
        for k, (i, j) in enumerate(_class_pairs(self.classes_.size)):
            Si, Sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            values[:, k] = G[:, Si] @ self._dual_coef_[j - 1, Si] + G[:, Sj] @ self._dual_coef_[i, Sj]
        return values + self._intercept_

    def decision_function(self, X) -> np.ndarray:
        """Two classes: f(x), positive for classes_[1]. More: the pairs' values ("ovo", positive
        for the pair's lower class) or votes plus confidences per class ("ovr"), as SVC."""
        values = self._pair_values(X)
        if self.classes_.size == 2:
            return -values[:, 0]
        if self.decision_function_shape == "ovo":
            return values
        return _ovr(values, self.classes_.size)

    def predict(self, X) -> np.ndarray:
        """The class of most votes over the pairs (ties: the lower index), as LIBSVM; two classes:
        classes_[1] where f(x) > 0."""
        check_is_fitted(self)
        if self.break_ties and self.decision_function_shape == "ovo":
            raise SVMInputError("break_ties must be False when decision_function_shape is 'ovo'")
        values = self._pair_values(X)
        n_classes = self.classes_.size
        if self.break_ties and n_classes > 2:
            return self.classes_[np.argmax(_ovr(values, n_classes), axis=1)]
        votes = np.zeros((values.shape[0], n_classes), dtype=int)
        for k, (i, j) in enumerate(_class_pairs(n_classes)):
            winner = np.where(values[:, k] > 0, i, j)  # LIBSVM: a value of 0 votes for j
            np.add.at(votes, (np.arange(values.shape[0]), winner), 1)
        return self.classes_[np.argmax(votes, axis=1)]


# Statuses whose point is kept: `optimal` is verified by the project's checks;
# `optimal_inaccurate` is kept with a ConvergenceWarning (the solver claimed optimal
# but a residual missed the profile's bar), unless the checks proved the optimum from it.
_ACCEPTED = (OPTIMAL, OPTIMAL_INACCURATE)


#: The largest pair whose n x n kernel block is formed to prove an optimum the closing checks did not try
#: (128 MB at 4,000 points); a working set's pair above it keeps its verdict.
PROOF_MAX_N = 4_000


def _iterations(sol: Solution) -> int:
    """A pair's n_iter_: SMO's steps where the kernel working set took them (its own iterations are its outer
    steps, one where SMO did the work), else the row's iterations (the compiled SMO's steps, a backend's own)."""
    return int(sol.extras.get("smo_steps") or sol.iterations or 0)


def note_model_is_proof(sol: Solution) -> None:
    """Where a row's point was not verified but the optimum proved from it is the model (its status is the
    solver's point's, not the model's), the row says so: extras["model"] and its message (once)."""
    if sol.status != OPTIMAL and "model" not in sol.extras:
        kept = "the model holds the optimum proved from this point's active set, not the point"
        sol.extras["model"] = kept
        sol.message = f"{sol.message}; {kept}" if sol.message else kept


def _prove_from_point(sol: Solution, pair_gram: Gram | None, signs: np.ndarray, C) -> None:
    """The optimum proved from the active set of a point the closing checks did not try to prove (they try only a
    point whose residuals pass): PIQP claims an optimum 1.2e-3 off in its gap at C = 1e7 and 1e8 (or stops at its
    iteration cap) on points whose active sets are the optimum's. The proof (solvers.reference.polish, the checks'
    own) accepts only a point that meets every KKT condition to 1e-8; it is kept in sol.proved_alpha/proved_b."""
    if pair_gram is None or sol.alpha is None or sol.decision is None:
        return
    ref = polish(pair_gram, signs, C, np.asarray(sol.alpha, dtype=float), sol.decision)
    if ref.ok:
        sol.proved_alpha, sol.proved_b = ref.alpha, ref.b
        sol.extras["proved_by"] = "experiments.estimator (solvers.reference.polish from the solver's point)"


#: The most entries of the rows compared whole to find identical samples (_identical_rows); beyond it none are.
TWIN_ENTRIES = 10**7


def _identical_rows(X) -> np.ndarray | None:
    """A group number for each row of X (dense or sparse) that equals another row exactly (-1 for the others), or
    None where no two rows are equal. Candidates share a key (a random combination of the row, summed in the same
    order for every row: a sparse X's rows in canonical form), then are compared whole."""
    if X.shape[0] < 2 or X.shape[1] == 0:
        return None
    weights = np.random.default_rng(0).standard_normal(X.shape[1])
    if sparse.issparse(X):
        X = sparse.csr_matrix(X, dtype=float, copy=True)
        X.sum_duplicates()
        X.eliminate_zeros()
        key = np.asarray(X @ weights).ravel()
    else:
        key = (X * weights).sum(axis=1)
    sorted_key = np.sort(key)
    tied = sorted_key[1:] == sorted_key[:-1]
    if not tied.any():
        return None
    candidates = np.flatnonzero(np.isin(key, sorted_key[1:][tied]))
    if candidates.size * X.shape[1] > TWIN_ENTRIES:
        return None
    rows = X[candidates].toarray() if sparse.issparse(X) else X[candidates]
    _, group, count = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    twins = np.full(X.shape[0], -1)
    repeated = count[group.ravel()] > 1
    twins[candidates[repeated]] = group.ravel()[repeated]
    return twins if repeated.any() else None


def _split_among_twins(alpha: np.ndarray, signs: np.ndarray, C, twins: np.ndarray | None) -> np.ndarray:
    """alpha with each group of identical samples of one label and one bound holding equal shares of the group's
    sum. Their kernel columns are the same, so f, the objective and every KKT condition stay as they are: the
    optimum does not tell them apart, and a solver's split depends on its path (SVC's too), this one on neither
    the solver nor the samples' order."""
    if twins is None or not np.any(twins >= 0):
        return alpha
    bounds = np.broadcast_to(np.asarray(C, dtype=float), alpha.shape)
    twin = twins >= 0
    keys = (twins[twin], signs[twin], bounds[twin])
    order = np.lexsort(keys[::-1])  # by twin group, then label, then bound
    starts = np.zeros(order.size, dtype=bool)
    starts[0] = True
    for key in keys:
        ordered = key[order]
        starts[1:] |= ordered[1:] != ordered[:-1]
    group = np.empty(order.size, dtype=np.intp)
    group[order] = np.cumsum(starts) - 1
    share = np.bincount(group, alpha[twin]) / np.bincount(group)
    out = alpha.copy()
    out[twin] = share[group]
    return out


def _dense_copy_ok(X) -> bool:
    """Whether X is solved as dense: dense X, or sparse X whose dense copy is no larger than its Gram matrix (d <= n)
    where the memory budget allows that matrix (kernel_rows.gram_allowed). Then a sparse fit and a dense fit of the
    same data are one solve, as SVC's are (their support vectors the same where the optimum is not unique), and
    sparse data take the fast path."""
    if not sparse.issparse(X):
        return True
    n, d = X.shape
    return d <= n and gram_allowed(n, memory_budget())


def _is_inf(C) -> bool:
    return isinstance(C, numbers.Real) and not isinstance(C, bool) and math.isinf(C) and C > 0


def _numeric(X) -> bool:
    """Whether X is numbers (an array, a sparse matrix, a frame of numbers), not strings or other objects that
    only a callable kernel reads."""
    if sparse.issparse(X):
        return True
    try:
        np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        return False
    return True


def _num_rows(A) -> int:
    return A.shape[0] if hasattr(A, "shape") else len(A)


def _check_representable(X: np.ndarray) -> None:
    """The kernel values and w'x of X must be finite in float64: x'x of the largest sample overflows past
    ~1.3e154, and the dual coefficients or b could not be either (SVC refuses such data after its fit)."""
    top = float(np.max(np.abs(X))) if X.size else 0.0
    if not products_finite(top, X.shape[1]):
        raise SVMInputError(f"{_NOT_FINITE} (max |X| = {top:.3g}: x'x overflows float64)")
