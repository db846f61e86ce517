"""The scaling benchmark (quick version), the solver-alone path and the working-set decomposition.

Known answers: Exercise 5.5 (40 points) with C = 1 has the soft-margin optimum
34.48200362... (every backend of both layers agrees, tests/test_backends.py); the
working-set decomposition must reach the optimum of the full kernel-dual solve to
1e-7 relative, without ever solving more than q points at once.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from experiments.datasets import load_dataset, overlapping
from formulations.kernels import Kernel, gram
from solvers import api
from solvers.deadline import Deadline
from solvers.algorithms import direct, working_set
from solvers.algorithms.working_set import start, subproblems
from solvers.bridge.pyomo_standard_form import from_pyomo

EX55_SOFT_OPT = 34.48200362  # Exercise 5.5, C = 1: 1/2||w||^2 + C sum xi at the optimum


@pytest.fixture(scope="module")
def ex55():
    ds = load_dataset("exercise_5_5")
    return ds.X, ds.y


@pytest.fixture(scope="module")
def rbf300():
    ds = overlapping(300, d=5, seed=3)
    K = gram(Kernel("rbf", gamma=0.2), ds.X)
    full = api.solve("kernel_dual", None, ds.y, K=K, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    return ds.y, K, full


# ----------------------------------------------------------------------------- solver alone


@pytest.mark.parametrize("backend", ["clarabel", "piqp", "osqp", "ipopt"])
@pytest.mark.parametrize("formulation", ["soft_primal", "dual"])
def test_direct_matches_layers(ex55, formulation, backend):
    X, y = ex55
    sol = direct.solve(formulation, X, y, backend=backend, C=1.0, profile="high")
    assert sol.layer == "direct"
    assert sol.status in ("optimal", "optimal_inaccurate")
    assert sol.objective == pytest.approx(EX55_SOFT_OPT, rel=1e-8)
    ref = api.solve(formulation, X, y, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    np.testing.assert_allclose(sol.w, ref.w, atol=1e-5)
    assert sol.checks["rel_duality_gap"] < 1e-5


@pytest.mark.parametrize("form", ["dense", "factor"])
def test_direct_kernel_dual(ex55, form):
    X, y = ex55
    K = gram(Kernel("rbf", gamma=0.5), X)
    sol = direct.solve("kernel_dual", None, y, K=K, backend="proxqp", C=1.0, kernel_form=form, profile="high")
    ref = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref.objective, rel=1e-8)
    assert sol.b == pytest.approx(ref.b, abs=1e-6)


def test_direct_assembly_is_the_pyomo_model(ex55):
    """The matrices handed to the solver alone are those the Pyomo bridge reads from the model."""
    from formulations import soft_primal

    X, y = ex55
    asm = direct.assemble("soft_primal", X, y, 2.0)
    qp = from_pyomo(soft_primal.build_pyomo(X, y, 2.0))
    assert qp.n == asm.qp.n
    x = np.random.default_rng(0).normal(size=qp.n)
    # Same column order (w, b, xi) in both: same objective and constraint values at any x.
    assert qp.objective(x) == pytest.approx(asm.qp.objective(x), rel=1e-12)
    np.testing.assert_allclose(np.sort(qp.G @ x - qp.h), np.sort(asm.qp.G @ x - asm.qp.h), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(qp.lb, asm.qp.lb)


def test_direct_rejects_unknown_backend(ex55):
    X, y = ex55
    asm = direct.assemble("soft_primal", X, y, 1.0)
    with pytest.raises(ValueError, match="unknown direct backend"):
        direct.solve_assembled(asm, "gurobi")


# ----------------------------------------------------------------------------- working set


@pytest.mark.parametrize("layer,backend", [("direct", "proxqp"), ("direct", "piqp"), ("cvxpy", "clarabel"),
                                           ("pyomo", "proxqp")])
@pytest.mark.parametrize("engine", working_set.ENGINES)
def test_working_set_exercise_5_5(ex55, layer, backend, engine):
    X, y = ex55
    K = gram(Kernel("rbf", gamma=0.5), X)
    full = api.solve("kernel_dual", None, y, K=K, layer="cvxpy", backend="clarabel", C=1.0, profile="high")
    sol = working_set.solve(K, y, 1.0, backend=backend, layer=layer, q=10, engine=engine)
    assert sol.status == "optimal"
    # The dual is a maximisation: the decomposition may only be at or above a full solve's value.
    assert abs(sol.objective - full.objective) <= 1e-7 * abs(full.objective)
    assert abs(float(sol.alpha @ y)) < 1e-9
    # it did decompose: 40 points, at most 10 at a time (blocks) or two a step (SMO), then one block of the free ones
    assert sol.iterations > 1 if engine == "blocks" else sol.extras["smo_steps"] > 1 and sol.solve_s > 0


@pytest.mark.parametrize("layer,backend", [("direct", "proxqp"), ("direct", "clarabel"), ("cvxpy", "piqp")])
def test_working_set_rbf_300(rbf300, layer, backend):
    y, K, full = rbf300
    sol = working_set.solve(K, y, 1.0, backend=backend, layer=layer, q=60)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(full.objective, rel=1e-7)
    assert sol.b == pytest.approx(full.b, abs=1e-4)
    assert sol.checks["rel_duality_gap"] < 1e-6


@pytest.mark.parametrize("layer,backend", [("direct", "piqp"), ("cvxpy", "piqp"), ("pyomo", "piqp")])
def test_working_set_split_start(rbf300, layer, backend):
    """n >= split_from: the loop starts from Nystrom margins' split (alpha = C below the band, a restricted
    dual inside it), a feasible point, and ends at the full solve's optimum in fewer steps."""
    y, K, full = rbf300
    cold = working_set.solve(K, y, 1.0, backend=backend, layer=layer, q=40, split_from=0, engine="blocks")
    split = working_set.solve(K, y, 1.0, backend=backend, layer=layer, q=40, split_from=300, engine="blocks")
    assert cold.extras["start"] == "zero"
    assert split.extras["start"].startswith(f"split: Nystrom {start.LANDMARKS}, |W| ")
    for sol in (cold, split):
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(full.objective, rel=1e-7)
        assert sol.b == pytest.approx(full.b, abs=1e-4)
    assert split.iterations < cold.iterations


