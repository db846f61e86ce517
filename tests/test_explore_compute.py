"""The explorer's computing without a browser (experiments.explore.compute) and its CLI's boundary."""

import math
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from experiments.explore import compute as ec
from experiments.runner.cli import read_csv_dataset
from formulations import recovery
from formulations.errors import SVMInputError
from solvers.api import solve

ROOT = Path(__file__).resolve().parents[1]
REL = 1e-6  # profile "high" verifies to 1e-6; the page must show what solve() gives to that accuracy


def test_example_5_1_hard_margin_matches_the_notes():
    X, y = ec.start_points("example_5_1")
    result = ec.explore(X, y, ec.Settings(C=math.inf, formulation="dual"))
    sol = result.solution
    assert sol.status == "optimal" and sol.formulation == "dual"
    np.testing.assert_allclose(sol.w, [-0.9229, 0.7627], atol=1e-4)
    assert sol.b == pytest.approx(1.1976, abs=1e-4)
    summary = result.summary()
    assert summary["relative gap"] < 1e-6
    lower, upper = summary["b interval"]
    assert lower <= sol.b + 1e-6 * abs(sol.b) and sol.b <= upper + 1e-6 * abs(sol.b)
    # three free support vectors on their margins (the notes' figure), none at a bound (no bound: C = inf)
    free = result.codes == recovery.FREE
    assert free.sum() == 3 and not np.any(result.codes == recovery.AT_BOUND)
    np.testing.assert_allclose((y * result.decision)[free], 1.0, rtol=1e-6)
    assert result.separability.separable is True
    table = result.point_table()
    assert list(table.columns) == ["x1", "x2", "label", "alpha", "slack", "y_f", "role"]
    assert (table["slack"] <= 1e-6).all()


def test_hard_margin_on_exercise_5_4_gives_the_verified_common_point():
    X, y = ec.start_points("exercise_5_4")
    result = ec.explore(X, y, ec.Settings(C=math.inf, formulation="primal"))
    assert result.solution.formulation == "hard_primal"
    assert result.solution.status != "optimal" and not result.has_point
    cert = result.separability
    assert cert.separable is False and cert.verified
    # the common point is a convex combination of each class's points
    XA, XB = X[y > 0], X[y < 0]
    np.testing.assert_allclose(XA.T @ cert.lam, cert.point, atol=1e-7)
    np.testing.assert_allclose(XB.T @ cert.mu, cert.point, atol=1e-7)


def test_soft_margin_slacks_and_segments_end_on_the_own_margin():
    X, y = ec.start_points("exercise_5_4")
    result = ec.explore(X, y, ec.Settings(C=10.0, formulation="primal", compare_layers=True))
    sol = result.solution
    assert sol.status == "optimal" and sol.formulation == "soft_primal"
    table = result.point_table()
    inside = table["slack"] > 1e-9
    # the notes' Exercise 5.4: xi_18 = 0.2911, xi_56 = 2.3600 (1-based rows)
    assert table.loc[17, "slack"] == pytest.approx(0.2911, abs=1e-4)
    assert table.loc[55, "slack"] == pytest.approx(2.3600, abs=1e-4)
    segments = result.slack_segments()
    assert len(segments) == inside.sum()
    ends = segments[:, 2:]
    np.testing.assert_allclose(y[inside.to_numpy()] * (ends @ sol.w + sol.b), 1.0, rtol=1e-9)
    # the other layer on request: same optimum
    other = result.other
    assert other.layer == "cvxpy" and other.status == "optimal"
    np.testing.assert_allclose(other.w, sol.w, rtol=REL)
    assert len(ec.layers_table(result)) == 2


def test_kernel_grid_matches_the_decision_at_the_points():
    X, y = ec.start_points("gendata(20, 20)")
    settings = ec.Settings(C=10.0, formulation="kernel_dual", kernel="rbf", gamma=1.0)
    result = ec.explore(X, y, settings, window=(np.array([-3.0, -3.0]), np.array([3.0, 3.0])))
    assert result.solution.status == "optimal"
    g = result.grid
    assert g["f"].shape == (ec.GRID_SIZE, ec.GRID_SIZE) and g["xs"][0] == -3.0 and g["ys"][-1] == 3.0
    # the grid and the points use the same f: the grid at a point's own coordinates equals f(x_i)
    again = ec.decision_values(result.solution, settings, X, y, X[:3])
    np.testing.assert_allclose(again, result.solution.decision[:3], rtol=1e-6,
                               atol=1e-6 * np.abs(result.solution.decision).max())


