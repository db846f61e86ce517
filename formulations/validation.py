"""The one place where data and parameters are checked before any model is built.

Every public entry point (the Python API, the estimator, the CLI) passes its input
through these functions, so a bad input is refused with the same clear message
wherever it comes in, and no solver ever sees it.

    data         check_X, check_labels, check_data (X two-dimensional, numeric, finite, dense or
                 scipy.sparse, kept sparse as CSR; exactly two labels of any type, mapped to -1/+1
                 with the LabelMap kept; masked arrays with masked entries refused: refuse_masked)
    parameters   check_C, check_sample_C (one C or one per sample), check_kernel, check_choice, check_time_limit, check_options
    kernels      check_gram (square, finite, symmetric, matching y)
    memory       check_memory: an O(n^2) estimate against a budget, before allocation
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from formulations.errors import MemoryBudgetError, SVMInputError, plain
from formulations.kernels import Kernel

#: Default memory budget for O(n^2) objects, as a fraction of the memory available now.
MEMORY_FRACTION = 0.5
#: Environment variable that sets the budget in bytes (e.g. "2e9"), overriding the fraction.
MEMORY_BUDGET_ENV = "SVM_MEMORY_BUDGET"


@dataclass(frozen=True)
class LabelMap:
    """How the user's two labels map to the SVM's -1 / +1."""

    negative: object
    positive: object

    def as_dict(self) -> dict[str, int]:
        return {str(self.negative): -1, str(self.positive): 1}

    def inverse(self, signs: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(signs) > 0, self.positive, self.negative)


def refuse_masked(A, name: str) -> None:
    """A numpy masked array with masked entries is refused: numpy.asarray drops the mask and would use the hidden
    cells as data. One without masked entries is its values."""
    if isinstance(A, np.ma.MaskedArray):
        masked = int(np.ma.count_masked(A))
        if masked:
            raise SVMInputError(f"{name} is a masked array with {masked} masked entr{'y' if masked == 1 else 'ies'}: "
                                "fill or drop them first (numpy would use the hidden values as data)")


def check_X(X, name: str = "X") -> np.ndarray | sp.csr_matrix:
    """Return X as a finite float64 (n, d) array, or raise naming the first bad entry.

    Numbers written as text (a str or object array of "1.5", "-2e3") are read as those numbers, as
    scikit-learn's SVC reads them (its float64 conversion); any other text is refused, named by row and column.
    A scipy.sparse X (matrix or array, any format) comes back as a float64 CSR matrix, never densified
    (check_sparse_X)."""
    if X is None:
        raise SVMInputError(f"{name} is missing (None): pass an n x d array of numbers")
    if sp.issparse(X):
        return check_sparse_X(X, name)
    refuse_masked(X, name)
    try:
        arr = np.asarray(X)
    except ValueError as exc:  # ragged nested lists
        raise SVMInputError(f"{name} must be a rectangular n x d array of numbers: {exc}") from None
    if np.iscomplexobj(arr):
        raise SVMInputError(f"{name} must be real-valued, got complex numbers")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or arr.dtype == bool
    ):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise SVMInputError(f"{name} must be numeric: {_first_non_numeric(arr)}") from None
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
    _check_products_finite(float(np.max(np.abs(arr))), arr.shape[1], name)
    return arr


def products_finite(top: float, d: int) -> bool:
    """Whether x'x is a number in float64 for samples of d features with entries up to `top` in size (kernel
    values, w'x, the checks' products): entries of about 1.3e154 / sqrt(d) and more make it infinite."""
    return math.isfinite(top * top * d)


def _check_products_finite(top: float, d: int, name: str) -> None:
    """products_finite, or an SVMInputError naming the largest entry and a rescaling."""
    if not products_finite(top, d):
        raise SVMInputError(f"{name} has entries up to {top:.3g}: x'x overflows float64 there, so no kernel value or "
                            f"w'x can be computed; rescale {name} (e.g. divide it by {top:.0e})")


def check_sparse_X(X, name: str = "X") -> sp.csr_matrix:
    """A scipy.sparse X as a finite float64 CSR matrix (scipy.sparse.csr_matrix, whatever the input's
    format or matrix/array kind), its stored entries checked; stored zeros are allowed."""
    if np.issubdtype(X.dtype, np.complexfloating):
        raise SVMInputError(f"{name} must be real-valued, got complex numbers")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise SVMInputError(f"{name} must be numeric: a sparse matrix of dtype {X.dtype}")
    if X.ndim != 2:
        raise SVMInputError(f"{name} must be two-dimensional (n samples x d features), got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise SVMInputError(f"{name} is empty (shape {X.shape}): an SVM needs samples and features")
    csr = sp.csr_matrix(X, dtype=np.float64)  # a copy only where the format or dtype differs
    csr.sum_duplicates()  # duplicates would be summed by any product anyway; the checks see the sums
    bad = ~np.isfinite(csr.data)
    if bad.any():
        k = int(np.argmax(bad))
        row = int(np.searchsorted(csr.indptr, k, side="right") - 1)
        kind = "NaN" if np.isnan(csr.data[k]) else "infinity"
        raise SVMInputError(f"{name} contains {kind} at row {row}, column {int(csr.indices[k])} "
                            f"({int(bad.sum())} non-finite entries in all)")
    _check_products_finite(float(np.max(np.abs(csr.data))) if csr.nnz else 0.0, csr.shape[1], name)
    return csr


def check_labels(y, n: int | None = None) -> tuple[np.ndarray, LabelMap]:
    """Map exactly two distinct labels of any type to -1.0 / +1.0.

    The sorted first label becomes -1 and the second +1 (scikit-learn's order of
    `classes_`), so labels that are already {-1, +1} keep their signs.
    """
    arr, classes = _label_classes(y, n)
    if classes.size != 2:
        raise SVMInputError(
            f"y must contain exactly two classes, found {classes.size} class"
            f"{'es' if classes.size != 1 else ''}: {[plain(c) for c in classes[:5]]}"
            f"{' ...' if classes.size > 5 else ''}"
        )
    labels = LabelMap(negative=plain(classes[0]), positive=plain(classes[1]))
    signs = np.where(arr == classes[1], 1.0, -1.0)
    return signs, labels


@dataclass(frozen=True)
class ClassMap:
    """How a multiclass SVM's labels map to the codes 0..k-1 (the sorted classes' order, scikit-learn's `classes_`)."""

    classes: tuple

    def as_dict(self) -> dict[str, int]:
        return {str(c): code for code, c in enumerate(self.classes)}

    def inverse(self, codes: np.ndarray) -> np.ndarray:
        return np.asarray(self.classes, dtype=object)[np.asarray(codes)]


