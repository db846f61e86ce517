r"""Coursework: the lecture demos and worked examples, each a function that writes its
figures, tables and a Markdown report section into an output directory.

Runner suites (``python -m experiments.run --suite NAME``) call these; notebooks and
tests call them directly. Each returns a :class:`Section`.

* :func:`demo_linear`, :func:`demo_rbf`, :func:`demo_compare`: the MATLAB demo's
  ``svmdemo_linear``, ``svmdemo_rbf`` and ``svmdemo_compare`` (seed 000) on
  ``gendata(15, 15)``: a circle separates the classes, a line cannot.
* :func:`seeds`: every worked example of 001 (Examples 5.1, 5.2, Exercises 5.4, 5.5)
  and the perceptron of 002, each checked against its published numbers and marked
  pass/fail. Where the notes print no number (Exercises 5.4 and 5.5 give the data and
  the MATLAB code only) the reference is scikit-learn's ``SVC`` (LIBSVM) at a tight
  tolerance and the agreement of our primal and dual solutions; the table says which.
* :func:`perceptron_vs_svm`: the perceptron's separating line beside the maximum-margin
  one, with both margins (002: "Do all samples contribute to w?").
* :func:`choose_C`: 002's advice "Grid search using cross-validation": k-fold grid
  search over C (and gamma for the Gaussian kernel), the validation-accuracy heat
  map, the chosen values, and the regularization path (w*, b*, #SV, margin vs C).

Notation of the notes: labels y_i in {-1, +1} (A = +1 drawn blue, B = -1 drawn red,
as in 001's MATLAB plots), f(x) = w'x + b or sum_i alpha_i y_i k(x_i, x) + b, slacks
xi_i = max(0, 1 - y_i f(x_i)), margin width 2 / ||w||.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state, no backend
switch), so these functions are safe in scripts, workers and notebooks alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.svm import SVC

from experiments.datasets import (
    Dataset,
    example_5_1,
    exercise_5_4,
    exercise_5_5,
    gendata,
    load_dataset,
    perceptron_slides,
)
from experiments.estimator import SVMClassifier
from experiments.perceptron import perceptron_single_sample
from formulations.recovery import slacks

__all__ = [
    "DEFAULT_BACKEND",
    "DEFAULT_LAYER",
    "PUBLISHED",
    "Section",
    "choose_C",
    "demo_compare",
    "demo_linear",
    "demo_rbf",
    "perceptron_vs_svm",
    "plot_classifier",
    "seeds",
]

DEFAULT_LAYER = "cvxpy"
DEFAULT_BACKEND = "clarabel"

#: Numbers printed in the lecture notes (001, 002), as printed.
PUBLISHED = {
    "example_5_1_w": (-0.9229, 0.7627),
    "example_5_1_b": 1.1976,
    "perceptron_W14": (-3.0, 0.0, 2.0),
    "perceptron_iterations": 14,
    "perceptron_W2": (0.0, 0.0, 1.0),  # after step 1; step 2 keeps W3 = W2
    "perceptron_check_margins": (1.0, 1.0, 1.0, 1.0),  # the slides' "w14 . x_i y_i = 1 > 0"
}
#: Half a unit in the 4th decimal: a value "reproduces" a number printed to 4 decimals.
ROUNDING_TOL = 5e-5

_BLUE, _RED = "tab:blue", "tab:red"
# The scikit-learn reference is solved far tighter than its default (tol=1e-3).
_SVC_TOL = 1e-10


@dataclass
class Section:
    """What a coursework function wrote: a report section and the files behind it.

    Attributes:
        name: the runner suite's name, e.g. ``"demo-linear"``.
        title: the section's heading.
        markdown: the section (heading, explanation, tables, figure links relative
            to the output directory); also written to ``<out_dir>/<stem>.md``.
        figures: PNG files written.
        tables: CSV files written, by short name.
        table: the main table as a DataFrame.
        passed: for checked sections (seeds), whether every check passed; else None.
    """

    name: str
    title: str
    markdown: str
    figures: list[Path] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)
    table: pd.DataFrame | None = None
    passed: bool | None = None


# ----------------------------------------------------------------------------- helpers


def _out(out_dir) -> Path:
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def _md_table(df: pd.DataFrame) -> str:
    # A "|" inside a cell would end the cell: escape it.
    df = df.apply(lambda col: col.map(lambda v: v.replace("|", "\\|") if isinstance(v, str) else v))
    return df.to_markdown(index=False, floatfmt=".4g")


def _fmt_vec(v) -> str:
    return "(" + ", ".join(f"{x:.4f}" for x in np.asarray(v, dtype=float).ravel()) + ")"


def _write_section(out: Path, stem: str, section: Section) -> Section:
    (out / f"{stem}.md").write_text(section.markdown + "\n")
    return section


def _line_xy(w, b: float, level: float, xlim, ylim, n: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Points of the line w'x + b = level inside the box (handles vertical lines)."""
    w1, w2 = float(w[0]), float(w[1])
    if abs(w2) >= abs(w1):
        xs = np.linspace(*xlim, n)
        return xs, (level - b - w1 * xs) / w2
    ys = np.linspace(*ylim, n)
    return (level - b - w2 * ys) / w1, ys


def _bounds(X: np.ndarray, pad: float = 0.15) -> tuple[tuple[float, float], tuple[float, float]]:
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.maximum(hi - lo, 1e-9)
    lo, hi = lo - pad * span, hi + pad * span
    return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))


def _scatter(ax, X: np.ndarray, y: np.ndarray, sv: np.ndarray | None = None) -> None:
    ax.scatter(*X[y > 0].T, c=_BLUE, marker="o", s=22, label="A (+1)", zorder=3)
    ax.scatter(*X[y < 0].T, c=_RED, marker="s", s=22, label="B (-1)", zorder=3)
    if sv is not None and np.any(sv):
        ax.scatter(*X[sv].T, s=110, facecolors="none", edgecolors="k", linewidths=1.0,
                   label="support vectors", zorder=4)


def plot_classifier(
    ax,
    X: np.ndarray,
    y: np.ndarray,
    decision: Callable[[np.ndarray], np.ndarray],
    *,
    sv: np.ndarray | None = None,
    title: str = "",
    xlim=None,
    ylim=None,
    resolution: int = 150,
    axis_labels: tuple[str, str] = ("x1", "x2"),
) -> None:
    """Draw f's sign regions, f = 0 (solid) and f = +-1 (dashed margins) and the data.

    ``decision`` maps an (m, 2) array to f-values; ``sv`` is a boolean mask (or index
    array) of the support vectors, circled in black; ``axis_labels`` name the two features.
    """
    if xlim is None or ylim is None:
        bx, by = _bounds(X)
        xlim, ylim = xlim or bx, ylim or by
    xx, yy = np.meshgrid(np.linspace(*xlim, resolution), np.linspace(*ylim, resolution))
    F = np.asarray(decision(np.column_stack([xx.ravel(), yy.ravel()]))).reshape(xx.shape)
    ax.contourf(xx, yy, F > 0, levels=[-0.5, 0.5, 1.5], colors=["#fbe3e3", "#e3ecfb"], zorder=0)
    if F.min() < 0 < F.max():
        ax.contour(xx, yy, F, levels=[0.0], colors="k", linewidths=1.4, zorder=1)
    levels = [lv for lv in (-1.0, 1.0) if F.min() < lv < F.max()]
    if levels:
        ax.contour(xx, yy, F, levels=levels, colors=[_RED if lv < 0 else _BLUE for lv in levels],
                   linestyles="--", linewidths=1.0, zorder=1)
    mask = None
    if sv is not None:
        sv = np.asarray(sv)
        if sv.dtype == bool:
            mask = sv
        else:
            mask = np.zeros(len(y), dtype=bool)
            mask[sv.astype(int)] = True
    _scatter(ax, X, y, mask)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(axis_labels[0], fontsize=8)
    ax.set_ylabel(axis_labels[1], fontsize=8)
    ax.tick_params(labelsize=7)


