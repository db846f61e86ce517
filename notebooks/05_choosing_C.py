# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5. Choosing C (and gamma)
#
# The machine-learning slides (F. S. Bao, CS 474/574, Iowa State): "Given a training set, how to find the optimal
# C? Grid search using cross-validation." C trades the margin width $2/\|w\|$ against
# the slacks; gamma sets how far a Gaussian kernel reaches. Neither can be read off the
# training error (a large C or gamma can always fit the training points), so we score
# each candidate on data it was not trained on: k-fold cross-validation.
#
# The project's `SVMClassifier` is a scikit-learn estimator, so `GridSearchCV`,
# `Pipeline` and `StratifiedKFold` work with it as they do with `SVC`, while the
# optimization problem underneath is the project's kernel dual, solved and verified.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Image, display
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from experiments.coursework.choosing_C import choose_C
from experiments.datasets import nonlinear
from experiments.estimator import SVMClassifier

FIGURES = Path("figures")
FIGURES.mkdir(exist_ok=True)

# %% [markdown]
# ## A grid search by hand: standardize, then a Gaussian-kernel SVM

# %%
ds = nonlinear(90, seed=0, noise=0.2)
X_tr, X_te, y_tr, y_te = train_test_split(ds.X, ds.y, test_size=0.25, stratify=ds.y, random_state=0)
pipe = make_pipeline(StandardScaler(), SVMClassifier(kernel="rbf"))
grid = {"svmclassifier__C": [0.1, 1.0, 10.0], "svmclassifier__gamma": [0.1, 1.0, 10.0]}
search = GridSearchCV(pipe, grid, cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(X_tr, y_tr)
print("chosen:", search.best_params_, f"cv accuracy {search.best_score_:.3f}",
      f"held-out accuracy {search.score(X_te, y_te):.3f}")
scores = pd.DataFrame(search.cv_results_).pivot(index="param_svmclassifier__gamma",
                                                columns="param_svmclassifier__C", values="mean_test_score")
assert search.best_score_ == scores.values.max()
scores.round(3)

# %%
fig = plt.figure(figsize=(5, 3.8), layout="constrained")
ax = fig.subplots()
im = ax.imshow(scores.values, origin="lower", cmap="viridis")
ax.set_xticks(range(scores.shape[1]), [f"{c:g}" for c in scores.columns])
ax.set_yticks(range(scores.shape[0]), [f"{g:g}" for g in scores.index])
ax.set(xlabel="C", ylabel="gamma", title="mean 3-fold validation accuracy")
fig.colorbar(im, ax=ax)
fig.savefig(FIGURES / "05_grid_search_heatmap.png", dpi=100)
plt.show()

# %% [markdown]
# ## The runner suite `choose-C`, on a small grid
#
# `experiments.coursework.choosing_C.choose_C` does the same for the linear and the Gaussian SVM,
# and adds the regularization path of the linear soft margin on Exercise 5.4: $w^*$,
# $b^*$, the number of support vectors and the margin against C. (The runner suite
# uses a finer grid.)

# %%
section = choose_C(FIGURES, dataset="nonlinear", dataset_params={"n": 80, "seed": 0, "noise": 0.2},
                              C_grid=(0.1, 10.0), gamma_grid=(0.3, 3.0), path_C=tuple(np.logspace(-3, 2, 6)),
                              k=3)
for figure in section.figures:  # the cross-validation curves and the regularization path
    display(Image(filename=str(figure)))
section.table

# %%
path = pd.read_csv(section.tables["choose_C_path"])
assert np.all(np.diff(path["norm_w"]) >= -1e-6)  # ||w*|| never decreases as C grows
path[["C", "w1", "w2", "b", "n_sv", "margin", "sum_xi"]].round(4)
