"""The coursework suites by name, and ``python -m experiments.coursework SUITE``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from experiments.coursework.choosing_C import choose_C
from experiments.coursework.demos import demo_compare, demo_linear, demo_rbf
from experiments.coursework.family import svm_family
from experiments.coursework.fitting import DEFAULT_BACKEND, DEFAULT_LAYER
from experiments.coursework.perceptron_vs_svm import perceptron_vs_svm
from experiments.coursework.section import Section
from experiments.coursework.seeds import seeds


@dataclass(frozen=True)
class CourseworkSuite:
    """A runner suite that writes its own section instead of sweeping backends."""

    name: str
    description: str
    run: Callable[..., Section]  # run(out_dir, **options) -> Section


COURSEWORK_SUITES: dict[str, CourseworkSuite] = {
    s.name: s
    for s in (
        CourseworkSuite("demo-linear", "svmdemo_linear: linear soft-margin SVM on gendata(15, 15), "
                        "C = 0.1, 1, 10, 100", demo_linear),
        CourseworkSuite("demo-rbf", "svmdemo_rbf: Gaussian-kernel SVM on gendata(15, 15), C = 1, "
                        "gamma = 0.5, 2, 10", demo_rbf),
        CourseworkSuite("demo-compare", "svmdemo_compare: linear, poly and rbf kernels x C on gendata(15, 15)",
                        demo_compare),
        CourseworkSuite("seeds", "every worked example of the lecture notes (001, 002) checked against its "
                        "published numbers, pass/fail", seeds),
        CourseworkSuite("choose-C", "k-fold cross-validated grid search over C and gamma, heat map, "
                        "regularization path", choose_C),
        CourseworkSuite("perceptron-vs-svm", "the perceptron's line beside the maximum-margin line, "
                        "with both margins", perceptron_vs_svm),
        CourseworkSuite("family", "the SVM family (nu-SVC, one-class, epsilon-SVR, nu-SVR): primal and dual in both "
                        "layers, P* = D*, the multipliers' meaning, nu's bounds on the fractions", svm_family),
    )
}


def run_suite(name: str, out_dir, **options) -> Section:
    """Run the coursework suite ``name`` into ``out_dir``; unknown names get a clear error."""
    try:
        suite = COURSEWORK_SUITES[name]
    except KeyError:
        raise ValueError(f"unknown coursework suite {name!r}; suites: {', '.join(COURSEWORK_SUITES)}") from None
    return suite.run(out_dir, **options)


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.coursework SUITE [--out DIR] [--layer L --backend B]``.

    Writes the suite's figures, CSV tables and ``<suite>.md`` into DIR (default
    ``results/coursework/<suite>``); exit code 1 when a checked suite (seeds) fails.
    """
    import argparse

    p = argparse.ArgumentParser(prog="python -m experiments.coursework",
                                description="Run a coursework suite: figures, CSV tables and a Markdown section.")
    p.add_argument("suite", choices=list(COURSEWORK_SUITES) + ["all"], help="which coursework suite to run")
    p.add_argument("--out", default=None,
                   help="output directory (default results/coursework/SUITE; with 'all', one folder per suite)")
    p.add_argument("--layer", default=None, help=f"modelling layer: cvxpy or pyomo (default {DEFAULT_LAYER})")
    p.add_argument("--backend", default=None, help=f"solver backend, e.g. clarabel, highs (default {DEFAULT_BACKEND}; "
                                                   "seeds uses cvxpy/clarabel and pyomo/highs unless both are given)")
    args = p.parse_args(argv)
    names = list(COURSEWORK_SUITES) if args.suite == "all" else [args.suite]
    layer, backend = args.layer or DEFAULT_LAYER, args.backend or DEFAULT_BACKEND
    status = 0
    for name in names:
        root = Path(args.out) if args.out else Path("results") / "coursework"
        out = root / name if (args.suite == "all" or not args.out) else root
        if name == "seeds":
            opts = {"backends": ((layer, backend),)} if args.layer and args.backend else {}
        else:
            opts = {"layer": layer, "backend": backend}
        section = run_suite(name, out, **opts)
        verdict = "" if section.passed is None else (" - all checks pass" if section.passed else " - CHECKS FAILED")
        print(f"{name}: {len(section.figures)} figures, {len(section.tables)} tables -> {out}{verdict}")
        if section.summary:
            print(section.summary)
        status |= section.passed is False
    return int(status)
