"""The suites that write their own report (family, seeds, the demos): an option they do not take is a one-line
error naming it (exit 2), the ones they take (--layers, --backends, --profile, ...) reach their function, and
seeds ends its console with its pass/fail count."""

from __future__ import annotations

import re

import pytest

from experiments.coursework import cli as coursework_cli
from experiments.coursework.section import Section
from experiments.runner.cli import main


@pytest.mark.parametrize("suite, argv, words", [
    ("family", ["--backends", "nosuch"], "unknown backend 'nosuch'"),
    ("family", ["--C", "1"], "--C does not apply to suite 'family'"),
    ("family", ["--workers", "2"], "--workers does not apply to suite 'family'"),
    ("family", ["--formulations", "dual"], "--formulations does not apply"),
    ("family", ["--backends", "highs,clarabel"], "one backend"),
    ("family", ["--seed", "3"], "--seed does not apply"),
    ("seeds", ["--method", "full"], "--method does not apply to suite 'seeds'"),
    ("demo-linear", ["--timeout", "5"], "--timeout does not apply to suite 'demo-linear'"),
    ("perceptron-vs-svm", ["--standardize"], "--standardize does not apply"),
])
def test_an_option_a_section_suite_does_not_take_is_refused(capsys, tmp_path, suite, argv, words):
    out = tmp_path / "run"
    assert main(["--suite", suite, "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err
    assert not out.exists()  # refused before anything is written


def _spy(monkeypatch, name: str, run):
    """Replace coursework suite `name`'s function by `run` (same parameters), recording the options it gets."""
    seen = {}

    def wrapped(out_dir, **options):
        seen.update(options)
        return Section(name, "spy", "")

    wrapped.__signature__ = __import__("inspect").signature(run)
    suite = coursework_cli.COURSEWORK_SUITES[name]
    monkeypatch.setitem(coursework_cli.COURSEWORK_SUITES, name, type(suite)(name, suite.description, wrapped))
    return seen


def test_family_takes_layers_backends_and_profile(monkeypatch, tmp_path):
    seen = _spy(monkeypatch, "family", coursework_cli.svm_family)
    assert main(["--suite", "family", "--out", str(tmp_path / "a"), "--layers", "pyomo", "--backends", "highs",
                 "--profile", "default"]) == 0
    assert seen == {"layer": "pyomo", "backend": "highs", "profile": "default", "progress": True}
    seen.clear()  # both layers: the suite's own default (every layer)
    assert main(["--suite", "family", "--out", str(tmp_path / "b"), "--layers", "cvxpy,pyomo"]) == 0
    assert seen == {"layer": None, "progress": True}
    for flag in ("--no-progress", "--quiet"):  # its progress follows the runner's switches, as the sweep's
        seen.clear()
        assert main(["--suite", "family", "--out", str(tmp_path / flag.strip("-")), flag]) == 0
        assert seen == {"progress": False}


def test_seeds_crosses_layers_and_backends(monkeypatch, tmp_path):
    seen = _spy(monkeypatch, "seeds", coursework_cli.seeds)
    assert main(["--suite", "seeds", "--out", str(tmp_path), "--backends", "clarabel", "--no-figures"]) == 0
    assert seen == {"backends": (("pyomo", "clarabel"), ("cvxpy", "clarabel")), "figures": False}


def test_seeds_console_ends_with_its_pass_count(capsys, tmp_path):
    assert main(["--suite", "seeds", "--out", str(tmp_path), "--no-figures"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"(\d+) of (\d+) published numbers reproduced; (\d+) of (\d+) checks against a reference agree "
                     r"\((\d+) of (\d+) checks pass\)", last)
    assert m, last
    pub, n_pub, ref, n_ref, ok, n = map(int, m.groups())
    # the lecture notes print w*, b* of Example 5.1 and the perceptron's numbers: all reproduced, by both solvers
    assert pub == n_pub >= 8 and ref == n_ref >= 1 and ok == n == n_pub + n_ref
