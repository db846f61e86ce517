"""check_point: the notes' published answers pass, perturbed ones fail with the condition and the point named,
at every scale of the data; the grader's batch and its bad answers; the exercises and their keys.

Tolerances: an answer printed to 4 decimals (Example 5.1: w = (-0.9229, 0.7627), b = 1.1976) is judged at the
rubric's default 1e-3 (rounding to 4 decimals moves f(x_i) by up to 9.3e-4 margin units on these data); the exact
optimum at 1e-6, the `high` profile's bar, where the printed answer must fail.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from experiments.datasets import example_5_1, exercise_5_4, exercise_5_5
from experiments.grading import rubric as rubric_module
from experiments.grading.cli import main as grade_main
from experiments.grading.exercises import main as exercise_main
from formulations.errors import SVMInputError
from formulations.kernels import Kernel
from solvers import grading
from solvers.api import solve
from solvers.grading import check_point

REPO = Path(__file__).resolve().parents[1]
PRINTED = {"w": [-0.9229, 0.7627], "b": 1.1976}
TIGHT, FOUR_DECIMALS = 1e-6, 1e-3


def _tight(formulation, X, y, **kw):
    sol = solve(formulation, X, y, layer="cvxpy", backend="clarabel", profile="high", **kw)
    assert sol.status == "optimal", sol.checks.get("verdict")
    return sol


@pytest.fixture(scope="module")
def ex51():
    ds = example_5_1()
    return ds, _tight("hard_primal", ds.X, ds.y), _tight("dual", ds.X, ds.y)


def _failed(result) -> dict:
    return {c.name: c for c in result.failed}


# ------------------------------------------------------------------ the notes' answers


def test_example_5_1_as_printed_passes_at_the_four_decimal_tolerance_only(ex51):
    ds, _, _ = ex51
    printed = check_point("hard_primal", ds.X, ds.y, **PRINTED, tol=FOUR_DECIMALS)
    assert printed.optimal, printed.summary()
    worst = max(c.value for c in printed.conditions if math.isfinite(c.value))
    assert 1e-5 < worst < FOUR_DECIMALS  # the rounding shows (2.8e-4), well inside the bar
    assert printed.distance["w"] < 1e-4 and printed.distance["b"] < 1e-4
    tight = check_point("hard_primal", ds.X, ds.y, **PRINTED, tol=TIGHT)
    assert not tight.optimal
    assert "primal feasibility" in _failed(tight)  # a support vector 2.8e-4 inside its margin


def test_example_5_1_exact_optimum_passes_at_the_tight_tolerance(ex51):
    ds, primal, _ = ex51
    result = check_point("hard_primal", ds.X, ds.y, w=primal.w, b=primal.b, tol=TIGHT)
    assert result.optimal, result.summary()
    assert result.distance["w"] < 1e-8
    np.testing.assert_allclose(result.optimum["w"], PRINTED["w"], atol=5e-5)
    assert "alpha (estimated from w, b)" in result.derived  # the multipliers of a primal point, derived


def test_example_5_2_alpha_passes_and_determines_w_and_b(ex51):
    ds, _, dual = ex51
    result = check_point("dual", ds.X, ds.y, alpha=dual.proved_alpha, tol=TIGHT)
    assert result.optimal, result.summary()
    np.testing.assert_allclose(result.derived["w (from alpha)"], PRINTED["w"], atol=5e-5)
    lo, hi = result.derived["b interval (from alpha)"]
    assert lo == pytest.approx(PRINTED["b"], abs=5e-5) and hi == pytest.approx(PRINTED["b"], abs=5e-5)
    assert int(np.count_nonzero(dual.proved_alpha)) == 3  # three support vectors, as the notes' plot


def test_exercise_5_4_soft_margin_C10_primal_and_dual_pass():
    ds = exercise_5_4()
    sol = _tight("soft_primal", ds.X, ds.y, C=10)
    primal = check_point("soft_primal", ds.X, ds.y, C=10, w=sol.w, b=sol.b, xi=sol.xi, tol=TIGHT)
    assert primal.optimal, primal.summary()
    dual = _tight("dual", ds.X, ds.y, C=10)
    answered = check_point("dual", ds.X, ds.y, C=10, alpha=dual.proved_alpha, b=dual.b, tol=TIGHT)
    assert answered.optimal, answered.summary()
    assert max(answered.derived["xi (from w, b)"]) > 1  # (6, 8) of B is misclassified


def test_exercise_5_5_kernel_alpha_passes_and_w_is_refused():
    ds = exercise_5_5()
    kernel = Kernel("rbf", gamma=1.0)
    sol = _tight("kernel_dual", ds.X, ds.y, C=1.0, kernel=kernel)
    result = check_point("kernel_dual", ds.X, ds.y, C=1.0, kernel=kernel, alpha=sol.proved_alpha, tol=TIGHT)
    assert result.optimal, result.summary()
    with pytest.raises(SVMInputError, match=r"^w: the kernel dual has no w"):
        check_point("kernel_dual", ds.X, ds.y, C=1.0, kernel=kernel, alpha=sol.alpha, w=[1.0, 2.0])


# ------------------------------------------------------------------ perturbed answers, the condition named


def test_an_alpha_off_the_support_fails_complementarity_at_its_point(ex51):
    """The notes' KKT system for (w, b, lambda): a multiplier on a point outside its margin is named there."""
    ds, primal, dual = ex51
    alpha = dual.proved_alpha.copy()
    margins = ds.y * (ds.X @ primal.w + primal.b)
    i = int(np.flatnonzero(alpha == 0)[np.argmax(margins[alpha == 0])])  # the point farthest outside
    alpha[i] = 0.4
    result = check_point("hard_primal", ds.X, ds.y, w=primal.w, b=primal.b, alpha=alpha, tol=FOUR_DECIMALS)
    comp = _failed(result)["complementarity"]
    assert comp.point == i + 1
    assert comp.why.startswith(f"alpha = 0.4 but its margin is {margins[i]:.6g}")
    assert {"balance", "stationarity"} <= set(_failed(result)) and not result.optimal


