"""The computing side shared by the coursework topics: the default backend, an
:class:`~experiments.estimator.SVMClassifier` per fit, and one table row per fit compared with
scikit-learn's ``SVC`` (LIBSVM) solved tightly."""

from __future__ import annotations

import numpy as np
from sklearn.svm import SVC

from experiments.coursework.section import fmt_vec
from experiments.estimator import SVMClassifier
from formulations.recovery import slacks

DEFAULT_LAYER = "cvxpy"
DEFAULT_BACKEND = "clarabel"

# The scikit-learn reference is solved far tighter than its default (tol=1e-3).
SVC_TOL = 1e-10


def svc_reference(est: SVMClassifier) -> SVC:
    """scikit-learn's SVC with the same kernel, C and resolved gamma, solved tightly."""
    k = est.kernel_
    return SVC(kernel=k.name, C=est.C, gamma=k.gamma if k.gamma is not None else "scale",
               degree=k.degree, coef0=k.coef0, tol=SVC_TOL)


def train_numbers(est: SVMClassifier, y: np.ndarray, f: np.ndarray) -> dict:
    """The sum of slacks and the training accuracy from the decision values f = est.decision_function(X)
    (predict(X) without a second f)."""
    return {"sum_xi": float(slacks(y, f).sum()), "train_acc": float(np.mean(est.classes_[(f > 0).astype(int)] == y))}


def fit_row(est: SVMClassifier, X: np.ndarray, y: np.ndarray, **extra) -> dict:
    """One table row: the fitted SVM's numbers and its agreement with SVC."""
    sol = est.solution_
    chk = sol.checks
    svc = svc_reference(est).fit(X, y)
    f = est.decision_function(X)
    row = dict(extra)
    row.update(
        kernel=est.kernel_.label,
        C=est.C,
        formulation=est.formulation_,
        status=sol.status,
        n_sv=int(est.support_.size),
        n_free_sv=chk.get("n_free_sv"),
        margin=chk.get("margin"),
        **train_numbers(est, y, f),
        rel_gap=chk.get("rel_duality_gap"),
        b=float(est.intercept_[0]),
        max_abs_f_minus_svc=float(np.max(np.abs(f - svc.decision_function(X)))),
        svc_n_sv=int(svc.support_.size),
    )
    if hasattr(est, "coef_"):
        row["w"] = fmt_vec(est.coef_[0])
    return row


def make_estimator(formulation: str, layer: str, backend: str, profile: str, **params) -> SVMClassifier:
    if formulation in ("hard_primal", "soft_primal", "dual"):  # the linear SVMs (SVMClassifier's default is rbf)
        params.setdefault("kernel", "linear")
    return SVMClassifier(formulation=formulation, layer=layer, backend=backend, profile=profile, **params)
