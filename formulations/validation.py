"""The one place where data and parameters are checked before any model is built.

Every public entry point (the Python API, the estimator, the CLI) passes its input
through these functions, so a bad input is refused with the same clear message
wherever it comes in, and no solver ever sees it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from formulations.errors import SVMInputError


@dataclass(frozen=True)
class LabelMap:
    """How the user's two labels map to the SVM's -1 / +1."""

    negative: object
    positive: object

    def as_dict(self) -> dict[str, int]:
        return {str(self.negative): -1, str(self.positive): 1}

    def inverse(self, signs: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(signs) > 0, self.positive, self.negative)


def check_X(X, name: str = "X") -> np.ndarray:
    """Return X as a finite float64 (n, d) array, or raise naming the first bad entry."""
    arr = np.asarray(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or arr.dtype == bool
    ):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise SVMInputError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 2:
        raise SVMInputError(
            f"{name} must be two-dimensional (n samples x d features), got shape {arr.shape}"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise SVMInputError(f"{name} is empty (shape {arr.shape}): an SVM needs samples and features")
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        kind = "NaN" if np.isnan(arr[row, col]) else "infinity"
        raise SVMInputError(
            f"{name} contains {kind} at row {row}, column {col} "
            f"({int(bad.sum())} non-finite entries in all)"
        )
    return arr


def check_labels(y, n: int | None = None) -> tuple[np.ndarray, LabelMap]:
    """Map exactly two distinct labels of any type to -1.0 / +1.0.

    The sorted first label becomes -1 and the second +1 (scikit-learn's order of
    `classes_`), so labels that are already {-1, +1} keep their signs.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise SVMInputError(f"y must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise SVMInputError(f"X has {n} rows but y has {arr.shape[0]} labels: they must match")
    if arr.shape[0] == 0:
        raise SVMInputError("y is empty: an SVM needs labelled samples of two classes")
    if np.issubdtype(arr.dtype, np.number):
        bad = ~np.isfinite(arr.astype(np.float64))
        if bad.any():
            raise SVMInputError(f"y contains a non-finite label at row {int(np.argmax(bad))}")
    classes = np.unique(arr)
    if classes.size != 2:
        raise SVMInputError(
            f"y must contain exactly two classes, found {classes.size} class"
            f"{'es' if classes.size != 1 else ''}: {list(classes[:5])}"
        )
    labels = LabelMap(negative=classes[0].item(), positive=classes[1].item())
    signs = np.where(arr == classes[1], 1.0, -1.0)
    return signs, labels


def check_C(C, allow_infinite: bool = False) -> float:
    """C > 0 and finite (math.inf only where the hard-margin dual is meant)."""
    try:
        value = float(C)
    except (TypeError, ValueError):
        raise SVMInputError(f"C must be a number, got {C!r}") from None
    if math.isnan(value) or value <= 0:
        raise SVMInputError(f"C must be > 0, got {C!r}")
    if math.isinf(value) and not allow_infinite:
        raise SVMInputError(
            "C must be finite; for the hard margin use the 'hard_primal' formulation "
            "(or the dual with C=inf)"
        )
    return value


def check_gram(K, n: int) -> np.ndarray:
    """A precomputed Gram matrix: square, finite, symmetric, matching the labels."""
    arr = np.asarray(K, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise SVMInputError(f"a precomputed kernel matrix must be square, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise SVMInputError(f"the kernel matrix is {arr.shape[0]} x {arr.shape[0]} but y has {n} labels")
    check_X(arr, name="K")
    asym = np.abs(arr - arr.T)
    scale = max(1.0, float(np.abs(arr).max()))
    if asym.max() > 1e-10 * scale:
        i, j = np.unravel_index(np.argmax(asym), asym.shape)
        raise SVMInputError(
            f"the kernel matrix is not symmetric: K[{i},{j}] - K[{j},{i}] = {arr[i, j] - arr[j, i]:.3g}"
        )
    return arr


def check_data(X, y) -> tuple[np.ndarray, np.ndarray, LabelMap]:
    """Check a training set; return (X float64, y in {-1,+1}, the label map)."""
    X = check_X(X)
    y, labels = check_labels(y, n=X.shape[0])
    return X, y, labels