def test_split_start_is_feasible_and_near_the_optimum(rbf300):
    y, K, full = rbf300
    from solvers.profiles import backend_options

    opts = backend_options("piqp", "high")
    alpha, sub_s, how = start.split_start(K, y, 1.0, subproblems.subproblem_direct, "piqp", opts)
    assert how.startswith(f"split: Nystrom {start.LANDMARKS}")
    assert sub_s > 0
    assert alpha.min() >= 0.0 and alpha.max() <= 1.0
    assert abs(float(y @ alpha)) < 1e-9
    D = alpha.sum() - 0.5 * (y * alpha) @ K @ (y * alpha)
    assert D <= full.objective * (1 + 1e-9)  # a feasible dual point: at or below the optimum
    # Not the optimum yet, but its support is the optimum's to 90%: measured 133 of the 143 support
    # vectors (134 in the start), 97 of the 98 points at C (108 in the start), from 50 landmarks.
    sv, start_sv = full.alpha > 1e-8, alpha > 0
    assert (sv & start_sv).sum() >= 0.9 * sv.sum() and start_sv.sum() <= 1.1 * sv.sum()
    assert working_set.kkt_violation(K, y, alpha, 1.0) > 1e-3


def test_split_start_falls_back_to_zero_when_a_subproblem_fails(rbf300):
    y, K, full = rbf300

    def no_point(Q, p, y_B, rhs, C, backend, options, time_limit=None):
        return None, 0.01

    alpha, sub_s, how = start.split_start(K, y, 1.0, no_point, "piqp", {})
    assert alpha is None and "returned no point" in how and sub_s == pytest.approx(0.01)


