"""The family's LIBLINEAR members against LIBLINEAR (scikit-learn's LinearSVC) on its bundled data:
python -m experiments.liblinear_peers [--digits] [--backend clarabel] [--layer cvxpy].

Each case is solved by LinearSVC at tol=1e-10 (max_iter 1e7; a ConvergenceWarning is an error: a peer stopped at
its cap is no reference) and through solvers.family.solve, primal and dual, at the default profile, whose row
carries the optimum proved from its active set (extras["proved"]). The conventions are LIBLINEAR's: the bias
regularized through the constant feature intercept_scaling = 1 (intercept="regularized", LinearSVC's
fit_intercept), the data standardized. P is recomputed for both points by one formula
(1/2 ||(w, b)||^2 + C sum loss); decision values are compared relative to max |f| of LinearSVC's.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from formulations.errors import SVMInputError
from solvers.errors import BackendUnavailableError


@dataclass(frozen=True)
class Case:
    member: str  # squared_hinge, crammer_singer
    data: str  # breast_cancer, iris, wine, digits
    C: float

    @property
    def label(self) -> str:
        return f"{self.member} on {self.data} (C={self.C:g})"


CASES = (
    Case("squared_hinge", "breast_cancer", 0.01),
    Case("squared_hinge", "breast_cancer", 1.0),
    Case("squared_hinge", "breast_cancer", 100.0),
    Case("crammer_singer", "iris", 1.0),
    Case("crammer_singer", "wine", 1.0),
)
#: 1,797 points x 10 classes: 17,970 margin rows, a minute or two per solve
DIGITS = Case("crammer_singer", "digits", 0.1)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(X standardized, y) of a bundled set, every class; a constant column (digits' border pixels) is left at 0,
    as scikit-learn's StandardScaler leaves it."""
    import sklearn.datasets  # deferred: the module's --help stays light

    X, y = getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
    spread = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(spread > 0, spread, 1.0), y


def peer(case: Case, X, y) -> tuple[np.ndarray, float]:
    """LinearSVC's decision values (n, or n x k) and its P, by the formulation's formula."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    params = ({"loss": "squared_hinge", "dual": True} if case.member == "squared_hinge"
              else {"multi_class": "crammer_singer"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = LinearSVC(C=case.C, tol=1e-10, max_iter=10_000_000, **params).fit(X, y)
    F = model.decision_function(X)
    regularizer = 0.5 * (np.sum(model.coef_ ** 2) + np.sum(model.intercept_ ** 2))
    if case.member == "squared_hinge":
        signs = np.where(y == model.classes_[1], 1.0, -1.0)
        return F, regularizer + case.C * float(np.sum(np.maximum(0.0, 1.0 - signs * F) ** 2))
    codes = np.searchsorted(model.classes_, y)
    n = len(y)
    violation = (1.0 - np.eye(len(model.classes_))[codes]) + F - F[np.arange(n), codes][:, None]
    return F, regularizer + case.C * float(violation.max(axis=1).sum())


def compare(case: Case, kind: str, layer: str = "cvxpy", backend: str = "clarabel") -> dict:
    """One row: the family's row (its status, its point, the proved optimum) against LinearSVC's."""
    from solvers.family import solve  # deferred: Pyomo and cvxpy load only when a case is solved, not for --help

    X, y = load(case.data)
    F_peer, P_peer = peer(case, X, y)
    sol = solve(f"{case.member}_{kind}", X, y, C=case.C, layer=layer, backend=backend, intercept="regularized")
    scale = float(np.max(np.abs(F_peer)))
    row = {"case": case.label, "kind": kind, "n": len(y), "status": sol.status, "P_peer": P_peer,
           "P": sol.checks.get("primal_objective", float("nan")), "reference": sol.checks.get("reference", "")}
    row["P_diff"] = abs(row["P"] - P_peer) / P_peer
    if sol.w is not None:
        F = (X @ sol.w + sol.b if case.member == "squared_hinge"
             else X @ sol.w.T + np.asarray(sol.extras["intercepts"]))
        row["f_diff"] = float(np.max(np.abs(F - F_peer))) / scale
    if "proved" in sol.extras:
        row["proved_f_diff"] = float(np.max(np.abs(sol.extras["proved"]["decision"] - F_peer))) / scale
    return row


def table(rows: list[dict]) -> str:
    """The comparison as a Markdown table."""
    lines = ["| case | formulation | n | status | P (our row) | P (LinearSVC) | rel. diff P | f: our row vs LinearSVC | "
             "f: proved optimum vs LinearSVC |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['kind']} | {r['n']} | {r['status']} | {r['P']:.10g} | {r['P_peer']:.10g} | "
                     f"{r['P_diff']:.1e} | {r.get('f_diff', float('nan')):.1e} | "
                     f"{r.get('proved_f_diff', float('nan')):.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.liblinear_peers", description=__doc__.split("\n")[0])
    parser.add_argument("--digits", action="store_true", help="add Crammer-Singer on digits (minutes)")
    parser.add_argument("--layer", default="cvxpy", choices=("cvxpy", "pyomo"))
    parser.add_argument("--backend", default="clarabel")
    args = parser.parse_args(argv)
    cases = CASES + ((DIGITS,) if args.digits else ())
    try:
        rows = [compare(case, kind, args.layer, args.backend) for case in cases for kind in ("primal", "linear_dual")]
    except (SVMInputError, BackendUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
