"""The scaling benchmark: every path to the SVM optimum, growing n, against LIBLINEAR and LIBSVM.

    python -m experiments.bench                 # the full run (n up to 1e5 linear, 20,000 kernel)
    python -m experiments.bench --quick         # tiny n, about 20 s: what the tests run
    python -m experiments.bench --budget 60 --out results/bench

Problems (one optimum each, shared by all paths):

- ``linear``: overlapping Gaussian blobs (experiments.datasets.overlapping), d = 20, C = 1;
  paths: soft_primal and the lifted dual in Pyomo and cvxpy with every backend, the same
  QPs handed to each solver alone on pre-assembled matrices (solvers.algorithms.direct), the primal
  by restricted QPs near the margin (solvers.algorithms.primal_working_set) in each layer, and
  scikit-learn's LinearSVC(loss='hinge', dual=True) (LIBLINEAR) and SVC(kernel='linear') (LIBSVM).
- ``kernel``: the same blobs with d = 10 and the Gaussian kernel (gamma = 0.1), C = 1;
  paths: the kernel dual as a dense quadratic form and as a full-rank factor in both layers,
  the dense matrix handed to the solver alone, a low-rank factor (its effect on the optimum
  is measured against the exact one), the working-set decomposition (solvers.algorithms.working_set)
  in each layer, and SVC(kernel='rbf') (LIBSVM).

Data families (``--family``, comma list; default ``blobs``): ``blobs``, the problems above (overlapping
Gaussian blobs: easy, few bound support vectors); ``hard``, experiments.datasets.hard (make_classification
with clusters, 10% flipped labels, 45/55 classes, class_sep 0.8, redundant features; standardized) over
several seeds, as problems ``linear_hard_seed<S>`` and ``kernel_hard_seed<S>``; ``bundled``, scikit-learn's
own sets (breast cancer, digits even/odd, wine and iris one class against the rest; standardized) at their
size, as ``linear_<set>`` and ``kernel_<set>`` (gamma = 1/d). Each has the peers and the fast paths (the
working sets, solve(method="auto")) through PIQP; the report gives each family its section.

Each measurement runs in a fresh worker process (a child of the solve server, solvers.isolation, which has
the libraries imported): its peak memory (ru_maxrss) is its own, and a stuck solver is killed at --kill-after
plus the grace every killed process gets. A path whose solve exceeded the per-solve --budget at one
n, was killed, or stopped at its time or iteration limit is not run at larger n (the row says so). Times: `build_s` (model construction or matrix
assembly, plus the Gram matrix for kernel paths), `solve_s` (the backend's call, including
a layer's compile and read-back), `total_s` = build + solve (what a user waits for),
`solver_s` (the solver's own time inside). Accuracy: every point is checked by
solvers.checks; `rel_obj_error` is (objective - best)/|best| in the worse direction
(primal above, dual below the best verified optimum).
Writes <out>/results.csv, <out>/report.md and <out>/*.png (experiments.bench.scaling_report).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np

import formulations
from experiments.bench import scaling_report as bench_report
from experiments.bench.scaling_report import is_linear, path_label
from experiments.coursework.l1_compare import lp_timings
from experiments.datasets import (breast_cancer, digits_parity, hard, iris_one_vs_rest, overlapping,
                                  wine_one_vs_rest)
from experiments.progress import Progress
from experiments.runner.options import OneLineParser
from formulations import validation
from formulations.kernels import Kernel, factorize, gram
from formulations.recovery import primal_objective
from solvers import api, isolation
from solvers.algorithms import direct, primal_working_set, working_set
from solvers.algorithms.kernel_rows import gram_fits, row_source
from solvers.backends import RECORDS
from solvers.solution import OPTIMAL
from solvers.closing import model_values, settle
from solvers.deadline import Deadline
from solvers.profiles import backend_options, get_profile
from solvers.registry import get_backend

LINEAR_D = 20
KERNEL_D = 10
GAMMA = 0.1
C_VALUE = 1.0
SEED = 0

LINEAR_N = (1_000, 10_000, 100_000)
KERNEL_N = (500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000)
QUICK_LINEAR_N = (100, 300)
QUICK_KERNEL_N = (60, 150)
#: The kernel dual at a large C: the same data and paths' peers at C = 10 and 100.
LARGE_C_PROBLEMS = {"kernel_C10": 10.0, "kernel_C100": 100.0}
LARGE_C_N = (2_000, 5_000)
QUICK_LARGE_C_N = (150,)


#: The large linear cases (`--only linear_1e6`, `--only linear_wide`): the linear data at n = 1e6
#: (d = 20), and wide data (the same generator with d = 500, n = 20,000).
BIG_N = (1_000_000,)
WIDE_D = 500
WIDE_N = (20_000,)
QUICK_BIG_N = (2_000,)
QUICK_WIDE_N = ()  # none: at d = 500 each path takes seconds even at n = 200, 18 paths
LINEAR_SIZES = {"linear": (LINEAR_N, QUICK_LINEAR_N), "linear_1e6": (BIG_N, QUICK_BIG_N),
                "linear_wide": (WIDE_N, QUICK_WIDE_N)}


@dataclass(frozen=True)
class FamilyData:
    """One data set of a family other than the blobs: where it comes from and at which n it is measured."""

    family: str
    data: Callable  # n -> Dataset
    full: tuple[int, ...]
    quick: tuple[int, ...]
    d: int
    C: float = C_VALUE


FAMILIES = ("blobs", "hard", "bundled")
HARD_SEEDS = (0, 1, 2)
QUICK_HARD_SEEDS = (0, 1)
HARD_LINEAR_N = (10_000, 100_000)
HARD_KERNEL_N = (2_000, 5_000)
#: The hard family's kernel data at the larger C's as well (n = 5,000; not in the quick run).
HARD_KERNEL_LARGE_C = (10.0, 100.0)
QUICK_HARD_N = (300,)
#: scikit-learn's bundled sets: (loader, n, d); measured at their own n in both modes.
BUNDLED = {"breast_cancer": (breast_cancer, 569, 30), "digits_parity": (digits_parity, 1797, 64),
           "wine": (wine_one_vs_rest, 178, 13), "iris": (iris_one_vs_rest, 150, 4)}


def _family_problems() -> dict[str, FamilyData]:
    problems = {}
    for kind, full in (("linear", HARD_LINEAR_N), ("kernel", HARD_KERNEL_N)):
        d = LINEAR_D if kind == "linear" else KERNEL_D
        for seed in HARD_SEEDS:
            problems[f"{kind}_hard_seed{seed}"] = FamilyData(
                "hard", lambda n, d=d, seed=seed: hard(n, d=d, seed=seed), full,
                QUICK_HARD_N if seed in QUICK_HARD_SEEDS else (), d)
        for name, (loader, n, d_set) in BUNDLED.items():
            problems[f"{kind}_{name}"] = FamilyData("bundled", lambda n, loader=loader: loader(), (n,), (n,), d_set)
    for C in HARD_KERNEL_LARGE_C:
        for seed in HARD_SEEDS:
            problems[f"kernel_hard_seed{seed}_C{C:g}"] = FamilyData(
                "hard", lambda n, seed=seed: hard(n, d=KERNEL_D, seed=seed), HARD_KERNEL_N[-1:], (), KERNEL_D, C)
    return problems


#: The problems of the families other than the blobs, by name (linear_hard_seed0, kernel_breast_cancer, ...).
FAMILY_PROBLEMS = _family_problems()

#: Every problem of the benchmark.
PROBLEMS = ("kernel", *LINEAR_SIZES, *LARGE_C_PROBLEMS, *FAMILY_PROBLEMS)


def family_of(problem: str) -> str:
    return FAMILY_PROBLEMS[problem].family if problem in FAMILY_PROBLEMS else "blobs"


def problem_gamma(problem: str) -> float:
    """The rbf kernel's gamma: GAMMA for the blobs (1/d there too), 1/d for a family's data set."""
    return 1.0 / FAMILY_PROBLEMS[problem].d if problem in FAMILY_PROBLEMS else GAMMA


def problem_C(problem: str) -> float:
    """C of a benchmark problem: C_VALUE, the large C of a kernel_C<C> problem, or a family data set's C."""
    if problem in FAMILY_PROBLEMS:
        return FAMILY_PROBLEMS[problem].C
    return LARGE_C_PROBLEMS.get(problem, C_VALUE)