def check_classes(y, n: int | None = None) -> tuple[np.ndarray, ClassMap]:
    """Labels of two or more classes (a multiclass SVM's) as codes 0..k-1, with the ClassMap kept."""
    arr, classes = _label_classes(y, n)
    if classes.size < 2:
        raise SVMInputError(f"y must contain at least two classes for a multiclass SVM, found {classes.size}: "
                            f"{[plain(c) for c in classes]}")
    return np.searchsorted(classes, arr).astype(np.intp), ClassMap(tuple(plain(c) for c in classes))


def _label_classes(y, n: int | None) -> tuple[np.ndarray, np.ndarray]:
    """y as a one-dimensional array of finite labels of one type (matching n rows), and its sorted classes."""
    refuse_masked(y, "y")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = _column_as_1d(arr)
    if arr.ndim != 1:
        raise SVMInputError(f"y must be one-dimensional (shape (n,), or a column (n, 1)), got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise SVMInputError(f"X has {n} rows but y has {arr.shape[0]} labels: they must match")
    if arr.shape[0] == 0:
        raise SVMInputError("y is empty: an SVM needs labelled samples of two classes")
    if np.iscomplexobj(arr):
        raise SVMInputError("y must hold real numbers or strings, got complex numbers")
    if np.issubdtype(arr.dtype, np.number):
        bad = ~np.isfinite(arr.astype(np.float64))
        if bad.any():
            row = int(np.argmax(bad))
            raise SVMInputError(f"y contains a non-finite label ({arr[row]}) at row {row}")
    elif arr.dtype == object:
        for row, value in enumerate(arr):
            if value is None or (isinstance(value, numbers.Real) and not math.isfinite(float(value))):
                raise SVMInputError(f"y has a missing or non-finite label ({plain(value)!r}) at row {row}")
    try:
        classes = np.unique(arr)
    except TypeError:  # labels of mixed types (e.g. 1 and "a") cannot be ordered
        kinds = sorted({type(v).__name__ for v in arr})
        raise SVMInputError(
            f"y mixes label types ({', '.join(kinds)}); use one type for the classes"
        ) from None
    return arr, classes


def _column_as_1d(arr: np.ndarray) -> np.ndarray:
    """A column y (n, 1) as y.ravel(), with scikit-learn's warning (column_or_1d's, as the estimator gives)."""
    import warnings

    from sklearn.exceptions import DataConversionWarning  # lazy: scikit-learn only for this case

    warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
                  "(n_samples,), for example using ravel().", DataConversionWarning, stacklevel=4)
    return arr.ravel()


