"""The runner's `family` suite (a coursework section): every member's primal and dual(s) verified with P* = D*,
and nu's bounds on the fractions at every proved optimum of the nu sweep."""

from __future__ import annotations

import numpy as np

from experiments.coursework import cli as coursework_cli
from experiments.coursework.family import svm_family
from experiments.runner.suites import SUITES


def test_the_family_suite_is_registered_in_the_runner():
    assert "family" in coursework_cli.COURSEWORK_SUITES
    assert SUITES["family"].section is not None


def test_the_family_section_shows_duality_and_the_nu_property(tmp_path, capsys):
    section = svm_family(tmp_path, layer="cvxpy", backend="clarabel", progress=True)
    assert section.passed
    # progress as the runner's other long suites show it: in a log (no terminal here), a line per solve
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    total = 9 + len(section.table)
    assert len(lines) == total and lines[0].startswith(f"[1/{total}] nu_svc_primal cvxpy/clarabel: optimal")
    # and a closing line with the pass counts, as the seeds suite's
    nu = section.table
    assert section.summary == (f"9 of 9 primal and dual rows verified optimal (P* = D*); nu's bounds hold at "
                               f"{len(nu)} of {len(nu)} proved optima of the nu sweep (nu_svc "
                               f"{(nu.member == 'nu_svc').sum()} of {(nu.member == 'nu_svc').sum()}, one_class 10 of 10)")
    table = section.tables["family_duality"]
    import pandas as pd

    df = pd.read_csv(table)
    assert set(df.formulation) >= {"nu_svc_primal", "nu_svc_linear_dual", "nu_svc_kernel_dual", "one_class_primal",
                                   "one_class_kernel_dual", "eps_svr_primal", "eps_svr_kernel_dual",
                                   "nu_svr_primal", "nu_svr_kernel_dual"}
    assert (df.status == "optimal").all()
    assert np.all(np.abs(df.P - df.D) <= 1e-6 * np.abs(df.P))  # P* = D*
    for member, part in df.groupby("member"):  # the same multipliers whichever formulation found them
        for key in ("rho", "epsilon"):
            values = part[key].dropna()
            assert values.empty or np.ptp(values) <= 1e-4 * np.abs(values).max(), (member, key)
    nu = section.table
    assert nu.holds.all() and (nu.above <= nu.nu).all() and (nu.nu <= nu.below).all()
    md = (tmp_path / "family_nu.md").read_text()
    assert "![nu bounds the fractions](family_nu.png)" in md and (tmp_path / "family_nu.png").exists()


def test_docs_name_the_nu_range_the_suite_sweeps():
    """docs/family.md states the nu each member is swept over: the grid's ends, and for nu-SVC the last grid
    value under its bound 2 min(n+, n-)/n on the suite's breast-cancer points (the runner skips the rest)."""
    from pathlib import Path

    from experiments.coursework.family import NU_GRID, nu_svc_limit
    from experiments.family_peers import load

    limit = nu_svc_limit(load("breast_cancer", 100)[1])
    last = max(nu for nu in NU_GRID if nu <= limit)
    text = " ".join((Path(__file__).parents[1] / "docs" / "family.md").read_text().split())
    section = text[text.index("## The runner's `family` suite"):]
    section = section[:section.index("## Not done here")]
    assert f"nu = {NU_GRID[0]:g}, {NU_GRID[1]:g}, ..., {NU_GRID[-1]:g}" in section
    assert f"2 min(l+, l-)/l = {limit:.2g}" in section and f"from {NU_GRID[0]:g} to {last:g}" in section
    assert last < NU_GRID[-1]  # the bound ends nu-SVC's sweep early on this data
