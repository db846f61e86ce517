"""Figures of a run (bare matplotlib Figures saved through Agg; no display needed).

* ``separator_<group>.png`` for every 2-D problem: the points of both classes (named as
  the user's labels, A (+1) and B (-1) by default), the separating line f(x) = 0 (or the
  kernel's separating surface), both margins f(x) = +-1 dashed, the free support vectors
  (0 < alpha_i < C) circled and the bound ones (alpha_i = C) in diamonds, the axes named
  as the data's columns (x1, x2 by default), as in the lecture notes' plots;
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

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # a bare Figure (no pyplot): no global state, saved through Agg
from matplotlib.lines import Line2D

from experiments.runner.analysis import (
    DataNames,
    load_data,
    load_names,
    load_separability,
    result_from_record,
    with_groups,
)
from experiments.runner.folder import write_whole, writing
from experiments.runner.results_table import from_json
from experiments.separability import plot_certificate
from formulations.kernels import Kernel, decision_function, exact_number
from formulations.model import DUAL_FORMULATIONS
from formulations.recovery import AT_BOUND, FREE, classify, support_mask
from solvers.backends import ranked
from solvers.profiles import PROFILES

STATUS_COLORS = {"optimal": "tab:green", "optimal_inaccurate": "tab:orange", "iteration_limit": "tab:red",
                 "time_limit": "tab:purple", "error": "black", "infeasible": "tab:brown", "unbounded": "tab:pink"}
FLOOR = 1e-17  # zeros on a log axis
#: Which verified row draws a group's picture: a dual solve (its alpha defines the SVs) by an accurate backend.
PREFERRED = list(ranked("accuracy"))


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
    name = row.kernel.split("(")[0]
    gamma = None if pd.isna(row.gamma) else float(row.gamma)
    degree = 3 if pd.isna(row.degree) else int(row.degree)
    coef0 = 0.0 if pd.isna(row.coef0) else float(row.coef0)
    return Kernel(name, gamma=gamma, degree=degree, coef0=coef0)


#: Markers of the support vectors: free ones sit on their margin, bound ones (alpha = C) on or inside it.
FREE_SV = dict(marker="o", s=150, facecolors="none", edgecolors="k", linewidths=1.2)
BOUND_SV = dict(marker="D", s=110, facecolors="none", edgecolors="tab:orange", linewidths=1.6)


def _decision(row: pd.Series, X: np.ndarray, y: np.ndarray, alpha: np.ndarray, points: np.ndarray) -> np.ndarray:
    """f at `points` from the row's w*, b* (linear) or from alpha* and the kernel."""
    w = from_json(row.w)
    if w is not None:
        return points @ np.asarray(w) + row.b
    sv = support_mask(alpha)
    return decision_function(_kernel_of(row), X[sv], (alpha * y)[sv], float(row.b), points)


def separator_figure(row: pd.Series, X: np.ndarray, y: np.ndarray, names: DataNames | None = None) -> Figure:
    """Points, f(x) = 0, f(x) = +-1, and the support vectors of one verified solve (2-D data): free ones
    (0 < alpha_i < C, on their margin) circled, bound ones (alpha_i = C) in diamonds. `names`: the user's
    feature and class names (x1, x2, A (+1), B (-1) by default)."""
    names = names or DataNames(("x1", "x2"))
    alpha = np.asarray(from_json(row.alpha))
    C = float(row.C)
    codes = classify(alpha, y, _decision(row, X, y, alpha, X), C)
    pad = 0.1 * (X.max(axis=0) - X.min(axis=0)) + 1e-9
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    xx, yy = np.meshgrid(np.linspace(lo[0], hi[0], 300), np.linspace(lo[1], hi[1], 300))
    f = _decision(row, X, y, alpha, np.column_stack([xx.ravel(), yy.ravel()]))
    w = from_json(row.w)
    title = (f"w* = ({', '.join(f'{v:.4f}' for v in w)}), b* = {row.b:.4f}" if w is not None
             else f"{row.kernel}, b* = {row.b:.4f}")
    fig = Figure(figsize=(6, 5.5), layout="constrained")
    ax = fig.subplots()
    ax.contourf(xx, yy, f.reshape(xx.shape), levels=[-np.inf, 0, np.inf], colors=["#fde0dd", "#deebf7"], alpha=0.6)
    ax.contour(xx, yy, f.reshape(xx.shape), levels=[-1, 0, 1], colors=["tab:red", "k", "tab:blue"],
               linestyles=["--", "-", "--"], linewidths=[1, 1.6, 1])
    ax.scatter(X[y > 0, 0], X[y > 0, 1], marker="o", c="tab:blue", s=22, label=names.positive)
    ax.scatter(X[y < 0, 0], X[y < 0, 1], marker="s", c="tab:red", s=22, label=names.negative)
    free, bound = codes == FREE, codes == AT_BOUND
    free_label = "support vectors (alpha > 0)" if math.isinf(C) else "free SVs, 0 < alpha < C"
    ax.scatter(X[free, 0], X[free, 1], label=f"{free_label} ({int(free.sum())})", **FREE_SV)
    if bound.any():
        ax.scatter(X[bound, 0], X[bound, 1], label=f"bound SVs, alpha = C ({int(bound.sum())})", **BOUND_SV)
    ax.plot([], [], "k-", lw=1.6, label="f(x) = 0")
    ax.plot([], [], color="grey", ls="--", lw=1, label="f(x) = +-1 (margins)")
    C_txt = exact_number(C)  # "inf" for the hard margin
    ax.set_title(f"{row.dataset}, C = {C_txt}\n{row.formulation} {row.layer}/{row.backend}: {title}", fontsize=9)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_xlabel(names.feature(0))
    ax.set_ylabel(names.feature(1))
    ax.legend(loc="best", fontsize=7, framealpha=0.8)
    return fig


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
    handles = [Line2D([], [], marker="o", ls="", color=STATUS_COLORS.get(s, "grey"), label=s) for s in statuses]
    ax.legend(handles=handles, fontsize=7, loc="upper left", title="verified status", title_fontsize=7)


