"""The SVM family's members that have a fast method (``python -m experiments.bench --members``): the estimators,
fit by the compiled SMO and closed by the family's checks (solvers.family, method "smo"), against scikit-learn's
OneClassSVM, SVR, NuSVR and NuSVC on its bundled sets, and the same dual through the interior-point path the
estimators took before (solvers.family.solve, method "full", Pyomo/PIQP).

Every fit is timed in turn, A B C A B C ... (--rounds rounds), so that a busy machine's drift moves every path
alike; the table has the median seconds, the median of the run-by-run ratios to scikit-learn's, and how far the
estimator's decision values (or predictions) are from scikit-learn's at tol 1e-10, relative to their size
(LIBSVM's single-precision kernel cache: ~2e-5 is agreement). Standardized features, gamma = "scale".
Writes <out>/members.csv and <out>/members.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn import datasets, svm
from sklearn.preprocessing import StandardScaler

from experiments import family_estimators as ours
from experiments.bench.interleaved import interleaved
from formulations.kernels import Kernel
from solvers.family import solve

#: scikit-learn's stopping tolerance for the reference decision values
TIGHT = 1e-10


@dataclass(frozen=True)
class MemberCase:
    """One member on one bundled set: scikit-learn's class and ours, with the same parameters."""

    member: str
    data: str
    params: dict
    quick: bool = True  # measured by --quick too


CASES = (
    MemberCase("one_class", "breast_cancer", {"nu": 0.1}),
    MemberCase("one_class", "wine", {"nu": 0.3}),
    MemberCase("eps_svr", "diabetes", {"C": 100.0, "epsilon": 10.0}),
    MemberCase("nu_svr", "diabetes", {"C": 10.0, "nu": 0.5}),
    MemberCase("nu_svc", "breast_cancer", {"nu": 0.3}),
    MemberCase("nu_svc", "iris", {"nu": 0.5}),
    MemberCase("nu_svc", "wine", {"nu": 0.4}, quick=False),
    MemberCase("nu_svc", "digits", {"nu": 0.1}, quick=False),
)


def _load(name: str):
    """(X standardized, y) of a bundled set (y None for the one-class SVM's sets is the caller's choice)."""
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _estimators(case: MemberCase):
    """(scikit-learn's estimator, ours, a tight scikit-learn one) for the case."""
    pairs = {"one_class": (svm.OneClassSVM, ours.OneClassSVMDetector), "eps_svr": (svm.SVR, ours.SVMRegressor),
             "nu_svr": (svm.NuSVR, ours.NuSVMRegressor), "nu_svc": (svm.NuSVC, ours.NuSVMClassifier)}
    theirs, mine = pairs[case.member]
    return theirs(**case.params), mine(**case.params), theirs(**case.params, tol=TIGHT)


def _values(model, X, member: str) -> np.ndarray:
    """What the case compares: predictions of a regression, decision values otherwise (one-vs-one for nu-SVC)."""
    if member in ("eps_svr", "nu_svr"):
        return model.predict(X)
    if member == "nu_svc":
        model.set_params(decision_function_shape="ovo")
    return np.asarray(model.decision_function(X), dtype=float)


def _full_solve(case: MemberCase, X, y):
    """The member's kernel dual through Pyomo/PIQP (method "full"), the estimators' path before SMO, in the
    formulation's scale (nu-SVR's C is C l)."""
    params = dict(case.params)
    if case.member == "nu_svr":
        params["C"] *= X.shape[0]
    kernel = Kernel("rbf", gamma=1.0 / (X.shape[1] * X.var()))
    return lambda: solve(f"{case.member}_kernel_dual", X, None if case.member == "one_class" else y, kernel=kernel,
                         layer="pyomo", backend="piqp", method="full", **params)


def measure(case: MemberCase, repeat: int) -> list[dict]:
    """The case's rows: scikit-learn, our estimator, and the interior-point path, interleaved `repeat` times after
    one untimed fit of each."""
    X, y = _load(case.data)
    y_fit = None if case.member == "one_class" else y
    sk, mine, tight = _estimators(case)
    fits = {"scikit-learn": lambda: sk.fit(X, y_fit), "estimator (SMO)": lambda: mine.fit(X, y_fit)}
    if case.member != "nu_svc" or np.unique(y).size == 2:  # one dual: the same problem as the estimator's
        fits["family.solve full (pyomo/piqp)"] = _full_solve(case, X, y)
    times = interleaved(fits, repeat, warm=True)
    reference = _values(tight.fit(X, y_fit), X, case.member)
    size = float(np.max(np.abs(reference - (np.mean(reference) if case.member in ("eps_svr", "nu_svr") else 0.0))))
    off = float(np.max(np.abs(_values(mine, X, case.member) - reference))) / size
    base = np.array(times["scikit-learn"])
    what = f"{case.member} on {case.data} (n = {X.shape[0]}, {', '.join(f'{k}={v:g}' for k, v in case.params.items())})"
    statuses = sorted({sol.status for sol in getattr(mine, "solutions_", [getattr(mine, "solution_", None)]) if sol})
    return [{"case": what, "path": name, "median_s": float(np.median(t)),
             "x scikit-learn": float(np.median(np.array(t) / base)),
             "run by run": " ".join(f"{r:.2f}" for r in np.array(t) / base),
             "max diff vs scikit-learn 1e-10 (rel.)": off if name == "estimator (SMO)" else np.nan,
             "status": ",".join(statuses) if name == "estimator (SMO)" else ""}
            for name, t in times.items()]


def run_members(quick: bool, out: Path, repeat: int = 5, progress: bool = True) -> int:
    """Every case (--quick: the quick ones), `repeat` interleaved rounds, written to <out>/members.csv and
    members.md."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    cases = [c for c in CASES if c.quick or not quick]
    for k, case in enumerate(cases, 1):
        if progress:
            print(f"[{k}/{len(cases)}] {case.member} on {case.data}", flush=True)
        rows += measure(case, repeat)
    df = pd.DataFrame(rows)
    df.to_csv(out / "members.csv", index=False)
    (out / "members.md").write_text("# The SVM family's fast method against scikit-learn\n\n"
                                    + __doc__.split("\n\n")[1].replace("\n", " ") + "\n\n"
                                    + df.to_markdown(index=False, floatfmt=".3g") + "\n")
    print(f"{len(df)} rows -> {out / 'members.csv'}, {out / 'members.md'}")
    return 0