def test_a_negative_alpha_fails_dual_feasibility_at_its_point(ex51):
    ds, _, dual = ex51
    alpha = dual.proved_alpha.copy()
    alpha[7] = -0.01
    cond = _failed(check_point("dual", ds.X, ds.y, alpha=alpha, tol=FOUR_DECIMALS))["dual feasibility"]
    assert cond.point == 8 and cond.why == "alpha = -0.01 < 0"


def test_alpha_above_C_and_a_wrong_slack_are_named():
    ds = exercise_5_4()
    sol = _tight("soft_primal", ds.X, ds.y, C=10)
    alpha = sol.proved_alpha.copy()
    alpha[3] = 10.5
    cond = _failed(check_point("dual", ds.X, ds.y, C=10, alpha=alpha, tol=FOUR_DECIMALS))["dual feasibility"]
    assert cond.point == 4 and "> C = 10" in cond.why
    xi = sol.xi.copy()
    xi[5] += 0.2
    result = check_point("soft_primal", ds.X, ds.y, C=10, w=sol.w, b=sol.b, xi=xi, tol=FOUR_DECIMALS)
    assert not result.optimal and list(_failed(result)) == ["slacks"]
    assert _failed(result)["slacks"].point == 6


def test_a_scaled_alpha_fails_the_gap_and_the_optimum(ex51):
    ds, _, dual = ex51
    result = check_point("dual", ds.X, ds.y, alpha=1.01 * dual.proved_alpha, tol=FOUR_DECIMALS)
    failed = _failed(result)
    assert "duality gap" in failed and "optimum" in failed
    assert "balance" not in failed and "dual feasibility" not in failed


def test_a_claimed_objective_is_checked(ex51):
    ds, primal, _ = ex51
    result = check_point("hard_primal", ds.X, ds.y, w=primal.w, b=primal.b, objective=0.8, tol=FOUR_DECIMALS)
    assert list(_failed(result)) == ["objective"] and not result.optimal


# ------------------------------------------------------------------ other scales: the same verdicts