def _svc_reference(est: SVMClassifier) -> SVC:
    """scikit-learn's SVC with the same kernel, C and resolved gamma, solved tightly."""
    k = est.kernel_
    return SVC(kernel=k.name, C=est.C, gamma=k.gamma if k.gamma is not None else "scale",
               degree=k.degree, coef0=k.coef0, tol=_SVC_TOL)


def _fit_row(est: SVMClassifier, X: np.ndarray, y: np.ndarray, **extra) -> dict:
    """One table row: the fitted SVM's numbers and its agreement with SVC."""
    sol = est.solution_
    chk = sol.checks
    svc = _svc_reference(est).fit(X, y)
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
        sum_xi=float(slacks(y, f).sum()),
        train_acc=float(np.mean(est.classes_[(f > 0).astype(int)] == y)),  # predict(X), without a 2nd f
        rel_gap=chk.get("rel_duality_gap"),
        b=float(est.intercept_[0]),
        max_abs_f_minus_svc=float(np.max(np.abs(f - svc.decision_function(X)))),
        svc_n_sv=int(svc.support_.size),
    )
    if hasattr(est, "coef_"):
        row["w"] = _fmt_vec(est.coef_[0])
    return row


def _estimator(formulation: str, layer: str, backend: str, profile: str, **params) -> SVMClassifier:
    return SVMClassifier(formulation=formulation, layer=layer, backend=backend, profile=profile, **params)


# ----------------------------------------------------------------------------- demos


def demo_linear(
    out_dir,
    *,
    C_values: Sequence[float] = (0.1, 1.0, 10.0, 100.0),
    layer: str = DEFAULT_LAYER,
    backend: str = DEFAULT_BACKEND,
    profile: str = "high",
    seed: int = 0,
) -> Section:
    """``svmdemo_linear``: a linear soft-margin SVM on ``gendata(15, 15)`` for several C.

    The classes are a disc inside a ring, so no line separates them: every C leaves
    slacks, and raising C narrows the margin 2/||w|| without ever reaching zero
    training error. Each fit is the soft-margin primal (8); the dual (11) and SVC are
    solved too, and the table reports how far they are from it.
    """
    out = _out(out_dir)
    ds = gendata(15, 15, seed=seed)
    X, y = ds.X, ds.y
    rows, fig = [], Figure(figsize=(3.2 * len(C_values), 3.4), layout="constrained")
    axes = fig.subplots(1, len(C_values), squeeze=False)[0]
    for ax, C in zip(axes, C_values):
        est = _estimator("soft_primal", layer, backend, profile, C=C).fit(X, y)
        dual = _estimator("dual", layer, backend, profile, C=C).fit(X, y)
        row = _fit_row(est, X, y)
        row["max_abs_w_primal_minus_dual"] = float(np.max(np.abs(est.coef_ - dual.coef_)))
        rows.append(row)
        plot_classifier(ax, X, y, est.decision_function, sv=est.support_,
                        title=f"linear, C={C:g}: {row['n_sv']} SV, acc {row['train_acc']:.2f}\n"
                              f"margin 2/||w|| = {row['margin']:.3g}")
    fig.suptitle(f"svmdemo_linear on {ds.name} ({layer}/{backend})", fontsize=10)
    df = pd.DataFrame(rows)
    fig_path = _save(fig, out / "demo_linear.png")
    csv = out / "demo_linear.csv"
    df.to_csv(csv, index=False)
    md = "\n".join([
        "## demo-linear: a linear SVM on gendata(15, 15)",
        "",
        f"Like `svmdemo_linear` of the MATLAB demo (seed 000): {ds.description} "
        f"The soft-margin primal (8) is solved by {layer}/{backend} for each C; the dual (11) "
        "and scikit-learn's SVC are solved too, as cross-checks. No line separates a disc "
        "from a ring, so every C leaves points inside the margin or misclassified "
        "(sum of slacks > 0); a larger C narrows the margin and trades it for fewer "
        "violations, but the training accuracy stays well below 1.",
        "",
        _md_table(df[["C", "w", "b", "n_sv", "margin", "sum_xi", "train_acc", "rel_gap",
                      "max_abs_w_primal_minus_dual", "max_abs_f_minus_svc", "status"]]),
        "",
        f"![demo-linear]({fig_path.name})",
    ])
    sec = Section("demo-linear", "A linear SVM on gendata(15, 15)", md, [fig_path], {"demo_linear": csv}, df)
    return _write_section(out, "demo_linear", sec)


def demo_rbf(
    out_dir,
    *,
    C: float = 1.0,
    gammas: Sequence[float] = (0.5, 2.0, 10.0),
    layer: str = DEFAULT_LAYER,
    backend: str = DEFAULT_BACKEND,
    profile: str = "high",
    seed: int = 0,
) -> Section:
    """``svmdemo_rbf``: a Gaussian-kernel SVM on ``gendata(15, 15)``.

    The demo's README calls ``svmdemo(X, y, 'rbf', 1, .5)``: C = 1 and kernel
    parameter 0.5, which we read as gamma in exp(-gamma ||x - x'||^2) (the notes do not
    print svmdemo's code). The kernel dual separates disc and ring; a larger gamma
    makes the surface hug the points (more support vectors, wigglier boundary).
    """
    out = _out(out_dir)
    ds = gendata(15, 15, seed=seed)
    X, y = ds.X, ds.y
    rows, fig = [], Figure(figsize=(3.2 * len(gammas), 3.4), layout="constrained")
    axes = fig.subplots(1, len(gammas), squeeze=False)[0]
    for ax, gamma in zip(axes, gammas):
        est = _estimator("kernel_dual", layer, backend, profile, kernel="rbf", C=C, gamma=gamma).fit(X, y)
        row = _fit_row(est, X, y, gamma=gamma)
        rows.append(row)
        plot_classifier(ax, X, y, est.decision_function, sv=est.support_,
                        title=f"rbf gamma={gamma:g}, C={C:g}\n{row['n_sv']} SV, acc {row['train_acc']:.2f}")
    fig.suptitle(f"svmdemo_rbf on {ds.name} ({layer}/{backend})", fontsize=10)
    df = pd.DataFrame(rows)
    fig_path = _save(fig, out / "demo_rbf.png")
    csv = out / "demo_rbf.csv"
    df.to_csv(csv, index=False)
    md = "\n".join([
        "## demo-rbf: a Gaussian-kernel SVM on gendata(15, 15)",
        "",
        f"Like `svmdemo_rbf` (seed 000; its README's call `svmdemo(X, y, 'rbf', 1, .5)` is "
        f"read as C = 1, gamma = 0.5). The kernel dual is solved by {layer}/{backend}; "
        "solid line f(x) = 0, dashed f(x) = +-1, circled points are support vectors. "
        "Unlike the linear SVM, the Gaussian kernel separates the disc from the ring; "
        "as gamma grows the boundary follows the points more closely and more of them "
        "become support vectors. The last columns compare with scikit-learn's SVC.",
        "",
        _md_table(df[["gamma", "C", "b", "n_sv", "n_free_sv", "sum_xi", "train_acc", "rel_gap",
                      "max_abs_f_minus_svc", "svc_n_sv", "status"]]),
        "",
        f"![demo-rbf]({fig_path.name})",
    ])
    sec = Section("demo-rbf", "A Gaussian-kernel SVM on gendata(15, 15)", md, [fig_path], {"demo_rbf": csv}, df)
    return _write_section(out, "demo_rbf", sec)


