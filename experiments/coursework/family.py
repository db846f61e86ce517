"""The SVM family in primal and dual (docs/family.md): per member, P* against D* through both layers and what
its multipliers mean, and nu's bounds on the fractions of margin errors and support vectors shown numerically."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from experiments.coursework.fitting import DEFAULT_BACKEND
from experiments.coursework.section import Section, figure_section, md_table, output_dir
from experiments.family_peers import load
from experiments.progress import Progress
from formulations import family
from formulations.family.validation import nu_svc_limit as nu_svc_limit_of
from formulations.kernels import Kernel
from solvers.family import solve

#: the layers every member is solved through (the backend is the suite's)
LAYERS = ("pyomo", "cvxpy")
#: the fractions nu bounds, by member: (from above, from below)
FRACTIONS = {"nu_svc": ("fraction_margin_errors", "fraction_sv"), "one_class": ("fraction_outliers", "fraction_sv"),
             "nu_svr": ("fraction_outside_tube", "fraction_sv"), "eps_svr": ("fraction_outside_tube", "fraction_sv")}


@dataclass(frozen=True)
class Demo:
    """One member's case: a bundled set (its first n points of a seeded shuffle, standardized) and parameters."""

    data: str
    n: int
    params: dict
    shift: float = 0.0  # the one-class SVM with the linear kernel separates the data from the origin: moved away


#: nu l (nu-SVC: nu l / 2) is kept off the integers: there the multipliers can all sit at their bounds, and rho,
#: b and eps are then intervals that different formulations may report different points of
DEMOS = {
    "nu_svc": Demo("breast_cancer", 100, {"nu": 0.31}),
    "one_class": Demo("wine", 100, {"nu": 0.205}, shift=3.0),
    "eps_svr": Demo("diabetes", 100, {"C": 10.0, "epsilon": 20.0}),
    "nu_svr": Demo("diabetes", 100, {"C": 1000.0, "nu": 0.405}),
}


def _data(demo: Demo, task: str):
    X, y = load(demo.data, demo.n)
    return X + demo.shift, (None if task == family.NOVELTY else y)


def duality_rows(layer_backends, profile: str, bar: Progress | None = None) -> pd.DataFrame:
    """Every formulation of every member with a demo, through each (layer, backend): its status, P* and D*
    recomputed from its point, the gap, and its multipliers' meaning (linear kernel: the primal is its dual's).
    `bar`: told of every solve."""
    rows = []
    for name, demo in DEMOS.items():
        member = family.MEMBERS[name]
        X, y = _data(demo, member.task)
        for formulation in member.formulations:
            kernel = "linear" if formulation.endswith("kernel_dual") else None
            for layer, backend in layer_backends:
                sol = solve(formulation, X, y, layer=layer, backend=backend, kernel=kernel, profile=profile,
                            **demo.params)
                e, c = sol.extras, sol.checks
                above, below = FRACTIONS[name]
                rows.append({"member": name, "formulation": formulation, "layer": layer, "backend": backend,
                             "status": sol.status, "P": c.get("primal_objective"), "D": c.get("dual_objective"),
                             "rel_gap": c.get("rel_duality_gap"), "b": sol.b, "rho": e.get("rho"),
                             "epsilon": e.get("epsilon"), **{f"{key}_optimal": _interval(e, key)
                                                              for key in ("b", "rho", "epsilon")},
                             "above": e.get(above), "below": e.get(below),
                             "alpha_alpha_star": e.get("alpha_alpha_star"), "verdict": c.get("verdict")})
                if bar is not None:
                    bar.done(f"{formulation} {layer}/{backend}: {sol.status} (P - D {_gap(c)})")
    return pd.DataFrame(rows)


