"""Data sets for the SVM experiments, each one returned as a :class:`Dataset`.

Where each data set comes from:

* ``example_5_1``, ``exercise_5_4``, ``exercise_5_5``: typed in digit by digit from
  the University of Pisa course notes (G. Mastroeni, M. Passacantando, "Support Vector
  Machines for supervised classification problems", seed ``001_e078ff43bd63a81d.txt``).
  The rows of A get label +1 and the rows of B label -1, A first, as in the notes'
  MATLAB code ``T = [A; B]``.

  - Example 5.1 (hard-margin primal) and Example 5.2 (the same data through the dual):
    30 + 30 points, linearly separable; the notes publish
    w = (-0.9229, 0.7627), b = 1.1976.
  - Exercise 5.4 (soft margin, C = 10): 28 + 28 points, printed in full and copied
    as printed. As it happens, A is Example 5.1's A without rows 1 and 28, and B is
    Example 5.1's B without rows 1, 25 and 28 plus a last row (6, 8) deep on A's
    side, which alone makes the set not linearly separable.
  - Exercise 5.5 (Gaussian kernel, C = 1, gamma = 1): 20 + 20 points, A inside the
    unit disc and B around it.

* ``perceptron_slides``: the 4-point worked example of the single-sample perceptron in
  the Iowa State slides (F. S. Bao, CS 474/574, seed ``002_725cbac91910d465.txt``).
  The slides list the points in one order, but the notebook that produced their final
  answer W14 = (-3, 0, 2) (``perceptron.ipynb`` in github.com/forrestbao/MLClass)
  ran them in another; ``order`` picks which (see :func:`perceptron_slides`).

* ``gendata``: in the spirit of ``gendata(Np, Nn)`` in A. Vedaldi's MATLAB SVM demo
  (seed ``000_db8fc39a57f8f78a.txt``), which feeds ``svmdemo_linear`` and
  ``svmdemo_rbf``: two 2-D classes that a circle separates and a line does not.
  The notes do not print the MATLAB code, so the arrangement here (a central blob of
  positives inside a ring of negatives) is our own.

* ``separable``, ``overlapping``, ``nonlinear``, ``sparse_features``: seeded synthetic
  generators of any size, written for this project.

* ``hard``: scikit-learn's ``make_classification`` as a user's data come: several clusters per class,
  redundant features (X of lower rank than d), flipped labels, unbalanced classes, weak separation,
  standardized. Many points end on or inside the margin (about 58% bound support vectors at C = 1).

* ``digits_parity``, ``wine_one_vs_rest``, ``iris_one_vs_rest``: scikit-learn's bundled digits (even
  against odd), wine and iris (one class against the others), standardized, as two-class problems.

* ``breast_cancer``: the Wisconsin Diagnostic Breast Cancer data shipped inside
  scikit-learn (``sklearn.datasets.load_breast_cancer``, no download), standardized.

Conventions: ``X`` is float64 of shape (n, d), ``y`` is float64 with values exactly
-1.0 and +1.0. Synthetic generators put the +1 rows first, then the -1 rows (like the
lecture data); ``gendata`` takes both class sizes, the others split ``n`` evenly
(n // 2 negatives, the remainder positive).
Randomness always comes from ``numpy.random.default_rng(seed)``, never global state.
"""

from __future__ import annotations

import hashlib
import inspect
import numbers
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from formulations.errors import SVMInputError, plain
from formulations.kernels import exact_number

__all__ = [
    "DATASETS",
    "Dataset",
    "breast_cancer",
    "example_5_1",
    "exercise_5_4",
    "exercise_5_5",
    "gendata",
    "digits_parity",
    "hard",
    "iris_one_vs_rest",
    "load_dataset",
    "nonlinear",
    "overlapping",
    "perceptron_slides",
    "separable",
    "sparse_features",
    "wine_one_vs_rest",
]

