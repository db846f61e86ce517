"""The runner's default against the benchmark's best path, side by side in one run.

    python -m experiments.runner_bench                    # kernel n = 5,000 and linear n = 100,000
    python -m experiments.runner_bench --backends piqp    # the runner on one backend (both layers)
    python -m experiments.runner_bench --quick            # small n, PIQP only (what the tests run)
    python -m experiments.runner_bench --rounds 3         # each side's fastest of 3 rounds (less noise)

For each benchmark problem (scaling.bench_data: the kernel dual, Gaussian, d = 10, gamma = 0.1, C = 1,
n = 5,000; the soft primal, d = 20, C = 1, n = 100,000):

1. the data go to a CSV, and ``python -m experiments.run --data CSV --label-column label
   --formulations F [--kernel rbf --gamma 0.1]`` runs on it in a subprocess, as a user would: no
   method, no profile (the defaults; its --workers solves at a time, the benchmark one); a row's
   time is the results table's build_s + solve_s;
2. the benchmark's working-set and restricted-QP paths of the same problem and n (scaling.plan: the
   forms "working_set" and "auto", in Pyomo and cvxpy) are measured in its own workers;
3. per layer, the runner's best row against the benchmark's best path: each the fastest verified
   (`optimal`) one, or, when a side has none, the fastest with a point (its status is shown), and the
   two objectives' relative difference ("the same accuracy": <= MATCH_TOL, 1e-7).

Writes <out>/runner_default.csv (the comparison), <out>/runner_default_rows.csv (every runner row)
and <out>/runner_default.md, which the benchmark's report.md includes (bench.report; rebuilt here when
<out> holds the benchmark's results.csv).
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.bench import scaling
from experiments.bench.report import MATCH_TOL, short_number, markdown_table
from experiments.runner import analysis, results_table

#: The target: the runner's best row of each layer within this factor of the benchmark's best path.
TARGET_RATIO = 1.5
LAYERS = ("pyomo", "cvxpy")
#: The runner's columns kept in runner_default_rows.csv (not its points: alpha alone is n numbers a row).
ROW_COLUMNS = ["problem", "round", "n", "layer", "backend", "solve_method", "method_used", "status", "build_s", "solve_s",
               "total_s", "wall_s", "raw_objective", "objective", "error"]
BENCH_FORMS = ("working_set", "auto")
SECTION_FILE = "runner_default.md"


@dataclass(frozen=True)
class Problem:
    """A benchmark problem as the runner is asked for it."""

    name: str  # scaling's problem name: "kernel" or "linear"
    formulation: str
    n: int
    quick_n: int
    d: int
    kernel_args: tuple[str, ...] = ()


PROBLEMS = (
    Problem("kernel", "kernel_dual", 5_000, 300, scaling.KERNEL_D, ("--kernel", "rbf", "--gamma", repr(scaling.GAMMA))),
    Problem("linear", "soft_primal", 100_000, 2_000, scaling.LINEAR_D),
)


def write_csv(problem: Problem, n: int, path: Path) -> Path:
    """The benchmark's data (scaling.bench_data) as a user's CSV: x0..x{d-1} and `label` (floats as repr: exact)."""
    X, y = scaling.bench_data(n, problem.d)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(problem.d)]).assign(label=y.astype(int))
    frame.to_csv(path, index=False)
    return path


def run_runner(problem: Problem, csv: Path, out: Path, backends: str | None, timeout: float,
               workers: int | None = None) -> tuple[pd.DataFrame, float, int]:
    """`python -m experiments.run` on the CSV with the defaults; (its results table, the command's wall seconds,
    the solves it ran at a time: its --workers, chosen by itself when not given)."""
    command = [sys.executable, "-m", "experiments.run", "--data", str(csv), "--label-column", "label",
               "--formulations", problem.formulation, *problem.kernel_args, "--out", str(out), "-q", "--no-figures"]
    if backends:
        command += ["--backends", backends]
    if workers:
        command += ["--workers", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    rows = results_table.load(out)
    rows["total_s"] = rows["build_s"] + rows["solve_s"]
    return rows, wall, int(analysis.load_meta(out)["workers"])


def run_bench_paths(problem: Problem, n: int, quick: bool, backends, budget: float) -> pd.DataFrame:
    """The benchmark's working-set / restricted-QP paths of `problem` at n, each in its own worker."""
    paths = [p for p in scaling.plan(quick, backends) if p.problem == problem.name and p.layer in LAYERS
             and p.form in BENCH_FORMS]
    rows = [scaling.run_in_worker(scaling.Task(p, n, budget), hard_timeout=2 * budget + 60) for p in paths]
    return pd.DataFrame(rows)


