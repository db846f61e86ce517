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
# # 6. The SVM family: nu-SVC, the one-class SVM, epsilon-SVR and nu-SVR
#
# The C-SVM prices margin violations by $C$. Its relatives change what is priced, and each is its own lesson in
# duality (docs/family.md has every primal and dual):
#
# - **nu-SVC** fixes no margin: $\min \tfrac12\|w\|^2 - \nu\rho + \tfrac1l\sum_i\xi_i$ s.t.
#   $y_i f(x_i) \ge \rho - \xi_i$. Its dual has $\sum_i\alpha_i = \nu$ and $0 \le \alpha_i \le 1/l$, so
#   $\nu$ bounds the fraction of margin errors from above and the fraction of support vectors from below.
# - the **one-class SVM** separates the data from the origin: its dual is a QP over the simplex
#   $\sum_i \alpha_i = 1$ cut by $\alpha_i \le 1/(\nu l)$, and the offset $\rho$ is that row's multiplier.
# - **epsilon-SVR** fits a tube of half-width $\varepsilon$; each point has two multipliers, one per side of the
#   tube, and $\alpha_i\alpha_i^* = 0$ at the optimum.
# - **nu-SVR** lets the tube's width be a variable priced by $C\nu$: it is the multiplier of
#   $\sum_i(\alpha_i + \alpha_i^*) = C\nu$.
#
# Every row below is verified by the project from its point: the duality gap and the KKT conditions recomputed,
# and the point compared with the optimum proved from its active set.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.coursework.family import duality_rows, nu_rows
from experiments.family_peers import CASES, compare, load
from formulations.kernels import Kernel, decision_function
from solvers.family import solve

FIGURES = Path("figures")
FIGURES.mkdir(exist_ok=True)

# %% [markdown]
# ## Primal and dual, in both layers
#
# With the linear kernel the primal is its duals' own: $P^* = D^*$, and $b$, $\rho$, $\varepsilon$ read from the
# primal's variables equal the multipliers recovered from the duals.

# %%
table = duality_rows([("pyomo", "clarabel"), ("cvxpy", "clarabel")], "high")
assert (table.status == "optimal").all()
assert np.all(np.abs(table.P - table.D) <= 1e-6 * np.abs(table.P))
table[["member", "formulation", "layer", "status", "P", "D", "rel_gap", "b", "rho", "epsilon", "above", "below"]]

# %% [markdown]
# ## nu bounds the fractions
#
# Over $\nu$, at each proved optimum: margin errors (outliers) $\le \nu \le$ support vectors.

# %%
nu = nu_rows("cvxpy", "clarabel", "high")
assert nu.holds.all() and (nu.above <= nu.nu).all() and (nu.nu <= nu.below).all()
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
for ax, (member, part) in zip(axes, nu.groupby("member", sort=False)):
    ax.plot(part.nu, part.above, "o-", label="margin errors" if member == "nu_svc" else "outliers")
    ax.plot(part.nu, part.below, "s-", label="support vectors")
    ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="nu")
    ax.set(xlabel="nu", ylabel="fraction of the points", title=member)
    ax.legend(fontsize=8)
fig.savefig(FIGURES / "06_nu_property.png", dpi=110)
plt.show()

# %% [markdown]
# ## The one-class SVM: rho is a multiplier
#
# Two wine features, rbf kernel. The solver's multiplier of $\sum_i \alpha_i = 1$ is $-\rho$ (the derivative of
# the dual's optimum with respect to that row's right-hand side), and $f(x) = \sum_i \alpha_i k(x_i, x) - \rho$ is
# $\ge 0$ on the region the model keeps.