@pytest.mark.parametrize("scale, shift", [(1e3, 0.0), (1e-3, 0.0), (1.0, 100.0), (1e3, -1e4)])
def test_verdicts_hold_at_other_scales(ex51, scale, shift):
    """X -> s X + t: (w / s, b - w't / s) is the optimum; a b moved by 1% of max |f| is not (the margin's
    points named), nor is a w turned by 1%."""
    ds, primal, _ = ex51
    X = scale * ds.X + shift
    w = primal.w / scale
    b = primal.b - float(w @ np.full(2, shift))
    exact = check_point("hard_primal", X, ds.y, w=w, b=b, tol=TIGHT)
    assert exact.optimal, exact.summary()
    f_scale = float(np.max(np.abs(X @ w + b)))
    moved = check_point("hard_primal", X, ds.y, w=w, b=b - 0.01 * f_scale, tol=FOUR_DECIMALS)
    cond = _failed(moved)["primal feasibility"]
    assert ds.y[cond.point - 1] > 0  # a point of A, pushed inside its margin
    turn = np.array([[1.0, -0.01], [0.01, 1.0]])
    turned = check_point("hard_primal", X, ds.y, w=turn @ w, b=b, tol=FOUR_DECIMALS)
    assert not turned.optimal and "primal feasibility" in _failed(turned)


# ------------------------------------------------------------------ bad fields: one message naming the field


@pytest.mark.parametrize("fields, words", [
    ({"w": [1.0, 2.0, 3.0], "b": 0.0}, "w has 3 entries but needs 2"),
    ({"w": [1.0, float("nan")], "b": 0.0}, "w entry 2 is nan"),
    ({"w": [1.0, "abc"], "b": 0.0}, "w must be numeric"),
    ({"w": [1.0, 2.0], "b": [1.0, 2.0]}, "b must be one number"),
    ({"w": [1.0, 2.0]}, "hand in w and b (or alpha)"),
])
def test_bad_fields_are_named(ex51, fields, words):
    ds, _, _ = ex51
    with pytest.raises(SVMInputError) as err:
        check_point("hard_primal", ds.X, ds.y, **fields)
    assert words in str(err.value)


def test_the_rubric_knows_every_condition():
    assert set(rubric_module.CONDITIONS) == set(grading.CONDITIONS)


# ------------------------------------------------------------------ the command lines


def _data_csv(tmp_path: Path, ds) -> Path:
    path = tmp_path / "data.csv"
    path.write_text("x1,x2,y\n" + "".join(f"{float(a)!r},{float(b)!r},{int(c)}\n" for (a, b), c in zip(ds.X, ds.y)))
    return path


def _one_error_line(capsys, argv, main=grade_main) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err + captured.out, captured.err
    return lines[0]


@pytest.fixture
def classroom(tmp_path, ex51):
    ds, primal, dual = ex51
    data = _data_csv(tmp_path, ds)
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "ada.json").write_text(json.dumps({"student": "Ada", "formulation": "hard_primal", **PRINTED}))
    (answers / "bo.csv").write_text("formulation,dual\nalpha," + ",".join(repr(float(a)) for a in dual.proved_alpha) + "\n")
    (answers / "cy.json").write_text(json.dumps({"formulation": "hard_primal", "w": [-0.9229, 0.7627], "b": 1.3}))
    (answers / "dee.json").write_text(json.dumps({"formulation": "hard_primal", "w": [-0.9229], "b": 1.1976}))
    return data, answers