def test_kernel_values_far_from_the_origin_are_the_exact_ones():
    """Points clicked far from the origin (moons + 1e4, 8 copied with the other label), rbf gamma = 1e3, C = 1000:
    the page's solve and its contours' f are those of the exact K (before: `optimal` with f 6% off)."""
    from scipy.spatial.distance import cdist
    from sklearn.datasets import make_moons

    X, y = make_moons(80, noise=0.1, random_state=3)
    X, y = np.vstack([X, X[:8]]) + 1e4, np.concatenate([2.0 * y - 1, 1 - 2.0 * y[:8]])
    settings = ec.Settings(C=1000.0, formulation="kernel_dual", kernel="rbf", gamma=1e3, backend="clarabel")
    result = ec.explore(X, y, settings)
    centered = X - X.mean(axis=0)
    exact = np.exp(-1e3 * cdist(centered, centered, "sqeuclidean"))
    ref = solve("kernel_dual", None, y, layer="cvxpy", backend="clarabel", C=1000.0, K=exact, profile="high")
    assert result.solution.status == "optimal" and ref.status == "optimal"
    scale = np.abs(ref.decision).max()
    np.testing.assert_allclose(result.solution.decision, ref.decision, rtol=0, atol=REL * scale)
    np.testing.assert_allclose(ec.decision_values(result.solution, settings, X, y, X), ref.decision, rtol=0,
                               atol=REL * scale)


@pytest.mark.parametrize("X, y, words", [
    (np.empty((0, 2)), np.empty(0), "class +1 has no point"),
    (np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([1.0, 1.0]), "class -1 has no point"),
    (np.array([[0.0, np.nan], [1.0, 2.0]]), np.array([1.0, -1.0]), "not a finite number"),
])
def test_bad_points_are_named(X, y, words):
    with pytest.raises(SVMInputError, match=words.replace("+", r"\+")):
        ec.explore(X, y, ec.Settings())


@pytest.mark.parametrize("text, words", [("abc", "'abc' is not a number"), ("0", "must be > 0"), ("-2", "must be > 0"),
                                         ("1e999", "'1e999' is too large for a float"), ("-1e999", "too large"),
                                         ("-inf", "must be > 0"),
                                         ("nan", "must be > 0")])
def test_C_typed_as_text_is_refused(text, words):
    with pytest.raises(SVMInputError, match=words):
        ec.parse_C(text)


def test_C_is_read_by_the_command_line_s_rules(capsys):
    """1e999 typed in the page is refused as `python -m experiments.run --C 1e999` refuses it (it silently became
    the hard margin): one validator, validation.parse_number, with the same words."""
    from experiments.runner.cli import main as run_main

    with pytest.raises(SVMInputError) as page:
        ec.parse_C("1e999")
    assert run_main(["--datasets", "example_5_1", "--C", "1e999", "-q"]) == 2
    cli = capsys.readouterr().err
    same = "'1e999' is too large for a float (it would read as infinity); write inf if infinity is meant"
    assert same in str(page.value) and same in cli


def test_C_parsing_and_settings_errors():
    assert ec.parse_C(" 10 ") == 10.0 and math.isinf(ec.parse_C("inf"))
    X, y = ec.start_points("example_5_1")
    with pytest.raises(SVMInputError, match="rbf kernel needs the kernel_dual"):
        ec.explore(X, y, ec.Settings(kernel="rbf", formulation="dual"))
    with pytest.raises(SVMInputError, match="backend must be one of"):
        ec.explore(X, y, ec.Settings(backend="nope"))
    with pytest.raises(SVMInputError, match="unknown start data"):
        ec.start_points("nope")


def test_csv_export_is_read_by_the_runner(tmp_path):
    X, y = ec.start_points("exercise_5_4")
    path = tmp_path / "points.csv"
    path.write_text(ec.points_csv(X, y))
    ds, mapping = read_csv_dataset(str(path), ec.LABEL_COLUMN)
    np.testing.assert_array_equal(ds.X, X)  # %.17g: the same doubles
    np.testing.assert_array_equal(ds.y, y)
    direct = solve("dual", X, y, layer="cvxpy", backend="clarabel", C=10.0, profile="high")
    again = solve("dual", ds.X, ds.y, layer="cvxpy", backend="clarabel", C=10.0, profile="high")
    np.testing.assert_allclose(again.w, direct.w, rtol=1e-9)  # same data; the solver itself varies ~1e-13


def test_the_page_offers_the_apis_methods():
    """The method control lists solvers.api.METHODS, "auto" (the API's default) first chosen."""
    import inspect

    assert ec.METHODS == ("full", "working_set", "auto")
    assert ec.Settings().method == inspect.signature(solve).parameters["method"].default == "auto"