def _interval(extras: dict, key: str) -> str:
    """The optimal interval of b, rho or eps (the proved optimum's, solvers.family) where it is not one value: a
    row's own value is then one point of it, and rows of other backends may report others."""
    lo, hi = extras.get(f"{key}_lower"), extras.get(f"{key}_upper")
    if lo is None or hi - lo <= 1e-9 * max(abs(lo), abs(hi), 1e-300):
        return ""
    return f"[{lo:.6g}, {hi:.6g}]"


def _gap(checks: dict) -> str:
    gap = checks.get("rel_duality_gap")
    return "n/a" if gap is None else f"{gap:.1e}"


#: the nu the suite sweeps (nu-SVC: those up to its bound 2 min(n+, n-)/n; docs/family.md names them)
NU_GRID = tuple(np.linspace(0.05, 0.95, 10))


def nu_svc_limit(y) -> float:
    """nu-SVC's dual has a point only for nu <= 2 min(n+, n-)/n (each class carries nu/2)."""
    return nu_svc_limit_of(np.where(y == 1, 1.0, -1.0))  # the demo's labels are 0 and 1


def _nu_cases(nus=NU_GRID) -> list[tuple[str, float, np.ndarray, np.ndarray | None]]:
    """(member, nu, X, y) of the nu sweep: nu-SVC (breast cancer, 100 points) at the nu up to its bound
    2 min(n+, n-)/n, the one-class SVM (wine, 100 points) at every nu."""
    X, y = load("breast_cancer", 100)
    limit = nu_svc_limit(y)
    wine = load("wine", 100)[0]
    return ([("nu_svc", float(nu), X, y) for nu in nus if nu <= limit]
            + [("one_class", float(nu), wine, None) for nu in nus])


def nu_rows(layer: str, backend: str, profile: str, nus=NU_GRID, bar: Progress | None = None) -> pd.DataFrame:
    """nu-SVC (rbf, breast cancer, 100 points: nu up to 2 min(n+, n-)/n) and the one-class SVM (rbf, wine) over
    a range of nu: the fractions nu bounds at the optimum proved from each row's point (extras["proved"]; the
    row's own where none is proved), and the row's status. `bar`: told of every solve."""
    rows = []
    for member, nu, data, target in _nu_cases(nus):
        sol = solve(f"{member}_kernel_dual", data, target, layer=layer, backend=backend, nu=float(nu),
                    kernel=Kernel("rbf", gamma=1.0 / data.shape[1]), profile=profile)
        above, below = FRACTIONS[member]
        point = sol.extras.get("proved", sol.extras)
        rows.append({"member": member, "nu": float(nu), "status": sol.status, "proved": "proved" in sol.extras,
                     "above": point.get(above), "below": point.get(below), "holds": point.get("nu_bounds_hold")})
        if bar is not None:
            bar.done(f"{member} nu={nu:.2f} {layer}/{backend}: {sol.status}, nu bounds "
                     f"{'hold' if point.get('nu_bounds_hold') else 'FAIL'}")
    return pd.DataFrame(rows)


def svm_family(out_dir, *, layer: str | None = None, backend: str = DEFAULT_BACKEND, profile: str = "high",
               progress: bool = True) -> Section:
    """The family's section: the duality table (every member's formulations in both layers, or in `layer`), and
    the nu-property figure and table. `progress`: a bar on a terminal, a line per solve in a log
    (experiments.progress), as the runner's other long suites show it."""
    out = output_dir(out_dir)
    layers = LAYERS if layer is None else (layer,)
    n_duality = sum(len(m.formulations) for name, m in family.MEMBERS.items() if name in DEMOS) * len(layers)
    bar = Progress(n_duality + len(_nu_cases()), enabled=progress, unit="solve", desc="family")
    try:
        table = duality_rows([(lay, backend) for lay in layers], profile, bar)
        nu = nu_rows(layers[-1], backend, profile, bar=bar)
    finally:
        bar.close()
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    for ax, (member, part) in zip(fig.subplots(1, 2), nu.groupby("member", sort=False)):
        above, below = (name.replace("fraction_", "").replace("_", " ") for name in FRACTIONS[member])
        ax.plot(part.nu, part.above, "o-", label=f"fraction of {above}")
        ax.plot(part.nu, part.below, "s-", label=f"fraction of {below}")
        ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="nu")
        ax.set(xlabel="nu", ylabel="fraction of the points", title=f"{member}: {above} <= nu <= {below}")
        ax.legend(fontsize=8)
    table.to_csv(out / "family_duality.csv", index=False)
    section = figure_section(out, "family_nu", "family", "The SVM family in primal and dual",
                             _markdown(table, nu, backend, profile), fig, nu)
    section.tables["family_duality"] = out / "family_duality.csv"
    # checked: every duality row verified, and nu's bounds at every proved optimum
    section.passed = bool(table.status.eq("optimal").all() and nu.proved.all() and nu.holds.all())
    section.summary = _summary(table, nu)
    return section