#: Kernel settings of demo_compare: (label, SVMClassifier parameters).
COMPARE_KERNELS: tuple[tuple[str, dict], ...] = (
    ("linear", {"kernel": "linear"}),
    ("poly Q=2", {"kernel": "poly", "degree": 2, "gamma": 1.0, "coef0": 1.0}),
    ("poly Q=3", {"kernel": "poly", "degree": 3, "gamma": 1.0, "coef0": 1.0}),
    ("rbf gamma=0.5", {"kernel": "rbf", "gamma": 0.5}),
    ("rbf gamma=5", {"kernel": "rbf", "gamma": 5.0}),
)


def demo_compare(
    out_dir,
    *,
    C_values: Sequence[float] = (0.1, 1.0, 10.0, 100.0),
    kernels: Sequence[tuple[str, dict]] = COMPARE_KERNELS,
    layer: str = DEFAULT_LAYER,
    backend: str = DEFAULT_BACKEND,
    profile: str = "high",
    seed: int = 0,
) -> Section:
    """``svmdemo_compare``: kernels (rows) x C (columns) on ``gendata(15, 15)``.

    Every panel is one kernel dual solved by the chosen backend (the linear kernel
    too, so that all panels come from the same formulation).
    """
    out = _out(out_dir)
    ds = gendata(15, 15, seed=seed)
    X, y = ds.X, ds.y
    fig = Figure(figsize=(2.8 * len(C_values), 2.8 * len(kernels)), layout="constrained")
    axes = fig.subplots(len(kernels), len(C_values), squeeze=False)
    xlim, ylim = _bounds(X)
    rows = []
    for i, (label, params) in enumerate(kernels):
        for j, C in enumerate(C_values):
            est = _estimator("kernel_dual", layer, backend, profile, C=C, **params).fit(X, y)
            row = _fit_row(est, X, y, setting=label)
            rows.append(row)
            plot_classifier(axes[i, j], X, y, est.decision_function, sv=est.support_, xlim=xlim, ylim=ylim,
                            resolution=100,
                            title=f"{label}, C={C:g}\n{row['n_sv']} SV, acc {row['train_acc']:.2f}")
    fig.suptitle(f"svmdemo_compare on {ds.name} ({layer}/{backend})", fontsize=11)
    df = pd.DataFrame(rows)
    fig_path = _save(fig, out / "demo_compare.png")
    csv = out / "demo_compare.csv"
    df.to_csv(csv, index=False)
    md = "\n".join([
        "## demo-compare: kernels and C side by side",
        "",
        "Like `svmdemo_compare` (seed 000): the kernel dual on gendata(15, 15) for each "
        f"kernel (rows) and C (columns), solved by {layer}/{backend}. The linear kernel "
        "cannot separate the disc from the ring at any C; the polynomial and Gaussian "
        "kernels can, and a large C or a large gamma fits the training points ever more "
        "tightly (fewer margin violations, more complex boundary). `max_abs_f_minus_svc` "
        "is the largest difference of f on the training points from scikit-learn's SVC.",
        "",
        _md_table(df[["setting", "C", "n_sv", "sum_xi", "train_acc", "rel_gap", "max_abs_f_minus_svc",
                      "status"]]),
        "",
        f"![demo-compare]({fig_path.name})",
    ])
    sec = Section("demo-compare", "Kernels and C side by side", md, [fig_path], {"demo_compare": csv}, df)
    return _write_section(out, "demo_compare", sec)


# ----------------------------------------------------------------------------- perceptron


