"""The family trusted in any units: a proof is no proof unless its point passes the member's own conditions, data
far from the origin or in other units are solved where the solvers are well conditioned and judged in the user's,
and a fit whose model is not verified says so."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import datasets

from formulations.family.common import FamilyData
from solvers.family import solve
from tests.test_family_checks import _claimed

MOVE = 1e4


@pytest.fixture(scope="module")
def blobs():
    X, y = datasets.make_classification(n_samples=120, n_features=4, n_informative=2, n_redundant=0,
                                        n_clusters_per_class=1, flip_y=0.0, random_state=1)
    return X, np.where(y > 0, 1.0, -1.0)


def _class_uniform(y, nu):
    """A feasible nu-SVC point with every coordinate free: nu/2 spread evenly over each class."""
    return np.where(y > 0, nu / (2 * np.sum(y > 0)), nu / (2 * np.sum(y < 0)))


def test_a_proof_far_from_the_origin_must_pass_the_members_conditions(blobs):
    """On data moved by 1e4, K's entries are 1e8 and the proof's rounding allowance (relative to them) let a
    wrong active set pass: its 'proved optimum' was 3.6e-2 of the margin off. Closed from a poor feasible point,
    the row either proves the true optimum (f equal to the unmoved data's to 1e-6 of max|f|) or proves nothing."""
    X, y = blobs
    nu = 0.2
    truth = solve("nu_svc_kernel_dual", X, y, layer="cvxpy", backend="clarabel", nu=nu, kernel="linear",
                  profile="high")
    assert truth.status == "optimal"
    poor = 0.7 * truth.extras["proved"]["alpha"] + 0.3 * _class_uniform(y, nu)
    row = _claimed({"alpha": poor}, "nu_svc_kernel_dual", {"nu": nu}, FamilyData(y, X + MOVE, None))
    assert row.status != "optimal"
    proved = row.extras.get("proved")
    if proved is not None:
        f_true = truth.extras["proved"]["decision"]
        assert np.max(np.abs(proved["decision"] - f_true)) <= 1e-6 * np.max(np.abs(f_true))