def sizes(problem: str, quick: bool) -> tuple[int, ...]:
    if problem in FAMILY_PROBLEMS:
        return FAMILY_PROBLEMS[problem].quick if quick else FAMILY_PROBLEMS[problem].full
    if is_linear(problem):
        full, small = LINEAR_SIZES[problem]
        return small if quick else full
    if problem in LARGE_C_PROBLEMS:
        return QUICK_LARGE_C_N if quick else LARGE_C_N
    return QUICK_KERNEL_N if quick else KERNEL_N

ALL_BACKENDS = tuple(RECORDS)


@dataclass(frozen=True)
class BenchPath:
    """One way to the optimum: a series of measurements over n."""

    problem: str  # "linear" | "kernel"
    formulation: str  # soft_primal, dual, kernel_dual, liblinear, libsvm
    layer: str  # pyomo, cvxpy, direct, sklearn
    backend: str
    form: str = ""  # kernel: dense, factor, lowrank, working_set; sklearn: default, tight
    rank: int = 0  # low-rank factor's rank
    profile: str = "scale"

    @property
    def label(self) -> str:
        return path_label(self.problem, self.formulation, self.layer, self.backend, self.form, self.rank)

    @property
    def d(self) -> int:
        """The features of the problem's data."""
        if self.problem in FAMILY_PROBLEMS:
            return FAMILY_PROBLEMS[self.problem].d
        return WIDE_D if self.problem == "linear_wide" else LINEAR_D if is_linear(self.problem) else KERNEL_D

    def row(self, n: int, **fields) -> "Row":
        """An empty row of this path at size n."""
        return Row(self.problem, self.formulation, self.layer, self.backend, self.form, self.rank, self.profile,
                   self.label, n, self.d, **fields, family=family_of(self.problem))


@dataclass
class BenchCase:
    path: BenchPath
    n: int
    budget: float


@dataclass
class Row:
    problem: str
    formulation: str
    layer: str
    backend: str
    form: str
    rank: int
    profile: str
    label: str
    n: int
    d: int
    status: str = ""
    raw_status: str = ""
    build_s: float = math.nan
    gram_s: float = math.nan
    solve_s: float = math.nan
    solver_s: float = math.nan
    total_s: float = math.nan
    peak_rss_mb: float = math.nan
    base_rss_mb: float = math.nan
    objective: float = math.nan  # the path's own objective (primal for primal paths, dual for dual)
    objective_kind: str = ""
    primal_objective: float = math.nan
    dual_objective: float = math.nan
    rel_gap: float = math.nan
    rel_obj_error: float = math.nan
    iterations: float = math.nan
    n_sv: float = math.nan
    version: str = ""
    message: str = ""
    extras: dict = field(default_factory=dict)
    family: str = "blobs"


# ----------------------------------------------------------------------------- plan


