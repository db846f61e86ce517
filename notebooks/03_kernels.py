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
# # 3. Kernels
#
# The lecture notes (G. Mastroeni, M. Passacantando, *Support Vector Machines*, ch. 5,
# University of Pisa: Exercise 5.5), the notes on linear SVM, duality and kernels (feature
# maps, Mercer) and A. Vedaldi's MATLAB SVM demo notes.
#
# A map $\phi$ into a feature space makes the sets separable there; the dual only needs
# inner products $k(x, x') = \phi(x)^\top\phi(x')$, so the kernel replaces $\phi$:
#
# $$\max_{0\leq\lambda\leq C,\ \sum\lambda_i y^i = 0}\ \sum_i\lambda_i - \frac{1}{2}\sum_{i,j} y^i y^j k(x^i, x^j)\lambda_i\lambda_j,
# \qquad f(x) = \sum_i \lambda_i^* y^i k(x^i, x) + b^*.$$
#
# 1. A kernel is an inner product: the degree-2 polynomial kernel equals the explicit map of the kernel notes.
# 2. Mercer's condition: the Gram matrix must be positive semidefinite.
# 3. Exercise 5.5: the Gaussian kernel with C = 1, gamma = 1, against scikit-learn.
# 4. The demo's comparison of kernels on `gendata(15, 15)`.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Image, display
from sklearn.svm import SVC

from experiments.coursework import demos
from experiments.coursework.plotting import plot_classifier
from experiments.datasets import exercise_5_5, gendata
from experiments.estimator import SVMClassifier
from formulations.errors import IndefiniteKernelError
from formulations.kernels import Kernel, gram, mercer_check, poly2_feature_map_notes

FIGURES = Path("figures")
FIGURES.mkdir(exist_ok=True)

# %% [markdown]
# ## 1. $(1 + \gamma x^\top x')^2 = \phi_2(x)^\top \phi_2(x')$

# %%
X = np.random.default_rng(0).normal(size=(6, 3))
K_poly = gram(Kernel("poly", gamma=0.5, degree=2, coef0=1.0), X)
Phi = poly2_feature_map_notes(X, gamma=0.5)
print("feature space dimension:", Phi.shape[1], " max |K - Phi Phi'| =", np.abs(K_poly - Phi @ Phi.T).max())
assert np.allclose(K_poly, Phi @ Phi.T)

# %% [markdown]
# ## 2. Mercer's condition
#
# The Gaussian kernel always passes; the sigmoid kernel $\tanh(\beta x^\top x' + \gamma)$
# usually does not, and then the dual is not a convex QP: the project refuses it.

# %%
ds = exercise_5_5()
print(mercer_check(gram(Kernel("rbf", gamma=1.0), ds.X), "rbf"))
try:
    mercer_check(gram(Kernel("sigmoid", gamma=2.0, coef0=0.0), ds.X), "sigmoid")
except IndefiniteKernelError as exc:
    print("refused:", str(exc)[:160], "...")

# %% [markdown]
# ## 3. Exercise 5.5: Gaussian kernel, C = 1, gamma = 1
#
# The notes plot the surface $f(x) = 0$ on $[-2, 2]^2$. We solve the kernel dual in
# both layers and compare with scikit-learn's `SVC` (LIBSVM).

# %%
fits = {
    "cvxpy/clarabel": SVMClassifier(kernel="rbf", gamma=1.0, C=1.0, layer="cvxpy", backend="clarabel",
                                    profile="high").fit(ds.X, ds.y),
    "pyomo/highs": SVMClassifier(kernel="rbf", gamma=1.0, C=1.0, layer="pyomo", backend="highs",
                                 profile="high").fit(ds.X, ds.y),
}
svc = SVC(kernel="rbf", gamma=1.0, C=1.0, tol=1e-10).fit(ds.X, ds.y)
g = np.linspace(-2, 2, 161)
xx, yy = np.meshgrid(g, g)
grid = np.column_stack([xx.ravel(), yy.ravel()])
f_svc = svc.decision_function(grid)
for name, m in fits.items():
    diff = np.abs(m.decision_function(grid) - f_svc).max()
    print(f"{name}: b* = {m.intercept_[0]:.5f}, {m.support_.size} SV, max |f - f_SVC| on the grid = {diff:.1e}")
    assert diff < 1e-4 and m.score(ds.X, ds.y) == 1.0
print(f"SVC: b* = {svc.intercept_[0]:.5f}, {svc.support_.size} SV")

# %%
m = fits["cvxpy/clarabel"]
fig = plt.figure(figsize=(5.2, 5), layout="constrained")
ax = fig.subplots()
plot_classifier(ax, ds.X, ds.y, m.decision_function, sv=m.support_, xlim=(-2, 2), ylim=(-2, 2),
                           title="Exercise 5.5: f(x) = 0 (black), f = +-1 (dashed); SVC's f = 0 dotted green")
ax.contour(xx, yy, f_svc.reshape(xx.shape), levels=[0], colors="tab:green", linestyles=":", linewidths=2)
fig.savefig(FIGURES / "03_exercise_5_5_surface.png", dpi=100)
plt.show()

# %% [markdown]
# ## 4. Kernels side by side (the demo's `svmdemo_compare`)
#
# The coursework function writes the figure, a CSV table and a Markdown section; a
# smaller grid than the runner suite keeps this notebook fast.

# %%
print(gendata(15, 15).description)
section = demos.demo_compare(
    FIGURES, C_values=(1.0, 100.0),
    kernels=[demos.COMPARE_KERNELS[i] for i in (0, 1, 3, 4)],
)
display(Image(filename=str(section.figures[0])))
section.table[["setting", "C", "n_sv", "train_acc", "max_abs_f_minus_svc"]]