def test_a_batch_with_a_malformed_answer_grades_the_rest(classroom, tmp_path, capsys):
    import pandas as pd

    data, answers = classroom
    out = tmp_path / "grades"
    assert grade_main(["--data", str(data), "--answer", str(answers), "--out", str(out)]) == 0
    table = pd.read_csv(out / "summary.csv", keep_default_na=False).set_index("answer")
    assert list(table.verdict) == ["optimal", "optimal", "not optimal", "not graded"]
    assert table.loc["dee.json", "error"] == "dee.json: w has 1 entries but needs 2 (one per feature, d = 2)"
    assert table.loc["cy.json", "failed"].startswith("primal feasibility")
    assert float(table.loc["cy.json", "credit"]) == 0 < 10 == float(table.loc["ada.json", "credit"])
    page = (out / "cy.md").read_text()
    assert "| primal feasibility | NO" in page and "tolerance: 0.001" in page
    assert "dee.json" in (out / "summary.md").read_text()
    parquet = pd.read_parquet(out / "summary.parquet").set_index("answer")
    assert list(parquet.verdict) == list(table.verdict) and np.isnan(parquet.loc["cy.json", "duality gap"])
    # cy's b is 0.1 off: no point is on its margin, so no multipliers are estimated and none of their conditions is
    # met (alpha = 0 met three for nothing); the table says so
    assert table.loc["cy.json", "multipliers"] == "none: no point on its margin"
    assert table.loc["bo.csv", "multipliers"] == "handed in" and table.loc["dee.json", "multipliers"] == ""
    assert "no multipliers: no point is on its margin" in page
    assert "verdict: " in page and "(on alpha = 0: no multipliers could be estimated" in page  # its gap of 1 explained
    html = (out / "summary.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<table>" in html and "dee.json" in html


@pytest.mark.parametrize("answer, words", [
    ({"formulation": "hard_primal", "w": [1.0], "b": 1.0}, "w has 1 entries but needs 2"),
    ({"formulation": "hard_primal", "w": [1.0, 2.0], "b": "NaN"}, "b is 'NaN', not a finite number"),
    ({"formulation": "dual", "alpha": ["x"] * 60}, "alpha entry 1 is 'x', not a number"),
    ({"formulation": "hard_primal", "w": [1.0, 2.0], "b": 1.0, "y": [1.0] * 60}, "y: the answer's labels do not match"),
    ({"formulation": "kernel_dual", "C": 1, "kernel": "rbf", "w": [1.0, 2.0], "alpha": [0.0] * 60}, "w: the kernel dual"),
])
def test_a_bad_single_answer_is_one_line_exit_2(classroom, tmp_path, capsys, answer, words):
    data, _ = classroom
    path = tmp_path / "one.json"
    path.write_text(json.dumps(answer))
    line = _one_error_line(capsys, ["--data", str(data), "--answer", str(path), "--out", str(tmp_path / "g")])
    assert line.startswith("error: one.json: ") and words in line, line


def test_a_rubric_sets_the_tolerance_and_the_weights(classroom, tmp_path, capsys):
    data, answers = classroom
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('tolerance = 1e-6\npoints = 20\n[weights]\n"primal feasibility" = 0\n')
    out = tmp_path / "g"
    assert grade_main(["--data", str(data), "--answer", str(answers / "ada.json"), "--out", str(out),
                       "--rubric", str(rubric)]) == 0
    page = (out / "ada.md").read_text()
    assert page.startswith("# ada.json: not optimal")  # 4 decimals are not an exact answer
    bad = tmp_path / "bad.toml"
    bad.write_text("tolerance = 2\n")
    line = _one_error_line(capsys, ["--data", str(data), "--answer", str(answers), "--rubric", str(bad)])
    assert "tolerance must be a number in (0, 1)" in line


def test_argument_errors_come_before_the_solver_stack(tmp_path):
    """One line, exit code 2, and neither pandas nor cvxpy imported: the commands parse first."""
    code = ("import sys; from experiments.grading.cli import main as g; from experiments.grading.exercises import "
            "main as e; rc = (g(['--data', 'missing.csv', '--answer', 'x.json']), e(['--kind', 'hard', '--seed', "
            "'-1'])); assert not {'pandas', 'cvxpy', 'pyomo'} & set(sys.modules), sorted(sys.modules); print(rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "(2, 2)", done.stderr
    assert done.stderr.splitlines() == ["error: --data missing.csv: no such file", "error: --seed must be >= 0, got -1"]


# ------------------------------------------------------------------ exercises and their keys


@pytest.mark.parametrize("kind", ["hard", "dual", "soft", "kernel"])
def test_an_exercise_is_the_same_for_the_same_seed_and_its_key_grades_optimal(tmp_path, capsys, kind):
    def files(folder):
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}

    for run in ("a", "b"):
        assert exercise_main(["--kind", kind, "--seed", "5", "--out", str(tmp_path / run)]) == 0
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a-key") == files(tmp_path / "b-key")
    assert "key.json" not in files(tmp_path / "a")  # the student's copy holds no key
    assert exercise_main(["--kind", kind, "--seed", "6", "--out", str(tmp_path / "c")]) == 0
    assert files(tmp_path / "c")["data.csv"] != files(tmp_path / "a")["data.csv"]
    rubric = tmp_path / "tight.json"
    rubric.write_text(json.dumps({"tolerance": TIGHT}))
    out = tmp_path / "g"
    assert grade_main(["--data", str(tmp_path / "a" / "data.csv"), "--answer", str(tmp_path / "a-key" / "key.json"),
                       "--out", str(out), "--rubric", str(rubric), "-q"]) == 0
    assert (out / "key.md").read_text().startswith("# key.json: optimal")


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log_scale=hs.floats(-3, 3), shift=hs.floats(-1e3, 1e3), flip=hs.booleans(), seed=hs.integers(0, 2**16))
def test_verdicts_are_invariant_under_rescaling_shift_permutation_and_label_flip(ex51, log_scale, shift, flip, seed):
    """The exact optimum, carried through X -> s X + t, a permutation of the points and y -> -y (w, b -> -w, -b),
    stays optimal at 1e-6; b moved by 1% of max |f| fails primal feasibility at the moved point's new row."""
    ds, primal, _ = ex51
    scale, sign = 10.0 ** log_scale, -1.0 if flip else 1.0
    order = np.random.default_rng(seed).permutation(ds.n)
    X, y = scale * ds.X[order] + shift, sign * ds.y[order]
    w = sign * primal.w / scale
    b = sign * primal.b - float(w @ np.full(2, shift))
    exact = check_point("hard_primal", X, y, w=w, b=b, tol=TIGHT)
    assert exact.optimal, exact.summary()
    f_scale = float(np.max(np.abs(X @ w + b)))
    moved = check_point("hard_primal", X, y, w=w, b=b - sign * 0.01 * f_scale, tol=FOUR_DECIMALS)
    cond = _failed(moved)["primal feasibility"]
    assert sign * y[cond.point - 1] > 0  # a point of the class b moved against


