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
# # 1. The hard-margin SVM and its dual
#
# The lecture notes (G. Mastroeni, M. Passacantando, *Support Vector Machines for supervised
# classification problems*, ch. 5, University of Pisa), Examples 5.1 and 5.2. For two linearly
# separable sets A (label +1) and B (label -1) the maximum-margin hyperplane solves
#
# $$\min_{w,b}\ \frac{1}{2}\|w\|^2 \quad\mathrm{s.t.}\quad y^i (w^\top x^i + b) \geq 1,\ i = 1,\dots,\ell \qquad (4)$$
#
# and its Lagrangian dual is
#
# $$\max_{\lambda \geq 0}\ -\frac{1}{2} \sum_{i,j} y^i y^j (x^i)^\top x^j \lambda_i \lambda_j + \sum_i \lambda_i
# \quad\mathrm{s.t.}\quad \sum_i \lambda_i y^i = 0. \qquad (6)$$
#
# The notes publish $w^* = (-0.9229, 0.7627)$, $b^* = 1.1976$. Here we solve both
# problems with two modelling layers (Pyomo, cvxpy) and two solvers, recover $w^*$ and
# $b^*$ from the dual, and check strong duality and the KKT conditions numerically.
# Everything comes from the project: `solvers.api.solve`, `experiments.datasets`,
# `experiments.coursework.plotting.plot_classifier`.

# %%
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

from experiments.coursework.plotting import plot_classifier
from experiments.coursework.seeds import PUBLISHED
from experiments.datasets import example_5_1
from solvers.api import solve

FIGURES = Path("figures")
FIGURES.mkdir(exist_ok=True)
ds = example_5_1()
ds

# %% [markdown]
# ## The primal (4), two layers, two solvers

# %%
rows = []
for layer, backend in [("pyomo", "highs"), ("cvxpy", "clarabel")]:
    sol = solve("hard_primal", ds.X, ds.y, layer=layer, backend=backend, profile="high")
    rows.append({"layer": layer, "backend": backend, "status": sol.status, "w1": sol.w[0], "w2": sol.w[1],
                 "b": sol.b, "objective 1/2||w||^2": sol.objective, "n_SV": sol.checks["n_sv"]})
    w_pub = np.array(PUBLISHED["example_5_1_w"])
    assert np.max(np.abs(sol.w - w_pub)) <= 5e-5 and abs(sol.b - PUBLISHED["example_5_1_b"]) <= 5e-5
primal = sol
pd.DataFrame(rows)

# %% [markdown]
# ## The dual (6): $w^* = \sum_i \lambda_i^* y^i x^i$, and $b^* = 1/y^i - (w^*)^\top x^i$ for any $\lambda_i^* > 0$
#
# A multiplier $\lambda_i > 0$ marks a **support vector**. Only three of the sixty
# points have one; $w^*$ is a combination of those three points alone.

# %%
dual = solve("dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=np.inf, profile="high")
lam = dual.alpha
sv = np.flatnonzero(lam > 1e-6 * lam.max())
w_from_lambda = (lam[sv] * ds.y[sv]) @ ds.X[sv]
b_each_sv = 1 / ds.y[sv] - ds.X[sv] @ w_from_lambda
print("support vectors (1-based rows):", sv + 1)
print("lambda* on them:", lam[sv].round(5))
print("w* from the dual:", w_from_lambda.round(4), " b* from each SV:", b_each_sv.round(4))
assert len(sv) == 3
np.testing.assert_allclose(w_from_lambda, PUBLISHED["example_5_1_w"], atol=5e-5)
np.testing.assert_allclose(b_each_sv, PUBLISHED["example_5_1_b"], atol=5e-5)

# %% [markdown]
# ## Strong duality and KKT, recomputed by the project from the returned points
#
# The primal optimum $\frac{1}{2}\|w^*\|^2$ equals the dual optimum
# $\sum_i\lambda_i - \frac{1}{2}\|w^*\|^2$, i.e. $\|w^*\|^2 = \sum_i \lambda_i^*$; the
# margin is $2/\|w^*\|$.

# %%
checks = pd.DataFrame({"primal (4)": primal.checks, "dual (6)": dual.checks}).loc[
    ["primal_objective", "dual_objective", "duality_gap", "kkt_stationarity", "kkt_balance",
     "kkt_primal_feasibility", "kkt_complementarity", "n_sv", "margin", "verdict"]]
assert abs(dual.checks["duality_gap"]) < 1e-6 and dual.checks["verdict"] == "verified"
print("||w*||^2 =", float(w_from_lambda @ w_from_lambda), " sum lambda* =", float(lam.sum()))
checks

# %% [markdown]
# ## The notes' plot: separating line and the two margin lines

# %%
fig = plt.figure(figsize=(9, 4.4), layout="constrained")
for ax, sol, name in zip(fig.subplots(1, 2), (primal, dual), ("primal (4)", "dual (6)")):
    plot_classifier(ax, ds.X, ds.y, lambda Z, s=sol: Z @ s.w + s.b,
                    sv=np.flatnonzero(sol.alpha > 1e-6 * sol.alpha.max()), xlim=(0, 10), ylim=(0, 10),
                    title=f"Example 5.{1 if name.startswith('primal') else 2}: {name}\n"
                          f"w* = {np.round(sol.w, 4)}, b* = {sol.b:.4f}")
fig.savefig(FIGURES / "01_example_5_1_primal_dual.png", dpi=100)
plt.show()
