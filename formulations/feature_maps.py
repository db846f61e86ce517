r"""Explicit feature maps Phi for the kernels that have a finite one.

The kernel dual needs only K(x, x') = Phi(x)' Phi(x') (seed 003, eq. 9.21); the
soft-margin primal needs Phi itself:

    min_{w, b, xi}  1/2 ||w||^2 + C sum_i xi_i
    s.t.            y_i (w' Phi(x_i) + b) >= 1 - xi_i,   xi_i >= 0.

When Phi is finite the two are a primal-dual pair, so the optimum, b* and the
decision values f(x) = w' Phi(x) + b = sum_i alpha_i y_i K(x_i, x) + b agree:
strong duality across a nonlinear kernel (experiments.coursework.kernel_duality).

    linear                 Phi(x) = x
    poly (zeta + gamma x'x')^Q   formulations.kernels.poly_feature_map (multinomial terms)
    rbf, sigmoid, precomputed    no finite map: refused with an error saying so.

Pure numpy: no solver, no I/O.
"""

from __future__ import annotations

import numpy as np

from formulations.errors import SVMInputError
from formulations.kernels import Kernel, poly_feature_count, poly_feature_map

__all__ = ["feature_map", "feature_count", "has_finite_map"]


def has_finite_map(kernel: Kernel) -> bool:
    """True for the kernels `feature_map` can write out (linear, poly)."""
    return kernel.name in ("linear", "poly")


def feature_count(kernel: Kernel, n_features: int) -> int:
    """Number of columns of feature_map(kernel, X) for X with n_features columns."""
    if kernel.name == "linear":
        return n_features
    if kernel.name == "poly":
        return poly_feature_count(n_features, kernel.degree, kernel.coef0)
    raise _no_map(kernel)


def feature_map(kernel: Kernel, X) -> np.ndarray:
    """Phi(X), one row per sample, with Phi(X) Phi(Z)' = gram(kernel, X, Z) (to rounding).

    gamma=None resolves to 1/d as in `gram`. Kernels without a finite map
    (rbf, sigmoid, precomputed) raise SVMInputError.
    """
    if not isinstance(kernel, Kernel):
        raise SVMInputError(f"kernel must be a formulations.kernels.Kernel, got {kernel!r}")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise SVMInputError(f"X must be a 2-D array (samples x features), got shape {X.shape}")
    if kernel.name == "linear":
        return X.copy()
    if kernel.name == "poly":
        gamma = kernel.resolved_gamma(X.shape[1])
        return poly_feature_map(X, kernel.degree, gamma=gamma, coef0=kernel.coef0)
    raise _no_map(kernel)


def _no_map(kernel: Kernel) -> SVMInputError:
    why = {
        "rbf": "its feature space is infinite-dimensional",
        "sigmoid": "it has no feature space in general (it need not satisfy Mercer's condition)",
        "precomputed": "only its Gram matrix is known",
    }[kernel.name]
    return SVMInputError(
        f"kernel {kernel.label} has no finite explicit feature map: {why}; use the kernel dual "
        f"(the primal objective is still computed from alpha* through K)"
    )