def _geometric_margins(w, b: float, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(distance of the closest +1 point, of the closest -1 point) to w'x + b = 0, signed."""
    f = (X @ np.asarray(w, dtype=float) + b) / float(np.linalg.norm(w))
    return float(np.min(f[y > 0])), float(np.min(-f[y < 0]))


def _draw_line(ax, w, b: float, xlim, ylim, color: str, label: str, levels=()) -> None:
    """w'x + b = 0 (solid) and w'x + b = level for each level (dashed)."""
    ax.plot(*_line_xy(w, b, 0.0, xlim, ylim), color=color, lw=2, label=label)
    for level in levels:
        ax.plot(*_line_xy(w, b, level, xlim, ylim), color=color, lw=1, ls="--")


def perceptron_vs_svm(
    out_dir,
    *,
    layer: str = DEFAULT_LAYER,
    backend: str = DEFAULT_BACKEND,
    profile: str = "high",
    max_iter: int = 2000,
) -> Section:
    """The perceptron's line beside the maximum-margin line, with both margins.

    Three panels: the slides' 4-point example (002, notebook order: the perceptron ends
    at W14 = (-3, 0, 2), i.e. the line x1 = 2/3, while the SVM's is x1 = 1/2); Example
    5.1's 60 points; and Exercise 5.4's non-separable points, where the perceptron stops
    at ``max_iter`` without converging and the soft-margin SVM (C = 10) still gives a
    line. Each line is drawn with dashed parallels through the closest point of each
    class: the perceptron stops at the first separating line it meets, so its smallest
    margin is smaller than the SVM's, which maximizes exactly that.
    """
    out = _out(out_dir)
    cases = [
        (perceptron_slides(order="notebook"), "hard_primal", None, ((-0.4, 1.4), (-0.4, 1.4))),
        (example_5_1(), "hard_primal", None, ((0, 10), (0, 10))),
        (exercise_5_4(), "soft_primal", 10.0, ((0, 10), (0, 10))),
    ]
    fig = Figure(figsize=(14, 5.4), layout="constrained")
    axes = fig.subplots(1, len(cases))
    rows = []
    for ax, (ds, formulation, C, (xlim, ylim)) in zip(axes, cases):
        X, y = ds.X, ds.y
        per = perceptron_single_sample(X, y, rho=1.0, max_iter=max_iter)
        params = {} if C is None else {"C": C}
        svm = _estimator(formulation, layer, backend, profile, **params).fit(X, y)
        w_svm, b_svm = svm.coef_[0], float(svm.intercept_[0])
        _scatter(ax, X, y, sv=np.isin(np.arange(len(y)), svm.support_))
        dp, dn = _geometric_margins(per.w, per.b, X, y)
        sp, sn = _geometric_margins(w_svm, b_svm, X, y)
        # The perceptron's margins: parallels through the closest point of each class
        # (meaningless when it did not separate the data). The SVM's: f = +-1.
        nw = float(np.linalg.norm(per.w))
        _draw_line(ax, per.w, per.b, xlim, ylim, "tab:orange",
                   f"perceptron: min margin {min(dp, dn):.3g}",
                   (dp * nw, -dn * nw) if per.converged else ())
        _draw_line(ax, w_svm, b_svm, xlim, ylim, "k",
                   ("SVM" if C is None else f"soft-margin SVM, C={C:g}") + f": min margin {min(sp, sn):.3g}"
                   + ("" if C is None else f", 2/||w||={2 / np.linalg.norm(w_svm):.3g}"),
                   (1.0, -1.0))
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_aspect("equal", adjustable="box")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=1)
        status = "converged" if per.converged else "did NOT converge"
        shown_W = f", W = {_fmt_vec(per.W)}" if ds.n <= 4 else ""
        ax.set_title(f"{ds.name}\nperceptron {status} after {per.n_iterations} iterations{shown_W}", fontsize=9)
        for method, w, b, d_pos, d_neg, extra in (
            ("perceptron", per.w, per.b, dp, dn, {"converged": per.converged, "iterations": per.n_iterations,
                                                   "message": per.message}),
            (f"SVM {formulation}", w_svm, b_svm, sp, sn, {"converged": True, "iterations": None,
                                                          "message": svm.solution_.status}),
        ):
            rows.append({
                "dataset": ds.name, "method": method, "w": _fmt_vec(w), "b": b,
                "margin_to_A": d_pos, "margin_to_B": d_neg, "min_margin": min(d_pos, d_neg),
                "train_acc": float(np.mean(np.sign(X @ w + b) == y)), **extra,
            })
    fig.suptitle("The perceptron stops at the first separating line; the SVM takes the widest one",
                 fontsize=10)
    df = pd.DataFrame(rows)
    fig_path = _save(fig, out / "perceptron_vs_svm.png")
    csv = out / "perceptron_vs_svm.csv"
    df.to_csv(csv, index=False)
    md = "\n".join([
        "## The perceptron beside the maximum-margin SVM",
        "",
        "Solid lines are the separating lines. Dashed orange: the parallels to the "
        "perceptron's line through the closest point of each class (the distance between "
        "solid and dashed is that side's geometric margin); dashed black: the SVM's "
        "margins f(x) = +-1. `min_margin` is the smallest signed distance of a point to the "
        "line (negative when a point is misclassified). The perceptron "
        "of 002 stops at the first W that classifies every sample correctly, wherever that "
        "line happens to lie; the SVM chooses the line whose smallest margin is largest. "
        "On non-separable data (Exercise 5.4) the perceptron never stops by itself: it "
        f"hits the cap (max_iter = {max_iter}) and says it did not converge.",
        "",
        _md_table(df[["dataset", "method", "w", "b", "margin_to_A", "margin_to_B", "min_margin",
                      "train_acc", "converged", "iterations"]]),
        "",
        f"![perceptron vs SVM]({fig_path.name})",
    ])
    sec = Section("perceptron-vs-svm", "The perceptron beside the maximum-margin SVM", md, [fig_path],
                  {"perceptron_vs_svm": csv}, df)
    return _write_section(out, "perceptron_vs_svm", sec)


# ----------------------------------------------------------------------------- seeds


def _check(rows: list, item: str, quantity: str, published: str, ours: str, solver: str,
           criterion: str, ok: bool, note: str = "", kind: str = "published") -> None:
    """One checked row; ``kind`` is "published" (a number printed in the notes) or
    "reference" (the notes print none: compared with the primal/dual or SVC)."""
    rows.append({"item": item, "quantity": quantity, "kind": kind, "published / reference": published, "ours": ours,
                 "solved by": solver, "criterion": criterion, "result": "pass" if ok else "FAIL",
                 "note": note})