_PISA_NOTES = "001_e078ff43bd63a81d.txt"
_ISU_SLIDES = "002_725cbac91910d465.txt"
_VEDALDI_DEMO = "000_db8fc39a57f8f78a.txt"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled binary classification data set.

    Attributes:
        name: identifier; synthetic sets encode their parameters,
            e.g. ``"overlapping(n=200,d=2,seed=0)"``.
        X: float64 array of shape (n, d), one row per point.
        y: float64 array of shape (n,), values exactly -1.0 or +1.0.
        description: one or two sentences for a report.
        source: where the numbers come from (file and section, or generator).
        feature_names: the columns' names where the data have them (a CSV's header), else ().

    The arrays are copied and made read-only, so a shared data set (the lecture
    data are rebuilt on each call anyway) cannot be changed behind a caller's back.
    ``eq=False`` because elementwise array comparison has no single truth value.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    description: str
    source: str
    feature_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        X = np.array(self.X, dtype=np.float64)
        y = np.array(self.y, dtype=np.float64)
        if X.ndim != 2:
            raise SVMInputError(f"dataset {self.name!r}: X must be 2-D (n, d), got shape {X.shape}")
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise SVMInputError(
                f"dataset {self.name!r}: y must have shape ({X.shape[0]},) to match X, "
                f"got {y.shape}"
            )
        if not np.all(np.isfinite(X)):
            raise SVMInputError(f"dataset {self.name!r}: X contains NaN or infinite values")
        bad = np.flatnonzero((y != 1.0) & (y != -1.0))
        if bad.size:
            raise SVMInputError(
                f"dataset {self.name!r}: labels must be -1 or +1; row {bad[0]} has {plain(y[bad[0]])!r}"
            )
        X.setflags(write=False)
        y.setflags(write=False)
        # Frozen dataclass: the validated copies go in through object.__setattr__.
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    @cached_property
    def fingerprint(self) -> str:
        """A content hash of the data (shape, X and y as float64): equal only for the same numbers.
        Computed once (the arrays are read-only); the runner keys its tasks and run.json by it."""
        digest = hashlib.sha256(repr(self.X.shape).encode())
        digest.update(np.ascontiguousarray(self.X).tobytes())
        digest.update(np.ascontiguousarray(self.y).tobytes())
        return digest.hexdigest()[:12]

    @property
    def n(self) -> int:
        """Number of points."""
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.X.shape[1])

    def __repr__(self) -> str:
        n_pos = int(np.sum(self.y > 0))
        return f"Dataset({self.name!r}, n={self.n}, d={self.d}, +1: {n_pos}, -1: {self.n - n_pos})"


# ---------------------------------------------------------------------------------
# Lecture data, copied as printed in 001_e078ff43bd63a81d.txt (A: label +1, B: -1).
# ---------------------------------------------------------------------------------

# fmt: off
_EXAMPLE_5_1_A = (
    ( 0.4952,  6.8088),
    ( 2.6505,  8.9590),
    ( 3.4403,  5.3366),
    ( 3.4010,  6.1624),
    ( 5.2153,  8.2529),
    ( 7.6393,  9.4764),
    ( 1.5041,  3.3370),
    ( 3.9855,  8.3138),
    ( 1.8500,  5.0079),
    ( 1.2631,  8.6463),
    ( 3.8957,  4.9014),
    ( 1.9751,  8.6199),
    ( 1.2565,  6.4558),
    ( 4.3732,  6.1261),
    ( 0.4297,  8.3551),
    ( 3.6931,  6.6134),
    ( 7.8164,  9.8767),
    ( 4.8561,  8.7376),
    ( 6.7750,  7.9386),
    ( 2.3734,  4.7740),
    ( 0.8746,  3.0892),
    ( 2.3088,  9.0919),
    ( 2.5520,  9.0469),
    ( 3.3773,  6.1886),
    ( 0.8690,  3.7550),
    ( 1.8738,  8.1053),
    ( 0.9469,  5.1476),
    ( 0.9718,  5.5951),
    ( 0.4309,  7.5763),
    ( 2.2699,  7.1371),
)

_EXAMPLE_5_1_B = (
    ( 7.2450,  3.4422),
    ( 7.7030,  5.0965),
    ( 5.7670,  2.8791),
    ( 3.6610,  1.5002),
    ( 9.4633,  6.5084),
    ( 9.8221,  1.9383),
    ( 8.2874,  4.9380),
    ( 5.9078,  0.4489),
    ( 4.9810,  0.5962),
    ( 5.1516,  0.5319),
    ( 8.4363,  5.9467),
    ( 8.4240,  4.9696),
    ( 7.6240,  1.7988),
    ( 3.4473,  0.2725),
    ( 9.0528,  4.7106),
    ( 9.1046,  3.2798),
    ( 6.9110,  0.1745),
    ( 5.1235,  3.3181),
    ( 7.5051,  3.3392),
    ( 6.3283,  4.1555),
    ( 6.1585,  1.5058),
    ( 8.3827,  7.2617),
    ( 5.2841,  2.7510),
    ( 5.1412,  1.9314),
    ( 6.0290,  1.9818),
    ( 5.8863,  1.0087),
    ( 9.5110,  1.3298),
    ( 9.3170,  1.0890),
    ( 6.5170,  1.4606),
    ( 9.8621,  4.3674),
)

