"""The perceptron's separating line beside the maximum-margin one, with both margins
(002: "Do all samples contribute to w?")."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from experiments.coursework.fitting import DEFAULT_BACKEND, DEFAULT_LAYER, make_estimator
from experiments.coursework.perceptron import perceptron_single_sample
from experiments.coursework.plotting import draw_line, scatter
from experiments.coursework.section import Section, figure_section, fmt_vec, md_table, output_dir
from experiments.datasets import example_5_1, exercise_5_4, perceptron_slides


def _geometric_margins(w, b: float, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(distance of the closest +1 point, of the closest -1 point) to w'x + b = 0, signed."""
    f = (X @ np.asarray(w, dtype=float) + b) / float(np.linalg.norm(w))
    return float(np.min(f[y > 0])), float(np.min(-f[y < 0]))


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
    out = output_dir(out_dir)
    cases = [
        (perceptron_slides(order="notebook"), "hard_primal", None, ((-0.4, 1.4), (-0.4, 1.4))),
        (example_5_1(), "hard_primal", None, ((0, 10), (0, 10))),
        (exercise_5_4(), "soft_primal", 10.0, ((0, 10), (0, 10))),
    ]
    fig = Figure(figsize=(14, 5.4), layout="constrained")
    rows = []
    for ax, (ds, formulation, C, (xlim, ylim)) in zip(fig.subplots(1, len(cases)), cases):
        per = perceptron_single_sample(ds.X, ds.y, rho=1.0, max_iter=max_iter)
        svm = make_estimator(formulation, layer, backend, profile, **({} if C is None else {"C": C})).fit(ds.X, ds.y)
        _draw_case(ax, ds, per, svm, C, xlim, ylim)
        rows += _rows(ds, formulation, per, svm)
    fig.suptitle("The perceptron stops at the first separating line; the SVM takes the widest one",
                 fontsize=10)
    df = pd.DataFrame(rows)
    return figure_section(out, "perceptron_vs_svm", "perceptron-vs-svm", "The perceptron beside the maximum-margin SVM",
                          _markdown(df, max_iter, "perceptron_vs_svm.png"), fig, df)


def _rows(ds, formulation: str, per, svm) -> list[dict]:
    """The perceptron's and the SVM's line on ``ds``: w, b, the margin to each class, training accuracy."""
    X, y = ds.X, ds.y
    w_svm, b_svm = svm.coef_[0], float(svm.intercept_[0])
    rows = []
    for method, w, b, extra in (
        ("perceptron", per.w, per.b, {"converged": per.converged, "iterations": per.n_iterations,
                                      "message": per.message}),
        (f"SVM {formulation}", w_svm, b_svm, {"converged": True, "iterations": None,
                                              "message": svm.solution_.status}),
    ):
        d_pos, d_neg = _geometric_margins(w, b, X, y)
        rows.append({
            "dataset": ds.name, "method": method, "w": fmt_vec(w), "b": b,
            "margin_to_A": d_pos, "margin_to_B": d_neg, "min_margin": min(d_pos, d_neg),
            "train_acc": float(np.mean(np.sign(X @ w + b) == y)), **extra,
        })
    return rows


def _draw_case(ax, ds, per, svm, C: float | None, xlim, ylim) -> None:
    """One panel: the data, the support vectors, both lines and their margins."""
    X, y = ds.X, ds.y
    w_svm, b_svm = svm.coef_[0], float(svm.intercept_[0])
    scatter(ax, X, y, sv=np.isin(np.arange(len(y)), svm.support_))
    dp, dn = _geometric_margins(per.w, per.b, X, y)
    sp, sn = _geometric_margins(w_svm, b_svm, X, y)
    # The perceptron's margins: parallels through the closest point of each class
    # (meaningless when it did not separate the data). The SVM's: f = +-1.
    nw = float(np.linalg.norm(per.w))
    draw_line(ax, per.w, per.b, xlim, ylim, "tab:orange", f"perceptron: min margin {min(dp, dn):.3g}",
              (dp * nw, -dn * nw) if per.converged else ())
    draw_line(ax, w_svm, b_svm, xlim, ylim, "k",
              ("SVM" if C is None else f"soft-margin SVM, C={C:g}") + f": min margin {min(sp, sn):.3g}"
              + ("" if C is None else f", 2/||w||={2 / np.linalg.norm(w_svm):.3g}"),
              (1.0, -1.0))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal", adjustable="box")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=1)
    status = "converged" if per.converged else "did NOT converge"
    shown_W = f", W = {fmt_vec(per.W)}" if ds.n <= 4 else ""
    ax.set_title(f"{ds.name}\nperceptron {status} after {per.n_iterations} iterations{shown_W}", fontsize=9)


def _markdown(df: pd.DataFrame, max_iter: int, figure_name: str) -> str:
    return "\n".join([
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
        md_table(df[["dataset", "method", "w", "b", "margin_to_A", "margin_to_B", "min_margin",
                     "train_acc", "converged", "iterations"]]),
        "",
        f"![perceptron vs SVM]({figure_name})",
    ])