def _fastest(rows: pd.DataFrame, objective: str) -> pd.Series | None:
    """The fastest verified row, else the fastest with a finite objective (None: neither)."""
    for pick in (rows[rows["status"] == "optimal"], rows[np.isfinite(rows[objective].astype(float))]):
        pick = pick[np.isfinite(pick["total_s"].astype(float))]
        if not pick.empty:
            return pick.loc[pick["total_s"].idxmin()]
    return None


def compare(problem: Problem, n: int, runner: pd.DataFrame, bench: pd.DataFrame, runner_wall: float,
            runner_workers: int | None = None) -> pd.DataFrame:
    """Per layer: the runner's best row, the benchmark's best path, their time ratio and objective difference."""
    out = []
    for layer in LAYERS:
        mine = _fastest(runner[runner["layer"] == layer], "raw_objective")
        theirs = _fastest(bench[bench["layer"] == layer], "objective")
        row = {"problem": problem.name, "formulation": problem.formulation, "n": n, "layer": layer,
               "runner_row": None, "runner_method": None, "runner_status": None, "runner_s": math.nan,
               "bench_path": None, "bench_status": None, "bench_s": math.nan, "ratio": math.nan,
               "rel_obj_diff": math.nan, "runner_command_s": runner_wall, "runner_workers": runner_workers}
        if mine is not None:
            row.update(runner_row=f"{layer}/{mine['backend']}", runner_method=mine.get("method_used"),
                       runner_status=mine["status"], runner_s=float(mine["total_s"]))
        if theirs is not None:
            row.update(bench_path=theirs["label"], bench_status=theirs["status"], bench_s=float(theirs["total_s"]))
        if mine is not None and theirs is not None:
            row["ratio"] = row["runner_s"] / row["bench_s"]
            reference = float(theirs["objective"])
            row["rel_obj_diff"] = abs(float(mine["raw_objective"]) - reference) / abs(reference)
        out.append(row)
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame, rows: pd.DataFrame, command: str, wall: float) -> str:
    """runner_default.md: the comparison, the target, and every runner row (the slow stop shows there)."""
    shown = table.assign(**{c: table[c].map(lambda v: short_number(v, 3)) for c in ("runner_s", "bench_s", "ratio",
                                                                              "rel_obj_diff", "runner_command_s")})
    met = table.dropna(subset=["ratio"])
    verdicts = [f"- {r.problem} n = {r.n:,}, {r.layer}: {r.ratio:.2f}x "
                f"({'met' if r.ratio <= TARGET_RATIO and r.rel_obj_diff <= MATCH_TOL else 'NOT met'}"
                f"{'' if r.runner_status == r.bench_status == 'optimal' else '; not both verified optimal'})"
                for r in met.itertuples()]
    every = rows[["problem", "round", "layer", "backend", "method_used", "status", "build_s", "solve_s", "total_s",
                  "wall_s", "error"]].copy()
    every["error"] = every["error"].fillna("").str.slice(0, 110)
    for c in ("build_s", "solve_s", "total_s", "wall_s"):
        every[c] = every[c].map(lambda v: short_number(v, 3))
    return "\n".join([
        "# The runner's default against the benchmark's best path",
        "",
        f"`{command}` ({wall:.0f} s). The runner ran as a user runs it (`python -m experiments.run --data CSV "
        "--label-column label --formulations F`, no method, no profile); a row's time is build_s + solve_s. The "
        "benchmark's paths are its working-set / restricted-QP paths (forms working_set and auto, profile `scale`) "
        "at the same n. Each side: the fastest verified row, else the fastest with a point (status shown). "
        f"Target: ratio <= {TARGET_RATIO}x, objectives within {MATCH_TOL:g}. `runner_command_s`: the "
        "whole command (imports, data, solves, report); `runner_workers`: its solves at a time (its --workers: by "
        "default the CPU cores idle at its start). Ratios are from one run; with `--rounds R`, each side's fastest "
        "row of R rounds (each side first in turn) and `runner_command_s` the rounds' mean. The machine may be "
        "shared.",
        "",
        markdown_table(shown),
        *verdicts,
        "",
        "Every runner row (time_limit rows stopped by the slow stop name the fastest solve):",
        "",
        markdown_table(every),
    ]) + "\n"


