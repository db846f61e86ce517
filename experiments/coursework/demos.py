"""The MATLAB demos of seed 000 (``svmdemo_linear``, ``svmdemo_rbf``, ``svmdemo_compare``) on
``gendata(15, 15)``: a circle separates the classes, a line cannot."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from experiments.coursework.fitting import DEFAULT_BACKEND, DEFAULT_LAYER, fit_row, make_estimator
from experiments.coursework.plotting import bounds, plot_classifier
from experiments.coursework.section import Section, figure_section, md_table, output_dir
from experiments.datasets import gendata


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
    out = output_dir(out_dir)
    ds = gendata(15, 15, seed=seed)
    X, y = ds.X, ds.y
    rows, fig = [], Figure(figsize=(3.2 * len(C_values), 3.4), layout="constrained")
    axes = fig.subplots(1, len(C_values), squeeze=False)[0]
    for ax, C in zip(axes, C_values):
        est = make_estimator("soft_primal", layer, backend, profile, C=C).fit(X, y)
        dual = make_estimator("dual", layer, backend, profile, C=C).fit(X, y)
        row = fit_row(est, X, y)
        row["max_abs_w_primal_minus_dual"] = float(np.max(np.abs(est.coef_ - dual.coef_)))
        rows.append(row)
        plot_classifier(ax, X, y, est.decision_function, sv=est.support_,
                        title=f"linear, C={C:g}: {row['n_sv']} SV, acc {row['train_acc']:.2f}\n"
                              f"margin 2/||w|| = {row['margin']:.3g}")
    fig.suptitle(f"svmdemo_linear on {ds.name} ({layer}/{backend})", fontsize=10)
    df = pd.DataFrame(rows)
    intro = (
        f"Like `svmdemo_linear` of the MATLAB demo (seed 000): {ds.description} "
        f"The soft-margin primal (8) is solved by {layer}/{backend} for each C; the dual (11) "
        "and scikit-learn's SVC are solved too, as cross-checks. No line separates a disc "
        "from a ring, so every C leaves points inside the margin or misclassified "
        "(sum of slacks > 0); a larger C narrows the margin and trades it for fewer "
        "violations, but the training accuracy stays well below 1."
    )
    columns = ["C", "w", "b", "n_sv", "margin", "sum_xi", "train_acc", "rel_gap",
               "max_abs_w_primal_minus_dual", "max_abs_f_minus_svc", "status"]
    return _demo_section(out, "demo_linear", "A linear SVM on gendata(15, 15)", intro, fig, df, columns)


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
    out = output_dir(out_dir)
    ds = gendata(15, 15, seed=seed)
    X, y = ds.X, ds.y
    rows, fig = [], Figure(figsize=(3.2 * len(gammas), 3.4), layout="constrained")
    axes = fig.subplots(1, len(gammas), squeeze=False)[0]
    for ax, gamma in zip(axes, gammas):
        est = make_estimator("kernel_dual", layer, backend, profile, kernel="rbf", C=C, gamma=gamma).fit(X, y)
        row = fit_row(est, X, y, gamma=gamma)
        rows.append(row)
        plot_classifier(ax, X, y, est.decision_function, sv=est.support_,
                        title=f"rbf gamma={gamma:g}, C={C:g}\n{row['n_sv']} SV, acc {row['train_acc']:.2f}")
    fig.suptitle(f"svmdemo_rbf on {ds.name} ({layer}/{backend})", fontsize=10)
    df = pd.DataFrame(rows)
    intro = (
        f"Like `svmdemo_rbf` (seed 000; its README's call `svmdemo(X, y, 'rbf', 1, .5)` is "
        f"read as C = 1, gamma = 0.5). The kernel dual is solved by {layer}/{backend}; "
        "solid line f(x) = 0, dashed f(x) = +-1, circled points are support vectors. "
        "Unlike the linear SVM, the Gaussian kernel separates the disc from the ring; "
        "as gamma grows the boundary follows the points more closely and more of them "
        "become support vectors. The last columns compare with scikit-learn's SVC."
    )
    columns = ["gamma", "C", "b", "n_sv", "n_free_sv", "sum_xi", "train_acc", "rel_gap",
               "max_abs_f_minus_svc", "svc_n_sv", "status"]
    return _demo_section(out, "demo_rbf", "A Gaussian-kernel SVM on gendata(15, 15)", intro, fig, df, columns)


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
    out = output_dir(out_dir)
    ds = gendata(15, 15, seed=seed)
    X, y = ds.X, ds.y
    fig = Figure(figsize=(2.8 * len(C_values), 2.8 * len(kernels)), layout="constrained")
    axes = fig.subplots(len(kernels), len(C_values), squeeze=False)
    xlim, ylim = bounds(X)
    rows = []
    for i, (label, params) in enumerate(kernels):
        for j, C in enumerate(C_values):
            est = make_estimator("kernel_dual", layer, backend, profile, C=C, **params).fit(X, y)
            row = fit_row(est, X, y, setting=label)
            rows.append(row)
            plot_classifier(axes[i, j], X, y, est.decision_function, sv=est.support_, xlim=xlim, ylim=ylim,
                            resolution=100,
                            title=f"{label}, C={C:g}\n{row['n_sv']} SV, acc {row['train_acc']:.2f}")
    fig.suptitle(f"svmdemo_compare on {ds.name} ({layer}/{backend})", fontsize=11)
    df = pd.DataFrame(rows)
    intro = (
        "Like `svmdemo_compare` (seed 000): the kernel dual on gendata(15, 15) for each "
        f"kernel (rows) and C (columns), solved by {layer}/{backend}. The linear kernel "
        "cannot separate the disc from the ring at any C; the polynomial and Gaussian "
        "kernels can, and a large C or a large gamma fits the training points ever more "
        "tightly (fewer margin violations, more complex boundary). `max_abs_f_minus_svc` "
        "is the largest difference of f on the training points from scikit-learn's SVC."
    )
    columns = ["setting", "C", "n_sv", "sum_xi", "train_acc", "rel_gap", "max_abs_f_minus_svc", "status"]
    return _demo_section(out, "demo_compare", "Kernels and C side by side", intro, fig, df, columns)


def _demo_section(out, stem: str, title: str, intro: str, fig: Figure, df: pd.DataFrame, columns) -> Section:
    """Writes a demo's section: heading "<name>: <title>", the intro, the table's ``columns``, the figure."""
    name = stem.replace("_", "-")
    md = "\n".join([
        f"## {name}: {title[0].lower()}{title[1:]}", "", intro, "", md_table(df[columns]), "",
        f"![{name}]({stem}.png)",
    ])
    return figure_section(out, stem, name, title, md, fig, df)
