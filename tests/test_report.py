"""report.md is rebuilt from a saved table; the derived tables compute what they say."""

from __future__ import annotations

import math
import re
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.runner import analysis

from experiments.runner import results_table
from experiments.runner.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run"
    assert main(["--suite", "smoke", "--backends", "clarabel,daqp", "--out", str(out), "--workers", "2",
                 "--no-progress"]) == 0
    return out


def test_report_module_rebuilds_report_from_the_saved_table(smoke_run):
    report = smoke_run / "report.md"
    original = report.read_text()
    report.unlink()
    (smoke_run / "duality.csv").unlink()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "experiments.report", str(smoke_run), "--no-figures"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    rebuilt = report.read_text()
    assert (smoke_run / "duality.csv").exists()
    for section in ("## Status per layer/backend", "## w* and b* per backend and layer",
                    "## Strong duality across formulations", "## Agreement across formulations",
                    "## Primal multipliers vs dual alpha*", "## KKT residuals", "## Timings",
                    "## Failures and rejected solves", "## Environment"):
        assert section in rebuilt, section
    assert "(-0.9229, 0.7627) / 1.1976" in rebuilt
    assert "scikit-learn SVC" in rebuilt and "clarabel" in rebuilt
    # same tables as the report the run wrote (the run's wall time line aside)
    assert rebuilt.split("## Status")[1].split("## Environment")[0] == \
        original.split("## Status")[1].split("## Figures")[0]