_EXERCISE_5_4_A = (
    ( 2.6505,  8.9590),
    ( 3.4403,  5.3366),
    ( 3.4010,  6.1624),
    ( 5.2153,  8.2529),
    ( 7.6393,  9.4764),
    ( 1.5041,  3.3370),
    ( 3.9855,  8.3138),
    ( 1.8500,  5.0079),
    ( 1.2631,  8.6463),
    ( 3.8957,  4.9014),
    ( 1.9751,  8.6199),
    ( 1.2565,  6.4558),
    ( 4.3732,  6.1261),
    ( 0.4297,  8.3551),
    ( 3.6931,  6.6134),
    ( 7.8164,  9.8767),
    ( 4.8561,  8.7376),
    ( 6.7750,  7.9386),
    ( 2.3734,  4.7740),
    ( 0.8746,  3.0892),
    ( 2.3088,  9.0919),
    ( 2.5520,  9.0469),
    ( 3.3773,  6.1886),
    ( 0.8690,  3.7550),
    ( 1.8738,  8.1053),
    ( 0.9469,  5.1476),
    ( 0.4309,  7.5763),
    ( 2.2699,  7.1371),
)

_EXERCISE_5_4_B = (
    ( 7.7030,  5.0965),
    ( 5.7670,  2.8791),
    ( 3.6610,  1.5002),
    ( 9.4633,  6.5084),
    ( 9.8221,  1.9383),
    ( 8.2874,  4.9380),
    ( 5.9078,  0.4489),
    ( 4.9810,  0.5962),
    ( 5.1516,  0.5319),
    ( 8.4363,  5.9467),
    ( 8.4240,  4.9696),
    ( 7.6240,  1.7988),
    ( 3.4473,  0.2725),
    ( 9.0528,  4.7106),
    ( 9.1046,  3.2798),
    ( 6.9110,  0.1745),
    ( 5.1235,  3.3181),
    ( 7.5051,  3.3392),
    ( 6.3283,  4.1555),
    ( 6.1585,  1.5058),
    ( 8.3827,  7.2617),
    ( 5.2841,  2.7510),
    ( 5.1412,  1.9314),
    ( 5.8863,  1.0087),
    ( 9.5110,  1.3298),
    ( 6.5170,  1.4606),
    ( 9.8621,  4.3674),
    ( 6.0000,  8.0000),
)

_EXERCISE_5_5_A = (
    ( 0.0113,  0.2713),
    ( 0.9018, -0.1121),
    ( 0.2624, -0.2899),
    ( 0.3049,  0.2100),
    (-0.2255, -0.7156),
    (-0.9497, -0.1578),
    (-0.6318,  0.4516),
    (-0.2593,  0.6831),
    ( 0.4685,  0.1421),
    (-0.4694,  0.8492),
    (-0.5525, -0.2529),
    (-0.8250,  0.2802),
    ( 0.4463, -0.3051),
    ( 0.3212, -0.2323),
    ( 0.2547, -0.9567),
    ( 0.4917,  0.6262),
    (-0.2334,  0.2346),
    ( 0.1510,  0.0601),
    (-0.4499, -0.5027),
    (-0.0967, -0.5446),
)

_EXERCISE_5_5_B = (
    ( 1.2178,  1.9444),
    (-1.8800,  0.1427),
    (-1.6517,  1.2084),
    ( 1.9566, -1.7322),
    ( 1.7576, -1.9273),
    ( 0.7354,  1.1349),
    ( 0.1366,  1.5414),
    ( 1.5960,  0.5038),
    (-1.4485, -1.1288),
    (-1.2714, -1.8327),
    (-1.5722,  0.4658),
    ( 1.7586, -0.5822),
    (-0.3575,  1.9374),
    ( 1.7823,  0.7066),
    ( 1.9532,  1.0673),
    (-1.0233, -0.8180),
    ( 1.0021,  0.3341),
    ( 0.0473, -1.6696),
    ( 0.8783,  1.9846),
    (-0.5819,  1.8850),
)
# fmt: on