def _seeds_svm_checks(rows: list, layer: str, backend: str, profile: str) -> dict:
    """Examples 5.1, 5.2 and Exercises 5.4, 5.5 for one (layer, backend); returns fits for figures."""
    who = f"{layer}/{backend}"
    fits = {}
    w_pub, b_pub = np.array(PUBLISHED["example_5_1_w"]), PUBLISHED["example_5_1_b"]
    ds = example_5_1()
    crit = f"|ours - published| <= {ROUNDING_TOL:g} (printed to 4 decimals)"
    # Example 5.1: hard-margin primal (4).
    est = _estimator("hard_primal", layer, backend, profile).fit(ds.X, ds.y)
    w, b = est.coef_[0], float(est.intercept_[0])
    _check(rows, "Example 5.1 (primal (4))", "w*", _fmt_vec(w_pub), _fmt_vec(w), who, crit,
           bool(np.max(np.abs(w - w_pub)) <= ROUNDING_TOL))
    _check(rows, "Example 5.1 (primal (4))", "b*", f"{b_pub:.4f}", f"{b:.6f}", who, crit,
           abs(b - b_pub) <= ROUNDING_TOL)
    fits["example_5_1"] = est
    # Example 5.2: the dual (6) (C = inf), w* = sum lambda_i y_i x_i, b* from a support vector.
    dual = _estimator("dual", layer, backend, profile, C=math.inf).fit(ds.X, ds.y)
    wd, bd = dual.coef_[0], float(dual.intercept_[0])
    _check(rows, "Example 5.2 (dual (6))", "w* = sum lambda_i y_i x_i", _fmt_vec(w_pub), _fmt_vec(wd), who,
           crit, bool(np.max(np.abs(wd - w_pub)) <= ROUNDING_TOL))
    _check(rows, "Example 5.2 (dual (6))", "b* = 1/y_i - w*'x_i (lambda_i > 0)", f"{b_pub:.4f}", f"{bd:.6f}",
           who, crit, abs(bd - b_pub) <= ROUNDING_TOL)
    fits["example_5_2"] = dual

    # Exercise 5.4: soft margin, C = 10, slacks. The notes print no numbers.
    ds = exercise_5_4()
    C = 10.0
    primal = _estimator("soft_primal", layer, backend, profile, C=C).fit(ds.X, ds.y)
    dual = _estimator("dual", layer, backend, profile, C=C).fit(ds.X, ds.y)
    svc = SVC(kernel="linear", C=C, tol=_SVC_TOL).fit(ds.X, ds.y)
    xi = {name: slacks(ds.y, f) for name, f in (
        ("primal", primal.decision_function(ds.X)), ("dual", dual.decision_function(ds.X)),
        ("svc", svc.decision_function(ds.X)))}
    tol = 1e-4
    dwb = max(float(np.max(np.abs(dual.coef_ - primal.coef_))), abs(float(dual.intercept_[0] - primal.intercept_[0])))
    swb = max(float(np.max(np.abs(svc.coef_ - dual.coef_))), abs(float(svc.intercept_[0] - dual.intercept_[0])))
    note = "the notes print the data and ask for xi but print no numbers"
    _check(rows, "Exercise 5.4 (dual (11), C=10)", "(w*, b*)", f"primal (8): {_fmt_vec(primal.coef_[0])}, "
           f"{primal.intercept_[0]:.4f}", f"{_fmt_vec(dual.coef_[0])}, {dual.intercept_[0]:.4f}", who,
           f"max |dual - primal| = {dwb:.1e} <= {tol:g}", dwb <= tol, note, "reference")
    _check(rows, "Exercise 5.4 (dual (11), C=10)", "(w*, b*) vs scikit-learn SVC",
           f"SVC: {_fmt_vec(svc.coef_[0])}, {svc.intercept_[0]:.4f}", f"{_fmt_vec(dual.coef_[0])}, "
           f"{dual.intercept_[0]:.4f}", who, f"max |ours - SVC| = {swb:.1e} <= {tol:g}", swb <= tol, note, "reference")
    dxi = max(float(np.max(np.abs(xi["dual"] - xi["primal"]))), float(np.max(np.abs(xi["dual"] - xi["svc"]))))
    # "Nonzero" well above solver noise (points on the margin have xi ~ 1e-5) and well
    # below the real slacks.
    nz = np.flatnonzero(xi["dual"] > 1e-3)
    nz_same = all(set(np.flatnonzero(v > 1e-3)) == set(nz) for v in xi.values())
    _check(rows, "Exercise 5.4 (dual (11), C=10)", "slack vector xi (nonzero entries)",
           "primal and SVC: " + ", ".join(f"xi_{i + 1}={xi['svc'][i]:.4f}" for i in nz),
           ", ".join(f"xi_{i + 1}={xi['dual'][i]:.4f}" for i in nz), who,
           f"same xi_i > 1e-3, max diff {dxi:.1e} <= {tol:g}", nz_same and dxi <= tol, note, "reference")
    # KKT (12): xi_i > 0 => lambda_i = C; the misclassified (xi > 1) include B's (6, 8).
    alpha = np.zeros(ds.n)
    alpha[dual.support_] = np.abs(dual.dual_coef_[0])
    at_C = bool(np.all(alpha[nz] >= C * (1 - 1e-5)))
    wrong = np.flatnonzero(xi["dual"] > 1.0)
    row_68 = int(np.flatnonzero(np.all(ds.X == (6.0, 8.0), axis=1))[0])
    _check(rows, "Exercise 5.4 (dual (11), C=10)", "KKT: xi_i > 0 => lambda_i = C; misclassified = {xi > 1}",
           "B's last point (6, 8) lies among A (by construction of the data)",
           f"lambda = C on all {nz.size} slack points; misclassified rows {[int(i) + 1 for i in wrong]}",
           who, "lambda_i >= C(1 - 1e-5) where xi_i > 0, and (6, 8) has xi > 1",
           at_C and row_68 in set(wrong), kind="reference")
    fits["exercise_5_4"] = (primal, dual, svc, xi["dual"])

    # Exercise 5.5: Gaussian kernel, C = 1, gamma = 1.
    ds = exercise_5_5()
    est = _estimator("kernel_dual", layer, backend, profile, kernel="rbf", C=1.0, gamma=1.0).fit(ds.X, ds.y)
    svc = SVC(kernel="rbf", C=1.0, gamma=1.0, tol=_SVC_TOL).fit(ds.X, ds.y)
    coef_ours, coef_svc = np.zeros(ds.n), np.zeros(ds.n)
    coef_ours[est.support_] = est.dual_coef_[0]
    coef_svc[svc.support_] = svc.dual_coef_[0]
    da, db = float(np.max(np.abs(coef_ours - coef_svc))), abs(float(est.intercept_[0] - svc.intercept_[0]))
    note = "the notes plot f(x) = 0 but print no numbers"
    _check(rows, "Exercise 5.5 (Gaussian kernel, C=1, gamma=1)", "lambda_i y_i and b*",
           f"SVC: b = {svc.intercept_[0]:.4f}, {svc.support_.size} SV",
           f"b = {est.intercept_[0]:.4f}, {est.support_.size} SV", who,
           f"max |lambda y - SVC| = {da:.1e}, |b - SVC| = {db:.1e} <= {tol:g}", da <= tol and db <= tol, note,
           "reference")
    g = np.linspace(-2, 2, 201)
    grid = np.column_stack([a.ravel() for a in np.meshgrid(g, g)])
    agree = float(np.mean((est.decision_function(grid) > 0) == (svc.decision_function(grid) > 0)))
    acc = float(np.mean(est.predict(ds.X) == ds.y))
    _check(rows, "Exercise 5.5 (Gaussian kernel, C=1, gamma=1)", "separating surface f(x) = 0 on [-2, 2]^2",
           "SVC's surface", f"sign of f agrees on {agree:.2%} of a 201 x 201 grid; train accuracy {acc:.2f}",
           who, "agreement >= 99.9%", agree >= 0.999, note, "reference")
    fits["exercise_5_5"] = (est, svc)
    return fits


def _seeds_perceptron_checks(rows: list) -> None:
    who = "experiments.perceptron"
    W14 = np.array(PUBLISHED["perceptron_W14"])
    nb = perceptron_single_sample(*_xy(perceptron_slides(order="notebook")), rho=1.0)
    _check(rows, "Perceptron (002), single-sample, rho=1, W1=0", "W14 after 14 iterations",
           f"{_fmt_vec(W14)}, 14 iterations", f"{_fmt_vec(nb.W)}, {nb.n_iterations} iterations", who,
           "exact", bool(np.array_equal(nb.W, W14) and nb.n_iterations == PUBLISHED["perceptron_iterations"]),
           "points in the order of the notebook behind the slides (x3 = (1,1), x4 = (1,0)); "
           "the slides print x3 = (1,0), x4 = (1,1)")
    ds = perceptron_slides(order="slides")
    pr = perceptron_single_sample(ds.X, ds.y, rho=1.0)
    W2 = np.array(PUBLISHED["perceptron_W2"])
    _check(rows, "Perceptron (002), single-sample, rho=1, W1=0", "steps 1-2: W2 = (0, 0, 1), W3 = W2",
           _fmt_vec(W2), f"{_fmt_vec(pr.history[0])}, {_fmt_vec(pr.history[1])}", who, "exact",
           bool(np.array_equal(pr.history[0], W2) and np.array_equal(pr.history[1], W2)),
           "slides' printed order")
    marg = pr.decision_function(ds.X) * ds.y
    marg14 = (ds.X @ W14[:2] + W14[2]) * ds.y
    _check(rows, "Perceptron (002), single-sample, rho=1, W1=0", "the slides' check W'x_i y_i = 1 (i = 1..4)",
           _fmt_vec(PUBLISHED["perceptron_check_margins"]),
           f"{_fmt_vec(marg)} at W = {_fmt_vec(pr.W)} ({pr.n_iterations} iterations, printed order)", who,
           "exact", bool(np.array_equal(marg, PUBLISHED["perceptron_check_margins"])),
           f"the slides' W14 = (-3, 0, 2) gives {_fmt_vec(marg14)}, not all 1: the printed check "
           "belongs to (-2, 0, 1), where the printed order ends")