def plan(quick: bool, backends=ALL_BACKENDS, families=("blobs",)) -> list[BenchPath]:
    """Every path of the benchmark's data families, in the order they run."""
    paths = _blobs_plan(quick, backends) if "blobs" in families else []
    for problem, data in FAMILY_PROBLEMS.items():
        if data.family in families and sizes(problem, quick):
            paths += _family_plan(problem, backends)
    return paths


def _family_plan(problem: str, backends) -> list[BenchPath]:
    """A family's data set: its peers at both tolerances and the fast paths through PIQP (the working sets in
    each layer, solve(method="auto") in the modeling layers)."""
    linear = is_linear(problem)
    peer = "liblinear" if linear else "libsvm"
    formulation = "soft_primal" if linear else "kernel_dual"
    paths = [BenchPath(problem, peer, "sklearn", peer, form) for form in ("default", "tight")]
    if "piqp" in backends:
        paths += [BenchPath(problem, formulation, layer, "piqp", "working_set") for layer in ("direct", "cvxpy", "pyomo")]
        paths += [BenchPath(problem, formulation, layer, "piqp", "auto") for layer in ("cvxpy", "pyomo")]
    return paths


def _blobs_plan(quick: bool, backends) -> list[BenchPath]:
    """The paths of the blobs (the benchmark's own generators)."""
    paths: list[BenchPath] = []
    for form in ("default", "tight"):
        paths.append(BenchPath("linear", "liblinear", "sklearn", "liblinear", form))
        paths.append(BenchPath("linear", "libsvm", "sklearn", "libsvm", form))
        paths.append(BenchPath("kernel", "libsvm", "sklearn", "libsvm", form))
    for formulation in ("soft_primal", "dual"):
        for backend in backends:
            paths.append(BenchPath("linear", formulation, "direct", backend))
            paths.append(BenchPath("linear", formulation, "cvxpy", backend))
            paths.append(BenchPath("linear", formulation, "pyomo", backend))
    for layer in ("direct", "cvxpy", "pyomo"):  # the primal by restricted QPs (solvers.algorithms.primal_working_set)
        for backend in [b for b in ("piqp", "clarabel") if b in backends]:
            paths.append(BenchPath("linear", "soft_primal", layer, backend, "working_set"))
    kernel_backends = [b for b in ("clarabel", "piqp", "proxqp", "daqp", "osqp") if b in backends]
    for backend in kernel_backends:
        paths.append(BenchPath("kernel", "kernel_dual", "direct", backend, "dense"))
    for backend in [b for b in ("clarabel", "piqp", "osqp") if b in backends]:
        paths.append(BenchPath("kernel", "kernel_dual", "cvxpy", backend, "dense"))
    for backend in [b for b in ("clarabel", "piqp") if b in backends]:
        paths.append(BenchPath("kernel", "kernel_dual", "cvxpy", backend, "factor"))
        paths.append(BenchPath("kernel", "kernel_dual", "pyomo", backend, "factor"))
        paths.append(BenchPath("kernel", "kernel_dual", "pyomo", backend, "dense"))
    ranks = (20, 50) if quick else (100, 400)
    for rank in ranks:
        if "piqp" in backends:
            paths.append(BenchPath("kernel", "kernel_dual", "direct", "piqp", "lowrank", rank=rank))
    for layer in ("direct", "cvxpy", "pyomo"):
        for backend in [b for b in ("proxqp", "piqp", "clarabel") if b in backends]:
            if layer == "pyomo" and backend == "clarabel":
                continue
            paths.append(BenchPath("kernel", "kernel_dual", layer, backend, "working_set"))
    if "piqp" in backends:
        # solvers.api.solve(method="auto"), the default a user gets: data to verified answer in one call
        for layer in ("cvxpy", "pyomo"):
            paths.append(BenchPath("linear", "soft_primal", layer, "piqp", "auto"))
            paths.append(BenchPath("kernel", "kernel_dual", layer, "piqp", "auto"))
        for problem in LARGE_C_PROBLEMS:
            for form in ("default", "tight"):
                paths.append(BenchPath(problem, "libsvm", "sklearn", "libsvm", form))
            for layer in ("direct", "cvxpy", "pyomo"):
                paths.append(BenchPath(problem, "kernel_dual", layer, "piqp", "working_set"))
            for layer in ("cvxpy", "pyomo"):
                paths.append(BenchPath(problem, "kernel_dual", layer, "piqp", "auto"))
    for problem in ("linear_1e6", "linear_wide"):  # the large linear cases, each with its LIBLINEAR peers
        for form in ("default", "tight"):
            paths.append(BenchPath(problem, "liblinear", "sklearn", "liblinear", form))
        for backend in [b for b in ("piqp", "clarabel") if b in backends]:
            for layer in ("direct", "cvxpy", "pyomo"):
                paths.append(BenchPath(problem, "soft_primal", layer, backend, "working_set"))
                if problem == "linear_wide":  # the whole QPs, primal and lifted dual
                    paths.append(BenchPath(problem, "soft_primal", layer, backend))
                    paths.append(BenchPath(problem, "dual", layer, backend))
        if "piqp" in backends:
            for layer in ("cvxpy", "pyomo"):
                paths.append(BenchPath(problem, "soft_primal", layer, "piqp", "auto"))
    return paths


# ----------------------------------------------------------------------------- data


def bench_data(n: int, d: int):
    ds = overlapping(n, d=d, seed=SEED)
    return ds.X, ds.y


def problem_data(problem: str, n: int, d: int):
    """(X, y) of a problem at size n: its family's data set, or the blobs."""
    if problem in FAMILY_PROBLEMS:
        ds = FAMILY_PROBLEMS[problem].data(n)
        return ds.X, ds.y
    return bench_data(n, d)


