"""One registry of formulations for the QPs and the LPs: every name builds in both layers
through formulations.build, the LP path builds through it too, and an unknown name or layer is refused."""

from __future__ import annotations

import pytest

import formulations
from experiments.datasets import exercise_5_4
from experiments.runner import suites
from formulations.errors import SVMInputError
from formulations.names import LP_FORMULATIONS, QP_FORMULATIONS
from formulations.kernels import Kernel, gram
from solvers.api import solve
from solvers.lp import solve_lp


def test_the_registry_holds_every_qp_and_lp_once():
    assert set(formulations.REGISTRY) == set(QP_FORMULATIONS) | set(LP_FORMULATIONS)
    assert set(suites.FORMULATION_NAMES) <= set(formulations.REGISTRY)  # the runner names no other


@pytest.mark.parametrize("layer", ["pyomo", "cvxpy"])
@pytest.mark.parametrize("formulation", list(formulations.REGISTRY))
def test_every_formulation_builds_in_both_layers(formulation, layer):
    ds = exercise_5_4()
    model = formulations.build(formulation, layer, X=ds.X, y=ds.y, C=10.0, K=gram(Kernel("linear"), ds.X))
    assert model is not None


def test_an_lp_and_a_qp_solved_through_the_registry_agree_with_the_notes():
    """Exercise 5.4 at C = 10: the QP's optimum 27.03 (README) and the 1-norm LP's 27.9516 (README)."""
    ds = exercise_5_4()
    qp = solve("soft_primal", ds.X, ds.y, layer="pyomo", backend="highs", C=10.0, method="full")
    lp = solve_lp("l1_primal", ds.X, ds.y, layer="cvxpy", backend="highs", C=10.0)
    assert qp.objective == pytest.approx(27.03, abs=0.05)
    assert lp.objective == pytest.approx(27.9515858694, rel=1e-8)


@pytest.mark.parametrize("formulation,layer,what", [("nosuch", "pyomo", "formulation"), ("l1_dual", "jump", "layer")])
def test_unknown_names_are_refused(formulation, layer, what):
    with pytest.raises(SVMInputError, match=f"unknown {what}"):
        formulations.build(formulation, layer)