def _xy(ds: Dataset) -> tuple[np.ndarray, np.ndarray]:
    return ds.X, ds.y


def _seeds_figures(out: Path, fits: dict, who: str) -> list[Path]:
    paths = []
    # Examples 5.1 / 5.2, drawn like the notes' MATLAB plot (axis [0 10 0 10]).
    ds = example_5_1()
    fig = Figure(figsize=(9, 4.4), layout="constrained")
    for ax, key, name in zip(fig.subplots(1, 2), ("example_5_1", "example_5_2"),
                             ("Example 5.1: primal (4)", "Example 5.2: dual (6)")):
        est = fits[key]
        plot_classifier(ax, ds.X, ds.y, est.decision_function, sv=est.support_, xlim=(0, 10), ylim=(0, 10),
                        title=f"{name}\nw* = {_fmt_vec(est.coef_[0])}, "
                              f"b* = {est.intercept_[0]:.4f}")
    fig.suptitle(f"Examples 5.1 and 5.2 (published w = (-0.9229, 0.7627), b = 1.1976), {who}", fontsize=10)
    paths.append(_save(fig, out / "seeds_example_5_1_5_2.png"))

    # Exercise 5.4: slack points annotated.
    ds = exercise_5_4()
    primal, dual, svc, xi = fits["exercise_5_4"]
    fig = Figure(figsize=(5.2, 5.0), layout="constrained")
    ax = fig.subplots()
    plot_classifier(ax, ds.X, ds.y, dual.decision_function, sv=dual.support_, xlim=(0, 10), ylim=(0, 10),
                    title=f"Exercise 5.4: soft margin, C = 10 (dual (11), {who})\n"
                          f"w* = {_fmt_vec(dual.coef_[0])}, b* = {dual.intercept_[0]:.4f}")
    for i in np.flatnonzero(xi > 1e-3):
        ax.annotate(f"xi={xi[i]:.2f}", ds.X[i], textcoords="offset points", xytext=(5, 5), fontsize=7)
    paths.append(_save(fig, out / "seeds_exercise_5_4.png"))

    # Exercise 5.5: f(x) = 0, ours vs SVC.
    ds = exercise_5_5()
    est, svc = fits["exercise_5_5"]
    fig = Figure(figsize=(5.2, 5.0), layout="constrained")
    ax = fig.subplots()
    plot_classifier(ax, ds.X, ds.y, est.decision_function, sv=est.support_, xlim=(-2, 2), ylim=(-2, 2),
                    resolution=201, title=f"Exercise 5.5: Gaussian kernel, C = 1, gamma = 1 ({who})\n"
                                          "black: ours f = 0; green dotted: SVC's f = 0")
    g = np.linspace(-2, 2, 201)
    xx, yy = np.meshgrid(g, g)
    ax.contour(xx, yy, svc.decision_function(np.column_stack([xx.ravel(), yy.ravel()])).reshape(xx.shape),
               levels=[0.0], colors="tab:green", linestyles=":", linewidths=2)
    paths.append(_save(fig, out / "seeds_exercise_5_5.png"))
    return paths


def seeds(
    out_dir,
    *,
    backends: Sequence[tuple[str, str]] = (("cvxpy", "clarabel"), ("pyomo", "highs")),
    profile: str = "high",
    figures: bool = True,
) -> Section:
    """Every worked example of 001 and 002, checked against its published numbers.

    For each (layer, backend): Example 5.1's w*, b* (primal (4)); Example 5.2's (dual
    (6), w* = sum lambda_i y_i x_i, b* from a support vector); Exercise 5.4 (soft margin,
    C = 10): (w*, b*) and the slack vector xi from the dual against the primal and SVC,
    and the KKT facts about the slack points; Exercise 5.5 (Gaussian kernel, C = 1,
    gamma = 1) against SVC. Then the perceptron of 002 (both point orders; see
    ``perceptron_slides``). Each row is marked pass/FAIL; ``Section.passed`` is True
    only when all pass. ``figures=False`` skips the plots (the checks are the same).
    """
    out = _out(out_dir)
    rows: list[dict] = []
    fits = None
    for layer, backend in backends:
        f = _seeds_svm_checks(rows, layer, backend, profile)
        fits = fits or (f, f"{layer}/{backend}")
    _seeds_perceptron_checks(rows)
    df = pd.DataFrame(rows)
    passed = bool((df["result"] == "pass").all())
    fig_paths = []
    if figures and fits:
        fig_paths = _seeds_figures(out, *fits)
        fig_paths.append(perceptron_vs_svm(out, layer=backends[0][0], backend=backends[0][1]).figures[0])
    csv = out / "seeds.csv"
    df.to_csv(csv, index=False)
    n_pass = int((df["result"] == "pass").sum())
    pub = df["kind"] == "published"
    n_pub_pass = int((df.loc[pub, "result"] == "pass").sum())
    n_ref_pass = int((df.loc[~pub, "result"] == "pass").sum())
    md = "\n".join([
        "## seeds: the lecture notes' worked examples",
        "",
        f"**{n_pass} of {len(df)} checks pass.** Published numbers reproduced: {n_pub_pass} of {int(pub.sum())} "
        f"checks{' (all)' if n_pub_pass == int(pub.sum()) else ''}; checks against a reference where the notes "
        f"print no number: {n_ref_pass} of {int((~pub).sum())} agree. "
        f"Solved with profile `{profile}` by {', '.join(f'{a}/{b}' for a, b in backends)}.",
        "",
        "Sources: `001_e078ff43bd63a81d.txt` (Examples 5.1 and 5.2 print w = (-0.9229, 0.7627), "
        "b = 1.1976; Exercises 5.4 and 5.5 print the data and the MATLAB code but no "
        "numbers, so there the reference is the primal/dual agreement and scikit-learn's "
        f"SVC at tol = {_SVC_TOL:g}) and `002_725cbac91910d465.txt` (the perceptron). "
        "About the perceptron: the slides print the points as x3 = (1, 0), x4 = (1, 1) and "
        "give W14 = (-3, 0, 2) from their notebook, which ran x3 and x4 swapped. In the "
        "notebook's order we reproduce W14 = (-3, 0, 2) after exactly 14 iterations; in the "
        "printed order the run ends after 9 iterations at (-2, 0, 1), and that W is the one "
        "for which the slides' check 'W'x_i y_i = 1 for all four samples' holds: "
        "(-3, 0, 2) gives (2, 2, 1, 1). Both numbers are reproduced, each by the order that "
        "produced it.",
        "",
        _md_table(df),
        "",
        *[f"![{p.stem}]({p.name})" for p in fig_paths],
    ])
    sec = Section("seeds", "The lecture notes' worked examples", md, fig_paths, {"seeds": csv}, df, passed)
    return _write_section(out, "seeds", sec)


