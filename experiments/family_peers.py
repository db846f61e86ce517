"""The family's LIBSVM members against scikit-learn's (NuSVC, OneClassSVM, SVR, NuSVR) on its bundled data:
python -m experiments.family_peers [--small] [--backend clarabel] [--layer cvxpy].

Each case is solved twice: by scikit-learn at tol=1e-10, and through solvers.family.solve (the kernel dual) at
profile "high", whose row carries the optimum proved from its active set (extras["proved"]). LIBSVM scales two
of the duals, so its numbers are brought to the formulations' (docs/family.md):

    NuSVC        alpha_L = l alpha, rho_L = l rho, and its decision function is divided by rho:
                 decision_function = f / rho, dual_coef_ = y alpha / rho  (rho = nu / sum |dual_coef_|)
    OneClassSVM  alpha_L = nu l alpha, rho_L = nu l rho: decision_function = nu l f, dual_coef_ = nu l alpha
    SVR          the same problem: decision_function = f, dual_coef_ = alpha - alpha*
    NuSVR(C=c)   the formulation's C is c l (LIBSVM takes C/l as its C); then the same alpha, alpha*, f

and the dual objective is evaluated at scikit-learn's point in the formulation's scale. Decision values are
compared relative to max |f| (classification, one-class) or to the targets' spread max |y - mean y|
(regression); objectives relative to |D*|. LIBSVM keeps its kernel cache in single precision: its decision
values are good to about 2e-5 of their size.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from formulations.errors import SVMInputError
from formulations.kernels import Kernel, gram

#: the bar of the comparison with LIBSVM (its single-precision kernel cache: docs/family.md)
DECISION_RTOL = 2e-5
OBJECTIVE_RTOL = 1e-6


@dataclass(frozen=True)
class Case:
    member: str
    data: str  # breast_cancer, iris, wine, diabetes
    params: dict
    gamma_scale: float = 1.0  # gamma = gamma_scale / (d var(X)): scikit-learn's "scale" times this

    @property
    def label(self) -> str:
        given = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.member} on {self.data} ({given})"


CASES = (
    Case("nu_svc", "breast_cancer", {"nu": 0.3}),
    Case("nu_svc", "iris", {"nu": 0.5}),
    Case("nu_svc", "wine", {"nu": 0.4}),
    Case("one_class", "breast_cancer", {"nu": 0.1}),
    Case("one_class", "iris", {"nu": 0.2}),
    Case("one_class", "wine", {"nu": 0.3}),
    Case("eps_svr", "diabetes", {"C": 100.0, "epsilon": 10.0}),
    Case("nu_svr", "diabetes", {"C": 10.0, "nu": 0.5}),
)


def load(name: str, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X standardized, y) of a bundled set: iris versicolor (1) against virginica (2), wine's classes 0 against 1,
    breast cancer and diabetes whole; the first n rows of a seeded shuffle where n is given."""
    import sklearn.datasets  # deferred: the module's --help stays light

    data = getattr(sklearn.datasets, f"load_{name}")()
    X, y = data.data, data.target
    if name == "iris":
        X, y = X[y > 0], y[y > 0]
    elif name == "wine":
        X, y = X[y < 2], y[y < 2]
    order = np.random.default_rng(0).permutation(len(y))[:n]
    X, y = X[order], y[order]
    return (X - X.mean(axis=0)) / X.std(axis=0), y.astype(float)


def peer(case: Case, X, y, gamma: float):
    """scikit-learn's fitted model of the case at tol=1e-10."""
    from sklearn import svm

    common = {"kernel": "rbf", "gamma": gamma, "tol": 1e-10, "cache_size": 500}
    p = case.params
    if case.member == "nu_svc":
        return svm.NuSVC(nu=p["nu"], **common).fit(X, y)
    if case.member == "one_class":
        return svm.OneClassSVM(nu=p["nu"], **common).fit(X)
    if case.member == "eps_svr":
        return svm.SVR(C=p["C"], epsilon=p["epsilon"], **common).fit(X, y)
    return svm.NuSVR(C=p["C"], nu=p["nu"], **common).fit(X, y)