# ---------------------------------------------------------------- the limits of a request


def test_a_request_past_the_time_limit_says_so():
    """solve()'s time_limit stops the request; the notice names the explorer's limit and the solver's message."""
    X, y = ec.start_points("example_5_1")
    result = ec.explore(X, y, ec.Settings(C=1.0, compare_layers=True), time_limit=1e-6)
    assert result.solution.status == result.other.status == "time_limit"
    assert not result.has_point and result.grid == {}  # nothing drawn from a point that was never verified
    notice = result.notice()
    assert "stops a request at 1e-06 s" in notice and "pyomo/clarabel and cvxpy/clarabel" in notice
    assert result.solution.message in notice and "time limit" in result.solution.message
    assert ec.explore(X, y, ec.Settings(C=1.0)).notice() == ""  # 30 s: example 5.1 is solved well within it


def test_the_page_shows_the_time_limit_when_hit(monkeypatch):
    from experiments.explore.page import ExplorerPage

    monkeypatch.setattr(ec, "SOLVE_TIME_LIMIT_S", 1e-6)
    page = ExplorerPage(start="example_5_1")
    assert page.message.visible and page.message.alert_type == "warning"
    assert "data-key='notice'" in page.message.object and "stops a request at 1e-06 s" in page.message.object
    assert "time_limit" in page.numbers.object  # the status row says it too
    monkeypatch.setattr(ec, "SOLVE_TIME_LIMIT_S", 30.0)
    page.C_text.value = "10"
    assert not page.message.visible and "optimal" in page.numbers.object


def test_points_past_the_cap_are_refused_before_any_copy():
    X, y = ec.start_points("overlapping(200)")
    with pytest.raises(SVMInputError, match="the explorer solves at most 150 points, and the page holds 200"):
        ec.explore(X, y, ec.Settings(), max_points=150)
    assert ec.MAX_POINTS == 1_000
    many = np.zeros(ec.MAX_POINTS + 1)
    with pytest.raises(SVMInputError, match=r"at most 1,000 points, and the page holds 1,001: .*run --data"):
        ec.check_points(object(), many)  # X is never read: refused on the count alone
    with pytest.raises(SVMInputError, match="at most 1,000 points"):
        ec.points_csv(np.zeros((1001, 2)), np.where(np.arange(1001) % 2, 1.0, -1.0))


def test_the_page_says_the_cap_when_hit(monkeypatch):
    from experiments.explore.page import ExplorerPage

    monkeypatch.setattr(ec, "MAX_POINTS", 59)
    page = ExplorerPage(start="example_5_1")  # 60 points
    assert page.message.visible and page.message.alert_type == "danger"
    assert "at most 59 points, and the page holds 60" in page.message.object