#: What the progress lines call each side.
SIDES = {"runner": "the runner", "bench": "the benchmark's paths"}


def measure_rounds(problem: Problem, n: int, csv: Path, work: Path, args, backends, bench_backends):
    """Both sides `args.rounds` times, each first in turn: (the runner's rows, the benchmark's rows, each with its
    round; the runner command's mean wall seconds; its --workers). A folder per round when there are several."""
    runner, bench, walls, workers = [], [], [], None
    for r in range(1, args.rounds + 1):
        tag = f" (round {r} of {args.rounds})" if args.rounds > 1 else ""
        run_dir = work / f"run_{problem.name}_{n}"
        run_dir = run_dir / f"round{r}" if args.rounds > 1 else run_dir
        for side in ("runner", "bench") if r % 2 else ("bench", "runner"):
            print(f"{problem.name} n = {n:,}: {SIDES[side]}{tag} ...", file=sys.stderr, flush=True)
            if side == "bench":
                bench.append(run_bench_paths(problem, n, args.quick, bench_backends, args.budget).assign(round=r))
                continue
            if run_dir.exists():  # a new run each time: the runner refuses a folder that holds one
                shutil.rmtree(run_dir)
            rows, wall, workers = run_runner(problem, csv, run_dir, backends, args.timeout, args.workers)
            runner.append(rows.assign(round=r))
            walls.append(wall)
    return pd.concat(runner, ignore_index=True), pd.concat(bench, ignore_index=True), float(np.mean(walls)), workers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.runner_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small n and PIQP only: a minute (what the tests run)")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default results/bench, quick: "
                                                                "results/bench_quick)")
    parser.add_argument("--backends", default=None, help="the runner's --backends (default: every available one; "
                                                         "quick: piqp)")
    parser.add_argument("--workers", type=int, default=None, help="the runner's --workers (default: its own, the "
                                                                   "CPU cores idle at its start; 1: one solve at a "
                                                                   "time, as the benchmark measures)")
    parser.add_argument("--problems", default="kernel,linear", help="comma list of kernel, linear")
    parser.add_argument("--budget", type=float, default=60.0, help="the benchmark paths' budget in seconds")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the runner's command may take")
    parser.add_argument("--rounds", type=int, default=1, help="measure both sides R times, each first in turn, "
                                                              "and keep each side's fastest row (default 1)")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.problems.split(",")]
    unknown = sorted(set(names) - {p.name for p in PROBLEMS})
    if unknown or not names:
        parser.error(f"--problems: unknown {unknown}; choose from {', '.join(p.name for p in PROBLEMS)}")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    for option in ("budget", "timeout"):
        if not (math.isfinite(getattr(args, option)) and getattr(args, option) > 0):
            parser.error(f"--{option} must be a finite number of seconds > 0")
    chosen = [p for p in PROBLEMS if p.name in names]
    out = args.out or Path("results/bench_quick" if args.quick else "results/bench")
    work = out / "runner_default"
    work.mkdir(parents=True, exist_ok=True)
    backends = args.backends or ("piqp" if args.quick else None)
    bench_backends = tuple(backends.split(",")) if backends else scaling.ALL_BACKENDS
    start = time.perf_counter()
    tables, every = [], []
    for problem in chosen:
        n = problem.quick_n if args.quick else problem.n
        csv = write_csv(problem, n, work / f"{problem.name}_{n}.csv")
        runner, bench, wall, workers = measure_rounds(problem, n, csv, work, args, backends, bench_backends)
        tables.append(compare(problem, n, runner, bench, wall, workers))
        every.append(runner.assign(problem=problem.name))
    table, rows = pd.concat(tables, ignore_index=True), pd.concat(every, ignore_index=True)
    table.to_csv(out / "runner_default.csv", index=False)
    rows[ROW_COLUMNS].to_csv(out / "runner_default_rows.csv", index=False)
    command = "python -m experiments.runner_bench " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / SECTION_FILE).write_text(markdown(table, rows, command.strip(), time.perf_counter() - start))
    print(table.to_string(index=False))
    print(f"-> {out / 'runner_default.csv'}, {out / SECTION_FILE}")
    if (out / "results.csv").exists():  # the benchmark's report there includes the new section
        scaling.main(["--report-only", "--out", str(out), *(["--quick"] if args.quick else [])])
    return 0