# %%
X2 = load("wine", 130)[0][:, :2]
kernel = Kernel("rbf", gamma=0.5)
oc = solve("one_class_kernel_dual", X2, None, layer="cvxpy", backend="proxqp", nu=0.1, kernel=kernel, profile="high")
assert oc.status == "optimal"
rho = oc.extras["rho"]
print(f"rho = {rho:.6f}, the solver's multiplier of sum alpha = 1: {oc.extras['solver_total_multiplier']:.6f}")
print(f"outliers {oc.extras['fraction_outliers']:.3f} <= nu = 0.1 <= support vectors {oc.extras['fraction_sv']:.3f}")
assert abs(oc.extras["solver_total_multiplier"] + rho) <= 1e-5 * rho
g1, g2 = np.meshgrid(np.linspace(-3, 3.5, 120), np.linspace(-3, 5, 120))
grid = np.column_stack([g1.ravel(), g2.ravel()])
F = decision_function(kernel, X2, oc.extras["coef"], oc.b, grid).reshape(g1.shape)
fig, ax = plt.subplots(figsize=(5.5, 5), layout="constrained")
ax.contourf(g1, g2, F, levels=[F.min(), 0, F.max()], colors=["#f4d6d6", "#d6e4f4"])
ax.contour(g1, g2, F, levels=[0], colors="k")
sv = oc.alpha > 1e-6 / len(X2)
ax.scatter(*X2[~sv].T, s=12, c="tab:blue", label="alpha = 0")
ax.scatter(*X2[sv].T, s=30, facecolors="none", edgecolors="tab:red", label="support vectors (alpha > 0)")
ax.set(xlabel="alcohol (standardized)", ylabel="malic acid (standardized)", title="one-class SVM, nu = 0.1: f(x) = 0")
ax.legend(fontsize=8, loc="lower right")
fig.savefig(FIGURES / "06_one_class_boundary.png", dpi=110)
plt.show()

# %% [markdown]
# ## The tube of epsilon-SVR and nu-SVR on one feature
#
# Diabetes progression against body-mass index. Points strictly inside the tube have no multiplier, points outside
# it have $|\alpha_i - \alpha_i^*| = C$ (epsilon-SVR) or $C/l$ (nu-SVR), and no point has both $\alpha_i$ and
# $\alpha_i^*$ positive. nu-SVR finds its own $\varepsilon$.

# %%
Xd, yd = load("diabetes")
bmi = Xd[:, [2]]
kernel = Kernel("rbf", gamma=0.5)
fits = {"eps_svr": solve("eps_svr_kernel_dual", bmi, yd, layer="cvxpy", backend="proxqp", C=10.0, epsilon=40.0,
                         kernel=kernel, profile="high"),
        "nu_svr": solve("nu_svr_kernel_dual", bmi, yd, layer="cvxpy", backend="proxqp", C=10.0 * len(yd), nu=0.5,
                        kernel=kernel, profile="high")}
line = np.linspace(bmi.min(), bmi.max(), 300)[:, None]
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained", sharey=True)
for ax, (name, sol) in zip(axes, fits.items()):
    assert sol.status == "optimal"
    assert np.max(sol.alpha * sol.extras["alpha_star"]) <= 1e-10 * max(sol.alpha.max(), 1.0) ** 2
    eps = sol.extras["epsilon"]
    f = decision_function(kernel, bmi, sol.extras["coef"], sol.b, line)
    sv = np.abs(sol.extras["coef"]) > 1e-6 * np.abs(sol.extras["coef"]).max()
    ax.scatter(bmi[~sv, 0], yd[~sv], s=8, c="tab:blue", label="inside the tube (no multiplier)")
    ax.scatter(bmi[sv, 0], yd[sv], s=8, c="tab:red", label="support vectors")
    ax.plot(line[:, 0], f, "k", label="f(x)")
    ax.plot(line[:, 0], f + eps, "k--", lw=0.8, label=f"f(x) +- eps, eps = {eps:.3g}")
    ax.plot(line[:, 0], f - eps, "k--", lw=0.8)
    ax.set(xlabel="body-mass index (standardized)", ylabel="disease progression", title=name)
    ax.legend(fontsize=8)
    print(f"{name}: eps = {eps:.4g}, outside the tube {sol.extras['fraction_outside_tube']:.3f}, "
          f"support vectors {sol.extras['fraction_sv']:.3f}")
assert fits["nu_svr"].extras["fraction_outside_tube"] <= 0.5 <= fits["nu_svr"].extras["fraction_sv"]
fig.savefig(FIGURES / "06_svr_tube.png", dpi=110)
plt.show()

# %% [markdown]
# ## Against scikit-learn
#
# LIBSVM scales two of these duals: NuSVC solves with $0 \le \alpha_i \le 1$, $\sum\alpha_i = \nu l$ and divides
# its decision function by $\rho$; OneClassSVM's $\alpha$, $\rho$ and decision values are $\nu l$ times these;
# NuSVR's $C$ is this $C/l$. With those maps the optima agree (80 points each, scikit-learn at tol=1e-10):

# %%
rows = pd.DataFrame([compare(case, 80, backend="proxqp") for case in CASES])
assert (rows.decision_diff <= 2e-5).all() and (rows.objective_diff <= 1e-6).all()
rows[["case", "status", "dual_objective", "sklearn_dual_objective", "objective_diff", "decision_diff"]]