def _from_a_b(name: str, a: tuple, b: tuple, description: str, source: str) -> Dataset:
    """Stack A over B with labels +1 / -1, as the notes' ``T = [A; B]``."""
    A = np.asarray(a, dtype=np.float64)
    B = np.asarray(b, dtype=np.float64)
    X = np.vstack([A, B])
    y = np.concatenate([np.ones(len(A)), -np.ones(len(B))])
    return Dataset(name=name, X=X, y=y, description=description, source=source)


def example_5_1() -> Dataset:
    """The 30 + 30 points of Example 5.1 (hard-margin primal) and Example 5.2 (dual).

    Linearly separable; the notes' quadprog answer is w = (-0.9229, 0.7627),
    b = 1.1976.
    """
    return _from_a_b(
        "example_5_1",
        _EXAMPLE_5_1_A,
        _EXAMPLE_5_1_B,
        "Lecture data of Examples 5.1 and 5.2: 30 points of A (+1) and 30 of B (-1) in "
        "[0, 10]^2, linearly separable; published hard-margin solution "
        "w = (-0.9229, 0.7627), b = 1.1976.",
        f"{_PISA_NOTES} Example 5.1 (also used by Example 5.2)",
    )


def exercise_5_4() -> Dataset:
    """The 28 + 28 points of Exercise 5.4 (soft margin, C = 10).

    Not linearly separable: the last row of B is (6, 8), on A's side.
    """
    return _from_a_b(
        "exercise_5_4",
        _EXERCISE_5_4_A,
        _EXERCISE_5_4_B,
        "Lecture data of Exercise 5.4 (soft-margin SVM, C = 10): 28 points of A (+1) and "
        "28 of B (-1); B's last point (6, 8) lies among A, so the set is not linearly "
        "separable.",
        f"{_PISA_NOTES} Exercise 5.4",
    )


def exercise_5_5() -> Dataset:
    """The 20 + 20 points of Exercise 5.5 (Gaussian kernel, C = 1, gamma = 1)."""
    return _from_a_b(
        "exercise_5_5",
        _EXERCISE_5_5_A,
        _EXERCISE_5_5_B,
        "Lecture data of Exercise 5.5 (Gaussian-kernel SVM, C = 1, gamma = 1): 20 points "
        "of A (+1) near the origin and 20 of B (-1) around them in [-2, 2]^2.",
        f"{_PISA_NOTES} Exercise 5.5",
    )


def perceptron_slides(order: Literal["slides", "notebook"] = "slides") -> Dataset:
    """The 4-point single-sample perceptron example of the Iowa State slides.

    ``order="slides"`` lists the points as the slides print them:
    x1 = (0, 0), x2 = (0, 1) with y = +1 and x3 = (1, 0), x4 = (1, 1) with y = -1.
    From W = 0 with rho = 1 the single-sample perceptron then stops after 9 sample
    visits at W = (-2, 0, 1), the vector whose four margins are all 1 as the slides'
    check says.

    ``order="notebook"`` swaps x3 and x4, the order used by the notebook that produced
    the slides' final answer: there the run takes 14 sample visits and ends at
    W14 = (-3, 0, 2) (margins 2, 2, 1, 1).
    """
    if order == "slides":
        X = [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
    elif order == "notebook":
        X = [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 0.0)]
    else:
        raise SVMInputError(f"order must be 'slides' or 'notebook', got {order!r}")
    name = "perceptron_slides" if order == "slides" else "perceptron_slides(order=notebook)"
    return Dataset(
        name=name,
        X=np.array(X),
        y=np.array([1.0, 1.0, -1.0, -1.0]),
        description="The 4-point worked example of the single-sample perceptron "
        f"(points in the {order} order): (0,0), (0,1) labelled +1 and (1,0), (1,1) "
        "labelled -1; separated by the line x1 = 1/2.",
        source=f"{_ISU_SLIDES} 'An example of single-sample perceptron algorithm'",
    )


# ---------------------------------------------------------------------------------
# Synthetic generators
# ---------------------------------------------------------------------------------


