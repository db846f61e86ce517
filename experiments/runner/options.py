"""The command line of ``python -m experiments.run``: its options, and the checks that need no data.

Kept apart from the command (experiments/runner/cli.py) and light to import (no pandas, scipy, Pyomo or
cvxpy), so that --help, --version and a bad option answer at once: experiments/run.py parses here before
it imports the command.
"""

from __future__ import annotations

import argparse
import math

from experiments import __version__
from solvers.profiles import PROFILES


class UsageError(Exception):
    """A bad command line: printed as one clear line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse's own errors (an unknown option, --workers abc) as one line too, exit code 2."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see --help)\n")


def parse_names(text: str | None, allowed, what: str) -> list[str] | None:
    """A comma list of names (--layers, --backends, --formulations ...), each one of `allowed`; None if not given."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in allowed]
    if bad:
        raise UsageError(f"unknown {what} {', '.join(map(repr, bad))}; choose from {', '.join(allowed)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="svm-duality",
        description="Solve SVM primal and dual formulations with every backend, check strong duality and KKT, "
                    "and write a results table, report.md and figures.",
    )
    p.add_argument("--suite", default="default", help="named suite (see --list; default: default)")
    p.add_argument("--list", action="store_true", help="list datasets, suites, formulations and backends, and exit")
    p.add_argument("--datasets", help="comma list of NAME or NAME(key=value,...): a grid of your own instead of "
                                      "the suite, e.g. 'example_5_1,overlapping(n=200,seed=1)'")
    p.add_argument("--data", metavar="FILE.csv", help="your own data: a CSV with numeric features and a label column")
    p.add_argument("--label-column", metavar="NAME", help="the label column of --data (any two distinct values)")
    p.add_argument("--formulations", help="comma list (default: every one that applies)")
    p.add_argument("--layers", help="comma list of pyomo,cvxpy (default: both)")
    p.add_argument("--backends", help="comma list (default: every available one)")
    p.add_argument("--C", help="comma list of C > 0 for a grid; 'inf' = hard margin (default 1)")
    p.add_argument("--kernel", default="linear",
                   help="comma list of linear|poly|rbf|sigmoid for a grid (default linear)")
    p.add_argument("--gamma", help="comma list of kernel gamma (default: 1/d, scikit-learn's 'auto'; SVC's and "
                                   "SVMClassifier's default 'scale' is 1/(d Var(X)): give its number to compare)")
    p.add_argument("--degree", help="comma list of poly degrees (default 3)")
    p.add_argument("--coef0", help="comma list of poly/sigmoid coef0 (default 0)")
    p.add_argument("--method", help="comma list of full|working_set|auto: how each QP is solved, an axis of the "
                                    "grid (default auto: the working set where n is large enough for it to pay)")
    p.add_argument("--standardize", action="store_true",
                   help="solve each data set with its features standardized (mean 0, variance 1), as "
                        "solve(standardize=True) does: w*, b* and the objective are reported in the data's own "
                        "units; for features that differ in scale by orders of magnitude (a BadScalingWarning)")
    p.add_argument("--profile", choices=sorted(PROFILES), help="accuracy profile for every solve "
                                                                   "(default: the suite's; a grid: default)")
    p.add_argument("--out", metavar="DIR", help="output directory (default results/<timestamp>, and results/latest "
                                                "points to it; with --resume: results/latest)")
    p.add_argument("--workers", type=int, default=None,
                   help="solves at a time (default: the CPU cores idle when the run starts, at least 1: on a "
                        "busy machine more solves at a time only share the cores and each row's time grows)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds per solve; past it (plus 0.5 s and 5%%) the solve is killed (default 120)")
    p.add_argument("--stop-slow", type=float, default=None, metavar="FACTOR",
                   help="stop a solve still running at FACTOR x the fastest answered solve (optimal or "
                        "optimal_inaccurate) of the same problem by another layer/backend, and at least 30 s: "
                        "a time_limit row that says so "
                        "(default 20; 0: every solve runs to --timeout)")
    p.add_argument("--resume", action="store_true", help="skip tasks already recorded in --out")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: run error/time_limit rows again")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic data sets (default 0)")
    p.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="local processes (default), or a Dask distributed cluster")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (none: a LocalCluster)")
    p.add_argument("--no-figures", action="store_true", help="skip figures/")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary: errors and the "
                                                                 "results folder only")
    talk.add_argument("-v", "--verbose", action="store_true", help="a line per finished solve")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--inject-fault", action="append", metavar="[LAYER/]BACKEND=KIND",
                   help="testing aid: make matching solves fail: raise, crash, exit, sleep:SECONDS, hang:PATH (touch PATH, "
                        "then wait to be killed) ('*' = any)")
    return p


def check_options(args) -> None:
    """The options that need no data: checked first, before anything is read or allocated."""
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be >= 1")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a finite number of seconds > 0, got {args.timeout!r}")
    slow = args.stop_slow
    if slow is not None and not (math.isfinite(slow) and (slow == 0 or slow >= 1)):
        raise UsageError(f"--stop-slow must be 0 (off) or a factor >= 1, got {slow!r}")
    if args.seed < 0:
        raise UsageError(f"--seed must be an integer >= 0, got {args.seed}")
    if args.scheduler and args.executor != "dask":
        raise UsageError("--scheduler needs --executor dask")
    if args.retry_failed and not args.resume:
        raise UsageError("--retry-failed needs --resume")
    if args.label_column and not args.data:
        raise UsageError("--label-column names a column of --data FILE.csv: give --data too")
