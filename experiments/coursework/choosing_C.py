"""002's advice "Grid search using cross-validation": k-fold grid search over C (and gamma for
the Gaussian kernel), the validation-accuracy heat map, the chosen values, and the
regularization path (w*, b*, #SV, margin vs C)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split

from experiments.coursework.fitting import DEFAULT_BACKEND, DEFAULT_LAYER, train_numbers
from experiments.coursework.section import Section, md_table, output_dir, save_figure, write_section
from experiments.datasets import load_dataset
from experiments.estimator import SVMClassifier


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
    out = output_dir(out_dir)
    params = {"n": 120, "seed": seed, "noise": 0.2} if dataset_params is None and dataset == "nonlinear" \
        else dict(dataset_params or {})
    ds = load_dataset(dataset, **params)
    base = dict(layer=layer, backend=backend, profile=profile)
    chosen, cv_tables = grid_search(ds, C_grid, gamma_grid, k=k, test_size=test_size, seed=seed, n_jobs=n_jobs, **base)
    heat_path = save_figure(validation_figure(chosen, cv_tables, k, ds.name), out / "choose_C_cv.png")
    pds = load_dataset(path_dataset)
    path = regularization_path(pds, path_C, **base)
    path_fig = save_figure(path_figure(path, f"{pds.name} ({layer}/{backend})"), out / "choose_C_path.png")

    tables = {"choose_C_chosen": chosen, "choose_C_path": path,
              **{f"choose_C_cv_{name}": table for name, table in cv_tables.items()}}
    files = {}
    for name, table in tables.items():
        files[name] = out / f"{name}.csv"
        table.to_csv(files[name], index=False)
    md = _markdown(ds, pds, chosen, path, heat_path, path_fig, C_grid=C_grid, gamma_grid=gamma_grid, k=k,
                   test_size=test_size, seed=seed, layer=layer, backend=backend,
                   path_dataset=path_dataset)
    sec = Section("choose-C", "Choosing C (and gamma) by cross-validated grid search", md, [heat_path, path_fig],
                  files, chosen)
    return write_section(out, "choose_C", sec)


def grid_search(ds, C_grid, gamma_grid, *, k: int, test_size: float, seed: int, n_jobs, **base
                ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The chosen (kernel, C, gamma) with their cross-validation and held-out accuracies, and the
    cross-validation table of each search (linear over C, rbf over C x gamma)."""
    X_tr, X_te, y_tr, y_te = train_test_split(ds.X, ds.y, test_size=test_size, stratify=ds.y, random_state=seed)
    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    searches = {
        "linear": GridSearchCV(SVMClassifier(kernel="linear", **base), {"C": list(C_grid)}, cv=cv, n_jobs=n_jobs),
        "rbf": GridSearchCV(SVMClassifier(kernel="rbf", **base), {"C": list(C_grid), "gamma": list(gamma_grid)},
                            cv=cv, n_jobs=n_jobs),
    }
    chosen, cv_tables = [], {}
    for name, search in searches.items():
        with warnings.catch_warnings():
            # A fold's fit that the checks did not verify (a residual of 1e-6 to 1e-5 at profile high) still scores
            # its fold as it should; its warning, 10 of them from inside GridSearchCV, told a student nothing. The
            # chosen setting's refit says whether it is verified (column refit_verified).
            warnings.simplefilter("ignore", ConvergenceWarning)
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
            "refit_verified": all(sol.status == "optimal" for sol in search.best_estimator_.solutions_),
        })
    return pd.DataFrame(chosen), cv_tables


def regularization_path(pds, path_C, **base) -> pd.DataFrame:
    """The linear soft-margin primal (8) on ``pds`` for each C: w*, b*, ||w*||, #SV, margin, slacks."""
    rows = []
    for C in path_C:
        est = SVMClassifier(formulation="soft_primal", kernel="linear", C=float(C), **base).fit(pds.X, pds.y)
        w = est.coef_[0]
        norm_w = float(np.linalg.norm(w))
        f = est.decision_function(pds.X)
        rows.append({
            "C": float(C), **{f"w{i + 1}": float(v) for i, v in enumerate(w)}, "b": float(est.intercept_[0]),
            "norm_w": norm_w, "n_sv": int(est.support_.size),
            "n_bound_sv": est.solution_.checks.get("n_bound_sv"),
            "margin": 2.0 / norm_w if norm_w > 0 else math.inf,
            **train_numbers(est, pds.y, f),
            "status": est.solution_.status,
        })
    return pd.DataFrame(rows)


def validation_figure(chosen: pd.DataFrame, cv_tables: dict, k: int, dataset_name: str) -> Figure:
    """Validation accuracy: linear against C (a curve), Gaussian over C x gamma (a heat map)."""
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_lin, ax_rbf = fig.subplots(1, 2)
    lin = cv_tables["linear"]
    ax_lin.errorbar(lin["C"].astype(float), lin["mean_test_score"], yerr=lin["std_test_score"], marker="o",
                    capsize=3)
    ax_lin.set_xscale("log")
    ax_lin.set_xlabel("C")
    ax_lin.set_ylabel(f"mean {k}-fold validation accuracy")
    ax_lin.axvline(chosen.loc[0, "C"], color="k", ls=":", label=f"chosen C = {chosen.loc[0, 'C']:g}")
    ax_lin.legend(fontsize=8)
    ax_lin.set_title(f"linear SVM on {dataset_name}", fontsize=9)
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
    bi = list(heat.index).index(float(chosen.loc[1, "gamma"]))
    bj = list(heat.columns).index(float(chosen.loc[1, "C"]))
    ax_rbf.scatter([bj], [bi], s=300, facecolors="none", edgecolors="r", linewidths=2)
    fig.colorbar(im, ax=ax_rbf, label=f"mean {k}-fold validation accuracy")
    ax_rbf.set_title(f"Gaussian kernel: chosen C = {chosen.loc[1, 'C']:g}, "
                     f"gamma = {chosen.loc[1, 'gamma']:g}", fontsize=9)
    return fig


def path_figure(path: pd.DataFrame, where: str) -> Figure:
    """The regularization path: w* and b*, the support vectors, the margin, slacks and accuracy against C."""
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
    fig.suptitle(f"Regularization path of the linear soft-margin SVM on {where}",
                 fontsize=10)
    return fig


def _markdown(ds, pds, chosen, path, heat_path, path_fig, *, C_grid, gamma_grid, k, test_size, seed, layer,
              backend, path_dataset) -> str:
    """The section's prose around the chosen values, the path table and the two figures."""
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
        md_table(chosen),
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
        md_table(path[["C", "b", "norm_w", "margin", "n_sv", "n_bound_sv", "sum_xi", "train_acc",
                       "status"]]),
        "",
        f"![regularization path]({path_fig.name})",
    ])
    return md