def test_kernel_decision_values_on_the_grid_in_blocks():
    """The grid's decision values, computed GRID_CHUNK rows at a time, are those of one call."""
    from formulations.kernels import decision_function

    X, y = ec.start_points("exercise_5_4")
    result = ec.explore(X, y, ec.Settings(C=10.0, formulation="kernel_dual", kernel="rbf", gamma=0.5))
    sol = result.solution
    Z = np.column_stack([np.repeat(np.linspace(0, 10, 70), 70), np.tile(np.linspace(0, 10, 70), 70)])
    sv = recovery.support_mask(sol.alpha)
    whole = decision_function(result.settings.kernel_object(), X[sv], (sol.alpha * y)[sv], sol.b, Z)
    assert len(Z) > ec.GRID_CHUNK
    np.testing.assert_allclose(ec.decision_values(sol, result.settings, X, y, Z), whole, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- the CLI's boundary


def _run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "experiments.explore", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_help_is_fast_and_names_the_options():
    start = time.perf_counter()
    out = _run_cli("--help")
    elapsed = time.perf_counter() - start
    assert out.returncode == 0
    for option in ("--port", "--address", "--allow-host", "--no-browser"):
        assert option in out.stdout
    print(f"--help took {elapsed:.2f} s")


@pytest.mark.parametrize("args, words", [(["--port", "abc"], "not a port number"),
                                         (["--port", "70000"], "port must be in 1..65535")])
def test_bad_options_exit_2_with_one_line(args, words):
    out = _run_cli(*args, "--no-browser")
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_a_port_in_use_is_one_line_and_exit_2(monkeypatch, capsys):
    """Refused before Panel is imported (in process, no server, no timeout: the answer does not wait on the
    imports, seconds on a loaded machine); with Panel made unimportable, reaching it fails the test."""
    from experiments.explore.app import main

    monkeypatch.setitem(sys.modules, "panel", None)  # `import panel` raises ImportError from here on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["--port", str(port), "--no-browser"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------- the page's wiring, without a server


def test_page_wiring_without_a_server():
    from experiments.explore.page import ExplorerPage

    page = ExplorerPage(start="example_5_1")  # no server session: each request is solved at once
    assert "request #1 shown" in page.state.object and "60</span> points" in page.state.object
    assert 'data-key="w1">-0.922' in page.numbers.object
    assert len(page.alpha.data["alpha"]) == 60 and len(page.sv.data["x"]) == 3 and len(page.info.data["x"]) == 60
    assert not page.busy.visible  # the spinner shows only while a solve runs
    page.C_text.value = "abc"  # C typed as text: a message, nothing drawn, no exception
    assert page.message.visible and "C: &#x27;abc&#x27; is not a number" in page.message.object
    assert page.numbers.object == "" and page.sv.data["x"] == []
    page.C_text.value = "10"
    assert not page.message.visible and page.log_C.value == pytest.approx(1.0)
    page.kernel.value = "rbf"  # a kernel switches the formulation to the kernel dual
    assert page.formulation.value == "kernel_dual" and "kernel_dual" in page.numbers.object
    page.start.value = "exercise_5_4"
    page.kernel.value = "linear"
    page.formulation.value = "primal"
    page.hard.value = True
    assert "NOT separable" in page.certificate.object and len(page.common.data["x"]) == 1
    page.point_class.value = "-1"
    assert page.draw_tool.default_overrides == {"cls": "-1"}


def test_a_superseded_request_is_not_shown():
    from concurrent.futures import Future

    from experiments.explore.page import ExplorerPage

    page = ExplorerPage(start="example_5_1")
    shown = page.state.object
    stale = Future()
    stale.set_result(ec.explore(*ec.start_points("exercise_5_4"), ec.Settings(C=10.0)))
    page._finish(page._generation - 1, stale)  # an older request finishing late changes nothing
    assert page.state.object == shown
    assert page._compute_if_current(page._generation - 1, None, None, None, None) is None


def test_a_click_fades_no_point_and_every_legend_entry_has_its_glyph():
    """A selected point (the one a click adds or drags) leaves the others as they are (Bokeh's default drew
    them at alpha 0.1), and the legend lists only what is drawn: an entry whose renderer had no data showed
    its label without a glyph (the hulls, their common point, the slacks before there were any)."""
    from bokeh.models import GlyphRenderer

    from experiments.explore.page import ExplorerPage

    page = ExplorerPage(start="example_5_1")
    renderers = page.plane.select(type=GlyphRenderer)
    assert renderers and all(r.nonselection_glyph is None for r in renderers)

    def shown() -> set[str]:
        return {getattr(item.label, "value", None) or item.label.field for item in page.legend.items if item.visible}

    assert shown() == {"cls", "role"}  # the classes (+1, -1) and the support vectors' roles
    page.start.value = "exercise_5_4"
    page.hard.value = True  # not separable: the hulls and their common point are drawn
    assert {"convex hulls", "common point of both hulls"} <= shown()
    for item in page.legend.items:
        assert item.visible == any(len(next(iter(r.data_source.data.values()))) > 0 for r in item.renderers)


# ---------------------------------------------------------------- a loaded answer, point by point


def test_a_loaded_answer_is_marked_where_it_breaks_a_condition():
    import json

    from experiments.explore.page import ExplorerPage

    page = ExplorerPage(start="example_5_1")
    page.hard.value = True
    answer = {"formulation": "hard_primal", "w": [-0.9229, 0.7627], "b": 1.25}  # b off by 0.05
    page.answer_file.filename = "bo.json"
    page.answer_file.value = json.dumps(answer).encode()
    assert "bo.json: not optimal" in page.answer_report.object
    assert page.breaks.data["point"] == [34, 48, 52]  # the three points of B pushed inside their margin
    assert set(page.breaks.data["breaks"]) == {"primal feasibility"}
    page.answer_file.value = json.dumps(dict(answer, b=1.1976)).encode()  # as the notes print it
    assert "not optimal" not in page.answer_report.object and page.breaks.data["point"] == []
    page.answer_file.value = json.dumps(dict(answer, w=[1.0])).encode()
    assert "w has 1 entries but needs 2" in page.answer_report.object
    page.answer_file.value = json.dumps(dict(answer, b=1.25)).encode()
    moved = dict(page.points.data, x=[page.points.data["x"][0] + 0.1, *page.points.data["x"][1:]])
    page.points.data = moved  # a point moved: the answer was judged on the old points, its marks go
    assert not page.answer_report.visible and page.breaks.data["point"] == []