def _check_int(name: str, value: object, minimum: int) -> int:
    """Accept Python or NumPy integers (not bools) no smaller than ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SVMInputError(f"{name} must be an integer >= {minimum}, got {plain(value)!r}")
    return int(value)


def _check_nonneg(name: str, value: object, strict: bool = False) -> float:
    """Accept finite real numbers >= 0 (> 0 when ``strict``)."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SVMInputError(f"{name} must be a number, got {plain(value)!r}") from None
    if not np.isfinite(v) or v < 0 or (strict and v == 0):
        bound = "> 0" if strict else ">= 0"
        raise SVMInputError(f"{name} must be finite and {bound}, got {plain(value)!r}")
    return v


def _class_sizes(n: int) -> tuple[int, int]:
    """Balanced split: n // 2 negatives, the remainder positive."""
    n_neg = n // 2
    return n - n_neg, n_neg


def _labels(n_pos: int, n_neg: int) -> np.ndarray:
    return np.concatenate([np.ones(n_pos), -np.ones(n_neg)])


def _annulus(rng: np.random.Generator, m: int, r_min: float, r_max: float) -> np.ndarray:
    """``m`` points uniform in area on the annulus r_min <= r <= r_max (a disc if r_min = 0)."""
    theta = rng.uniform(0.0, 2.0 * np.pi, size=m)
    # sqrt of a uniform on [r_min^2, r_max^2] makes the density uniform in area.
    r = np.sqrt(rng.uniform(r_min**2, r_max**2, size=m))
    return np.column_stack([r * np.cos(theta), r * np.sin(theta)])


def gendata(n_pos: int, n_neg: int, seed: int = 0) -> Dataset:
    """Two 2-D classes for the linear vs Gaussian-kernel demos, like the MATLAB ``gendata``.

    Positives fill the disc of radius 1 around the origin, negatives the ring
    1.5 <= r <= 2.5 around it, both with Gaussian noise of standard deviation 0.1.
    A circle separates them, a line cannot: a linear SVM needs slack, an RBF SVM does
    not. +1 rows come first.
    """
    n_pos = _check_int("n_pos", n_pos, 1)
    n_neg = _check_int("n_neg", n_neg, 1)
    seed = _check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    noise = 0.1
    pos = _annulus(rng, n_pos, 0.0, 1.0)
    neg = _annulus(rng, n_neg, 1.5, 2.5)
    X = np.vstack([pos, neg]) + noise * rng.standard_normal((n_pos + n_neg, 2))
    return Dataset(
        name=f"gendata(n_pos={n_pos},n_neg={n_neg},seed={seed})",
        X=X,
        y=_labels(n_pos, n_neg),
        description=f"{n_pos} positives in a central disc of radius 1 and {n_neg} "
        "negatives on the ring 1.5 <= r <= 2.5, noise sd 0.1: separable by a circle, "
        "not by a line.",
        source=f"synthetic, after gendata(Np, Nn) of the MATLAB SVM demo ({_VEDALDI_DEMO})",
    )


def separable(n: int, d: int = 2, seed: int = 0, margin: float = 0.5) -> Dataset:
    """``n`` points in ``d`` dimensions that a hyperplane separates with a gap of ``margin``.

    A random unit normal ``u`` and offset ``c`` define the hyperplane
    u'(x - c) = 0. Points are drawn from N(c, 4 I); then each point's component along
    ``u`` is replaced by ``+-(margin / 2 + |N(0, 1)|)``, so every positive sits at
    distance >= margin / 2 on one side and every negative on the other. Hence the
    hard-margin SVM is feasible by construction, with geometric margin >= margin / 2.
    """
    n = _check_int("n", n, 2)
    d = _check_int("d", d, 1)
    margin = _check_nonneg("margin", margin, strict=True)
    seed = _check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    n_pos, n_neg = _class_sizes(n)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    c = rng.uniform(-1.0, 1.0, size=d)
    Z = 2.0 * rng.standard_normal((n, d))
    side = _labels(n_pos, n_neg)
    # Replace the component along u: shifting points out of the slab is what makes
    # separability a guarantee rather than a likely outcome.
    along = side * (margin / 2.0 + np.abs(rng.standard_normal(n)))
    Z += np.outer(along - Z @ u, u)
    return Dataset(
        name=f"separable(n={n},d={d},seed={seed},margin={exact_number(margin)})",
        X=Z + c,
        y=side,
        description=f"{n} points in R^{d}, linearly separable by construction: no point "
        f"lies within {margin / 2:g} of a random hyperplane.",
        source="synthetic: experiments/datasets.py separable()",
    )


