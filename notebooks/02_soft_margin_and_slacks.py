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
# # 2. The soft margin and its slacks
#
# The lecture notes (G. Mastroeni, M. Passacantando, *Support Vector Machines for supervised
# classification problems*, ch. 5, University of Pisa), Exercise 5.4. When A and B are not linearly
# separable the system $y^i(w^\top x^i + b) \geq 1$ has no solution; slack variables
# $\xi_i \geq 0$ relax it, and $C$ prices them:
#
# $$\min_{w,b,\xi}\ \frac{1}{2}\|w\|^2 + C\sum_i \xi_i \quad\mathrm{s.t.}\quad
# 1 - y^i(w^\top x^i + b) \leq \xi_i,\ \xi_i \geq 0. \qquad (8)$$
#
# Its dual (11) is the hard-margin dual with the box $0 \leq \lambda_i \leq C$. The KKT
# conditions say: $\lambda_i < C \Rightarrow \xi_i = 0$, and $\xi_i > 0 \Rightarrow
# \lambda_i = C$. So the points with a nonzero slack are the ones inside the margin
# ($0 < \xi_i \leq 1$) or misclassified ($\xi_i > 1$), and all of them sit at the bound.
#
# Exercise 5.4 asks for the hyperplane with $C = 10$ and the vector $\xi$ of the
# errors. The notes print the data but no answer; we compare the primal, the dual and
# scikit-learn's `SVC` (through the project's `SVMClassifier`, which has the same
# fitted attributes).

# %%
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from sklearn.svm import SVC

from experiments.coursework.plotting import plot_classifier
from experiments.datasets import exercise_5_4
from experiments.estimator import SVMClassifier

FIGURES = Path("figures")
FIGURES.mkdir(exist_ok=True)
ds = exercise_5_4()
C = 10.0
print(ds.description)

# %%
primal = SVMClassifier(formulation="soft_primal", kernel="linear", C=C, layer="pyomo", backend="highs", profile="high").fit(ds.X, ds.y)
dual = SVMClassifier(formulation="dual", kernel="linear", C=C, layer="cvxpy", backend="clarabel", profile="high").fit(ds.X, ds.y)
svc = SVC(kernel="linear", C=C, tol=1e-10).fit(ds.X, ds.y)
pd.DataFrame({
    "w1": [m.coef_[0, 0] for m in (primal, dual, svc)],
    "w2": [m.coef_[0, 1] for m in (primal, dual, svc)],
    "b": [m.intercept_[0] for m in (primal, dual, svc)],
    "n_SV": [m.support_.size for m in (primal, dual, svc)],
}, index=["primal (8), pyomo/highs", "dual (11), cvxpy/clarabel", "sklearn SVC"])

# %% [markdown]
# ## The slacks $\xi_i = \max(0,\ 1 - y^i f(x^i))$

# %%
xi = {name: np.maximum(0.0, 1.0 - ds.y * m.decision_function(ds.X))
      for name, m in (("primal", primal), ("dual", dual), ("SVC", svc))}
lam = np.zeros(ds.n)
lam[dual.support_] = np.abs(dual.dual_coef_[0])
slack_points = np.flatnonzero(xi["dual"] > 1e-3)
table = pd.DataFrame({
    "x": [tuple(ds.X[i]) for i in slack_points],
    "y": ds.y[slack_points],
    **{f"xi ({name})": v[slack_points] for name, v in xi.items()},
    "lambda (dual)": lam[slack_points],
    "where": ["misclassified" if xi["dual"][i] > 1 else "inside the margin" for i in slack_points],
}, index=slack_points + 1)
assert np.all(lam[slack_points] >= C * (1 - 1e-5))  # xi_i > 0  =>  lambda_i = C
assert max(np.max(np.abs(xi["dual"] - v)) for v in xi.values()) < 1e-4
misclassified = [i + 1 for i in slack_points if xi["dual"][i] > 1]
inside = [i + 1 for i in slack_points if xi["dual"][i] <= 1]
print(f"{len(slack_points)} points with xi_i > 0: misclassified (xi > 1) rows {misclassified}, "
      f"inside the margin (0 < xi <= 1) rows {inside}; the other {ds.n - len(slack_points)} have xi_i = 0")
assert ds.X[misclassified[0] - 1].tolist() == [6.0, 8.0] and len(misclassified) == 1 and len(inside) == 1
table

# %% [markdown]
# Two points have a nonzero slack, as the table shows. The point $(6, 8)$ of B lies among
# the points of A: it is the misclassified one ($\xi_i > 1$). The other lies inside the margin,
# on the right side of the line ($0 < \xi_i < 1$). Every other point has $\xi_i = 0$ (up to
# solver noise), and both slack points have $\lambda_i = C$, as the KKT conditions require.

# %%
fig = plt.figure(figsize=(5.2, 5), layout="constrained")
ax = fig.subplots()
plot_classifier(ax, ds.X, ds.y, dual.decision_function, sv=dual.support_, xlim=(0, 10), ylim=(0, 10),
                title=f"Exercise 5.4, C = {C:g}: w* = {dual.coef_[0].round(4)}, b* = {dual.intercept_[0]:.4f}")
for i in slack_points:
    ax.annotate(f"xi={xi['dual'][i]:.2f}", ds.X[i], textcoords="offset points", xytext=(5, 5), fontsize=8)
fig.savefig(FIGURES / "02_exercise_5_4_slacks.png", dpi=100)
plt.show()

# %% [markdown]
# ## What C does
#
# A small C buys a wide margin with many violations; a large C narrows it. On this
# data the set of support vectors stops changing from about C = 1 on: three free
# support vectors then pin $(w^*, b^*)$ and the solution no longer moves.

# %%
Cs = np.logspace(-3, 2, 11)
path = []
for c in Cs:
    m = SVMClassifier(formulation="soft_primal", kernel="linear", C=c, profile="high").fit(ds.X, ds.y)
    s = np.maximum(0.0, 1.0 - ds.y * m.decision_function(ds.X))
    path.append({"C": c, "margin 2/||w||": 2 / np.linalg.norm(m.coef_), "n_SV": m.support_.size,
                 "n with xi > 0": int(np.sum(s > 1e-3)), "sum xi": s.sum()})
path = pd.DataFrame(path)
assert np.all(np.diff(path["margin 2/||w||"]) <= 1e-6)  # the margin never widens as C grows
fig = plt.figure(figsize=(9, 3.4), layout="constrained")
a1, a2 = fig.subplots(1, 2)
a1.loglog(path["C"], path["margin 2/||w||"], marker="o")
a1.set(xlabel="C", ylabel="2/||w*||", title="margin width 2/||w*||")
a2.semilogx(path["C"], path["n_SV"], marker="o", label="support vectors")
a2.semilogx(path["C"], path["n with xi > 0"], marker="s", label="points with xi > 0")
a2.set(xlabel="C", ylabel="number of points", title="support vectors and slack points")
a2.legend()
fig.savefig(FIGURES / "02_effect_of_C.png", dpi=100)
plt.show()
path
