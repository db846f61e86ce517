r"""Kernels for the dual SVM: Gram matrices, Mercer's condition, factors, feature maps.

The dual SVM only sees the data through inner products in a feature space,

    K(x, x') = Phi(x)^T Phi(x')                                            (9.21)

so a kernel replaces Phi. The kernels here, in the notes' notation (seed 003,
eqs. 9.20-9.30, and the kernel slide of seed 001) and with scikit-learn's
parameter names, so that results compare with ``sklearn.svm.SVC``:

    linear    K(x, x') = x^T x'
    poly      K_Q(x, x') = (zeta + gamma x^T x')^Q                          (9.28)
              zeta = coef0 >= 0, gamma > 0, Q = degree
    rbf       K(x, x') = exp(-gamma ||x - x'||^2)      ("Gaussian")         (9.29)
    sigmoid   k(x, y) = tanh(beta x^T y + gamma)          (seed 001)
              beta = gamma (sklearn), the notes' gamma = coef0 (sklearn)

gamma=None means gamma = 1/d with d the number of features (sklearn's "auto").

Mercer's condition (9.30): K = Z Z^T must be symmetric positive semidefinite on
every finite sample. The linear, poly (zeta >= 0) and rbf kernels always pass;
the sigmoid kernel usually fails, and then the dual QP is not convex.
``mercer_check`` tests a given Gram matrix and refuses an indefinite one unless
told otherwise.

The dual objective (9.22) is (1/2) (y*alpha)^T K (y*alpha) - 1^T alpha. With a
factor K ~ L L^T it becomes (1/2) ||L^T (y*alpha)||^2 - 1^T alpha, which solvers
handle far better than a dense n x n quadratic form: ``factorize`` returns L.

The decision function (9.24) is f(x) = sum_i alpha_i y_i K(x_i, x) + b, summed
over the support vectors only: ``decision_function``.

Everything here is numpy and scipy, with the rbf's one compiled pass (formulations.rbf_exponents, numba, loaded
at the first rbf value): no solver, no I/O.
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from formulations.data_matrix import one_type
from formulations.errors import IndefiniteKernelError, SVMInputError, plain

__all__ = [
    "KERNEL_NAMES",
    "MAX_FEATURES",
    "Factor",
    "Kernel",
    "MercerReport",
    "decision_function",
    "factorize",
    "gram",
    "mercer_check",
    "Points",
    "rbf_values",
    "poly2_feature_map_notes",
    "poly_feature_count",
    "poly_feature_map",
]

KERNEL_NAMES = ("linear", "poly", "rbf", "sigmoid", "precomputed")
_ALIASES = {"gaussian": "rbf"}

#: Explicit feature maps with more columns than this are refused.
MAX_FEATURES = 200_000

#: Above this size, mercer_check finds the extreme eigenvalues with ARPACK
#: instead of a full (O(n^3)) dense eigendecomposition.
DENSE_EIG_MAX_N = 1000  # Lanczos is faster from about n = 500 on, by far at a few thousand

#: Relative tolerance of the symmetry test on a Gram matrix.
SYMMETRY_RTOL = 1e-10


# --------------------------------------------------------------------------- kernel


@dataclass(frozen=True)
class Kernel:
    """A kernel function with scikit-learn's parameter names and meanings.

    name:   "linear" | "poly" | "rbf" | "sigmoid" | "precomputed"
            ("gaussian" is accepted and stored as "rbf").
    gamma:  scale of x^T x' (poly, sigmoid) or of ||x - x'||^2 (rbf); must be > 0.
            None means 1/d, d = number of features (sklearn's gamma="auto").
    degree: Q in (zeta + gamma x^T x')^Q, a positive integer (poly only).
    coef0:  zeta in the poly kernel (must be >= 0, eq. 9.28) and the additive
            constant inside tanh for sigmoid (any finite value).

    Parameters that a kernel does not use are still validated, so a typo never
    passes silently, but they do not change the kernel or its label.
    """

    name: str
    gamma: float | None = None
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise SVMInputError(f"kernel name must be a string, got {self.name!r}")
        name = _ALIASES.get(self.name.strip().lower(), self.name.strip().lower())
        if name not in KERNEL_NAMES:
            raise SVMInputError(
                f"unknown kernel {self.name!r}; known kernels: {', '.join(KERNEL_NAMES)}"
                f" (alias: 'gaussian' for 'rbf')"
            )
        object.__setattr__(self, "name", name)

        if self.gamma is not None:
            if not _is_real(self.gamma) or not math.isfinite(self.gamma) or self.gamma <= 0:
                raise SVMInputError(
                    f"kernel {name}: gamma must be > 0 and finite (or None for 1/d), "
                    f"got {plain(self.gamma)!r}"
                )
            object.__setattr__(self, "gamma", float(self.gamma))

        if not isinstance(self.degree, numbers.Integral) or isinstance(self.degree, bool) \
                or self.degree < 1:
            raise SVMInputError(
                f"kernel {name}: degree must be a positive integer, got {plain(self.degree)!r}"
            )
        object.__setattr__(self, "degree", int(self.degree))

        if not _is_real(self.coef0) or not math.isfinite(self.coef0):
            raise SVMInputError(
                f"kernel {name}: coef0 must be a finite number, got {plain(self.coef0)!r}"
            )
        if name == "poly" and self.coef0 < 0:
            # (zeta + gamma x^T x')^Q with zeta < 0 is not a Mercer kernel in general.
            raise SVMInputError(
                f"kernel poly: coef0 (zeta in (zeta + gamma x^T x')^Q) must be >= 0, "
                f"got {plain(self.coef0)!r}"
            )
        object.__setattr__(self, "coef0", float(self.coef0))

    @property
    def mercer_by_theorem(self) -> bool:
        """Whether the kernel satisfies Mercer's condition by theorem, whatever the data: linear, rbf, and poly
        (gamma > 0 and coef0 >= 0, which __post_init__ demands). Not sigmoid (indefinite in general) nor
        precomputed (no formula): their Gram matrix must be checked."""
        return self.name in ("linear", "rbf", "poly")

    def resolved_gamma(self, n_features: int) -> float:
        """gamma itself, or 1/d when gamma is None (sklearn's "auto")."""
        return self.gamma if self.gamma is not None else 1.0 / n_features

    @property
    def label(self) -> str:
        """Short name with the parameters that matter, e.g. "rbf(gamma=1)"."""
        return self._written(lambda v: f"{v:g}")

    @property
    def key(self) -> str:
        """`label` with every parameter written exactly (`exact_number`): one key per distinct kernel."""
        return self._written(exact_number)

    def _written(self, number) -> str:
        """The name with the parameters that matter, each number written by `number`."""
        gamma = "auto" if self.gamma is None else number(self.gamma)
        if self.name == "poly":
            return f"poly(degree={self.degree},gamma={gamma},coef0={number(self.coef0)})"
        if self.name == "rbf":
            return f"rbf(gamma={gamma})"
        if self.name == "sigmoid":
            return f"sigmoid(gamma={gamma},coef0={number(self.coef0)})"
        return self.name


def exact_number(value) -> str:
    """A number as short as ``:g`` writes it when that is exact, else its full ``repr``.

    1.0 -> "1", 0.1 -> "0.1", 0.1000001 -> "0.1000001" (``:g`` would say "0.1"): names and task keys
    built with it stay readable and never merge two different values.
    """
    v = float(value)
    short = f"{v:g}"
    return short if float(short) == v else repr(v)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _as_data(X, what: str) -> np.ndarray:
    """X as a finite float (n, d) array, or a clear error."""
    A = np.asarray(X, dtype=float)
    if A.ndim != 2:
        raise SVMInputError(
            f"{what} must be a 2-D array (samples x features), got shape {A.shape}; "
            f"reshape a single sample with x.reshape(1, -1)"
        )
    if A.shape[1] == 0:
        raise SVMInputError(f"{what} has no features (shape {A.shape})")
    if not np.all(np.isfinite(A)):
        i, j = np.argwhere(~np.isfinite(A))[0]
        raise SVMInputError(f"{what} has a non-finite entry {A[i, j]} at row {i}, column {j}")
    return A


# --------------------------------------------------------------------------- Gram


def gram(kernel: Kernel, X, Z=None) -> np.ndarray:
    """Kernel matrix G[i, j] = k(x_i, z_j), shape (len(X), len(Z)); Z=None means Z = X.

    Vectorized through the inner products X Z' (BLAS syrk for X X', whose two triangles are
    then equal bit for bit), finished in place block by block: the result is the only
    len(X) x len(Z) array made (whole-matrix temporaries cost several times the time). With Z=None the result is exactly
    symmetric. The rbf's values are right to rounding at any translation and scale of the data
    (`rbf_values`); the others are functions of x'z, right to rounding relative to ||x|| ||z||.
    """
    if kernel.name == "precomputed":
        raise SVMInputError(
            "kernel 'precomputed' has no formula: pass the Gram matrix K itself "
            "instead of calling gram()"
        )
    if scipy.sparse.issparse(X) or scipy.sparse.issparse(Z):
        return _sparse_gram(kernel, X, Z)
    X = np.ascontiguousarray(_as_data(X, "X"))
    symmetric = Z is None
    Z = X if symmetric else _as_data(Z, "Z")
    if Z.shape[1] != X.shape[1]:
        raise SVMInputError(
            f"X has {X.shape[1]} features but Z has {Z.shape[1]}; they must match"
        )
    gamma = kernel.resolved_gamma(X.shape[1])
    if kernel.name == "rbf":
        points = Points.of(Z)
        return rbf_values(gamma, points if symmetric else Points.at(X, points.center), points)
    # Z is X: numpy's matmul calls syrk and copies one triangle onto the other (without BLAS,
    # x_i'x_j and x_j'x_i are summed in the same order): exactly symmetric, as Mercer checks want.
    G = X @ Z.T
    if kernel.name == "linear":
        return G
    rows = max(1, 2**20 // max(1, G.shape[1]))  # about 8 MB a block: stays in cache
    for lo in range(0, G.shape[0], rows):
        block = G[lo:lo + rows]
        block *= gamma
        block += kernel.coef0
        if kernel.name == "poly":
            integer_power(block, kernel.degree)
        else:  # sigmoid
            np.tanh(block, out=block)
    return G


def integer_power(block: np.ndarray, degree: int) -> None:
    """block ** degree in place, by repeated squaring (LIBSVM's powi): numpy's power calls pow per entry, tens of
    times slower than a few products. Their rounding, at most (degree - 1) eps of the value, is within what x'z's
    own rounding already moves it ((d + 2) degree eps relative to the reach, formulations' bound above)."""
    base, remaining = block.copy(), degree - 1  # block holds base ** (degree - remaining)
    while remaining:
        if remaining & 1:
            block *= base
        remaining >>= 1
        if remaining:
            base *= base


def _sparse_gram(kernel: Kernel, X, Z=None) -> np.ndarray:
    """gram() where X or Z is scipy.sparse: scikit-learn's pairwise_kernels on the sparse rows (same formulas and
    parameters), the data never densified; the result is the dense len(X) x len(Z) matrix. With Z=None it is made
    exactly symmetric with the rbf's exact 1 on the diagonal, as gram() has it."""
    from sklearn.metrics.pairwise import pairwise_kernels  # deferred: loaded only where sparse data come

    symmetric = Z is None
    X = scipy.sparse.csr_matrix(X, dtype=float)
    Z = X if symmetric else (scipy.sparse.csr_matrix(Z, dtype=float) if scipy.sparse.issparse(Z)
                             else _as_data(Z, "Z"))
    for A, what in ((X, "X"), (Z, "Z")):
        if not np.all(np.isfinite(A.data if scipy.sparse.issparse(A) else A)):
            raise SVMInputError(f"{what} has a non-finite entry (NaN or infinity)")
    if Z.shape[1] != X.shape[1]:
        raise SVMInputError(f"X has {X.shape[1]} features but Z has {Z.shape[1]}; they must match")
    params = {"gamma": kernel.resolved_gamma(X.shape[1])} if kernel.name != "linear" else {}
    if kernel.name in ("poly", "sigmoid"):
        params["coef0"] = kernel.coef0
    if kernel.name == "poly":
        params["degree"] = kernel.degree
    G = np.asarray(pairwise_kernels(X, None if symmetric else Z, metric=kernel.name, **params), dtype=float)
    if symmetric:
        G = 0.5 * (G + G.T)
        if kernel.name == "rbf":
            np.fill_diagonal(G, 1.0)
    return G


# --------------------------------------------------------------------------- rbf rounding
#
# ||x - z||^2 = ||x||^2 + ||z||^2 - 2 x'z (one matrix product: BLAS speed) is off by up to about
# 2 (d + 4) eps (||x||^2 + ||z||^2), the differences' own sum by (d + 2) eps ||x - z||^2, and
# exp multiplies an error in gamma ||x - z||^2 into the same relative error of the kernel value. Far from the
# origin or in large units, close points lose every digit to the expansion (moons x 1e4, gamma = 1e3: a copy's
# value 0.99994 instead of 1). Distances do not depend on the origin, so the points are first centered (their
# mean, where it is a large part of their norms); then the entries where the expansion's rounding is more than
# EXACT_SLACK times the differences' own are computed again from the differences of the points as given.
# Translation and scale then change the values by rounding only. The x'z kernels (linear, poly, sigmoid)
# depend on the origin: nothing can be centered; their values are right to rounding relative to ||x|| ||z||.

#: An rbf entry is recomputed from x - z where the expansion's rounding bound exceeds this many times the
#: exact differences' own bound, eps (1 + (d + 2) gamma ||x - z||^2): every value is then within 257 eps
#: (5.7e-14) of its size times that factor. At 16 the Gram matrix of moons + 1e4 (gamma = 1, n = 5,000) recomputed
#: 1.9 million entries already right to 1e-14; at 256 none.
EXACT_SLACK = 256.0
#: exp(-t) is 0 or subnormal in float64 from t = 745.2 on: entries past it are never recomputed.
EXP_UNDERFLOW = 746.0


@dataclass(frozen=True)
class Points:
    """Points prepared for the rbf: as given (their exact differences), centered (the expansion), and the
    centered squared norms. `center` is the shift (None where centering would not shrink the norms)."""

    given: np.ndarray
    centered: np.ndarray
    sq: np.ndarray
    center: np.ndarray | None

    @classmethod
    def of(cls, X: np.ndarray) -> "Points":
        """X prepared, centered at its mean where that mean holds more than half of the points' mean squared norm
        (already centered data is not copied)."""
        X = np.ascontiguousarray(X, dtype=float)
        mean = X.mean(axis=0) if len(X) else np.zeros(X.shape[1])
        sq = np.einsum("ij,ij->i", X, X)
        if len(X) and float(mean @ mean) > 0.5 * float(sq.mean()):
            return cls.at(X, mean)
        return cls(X, X, sq, None)

    @classmethod
    def at(cls, X: np.ndarray, center: np.ndarray | None) -> "Points":
        """X prepared with the other side's `center` (None: not centered)."""
        X = np.ascontiguousarray(X, dtype=float)
        C = X if center is None else X - center
        return cls(X, C, np.einsum("ij,ij->i", C, C), center)

    def take(self, I) -> "Points":
        return Points(self.given[I], self.centered[I], self.sq[I], self.center)


def rbf_values(gamma: float, X: Points, Z: Points) -> np.ndarray:
    """exp(-gamma ||x - z||^2) for the points X against Z (the same object for a Gram matrix: exactly symmetric,
    unit diagonal), right to rounding: within (EXACT_SLACK + 1) eps (1 + (d + 2) gamma ||x - z||^2) of its size.
    The inner products by one BLAS call (on BLAS's threads), then finished a block of rows at a time (RbfRows);
    a Gram matrix's lower triangle only, then mirrored."""
    rows = RbfRows(gamma, X, Z, np.empty((len(X.sq), len(Z.sq))))
    n = rows.out.shape[0]
    rows.products(0, n)
    rows.finish(0, n)
    rows.mirror(0, n)
    return rows.out


class RbfRows:
    """The rbf's values of the points X against Z written into `out`, by rows (any number of threads may take
    blocks of rows: every entry is made by the same operations whatever the blocks are, given one BLAS thread).

    The exponents through the expansion on centered points (a Gram matrix's lower triangle: X X'; other points:
    one product [2 gamma X, -gamma ||x||^2, -1] [Z, 1, gamma ||z||^2]'), finished by one compiled pass
    (formulations.rbf_exponents: the clip, and the entries the expansion cannot get right recomputed from the
    differences), then numpy's exp."""

    #: Entries finished at a time: 1 MB, so that the pass and exp (and fill's product) find them in the cache.
    BLOCK_ENTRIES = 2**17

    def __init__(self, gamma: float, X: Points, Z: Points, out: np.ndarray):
        self.gamma, self.out, self.symmetric = float(gamma), out, X is Z
        if self.symmetric:
            self.left = self.right = X.centered
        else:
            self.left = np.column_stack([2.0 * gamma * X.centered, -gamma * X.sq, -np.ones(len(X.sq))])
            self.right = np.column_stack([Z.centered, np.ones(len(Z.sq)), gamma * Z.sq])
        self.points = tuple(one_type(A) for A in (X.given, X.sq, Z.given, Z.sq))

    def fill(self, lo: int, hi: int) -> None:
        """Rows lo..hi-1 made whole (products, then finish) a block of about BLOCK_ENTRIES at a time."""
        for start, end in self._blocks(lo, hi):
            self.products(start, end)
            self.finish(start, end)

    def products(self, lo: int, hi: int) -> None:
        """The inner products of rows lo..hi-1 (a Gram matrix's: their columns < hi) into `out`."""
        hi = min(hi, self.out.shape[0])
        if hi > lo:
            block = self.out[lo:hi, :hi] if self.symmetric else self.out[lo:hi]
            np.matmul(self.left[lo:hi], (self.right[:hi] if self.symmetric else self.right).T, out=block)

    def finish(self, lo: int, hi: int) -> None:
        """Rows lo..hi-1 from their products to the kernel's values (a Gram matrix's: their lower triangle, the
        other entries of columns < hi set to 0)."""
        from formulations.rbf_exponents import exponents  # numba, loaded where an rbf value is made

        for start, end in self._blocks(lo, hi):
            block = self.out[start:end, :end] if self.symmetric else self.out[start:end]
            exponents(block, start, *self.points, self.gamma, EXACT_SLACK, EXP_UNDERFLOW, self.symmetric,
                      self.symmetric)
            np.exp(block, out=block)

    def mirror(self, lo: int, hi: int) -> None:
        """A Gram matrix's rows lo..hi-1 above the diagonal from its lower triangle, 1 on the diagonal (nothing for
        other points)."""
        from formulations.rbf_exponents import mirror  # as finish

        if self.symmetric and self.out.size:
            mirror(self.out, lo, min(hi, self.out.shape[0]))

    def _blocks(self, lo: int, hi: int):
        """(start, end) of rows lo..hi-1 in blocks of about BLOCK_ENTRIES entries."""
        hi = min(hi, self.out.shape[0])
        width = max(1, hi if self.symmetric else self.out.shape[1])
        step = max(1, self.BLOCK_ENTRIES // width)
        return [(start, min(hi, start + step)) for start in range(lo, hi, step)]


# --------------------------------------------------------------------------- Mercer


@dataclass
class MercerReport:
    """Outcome of a Mercer (PSD) test on a Gram matrix.

    tolerance is the absolute threshold used: K counts as PSD when
    min_eigenvalue >= -tolerance, tolerance = rtol * max(|max_eigenvalue|, 1).
    method says how the eigenvalues were found: "eigvalsh" (dense, exact to
    rounding), "cholesky+eigsh" or "eigsh" (large n, see mercer_check).
    """

    min_eigenvalue: float
    max_eigenvalue: float
    tolerance: float
    is_psd: bool
    symmetric: bool
    method: str = "eigvalsh"


def _as_square_symmetric(K, what: str = "K") -> np.ndarray:
    """K as a finite square float array that is symmetric to SYMMETRY_RTOL, or an error."""
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise SVMInputError(f"{what} must be a square matrix, got shape {K.shape}")
    if K.shape[0] == 0:
        raise SVMInputError(f"{what} is empty (0 x 0)")
    if not np.all(np.isfinite(K)):
        i, j = np.argwhere(~np.isfinite(K))[0]
        raise SVMInputError(f"{what} has a non-finite entry {K[i, j]} at ({i}, {j})")
    asym = np.abs(K - K.T)
    i, j = np.unravel_index(np.argmax(asym), asym.shape)
    scale = max(float(np.max(np.abs(K))), np.finfo(float).tiny)
    if asym[i, j] > SYMMETRY_RTOL * scale:
        raise SVMInputError(
            f"{what} is not symmetric: largest asymmetry |K[{i},{j}] - K[{j},{i}]| = "
            f"{asym[i, j]:.3g} at ({i}, {j}), i.e. {asym[i, j] / scale:.3g} of max|K|, "
            f"above the allowed {SYMMETRY_RTOL:g}; a kernel matrix must satisfy "
            f"K[i,j] = K[j,i]"
        )
    return K


def _extreme_eigenvalues(
    K: np.ndarray, rtol: float, dense_max_n: int
) -> tuple[float, float, str]:
    """(smallest, largest) eigenvalue of symmetric K and the method used."""
    if K.shape[0] > dense_max_n:
        try:
            return _lanczos_extremes(K, rtol)
        except scipy.sparse.linalg.ArpackNoConvergence:
            pass  # correctness over speed: a slow exact answer beats a wrong verdict
    w = scipy.linalg.eigvalsh(K)
    return float(w[0]), float(w[-1]), "eigvalsh"


def _lanczos_extremes(K: np.ndarray, rtol: float) -> tuple[float, float, str]:
    """Both ends of the spectrum of a large K without a full eigendecomposition.

    Plain Lanczos for the smallest eigenvalue stalls on typical Gram matrices
    (rbf, low-rank linear), whose many eigenvalues cluster at 0. Instead:
    lam_max by Lanczos (well separated in practice), then a Cholesky factor of
    K + tau I with tau = rtol * |lam_max|:
      - it exists: lam_min > -tau, i.e. K passes. The largest eigenvalue of
        (K + tau I)^-1 is 1/(lam_min + tau); to 1% it pins lam_min to within 1% of
        lam_min + tau (far below tau near 0), in a few dozen triangular solves.
      - it fails: an eigenvalue lies below -tau, and the top of lam_max I - K
        (= lam_max - lam_min) is found by Lanczos.
    """
    n = K.shape[0]
    eigsh = scipy.sparse.linalg.eigsh
    v0 = np.random.default_rng(0).standard_normal(n)  # fixed start: reproducible runs
    lam_max = float(eigsh(K, k=1, which="LA", v0=v0, return_eigenvectors=False)[0])
    tau = max(rtol * abs(lam_max), np.finfo(float).tiny)  # K = 0: its factor's own rounding

    shifted = K.copy()
    shifted[np.diag_indices(n)] += tau
    try:
        factor = scipy.linalg.cho_factor(shifted, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        flipped = scipy.sparse.linalg.LinearOperator(
            (n, n), matvec=lambda v: lam_max * v - K @ v, dtype=float
        )
        theta = eigsh(flipped, k=1, which="LA", v0=v0, tol=1e-10, return_eigenvectors=False)
        return lam_max - float(theta[0]), lam_max, "eigsh"

    inverse = scipy.sparse.linalg.LinearOperator(
        (n, n), matvec=lambda v: scipy.linalg.cho_solve(factor, v, check_finite=False),
        dtype=float,
    )
    mu = eigsh(inverse, k=1, which="LA", v0=v0, tol=1e-2, return_eigenvectors=False)
    return 1.0 / float(mu[0]) - tau, lam_max, "cholesky+eigsh"


#: How far below 0 rounding alone takes a PSD matrix's smallest eigenvalue, in units of n * eps * its largest:
#: the eigenvalues of K + E move by at most ||E|| <= n max|E_ij|, and each K_ij is off by a few eps of the
#: largest. Rounded PSD matrices stay far inside it and truly indefinite kernels far outside (docs/kernel_rounding.md).
ROUNDING_SLACK = 10


def input_precision(K) -> float:
    """The machine epsilon of the precision K was computed in: float32's for a float32 (or float16) array, and
    for a float64 one whose every entry is a float32 value but not all integers (float32 data cast up on the
    way, as scikit-learn's validation does); float64's otherwise."""
    arr = np.asarray(K)
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 8:
        return float(np.finfo(arr.dtype).eps)
    if arr.dtype == np.float64 and arr.size and np.all(np.isfinite(arr)):
        as32 = arr.astype(np.float32)
        if np.all(as32 == arr) and not np.all(arr == np.round(arr)):
            return float(np.finfo(np.float32).eps)
    return float(np.finfo(np.float64).eps)


def mercer_check(
    K,
    kernel_label: str = "precomputed",
    rtol: float = 1e-10,
    allow_indefinite: bool = False,
    *,
    dense_max_n: int = DENSE_EIG_MAX_N,
) -> MercerReport:
    """Test Mercer's condition (9.30) on a Gram matrix: symmetric and PSD.

    K must be square and symmetric to 1e-10 relative to max|K|, otherwise
    SVMInputError names the largest asymmetry and where it is.

    PSD test: K is accepted as positive semidefinite when

        min eigenvalue >= -max(rtol, ROUNDING_SLACK * n * eps) * |max eigenvalue|,

    which forgives eigenvalues that are zero up to rounding: eps is the precision K was computed
    in (input_precision: float32's for float32 data), relative to K's own scale, never to 1. The eigenvalues come
    from ``scipy.linalg.eigvalsh``. For n > dense_max_n (default 4000) only the
    largest and smallest are computed, with ``scipy.sparse.linalg.eigsh`` (the
    smallest through a Cholesky factor of K + tolerance * I, which also certifies
    the verdict; then min_eigenvalue is accurate to about 1% of the tolerance
    when K is near-singular). If ARPACK does not converge, the dense path is used.

    If K is not PSD, IndefiniteKernelError names the kernel (kernel_label, e.g.
    Kernel.label) and the most negative eigenvalue, unless allow_indefinite=True,
    in which case the report comes back with is_psd=False.
    """
    eps = input_precision(K)
    K = _as_square_symmetric(K)
    rtol = max(rtol, ROUNDING_SLACK * K.shape[0] * eps)
    lam_min, lam_max, method = _extreme_eigenvalues(K, rtol, dense_max_n)
    tolerance = rtol * abs(lam_max)
    is_psd = lam_min >= -tolerance
    if not is_psd and not allow_indefinite:
        raise IndefiniteKernelError(
            f"kernel {kernel_label} gives a Gram matrix that is not positive semidefinite "
            f"(Mercer's condition fails): most negative eigenvalue {lam_min:.6g} "
            f"< -{tolerance:.3g} (largest eigenvalue {lam_max:.6g}). The dual QP is then "
            f"not convex: use a Mercer kernel (rbf, poly with coef0 >= 0, linear), or pass allow_indefinite=True "
            f"(solvers.api.solve, mercer_check) to go on anyway."
        )
    return MercerReport(
        min_eigenvalue=lam_min,
        max_eigenvalue=lam_max,
        tolerance=tolerance,
        is_psd=bool(is_psd),
        symmetric=True,
        method=method,
    )


# --------------------------------------------------------------------------- factor


@dataclass
class Factor:
    """K ~ L L' with L of shape (n, rank).

    residual = ||K - L L'||_F / ||K||_F (0 when K = 0).
    method is "pivoted_cholesky" or "eig".
    """

    L: np.ndarray
    rank: int
    residual: float
    method: str


def factorize(
    K,
    rtol: float = 1e-10,
    max_rank: int | None = None,
    method: str = "pivoted_cholesky",
) -> Factor:
    """Low-rank factor L with K ~ L L', so (y*a)' K (y*a) = ||L' (y*a)||^2.

    pivoted_cholesky: greedy on the diagonal. Each step takes the largest remaining
        diagonal entry of the Schur complement as pivot and adds one column,
        at O(n r) per column (O(n r^2) total); it stops when the largest remaining
        diagonal is <= rtol * max diag(K), or at max_rank columns.
    eig: full eigendecomposition K = V diag(lambda) V', keeping the eigenvalues
        > rtol * largest (at most max_rank of them, largest first), L = V sqrt(lambda).

    K should be PSD (see mercer_check). Negative eigenvalues (eig) or negative
    remaining diagonals (pivoted Cholesky) are clipped to 0, i.e. the negative
    part of an indefinite K is dropped; the residual shows how much was lost.
    """
    K = _as_square_symmetric(K)
    n = K.shape[0]
    if max_rank is None:
        max_rank = n
    elif not isinstance(max_rank, numbers.Integral) or isinstance(max_rank, bool) \
            or max_rank < 1:
        raise SVMInputError(f"max_rank must be a positive integer or None, got {max_rank!r}")
    max_rank = min(int(max_rank), n)

    if method == "pivoted_cholesky":
        L = _pivoted_cholesky(K, rtol, max_rank)
    elif method == "eig":
        L = _eig_factor(K, rtol, max_rank)
    else:
        raise SVMInputError(
            f"unknown factorization method {method!r}; known: 'pivoted_cholesky', 'eig'"
        )

    norm_K = np.linalg.norm(K)
    residual = float(np.linalg.norm(K - L @ L.T) / norm_K) if norm_K > 0 else 0.0
    return Factor(L=L, rank=L.shape[1], residual=residual, method=method)


def _pivoted_cholesky(K: np.ndarray, rtol: float, max_rank: int) -> np.ndarray:
    n = K.shape[0]
    d = np.clip(np.diag(K).copy(), 0.0, None)  # diagonal of the current Schur complement
    stop = rtol * d.max()
    L = np.zeros((n, max_rank))
    r = 0
    while r < max_rank:
        j = int(np.argmax(d))
        if d[j] <= stop or d[j] <= 0.0:
            break
        col = (K[:, j] - L[:, :r] @ L[j, :r]) / math.sqrt(d[j])
        L[:, r] = col
        d -= col**2
        d[j] = 0.0  # exact: this row is now reproduced, never pick it again
        np.clip(d, 0.0, None, out=d)  # rounding must not create negative "variance"
        r += 1
    return L[:, :r].copy()


def _eig_factor(K: np.ndarray, rtol: float, max_rank: int) -> np.ndarray:
    w, V = scipy.linalg.eigh(K)
    w, V = w[::-1], V[:, ::-1]  # largest first, so max_rank keeps the best ones
    top = w[0]
    keep = w > rtol * top if top > 0 else np.zeros_like(w, dtype=bool)
    keep[max_rank:] = False
    return V[:, keep] * np.sqrt(w[keep])


# --------------------------------------------------------------------------- feature maps


def poly_feature_count(n_features: int, degree: int, coef0: float = 1.0) -> int:
    """Number of columns of poly_feature_map: C(d + Q, Q), or C(d + Q - 1, Q) if coef0 = 0."""
    if coef0 == 0:
        return math.comb(n_features + degree - 1, degree)
    return math.comb(n_features + degree, degree)


def poly_feature_map(X, degree: int, gamma: float = 1.0, coef0: float = 1.0) -> np.ndarray:
    """Explicit Phi with Phi(X) Phi(Z)' = (gamma X Z' + coef0)^degree (to rounding).

    Multinomial expansion of (zeta + gamma sum_j x_j z_j)^Q with zeta = coef0:
    for every multi-index (k_0, k_1, ..., k_d) with k_0 + ... + k_d = Q, one feature

        sqrt( Q! / (k_0! ... k_d!) * zeta^k_0 * gamma^(Q - k_0) ) * prod_j x_j^k_j.

    With coef0 = 0 the terms with k_0 > 0 vanish and are dropped. Columns are in
    graded order: highest power of the constant first. Maps with more than
    MAX_FEATURES columns are refused.
    """
    Kernel("poly", gamma=gamma, degree=degree, coef0=coef0)  # same parameter rules
    X = _as_data(X, "X")
    n, d = X.shape
    count = poly_feature_count(d, degree, coef0)
    _check_feature_count(count, f"poly_feature_map(degree={degree}) on d={d} features")

    # A multi-index is a multiset of size Q drawn from slots 0..d (slot 0 = constant).
    first_slot = 0 if coef0 != 0 else 1
    exponents = np.array(
        [
            np.bincount(combo, minlength=d + 1)
            for combo in itertools.combinations_with_replacement(range(first_slot, d + 1), degree)
        ],
        dtype=int,
    ).reshape(count, d + 1)

    # Integer arithmetic keeps the multinomial coefficients exact.
    multinomial = np.array(
        [math.factorial(degree) // math.prod(math.factorial(k) for k in e) for e in exponents],
        dtype=float,
    )
    k0 = exponents[:, 0]
    weights = np.sqrt(multinomial * float(coef0) ** k0 * float(gamma) ** (degree - k0))

    Phi = np.ones((n, count))
    for j in range(d):  # loop over features, not over pairs of samples
        Phi *= X[:, [j]] ** exponents[None, :, j + 1]
    return Phi * weights


def poly2_feature_map_notes(X, gamma: float = 1.0) -> np.ndarray:
    r"""The explicit degree-2 map of the notes, for K_2(x, x') = (1 + gamma x^T x')^2 (9.27).

    Eq. 9.26 of seed 003:

        Phi_2(x) = (1, sqrt(2 gamma) x_1, ..., sqrt(2 gamma) x_d,
                    gamma x_1 x_1, gamma x_1 x_2, ..., gamma x_d x_d)

    with the quadratic block over all ordered pairs (i, j), as in eq. 9.20
    (x_1 x_2 and x_2 x_1 both appear). Then Phi_2(x)'Phi_2(x') =
    1 + 2 gamma x^T x' + gamma^2 (x^T x')^2 = (1 + gamma x^T x')^2.

    Note: the transcription of 9.26 in the seed lists only the squares
    gamma x_i^2; that map gives 1 + 2 gamma x^T x' + gamma^2 sum_i x_i^2 x_i'^2,
    which is (1 + gamma x^T x')^2 only for d = 1. The cross products are needed.

    1 + d + d^2 columns; poly_feature_map is the compact (symmetric) version.
    """
    Kernel("poly", gamma=gamma, degree=2, coef0=1.0)
    X = _as_data(X, "X")
    n, d = X.shape
    _check_feature_count(1 + d + d * d, f"poly2_feature_map_notes on d={d} features")
    quadratic = (X[:, :, None] * X[:, None, :]).reshape(n, d * d)
    return np.hstack([np.ones((n, 1)), math.sqrt(2.0 * gamma) * X, gamma * quadratic])


def _check_feature_count(count: int, what: str) -> None:
    if count > MAX_FEATURES:
        raise SVMInputError(
            f"{what} would have {count:,} features, more than the limit of "
            f"{MAX_FEATURES:,}; use the kernel (gram) instead of the explicit map"
        )


# --------------------------------------------------------------------------- decision


def decision_function(kernel: Kernel, X_sv, coef, b: float, X_new) -> np.ndarray:
    """f(x) = sum_i coef_i k(x_i, x) + b for every row x of X_new   (9.24 without sign).

    coef_i = alpha_i y_i for the support vectors x_i (rows of X_sv); only these
    are summed, since alpha_i = 0 elsewhere. Returns an array of len(X_new).

    For kernel "precomputed", X_new must be the matrix of kernel values
    k(x_new, x_i), shape (len(X_new), number of support vectors), as in
    sklearn's SVC; X_sv is then ignored.
    """
    coef = np.asarray(coef, dtype=float)
    if coef.ndim != 1:
        raise SVMInputError(f"coef must be a 1-D array (alpha_i y_i), got shape {coef.shape}")
    if np.ndim(b) != 0 or not np.isfinite(b):
        raise SVMInputError(f"b must be a finite real number, got {plain(b)!r}")

    if kernel.name == "precomputed":
        G = _as_data(X_new, "X_new (kernel values k(x_new, x_sv))")
    else:
        X_sv = _as_data(X_sv, "X_sv")
        G = gram(kernel, X_new, X_sv)
    if G.shape[1] != coef.shape[0]:
        raise SVMInputError(
            f"{G.shape[1]} support vectors but {coef.shape[0]} coefficients; they must match"
        )
    return G @ coef + float(b)