def overlapping(n: int, d: int = 2, seed: int = 0) -> Dataset:
    """Two overlapping Gaussian blobs: N(+mu, I) for +1 and N(-mu, I) for -1.

    ``mu`` has norm 1 (means 2 apart, one standard deviation each side), so a linear
    classifier errs on about 16% of the points and the hard-margin SVM is infeasible
    for all but tiny n.
    """
    n = _check_int("n", n, 2)
    d = _check_int("d", d, 1)
    seed = _check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    n_pos, n_neg = _class_sizes(n)
    mu = np.full(d, 1.0 / np.sqrt(d))
    y = _labels(n_pos, n_neg)
    X = rng.standard_normal((n, d)) + np.outer(y, mu)
    return Dataset(
        name=f"overlapping(n={n},d={d},seed={seed})",
        X=X,
        y=y,
        description=f"{n} points in R^{d} from two unit-covariance Gaussians whose means "
        "are 2 apart: the classes overlap, so a soft margin is needed.",
        source="synthetic: experiments/datasets.py overlapping()",
    )


def nonlinear(n: int, seed: int = 0, noise: float = 0.1) -> Dataset:
    """Two interleaving half-moons in 2-D (not linearly separable).

    +1: (cos t, sin t), -1: (1 - cos t, 1/2 - sin t), t uniform on [0, pi], plus
    Gaussian noise of standard deviation ``noise``. Each moon's tip reaches into the
    other's hollow, so no line separates them even without noise.
    """
    n = _check_int("n", n, 2)
    noise = _check_nonneg("noise", noise)
    seed = _check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    n_pos, n_neg = _class_sizes(n)
    t_pos = rng.uniform(0.0, np.pi, size=n_pos)
    t_neg = rng.uniform(0.0, np.pi, size=n_neg)
    pos = np.column_stack([np.cos(t_pos), np.sin(t_pos)])
    neg = np.column_stack([1.0 - np.cos(t_neg), 0.5 - np.sin(t_neg)])
    X = np.vstack([pos, neg]) + noise * rng.standard_normal((n, 2))
    return Dataset(
        name=f"nonlinear(n={n},seed={seed},noise={exact_number(noise)})",
        X=X,
        y=_labels(n_pos, n_neg),
        description=f"{n} points on two interleaving half-moons (noise sd {noise:g}): "
        "not linearly separable, a kernel is needed.",
        source="synthetic: experiments/datasets.py nonlinear()",
    )


def sparse_features(n: int, d: int = 50, n_informative: int = 3, seed: int = 0) -> Dataset:
    """``d`` standard-normal features of which only ``n_informative`` carry the label.

    The informative columns (chosen at random, listed in the description) are shifted
    by +1 for the +1 class and -1 for the -1 class; the other columns are pure noise.
    Useful to see a linear SVM put its weight on the few columns that matter.
    """
    n = _check_int("n", n, 2)
    d = _check_int("d", d, 1)
    n_informative = _check_int("n_informative", n_informative, 1)
    if n_informative > d:
        raise SVMInputError(f"n_informative must be <= d={d}, got {n_informative}")
    seed = _check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    n_pos, n_neg = _class_sizes(n)
    y = _labels(n_pos, n_neg)
    informative = np.sort(rng.choice(d, size=n_informative, replace=False))
    X = rng.standard_normal((n, d))
    X[:, informative] += y[:, None]
    return Dataset(
        name=f"sparse_features(n={n},d={d},n_informative={n_informative},seed={seed})",
        X=X,
        y=y,
        description=f"{n} points in R^{d}; only columns {informative.tolist()} "
        "(0-based) depend on the label (mean +-1), the rest are N(0, 1) noise.",
        source="synthetic: experiments/datasets.py sparse_features()",
    )


