"""The perceptron of the Iowa State slides (seed ``002_725cbac91910d465.txt``).

A baseline for the SVM: the perceptron finds *a* separating hyperplane, the SVM the
one with the largest margin. Notation follows the slides:

* augmented vectors x = (x_1, ..., x_n, 1) and W = (w_1, ..., w_n, w_b), so the
  classifier is sign(W' x) and the bias is the last entry of W;
* a sample is classified correctly when W' x y > 0, so W' x y <= 0 (a point on the
  hyperplane included) counts as a mistake;
* cost J(W) = sum over misclassified samples of -W' x y, gradient -sum x y.

Two variants:

* single-sample: iteration k = 1, 2, ... visits sample j = k mod n (in order, cycling)
  and updates W <- W + rho x_j y_j when W' x_j y_j <= 0;
* batch: each epoch adds rho * (sum of x y over all misclassified samples), all
  evaluated with the same W.

Both stop when every sample is classified correctly ("The algorithm terminates when
all samples are classified correctly"), i.e. exactly when a further pass would make
no update. Counting follows the slides' worked example and the notebook behind it
(``perceptron.ipynb`` in github.com/forrestbao/MLClass): the check happens before each
iteration, so the run that ends at W14 = (-3, 0, 2) has 14 iterations and its
``history[13]`` is (-3, 0, 2). The perceptron converges only if the data are linearly
separable; otherwise it stops at the iteration cap with ``converged=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from formulations.errors import SVMInputError

__all__ = ["PerceptronResult", "perceptron_batch", "perceptron_single_sample"]


@dataclass
class PerceptronResult:
    """Outcome of a perceptron run.

    Attributes:
        W: final augmented weight vector (w_1, ..., w_n, w_b); the last entry is the bias.
        converged: True when W classifies every sample correctly (W' x y > 0 for all).
        n_updates: number of corrections rho * x y added to W (one per mistake; a batch
            epoch with m misclassified samples counts m).
        n_iterations: sample visits (single-sample) or epochs (batch) performed.
        history: W after each iteration, ``history[k - 1]`` after iteration k, so
            ``len(history) == n_iterations``.
        message: why the run stopped, in words.
    """

    W: np.ndarray
    converged: bool
    n_updates: int
    n_iterations: int
    history: list[np.ndarray] = field(default_factory=list)
    message: str = ""

    @property
    def w(self) -> np.ndarray:
        """Normal vector of the hyperplane (W without its bias entry)."""
        return self.W[:-1]

    @property
    def b(self) -> float:
        """Bias w_b, the last entry of the augmented W."""
        return float(self.W[-1])

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """w' x + b for each row of ``X``; its sign is the predicted label."""
        return np.asarray(X, dtype=np.float64) @ self.w + self.b


def _check_inputs(
    X: object, y: object, rho: object, max_iter: object, W0: object, iter_name: str
) -> tuple[np.ndarray, np.ndarray, float, int, np.ndarray]:
    """Validate the arguments; return X, y as float arrays, rho, the cap and W0."""
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SVMInputError(f"X and y must be numeric arrays: {exc}") from None
    if X.ndim != 2:
        raise SVMInputError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise SVMInputError(f"X must have at least one sample and one feature, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        row = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
        raise SVMInputError(f"X contains NaN or infinite values (first in row {row})")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise SVMInputError(
            f"y must be 1-D with one label per row of X ({X.shape[0]}), got shape {y.shape}"
        )
    bad = np.flatnonzero((y != 1.0) & (y != -1.0))
    if bad.size:
        raise SVMInputError(f"labels must be -1 or +1; y[{bad[0]}] = {y[bad[0]]!r}")
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.integer, np.floating)):
        raise SVMInputError(f"rho (learning rate) must be a number, got {rho!r}")
    if not np.isfinite(rho) or rho <= 0:
        raise SVMInputError(f"rho (learning rate) must be finite and > 0, got {rho!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise SVMInputError(f"{iter_name} must be a positive integer, got {max_iter!r}")
    if W0 is None:
        W = np.zeros(X.shape[1] + 1)
    else:
        W = np.array(W0, dtype=np.float64)  # a copy: the caller's W0 is never modified
        if W.shape != (X.shape[1] + 1,):
            raise SVMInputError(
                f"W0 must be augmented, shape ({X.shape[1] + 1},) = n_features + 1 for the "
                f"bias, got {W.shape}"
            )
        if not np.all(np.isfinite(W)):
            raise SVMInputError("W0 contains NaN or infinite values")
    return X, y, float(rho), int(max_iter), W


def _normalized_samples(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows x_i y_i with x_i augmented by a trailing 1, as on the slides."""
    return np.column_stack([X, np.ones(X.shape[0])]) * y[:, None]


def _result(W, converged: bool, n_updates: int, n_iterations: int, history,
            cap_name: str, cap: int, unit: str) -> PerceptronResult:
    """The result of either perceptron, with its message (``unit`` names what was counted)."""
    if converged:
        message = (
            f"converged after {n_iterations} {unit} ({n_updates} updates): "
            "all samples correctly classified"
        )
    else:
        message = (
            f"did not converge within {cap_name}={cap} {unit}: "
            "the data may not be linearly separable"
        )
    return PerceptronResult(W=W, converged=converged, n_updates=n_updates,
                            n_iterations=n_iterations, history=history, message=message)


def perceptron_single_sample(
    X: np.ndarray,
    y: np.ndarray,
    rho: float = 1.0,
    max_iter: int = 1000,
    W0: np.ndarray | None = None,
) -> PerceptronResult:
    """Single-sample perceptron: visit the samples in order, fix each mistake at once.

    Iteration k (k = 1, 2, ...) takes sample j = k mod n (cycling in the given row
    order) and sets

        W_{k+1} = W_k + rho x_j y_j   if W_k' x_j y_j <= 0   (wrong prediction)
        W_{k+1} = W_k                 otherwise.

    Args:
        X: (n, d) samples, not augmented.
        y: (n,) labels in {-1, +1}.
        rho: learning rate, > 0.
        max_iter: cap on sample visits.
        W0: initial augmented weights (d + 1,); zeros by default, as on the slides.

    Returns:
        A :class:`PerceptronResult`; ``n_iterations`` counts sample visits and stops as
        soon as all samples are classified correctly (checked before each visit, as the
        slides' notebook does). On the slides' example in the notebook's order
        (``perceptron_slides(order="notebook")``) this gives 14 iterations ending at
        W = (-3, 0, 2).
    """
    X, y, rho, max_iter, W = _check_inputs(X, y, rho, max_iter, W0, "max_iter")
    Z = _normalized_samples(X, y)
    n = Z.shape[0]
    history: list[np.ndarray] = []
    n_updates = 0
    # W only changes on an update, so checking all margins before the first visit and
    # after each update is the same as checking before every visit.
    converged = bool(np.all(Z @ W > 0))
    k = 0
    while not converged and k < max_iter:
        z = Z[k % n]
        if W @ z <= 0:
            W = W + rho * z
            n_updates += 1
            converged = bool(np.all(Z @ W > 0))
        k += 1
        history.append(W.copy())
    return _result(W, converged, n_updates, k, history, "max_iter", max_iter, "iterations")


def perceptron_batch(
    X: np.ndarray,
    y: np.ndarray,
    rho: float = 1.0,
    max_epochs: int = 1000,
    W0: np.ndarray | None = None,
) -> PerceptronResult:
    """Batch perceptron: one gradient step on J(W) per epoch.

    Each epoch evaluates every sample with the same W and sets

        W <- W + rho * sum_{i in M} x_i y_i,   M = {i : W' x_i y_i <= 0},

    stopping when M is empty. ``n_iterations`` counts the epochs that updated W.

    Args:
        X: (n, d) samples, not augmented.
        y: (n,) labels in {-1, +1}.
        rho: learning rate, > 0.
        max_epochs: cap on epochs.
        W0: initial augmented weights (d + 1,); zeros by default.
    """
    X, y, rho, max_epochs, W = _check_inputs(X, y, rho, max_epochs, W0, "max_epochs")
    Z = _normalized_samples(X, y)
    history: list[np.ndarray] = []
    n_updates = 0
    epoch = 0
    wrong = Z @ W <= 0
    while wrong.any() and epoch < max_epochs:
        W = W + rho * Z[wrong].sum(axis=0)
        n_updates += int(wrong.sum())
        epoch += 1
        history.append(W.copy())
        wrong = Z @ W <= 0
    return _result(W, not wrong.any(), n_updates, epoch, history, "max_epochs", max_epochs, "epochs")