_INFINITY_WORDS = ("inf", "infinity")


def parse_number(text: str, what: str) -> float:
    """A number typed as text (the command line, the explorer's C box). A value too large for a float is refused,
    not read as infinity: infinity is only ever meant when written as inf (C = inf is the hard margin)."""
    raw = str(text).strip()
    try:
        value = float(raw)
    except ValueError:
        raise SVMInputError(f"{what}: {raw!r} is not a number") from None
    if math.isinf(value) and raw.lstrip("+-").lower() not in _INFINITY_WORDS:
        raise SVMInputError(f"{what}: {raw!r} is too large for a float (it would read as infinity); "
                            f"write inf if infinity is meant")
    return value


def check_C(C, allow_infinite: bool = False) -> float:
    """C > 0 and finite (math.inf only where the hard-margin dual is meant)."""
    if not isinstance(C, numbers.Real) or isinstance(C, bool):
        if not (isinstance(C, np.ndarray) and C.ndim == 0 and np.issubdtype(C.dtype, np.number)):
            raise SVMInputError(f"C must be a number, got {plain(C)!r} ({type(C).__name__})")
    try:
        value = float(C)
    except (TypeError, ValueError):
        raise SVMInputError(f"C must be a number, got {plain(C)!r}") from None
    if math.isnan(value) or value <= 0:
        raise SVMInputError(f"C must be > 0, got {plain(C)!r}")
    if math.isinf(value) and not allow_infinite:
        raise SVMInputError(
            "C must be finite; for the hard margin use the 'hard_primal' formulation "
            "(or the dual with C=inf)"
        )
    return value


def check_sample_C(C, n: int, allow_infinite: bool = False):
    """C as one number (check_C) or as one bound per sample: a length-n array of numbers > 0.

    Per-sample bounds 0 <= alpha_i <= C_i (formulations.penalty) are all finite, or all
    infinite (the hard margin: returned as math.inf); a mixture is refused, since a point
    with C_i = inf and one with a finite C_j make a problem neither soft nor hard.
    Returns a float, or a float64 array of shape (n,).
    """
    if isinstance(C, (numbers.Real, np.generic)) or C is None or isinstance(C, str) \
            or (isinstance(C, np.ndarray) and C.ndim == 0):
        return check_C(C, allow_infinite=allow_infinite)
    values = check_array_numeric(C, "C")
    if values.ndim != 1:
        raise SVMInputError(f"C must be a number or one value per sample (shape ({n},)), got shape {values.shape}")
    if values.shape[0] != n:
        raise SVMInputError(f"C has {values.shape[0]} values but there are {n} samples: one C_i per sample")
    bad = np.isnan(values) | (values <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise SVMInputError(f"C must be > 0 for every sample; C[{i}] = {values[i]:g} "
                            f"({int(bad.sum())} bad values in all)")
    infinite = np.isinf(values)
    if infinite.all():
        return check_C(math.inf, allow_infinite=allow_infinite)
    if infinite.any():
        i = int(np.argmax(infinite))
        raise SVMInputError(f"C[{i}] is infinite but other C_i are finite: per-sample C must be all "
                            "finite (soft margin) or all infinite (hard margin)")
    return values


def check_gram(K, n: int) -> np.ndarray:
    """A precomputed Gram matrix: square, finite, symmetric, matching the labels."""
    arr = check_array_numeric(K, "K")
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


# --------------------------------------------------------------------------- helpers


def _first_non_numeric(arr: np.ndarray) -> str:
    """Name the first entry that is not a number, e.g. "row 2, column 0 is 'abc'"."""
    flat = arr.reshape(-1) if arr.ndim else arr.reshape(1)
    for k, value in enumerate(flat):
        try:
            float(value)
        except (TypeError, ValueError):
            value = value.item() if isinstance(value, np.generic) else value
            where = np.unravel_index(k, arr.shape) if arr.ndim else ()
            if len(where) == 2:
                return f"row {where[0]}, column {where[1]} is {value!r}"
            return f"entry {tuple(int(i) for i in where)} is {value!r}"
    return "an entry is not a number"


def check_array_numeric(A, name: str) -> np.ndarray:
    """A as a float64 array of any shape, or an error naming the first non-number."""
    if sp.issparse(A):  # X alone is taken sparse (check_X); a Gram matrix or the C_i are dense by nature
        raise SVMInputError(f"{name} must be a dense array, got a scipy.sparse matrix (sparse input is taken "
                            f"for X only; SVC refuses a sparse precomputed kernel too): pass {name}.toarray()")
    refuse_masked(A, name)
    try:
        arr = np.asarray(A)
    except ValueError as exc:
        raise SVMInputError(f"{name} must be a rectangular array of numbers: {exc}") from None
    if np.iscomplexobj(arr):
        raise SVMInputError(f"{name} must be real-valued, got complex numbers")
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise SVMInputError(f"{name} must be numeric: {_first_non_numeric(arr)}") from None


def check_choice(what: str, value, choices) -> str:
    """`value` is one of `choices` (formulation, layer, backend, profile, kernel form ...)."""
    choices = list(choices)
    if not isinstance(value, str) or value not in choices:
        raise SVMInputError(f"unknown {what} {value!r}; choose one of {', '.join(map(str, choices))}")
    return value


def check_time_limit(time_limit) -> float | None:
    """None, or a positive finite number of seconds."""
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real) \
            or not math.isfinite(float(time_limit)) or time_limit <= 0:
        raise SVMInputError(f"time_limit must be a positive number of seconds (or None), got {plain(time_limit)!r}")
    return float(time_limit)


