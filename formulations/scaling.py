r"""Badly scaled features: detect them, and standardize with the answer mapped back.

When one feature is 1e8 times larger than another, the QP's Hessian and
constraint matrix span as many orders of magnitude, and solvers return w = 0
or stop early (scikit-learn's LinearSVC returns w = 0 without a word). The
project warns with the ratio of feature scales and offers standardization:

    z_ij = (x_ij - m_j) / s_j        m_j = mean of feature j,  s_j = its std (1 if 0)

A classifier found on Z,  f(z) = w_z' z + b_z,  is the same function of x as

    f(x) = w' x + b      with   w_j = w_z,j / s_j,    b = b_z - sum_j w_z,j m_j / s_j,

which is how w*, b* are reported in the original units.

What standardization changes: the SVM minimises ||w_z||^2 = sum_j s_j^2 w_j^2
instead of ||w||^2, a different norm, so the boundary found differs from the
unscaled solve unless all s_j are equal. Centring alone (all s_j = 1) changes
nothing: the bias absorbs the shift. So a sparse X is scaled without centring (m_j = 0: centring would
make it dense), which gives the same w*, b* in the original units. With all s_j = s, the hard-margin answer
is the same classifier; the soft margin's C acts as C s^2 in the original units.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from formulations.data_matrix import as_data, column_max_abs, column_moments

#: Ratio of the largest to the smallest feature scale above which a warning is given.
SCALE_RATIO_WARN = 1e4


class BadScalingWarning(UserWarning):
    """Feature scales differ by orders of magnitude; the solvers may lose accuracy."""


#: A feature whose standard deviation is at most this fraction of its largest |x_j| is constant: the spread is
#: the rounding of its mean. A standardized column that is constant on a subset of the points (digits, one
#: class pair of the estimator's one-vs-one) has a std of 1.5e-16, and the scale ratio was 1.1e16: 44
#: BadScalingWarnings for one fit, and standardize=True would have divided that column by 1.5e-16.
CONSTANT_RTOL = 1e-12


def _spread(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(standard deviation, largest |x_j|, whether the feature is constant: CONSTANT_RTOL) of every feature."""
    std = np.sqrt(column_moments(X)[1]) if X.shape[0] else np.zeros(X.shape[1])
    size = column_max_abs(X)
    return std, size, std <= CONSTANT_RTOL * size


def feature_scales(X: np.ndarray) -> np.ndarray:
    """Per-feature scale: the standard deviation, or max |x_j| where a feature is constant (_spread)."""
    scales, size, constant = _spread(as_data(X))
    scales[constant] = size[constant]
    return scales


def scale_ratio(X: np.ndarray) -> tuple[float, int, int]:
    """(largest / smallest nonzero feature scale, index of the largest, index of the smallest)."""
    scales = feature_scales(X)
    nonzero = np.flatnonzero(scales > 0)
    if nonzero.size < 2:
        return 1.0, 0, 0
    hi = int(nonzero[np.argmax(scales[nonzero])])
    lo = int(nonzero[np.argmin(scales[nonzero])])
    return float(scales[hi] / scales[lo]), hi, lo


#: What the BadScalingWarning advises by default (solve's own option; the estimator advises scikit-learn's Pipeline).
STANDARDIZE_ADVICE = "Consider standardize=True (w*, b* are mapped back to the original units)."


#: What badly scaled features do to a linear SVM's solve (check_scaling's default `effect`).
SOLVER_EFFECT = "solvers may lose accuracy or return w = 0"
#: What they do to a kernel SVM (rbf, poly, sigmoid): its answer is exact, but the model is the widest features'.
KERNEL_EFFECT = "the kernel's values are then set by the widest features alone"


def scaling_effect(kernel) -> str:
    """check_scaling's `effect` for a model fitted with `kernel` (a formulations.kernels.Kernel, or None: linear)."""
    return KERNEL_EFFECT if kernel is not None and kernel.name != "linear" else SOLVER_EFFECT


def check_scaling(X: np.ndarray, threshold: float = SCALE_RATIO_WARN, *, warn: bool = True,
                  advice: str = STANDARDIZE_ADVICE, effect: str = SOLVER_EFFECT, stacklevel: int = 3) -> float:
    """Warn (BadScalingWarning: `effect`, then `advice`) when feature scales differ by more than `threshold`;
    return the ratio."""
    ratio, hi, lo = scale_ratio(X)
    if ratio > threshold and warn:
        warnings.warn(
            f"badly scaled features: feature {hi} has a scale {ratio:.3g} times that of feature {lo} "
            f"(ratio of feature scales {ratio:.3g} > {threshold:g}); {effect}. {advice}",
            BadScalingWarning,
            stacklevel=stacklevel,
        )
    return ratio


#: A dense X with a feature whose |mean_j| is this many times its own spread (std_j) sits far from the origin: the
#: solvers meet columns of [X, 1] that are nearly parallel and misreport, so a translation-invariant problem is
#: solved on X centered. Feature by feature: one wide spread must not hide a near-constant feature.
FAR_FROM_ORIGIN = 100.0


def far_from_origin(X) -> bool:
    """Whether a feature of a dense X has |mean_j| > FAR_FROM_ORIGIN std_j (a constant nonzero feature too: it is
    parallel to the intercept's column); a sparse X is never centered."""
    if sp.issparse(X) or X.shape[0] < 2 or X.shape[1] == 0:
        return False
    return bool(np.any(np.abs(X.mean(axis=0)) > FAR_FROM_ORIGIN * X.std(axis=0)))


@dataclass(frozen=True)
class Standardizer:
    """z = (x - mean) / scale, feature by feature; constant features keep scale 1. A sparse X keeps mean 0
    (scaled, not centred: the module docstring) and stays sparse."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray) -> "Standardizer":
        X = as_data(X)
        scale, _, constant = _spread(X)
        scale[constant] = 1.0  # a constant feature: centring makes it 0 (to rounding), nothing to divide
        return cls(mean=np.zeros(X.shape[1]) if sp.issparse(X) else X.mean(axis=0), scale=scale)

    @classmethod
    def centering(cls, X: np.ndarray) -> "Standardizer":
        """x - mean, each feature's unit kept (a dense X far from the origin: far_from_origin)."""
        X = np.asarray(X, dtype=float)
        return cls(mean=X.mean(axis=0), scale=np.ones(X.shape[1]))

    def transform(self, X):
        if sp.issparse(X):
            return sp.csr_matrix(as_data(X) @ sp.diags(1.0 / self.scale))
        return (np.asarray(X, dtype=float) - self.mean) / self.scale

    def weights_to_original(self, w_z: np.ndarray, b_z: float) -> tuple[np.ndarray, float]:
        """(w, b) in the original units: w_j = w_z,j / s_j, b = b_z - sum_j w_z,j m_j / s_j."""
        w = np.asarray(w_z, dtype=float) / self.scale
        return w, float(b_z - w @ self.mean)

    def as_dict(self) -> dict:
        return {"mean": self.mean.tolist(), "scale": self.scale.tolist()}
