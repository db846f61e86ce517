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
# # 4. The perceptron, and why the SVM's line is the better one
#
# The machine-learning slides (F. S. Bao, CS 474/574, Iowa State). With augmented samples $x = (x_1, \dots, x_n, 1)$ and
# $W = (w_1, \dots, w_n, w_b)$, a sample is correctly classified when $W^\top x\, y > 0$.
# The **single-sample perceptron** visits sample $j = k\ \mathrm{mod}\ n$ at iteration $k$ and
#
# $$W_{k+1} = W_k + \rho\, x_j y_j \quad \mathrm{if}\quad W_k^\top x_j y_j \leq 0, \qquad W_{k+1} = W_k \quad \mathrm{otherwise,}$$
#
# stopping when every sample is classified correctly. The **batch perceptron** adds
# $\rho\sum_{i\in\mathcal{M}} x_i y_i$ over all misclassified samples at once.

# %%
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import Image

from experiments.coursework.perceptron import perceptron_batch, perceptron_single_sample
from experiments.coursework.perceptron_vs_svm import perceptron_vs_svm
from experiments.datasets import perceptron_slides

FIGURES = Path("figures")
FIGURES.mkdir(exist_ok=True)

# %% [markdown]
# ## The slides' example
#
# The slides print the points as $x_1 = (0,0), x_2 = (0,1)$ ($y = +1$), $x_3 = (1,0),
# x_4 = (1,1)$ ($y = -1$) and announce $W_{14} = (-3, 0, 2)$, computed in their notebook,
# which lists $x_3$ and $x_4$ the other way round. Both orders, from $W_1 = 0$ with
# $\rho = 1$:

# %%
runs = {}
for order in ("notebook", "slides"):
    ds = perceptron_slides(order=order)
    runs[order] = perceptron_single_sample(ds.X, ds.y, rho=1.0)
history = runs["notebook"].history
pd.DataFrame({"W after iteration k (notebook order)": [tuple(int(v) for v in W) for W in history]},
             index=pd.RangeIndex(1, len(history) + 1, name="iteration k"))

# %%
for order, r in runs.items():
    ds = perceptron_slides(order=order)
    print(f"{order:>8} order: {r.message}; W = {r.W}, W'x_i y_i = {ds.y * r.decision_function(ds.X)}")
assert np.array_equal(runs["notebook"].W, [-3, 0, 2]) and runs["notebook"].n_iterations == 14
assert np.array_equal(runs["slides"].W, [-2, 0, 1]) and runs["slides"].n_iterations == 9

# %% [markdown]
# The notebook's order gives the slides' $W_{14} = (-3, 0, 2)$ after exactly 14
# iterations. The slides then check "$W_{14}^\top x_i y_i = 1 > 0$" for all four
# samples; for $(-3, 0, 2)$ those values are $(2, 2, 1, 1)$: the four 1s belong to
# $(-2, 0, 1)$, which is where the printed order ends. Both numbers are reproduced,
# each by the order that produced it.
#
# ## Batch version, and data that are not separable
#
# On the XOR pattern no line separates the classes: the perceptron never stops by
# itself, so it runs to the cap and says so.

# %%
ds = perceptron_slides()
batch = perceptron_batch(ds.X, ds.y, rho=1.0)
print("batch:", batch.message, "W =", batch.W)
xor_X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
xor_y = np.array([1.0, 1.0, -1.0, -1.0])
stuck = perceptron_single_sample(xor_X, xor_y, max_iter=200)
print("XOR:", stuck.message)
assert batch.converged and not stuck.converged and stuck.n_iterations == 200

# %% [markdown]
# ## The perceptron's line beside the maximum-margin line
#
# The perceptron stops at the *first* separating line it meets; the SVM picks the
# line whose smallest distance to the points (the margin) is largest. On the slides'
# example the perceptron's line is $x_1 = 2/3$ (margins 2/3 and 1/3), the SVM's
# $x_1 = 1/2$ (1/2 on both sides).

# %%
section = perceptron_vs_svm(FIGURES, max_iter=1000)
print(section.table[["dataset", "method", "w", "b", "min_margin", "converged", "iterations"]].to_string())
Image(filename=str(section.figures[0]))