def _strip_figure(df: pd.DataFrame, panels: list[tuple[str, str, str]], **subplots) -> tuple[Figure, list]:
    """One strip chart per (column, title, y label), solvers on the x axis, colour = verified status."""
    df = with_groups(df)
    solvers = sorted(df.solver.unique())
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    axes = fig.subplots(1, len(panels), **subplots)
    for ax, (column, title, ylabel) in zip(axes, panels):
        _strip(ax, df, column, solvers)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.set_xlabel("layer/backend")
    _legend(axes[0], sorted(df.status.unique()))
    return fig, axes


def gap_kkt_figure(df: pd.DataFrame) -> Figure:
    resid = df[["kkt_stationarity", "kkt_balance", "kkt_primal_feasibility", "kkt_dual_feasibility",
                "kkt_complementarity"]].astype(float)
    df = df.assign(kkt_max=resid.max(axis=1, skipna=True))
    fig, axes = _strip_figure(df, [
        ("rel_duality_gap", "relative duality gap per solve", "relative duality gap (log scale)"),
        ("kkt_max", "largest KKT residual per solve", "largest KKT residual (log scale)")], sharex=True)
    n_solvers = len(axes[0].get_xticks())
    tols: dict[float, list[str]] = {}
    for prof in PROFILES.values():
        tols.setdefault(prof.check_tol, []).append(prof.name)
    for tol, label in ((t, "/".join(names) + " check tol") for t, names in tols.items()):
        axes[0].axhline(tol, color="grey", ls=":", lw=0.8)
        axes[0].annotate(label, (n_solvers - 0.5, tol), fontsize=7, color="grey", ha="right", va="bottom")
    return fig


def time_figure(df: pd.DataFrame) -> Figure:
    return _strip_figure(df, [("build_s", "model build time per solve", "build time [s] (log scale)"),
                              ("solve_s", "solve time per solve", "solve time [s] (log scale)")], sharey=True)[0]


def separability_figures(out_dir: str | Path, data: dict, separability: dict | None = None,
                         names: dict | None = None) -> dict[Path, Figure]:
    """One certificate figure per 2-D data set of out_dir/separability.json (experiments.separability),
    keyed by the path it is saved to; `separability`: its records, where the caller has read them already."""
    out = Path(out_dir)
    records = load_separability(out) if separability is None else separability
    figures = {}
    for name, rec in records.items():
        if name not in data or int(rec.get("d", 0)) != 2 or rec.get("separable") is None:
            continue
        X, y = data[name]
        res = result_from_record(rec["certificate"])
        verdict = "separable" if res.separable else "NOT linearly separable: conv(A) and conv(B) meet"
        fig = plot_certificate(X, y, res, title=f"{name}: {verdict}")
        _name_axes(fig.axes[0], (names or {}).get(name))
        figures[out / "figures" / separability_figure_name(name)] = fig
    return figures


def _name_axes(ax, names: DataNames | None) -> None:
    """The user's feature names on the axes and class names in the legend (a figure drawn with x1, x2, A, B)."""
    if names is None:
        return
    ax.set_xlabel(names.feature(0))
    ax.set_ylabel(names.feature(1))
    legend = ax.get_legend()
    for text in legend.get_texts() if legend else []:
        text.set_text(text.get_text().replace("A (+1)", names.positive).replace("B (-1)", names.negative))


def separability_figure_name(dataset: str) -> str:
    return f"separability_{_slug(dataset)}.png"


def build_figures(out_dir: str | Path, df: pd.DataFrame, data: dict | None = None,
                  separability: dict | None = None, names: dict | None = None) -> dict[Path, Figure]:
    """Every figure of a run (matplotlib Figures, not yet saved), keyed by the path make_figures saves it to.
    `data`, `separability` and `names` (analysis.load_names) are read from the folder where not given."""
    out = Path(out_dir)
    figdir = out / "figures"
    data = load_data(out) if data is None else data
    names = load_names(out) if names is None else names
    figures = {}
    if not df.empty:
        figures[figdir / "gap_kkt_by_backend.png"] = gap_kkt_figure(df)
        figures[figdir / "time_by_backend.png"] = time_figure(df)
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
        figures[figdir / f"separator_{_slug(group)}.png"] = separator_figure(row, X, y, names.get(first.dataset))
    figures.update(separability_figures(out, data, separability, names))
    return figures


def make_figures(out_dir: str | Path, df: pd.DataFrame, data: dict | None = None,
                 separability: dict | None = None, names: dict | None = None) -> list[Path]:
    """Every figure of a run into out_dir/figures; returns the paths written."""
    with writing(Path(out_dir) / "figures"):
        (Path(out_dir) / "figures").mkdir(parents=True, exist_ok=True)
    figures = build_figures(out_dir, df, data, separability, names)
    for path, fig in figures.items():
        write_whole(path, lambda tmp, fig=fig: fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".")))
    return list(figures)