def normalised(case: Case, model, X, y, n: int, K: np.ndarray) -> dict:
    """scikit-learn's decision values, dual coefficients and dual objective in the formulation's scale."""
    coef = np.zeros(n)
    coef[model.support_] = model.dual_coef_.ravel()
    decision = model.predict(X) if case.member.endswith("svr") else model.decision_function(X)
    if case.member == "nu_svc":
        rho = case.params["nu"] / np.abs(coef).sum()
        coef, decision = coef * rho, decision * rho
        return {"decision": decision, "dual_objective": -0.5 * coef @ K @ coef, "rho": rho}
    if case.member == "one_class":
        scale = case.params["nu"] * n
        coef, decision = coef / scale, decision / scale
        return {"decision": decision, "dual_objective": -0.5 * coef @ K @ coef, "rho": -model.intercept_[0] / scale}
    linear = y @ coef - (case.params["epsilon"] * np.abs(coef).sum() if case.member == "eps_svr" else 0.0)
    return {"decision": decision, "dual_objective": -0.5 * coef @ K @ coef + linear}


def compare(case: Case, n: int | None = None, layer: str = "cvxpy", backend: str = "clarabel") -> dict:
    """One row of the comparison: the family's row (its status, the proved optimum) against scikit-learn's."""
    from solvers.family import solve  # deferred: Pyomo and cvxpy load only when a case is solved, not for --help

    X, y = load(case.data, n)
    gamma = case.gamma_scale / (X.shape[1] * X.var())
    kernel = Kernel("rbf", gamma=gamma)
    params = dict(case.params)
    if case.member == "nu_svr":
        params["C"] = case.params["C"] * len(X)  # LIBSVM's C is the formulation's C / l
    sol = solve(f"{case.member}_kernel_dual", X, None if case.member == "one_class" else y, layer=layer,
                backend=backend, kernel=kernel, profile="high", method="full", **params)  # the named backend's row
    theirs = normalised(case, peer(case, X, y, gamma), X, y, len(X), gram(kernel, X))
    ours = sol.extras.get("proved", {})
    spread = np.max(np.abs(y - y.mean())) if case.member.endswith("svr") else np.max(np.abs(theirs["decision"]))
    row = {"case": case.label, "n": len(X), "gamma": gamma, "status": sol.status,
           "row_decision_vs_proved": sol.checks.get("decision_value_error", float("nan")),
           "dual_objective": ours.get("dual_objective", float("nan")),
           "sklearn_dual_objective": theirs["dual_objective"]}
    if ours:
        row["decision_diff"] = float(np.max(np.abs(ours["decision"] - theirs["decision"])) / spread)
        row["objective_diff"] = abs(ours["dual_objective"] - theirs["dual_objective"]) / abs(ours["dual_objective"])
        if "rho" in theirs:
            row["rho_diff"] = abs(ours["rho"] - theirs["rho"]) / abs(ours["rho"])
        for key in ("rho", "epsilon", "fraction_sv", "fraction_margin_errors", "fraction_outliers",
                    "fraction_outside_tube"):
            if key in ours:
                row[key] = ours[key]
    return row


def table(rows: list[dict]) -> str:
    """The comparison as a Markdown table."""
    lines = ["| case | n | our row (its f from the proved) | D* (proved) | D at sklearn's point | rel. diff D | "
             "max diff f (rel.) | nu-property |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        frac = ", ".join(f"{k.replace('fraction_', '')} {r[k]:.3f}" for k in r if k.startswith("fraction_"))
        lines.append(f"| {r['case']} | {r['n']} | {r['status']} ({r['row_decision_vs_proved']:.0e}) | "
                     f"{r['dual_objective']:.10g} | "
                     f"{r['sklearn_dual_objective']:.10g} | {r.get('objective_diff', float('nan')):.1e} | "
                     f"{r.get('decision_diff', float('nan')):.1e} | {frac} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.family_peers", description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="the first 80 points of each set (seconds, not minutes)")
    parser.add_argument("--layer", default="cvxpy", choices=("cvxpy", "pyomo"))
    parser.add_argument("--backend", default="clarabel")
    args = parser.parse_args(argv)
    try:
        rows = [compare(case, 80 if args.small else None, args.layer, args.backend) for case in CASES]
    except SVMInputError as exc:  # a backend that is not there, named in one line
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
