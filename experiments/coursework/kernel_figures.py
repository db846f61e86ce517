r"""Nonlinear decision surfaces of the kernel SVM (matplotlib, Agg backend).

    python -m experiments.kernel_figures [--out results/kernel_figures]

* ``exercise_5_5_surface.png``: Exercise 5.5 of seed 001 (Gaussian kernel, gamma = 1,
  C = 1): the separating surface f(x) = 0, the level sets f(x) = +1 and -1, the
  points of A (+1) and B (-1) and the support vectors circled, as in the notes' plot;
* ``svmdemo_compare.png``: a grid of such surfaces over C (rows) and gamma (columns)
  on gendata(15, 15), as the MATLAB demo's ``svmdemo_compare`` does.

f(x) = sum_{i in SV} alpha_i y_i k(x_i, x) + b (formulations.kernels.decision_function),
with alpha* and b* from `solvers.api.solve("kernel_dual", ...)`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from experiments.datasets import exercise_5_5, gendata  # noqa: E402
from formulations.kernels import Kernel, decision_function  # noqa: E402
from formulations.recovery import support_mask  # noqa: E402
from formulations.validation import check_labels  # noqa: E402
from solvers.api import solve  # noqa: E402

DEFAULT_OUT = Path("results") / "kernel_figures"


def surface_grid(X: np.ndarray, steps: int = 200, pad: float = 0.15):
    """A (steps x steps) grid over the bounding box of X, padded by `pad` of its size."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad * span, hi + pad * span
    g1, g2 = np.meshgrid(np.linspace(lo[0], hi[0], steps), np.linspace(lo[1], hi[1], steps))
    return g1, g2


def draw_surface(ax, X, y, kernel: Kernel, alpha, b: float, C: float, *, steps: int = 200,
                 title: str | None = None, legend: bool = True) -> dict:
    """Draw f = 0 (solid), f = +-1 (dashed), the two classes and circled SVs on `ax`.

    y in any two labels (mapped to -1/+1 as solve maps them). Returns the numbers
    drawn: {"n_sv": ..., "f_grid": the decision values on the grid}.
    """
    X = np.asarray(X, dtype=float)
    if X.shape[1] != 2:
        raise ValueError(f"a decision surface is drawn for 2-D data only; X has {X.shape[1]} features")
    y, _ = check_labels(y, n=len(X))
    alpha = np.asarray(alpha, dtype=float)
    sv = support_mask(alpha)
    g1, g2 = surface_grid(X, steps)
    grid = np.column_stack([g1.ravel(), g2.ravel()])
    f = decision_function(kernel, X[sv], alpha[sv] * y[sv], b, grid).reshape(g1.shape)

    limit = max(float(np.abs(f).max()), 1.0)
    ax.contourf(g1, g2, f, levels=np.linspace(-limit, limit, 21), cmap="RdBu", alpha=0.35)
    ax.contour(g1, g2, f, levels=[-1.0, 0.0, 1.0], colors=["tab:red", "black", "tab:blue"],
               linestyles=["--", "-", "--"], linewidths=[1.0, 1.8, 1.0])
    ax.scatter(*X[y > 0].T, marker="o", c="tab:blue", edgecolors="k", s=28, label="A (+1)")
    ax.scatter(*X[y < 0].T, marker="s", c="tab:red", edgecolors="k", s=28, label="B (-1)")
    ax.scatter(*X[sv].T, s=120, facecolors="none", edgecolors="k", linewidths=1.2,
               label=f"support vectors ({int(sv.sum())})")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title(title or f"{kernel.label}, C = {C:g}")
    if legend:
        # Proxy lines for the contour levels, which contour() does not label itself.
        ax.plot([], [], "k-", label="f(x) = 0")
        ax.plot([], [], "--", color="tab:blue", label="f(x) = +1")
        ax.plot([], [], "--", color="tab:red", label="f(x) = -1")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, framealpha=0.8)
    return {"n_sv": int(sv.sum()), "f_grid": f}


def _solve(X, y, kernel: Kernel, C: float, layer: str, backend: str, profile: str):
    sol = solve("kernel_dual", X, y, layer=layer, backend=backend, C=C, kernel=kernel, profile=profile)
    if sol.alpha is None or not np.isfinite(sol.b):
        raise RuntimeError(f"{layer}/{backend} returned no solution for {kernel.label}, C={C:g}: "
                           f"{sol.status} {sol.message}")
    return sol


def exercise_5_5_figure(path, *, layer: str = "cvxpy", backend: str = "clarabel", profile: str = "high") -> dict:
    """Exercise 5.5's separating surface (Gaussian, gamma = 1, C = 1) saved to `path`."""
    ds = exercise_5_5()
    kernel, C = Kernel("rbf", gamma=1.0), 1.0
    sol = _solve(ds.X, ds.y, kernel, C, layer, backend, profile)
    fig, ax = plt.subplots(figsize=(8.0, 5.5))
    drawn = draw_surface(ax, ds.X, ds.y, kernel, sol.alpha, sol.b, C,
                         title=f"Exercise 5.5: Gaussian kernel (gamma = 1), C = 1\n"
                               f"{layer}/{backend}: b* = {sol.b:.4f}, {sol.status}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return {"path": Path(path), "status": sol.status, "b": sol.b, "n_sv": drawn["n_sv"]}


def compare_figure(path, X, y, Cs=(0.1, 1.0, 10.0), gammas=(0.5, 1.0, 5.0), *, layer: str = "cvxpy",
                   backend: str = "clarabel", profile: str = "default", dataset: str = "") -> list[dict]:
    """A grid of Gaussian-kernel surfaces, C down the rows and gamma across the columns."""
    fig, axes = plt.subplots(len(Cs), len(gammas), figsize=(3.6 * len(gammas), 3.3 * len(Cs)), squeeze=False)
    cells = []
    for r, C in enumerate(Cs):
        for c, gamma in enumerate(gammas):
            kernel = Kernel("rbf", gamma=gamma)
            sol = _solve(X, y, kernel, C, layer, backend, profile)
            drawn = draw_surface(axes[r, c], X, y, kernel, sol.alpha, sol.b, C, steps=120, legend=False)
            # the title names the support vectors draw_surface counted
            axes[r, c].set_title(f"C = {C:g}, gamma = {gamma:g}\n{sol.status}, {drawn['n_sv']} SVs")
            cells.append({"C": C, "gamma": gamma, "status": sol.status, "n_sv": drawn["n_sv"],
                          "train_accuracy": sol.checks.get("train_accuracy")})
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles += [plt.Line2D([], [], color="k"), plt.Line2D([], [], color="tab:blue", ls="--"),
                plt.Line2D([], [], color="tab:red", ls="--")]
    labels = ["A (+1)", "B (-1)", "support vectors", "f(x) = 0", "f(x) = +1", "f(x) = -1"]
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=8)
    fig.suptitle(f"Gaussian-kernel SVM over C (rows) and gamma (columns), svmdemo_compare\n"
                 f"{dataset} [{layer}/{backend}]")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return cells


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.kernel_figures", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--layer", default="cvxpy")
    parser.add_argument("--backend", default="clarabel")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    info = exercise_5_5_figure(args.out / "exercise_5_5_surface.png", layer=args.layer, backend=args.backend)
    print(f"{info['path']}: {info['status']}, b* = {info['b']:.6f}, {info['n_sv']} support vectors")
    ds = gendata(15, 15)
    cells = compare_figure(args.out / "svmdemo_compare.png", ds.X, ds.y, layer=args.layer,
                           backend=args.backend, dataset=ds.name)
    for cell in cells:
        print(cell)


if __name__ == "__main__":
    main()