def dual_objective_kernel(K_sv_sv, coef) -> float:
    """D(alpha) = sum_i alpha_i - 1/2 u' K u with u_i = alpha_i y_i (sklearn's dual_coef_)."""
    return float(np.abs(coef).sum() - 0.5 * coef @ (K_sv_sv @ coef))


# ----------------------------------------------------------------------------- worker


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


def _fill_from_solution(row: Row, sol, kind: str) -> None:
    checks = sol.checks or {}
    row.status, row.raw_status = sol.status, str(sol.raw_status)[:120]
    row.primal_objective = float(checks.get("primal_objective", math.nan))
    row.dual_objective = float(checks.get("dual_objective", math.nan))
    row.rel_gap = float(checks.get("rel_duality_gap", math.nan))
    row.n_sv = float(checks.get("n_sv", math.nan))
    row.iterations = float(sol.iterations) if sol.iterations is not None else math.nan
    row.objective_kind = kind
    row.objective = row.primal_objective if kind == "primal" else row.dual_objective
    row.message = (row.message + " " + (sol.message or "")).strip()[:300]


def _run_sklearn(task: BenchCase, row: Row, X, y) -> None:
    from sklearn.svm import SVC, LinearSVC


    p = task.path
    tight = p.form == "tight"
    start = time.perf_counter()
    if p.backend == "liblinear":
        model = LinearSVC(loss="hinge", dual=True, C=C_VALUE, tol=1e-6 if tight else 1e-4,
                          max_iter=1_000_000 if tight else 1000, random_state=SEED)
    elif is_linear(p.problem):
        model = SVC(kernel="linear", C=C_VALUE, tol=1e-6 if tight else 1e-3, cache_size=2000)
    else:
        model = SVC(kernel="rbf", gamma=problem_gamma(p.problem), C=problem_C(p.problem), tol=1e-6 if tight else 1e-3, cache_size=2000)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    row.solve_s = row.solver_s = time.perf_counter() - start
    row.build_s = 0.0
    row.total_s = row.solve_s
    row.message = "; ".join(str(w.message)[:100] for w in caught)
    if is_linear(p.problem):
        w, b = np.ravel(model.coef_), float(np.ravel(model.intercept_)[0])
        row.primal_objective = row.objective = primal_objective(X, y, w, b, C_VALUE)
        row.objective_kind = "primal"
    else:
        sv = model.support_
        coef = np.ravel(model.dual_coef_)
        row.dual_objective = row.objective = dual_objective_kernel(gram(Kernel("rbf", gamma=problem_gamma(p.problem)), X[sv]), coef)
        row.objective_kind = "dual"
    row.n_sv = float(len(model.support_)) if hasattr(model, "support_") else math.nan
    row.iterations = float(np.max(model.n_iter_)) if hasattr(model, "n_iter_") else math.nan
    row.status = "converged" if not any("converge" in str(w.message) for w in caught) else "iteration_limit"


def _run_layer(task: BenchCase, row: Row, X, y, K, L) -> None:
    p = task.path
    prof = get_profile(p.profile)
    adapter = get_backend(p.layer, p.backend)
    row.version = adapter.version()
    start = time.perf_counter()
    deadline = Deadline(task.budget, began=start)  # the closing checks' proof stops at the budget too
    model = formulations.build(p.formulation, p.layer, X=X, y=y, C=problem_C(p.problem), K=K,
                               kernel_form=p.form or "dense", L=L)
    built = time.perf_counter()
    # the adapter passes the budget as the solver's own time limit where it has one (PIQP and
    # ProxQP have none: the benchmark's worker is killed at --kill-after)
    raw = adapter.solve(model, backend_options(p.backend, prof), task.budget)
    values, candidate = model_values(raw, model, p.layer, p.formulation, problem_C(p.problem))
    read = time.perf_counter()
    row.build_s += built - start
    row.solve_s = read - built  # the adapter's whole call: compile, solver, read-back
    row.solver_s = raw.solve_s
    if p.layer == "cvxpy":
        stats = model.problem.solver_stats
        compile_s = float(model.problem.compilation_time or math.nan)
        row.extras["cvxpy_compile_s"] = compile_s
        if stats is not None and stats.solve_time:
            row.solver_s = float(stats.solve_time)
        elif math.isfinite(compile_s):  # the solver did not report its time: the call minus the compile
            row.solver_s = raw.solve_s - compile_s
    _verify_into(row, task, p.layer, raw, values, X, y, K, deadline=deadline, candidate=candidate)


def _run_direct(task: BenchCase, row: Row, X, y, K, L) -> None:
    p = task.path
    prof = get_profile(p.profile)
    form = "factor" if p.form == "lowrank" else (p.form or "dense")
    start = time.perf_counter()
    deadline = Deadline(task.budget, began=start)
    asm = direct.assemble(p.formulation, X, y, problem_C(p.problem), K=K, L=L, kernel_form=form)
    row.build_s += time.perf_counter() - start
    res = direct.solve_assembled(asm, p.backend, backend_options(p.backend, prof), task.budget)
    row.solve_s = row.solver_s = res.solve_s
    # A low-rank factor's point is checked against the exact K: its effect on the optimum shows.
    _verify_into(row, task, "direct", res, direct.named_values(asm, res) if res.x is not None else {}, X, y, K,
                 deadline=deadline)


def _verify_into(row: Row, task: BenchCase, layer: str, raw, values: dict | None, X, y, K, *, deadline: Deadline,
                 candidate=None) -> None:
    """Recover w*, b* from a returned point, run the project's checks on it (solvers.closing.settle, as every
    solve path) and fill the row."""
    p = task.path
    Xd = X if X is not None else np.zeros((len(y), 0))
    sol = settle(raw, values, formulation=p.formulation, layer=layer, backend=p.backend, X=Xd, y=y,
                 C=problem_C(p.problem), K=K, profile=get_profile(p.profile), deadline=deadline, given=task.budget,
                 candidate=candidate)
    _fill_from_solution(row, sol, "primal" if p.formulation == "soft_primal" else "dual")