def test_working_set_bad_input(ex55):
    X, y = ex55
    K = gram(Kernel("rbf", gamma=0.5), X)
    with pytest.raises(ValueError, match="layer"):
        working_set.decompose(K, y, 1.0, layer="gams")
    with pytest.raises(ValueError, match="finite C"):
        working_set.decompose(K, y, math.inf)
    with pytest.raises(ValueError, match="q >= 2"):
        working_set.decompose(K, y, 1.0, q=1)


def test_scale_profile_is_additive():
    from solvers.profiles import backend_options

    assert backend_options("osqp", "default") == {}
    assert backend_options("osqp", "high")["max_iter"] == 200_000
    assert backend_options("osqp", "scale")["max_iter"] == 20_000
    assert backend_options("osqp", "scale")["polishing"] is True


# ----------------------------------------------------------------------------- the quick suite


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    from experiments.bench import scaling as bench

    out = tmp_path_factory.mktemp("bench")
    assert bench.main(["--quick", "--out", str(out), "--no-progress", "--budget", "20"]) == 0
    return out, pd.read_csv(out / "results.csv")


@pytest.mark.slow  # the quick benchmark itself: about 1.5 minutes on 2 cores
def test_quick_bench_outputs(quick_run):
    out, df = quick_run
    for name in ("report.md", "time_vs_n.png", "memory_vs_n.png"):
        assert (out / name).exists(), name
    text = (out / "report.md").read_text()
    for section in ("## Targets", "## Ratios to LIBLINEAR / LIBSVM", "## Modeling overhead", "## Memory against n",
                    "## Where each path stopped"):
        assert section in text
    # Every layer and the solver alone, both problems, and both peers at both tolerances.
    assert {"pyomo", "cvxpy", "direct", "sklearn"} <= set(df["layer"])
    assert {"liblinear", "libsvm"} <= set(df["backend"])
    assert {"default", "tight"} <= set(df.loc[df["layer"] == "sklearn", "form"])
    assert {"dense", "factor", "lowrank", "working_set"} <= set(df.loc[df["problem"] == "kernel", "form"].dropna())
    primal_ws = df[(df["problem"] == "linear") & (df["form"] == "working_set")]
    assert set(primal_ws["layer"]) == {"direct", "cvxpy", "pyomo"}
    # PIQP's restricted QPs end at the proved optimum; Clarabel's w is 1.07e-6 off it at n = 100
    # (measured against solvers.reference), just over the `scale` profile's 1e-6: not `optimal`.
    assert (primal_ws.loc[primal_ws["backend"] == "piqp", "status"] == "optimal").all()
    assert primal_ws["status"].isin(["optimal", "optimal_inaccurate"]).all()
    assert "soft_primal working_set" in text  # its overhead rows: the loop in a layer against on matrices
    assert (df["peak_rss_mb"].dropna() > 10).all()  # measured in the worker
    assert not (df["status"] == "killed").any()


@pytest.mark.slow
def test_quick_bench_records_its_invocations(quick_run):
    """runs.json names each invocation that made the table; a partial re-run (--only) adds to it."""
    import json

    from experiments.bench import scaling as bench

    out, df = quick_run
    runs = json.loads((out / "runs.json").read_text())
    assert len(runs) == 1 and runs[0]["rows"] == len(df)
    assert runs[0]["command"] == f"python -m experiments.bench --quick --out {out} --no-progress --budget 20"
    assert runs[0]["kill_after"] == 2 * 20 + 60
    assert bench.main(["--quick", "--out", str(out), "--no-progress", "--budget", "20", "--only", "kernel:libsvm"]) == 0
    runs = json.loads((out / "runs.json").read_text())
    assert [r["command"].endswith("--only kernel:libsvm") for r in runs] == [False, True]
    assert len(pd.read_csv(out / "results.csv")) == len(df)  # the re-run's rows replaced their own
    assert "--only kernel:libsvm`" in (out / "report.md").read_text()


