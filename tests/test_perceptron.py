"""Known answers for experiments/coursework/perceptron.py, taken from the Iowa State slides
(002_725cbac91910d465.txt) and the notebook that produced their W14 = (-3, 0, 2)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.datasets import example_5_1, perceptron_slides, separable
from experiments.coursework.perceptron import PerceptronResult, perceptron_batch, perceptron_single_sample
from formulations.errors import SVMInputError

XOR_X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
XOR_Y = np.array([1.0, 1.0, -1.0, -1.0])

# W after iterations 1..14 as printed by the slides' notebook (perceptron.ipynb),
# whose points are (0,0), (0,1) -> +1 and (1,1), (1,0) -> -1.
NOTEBOOK_TRACE = [
    (0, 0, 1), (0, 0, 1), (-1, -1, 0), (-1, -1, 0), (-1, -1, 1), (-1, 0, 2), (-2, -1, 1),
    (-2, -1, 1), (-2, -1, 1), (-2, 0, 2), (-3, -1, 1), (-3, -1, 1), (-3, -1, 1), (-3, 0, 2),
]  # fmt: skip


def margins(result: PerceptronResult, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """W' x_i y_i for each augmented sample."""
    return result.decision_function(X) * y


def test_slides_example_ends_at_w14():
    ds = perceptron_slides(order="notebook")
    result = perceptron_single_sample(ds.X, ds.y, rho=1.0)
    assert result.converged
    assert result.n_iterations == 14 and len(result.history) == 14
    assert result.n_updates == 8
    np.testing.assert_array_equal(result.W, [-3.0, 0.0, 2.0])
    np.testing.assert_array_equal(result.history[13], [-3.0, 0.0, 2.0])  # after iteration 14
    np.testing.assert_array_equal(result.history[12], [-3.0, -1.0, 1.0])  # after iteration 13
    np.testing.assert_array_equal(result.history, NOTEBOOK_TRACE)
    np.testing.assert_array_equal(result.w, [-3.0, 0.0])
    assert result.b == 2.0
    np.testing.assert_array_equal(margins(result, ds.X, ds.y), [2.0, 2.0, 1.0, 1.0])


def test_slides_first_two_steps_in_printed_order():
    # Slides: W1 = 0; step 1 updates to W2 = (0, 0, 1); step 2 keeps W3 = W2.
    ds = perceptron_slides()
    result = perceptron_single_sample(ds.X, ds.y)
    np.testing.assert_array_equal(result.history[0], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(result.history[1], [0.0, 0.0, 1.0])


def test_slides_printed_order_ends_at_w10():
    # With x3 = (1,0), x4 = (1,1) as printed, the run stops after 9 visits at
    # (-2, 0, 1): the vector whose four margins all equal 1, as the slides' check says.
    ds = perceptron_slides()
    result = perceptron_single_sample(ds.X, ds.y)
    assert result.converged and result.n_iterations == 9 and result.n_updates == 5
    np.testing.assert_array_equal(result.W, [-2.0, 0.0, 1.0])
    np.testing.assert_array_equal(margins(result, ds.X, ds.y), [1.0, 1.0, 1.0, 1.0])


@pytest.mark.parametrize("order", ["slides", "notebook"])
def test_batch_converges_on_slides_example(order):
    ds = perceptron_slides(order=order)
    result = perceptron_batch(ds.X, ds.y)
    assert result.converged
    # By hand: epochs add (-2,0,0), (0,1,2), (-2,-1,-2), (0,1,2).
    assert result.n_iterations == 4 and result.n_updates == 10
    np.testing.assert_array_equal(result.W, [-4.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.sign(result.decision_function(ds.X)), ds.y)
    assert "converged after 4 epochs" in result.message


@pytest.mark.parametrize("algorithm", [perceptron_single_sample, perceptron_batch])
def test_separable_data_are_separated(algorithm):
    for ds in (example_5_1(), separable(100, d=3, seed=1)):
        result = algorithm(ds.X, ds.y, 1.0, 100_000)
        assert result.converged, ds.name
        assert np.all(margins(result, ds.X, ds.y) > 0)


def test_xor_stops_at_the_cap():
    result = perceptron_single_sample(XOR_X, XOR_Y, max_iter=50)
    assert not result.converged
    assert result.n_iterations == 50 and len(result.history) == 50
    assert result.message == (
        "did not converge within max_iter=50 iterations: the data may not be linearly separable"
    )
    batch = perceptron_batch(XOR_X, XOR_Y, max_epochs=30)
    assert not batch.converged and batch.n_iterations == 30
    assert "max_epochs=30" in batch.message and "not be linearly separable" in batch.message


def test_rho_scales_the_run_from_zero():
    # From W = 0 every update is a multiple of rho, so the path scales with rho.
    ds = perceptron_slides(order="notebook")
    result = perceptron_single_sample(ds.X, ds.y, rho=0.5)
    assert result.n_iterations == 14
    np.testing.assert_allclose(result.W, [-1.5, 0.0, 1.0])


def test_initial_w_used_and_not_modified():
    ds = perceptron_slides()
    W0 = np.array([-2.0, 0.0, 1.0])  # already separates: nothing to do
    result = perceptron_single_sample(ds.X, ds.y, W0=W0)
    assert result.converged and result.n_iterations == 0 and result.history == []
    W0 = np.array([1.0, 1.0, 1.0])
    result = perceptron_single_sample(ds.X, ds.y, W0=W0)
    np.testing.assert_array_equal(W0, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(result.history[0], W0)  # x1 y1 = (0,0,1): margin 1, no update


@pytest.mark.parametrize("rho", [0, -1.0, np.nan, np.inf, "1", True])
@pytest.mark.parametrize("algorithm", [perceptron_single_sample, perceptron_batch])
def test_invalid_rho_rejected(algorithm, rho):
    with pytest.raises(SVMInputError, match="rho"):
        algorithm(XOR_X, XOR_Y, rho)


@pytest.mark.parametrize("cap", [0, -3, 2.5, True])
def test_invalid_cap_rejected(cap):
    with pytest.raises(SVMInputError, match="max_iter"):
        perceptron_single_sample(XOR_X, XOR_Y, max_iter=cap)
    with pytest.raises(SVMInputError, match="max_epochs"):
        perceptron_batch(XOR_X, XOR_Y, max_epochs=cap)


@pytest.mark.parametrize(
    ("X", "y", "W0", "match"),
    [
        (XOR_X, np.array([1.0, 0.0, -1.0, -1.0]), None, "labels"),
        (XOR_X, XOR_Y[:3], None, "one label per row"),
        (XOR_X[0], XOR_Y, None, "2-D"),
        (np.array([[0.0, np.nan]] * 4), XOR_Y, None, "NaN"),
        (XOR_X, XOR_Y, np.zeros(2), "W0"),
        (XOR_X, XOR_Y, np.array([0.0, np.inf, 0.0]), "W0"),
    ],
)
def test_invalid_data_rejected(X, y, W0, match):
    with pytest.raises(SVMInputError, match=match):
        perceptron_single_sample(X, y, W0=W0)