def _run_working_set(task: BenchCase, row: Row, X, y, K) -> None:
    p = task.path
    start = time.perf_counter()
    if is_linear(p.problem):
        sol = primal_working_set.solve(X, y, C_VALUE, backend=p.backend, layer=p.layer, profile=p.profile,
                                       time_limit=task.budget)
        row.extras.update(start=sol.extras["start"], sample=sol.extras["sample"], working_set=sol.extras["working_set"])
    else:
        # K comes from the bench's own Gram matrix (no re-validation). From n = 2,000 the loop starts
        # from a sample's split.
        q = working_set.block_size(task.n)
        sol = working_set.solve(K, y, problem_C(p.problem), backend=p.backend, layer=p.layer, q=q, time_limit=task.budget,
                                validate=False)
        row.extras.update(q=q, kkt_violation=sol.extras.get("kkt_violation"), start=sol.extras.get("start"))
    # the outer loop (selection, updates), the subproblems and the closing checks: sol.build_s + sol.solve_s
    # leave the checks out, a large share of the time where the proof of the optimum runs its rounds
    row.solve_s = time.perf_counter() - start
    row.solver_s = sol.solve_s  # inside the subproblem calls
    row.extras["outer_iterations"] = sol.iterations
    _fill_from_solution(row, sol, "primal" if is_linear(p.problem) else "dual")


def _run_auto(task: BenchCase, row: Row, X, y) -> None:
    """solvers.api.solve with no method given (method="auto"): what the runner and a user get."""
    p = task.path
    kernel = {"kernel": {"name": "rbf", "gamma": problem_gamma(p.problem)}} if not is_linear(p.problem) else {}
    start = time.perf_counter()
    sol = api.solve(p.formulation, X, y, layer=p.layer, backend=p.backend, C=problem_C(p.problem),
                    profile=p.profile, **kernel)
    elapsed = time.perf_counter() - start
    row.build_s, row.solve_s = elapsed - sol.solve_s, sol.solve_s  # everything from the data to the verified answer
    row.solver_s = sol.solve_s
    row.version = sol.backend_version
    row.extras.update(method=sol.extras.get("method"), row_source=sol.extras.get("row_source"),
                      kernel_rows_computed=sol.extras.get("kernel_rows_computed"))
    _fill_from_solution(row, sol, "primal" if is_linear(p.problem) else "dual")


def measure(task: BenchCase) -> Row:
    """One measurement (in the worker process)."""
    import warnings

    warnings.filterwarnings("ignore")
    p = task.path
    row = p.row(task.n)
    try:
        X, y = problem_data(p.problem, task.n, p.d)
        K = L = None
        row.build_s = 0.0
        # solve(method="auto") starts from the data: its Gram matrix or kernel rows are in its own time
        if not is_linear(p.problem) and p.layer != "sklearn" and p.form != "auto":
            start = time.perf_counter()
            if p.form == "working_set":  # the Gram matrix where it fits the memory budget, else rows on demand
                K = row_source(Kernel("rbf", gamma=problem_gamma(p.problem)), X)
            elif not gram_fits(task.n, validation.memory_budget()):
                raise MemoryError(f"not run: the n x n Gram matrix ({8.0 * task.n ** 2 / 2**30:.1f} GiB) does not "
                                  "fit the memory budget")
            else:
                K = gram(Kernel("rbf", gamma=problem_gamma(p.problem)), X)  # one n x n array, filled in place
            if p.form in ("factor", "lowrank"):
                fac = factorize(K, max_rank=p.rank or None)
                L = fac.L
                row.extras.update(rank=int(fac.rank), factor_residual=float(fac.residual))
            row.gram_s = time.perf_counter() - start
            row.build_s = row.gram_s  # LIBSVM computes its kernel inside fit: count ours too
            X = None
        row.base_rss_mb = _rss_mb()
        if p.layer == "sklearn":
            _run_sklearn(task, row, X, y)
        elif p.form == "auto":
            _run_auto(task, row, X, y)
        elif p.form == "working_set":
            _run_working_set(task, row, X, y, K)
        elif p.layer == "direct":
            _run_direct(task, row, X, y, K, L)
        else:
            _run_layer(task, row, X, y, K, L)
        if p.layer != "sklearn":
            row.total_s = row.build_s + row.solve_s
    except MemoryError as exc:
        row.status, row.message = "memory_error", str(exc) or "MemoryError"
    except Exception as exc:  # a crashing path is a failed row, not a crashed run
        row.status = "error"
        row.message = f"{type(exc).__name__}: {exc}"[:300]  # one line for the report; the traceback on stderr
        traceback.print_exc(limit=2)
    row.peak_rss_mb = _peak_mb()
    return row


def _measured(task: BenchCase) -> dict:
    """One measurement's row, in a child of the benchmark's solve server."""
    return asdict(measure(task))


#: The modules a measurement's child uses beyond the solvers' (isolation.PRELOAD), imported once by the server.
MEASURE_MODULES = ("pandas", "psutil", "sklearn.svm", "solvers.algorithms.direct", "experiments.bench.scaling")