def check_options(options) -> dict:
    """Native solver options: None or a dict with string keys."""
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise SVMInputError(f"options must be a dict of solver option names to values, got {options!r}")
    return dict(options)


def check_kernel(kernel):
    """A `formulations.kernels.Kernel` from a Kernel, a name, or a dict of its fields.

    The Kernel constructor is where the parameter rules live (gamma > 0, degree a
    positive integer, coef0 >= 0 for poly); this only normalises the ways to ask.
    """
    if kernel is None:
        return Kernel("linear")
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        return Kernel(kernel)
    if isinstance(kernel, dict):
        unknown = set(kernel) - {"name", "gamma", "degree", "coef0"}
        if unknown or "name" not in kernel:
            raise SVMInputError(
                f"a kernel dict needs 'name' and may hold 'gamma', 'degree', 'coef0'; got keys {sorted(kernel)}"
            )
        return Kernel(**kernel)
    raise SVMInputError(f"kernel must be a Kernel, a kernel name or a dict, got {kernel!r}")


# --------------------------------------------------------------------------- memory


def memory_budget(budget: float | None = None) -> float:
    """Bytes that O(n^2) objects may take: `budget`, else $SVM_MEMORY_BUDGET, else half the free memory."""
    if budget is not None:
        value = float(budget)
        if not value > 0:
            raise SVMInputError(f"memory budget must be a positive number of bytes, got {budget!r}")
        return value
    env = os.environ.get(MEMORY_BUDGET_ENV)
    if env:
        try:
            return float(env)
        except ValueError:
            raise SVMInputError(f"${MEMORY_BUDGET_ENV} must be a number of bytes, got {env!r}") from None
    import psutil

    return MEMORY_FRACTION * psutil.virtual_memory().available


def gram_bytes(n: int, layer: str = "cvxpy", kernel_form: str = "dense") -> float:
    """Rough peak memory of the kernel dual on n samples, in bytes.

    numpy needs about four n x n float64 arrays at once (K, the distance or inner
    product temporaries, the eigenvalue check's copy): 32 n^2 bytes. A dense
    quadratic form then costs per term: about 300 bytes per Pyomo expression term,
    about 50 per cvxpy/scipy sparse entry. The factor form needs an n x r factor
    instead (r <= n), counted as another n^2 array.
    """
    per_entry = 32.0
    if kernel_form == "dense":
        per_entry += 300.0 if layer == "pyomo" else 50.0
    else:
        per_entry += 8.0
    return per_entry * float(n) * float(n)


def _human_bytes(count: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def check_memory(n: int, what: str, *, layer: str = "cvxpy", kernel_form: str = "dense",
                 budget: float | None = None) -> float:
    """Refuse an O(n^2) object before it is allocated if it would not fit the budget."""
    need = gram_bytes(n, layer, kernel_form)
    allowed = memory_budget(budget)
    if need > allowed:
        raise MemoryBudgetError(
            f"{what} on n = {n:,} samples would need about {_human_bytes(need)} "
            f"(O(n^2)), more than the memory budget of {_human_bytes(allowed)}; use fewer "
            f"samples, the linear 'dual' or 'soft_primal' formulation (O(n d)), or raise the "
            f"budget (${MEMORY_BUDGET_ENV} in bytes)"
        )
    return need