def test_the_default_tolerance_passes_the_notes_printed_answer_and_a_w_b_answer_is_told_of_its_margins():
    """check_point's default is the bar of a hand answer printed to 4 decimals (the rubric's too): the notes'
    Example 5.1 as printed is optimal without a tol. A w, b answer that misses is told first about what it handed
    in (its margins, the distance), not about the multipliers the checks estimated from it (nor the gap they give)."""
    from experiments.grading.rubric import DEFAULT_TOLERANCE
    from solvers.grading import HAND_ROUNDED, MULTIPLIER_CONDITIONS

    assert HAND_ROUNDED == DEFAULT_TOLERANCE
    ds = example_5_1()
    assert check_point("hard_primal", ds.X, ds.y, **PRINTED).optimal
    scaled = check_point("hard_primal", ds.X, ds.y, w=[-0.9229 * 1.05, 0.7627 * 1.05], b=1.1976)
    assert not scaled.optimal
    first = sorted(scaled.failed, key=lambda c: c.estimated)[0]
    assert not first.estimated and first.why in scaled.summary()
    assert all(c.estimated for c in scaled.conditions if c.name in MULTIPLIER_CONDITIONS)


def test_a_w_b_answer_with_no_point_on_its_margin_gets_no_credit_for_multipliers_none_could_give():
    """Where no point is on its margin, no alpha is estimated: alpha = 0 met dual feasibility, balance and
    complementarity for nothing, so a wild answer got the credit of a near one. Now the multipliers' conditions are
    not met there, with the reason, and a 3-decimal answer (within the bar of the optimum) gets more than a wild one."""
    from experiments.grading.rubric import Rubric
    from solvers.grading import MULTIPLIER_CONDITIONS

    ds = example_5_1()
    near = check_point("hard_primal", ds.X, ds.y, w=[-0.923, 0.763], b=1.198)
    wild = check_point("hard_primal", ds.X, ds.y, w=[1.0, 1.0], b=0.0)
    judged = {c.name: c for c in wild.conditions if c.name in MULTIPLIER_CONDITIONS}
    assert len(judged) == 5 and not any(c.holds for c in judged.values())
    assert all(math.isnan(c.value) and c.why.startswith("no multipliers: no point is on its margin")
               for c in judged.values())
    assert all(math.isfinite(c.value) for c in near.conditions)  # a point on its margin: alpha estimated
    assert Rubric().credit(wild.conditions) == 0 < Rubric().credit(near.conditions)