def run_in_worker(task: BenchCase, limit: float) -> dict:
    """Measure in a child of the benchmark's solve server (solvers.isolation), killed `limit` seconds plus the
    grace after it started: its peak memory is its own, and a stuck solver is stopped."""
    server, _ = isolation.Server.running(isolation.PRELOAD + MEASURE_MODULES)
    if server is None:
        raise RuntimeError(f"the benchmark's solve server did not start in {isolation.SERVER_START_LIMIT_S:g} s")
    frames, why = isolation.request(partial(_measured, task), forward_warnings=False)
    if frames is None:
        raise RuntimeError(why)
    start = time.perf_counter()
    kill_at = time.monotonic() + limit + isolation.grace(limit)
    result = server.call(frames, lambda: kill_at)
    wall = time.perf_counter() - start
    if isinstance(result, dict):
        return result
    why = "the solve server died before it took the measurement"
    if isinstance(result, isolation.Ended):
        why = ("killed at the limit" if result.killed else "the worker died") + f" ({result.how or 'SIGKILL'})"
    row = task.path.row(task.n, status="killed", total_s=wall, message=f"no result after {wall:.0f} s: {why}")
    return asdict(row)


# ----------------------------------------------------------------------------- driver


def _exceeded(row: dict, budget: float) -> str:
    """Why a path stops here ("" if it goes on to the next n)."""
    if row["status"] in ("killed", "memory_error"):
        return f"{row['status']} at n={row['n']}"
    total = row.get("total_s")
    if total is not None and math.isfinite(total) and total > budget:
        return f"took {total:.1f} s > budget {budget:g} s at n={row['n']}"
    if row["status"] == "time_limit":
        return f"time limit at n={row['n']}"
    if row["status"] == "iteration_limit" and row["layer"] != "sklearn":
        # The same solver with the same cap on a larger problem: it would stop there too. (The
        # sklearn peers run at every n: LIBLINEAR's default cap is part of its default.)
        return f"iteration limit at n={row['n']}"
    return ""


def _matches(path: BenchPath, patterns: str) -> bool:
    """Whether any comma-separated pattern matches: a label part, a problem, or problem:label-part."""
    for pat in patterns.split(","):
        problem, _, part = pat.rpartition(":")
        # a problem's name names that problem only ('linear' is not the 'linear_1e6' problem's sklearn/liblinear)
        in_label = part in path.label and (bool(problem) or part not in PROBLEMS)
        if part and (not problem or problem == path.problem) and (in_label or part == path.problem):
            return True
    return False


def run(quick: bool, budget: float, out_dir: Path, backends=ALL_BACKENDS, only: str | None = None,
        progress: bool = True, exclude: str | None = None, done: "pandas.DataFrame | None" = None,  # noqa: F821
        kill_after: float | None = None, rounds: int = 1,
        families=("blobs",)) -> "pandas.DataFrame":  # noqa: F821
    """Run the plan; rows of `done` (an earlier run's) are kept and their (path, n) not measured again.

    rounds > 1: each (path, n) is measured that many times, the paths' order at each n turned by one
    path a round, and the fastest finished round is kept (`_fastest`; every round's time in its extras).
    """
    import pandas as pd

    paths = plan(quick, backends, families)
    if only:
        paths = [p for p in paths if _matches(p, only)]
    if exclude:
        paths = [p for p in paths if not _matches(p, exclude)]
    kill_after = kill_after if kill_after is not None else 2 * budget + 60
    earlier: dict = {}
    if done is not None and not done.empty:
        done = done.copy()
        done["form"] = done["form"].fillna("")
        for record in done.to_dict("records"):
            record["label"] = path_label(record["problem"], record["formulation"], record["layer"],
                                         record["backend"], record["form"], record["rank"])
            earlier[(record["problem"], record["label"], int(record["n"]))] = record
    rows = []
    jobs = [(p, n) for p in paths for n in sizes(p.problem, quick)]
    stopped: dict[BenchPath, str] = {}
    bar = Progress(len(jobs) * rounds, enabled=progress, unit="measurement", desc="bench")
    # n ascending across all paths: the cheap sizes of every path first.
    for n in sorted({n for _, n in jobs}):
        group = [p for p in paths if n in sizes(p.problem, quick)]
        measured: dict[BenchPath, list[dict]] = {}
        for r in range(rounds):
            for p in _turned(group, r):
                what = f"{p.label} n={n}" + (f" round {r + 1}" if rounds > 1 else "")
                bar.note(what)
                if r == 0 and (p.problem, p.label, n) in earlier:  # measured by the earlier run: resume after it
                    row = earlier.pop((p.problem, p.label, n))
                    rows.append(row)
                    why = _exceeded(row, budget) or (row.get("message", "") if row["status"] == "not_run" else "")
                    if why and p not in stopped:
                        stopped[p] = str(why).replace("stopped: ", "")
                    bar.done(f"{what}: kept from the earlier run")
                    continue
                if p in stopped:
                    if r == 0:
                        rows.append(asdict(p.row(n, status="not_run", message=f"stopped: {stopped[p]}")))
                    bar.done(f"{what}: not run (stopped: {stopped[p]})")
                    continue
                if r > 0 and (p not in measured or _exceeded(measured[p][0], budget)):
                    bar.done(f"{what}: not run (over the budget once is enough)")
                    continue  # over the budget once is enough
                row = run_in_worker(BenchCase(p, n, budget), kill_after)
                measured.setdefault(p, []).append(row)
                bar.done(f"{what}: {row.get('status')} ({_seconds(row):.2f} s)")
                # every measurement saved at once (--resume takes a path's rounds so far as its row)
                pd.DataFrame(rows + [_fastest(r) for r in measured.values()]).to_csv(
                    out_dir / "results.partial.csv", index=False)
        for p in group:
            if p in measured:
                row = _fastest(measured[p])
                rows.append(row)
                why = _exceeded(row, budget)
                if why:
                    stopped[p] = why
    bar.close()
    rows += list(earlier.values())  # an earlier run's rows of paths not in this plan
    return add_errors(pd.DataFrame(rows))


