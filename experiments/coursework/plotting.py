"""Drawing a 2-D classifier the way the notes' MATLAB plots do: sign regions, f = 0 and f = +-1,
the two classes (A = +1 blue, B = -1 red) and the support vectors circled.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state, no backend switch).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BLUE, RED = "tab:blue", "tab:red"


def line_xy(w, b: float, level: float, xlim, ylim, n: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Points of the line w'x + b = level inside the box (handles vertical lines)."""
    w1, w2 = float(w[0]), float(w[1])
    if abs(w2) >= abs(w1):
        xs = np.linspace(*xlim, n)
        return xs, (level - b - w1 * xs) / w2
    ys = np.linspace(*ylim, n)
    return (level - b - w2 * ys) / w1, ys


def bounds(X: np.ndarray, pad: float = 0.15) -> tuple[tuple[float, float], tuple[float, float]]:
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.maximum(hi - lo, 1e-9)
    lo, hi = lo - pad * span, hi + pad * span
    return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))


def scatter(ax, X: np.ndarray, y: np.ndarray, sv: np.ndarray | None = None) -> None:
    ax.scatter(*X[y > 0].T, c=BLUE, marker="o", s=22, label="A (+1)", zorder=3)
    ax.scatter(*X[y < 0].T, c=RED, marker="s", s=22, label="B (-1)", zorder=3)
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
        bx, by = bounds(X)
        xlim, ylim = xlim or bx, ylim or by
    xx, yy = np.meshgrid(np.linspace(*xlim, resolution), np.linspace(*ylim, resolution))
    F = np.asarray(decision(np.column_stack([xx.ravel(), yy.ravel()]))).reshape(xx.shape)
    ax.contourf(xx, yy, F > 0, levels=[-0.5, 0.5, 1.5], colors=["#fbe3e3", "#e3ecfb"], zorder=0)
    if F.min() < 0 < F.max():
        ax.contour(xx, yy, F, levels=[0.0], colors="k", linewidths=1.4, zorder=1)
    levels = [lv for lv in (-1.0, 1.0) if F.min() < lv < F.max()]
    if levels:
        ax.contour(xx, yy, F, levels=levels, colors=[RED if lv < 0 else BLUE for lv in levels],
                   linestyles="--", linewidths=1.0, zorder=1)
    mask = None
    if sv is not None:
        sv = np.asarray(sv)
        if sv.dtype == bool:
            mask = sv
        else:
            mask = np.zeros(len(y), dtype=bool)
            mask[sv.astype(int)] = True
    scatter(ax, X, y, mask)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(axis_labels[0], fontsize=8)
    ax.set_ylabel(axis_labels[1], fontsize=8)
    ax.tick_params(labelsize=7)


def draw_line(ax, w, b: float, xlim, ylim, color: str, label: str, levels=()) -> None:
    """w'x + b = 0 (solid) and w'x + b = level for each level (dashed)."""
    ax.plot(*line_xy(w, b, 0.0, xlim, ylim), color=color, lw=2, label=label)
    for level in levels:
        ax.plot(*line_xy(w, b, level, xlim, ylim), color=color, lw=1, ls="--")