def test_report_from_csv_only(smoke_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(smoke_run, copy)
    (copy / "results.parquet").unlink()
    (copy / "rows.jsonl").unlink()
    from experiments.runner.run_report import build_report

    text = build_report(copy, figures=False).read_text()
    assert "(-0.9229, 0.7627) / 1.1976" in text
    df_csv = results_table.load(copy)
    df_pq = pd.read_parquet(smoke_run / "results.parquet")
    assert list(df_csv.task_key) == list(df_pq.task_key)
    np.testing.assert_allclose(df_csv.objective, df_pq.objective, equal_nan=True)
    assert math.isinf(df_csv[df_csv.formulation == "hard_primal"].C.iloc[0])


def test_report_of_a_missing_run_is_a_clear_error(tmp_path, capsys):
    from experiments.runner.run_report import main as report_main

    assert report_main([str(tmp_path)]) == 2
    assert "no results table" in capsys.readouterr().err


def _row(**kw):
    base = dict(task_key="", dataset="toy", n=2, d=2, kernel="linear", C=1.0, profile="default", order=0,
                status="optimal", w="[1.0, 2.0]", b=0.5, alpha="[0.1, 0.1]", objective=3.0, alpha_source="solver")
    base.update(kw)
    return base


def test_duality_pairs_are_primal_times_dual():
    rows = [
        _row(task_key="p1", formulation="soft_primal", layer="pyomo", backend="a", primal_objective=3.0,
             dual_objective=2.9),
        _row(task_key="p2", formulation="soft_primal", layer="cvxpy", backend="b", primal_objective=3.2,
             dual_objective=3.0),
        _row(task_key="d1", formulation="dual", layer="pyomo", backend="a", primal_objective=3.1,
             dual_objective=2.95, alpha="[0.1, 0.3]"),
        _row(task_key="x", formulation="dual", layer="pyomo", backend="c", status="iteration_limit",
             primal_objective=9.0, dual_objective=1.0),
    ]
    df = results_table.frame(rows)
    pairs = analysis.duality_pairs(df)
    assert len(pairs) == 2  # the unverified dual is left out
    np.testing.assert_allclose(sorted(pairs.gap), [3.0 - 2.95, 3.2 - 2.95])
    np.testing.assert_allclose(sorted(pairs.rel_gap), [0.05 / 3.0, 0.25 / 3.2])
    m = analysis.multipliers(df)
    np.testing.assert_allclose(m.max_diff, [0.2, 0.2])
    agree = analysis.agreement(df)
    assert agree.w_spread[0] == 0.0 and agree.optimal[0] == 3 and agree.rows[0] == 4


def test_results_table_journal_survives_a_partial_line(tmp_path):
    j = results_table.Journal(tmp_path)
    j.append({"task_key": "a", "status": "optimal", "order": 0})
    with j.path.open("a") as fh:
        fh.write('{"task_key": "b", "sta')  # a run killed mid-write
    j.append({"task_key": "c", "status": "error", "order": 2})
    assert [r["task_key"] for r in j.rows()] == ["a", "c"]
    assert j.done_keys() == {"a", "c"}
    assert j.done_keys(retry_failed=True) == {"a"}


# ------------------------------------------------------------------ reports that render, figures that teach

#: The user's names, with a `|` in a column name and in a label that a table must not split on.
CSV_FEATURES = ["petal length [cm]", "petal|width"]
CSV_LABELS = {1.0: "versi|color", -1.0: "setosa"}


@pytest.fixture(scope="module")
def csv_run(tmp_path_factory):
    from experiments.datasets import example_5_1

    folder = tmp_path_factory.mktemp("csv_report")
    ds = example_5_1()
    table = pd.DataFrame(ds.X, columns=CSV_FEATURES)
    table["species"] = [CSV_LABELS[v] for v in ds.y]
    table.to_csv(folder / "flowers.csv", index=False)
    out = folder / "run"
    assert main(["--data", str(folder / "flowers.csv"), "--label-column", "species", "--C", "1,inf",
                 "--backends", "clarabel", "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    return out


def _cells(line: str) -> int:
    """Cells of one Markdown table row as GFM splits it: on every `|` not escaped by a backslash."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return len(re.split(r"(?<!\\)\|", inner))


def _tables(text: str) -> list[list[str]]:
    """The source lines of every table markdown-it-py finds in `text` (header, delimiter, body rows)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    lines = text.splitlines()
    return [lines[t.map[0]:t.map[1]] for t in tokens if t.type == "table_open"]


@pytest.mark.parametrize("run", ["smoke_run", "csv_run"])
def test_every_report_table_keeps_its_columns_when_rendered(run, request):
    out = request.getfixturevalue(run)
    text = (out / "report.md").read_text()
    tables = _tables(text)
    assert len(tables) >= 8
    for table in tables:
        header = _cells(table[0])
        for line in table[1:]:
            assert _cells(line) == header, f"a row has other columns than its header {table[0]!r}:\n{line}"
    # the rendered HTML has the strong-duality table's gap columns as headers (the issue: they disappeared)
    html = (out / "report.html").read_text()
    for column in ("min_gap", "max_gap", "max_rel_gap", "objective_spread", "max_diff"):
        assert f"<th>{column}</th>" in html or f'<th style="text-align:right">{column}</th>' in html, column


def test_report_explains_the_problems_and_the_sign_of_the_gap(smoke_run):
    text = (smoke_run / "report.md").read_text()
    assert "## The problems compared" in text
    # (4) in the notes' notation, as LaTeX (report.html draws it: tests/test_typeset.py)
    assert r"$\min_{w,b}\ \frac{1}{2}\|w\|^2 \quad \mathrm{s.t.} \quad 1 - y^i (w^\top x^i + b) \leq 0," in text
    assert r"\sum_i \lambda_i y^i = 0" in text and "k(x^i, x^j)" in text
    assert "**Why $P^* - D^*$ can be slightly negative.**" in text
    assert "Example 5.1" in text and "lecture notes" in text
    assert not re.search(r"00[0-3]_[0-9a-f]{16}", text), "the notes are cited by what they are, not by file name"
    assert "(001)" not in text


def test_each_distinct_result_once_with_the_solves_that_agree(smoke_run):
    text = (smoke_run / "report.md").read_text()
    section = text.split("### example_5_1: linear, C = inf, profile high")[1].split("###")[0]
    rows = [line for line in section.splitlines() if line.startswith("| (")]
    assert len(rows) == 1, rows  # 8 verified solves, one distinct w*/b*
    row = rows[0]
    assert "(-0.9229, 0.7627) / 1.1976" in row and "| 8 " in row
    assert "hard_primal, dual: all 4 layer/backend pairs" in row
    assert "scikit-learn SVC" in row and "Example 5.1" in row  # the references agree with the same line


def test_the_users_names_reach_the_report_and_the_figures(csv_run):
    from experiments.runner.figures import build_figures
    from experiments.runner.run_report import escape_cell

    import json

    recorded = [info.get("features") for info in json.loads((csv_run / "run.json").read_text())["datasets"].values()]
    assert recorded == [list(CSV_FEATURES)]  # the header is recorded: the names survive the CSV moving
    text = (csv_run / "report.md").read_text()
    assert escape_cell("versi|color (+1)") in text and "setosa (-1)" in text
    assert escape_cell(", ".join(CSV_FEATURES)) in text
    html = (csv_run / "report.html").read_text()
    assert "versi|color (+1)" in html and "petal|width" in html  # one cell each, the pipe kept
    figures = build_figures(csv_run, results_table.load(csv_run))
    separators = [fig for path, fig in figures.items() if path.name.startswith(("separator_", "separability_"))]
    assert len(separators) == 3  # C = 1, C = inf, and the separability proof
    for fig in separators:
        ax = fig.axes[0]
        assert (ax.get_xlabel(), ax.get_ylabel()) == tuple(CSV_FEATURES)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "versi|color (+1)" in legend and "setosa (-1)" in legend


def test_every_figure_has_labelled_axes_and_free_and_bound_support_vectors_differ(smoke_run):
    from experiments.runner.figures import build_figures

    figures = build_figures(smoke_run, results_table.load(smoke_run))
    assert {p.name for p in figures} >= {"gap_kkt_by_backend.png", "time_by_backend.png",
                                          "separability_example_5_1.png"}
    for path, fig in figures.items():
        for ax in fig.axes:
            assert ax.get_xlabel().strip() and ax.get_ylabel().strip(), f"{path.name}: an axis without a label"
        assert any(ax.get_legend() is not None for ax in fig.axes), f"{path.name}: no legend"
    soft = figures[smoke_run / "figures" / "separator_overlapping_n_20_d_2_seed_0_linear_C_1_high.png"]
    by_label = {c.get_label().split(" (")[0].split(",")[0]: c for c in soft.axes[0].collections if c.get_label()}
    free, bound = by_label["free SVs"], by_label["bound SVs"]
    assert len(free.get_offsets()) >= 1 and len(bound.get_offsets()) >= 1
    free_shape, bound_shape = free.get_paths()[0].vertices, bound.get_paths()[0].vertices
    assert free_shape.shape != bound_shape.shape or not np.allclose(free_shape, bound_shape)
    # the bound ones are the points with alpha_i = C: as many as the run's n_bound_sv for that solve
    df = results_table.load(smoke_run)
    row = df[(df.dataset == "overlapping(n=20,d=2,seed=0)") & (df.layer == "pyomo") & (df.backend == "clarabel")]
    assert len(bound.get_offsets()) == int(row.n_bound_sv.iloc[0])
    assert len(free.get_offsets()) == int(row.n_free_sv.iloc[0])


def test_report_html_is_self_contained(smoke_run, tmp_path):
    import shutil

    from experiments.runner.run_report import main as report_main

    copy = tmp_path / "copy"  # rebuilt here: another test rebuilds the shared run without figures
    shutil.copytree(smoke_run, copy)
    (copy / "report.html").unlink()
    assert report_main([str(copy)]) == 0
    html = (copy / "report.html").read_text()
    md_text = (copy / "report.md").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<table>") == len(_tables(md_text))
    images = re.findall(r'<img src="([^"]+)"', html)
    assert len(images) == md_text.count("![") >= 4
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert 'src="figures/' not in html
    assert re.findall(r"<h2>(.+?)</h2>", html) == re.findall(r"^## (.+)$", md_text, flags=re.M)


def test_markdown_cells_with_a_pipe_stay_one_cell():
    from experiments.runner.run_report import md

    text = md(pd.DataFrame({"data": ["a | b", "c"], "x": [1.0, 2.0]}), index=False)
    html_rows = re.findall(r"<tr>(.*?)</tr>", __import__("markdown_it").MarkdownIt("commonmark").enable("table")
                           .render(text), flags=re.S)
    assert [row.count("<td") for row in html_rows[1:]] == [2, 2]
    assert "a | b" in html_rows[1]


def test_terminal_summary_keeps_each_C_apart():
    from experiments.runner.cli import summarize

    rows = [_row(task_key=f"k{i}", dataset="exercise_5_4", formulation="soft_primal", layer="pyomo", backend=b,
                 C=C, w=w, b=0.1 * i, order=i)
            for i, (C, b, w) in enumerate([(1.0, "a", "[-0.4997, 0.5]"), (1.0, "b", "[-0.4997, 0.5]"),
                                           (10.0, "a", "[-0.9229, 0.7]"), (10.0, "b", "[-0.9229, 0.7]")])]
    text = summarize(results_table.frame(rows), {}, Path("out"), 1.0)
    lecture = text.split("Lecture examples")[1].split("\n\n")[0]
    lines = [line for line in lecture.splitlines() if "soft_primal" in line]
    assert len(lines) == 2, lecture  # C = 1 and C = 10: two problems, never one min..max over both
    w1 = [[float(v) for v in re.findall(r"-0\.\d+", line)[:2]] for line in lines]
    assert w1 == [[-0.4997, -0.4997], [-0.9229, -0.9229]]


def test_distinct_results_groups_equal_results_and_lists_the_rest_by_status():
    from experiments.runner.run_report import distinct_results

    rows = [_row(task_key=f"k{i}", formulation=f, layer="pyomo", backend=b, status=st, w=w, order=i)
            for i, (f, b, st, w) in enumerate([
                ("soft_primal", "a", "optimal", "[1.0, 2.0]"), ("dual", "a", "optimal", "[1.00001, 2.0]"),
                ("dual", "b", "optimal", "[1.0, 2.0]"), ("soft_primal", "b", "optimal", "[1.5, 2.0]"),
                ("soft_primal", "c", "iteration_limit", "")])]
    df = analysis.with_groups(results_table.frame(rows))
    table = distinct_results(df, lambda r: {"w": str([round(v, 4) for v in results_table.from_json(r.w)])}, ["w"])
    assert list(table.w) == ["[1.0, 2.0]", "[1.5, 2.0]", ""]
    assert list(table.n) == ["3", "1", "1"] and list(table.status) == ["optimal", "optimal", "iteration_limit"]
    assert table["agreeing solves"][0] == "soft_primal: pyomo/a; dual: pyomo/a, pyomo/b"
    assert table["agreeing solves"][2] == "soft_primal: pyomo/c"