def _seconds(row: dict) -> float:
    """A measured row's total time (NaN where the worker gave none)."""
    total = row.get("total_s")
    return float(total) if isinstance(total, (int, float)) else math.nan


def _turned(group: list, r: int) -> list:
    """The paths in round r: the plan's order turned by r. A worker that follows one whose exit gave back
    much memory is slower whatever it runs (virtual machines with free page reporting, docs/benchmarks.md):
    in one fixed order the same path would always pay it."""
    shift = r % len(group) if group else 0
    return group[shift:] + group[:shift]


def _fastest(rounds: list[dict]) -> dict:
    """Of one (path, n)'s rounds: the fastest verified (or converged, for LIBSVM and LIBLINEAR) one, else the
    fastest; every round's time in its extras."""
    # LIBSVM's and LIBLINEAR's rows say "converged"
    finished = [row for row in rounds if row["status"] in (OPTIMAL, "converged")] or rounds

    def seconds(row):
        total = row.get("total_s")
        return total if total is not None and math.isfinite(total) else math.inf

    best = dict(min(finished, key=seconds))
    if len(rounds) > 1:
        best["extras"] = {**(best.get("extras") or {}), "round_total_s": [row.get("total_s") for row in rounds]}
    return best


def add_errors(df):
    """rel_obj_error against the best verified optimum of each (problem, n)."""
    df = df.copy()
    df["rel_obj_error"] = np.nan
    df["reference"] = np.nan
    for (problem, n), group in df.groupby(["problem", "n"]):
        ok = group[(group["status"] == "optimal") & group["rel_gap"].notna()]
        if ok.empty:
            continue
        best = ok.loc[ok["rel_gap"].abs().idxmin()]
        ref = best["primal_objective"] if math.isfinite(best["primal_objective"]) else best["dual_objective"]
        if not math.isfinite(ref):
            continue
        idx = group.index
        sign = np.where(df.loc[idx, "objective_kind"] == "primal", 1.0, -1.0)
        df.loc[idx, "rel_obj_error"] = sign * (df.loc[idx, "objective"] - ref) / abs(ref)
        df.loc[idx, "reference"] = ref
    return df


