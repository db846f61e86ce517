"""Known answers for experiments/datasets.py: the lecture data as printed, and the
promises the synthetic generators make (balance, seeding, (non)separability)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from experiments.datasets import (
    DATASETS,
    Dataset,
    breast_cancer,
    example_5_1,
    exercise_5_4,
    exercise_5_5,
    gendata,
    load_dataset,
    nonlinear,
    overlapping,
    perceptron_slides,
    separable,
    sparse_features,
)
from formulations.errors import SVMInputError


def linearly_separable(X: np.ndarray, y: np.ndarray) -> bool:
    """Is y_i (w'x_i + b) >= 1 feasible for some (w, b)? An LP feasibility check."""
    n, d = X.shape
    A_ub = -y[:, None] * np.column_stack([X, np.ones(n)])
    free = [(None, None)] * (d + 1)
    res = linprog(np.zeros(d + 1), A_ub=A_ub, b_ub=-np.ones(n), bounds=free, method="highs")
    assert res.status in (0, 2), res.message  # 0 feasible, 2 infeasible; anything else is a bug
    return res.status == 0


def counts(ds: Dataset) -> tuple[int, int]:
    return int(np.sum(ds.y == 1.0)), int(np.sum(ds.y == -1.0))


# --- lecture data (001_e078ff43bd63a81d.txt) ------------------------------------------


@pytest.mark.parametrize(
    ("factory", "n_pos", "n_neg"),
    [(example_5_1, 30, 30), (exercise_5_4, 28, 28), (exercise_5_5, 20, 20)],
)
def test_lecture_shapes_and_labels(factory, n_pos, n_neg):
    ds = factory()
    assert ds.X.shape == (n_pos + n_neg, 2) and ds.n == n_pos + n_neg and ds.d == 2
    assert ds.X.dtype == np.float64 and ds.y.dtype == np.float64
    # A first (+1), then B (-1), as T = [A; B] in the notes.
    np.testing.assert_array_equal(ds.y, np.r_[np.ones(n_pos), -np.ones(n_neg)])
    assert ds.source.startswith("001_e078ff43bd63a81d.txt")


def test_example_5_1_spot_values():
    X = example_5_1().X
    np.testing.assert_array_equal(X[0], [0.4952, 6.8088])  # first row of A
    np.testing.assert_array_equal(X[16], [7.8164, 9.8767])
    np.testing.assert_array_equal(X[29], [2.2699, 7.1371])  # last row of A
    np.testing.assert_array_equal(X[30], [7.2450, 3.4422])  # first row of B
    np.testing.assert_array_equal(X[59], [9.8621, 4.3674])  # last row of B


def test_example_5_1_reproduces_published_hard_margin_solution():
    # The notes' quadprog answer: w = (-0.9229, 0.7627), b = 1.1976 (4 digits printed).
    from sklearn.svm import SVC

    ds = example_5_1()
    assert linearly_separable(ds.X, ds.y)
    svc = SVC(kernel="linear", C=1e6, tol=1e-8).fit(ds.X, ds.y)
    np.testing.assert_allclose(svc.coef_[0], [-0.9229, 0.7627], atol=1e-4)
    np.testing.assert_allclose(svc.intercept_[0], 1.1976, atol=1e-4)


def test_exercise_5_4_spot_values_and_the_point_6_8():
    ds = exercise_5_4()
    np.testing.assert_array_equal(ds.X[0], [2.6505, 8.9590])  # not Example 5.1's first row
    np.testing.assert_array_equal(ds.X[28], [7.7030, 5.0965])  # first row of B
    np.testing.assert_array_equal(ds.X[-1], [6.0, 8.0])
    assert ds.y[-1] == -1.0


def test_exercise_5_4_relation_to_example_5_1():
    # As printed: A = Example 5.1's A without rows 1 and 28 (1-based); B = Example 5.1's
    # B without rows 1, 25, 28, plus (6, 8). Checking it cross-checks both typings.
    a, b = example_5_1(), exercise_5_4()
    np.testing.assert_array_equal(np.delete(a.X[:30], [0, 27], axis=0), b.X[:28])
    np.testing.assert_array_equal(np.delete(a.X[30:], [0, 24, 27], axis=0), b.X[28:-1])


def test_exercise_5_4_is_not_separable_only_because_of_6_8():
    ds = exercise_5_4()
    assert not linearly_separable(ds.X, ds.y)
    assert linearly_separable(ds.X[:-1], ds.y[:-1])


def test_exercise_5_5_spot_values_and_not_linearly_separable():
    ds = exercise_5_5()
    np.testing.assert_array_equal(ds.X[0], [0.0113, 0.2713])
    np.testing.assert_array_equal(ds.X[4], [-0.2255, -0.7156])
    np.testing.assert_array_equal(ds.X[20], [1.2178, 1.9444])
    np.testing.assert_array_equal(ds.X[39], [-0.5819, 1.8850])
    assert not linearly_separable(ds.X, ds.y)


def test_lecture_data_are_read_only():
    ds = example_5_1()
    with pytest.raises(ValueError):
        ds.X[0, 0] = 0.0
    with pytest.raises(ValueError):
        ds.y[0] = -1.0


# --- perceptron slides (002_725cbac91910d465.txt) -------------------------------------


def test_perceptron_slides_points():
    ds = perceptron_slides()
    np.testing.assert_array_equal(ds.X, [[0, 0], [0, 1], [1, 0], [1, 1]])
    np.testing.assert_array_equal(ds.y, [1, 1, -1, -1])
    nb = perceptron_slides(order="notebook")
    np.testing.assert_array_equal(nb.X, [[0, 0], [0, 1], [1, 1], [1, 0]])
    np.testing.assert_array_equal(nb.y, [1, 1, -1, -1])
    with pytest.raises(SVMInputError, match="order"):
        perceptron_slides(order="random")


# --- synthetic generators -----------------------------------------------------------

SYNTHETIC = [
    ("gendata", {"n_pos": 15, "n_neg": 15}),
    ("separable", {"n": 50, "d": 3}),
    ("overlapping", {"n": 50, "d": 3}),
    ("nonlinear", {"n": 50}),
    ("sparse_features", {"n": 50, "d": 20}),
]


@pytest.mark.parametrize(("name", "params"), SYNTHETIC)
def test_same_seed_same_data_other_seed_other_data(name, params):
    first = load_dataset(name, seed=7, **params)
    again = load_dataset(name, seed=7, **params)
    other = load_dataset(name, seed=8, **params)
    np.testing.assert_array_equal(first.X, again.X)
    np.testing.assert_array_equal(first.y, again.y)
    assert first.name == again.name != other.name
    assert not np.allclose(first.X, other.X)


def test_generators_leave_global_random_state_alone():
    np.random.seed(123)
    expected = np.random.random(3)
    np.random.seed(123)
    for name, params in SYNTHETIC:
        load_dataset(name, **params)
    np.testing.assert_array_equal(np.random.random(3), expected)


@pytest.mark.parametrize("n", [2, 7, 100, 101])
@pytest.mark.parametrize("factory", [separable, overlapping, nonlinear, sparse_features])
def test_balanced_labels_remainder_to_positive(factory, n):
    ds = factory(n)
    assert ds.n == n
    assert counts(ds) == (n - n // 2, n // 2)
    assert set(np.unique(ds.y)) <= {-1.0, 1.0}


def test_gendata_shape_ring_and_not_linearly_separable():
    ds = gendata(15, 10)
    assert ds.X.shape == (25, 2) and counts(ds) == (15, 10)
    assert ds.name == "gendata(n_pos=15,n_neg=10,seed=0)"
    radius = np.linalg.norm(ds.X, axis=1)
    # A circle separates the central blob from the ring (at this seed), a line does not.
    assert radius[ds.y > 0].max() < radius[ds.y < 0].min()
    assert not linearly_separable(ds.X, ds.y)


@pytest.mark.parametrize(("n", "d", "seed"), [(2, 1, 0), (200, 2, 0), (201, 2, 1), (300, 10, 2)])
def test_separable_is_separable_with_the_promised_margin(n, d, seed):
    margin = 0.5
    ds = separable(n, d=d, seed=seed, margin=margin)
    assert ds.X.shape == (n, d)
    assert linearly_separable(ds.X, ds.y)
    # Stronger: a hyperplane with geometric margin >= margin / 2 exists, i.e.
    # y_i (w'x_i + b) >= 1 with ||w|| <= 2 / margin. The hard-margin SVM finds the
    # smallest such w.
    from sklearn.svm import SVC

    svc = SVC(kernel="linear", C=1e6, tol=1e-6).fit(ds.X, ds.y)
    assert svc.score(ds.X, ds.y) == 1.0
    assert np.linalg.norm(svc.coef_) <= 2.0 / margin * (1 + 1e-3)


def test_overlapping_and_nonlinear_are_not_linearly_separable():
    for ds in (overlapping(200), nonlinear(200)):
        assert not linearly_separable(ds.X, ds.y), ds.name


def test_names_encode_parameters():
    assert overlapping(200).name == "overlapping(n=200,d=2,seed=0)"
    assert separable(10, d=3, seed=4, margin=1).name == "separable(n=10,d=3,seed=4,margin=1)"
    assert nonlinear(10).name == "nonlinear(n=10,seed=0,noise=0.1)"
    assert (
        sparse_features(10, d=5, n_informative=2, seed=1).name
        == "sparse_features(n=10,d=5,n_informative=2,seed=1)"
    )


def test_sparse_features_only_informative_columns_carry_the_label():
    ds = sparse_features(2000, d=50, n_informative=3, seed=0)
    gap = np.abs(ds.X[ds.y > 0].mean(axis=0) - ds.X[ds.y < 0].mean(axis=0))
    informative = np.flatnonzero(gap > 1.0)
    assert informative.size == 3  # class means differ by 2 there, by ~0.05 elsewhere
    assert str(informative.tolist()) in ds.description


@pytest.mark.parametrize(
    ("factory", "params", "match"),
    [
        (separable, {"n": 1}, "n must be"),
        (separable, {"n": 10, "margin": 0.0}, "margin"),
        (overlapping, {"n": 10, "d": 0}, "d must be"),
        (nonlinear, {"n": 10, "noise": -1.0}, "noise"),
        (sparse_features, {"n": 10, "d": 3, "n_informative": 4}, "n_informative"),
        (gendata, {"n_pos": 0, "n_neg": 5}, "n_pos"),
        (overlapping, {"n": 10.5}, "n must be"),
    ],
)
def test_generator_parameters_validated(factory, params, match):
    with pytest.raises(SVMInputError, match=match):
        factory(**params)


# --- breast cancer ------------------------------------------------------------------


def test_breast_cancer_standardized_and_labelled():
    ds = breast_cancer()
    assert ds.X.shape == (569, 30)
    assert counts(ds) == (212, 357)  # malignant = +1
    np.testing.assert_allclose(ds.X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(ds.X.std(axis=0), 1.0, atol=1e-12)
    assert "standardized" in ds.description


# --- registry -----------------------------------------------------------------------


def test_registry_names():
    assert list(DATASETS) == [
        "example_5_1",
        "exercise_5_4",
        "exercise_5_5",
        "perceptron_slides",
        "gendata",
        "separable",
        "overlapping",
        "nonlinear",
        "sparse_features",
        "hard",
        "breast_cancer",
        "digits_parity",
        "wine_one_vs_rest",
        "iris_one_vs_rest",
    ]


def test_load_dataset_passes_parameters():
    ds = load_dataset("overlapping", n=30, d=4, seed=3)
    assert ds.name == "overlapping(n=30,d=4,seed=3)" and ds.X.shape == (30, 4)
    np.testing.assert_array_equal(load_dataset("example_5_1").X, example_5_1().X)


def test_unknown_dataset_lists_known_names():
    with pytest.raises(SVMInputError) as info:
        load_dataset("iris")
    message = str(info.value)
    assert "'iris'" in message
    for name in DATASETS:
        assert name in message


def test_bad_parameters_become_svm_input_error():
    with pytest.raises(SVMInputError, match="example_5_1"):
        load_dataset("example_5_1", n=3)
    with pytest.raises(SVMInputError, match="separable"):
        load_dataset("separable")  # n is required


def test_dataset_validates_its_fields():
    with pytest.raises(SVMInputError, match="labels"):
        Dataset("bad", np.zeros((2, 1)), np.array([0.0, 1.0]), "", "")
    with pytest.raises(SVMInputError, match="2-D"):
        Dataset("bad", np.zeros(2), np.array([1.0, -1.0]), "", "")
    with pytest.raises(SVMInputError, match="shape"):
        Dataset("bad", np.zeros((3, 1)), np.array([1.0, -1.0]), "", "")
    with pytest.raises(SVMInputError, match="NaN"):
        Dataset("bad", np.array([[np.nan], [0.0]]), np.array([1.0, -1.0]), "", "")


def test_the_hard_family_and_the_bundled_sets():
    from experiments.datasets import digits_parity, hard, iris_one_vs_rest, wine_one_vs_rest

    ds = hard(2_000, seed=3)
    assert ds.X.shape == (2_000, 20) and np.linalg.matrix_rank(ds.X) == 16  # 4 redundant features
    np.testing.assert_allclose(ds.X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(ds.X.std(axis=0), 1, rtol=1e-12)
    assert 0.5 < np.mean(ds.y > 0) < 0.6
    np.testing.assert_array_equal(hard(2_000, seed=3).X, ds.X)
    assert not np.array_equal(hard(2_000, seed=4).X, ds.X)
    with pytest.raises(SVMInputError, match="flip"):
        hard(100, flip=1.5)
    digits = digits_parity()
    assert digits.X.shape == (1797, 64) and set(np.unique(digits.y)) == {-1.0, 1.0}
    assert wine_one_vs_rest().X.shape == (178, 13) and int((wine_one_vs_rest().y > 0).sum()) == 71
    iris = iris_one_vs_rest()
    assert iris.X.shape == (150, 4) and int((iris.y > 0).sum()) == 50
    with pytest.raises(SVMInputError, match="no class 5"):
        iris_one_vs_rest(5)