# ----------------------------------------------------------------------------- choosing C


def choose_C(
    out_dir,
    *,
    dataset: str = "nonlinear",
    dataset_params: dict | None = None,
    C_grid: Sequence[float] = tuple(np.logspace(-2, 3, 6)),
    gamma_grid: Sequence[float] = tuple(np.logspace(-1, 2, 4)),
    path_dataset: str = "exercise_5_4",
    path_C: Sequence[float] = tuple(np.logspace(-3, 3, 19)),
    k: int = 5,
    test_size: float = 0.25,
    seed: int = 0,
    layer: str = DEFAULT_LAYER,
    backend: str = DEFAULT_BACKEND,
    profile: str = "high",
    n_jobs: int | None = None,
) -> Section:
    """Choose C (and gamma) by k-fold cross-validated grid search, as 002 advises.

    A stratified ``test_size`` split is held out first; on the rest, ``GridSearchCV``
    with ``StratifiedKFold(k, shuffle, seed)`` scores the linear SVM over ``C_grid``
    and the Gaussian-kernel SVM over ``C_grid`` x ``gamma_grid`` by mean validation
    accuracy (ties go to the first, i.e. smallest, C and gamma). The chosen models are
    refit on the whole training part and scored on the held-out points.

    The regularization path solves the linear soft-margin primal (8) on
    ``path_dataset`` for each C in ``path_C`` and plots w*, b*, the number of support
    vectors and the margin width 2/||w*|| against C.
    """
    out = _out(out_dir)
    params = {"n": 120, "seed": seed, "noise": 0.2} if dataset_params is None and dataset == "nonlinear" \
        else dict(dataset_params or {})
    ds = load_dataset(dataset, **params)
    X_tr, X_te, y_tr, y_te = train_test_split(ds.X, ds.y, test_size=test_size, stratify=ds.y, random_state=seed)
    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    base = dict(layer=layer, backend=backend, profile=profile)
    searches = {
        "linear": GridSearchCV(SVMClassifier(kernel="linear", **base), {"C": list(C_grid)}, cv=cv, n_jobs=n_jobs),
        "rbf": GridSearchCV(SVMClassifier(kernel="rbf", **base), {"C": list(C_grid), "gamma": list(gamma_grid)},
                            cv=cv, n_jobs=n_jobs),
    }
    chosen, cv_tables = [], {}
    for name, search in searches.items():
        search.fit(X_tr, y_tr)
        res = pd.DataFrame(search.cv_results_)
        keep = [c for c in res.columns if c.startswith("param_")] + ["mean_test_score", "std_test_score",
                                                                     "rank_test_score"]
        cv_tables[name] = res[keep].rename(columns=lambda c: c.removeprefix("param_"))
        best = search.best_params_
        chosen.append({
            "kernel": name, "C": best["C"], "gamma": best.get("gamma"),
            "cv_accuracy": search.best_score_, "test_accuracy": float(search.score(X_te, y_te)),
            "n_sv": int(search.best_estimator_.support_.size),
        })
    chosen_df = pd.DataFrame(chosen)

    # Figure 1: validation accuracy, linear (curve) and rbf (heat map).
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_lin, ax_rbf = fig.subplots(1, 2)
    lin = cv_tables["linear"]
    ax_lin.errorbar(lin["C"].astype(float), lin["mean_test_score"], yerr=lin["std_test_score"], marker="o",
                    capsize=3)
    ax_lin.set_xscale("log")
    ax_lin.set_xlabel("C")
    ax_lin.set_ylabel(f"mean {k}-fold validation accuracy")
    ax_lin.axvline(chosen_df.loc[0, "C"], color="k", ls=":", label=f"chosen C = {chosen_df.loc[0, 'C']:g}")
    ax_lin.legend(fontsize=8)
    ax_lin.set_title(f"linear SVM on {ds.name}", fontsize=9)
    rbf = cv_tables["rbf"].astype({"C": float, "gamma": float})
    heat = rbf.pivot(index="gamma", columns="C", values="mean_test_score")
    im = ax_rbf.imshow(heat.values, origin="lower", cmap="viridis", aspect="auto")
    ax_rbf.set_xticks(range(heat.shape[1]), [f"{c:g}" for c in heat.columns], fontsize=7)
    ax_rbf.set_yticks(range(heat.shape[0]), [f"{g:g}" for g in heat.index], fontsize=7)
    ax_rbf.set_xlabel("C")
    ax_rbf.set_ylabel("gamma")
    for (i, j), v in np.ndenumerate(heat.values):
        ax_rbf.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="w" if v < heat.values.mean() else "k")
    bi = list(heat.index).index(float(chosen_df.loc[1, "gamma"]))
    bj = list(heat.columns).index(float(chosen_df.loc[1, "C"]))
    ax_rbf.scatter([bj], [bi], s=300, facecolors="none", edgecolors="r", linewidths=2)
    fig.colorbar(im, ax=ax_rbf, label=f"mean {k}-fold validation accuracy")
    ax_rbf.set_title(f"Gaussian kernel: chosen C = {chosen_df.loc[1, 'C']:g}, "
                     f"gamma = {chosen_df.loc[1, 'gamma']:g}", fontsize=9)
    heat_path = _save(fig, out / "choose_C_cv.png")

    # Figure 2: the regularization path.
    pds = load_dataset(path_dataset)
    path_rows = []
    for C in path_C:
        est = SVMClassifier(formulation="soft_primal", C=float(C), **base).fit(pds.X, pds.y)
        w = est.coef_[0]
        f = est.decision_function(pds.X)
        path_rows.append({
            "C": float(C), **{f"w{i + 1}": float(v) for i, v in enumerate(w)}, "b": float(est.intercept_[0]),
            "norm_w": float(np.linalg.norm(w)), "n_sv": int(est.support_.size),
            "n_bound_sv": est.solution_.checks.get("n_bound_sv"),
            "margin": 2.0 / float(np.linalg.norm(w)) if np.linalg.norm(w) > 0 else math.inf,
            "sum_xi": float(slacks(pds.y, f).sum()),
            "train_acc": float(np.mean(est.predict(pds.X) == pds.y)), "status": est.solution_.status,
        })
    path = pd.DataFrame(path_rows)
    fig = Figure(figsize=(11, 7), layout="constrained")
    axs = fig.subplots(2, 2)
    for col in [c for c in path.columns if c.startswith("w") and c[1:].isdigit()] + ["b"]:
        axs[0, 0].plot(path["C"], path[col], marker=".", label=col + "*")
    axs[0, 0].set_title("w* and b* against C", fontsize=9)
    axs[0, 0].legend(fontsize=8)
    axs[0, 1].plot(path["C"], path["n_sv"], marker=".", label="all SV (lambda > 0)")
    axs[0, 1].plot(path["C"], path["n_bound_sv"], marker=".", label="at the bound lambda = C")
    axs[0, 1].set_title("number of support vectors", fontsize=9)
    axs[0, 1].legend(fontsize=8)
    axs[1, 0].plot(path["C"], path["margin"], marker=".")
    axs[1, 0].set_yscale("log")
    axs[1, 0].set_title("margin width 2 / ||w*||", fontsize=9)
    axs[1, 1].plot(path["C"], path["sum_xi"], marker=".", label="sum of slacks")
    axs[1, 1].set_yscale("symlog")
    ax2 = axs[1, 1].twinx()
    ax2.plot(path["C"], path["train_acc"], color="tab:green", marker=".", label="training accuracy")
    ax2.set_ylim(0, 1.05)
    axs[1, 1].set_title("sum of slacks (left), training accuracy (right, green)", fontsize=9)
    for ax in axs.ravel():
        ax.set_xscale("log")
        ax.set_xlabel("C")
    fig.suptitle(f"Regularization path of the linear soft-margin SVM on {pds.name} ({layer}/{backend})",
                 fontsize=10)
    path_fig = _save(fig, out / "choose_C_path.png")

    tables = {"choose_C_chosen": out / "choose_C_chosen.csv", "choose_C_path": out / "choose_C_path.csv"}
    chosen_df.to_csv(tables["choose_C_chosen"], index=False)
    path.to_csv(tables["choose_C_path"], index=False)
    for name, t in cv_tables.items():
        tables[f"choose_C_cv_{name}"] = out / f"choose_C_cv_{name}.csv"
        t.to_csv(tables[f"choose_C_cv_{name}"], index=False)
    md = "\n".join([
        "## choose-C: choosing C (and gamma) by cross-validated grid search",
        "",
        f"002: 'Given a training set, how to find the optimal C? Grid search using "
        f"cross-validation.' Data: {ds.description} A stratified {test_size:.0%} of it is "
        f"held out; on the rest, `GridSearchCV` with {k}-fold stratified cross-validation "
        f"(seed {seed}) scores `SVMClassifier` ({layer}/{backend}) over C in "
        f"{[float(f'{c:.4g}') for c in C_grid]} (linear) and C x gamma with gamma in "
        f"{[float(f'{g:.4g}') for g in gamma_grid]} (Gaussian kernel). Ties go to the "
        "smallest C and gamma (the simplest model).",
        "",
        "Chosen values (refit on the whole training part, scored on the held-out points):",
        "",
        _md_table(chosen_df),
        "",
        f"![cross-validation]({heat_path.name})",
        "",
        f"Regularization path on {pds.name} (linear soft margin (8)): as C grows, ||w*|| "
        "grows and the margin 2/||w*|| shrinks, fewer points stay inside the margin "
        "(fewer support vectors, fewer of them at the bound lambda = C), and the sum of "
        "slacks falls; C trades margin width against training errors. Once the set of "
        "support vectors stops changing, the free support vectors on the margin pin "
        "(w*, b*) and the path is flat from there on"
        + (" (on Exercise 5.4 from about C = 1)." if path_dataset == "exercise_5_4" else "."),
        "",
        _md_table(path[["C", "b", "norm_w", "margin", "n_sv", "n_bound_sv", "sum_xi", "train_acc",
                        "status"]]),
        "",
        f"![regularization path]({path_fig.name})",
    ])
    sec = Section("choose-C", "Choosing C (and gamma) by cross-validated grid search", md, [heat_path, path_fig],
                  tables, chosen_df)
    return _write_section(out, "choose_C", sec)