def run_lp(quick: bool, budget: float, out_dir: Path, progress: bool = True) -> int:
    """The LPs of the 1-norm SVM through HiGHS at growing n; `budget` is HiGHS's time limit per solve."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ns = (1_000,) if quick else (1_000, 10_000, 100_000)
    start = time.perf_counter()
    df = lp_timings(ns=ns, d=20, C=1.0, time_limit=budget, progress=progress)
    df["total_s"] = df["build_s"] + df["solve_s"]
    df.to_csv(out_dir / "lp.csv", index=False)
    wide = df.pivot_table(index=["n", "layer", "setting"], columns="formulation",
                          values=["total_s", "objective"], aggfunc="first")
    wide.columns = [f"{v}[{f}]" for v, f in wide.columns]
    lines = [
        "# 1-norm SVM LPs through HiGHS",
        "",
        f"`python -m experiments.bench --lp{' --quick' if quick else ''} --budget {budget:g}`: l1_primal and its LP "
        f"dual l1_dual on sparse_features(n, d = 20), C = 1, HiGHS simplex and interior point in both layers, "
        f"time limit {budget:g} s per solve. Statuses are the project's (verified) ones; total = build + solve "
        "(for cvxpy the solve includes its compilation).",
        "",
        df[["n", "layer", "setting", "formulation", "status", "objective", "rel_duality_gap", "nnz_w",
            "build_s", "solve_s", "total_s"]].to_markdown(index=False, floatfmt=".6g"),
        "",
        "Primal against dual, per (n, layer, setting):",
        "",
        wide.reset_index().to_markdown(index=False, floatfmt=".10g"),
        "",
        f"Wall time of this run: {time.perf_counter() - start:.0f} s.",
    ]
    (out_dir / "lp.md").write_text("\n".join(lines) + "\n")
    print(f"{len(df)} LP rows -> {out_dir / 'lp.csv'}, {out_dir / 'lp.md'}")
    return 0


def _parser() -> argparse.ArgumentParser:
    """The command line of python -m experiments.bench."""
    parser = OneLineParser(prog="python -m experiments.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny n (about 20 s): the version the tests run")
    parser.add_argument("--budget", type=float, default=None,
                        help="per-solve budget in seconds: a path that exceeds it is not run at larger n "
                             "(default 60, quick 20); a worker is killed after --kill-after")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default results/bench, "
                                                                "quick: results/bench_quick)")
    parser.add_argument("--backends", default=",".join(ALL_BACKENDS), help="comma-separated backends")
    parser.add_argument("--only", default=None, help="run only paths whose label contains one of these "
                        "(comma-separated; or 'linear'/'kernel'; 'kernel:libsvm' for one problem's); without --resume their rows replace the same "
                        "paths' rows in an existing <out>/results.csv")
    parser.add_argument("--exclude", default=None, help="leave out paths whose label contains any of these "
                        "(comma-separated)")
    parser.add_argument("--resume", action="store_true", help="keep the rows of <out>/results.partial.csv (or "
                        "results.csv) and measure only what they lack; paths they stopped stay stopped")
    parser.add_argument("--kill-after", type=float, default=None, help="a worker's time limit: it is killed this many "
                        "seconds plus 0.5 s and 5%% after its start (default 2 x budget + 60)")
    parser.add_argument("--report-only", action="store_true", help="rebuild report.md from <out>/results.csv")
    parser.add_argument("--lp", action="store_true", help="instead: the 1-norm SVM's LPs (l1_primal, l1_dual) "
                        "through HiGHS simplex and ipm in both layers at n = 1e3, 1e4, 1e5 (quick: 1e3): "
                        "<out>/lp.csv and <out>/lp.md")
    parser.add_argument("--members", action="store_true", help="instead: the SVM family's members with a fast "
                        "method (one-class, epsilon-SVR, nu-SVR, nu-SVC), the estimators by SMO against scikit-learn "
                        "and the interior-point path on the bundled sets, --rounds interleaved rounds (default 5, "
                        "quick 3): <out>/members.csv and <out>/members.md")
    parser.add_argument("--rounds", type=int, default=None, help="measure each (path, n) this many times, the "
                        "paths' order turned by one each round, and keep the fastest finished round (default 1)")
    parser.add_argument("--family", default="blobs", help=f"comma list of data families, of {', '.join(FAMILIES)} "
                        "(default blobs: the generators above; hard: experiments.datasets.hard over several seeds; "
                        "bundled: scikit-learn's breast cancer, digits even/odd, wine, iris)")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def _measure(args, out: Path, budget: float, backends: tuple, families: tuple, argv, runs: list,
             runs_file: Path):
    """Run the benchmark (or what --resume/--only leave), write <out>/results.csv and add this invocation to
    runs.json: (the table, the invocations that made it)."""
    import pandas as pd

    started = datetime.now(timezone.utc)
    start = time.perf_counter()
    done = None
    if args.resume:
        source = out / "results.partial.csv" if (out / "results.partial.csv").exists() else out / "results.csv"
        done = pd.read_csv(source) if source.exists() else None
    df = run(args.quick, budget, out, backends, args.only, progress=not args.no_progress,
             exclude=args.exclude, done=done, kill_after=args.kill_after, rounds=args.rounds,
             families=families)
    if args.only and not args.resume and (out / "results.csv").exists():
        # A partial re-run replaces its own paths' rows and keeps the others.
        old = pd.read_csv(out / "results.csv")
        key = ["problem", "label"]
        keep = old.merge(df[key].drop_duplicates(), on=key, how="left", indicator=True)["_merge"] == "left_only"
        df = add_errors(pd.concat([old[keep.to_numpy()], df], ignore_index=True))
    df.to_csv(out / "results.csv", index=False)
    (out / "results.partial.csv").unlink(missing_ok=True)
    wall = time.perf_counter() - start
    print(f"{len(df)} rows in {wall:.0f} s -> {out / 'results.csv'}")
    # Which invocations made the table: a full run starts the list, --only/--resume add to it.
    invocation = {"command": " ".join(["python -m experiments.bench", *(argv if argv is not None else sys.argv[1:])]),
                  "started": f"{started:%Y-%m-%d %H:%M}", "wall_s": round(wall, 1), "rows": len(df),
                  "budget": budget, "kill_after": args.kill_after if args.kill_after is not None else 2 * budget + 60}
    runs = (runs if args.only or args.resume else []) + [invocation]
    runs_file.write_text(json.dumps(runs, indent=1) + "\n")
    return df, runs


def main(argv=None) -> int:
    """python -m experiments.bench: its options checked, then the members' or the LPs' run, or the scaling
    benchmark (or its report alone) into <out>."""
    parser = _parser()
    args = parser.parse_args(argv)
    families = tuple(f.strip() for f in args.family.split(",") if f.strip())
    if not families or set(families) - set(FAMILIES):
        parser.error(f"--family: choose from {', '.join(FAMILIES)} (got {args.family!r})")
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.members:
        # deferred: the estimators' solver stack loads only for this mode
        from experiments.bench.members import run_members

        return run_members(args.quick, args.out or Path("results/bench_quick" if args.quick else "results/bench"),
                           args.rounds or (3 if args.quick else 5), progress=not args.no_progress)
    args.rounds = args.rounds or 1
    if args.lp:
        return run_lp(args.quick, args.budget if args.budget is not None else 120.0,
                      args.out or Path("results/bench_quick" if args.quick else "results/bench"),
                      progress=not args.no_progress)
    budget = args.budget if args.budget is not None else (20.0 if args.quick else 60.0)
    if budget <= 0:
        parser.error("--budget must be > 0 seconds")
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    unknown = sorted(set(backends) - set(ALL_BACKENDS))
    if unknown:
        parser.error(f"unknown backends {unknown}; choose from {ALL_BACKENDS}")
    if args.only and not args.report_only and not any(_matches(p, args.only) for p in plan(args.quick, backends,
                                                                                         families)):
        problems = sorted({p.problem for p in plan(args.quick, backends, families)})
        parser.error(f"--only {args.only!r} matches no path of --family {','.join(families)}: give a problem "
                     f"({', '.join(problems)}), a part of a path's label, or problem:label-part")
    out = args.out or Path("results/bench_quick" if args.quick else "results/bench")
    if args.report_only and not (out / "results.csv").is_file():
        parser.error(f"--report-only: {out / 'results.csv'} does not exist (run the benchmark into {out} first)")
    out.mkdir(parents=True, exist_ok=True)  # after every check: a refused command leaves no folder
    import pandas as pd

    runs_file = out / "runs.json"
    runs = json.loads(runs_file.read_text()) if runs_file.exists() else []
    if args.report_only:
        df = pd.read_csv(out / "results.csv")
    else:
        df, runs = _measure(args, out, budget, backends, families, argv, runs, runs_file)
    last = runs[-1] if runs else {}
    command = ("python -m experiments.bench" + (" --quick" if args.quick else "") + f" --budget {budget:g}"
               + (f" --family {','.join(families)}" if families != ("blobs",) else ""))
    bench_report.write_report(df, out, command=command, budget=budget, quick=args.quick,
                              kill_after=last.get("kill_after"), runs=runs)
    print(f"report -> {out / 'report.md'}")
    return 0
