"""The LIBLINEAR members against LIBLINEAR itself (scikit-learn's LinearSVC), on scikit-learn's bundled data,
standardized (experiments.liblinear_peers; docs/family.md).

Conventions normalised: LinearSVC's fit_intercept appends the constant feature intercept_scaling (= 1) to X, so its
bias is regularized; the project's intercept="regularized" does the same (formulations.family.liblinear). P is
recomputed for both points by one formula, decision values compared relative to max |f|. Three bars:
  - P within 1e-8 (measured: 1e-16 to 5e-10);
  - the row's own point (Clarabel, default profile) within 1e-5 of max |f| (measured: 1.5e-9 to 6.9e-6; the
    default profile's checks hold it to 1e-4 of the proved optimum);
  - the optimum the checks proved from that point within 1e-9 of max |f| (measured: 1.1e-12 to 4.6e-11; digits,
    whose proof solves 4,000-5,000 unknowns, 1.1e-9: 1e-8 there).
"""

from __future__ import annotations

import pytest

from experiments.liblinear_peers import CASES, DIGITS, compare, main, table
from solvers.solution import OPTIMAL


def _assert_row(row: dict, proved_tol: float = 1e-9) -> None:
    assert row["status"] == OPTIMAL, row
    assert row["reference"].startswith("proved optimum"), row
    assert row["P_diff"] <= 1e-8, row
    assert row["f_diff"] <= 1e-5, row
    assert row["proved_f_diff"] <= proved_tol, row


@pytest.mark.parametrize("kind", ["primal", "linear_dual"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.label)
def test_liblinear_members_are_linearsvc(case, kind):
    _assert_row(compare(case, kind))


def test_the_table_and_a_bad_backend(capsys):
    row = compare(CASES[1], "primal", layer="pyomo", backend="piqp")
    _assert_row(row)
    assert "| squared_hinge on breast_cancer (C=1) | primal | 569 | optimal |" in table([row])
    assert main(["--backend", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nosuch" in err and err.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["primal", "linear_dual"])
def test_crammer_singer_is_linearsvc_on_digits(kind):
    _assert_row(compare(DIGITS, kind), proved_tol=1e-8)