@pytest.mark.slow
def test_targets_of_paths_a_run_left_out_say_so(quick_run):
    """The targets of a results table from `--only kernel...`: no linear target row (it read "n=0, no verified
    path" before), and a layer with no path in the table is "not measured", not "no verified path"."""
    from experiments.bench.scaling_report import targets

    _, df = quick_run
    kernel = df[(df["problem"] == "kernel") & (df["layer"] != "cvxpy")]
    table, _ = targets(kernel)
    assert not table["target"].str.contains("soft primal|soft-margin|n=0").any(), table["target"].tolist()
    cvxpy = table[table["target"].str.contains("cvxpy")]
    assert len(cvxpy) and (cvxpy["met"] == "not measured: no cvxpy path in the results").all()
    pyomo = table[table["target"].str.startswith("kernel dual") & table["target"].str.contains("pyomo")]
    assert len(pyomo) == 1 and not pyomo["met"].iloc[0].startswith("not measured")  # measured: yes or no


@pytest.mark.slow
def test_quick_bench_verified_rows_agree(quick_run):
    _, df = quick_run
    verified = df[df["status"] == "optimal"]
    assert len(verified) > 40
    # A verified point has a relative duality gap <= 1e-6 (profile `scale`): its objective is
    # within about that of the best verified one of the same problem and n.
    bad = verified[verified["rel_obj_error"].abs() > 2e-6]
    bad = bad[bad["form"] != "lowrank"]  # a low-rank factor's point is checked against the exact K
    assert bad.empty, bad[["label", "n", "rel_obj_error"]].to_string()
    # The peers' objectives are computed by the project's formula and compared too.
    tight = df[(df["backend"] == "liblinear") & (df["form"] == "tight")]
    assert tight["rel_obj_error"].notna().all()
    assert (tight["rel_obj_error"] < 1e-2).all()