# ----------------------------------------------------------------------------- suites and CLI


@dataclass(frozen=True)
class CourseworkSuite:
    """A runner suite that writes its own section instead of sweeping backends."""

    name: str
    description: str
    run: Callable[..., Section]  # run(out_dir, **options) -> Section


COURSEWORK_SUITES: dict[str, CourseworkSuite] = {
    s.name: s
    for s in (
        CourseworkSuite("demo-linear", "svmdemo_linear: linear soft-margin SVM on gendata(15, 15), "
                        "C = 0.1, 1, 10, 100", demo_linear),
        CourseworkSuite("demo-rbf", "svmdemo_rbf: Gaussian-kernel SVM on gendata(15, 15), C = 1, "
                        "gamma = 0.5, 2, 10", demo_rbf),
        CourseworkSuite("demo-compare", "svmdemo_compare: linear, poly and rbf kernels x C on gendata(15, 15)",
                        demo_compare),
        CourseworkSuite("seeds", "every worked example of the lecture notes (001, 002) checked against its "
                        "published numbers, pass/fail", seeds),
        CourseworkSuite("choose-C", "k-fold cross-validated grid search over C and gamma, heat map, "
                        "regularization path", choose_C),
        CourseworkSuite("perceptron-vs-svm", "the perceptron's line beside the maximum-margin line, "
                        "with both margins", perceptron_vs_svm),
    )
}


def run_suite(name: str, out_dir, **options) -> Section:
    """Run the coursework suite ``name`` into ``out_dir``; unknown names get a clear error."""
    try:
        suite = COURSEWORK_SUITES[name]
    except KeyError:
        raise ValueError(f"unknown coursework suite {name!r}; suites: {', '.join(COURSEWORK_SUITES)}") from None
    return suite.run(out_dir, **options)


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.coursework SUITE [--out DIR] [--layer L --backend B]``.

    Writes the suite's figures, CSV tables and ``<suite>.md`` into DIR (default
    ``results/coursework/<suite>``); exit code 1 when a checked suite (seeds) fails.
    """
    import argparse

    p = argparse.ArgumentParser(prog="python -m experiments.coursework",
                                description="Run a coursework suite: figures, CSV tables and a Markdown section.")
    p.add_argument("suite", choices=list(COURSEWORK_SUITES) + ["all"], help="which coursework suite to run")
    p.add_argument("--out", default=None,
                   help="output directory (default results/coursework/SUITE; with 'all', one folder per suite)")
    p.add_argument("--layer", default=None, help=f"modelling layer: cvxpy or pyomo (default {DEFAULT_LAYER})")
    p.add_argument("--backend", default=None, help=f"solver backend, e.g. clarabel, highs (default {DEFAULT_BACKEND}; "
                                                   "seeds uses cvxpy/clarabel and pyomo/highs unless both are given)")
    args = p.parse_args(argv)
    names = list(COURSEWORK_SUITES) if args.suite == "all" else [args.suite]
    layer, backend = args.layer or DEFAULT_LAYER, args.backend or DEFAULT_BACKEND
    status = 0
    for name in names:
        root = Path(args.out) if args.out else Path("results") / "coursework"
        out = root / name if (args.suite == "all" or not args.out) else root
        if name == "seeds":
            opts = {"backends": ((layer, backend),)} if args.layer and args.backend else {}
        else:
            opts = {"layer": layer, "backend": backend}
        section = run_suite(name, out, **opts)
        verdict = "" if section.passed is None else (" - all checks pass" if section.passed else " - CHECKS FAILED")
        print(f"{name}: {len(section.figures)} figures, {len(section.tables)} tables -> {out}{verdict}")
        status |= section.passed is False
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
