"""`python -m experiments.bench --members`: the family's estimators by SMO against scikit-learn, interleaved."""

from __future__ import annotations

import pandas as pd
import pytest

from experiments.bench.members import MemberCase, measure
from experiments.bench.scaling import main

#: LIBSVM's single-precision kernel cache puts its decision values ~2e-5 of their size from the optimum
AGREEMENT = 2e-5


def test_a_case_times_three_paths_and_agrees_with_scikit_learn():
    rows = measure(MemberCase("one_class", "wine", {"nu": 0.3}), repeat=1)
    assert [r["path"] for r in rows] == ["scikit-learn", "estimator (SMO)", "family.solve full (pyomo/piqp)"]
    ours = rows[1]
    assert ours["status"] == "optimal"
    assert ours["max diff vs scikit-learn 1e-10 (rel.)"] <= AGREEMENT
    # one run each: every ratio is that run's time over scikit-learn's, said the same in both columns
    base = rows[0]["median_s"]
    for r in rows:
        assert r["x scikit-learn"] == pytest.approx(r["median_s"] / base, rel=1e-12)
        assert r["run by run"] == f"{r['x scikit-learn']:.2f}"


def test_members_mode_writes_its_table(tmp_path, monkeypatch):
    from experiments.bench import members

    monkeypatch.setattr(members, "CASES", (MemberCase("nu_svr", "diabetes", {"C": 10.0, "nu": 0.5}),))
    assert main(["--members", "--quick", "--rounds", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    df = pd.read_csv(tmp_path / "members.csv")
    assert len(df) == 3 and (df["status"].fillna("") == ["", "optimal", ""]).all()
    assert "nu_svr on diabetes" in (tmp_path / "members.md").read_text()