@pytest.mark.slow  # a whole command line run (10 s or more): with the heavier tests
def test_lp_bench_quick(tmp_path):
    """`--lp --quick`: the 1-norm LPs through HiGHS, primal and dual optima equal, every row verified."""
    import pandas as pd

    from experiments.bench.scaling import main

    assert main(["--lp", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    df = pd.read_csv(tmp_path / "lp.csv")
    assert len(df) == 8 and (df.status == "optimal").all()
    best = df.objective.min()
    assert ((df.objective - best).abs() <= 1e-9 * best).all()
    assert "l1_dual" in (tmp_path / "lp.md").read_text()


def test_path_patterns_can_name_a_problem():
    """--only/--exclude: 'kernel:libsvm' picks the kernel problem's LIBSVM paths, not the linear ones."""
    from experiments.bench.scaling import _matches, plan

    paths = plan(quick=False)
    picked = [p for p in paths if _matches(p, "kernel:working_set,kernel:libsvm")]
    assert {p.problem for p in picked} == {"kernel"}
    assert {p.form for p in picked} == {"working_set", "default", "tight"}
    # linear, kernel and the kernel at C = 10 and 100, both tolerances
    assert len([p for p in paths if _matches(p, "libsvm")]) == 8
    assert {p.problem for p in paths if _matches(p, "kernel_C100")} == {"kernel_C100"}
    assert all(p.problem == "linear" for p in paths if _matches(p, "linear"))
    assert not any(_matches(p, "kernel:soft_primal") for p in paths)


def test_a_path_stops_after_a_limit_but_the_peers_go_on():
    from experiments.bench.scaling import _exceeded

    row = {"n": 10_000, "layer": "cvxpy", "status": "optimal", "total_s": 12.0}
    assert _exceeded(row, budget=60) == ""
    assert _exceeded({**row, "total_s": 61.0}, budget=60) == "took 61.0 s > budget 60 s at n=10000"
    assert _exceeded({**row, "status": "killed"}, budget=60) == "killed at n=10000"
    assert _exceeded({**row, "status": "iteration_limit"}, budget=60) == "iteration limit at n=10000"
    # LIBLINEAR at its default cap of 1,000 iterations is the peer "at default settings": it runs at every n.
    assert _exceeded({**row, "layer": "sklearn", "status": "iteration_limit"}, budget=60) == ""


def test_a_killed_path_gets_a_killed_row_then_not_run_rows(tmp_path, monkeypatch):
    """A worker that returns nothing within --kill-after (and the grace, none here) gives a "killed" row; the path's
    larger n are not run."""
    from experiments.bench.scaling import KERNEL_D, QUICK_KERNEL_N, run
    from solvers import isolation

    monkeypatch.setattr(isolation, "KILL_GRACE_S", 0.0)  # killed at 1 ms: before any measurement can answer

    df = run(quick=True, budget=20, out_dir=tmp_path, only="kernel:libsvm", exclude="tight", progress=False,
             kill_after=1e-3)
    assert list(df["n"]) == list(QUICK_KERNEL_N) and (df["d"] == KERNEL_D).all()
    assert list(df["status"]) == ["killed", "not_run"]
    assert df["total_s"].iloc[0] >= 0 and df["message"].iloc[0].startswith("no result after")
    assert df["message"].iloc[1] == f"stopped: killed at n={QUICK_KERNEL_N[0]}"
    assert set(df["label"]) == {df["label"].iloc[0]} and df["label"].iloc[0]


def test_rounds_turn_the_order_and_keep_each_paths_fastest_finished_round(tmp_path, monkeypatch):
    """--rounds R: every (path, n) R times, the order at each n turned by one path a round (the worker after a
    large exit was slower whatever it ran), the fastest verified round kept with every round's time; a path
    over the budget in its first round is not measured again."""
    from dataclasses import asdict

    from experiments.bench import scaling

    only = "kernel:libsvm,kernel:direct/piqp/working_set"
    calls, times = [], {}

    saved = []  # rows in results.partial.csv when each measurement starts: every one before it is saved

    def fake_worker(task, limit):
        partial = tmp_path / "results.partial.csv"
        saved.append(len(pd.read_csv(partial)) if partial.exists() else 0)
        calls.append((task.path.label, task.n))
        k = sum(1 for c in calls if c == calls[-1])  # this (path, n)'s round
        total = times[task.path.label][k - 1]
        status = "error" if total is None else "converged" if task.path.layer == "sklearn" else "optimal"
        return {**asdict(task.path.row(task.n, status=status)), "total_s": 1.0 if total is None else total}

    monkeypatch.setattr(scaling, "run_in_worker", fake_worker)
    labels = [p.label for p in scaling.plan(True, scaling.ALL_BACKENDS) if scaling._matches(p, only)]
    assert len(labels) == 3  # LIBSVM at its default and tight tolerances, the working set
    times[labels[0]] = [0.30, 0.20, 0.25]
    times[labels[1]] = [0.20, 0.30, 0.10]
    times[labels[2]] = [None, 0.50, 0.40]  # an error in the first round: a finished round is kept, not it
    n = scaling.QUICK_KERNEL_N[0]
    monkeypatch.setattr(scaling, "sizes", lambda problem, quick: (n,))
    df = scaling.run(quick=True, budget=20, out_dir=tmp_path, only=only, progress=False, rounds=3)
    assert [label for label, _ in calls] == labels + labels[1:] + labels[:1] + labels[2:] + labels[:2]
    assert saved == [0, 1, 2, 3, 3, 3, 3, 3, 3]  # one row per (path, n), saved from its first round on
    assert list(df["label"]) == labels  # the plan's order in the table
    assert list(df["total_s"]) == [0.20, 0.10, 0.40] and list(df["status"])[2] == "optimal"
    kept_rounds = [row["round_total_s"] for row in df["extras"]]
    assert kept_rounds == [times[labels[0]], times[labels[1]], [1.0, 0.50, 0.40]]

    times[labels[0]] = [70.0, 0.1, 0.1]  # over the budget of 60 s once: no second round
    calls.clear()
    df = scaling.run(quick=True, budget=60, out_dir=tmp_path, only=only, progress=False, rounds=3)
    assert sum(1 for label, _ in calls if label == labels[0]) == 1 and df["total_s"].iloc[0] == 70.0


# ----------------------------------------------------------------------------- one closing step for every path


def test_closing_kernel_forms_reports_the_checked_status_not_the_solvers_claim(monkeypatch):
    """kernel_forms reported the solver's own status: a point it called optimal was `optimal` unchecked. Here the
    backend's point is halved after its solve (feasible, not optimal) and its claim kept."""
    from experiments.bench import kernel_forms

    real = kernel_forms.get_backend

    class Halved:
        def __init__(self, adapter):
            self.adapter = adapter

        def solve(self, model, options, time_limit=None):
            raw = self.adapter.solve(model, options, time_limit)
            alpha = model.variables["alpha"]
            alpha.value = 0.5 * alpha.value
            return raw

    table = kernel_forms.time_forms([40], [1.0], solvers=(("cvxpy", "clarabel"),), profile="high")
    assert (table["status"] == "optimal").all()  # checked: the true points are verified
    monkeypatch.setattr(kernel_forms, "get_backend", lambda layer, backend: Halved(real(layer, backend)))
    table = kernel_forms.time_forms([40], [1.0], solvers=(("cvxpy", "clarabel"),), profile="high")
    assert len(table) == 2 and not (table["status"] == "optimal").any(), table[["form", "status"]]


def test_closing_the_benchmarks_rows_stop_their_proof_at_the_budget(monkeypatch):
    """The benchmark closed its rows by hand, without the deadline: a claimed optimum whose proof the budget cut was
    `optimal`. Through solvers.closing.settle the row is `time_limit`, as solve()'s."""
    from experiments.bench import scaling

    task = scaling.BenchCase(scaling.BenchPath("kernel", "kernel_dual", "cvxpy", "clarabel", form="dense"), n=60, budget=60.0)
    X, y = scaling.bench_data(task.n, task.path.d)
    K = gram(Kernel("rbf", gamma=scaling.GAMMA), X)
    row = task.path.row(task.n)
    row.build_s = 0.0
    scaling._run_layer(task, row, None, y, K, None)
    assert row.status == "optimal"
    monkeypatch.setattr(scaling, "Deadline", lambda budget, began: Deadline(budget, clock=lambda: began + 2 * budget,
                                                                           began=began))  # passed at once
    row = task.path.row(task.n)
    row.build_s = 0.0
    scaling._run_layer(task, row, None, y, K, None)
    assert row.status == "time_limit" and "60 s" in row.message


@pytest.mark.slow  # two minutes: 84 measurements, each in its own worker
def test_quick_bench_measures_the_hard_and_bundled_families(tmp_path):
    """--family hard,bundled: the hard family over its quick seeds and scikit-learn's bundled sets, each with
    its peers and the fast paths; the report gives each family its section, and the blobs' sections stay empty
    of them."""
    from experiments.bench import scaling as bench

    assert bench.main(["--quick", "--family", "hard,bundled", "--out", str(tmp_path), "--no-progress",
                       "--budget", "20"]) == 0
    df = pd.read_csv(tmp_path / "results.csv")
    assert set(df["family"]) == {"hard", "bundled"}
    hard = df[df["family"] == "hard"]
    assert set(hard["problem"]) == {f"{kind}_hard_seed{s}" for kind in ("linear", "kernel") for s in (0, 1)}
    bundled = df[df["family"] == "bundled"]
    sizes = bundled.groupby("problem")[["n", "d"]].first()
    assert sizes.loc["linear_breast_cancer"].tolist() == [569, 30]
    assert sizes.loc["kernel_digits_parity"].tolist() == [1797, 64]
    assert {"linear_wine", "kernel_iris"} <= set(bundled["problem"])
    for problem, g in df.groupby("problem"):
        peers = g[g["layer"] == "sklearn"]
        assert set(peers["form"]) == {"default", "tight"}, problem
        fast = g[(g["layer"] != "sklearn") & (g["form"] == "working_set")]
        assert set(fast["layer"]) == {"direct", "cvxpy", "pyomo"}, problem
        assert (fast["status"] == "optimal").all(), (problem, fast[["label", "status"]])
    text = (tmp_path / "report.md").read_text()
    assert "## Data family `hard`" in text and "## Data family `bundled`" in text
    assert "### kernel_digits_parity" in text
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--family", "easy", "--out", str(tmp_path)])


def test_an_only_that_matches_no_path_or_a_report_without_a_run_is_one_line_and_exit_2(tmp_path, capsys):
    """--only naming no problem or label of the chosen families ran nothing and ended in a traceback (an empty table
    has no 'problem' column); it is refused before anything runs, naming the problems it could take."""
    from experiments.bench.scaling import main

    with pytest.raises(SystemExit) as exit_:
        main(["--family", "hard", "--only", "hard_seed", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1, err
    assert "--only 'hard_seed' matches no path" in err[0] and "kernel_hard_seed0" in err[0]
    assert not (tmp_path / "out").exists()  # refused before the output folder
    with pytest.raises(SystemExit) as exit_:  # a report of a run that never was: one line, not a traceback
        main(["--report-only", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and "results.csv does not exist" in err[0], err
    assert not (tmp_path / "out").exists()


def test_progress_is_a_line_per_measurement_in_a_log(tmp_path, monkeypatch, capsys):
    """Where stderr is no terminal (a log, a pipe: no bar is drawn) the benchmark says what finished, one line per
    (path, n), as the runner does per solve; --no-progress (progress=False) keeps it silent."""
    from experiments.bench.scaling import QUICK_KERNEL_N, run
    from solvers import isolation

    monkeypatch.setattr(isolation, "KILL_GRACE_S", 0.0)  # killed at 1 ms: no solve runs, the lines are the point
    df = run(quick=True, budget=20, out_dir=tmp_path, only="kernel:libsvm", exclude="tight", progress=True,
             kill_after=1e-3)
    lines = capsys.readouterr().err.strip().splitlines()
    label = df["label"].iloc[0]
    assert len(lines) == 2, lines
    assert re.fullmatch(rf"\[1/2\] {re.escape(label)} n={QUICK_KERNEL_N[0]}: killed \(\d+\.\d\d s\)", lines[0])
    assert lines[1] == f"[2/2] {label} n={QUICK_KERNEL_N[1]}: not run (stopped: killed at n={QUICK_KERNEL_N[0]})"
    run(quick=True, budget=20, out_dir=tmp_path, only="kernel:libsvm", exclude="tight", progress=False,
        kill_after=1e-3)
    assert capsys.readouterr().err == ""


def test_the_full_bench_measures_the_hard_kernel_family_at_every_C_of_the_targets():
    """The kernel targets are stated at C = 1, 10 and 100 on the hard family: the full plan has each seed at each
    C (n = 5,000 for the larger C's, with their peers at that C); the quick plan keeps C = 1."""
    from experiments.bench import scaling as bench

    full = {(p.problem, p.layer) for p in bench.plan(False, families=("hard",))}
    for C in (10, 100):
        for seed in bench.HARD_SEEDS:
            problem = f"kernel_hard_seed{seed}_C{C}"
            assert bench.problem_C(problem) == C
            assert bench.sizes(problem, quick=False) == (5_000,)
            assert {(problem, "sklearn"), (problem, "direct"), (problem, "pyomo"), (problem, "cvxpy")} <= full
    assert bench.problem_C("kernel_hard_seed0") == bench.C_VALUE
    assert not any("_C" in p.problem for p in bench.plan(True, families=("hard",)))