def _summary(table: pd.DataFrame, nu: pd.DataFrame) -> str:
    """The section's verdict in one line (the console's last, as the seeds suite's): how many checks pass."""
    verified = int(table.status.eq("optimal").sum())
    held = int((nu.proved & nu.holds.fillna(False).astype(bool)).sum())
    counts = ", ".join(f"{member} {int(part.holds.fillna(False).astype(bool).sum())} of {len(part)}"
                       for member, part in nu.groupby("member", sort=False))
    return (f"{verified} of {len(table)} primal and dual rows verified optimal (P* = D*); nu's bounds hold at {held} "
            f"of {len(nu)} proved optima of the nu sweep ({counts})")


def _span(nu: pd.DataFrame, member: str) -> str:
    values = nu.nu[nu.member == member]
    return f"{values.min():g} to {values.max():g}" if len(values) else "(none: every nu is past the bound)"


def _markdown(table: pd.DataFrame, nu: pd.DataFrame, backend: str, profile: str) -> str:
    shown = table[["member", "formulation", "layer", "status", "P", "D", "rel_gap", "b", "rho", "epsilon",
                   "b_optimal", "rho_optimal", "epsilon_optimal", "above", "below", "alpha_alpha_star"]]
    return "\n".join([
        "## The SVM family in primal and dual",
        "",
        f"Every member's primal and dual(s), solved by {backend} at profile {profile} through each layer, with the "
        "linear kernel so that the primal is its duals' own: P* and D* recomputed from each point (P* = D* at the "
        "optimum), b, rho and eps recovered as multipliers, and the fractions nu bounds (`above`: margin errors, "
        "outliers or points outside the tube; `below`: support vectors). `alpha_alpha_star` is max min(alpha_i, "
        "alpha*_i) over the bound: 0, as the regressions' multipliers pair (docs/family.md). Where no multiplier of "
        "a group is free (likely where nu l, nu-SVC's nu l / 2, is an integer) rho, b or eps is an interval of "
        "optimal values, and each backend may report another point of it: `*_optimal` gives the interval the "
        "proved optimum allows where it is not one value (blank: unique), and every row is checked against it. "
        "Data: "
        + "; ".join(f"{m}: {d.data} ({d.n} points, " + ", ".join(f"{k}={v:g}" for k, v in d.params.items()) + ")"
                    for m, d in DEMOS.items()) + ".",
        "",
        md_table(shown),
        "",
        "### nu bounds the fractions",
        "",
        f"nu-SVC (rbf, breast cancer) over nu from {_span(nu, 'nu_svc')} (nu-SVC's bound 2 min(n+, n-)/n ends "
        f"it) and the one-class SVM (rbf, wine) over nu from {_span(nu, 'one_class')}, at the optimum proved from each "
        "row's point (`proved`; a row the solver left short of the bar is `optimal_inaccurate`, its optimum is "
        "the same): the fraction of margin errors (outliers) is at most nu and the fraction of support vectors at "
        "least nu.",
        "",
        "![nu bounds the fractions](family_nu.png)",
        "",
        md_table(nu),
    ])