def hard(n: int, d: int = 20, seed: int = 0, clusters: int = 2, flip: float = 0.1, separation: float = 0.8,
         positive: float = 0.55) -> Dataset:
    """Noisy, clustered, unbalanced data of rank below d: ``sklearn.datasets.make_classification`` with
    max(1, 2d/5) informative features, d/5 redundant ones (linear combinations of those), ``clusters``
    clusters per class, a fraction ``flip`` of the labels drawn at random, class_sep ``separation`` and a
    share ``positive`` of the +1 class, then each feature standardized (mean 0, std 1). The defaults at
    n = 1e6 make a hard case for the proof of the optimum: nearly every support vector bound, a few free
    ones, X of rank below d (docs/hard_family.md). Rows come in make_classification's order."""
    from sklearn.datasets import make_classification  # heavy import, only when asked

    n = _check_int("n", n, 2)
    d = _check_int("d", d, 2)
    seed = _check_int("seed", seed, 0)
    clusters = _check_int("clusters", clusters, 1)
    if not 0.0 <= flip < 1.0:
        raise SVMInputError(f"flip must be in [0, 1), got {flip!r}")
    separation = _check_nonneg("separation", separation, strict=True)
    if not 0.0 < positive < 1.0:
        raise SVMInputError(f"positive must be in (0, 1), got {positive!r}")
    informative = max(1, 2 * d // 5)
    redundant = min(d // 5, d - informative)
    if 2 * clusters > 2 ** informative:
        raise SVMInputError(f"{clusters} clusters per class need more than {informative} informative features "
                            f"(2 x clusters <= 2^informative); raise d")
    X, label = make_classification(n_samples=n, n_features=d, n_informative=informative, n_redundant=redundant,
                                   n_clusters_per_class=clusters, flip_y=flip, class_sep=separation,
                                   weights=[1.0 - positive, positive], random_state=seed)
    X = X - X.mean(axis=0)
    spread = X.std(axis=0)
    X = X / np.where(spread > 0, spread, 1.0)
    y = np.where(label == 1, 1.0, -1.0)
    return Dataset(
        name=f"hard(n={n},d={d},seed={seed},clusters={clusters},flip={flip},separation={separation},"
             f"positive={positive})",
        X=X,
        y=y,
        description=f"{n} points in R^{d} from make_classification: {informative} informative and {redundant} "
        f"redundant features, {clusters} clusters per class, {flip:.0%} of the labels at random, class_sep "
        f"{separation}, {positive:.0%} of the +1 class; standardized.",
        source="synthetic: sklearn.datasets.make_classification via experiments/datasets.py hard()",
    )


def breast_cancer() -> Dataset:
    """Wisconsin Diagnostic Breast Cancer: 569 points, 30 features, standardized.

    Ships with scikit-learn, so no download. Malignant (sklearn target 0) becomes +1,
    benign (target 1) becomes -1. Each feature is centred and scaled to unit standard
    deviation (population std, ddof=0) over the whole set, because the raw features
    differ by four orders of magnitude and would make the QPs badly scaled.
    """
    from sklearn.datasets import load_breast_cancer  # heavy import, only when asked

    raw = load_breast_cancer()
    X = np.asarray(raw.data, dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.where(raw.target == 0, 1.0, -1.0)
    return Dataset(
        name="breast_cancer",
        X=X,
        y=y,
        description="Wisconsin Diagnostic Breast Cancer (569 tumours, 30 features), "
        "features standardized to mean 0 and standard deviation 1; malignant = +1 "
        "(212), benign = -1 (357).",
        source="sklearn.datasets.load_breast_cancer (UCI Breast Cancer Wisconsin "
        "(Diagnostic), bundled with scikit-learn)",
    )


def _standardized(X: np.ndarray) -> np.ndarray:
    """Each feature centred and scaled to unit standard deviation (ddof=0); a constant one only centred."""
    X = np.asarray(X, dtype=np.float64)
    X = X - X.mean(axis=0)
    spread = X.std(axis=0)
    return X / np.where(spread > 0, spread, 1.0)


def digits_parity() -> Dataset:
    """scikit-learn's handwritten digits (1,797 images of 8 x 8 pixels) as even (+1) against odd (-1),
    the pixels standardized (the always-blank ones only centred)."""
    from sklearn.datasets import load_digits  # heavy import, only when asked

    raw = load_digits()
    y = np.where(raw.target % 2 == 0, 1.0, -1.0)
    return Dataset(name="digits_parity", X=_standardized(raw.data), y=y,
                   description="handwritten digits 0-9 (1,797 images, 64 pixels), even = +1 "
                   f"({int((y > 0).sum())}), odd = -1 ({int((y < 0).sum())}); pixels standardized.",
                   source="sklearn.datasets.load_digits (UCI optical recognition of handwritten digits, "
                   "bundled with scikit-learn)")


def _one_vs_rest(name: str, loader: str, target: int, about: str) -> Dataset:
    import sklearn.datasets  # heavy import, only when asked

    raw = getattr(sklearn.datasets, loader)()
    if target not in set(raw.target.tolist()):
        raise SVMInputError(f"{name}: no class {target!r}; classes {sorted(set(raw.target.tolist()))}")
    y = np.where(raw.target == target, 1.0, -1.0)
    return Dataset(name=f"{name}(target={target})", X=_standardized(raw.data), y=y,
                   description=f"{about}: class {raw.target_names[target]} = +1 ({int((y > 0).sum())}) against the "
                   f"others = -1 ({int((y < 0).sum())}); features standardized.",
                   source=f"sklearn.datasets.{loader} (bundled with scikit-learn)")


def wine_one_vs_rest(target: int = 1) -> Dataset:
    """scikit-learn's wine data (178 wines, 13 measurements, 3 cultivars): one cultivar against the others."""
    target = _check_int("target", target, 0)
    return _one_vs_rest("wine_one_vs_rest", "load_wine", target, "wine (178 wines, 13 measurements)")


def iris_one_vs_rest(target: int = 1) -> Dataset:
    """scikit-learn's iris (150 flowers, 4 measurements): one species against the others (versicolor, the
    default, is not linearly separable from the other two)."""
    target = _check_int("target", target, 0)
    return _one_vs_rest("iris_one_vs_rest", "load_iris", target, "iris (150 flowers, 4 measurements)")


# ---------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------

DATASETS: dict[str, Callable[..., Dataset]] = {
    "example_5_1": example_5_1,
    "exercise_5_4": exercise_5_4,
    "exercise_5_5": exercise_5_5,
    "perceptron_slides": perceptron_slides,
    "gendata": gendata,
    "separable": separable,
    "overlapping": overlapping,
    "nonlinear": nonlinear,
    "sparse_features": sparse_features,
    "hard": hard,
    "breast_cancer": breast_cancer,
    "digits_parity": digits_parity,
    "wine_one_vs_rest": wine_one_vs_rest,
    "iris_one_vs_rest": iris_one_vs_rest,
}


def load_dataset(name: str, **params: object) -> Dataset:
    """Build the data set registered as ``name`` with keyword ``params``.

    Raises:
        SVMInputError: if the name is unknown (the message lists the known names) or
            the parameters do not fit the generator's signature (names and types: check_params).
    """
    check_params(name, params)
    return DATASETS[name](**params)


def check_params(name: str, params: dict, partial: bool = False) -> None:
    """The parameters of data set `name` by name and type (an int for an int, a number for a float, one of a
    Literal's values): SVMInputError naming the first that does not fit. The generators check the values.
    `partial`: some required parameters may be still to come (the command line's defaults fill them in)."""
    try:
        factory = DATASETS[name]
    except (KeyError, TypeError):
        known = ", ".join(DATASETS)
        raise SVMInputError(f"unknown dataset {name!r}; known datasets: {known}") from None
    signature = inspect.signature(factory)
    try:
        (signature.bind_partial if partial else signature.bind)(**params)
    except TypeError as exc:
        raise SVMInputError(f"dataset {name!r} takes parameters {signature}: {exc}") from None
    hints = typing.get_type_hints(factory)
    for key, value in params.items():
        wanted = hints.get(key)
        if wanted is int:
            fits, kind = isinstance(value, numbers.Integral) and not isinstance(value, bool), "an integer"
        elif wanted is float:
            fits, kind = isinstance(value, numbers.Real) and not isinstance(value, bool), "a number"
        elif typing.get_origin(wanted) is typing.Literal:
            choices = typing.get_args(wanted)
            fits, kind = isinstance(value, str) and value in choices, f"one of {', '.join(map(repr, choices))}"
        else:
            continue
        if not fits:
            raise SVMInputError(f"dataset {name}: {key} must be {kind}, got {value!r} ({type(value).__name__})")
