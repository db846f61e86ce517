"""The LIBSVM members against scikit-learn's classes of the same problems (NuSVC, OneClassSVM, SVR, NuSVR at
tol=1e-10) on its bundled data, conventions normalised (experiments.family_peers; docs/family.md): the proved
optimum's dual objective within 1e-6 of scikit-learn's point's, its decision values within 2e-5 (LIBSVM's
single-precision kernel cache), nu-SVC's and the one-class SVM's rho within 2e-5."""

from __future__ import annotations

import pytest

from experiments.family_peers import CASES, DECISION_RTOL, OBJECTIVE_RTOL, compare, table


def _agrees(row: dict) -> None:
    assert row["status"] in ("optimal", "optimal_inaccurate"), row
    assert row["objective_diff"] <= OBJECTIVE_RTOL, row
    assert row["decision_diff"] <= DECISION_RTOL, row
    if "rho_diff" in row:
        assert row["rho_diff"] <= DECISION_RTOL, row


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.member}-{c.data}")
def test_small_samples_agree_with_scikit_learn(case):
    _agrees(compare(case, n=60))


@pytest.mark.slow
@pytest.mark.parametrize("layer", ["cvxpy", "pyomo"])
def test_whole_sets_agree_with_scikit_learn(layer):
    rows = [compare(case, None, layer=layer) for case in CASES]
    print(table(rows))
    for row in rows:
        _agrees(row)


def test_the_command_refuses_an_unknown_backend_in_one_line(capsys):
    from experiments.family_peers import main

    assert main(["--small", "--backend", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown backend 'nope'" in err
