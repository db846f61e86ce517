"""Figures of a run (matplotlib, Agg backend; no display needed).

* ``separator_<group>.png`` for every 2-D problem: the points of A (+1) and B (-1),
  the separating line f(x) = 0 (or the kernel's separating surface), both margins
  f(x) = +-1 dashed, and the support vectors circled, as in the lecture notes' plots;
* ``gap_kkt_by_backend.png``: the relative duality gap and the largest scaled KKT
  residual of every solve, per (layer, backend), on a log scale;
* ``time_by_backend.png``: build and solve time of every solve per (layer, backend), log scale;
* ``separability_<dataset>.png`` for every 2-D data set checked for linear separability
  (separability.json): both classes, both convex hulls, and the common point of the
  hulls (not separable) or the LP's separating line (separable).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.analysis import load_data, with_groups  # noqa: E402
from experiments.results_table import from_json  # noqa: E402
from formulations.model import DUAL_FORMULATIONS  # noqa: E402

STATUS_COLORS = {"optimal": "tab:green", "optimal_inaccurate": "tab:orange", "iteration_limit": "tab:red",
                 "time_limit": "tab:purple", "error": "black", "infeasible": "tab:brown", "unbounded": "tab:pink"}
FLOOR = 1e-17  # zeros on a log axis
#: Which verified row draws a group's picture: a dual solve (its alpha defines the SVs) by an accurate backend.
PREFERRED = ["clarabel", "piqp", "daqp", "highs", "proxqp", "ipopt", "scs", "osqp"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:120]


def _pick_row(g: pd.DataFrame) -> pd.Series | None:
    ok = g[(g.status == "optimal") & (g.alpha != "")]
    if ok.empty:
        return None
    rank = ok.backend.map({b: i for i, b in enumerate(PREFERRED)}).fillna(99)
    rank = rank + np.where(ok.formulation.isin(DUAL_FORMULATIONS), 0, 100)
    return ok.loc[rank.sort_values(kind="stable").index[0]]


def _kernel_of(row: pd.Series):
    from formulations.kernels import Kernel

    name = row.kernel.split("(")[0]
    gamma = None if pd.isna(row.gamma) else float(row.gamma)
    degree = 3 if pd.isna(row.degree) else int(row.degree)
    coef0 = 0.0 if pd.isna(row.coef0) else float(row.coef0)
    return Kernel(name, gamma=gamma, degree=degree, coef0=coef0)


def separator_figure(row: pd.Series, X: np.ndarray, y: np.ndarray, path: Path) -> Path:
    """Points, f(x) = 0, f(x) = +-1 and circled support vectors of one verified solve (2-D data)."""
    from formulations.kernels import decision_function
    from formulations.recovery import support_mask

    alpha = np.asarray(from_json(row.alpha))
    C = float(row.C)
    sv = support_mask(alpha)
    pad = 0.1 * (X.max(axis=0) - X.min(axis=0)) + 1e-9
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    xx, yy = np.meshgrid(np.linspace(lo[0], hi[0], 300), np.linspace(lo[1], hi[1], 300))
    grid = np.column_stack([xx.ravel(), yy.ravel()])
    w = from_json(row.w)
    if w is not None:
        f = grid @ np.asarray(w) + row.b
        title = f"w* = ({', '.join(f'{v:.4f}' for v in w)}), b* = {row.b:.4f}"
    else:
        kernel = _kernel_of(row)
        f = decision_function(kernel, X[sv], (alpha * y)[sv], float(row.b), grid)
        title = f"{row.kernel}, b* = {row.b:.4f}"
    fig, ax = plt.subplots(figsize=(6, 5.5))
    ax.contourf(xx, yy, f.reshape(xx.shape), levels=[-np.inf, 0, np.inf], colors=["#fde0dd", "#deebf7"], alpha=0.6)
    ax.contour(xx, yy, f.reshape(xx.shape), levels=[-1, 0, 1], colors=["tab:red", "k", "tab:blue"],
               linestyles=["--", "-", "--"], linewidths=[1, 1.6, 1])
    ax.scatter(X[y > 0, 0], X[y > 0, 1], marker="o", c="tab:blue", s=22, label="A (+1)")
    ax.scatter(X[y < 0, 0], X[y < 0, 1], marker="s", c="tab:red", s=22, label="B (-1)")
    ax.scatter(X[sv, 0], X[sv, 1], s=150, facecolors="none", edgecolors="k", linewidths=1.2,
               label=f"support vectors ({int(sv.sum())})")
    C_txt = "inf" if math.isinf(C) else f"{C:g}"
    ax.set_title(f"{row.dataset}, C = {C_txt}\n{row.formulation} {row.layer}/{row.backend}: {title}", fontsize=9)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.legend(loc="best", fontsize=8, framealpha=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _strip(ax, df: pd.DataFrame, column: str, solvers: list[str]) -> None:
    rng = np.random.default_rng(0)  # jitter only
    for i, solver in enumerate(solvers):
        s = df[df.solver == solver]
        vals = s[column].to_numpy(dtype=float)
        keep = np.isfinite(vals)
        x = i + rng.uniform(-0.25, 0.25, size=keep.sum())
        colors = [STATUS_COLORS.get(st, "grey") for st in s.status[keep]]
        ax.scatter(x, np.maximum(np.abs(vals[keep]), FLOOR), c=colors, s=12, alpha=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(solvers)))
    ax.set_xticklabels(solvers, rotation=60, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _legend(ax, statuses) -> None:
    handles = [plt.Line2D([], [], marker="o", ls="", color=STATUS_COLORS.get(s, "grey"), label=s) for s in statuses]
    ax.legend(handles=handles, fontsize=7, loc="upper left")


def gap_kkt_figure(df: pd.DataFrame, path: Path) -> Path:
    df = with_groups(df)
    resid = df[["kkt_stationarity", "kkt_balance", "kkt_primal_feasibility", "kkt_dual_feasibility",
                "kkt_complementarity"]].astype(float)
    df = df.assign(kkt_max=resid.max(axis=1, skipna=True))
    solvers = sorted(df.solver.unique())
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharex=True)
    _strip(axes[0], df, "rel_duality_gap", solvers)
    axes[0].set_title("relative duality gap |P - D| / max(1, |P|) per solve")
    _strip(axes[1], df, "kkt_max", solvers)
    axes[1].set_title("largest KKT residual per solve (unscaled)")
    from solvers.profiles import PROFILES

    tols: dict[float, list[str]] = {}
    for prof in PROFILES.values():
        tols.setdefault(prof.check_tol, []).append(prof.name)
    for tol, label in ((t, "/".join(names) + " check tol") for t, names in tols.items()):
        axes[0].axhline(tol, color="grey", ls=":", lw=0.8)
        axes[0].annotate(label, (len(solvers) - 0.5, tol), fontsize=7, color="grey", ha="right", va="bottom")
    _legend(axes[0], sorted(df.status.unique()))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def time_figure(df: pd.DataFrame, path: Path) -> Path:
    df = with_groups(df)
    solvers = sorted(df.solver.unique())
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    _strip(axes[0], df, "build_s", solvers)
    axes[0].set_title("model build time [s]")
    _strip(axes[1], df, "solve_s", solvers)
    axes[1].set_title("solve time [s]")
    _legend(axes[0], sorted(df.status.unique()))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def separability_figures(out_dir: str | Path, data: dict, separability: dict | None = None) -> list[Path]:
    """One certificate figure per 2-D data set of out_dir/separability.json (experiments.separability);
    `separability`: its records, where the caller has read them already."""
    from experiments.analysis import load_separability
    from experiments.report import result_from_record
    from experiments.separability import plot_certificate

    out = Path(out_dir)
    records = load_separability(out) if separability is None else separability
    paths = []
    for name, rec in records.items():
        if name not in data or int(rec.get("d", 0)) != 2 or rec.get("separable") is None:
            continue
        X, y = data[name]
        res = result_from_record(rec["certificate"])
        verdict = "separable" if res.separable else "NOT linearly separable: conv(A) and conv(B) meet"
        fig = plot_certificate(X, y, res, title=f"{name}: {verdict}")
        target = out / "figures" / separability_figure_name(name)
        fig.savefig(target, dpi=110)
        paths.append(target)
    return paths


def separability_figure_name(dataset: str) -> str:
    return f"separability_{_slug(dataset)}.png"


def make_figures(out_dir: str | Path, df: pd.DataFrame, data: dict | None = None,
                 separability: dict | None = None) -> list[Path]:
    """Every figure of a run into out_dir/figures; returns the paths written."""
    out = Path(out_dir)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    data = load_data(out) if data is None else data
    paths = []
    if not df.empty:
        paths.append(gap_kkt_figure(df, figdir / "gap_kkt_by_backend.png"))
        paths.append(time_figure(df, figdir / "time_by_backend.png"))
    gdf = with_groups(df)
    for group in dict.fromkeys(gdf.sort_values("order").group):
        g = gdf[gdf.group == group]
        first = g.iloc[0]
        if first.dataset not in data or int(first.d) != 2:
            continue
        row = _pick_row(g)
        if row is None:
            continue
        X, y = data[first.dataset]
        paths.append(separator_figure(row, X, y, figdir / f"separator_{_slug(group)}.png"))
    paths += separability_figures(out, data, separability)
    return paths
