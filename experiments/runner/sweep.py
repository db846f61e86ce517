"""The sweep: problems x (layer, backend) -> tasks -> isolated solves -> rows.

Each task is solved in a process of its own (`run_isolated`), forked from a
server that has already imported Pyomo, cvxpy and the solvers, so isolation
costs milliseconds, not an import. The parent waits for the row with the
per-solve timeout and kills the process when it runs over; an exception, a
crash (even a segfault inside a solver) or a timeout comes back as a row with
status ``error`` or ``time_limit`` and its message, and the sweep goes on.
The solver's console output goes to ``logs/<task id>.log``, not the terminal.

A task names its formulation; `execute_task` sends the QPs to `solvers.api.solve`,
the 1-norm SVM LPs to `solvers.lp.solve_lp` and `separability` to
`experiments.separability.is_separable` (the row then carries the verdict in
`separable` and its proof, as JSON, in `certificate`). LP tasks carry a HiGHS
`method` ("simplex" / "ipm"; "" for other backends). A hard-margin task carries
the separability verdict of its data (`separable`); when the data are proven not
separable, no hard-margin row can be `optimal` (the problem has no solution).

Two executors run the same function, `run_isolated`:

* ``local``: a thread pool of ``workers`` threads, each waiting on its child; a solve still
  running at 20 x the fastest answered solve of its problem (at least 30 s) is stopped, a
  `time_limit` row saying so (`SlowStop`, ``--stop-slow``), so that a default run over every
  backend does not wait minutes for the few that are slow on a method;
* ``dask``: ``Client.submit`` to a Dask distributed cluster (a scheduler address,
  or a ``LocalCluster`` when none is given).

As with any multiprocessing code, a script that calls these executors must do so
under ``if __name__ == "__main__":`` (the fork server imports the main module).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from experiments.runner.results_table import RESULT_COLUMNS, to_json
from experiments.runner.suites import L1_FORMULATIONS, L1_PRIMAL, LINEAR, SEPARABILITY, Problem, is_hard_margin, is_lp
from formulations.errors import SVMInputError
from formulations.kernels import Kernel, exact_number
from formulations.names import KERNEL_DUAL
from formulations.scaling import Standardizer
from solvers import isolation, registry
from solvers.backends import RECORDS
from solvers.solution import ERROR, INFEASIBLE, ITERATION_LIMIT, OPTIMAL, OPTIMAL_INACCURATE, TIME_LIMIT

#: Modules the fork server imports once, so every solve process starts warm.
PRELOAD = [
    *isolation.PRELOAD, "psutil", "solvers.registry", "solvers.lp", "experiments.separability",
    "experiments.runner.sweep",
    "experiments.runner.warm",  # last: after every module that loads a BLAS
]

#: Extra seconds given to a solve past --timeout (the solver gets the time limit itself first).
def _grace(timeout: float) -> float:
    return 1.0 + 0.1 * timeout


@dataclass(frozen=True, eq=False)
class Task:
    """One solve: a problem, its data, one (layer, backend), and how to run it."""

    key: str
    order: int
    suite: str
    dataset: str
    formulation: str
    layer: str
    backend: str
    C: float
    kernel: Kernel
    profile: str
    kernel_form: str
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    label_map: dict = field(default_factory=dict)
    timeout: float | None = None
    fault: str = ""  # testing aid: "raise", "crash", "exit", "sleep:S", "hang:PATH"
    run_id: str = ""
    method: str | None = None  # HiGHS's LP method ("simplex" / "ipm") for an LP task; None otherwise
    separable: bool | None = None  # a hard-margin task: the verdict of the separability check on its data
    solve_method: str = "auto"  # solvers.api.solve's method for a QP task ("" for an LP)
    problem_key: str = ""  # what is solved, the same for every (layer, backend) of it (SlowStop compares them)
    standardize: bool = False  # solved on standardized features, w* and b* reported in the data's units

    @property
    def id(self) -> str:
        """A short file-name-safe id of the key."""
        return hashlib.sha1(self.key.encode()).hexdigest()[:12]

    def params(self) -> dict:
        """The task's columns of the table (what was solved and how)."""
        n, d = self.X.shape
        k = self.kernel
        return {
            "task_key": self.key, "order": self.order, "suite": self.suite, "dataset": self.dataset,
            "n": n, "d": d, "formulation": self.formulation, "layer": self.layer, "backend": self.backend,
            "profile": self.profile, "kernel": k.key,  # exact: two gammas that print alike stay two
            "gamma": k.gamma if k.name in ("rbf", "poly", "sigmoid") else math.nan,
            "degree": k.degree if k.name == "poly" else None,
            "coef0": k.coef0 if k.name in ("poly", "sigmoid") else math.nan,
            "C": self.C, "kernel_form": self.kernel_form if self.formulation == KERNEL_DUAL else "",
            "label_map": _json_dict(self.label_map), "fault": self.fault, "run_id": self.run_id,
            "method": self.method or "", "separable": self.separable, "solve_method": self.solve_method,
            "standardized": self.standardize,
        }

    @property
    def hard_margin(self) -> bool:
        return is_hard_margin(self.formulation, self.C, self.kernel)


def _json_dict(d: dict) -> str:
    return json.dumps(d, sort_keys=True) if d else ""


def task_key(dataset: str, problem: Problem, layer: str, backend: str, method: str | None = None,
             data: str = "") -> str:
    """Readable and unique: what is solved (the parameters written exactly, the data by its content
    hash `data`), by what (and which HiGHS LP method), at which profile."""
    from solvers.lp import setting_label  # lazy: the LP stack is only needed for LP rows

    kernel = problem.kernel.key if problem.formulation == KERNEL_DUAL else "linear"
    form = problem.formulation + (f"[{problem.kernel_form}]" if problem.formulation == KERNEL_DUAL else "")
    solve_method = "" if is_lp(problem.formulation) else f"|method={problem.method}"
    return (f"{dataset}|{form}|{kernel}|C={exact_number(problem.C)}|{layer}/{setting_label(backend, method)}"
            f"|{problem.profile}{solve_method}|data={data}")


def lp_settings_for(backends: Iterable[tuple[str, str]],
                    highs_methods: Iterable[str] | None = None) -> list[tuple[str, str, str | None]]:
    """The LP settings among the given (layer, backend) pairs: LP-capable backends only, HiGHS once per
    LP method (simplex, ipm), in the pairs' order."""
    from solvers.lp import HIGHS_METHODS, LP_BACKENDS, with_methods  # lazy: imports the LP builders

    methods = tuple(HIGHS_METHODS) if highs_methods is None else tuple(highs_methods)
    return with_methods([(layer, backend) for layer, backend in backends if backend in LP_BACKENDS], methods)


def make_tasks(
    problems: Iterable[Problem],
    datasets: dict,
    backends: Iterable[tuple[str, str]],
    *,
    suite: str,
    timeout: float | None = None,
    faults: dict[tuple[str, str], str] | None = None,
    run_id: str = "",
    label_maps: dict[str, dict] | None = None,
    separable: dict[str, bool | None] | None = None,
    highs_methods: Iterable[str] | None = None,
    standardize: bool = False,
) -> list[Task]:
    """Cross problems with (layer, backend) pairs. `datasets` maps (name, params) keys to Dataset objects
    (see `dataset_key`); `faults` maps (layer, backend) (either may be "*") to a fault kind; `label_maps`
    records, per dataset name, how the user's labels became -1/+1.

    QP formulations get every pair; LP formulations every LP setting among the pairs
    (`lp_settings_for`: HiGHS once per method in `highs_methods`, default simplex and ipm).
    `separable` maps a dataset name to its separability verdict, recorded in its hard-margin tasks.
    `standardize`: every QP and 1-norm LP is solved on standardized features (`--standardize`).
    """
    backends = list(backends)
    lp_pairs = None
    tasks, seen = [], set()
    for problem in problems:
        ds = datasets[dataset_key(problem.dataset, problem.params)]
        lp = is_lp(problem.formulation)
        if lp:
            if lp_pairs is None:
                lp_pairs = lp_settings_for(backends, highs_methods)
            settings = lp_pairs
        else:
            settings = [(layer, backend, None) for layer, backend in backends]
        verdict = (separable or {}).get(ds.name) if is_hard_margin(problem.formulation, problem.C,
                                                                   problem.kernel) else None
        for layer, backend, method in settings:
            key = task_key(ds.name, problem, layer, backend, method, ds.fingerprint) + ("|standardized" if standardize
                                                                                        else "")
            if key in seen:
                continue
            seen.add(key)
            fault = _fault_for(faults or {}, layer, backend)
            tasks.append(Task(
                key=key, order=len(tasks), suite=suite, dataset=ds.name, formulation=problem.formulation,
                layer=layer, backend=backend, C=float(problem.C), kernel=problem.kernel, profile=problem.profile,
                kernel_form=problem.kernel_form, X=np.asarray(ds.X), y=np.asarray(ds.y),
                label_map=(label_maps or {}).get(ds.name, {}), timeout=timeout, fault=fault, run_id=run_id,
                method=method, separable=verdict, solve_method="" if lp else problem.method,
                problem_key=task_key(ds.name, problem, "*", "*", data=ds.fingerprint), standardize=standardize,
            ))
    return tasks


def leave_out_stalls(tasks: list[Task], named: Iterable[str] | None) -> tuple[list[Task], list[str]]:
    """The tasks less those of a backend whose record says its QP solver stalls at their n (RECORDS' measured
    qp_stalls_from_n: HiGHS from 1,000 points, minutes a solve), unless the backend is `named` (--backends);
    and one line per left-out (layer, backend, formulation) saying why and how to include it. LP tasks stay
    (the stall is the QP solver's)."""
    named = set(named or ())
    kept, left = [], {}
    for task in tasks:
        stalls_from = RECORDS[task.backend].qp_stalls_from_n
        if (task.method is not None or task.backend in named or stalls_from is None
                or len(task.y) < stalls_from):
            kept.append(task)
            continue
        group = left.setdefault((task.layer, task.backend, task.formulation), [stalls_from, set()])
        group[1].add(len(task.y))
    notes = [f"note: left out {layer}/{backend} on {formulation} (n = {', '.join(f'{n:,}' for n in sorted(sizes))}): "
             f"{RECORDS[backend].title}'s QP solver stalls on SVM problems from n = {stalls_from:,} (solvers/backends.py); "
             f"include it with --backends {backend},..."
             for (layer, backend, formulation), (stalls_from, sizes) in left.items()]
    return kept, notes


def separability_task(ds, *, profile: str = "default", timeout: float | None = None, run_id: str = "",
                      suite: str = "") -> Task:
    """The check the sweep runs once per data set before its hard-margin solves: `is_separable` through
    pyomo/highs (HiGHS's default LP method)."""
    problem = Problem(ds.name, SEPARABILITY, math.inf, LINEAR, {}, profile)
    key = task_key(ds.name, problem, "pyomo", "highs", data=ds.fingerprint) + "|check"
    return Task(key=key, order=-1, suite=suite,
                dataset=ds.name, formulation=SEPARABILITY, layer="pyomo", backend="highs", C=math.inf,
                kernel=LINEAR, profile=profile, kernel_form="", X=np.asarray(ds.X), y=np.asarray(ds.y),
                timeout=timeout, run_id=run_id)


def dataset_key(name: str, params) -> tuple:
    return (name, tuple(sorted(dict(params).items())))


def _fault_for(faults: dict, layer: str, backend: str) -> str:
    for sel in ((layer, backend), ("*", backend), (layer, "*"), ("*", "*")):
        if sel in faults:
            return faults[sel]
    return ""


# ------------------------------------------------------------------ one solve -> one row


def _inject(fault: str) -> None:
    """Testing aid: make this solve fail in a chosen way."""
    if not fault:
        return
    kind, _, arg = fault.partition(":")
    if kind == "raise":
        raise RuntimeError("injected fault: raise")
    if kind == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "exit":
        os._exit(int(arg or 3))
    if kind == "sleep":
        time.sleep(float(arg or 3600))
        return
    if kind == "hang":  # announce (touch PATH) that the worker is inside its task, then wait to be killed
        with open(arg, "w"):
            pass
        signal.pause()
        return
    raise SVMInputError(f"unknown fault {fault!r}; faults: raise, crash, exit[:code], sleep:S, hang:PATH")


def solution_row(sol, task: Task) -> dict:
    """The table's columns from a `Solution` (results blank unless verified optimal)."""
    optimal = sol.status == OPTIMAL
    w = sol.w  # a linear kernel's too (solvers.closing.linear_kernel_w), in the data's units
    checks = dict(sol.checks)
    row = {
        "status": sol.status, "solver_status": sol.solver_status, "raw_status": str(sol.raw_status),
        "raw_objective": sol.objective, "raw_w": to_json(w), "raw_b": sol.b,
        "objective": sol.objective if optimal else math.nan,
        "w": to_json(w) if optimal else "",
        "b": sol.b if optimal else math.nan,
        "b_multiplier": sol.b_multiplier if optimal else math.nan,
        "alpha": to_json(sol.alpha) if optimal else "",
        "b_rule": sol.b_rule, "iterations": sol.iterations, "build_s": sol.build_s, "solve_s": sol.solve_s,
        "backend_version": sol.backend_version, "message": sol.message,
        "method_used": sol.extras.get("method", ""),  # what "auto" chose (or the method asked)
    }
    for name in ("primal_objective", "dual_objective", "duality_gap", "rel_duality_gap", "kkt_stationarity",
                 "kkt_balance", "kkt_primal_feasibility", "kkt_dual_feasibility", "kkt_complementarity", "n_sv",
                 "n_free_sv", "n_bound_sv", "margin", "train_accuracy", "alpha_source", "verdict"):
        row[name] = checks.get(name)
    if not optimal:
        verdict = row["verdict"] or ""
        why = [f"solver: {sol.message}" if sol.message else "",
               f"checks: {verdict}" if verdict and verdict not in (sol.message or "") else ""]
        row["error"] = "; ".join(p for p in why if p) or f"status {sol.status} (raw {sol.raw_status})"
    else:
        row["error"] = ""
    if sol.extras.get("labels"):
        row["label_map"] = _json_dict(task.label_map or sol.extras["labels"])
    return row


def lp_solution_row(sol, task: Task) -> dict:
    """The table's columns from a 1-norm SVM LP `Solution` (solvers.lp's checks, in the QP columns' places).

    kkt_primal_feasibility / kkt_dual_feasibility / kkt_complementarity hold the LP's
    primal infeasibility, dual infeasibility (|sum_i alpha_i y_i x_ij| <= 1, 0 <= alpha <= C,
    sum alpha_i y_i = 0) and complementarity (each relative to its own scale, solvers.lp.l1_checks);
    `nnz_w` the nonzero weights.
    """
    row = solution_row(sol, task)
    checks = sol.checks or {}
    row.update(
        kkt_primal_feasibility=checks.get("primal_infeasibility"),
        kkt_dual_feasibility=checks.get("dual_infeasibility"),
        kkt_complementarity=checks.get("complementarity"),
        nnz_w=checks.get("nnz_w"),
        alpha_source="multipliers" if task.formulation == L1_PRIMAL else "variables",
    )
    if checks.get("n_sv") is not None and checks.get("n_bound_sv") is not None:
        row["n_free_sv"] = int(checks["n_sv"]) - int(checks["n_bound_sv"])
    return row


def _nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _array(a):
    return None if a is None else [float(v) for v in np.asarray(a, dtype=float).ravel()]


def certificate_record(res) -> dict:
    """An `experiments.separability.SeparabilityResult` as plain JSON-able data (the proof either way).

    lambda and mu keep their positive entries only (`lam_idx`: positions within A's rows,
    `lam_rows`: 0-based rows of X), so the record stays small for large data.
    """
    rec = {"separable": res.separable, "verified": bool(res.verified), "layer": res.layer,
           "backend": res.backend, "method": res.method, "message": res.message,
           "w": _array(res.w), "b": _nan_to_none(float(res.b)), "min_margin": _nan_to_none(float(res.min_margin)),
           "point": _array(res.point),
           "certificate": {k: _nan_to_none(float(v)) if isinstance(v, (float, np.floating)) else
                           (int(v) if isinstance(v, (np.integer,)) else v)
                           for k, v in res.certificate.items() if np.isscalar(v)}}
    for name, weights, rows in (("lam", res.lam, res.rows_a), ("mu", res.mu, res.rows_b)):
        if weights is None:
            continue
        idx = np.flatnonzero(np.asarray(weights) > 0)
        rec[f"{name}_idx"] = idx.tolist()
        rec[f"{name}_val"] = [float(v) for v in np.asarray(weights)[idx]]
        rec[f"{name}_rows"] = [int(r) for r in np.asarray(rows)[idx]]
        rec[f"n_{name}"] = int(len(weights))
    return rec


def separability_row(res, task: Task) -> dict:
    """The table's columns from `is_separable`: the verdict is the row's status.

    optimal: the feasibility LP gave a hyperplane with min_i y_i (w'x_i + b) > 0 (w, b filled);
    infeasible: no hyperplane exists, proven by a verified common point of both hulls;
    otherwise undecided (the feasibility LP's status if it stopped early, else error).
    """
    feas, hull = res.feasibility, res.hull
    if res.separable is True and res.verified:
        status = OPTIMAL
    elif res.separable is False and res.verified:
        status = INFEASIBLE
    else:
        status = feas.status if feas.status in (ITERATION_LIMIT, TIME_LIMIT, ERROR) else ERROR
    optimal = status == OPTIMAL
    raw = str(feas.raw_status) + (f"; hull LP: {hull.raw_status}" if hull is not None else "")
    return {
        "status": status, "solver_status": feas.solver_status, "raw_status": raw,
        "separable": res.separable if res.verified else None,
        "objective": 0.0 if optimal else math.nan,
        "w": to_json(res.w) if optimal else "", "b": res.b if optimal else math.nan,
        "raw_w": to_json(feas.w), "raw_b": feas.b, "raw_objective": feas.objective,
        "kkt_primal_feasibility": (feas.checks or {}).get("primal_infeasibility") if res.separable is True else
        math.nan,
        "train_accuracy": (feas.checks or {}).get("train_accuracy") if res.separable is True else math.nan,
        "iterations": feas.iterations, "build_s": res.build_s, "solve_s": res.solve_s,
        "backend_version": feas.backend_version, "verdict": res.message,
        "message": "; ".join(m for m in (feas.message, hull.message if hull is not None else "") if m),
        "certificate": json.dumps(certificate_record(res)),
        "error": "" if optimal else res.message,
    }


def _hard_margin_guard(row: dict, task: Task) -> dict:
    """A hard-margin row on data proven not separable: never optimal, and the error says why."""
    if not (task.hard_margin and task.separable is False):
        return row
    why = ("the data are not linearly separable (verified common point of conv(A) and conv(B)): "
           "the hard margin has no solution")
    if row.get("status") == OPTIMAL:  # a check that let an impossible point through: refuse it, loudly
        row.update({k: (math.nan if k in ("objective", "b", "b_multiplier") else "") for k in RESULT_COLUMNS})
        row.update(status=ERROR, error=f"accepted by the checks, but {why}")
    else:
        row["error"] = f"{why}; {row.get('error') or ''}".rstrip("; ")
    return row


def _own_time_limit(task: Task) -> float | None:
    """The task's timeout for a backend that stops itself; for the others the worker is killed at it."""
    from solvers.registry import takes_time_limit  # the solve's imports stay in the worker

    return task.timeout if takes_time_limit(task.layer, task.backend) else None


def _standardized(task: Task):
    """(X, None), or with --standardize (X standardized, its Standardizer) for the 1-norm SVM's LPs."""
    if not task.standardize:
        return task.X, None
    standardizer = Standardizer.fit(task.X)
    return standardizer.transform(task.X), standardizer


def execute_task(task: Task) -> dict:
    """Solve one task in this process and return its row; never raises."""
    row = task.params()
    start = time.perf_counter()
    try:
        _inject(task.fault)
        if task.formulation == SEPARABILITY:
            from experiments.separability import is_separable  # heavy: imported where the solve runs

            res = is_separable(task.X, task.y, task.layer, task.backend, task.method, profile=task.profile,
                               time_limit=_own_time_limit(task))
            row.update(separability_row(res, task))
        elif task.formulation in L1_FORMULATIONS:
            from solvers.lp import solve_lp  # heavy: imported where the solve runs

            X, standardizer = _standardized(task)
            sol = solve_lp(task.formulation, X, task.y, layer=task.layer, backend=task.backend, C=task.C,
                           method=task.method, profile=task.profile, time_limit=_own_time_limit(task))
            if standardizer is not None:  # the LPs have no standardize=: mapped back here as solve() does
                from solvers.closing import to_original_units  # heavy: imported where the solve runs

                to_original_units(sol, standardizer)
            row.update(lp_solution_row(sol, task))
        else:
            from solvers.api import solve  # heavy: imported where the solve runs

            kernel = task.kernel if task.formulation == KERNEL_DUAL else None
            sol = solve(task.formulation, task.X, task.y, layer=task.layer, backend=task.backend, C=task.C,
                        kernel=kernel, kernel_form=task.kernel_form, profile=task.profile,
                        time_limit=_own_time_limit(task), method=task.solve_method, standardize=task.standardize)
            row.update(solution_row(sol, task))
    except Exception as exc:  # any failure is a row, not a crashed sweep
        # the row's message is the error's one line (it was the traceback, which the results table cannot show);
        # the traceback goes to stderr, which is the task's log in a solve process
        traceback.print_exc(limit=3)
        error = f"{type(exc).__name__}: {exc}"
        row.update(status=ERROR, solver_status=ERROR, raw_status=type(exc).__name__, error=error, message=error)
    row = _hard_margin_guard(row, task)
    row["wall_s"] = time.perf_counter() - start
    return row


def failure_row(task: Task, status: str, error: str, wall_s: float) -> dict:
    """The row of a solve the runner ended (killed at --timeout or by the slow stop, or its process died): the
    cause is its error and its message (the results table's message column was blank on these rows)."""
    row = task.params()
    row.update(status=status, solver_status=status, raw_status=status, error=error, message=error, wall_s=wall_s)
    return _hard_margin_guard(row, task)


# ------------------------------------------------------------------ isolation


_LIVE: set = set()  # child processes running now (killed on Ctrl-C)
_LIVE_LOCK = threading.Lock()
_CONTEXT = None


def _context():
    """A fork-server context whose server has imported the solvers (spawn where there is no fork server)."""
    global _CONTEXT
    if _CONTEXT is None:
        if "forkserver" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
        else:  # pragma: no cover (Windows)
            ctx = multiprocessing.get_context("spawn")
        _CONTEXT = ctx
    return _CONTEXT


#: The BLAS libraries' thread-count variables, read once when a library loads.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def blas_threads(workers: int) -> int:
    """BLAS threads per solve process when `workers` solve at a time: the cores shared out, at least 1,
    so that `workers` processes do not run cores x workers BLAS threads (OpenBLAS's idle threads spin:
    the working set keeps one thread inside its loop for that reason). Measured (issue 15, kernel dual
    n = 5,000, piqp and daqp in both layers, 2 workers, on 2 cores shared with other jobs at load 4-5):
    the 4 rows' build + solve summed to 8.2, 10.4, 12.0 and 17.1 s with 1 thread against 10.7, 12.2,
    12.5 and 13.9 s with 2: no difference beyond that machine's noise."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


#: Seconds over which idle_cores() measures how busy the CPUs are (psutil.cpu_percent's interval).
IDLE_SAMPLE_S = 0.3


def idle_cores(sample_s: float = IDLE_SAMPLE_S) -> float:
    """The CPU cores not busy now: cores x (1 - the share of CPU time used over `sample_s` seconds)."""
    import psutil  # lazy: --help and --list stay fast

    return (os.cpu_count() or 1) * (1.0 - psutil.cpu_percent(interval=sample_s) / 100.0)


def workers_for(idle: float) -> int:
    """Solves at a time when --workers is not given: the `idle` cores (idle_cores() when the run starts),
    rounded, at least 1, so that a solve's time is its own work and not a wait for a core. More solves than idle
    cores only share them: a row's CPU time stays the same and its wall time (build_s + solve_s)
    grows. Measured (issue 15, kernel dual n = 5,000 by the working set through PIQP, each solve in a
    forked process, 2 cores shared with other jobs at load 4): pyomo 0.60-0.80 s alone, 1.31 s beside
    the cvxpy solve; cvxpy 0.83-1.14 s alone, 1.65-1.73 s beside the pyomo one; CPU time 0.43-0.53 s
    and 0.62-0.74 s either way. On an idle machine this is the number of cores."""
    return max(1, int(idle + 0.5))


def warm_up(workers: int = 1) -> None:
    """Start the fork server now, with blas_threads(workers) BLAS threads in every solve process and
    SOLVE_PROCESS_VARIABLES (unless the user set the variables): it imports PRELOAD (Pyomo, cvxpy, the
    solvers: about 3 s) in its own process while the caller reads and checks the data, instead of before
    the first solve. The server keeps the thread count it started with for the life of this process."""
    if _context().get_start_method() != "forkserver":
        return
    start_fork_server({**dict.fromkeys(BLAS_THREAD_VARIABLES, str(blas_threads(workers))), **SOLVE_PROCESS_VARIABLES})


#: What the solve processes' environment adds where the user set nothing: variables their libraries read
#: once, when they load or start, so that only a process about to start can be given them. Both lower what
#: a freshly forked solve process pays before it runs as fast as a long-lived one.
#: - OPENBLAS_THREAD_TIMEOUT = 4: OpenBLAS's idle worker threads spin (sched_yield in a loop) for 2^28
#:   processor cycles, about 0.1 s here, before they sleep: after each call they shared, and after a forked
#:   process makes their pool again, which its first thread-count call does (solvers.blas.one_thread is
#:   one). On 2 cores the spinning thread slowed the solve beside it. The value is log2 of those cycles;
#:   4, OpenBLAS's smallest, has them sleep at once (a shared call then wakes them through a condition
#:   variable: microseconds). Measured in forked processes of a preloaded server, the first solve of each
#:   (kernel dual, PIQP): at n = 60, 0.079-0.092 s against 0.018-0.020 s through cvxpy, 0.069-0.072 against
#:   0.012-0.014 through Pyomo, 0.036-0.040 against 0.007 through the solver alone; at n = 5,000, C = 1,
#:   0.38-0.52 s against 0.33-0.37 through cvxpy and 0.24-0.27 against 0.18-0.20 through the solver alone.
#: - MALLOC_MMAP_THRESHOLD_ = 32 MiB (glibc's own ceiling for the threshold it adapts) and
#:   MALLOC_TRIM_THRESHOLD_ = 1 GiB: glibc's malloc gave the memory of freed blocks back to the system and
#:   the next step's blocks of the same size were faulted in again, page by page. The kernel working set
#:   at n = 5,000, C = 100 through cvxpy (blocks of up to 2,000 points; two solves in one process): 430,000
#:   page faults against 98,000, 4.6 and 3.8 s against 3.7 and 3.4 s; the peak memory the same (0.85 GB).
#:   (Measured with a trim threshold of 4 GiB; any above a solve's peak keeps the same blocks, and the
#:   benchmark's largest kernel solve peaks at 1.2 GiB.) Other C libraries than glibc's ignore both.
SOLVE_PROCESS_VARIABLES = {
    "OPENBLAS_THREAD_TIMEOUT": "4",
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**30),
}


def start_fork_server(variables: dict[str, str]) -> None:
    """Start multiprocessing's fork server (if it is not running) with `variables` added to its environment
    where the user set none: its solve processes inherit them. This process's environment stays as it was."""
    from multiprocessing import forkserver

    unset = [name for name in variables if name not in os.environ]
    os.environ.update({name: variables[name] for name in unset})
    try:
        forkserver.ensure_running()
    finally:  # this process and anything else it starts keep their own
        for name in unset:
            os.environ.pop(name, None)


def _watch_parent(parent_pid: int) -> None:
    """Exit when the process that asked for this solve is gone (a killed sweep leaves no orphans)."""
    while True:
        time.sleep(0.5)
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:
            pass


def _child(task: Task, conn, log_path: str | None, parent_pid: int, registered: bytes = b"") -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    isolation.ISOLATE = False  # this process is the one killed at --timeout: no solve server of its own
    if registered:  # the backends the sweep's process registered (solvers.registry.register): the fork server has not
        registry.adopt(registered)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd, 1)  # solver console output (C level too) goes to the log
        os.dup2(fd, 2)
        os.close(fd)
    row = execute_task(task)
    sys.stdout.flush()
    sys.stderr.flush()
    conn.send(row)
    conn.close()


def _signal_name(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


#: A solve still running at this many times the fastest answered solve of the same problem is
#: stopped (--stop-slow; 0: never). Measured (issue 15, kernel dual n = 5,000, all 16 layer/backend
#: pairs, method auto, 2 workers): 12 rows took 2.6-9.6 s (the fastest pyomo/daqp), pyomo/highs 84 s,
#: and pyomo/osqp, pyomo/scs ran to the 120 s timeout: the sweep took 209 s; with this stop, 85 s.
STOP_SLOW_FACTOR = 20.0
#: ... but never before this many seconds: on small problems (fastest 0.05 s) every solve runs.
STOP_SLOW_FLOOR_S = 30.0
#: Seconds between two looks at the slow stop while a solve runs.
_POLL_S = 0.25


#: The rows whose time sets the slow stop's pace: a point the solver called optimal, verified or not
#: (on the soft primal at n = 100,000 no row was verified: the proof of the optimum did not settle,
#: yet the relative gaps were 2e-12, and pyomo/highs, proxqp and daqp ran to the 120 s timeout).
ANSWERED = (OPTIMAL, OPTIMAL_INACCURATE)


class SlowStop:
    """The fastest answered solve of each problem so far (over its layer/backend pairs: status
    optimal or optimal_inaccurate), shared by the local executor's threads, and the time it leaves
    the others: max(floor, factor x fastest).

    A solve stopped by it is a `time_limit` row whose error names the fastest solve and the option
    (--stop-slow) that lets it run to --timeout."""

    def __init__(self, factor: float = STOP_SLOW_FACTOR, floor_s: float | None = None):
        self.factor, self.floor_s = factor, STOP_SLOW_FLOOR_S if floor_s is None else floor_s
        self._fastest: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def record(self, task: Task, row: dict) -> None:
        """Count a finished row: an answered one may become its problem's fastest."""
        wall = row.get("wall_s")
        if row.get("status") not in ANSWERED or not isinstance(wall, (int, float)) or not math.isfinite(wall):
            return
        with self._lock:
            if task.problem_key not in self._fastest or wall < self._fastest[task.problem_key][0]:
                self._fastest[task.problem_key] = (float(wall), f"{task.layer}/{task.backend}, {row['status']}")

    def limit(self, task: Task) -> tuple[float, str] | None:
        """(seconds `task` may run, why), or None while no solve of its problem has answered."""
        with self._lock:
            fastest = self._fastest.get(task.problem_key)
        if fastest is None:
            return None
        seconds = max(self.floor_s, self.factor * fastest[0])
        return seconds, (f"stopped after {seconds:.1f} s: {self.factor:g} x the fastest solve of this problem "
                         f"({fastest[0]:.2f} s, {fastest[1]}), at least {self.floor_s:g} s; "
                         f"--stop-slow 0 runs every solve to --timeout")


def _wait_for_row(recv, task: Task, start: float, slow: SlowStop | None) -> tuple[bool, str]:
    """Wait until the child has sent its row (True, "") or its time is up (False, why): task.timeout
    plus a grace, or sooner the slow stop's limit, looked at every _POLL_S as faster rows come in."""
    hard = None if task.timeout is None else task.timeout + _grace(task.timeout)
    hard_why = "" if hard is None else f"killed after {hard:.1f} s (--timeout {task.timeout:g} s)"
    while True:
        stop = slow.limit(task) if slow is not None else None
        allowed, why = (stop if stop is not None and (hard is None or stop[0] < hard) else (hard, hard_why))
        remaining = None if allowed is None else allowed - (time.perf_counter() - start)
        if remaining is not None and remaining <= 0:
            return False, why
        wait = remaining if slow is None else min(_POLL_S, remaining if remaining is not None else _POLL_S)
        if recv.poll(wait):
            return True, ""


def run_isolated(task: Task, log_dir: str | None = None, slow: SlowStop | None = None) -> dict:
    """Solve `task` in a child process, kill it after task.timeout (+ grace), or sooner when `slow`
    says it runs far longer than the fastest answered solve of its problem; always returns a row.

    Inside a daemonic process (a Dask worker that may not have children) the
    solve runs in-process instead, with the solver's own time limit only.
    """
    start = time.perf_counter()
    if multiprocessing.current_process().daemon:
        row = execute_task(task)
        row["message"] = (row.get("message") or "") + " [in-process: daemonic worker]"
        return row
    log_path = None
    if log_dir:
        try:  # a remote Dask worker may not be able to write where the client asked
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            log_path = str(Path(log_dir) / f"{task.id}.log")
        except OSError:
            log_path = None
    try:
        registered = registry.added_payload()
    except Exception as exc:  # noqa: BLE001 - a registration that does not pickle, even by value: solved here
        row = execute_task(task)
        row["message"] = (f"{row.get('message') or ''} [in-process: the backends registered here cannot be sent to "
                          f"a solve process ({type(exc).__name__}: {exc}), so --timeout cannot kill it]").strip()
        return row
    ctx = _context()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(task, send, log_path, os.getpid(), registered), daemon=True)
    proc.start()
    send.close()
    with _LIVE_LOCK:
        _LIVE.add(proc)
    row = None
    try:
        answered, why = _wait_for_row(recv, task, start, slow)
        if answered:
            with contextlib.suppress(EOFError, OSError):
                row = recv.recv()
            if row is None:
                proc.join(5)
                row = failure_row(task, ERROR, f"solve process died ({_signal_name(proc.exitcode)})",
                                  time.perf_counter() - start)
        else:
            proc.kill()
            row = failure_row(task, TIME_LIMIT, why, time.perf_counter() - start)
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        recv.close()
        with contextlib.suppress(AttributeError, ValueError):
            proc.close()
    if log_path and os.path.exists(log_path):
        if os.path.getsize(log_path) == 0:
            os.remove(log_path)
        else:
            row["log"] = os.path.relpath(log_path, Path(log_dir).parent)
    if slow is not None:
        slow.record(task, row)
    return row


def kill_running() -> int:
    """Kill every solve process still running (on Ctrl-C); returns how many."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()
    return len(procs)


# ------------------------------------------------------------------ executors


def fastest_first(tasks: list[Task]) -> list[Task]:
    """The order to run tasks in: problem by problem as the grid has them, and within a problem the
    backends that answer first (their records' "speed" rank) first, so that its fastest time is known
    early and SlowStop can stop the slow ones (with one worker and HiGHS first, HiGHS ran alone to
    --timeout: the linear runner command took 626 s). The table keeps the grid's order (Task.order)."""
    first_of = {}
    for task in tasks:
        first_of.setdefault(task.problem_key, task.order)
    return sorted(tasks, key=lambda task: (first_of[task.problem_key], RECORDS[task.backend].rank("speed")
                                           if task.backend in RECORDS else math.inf, task.order))


def run_local(tasks: list[Task], on_row: Callable[[dict], None], *, workers: int = 1,
              log_dir: str | None = None, slow: SlowStop | None = None) -> None:
    """Run tasks on this machine, `workers` at a time; `on_row` gets each row as it finishes. `slow`
    (shared by the workers' threads) stops a solve far slower than its problem's fastest."""
    if not tasks:
        return
    warm_up(workers)  # start the fork server before any thread exists (if the caller has not)
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="svm-solve")
    futures = {}
    try:
        futures = {pool.submit(run_isolated, task, log_dir, slow): task for task in fastest_first(tasks)}
        for fut in as_completed(futures):
            task = futures[fut]
            try:
                row = fut.result()
            except Exception as exc:  # the isolation itself failed
                row = failure_row(task, ERROR, f"runner: {type(exc).__name__}: {exc}", math.nan)
            on_row(row)
    except BaseException:
        for fut in futures:
            fut.cancel()
        kill_running()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


#: Seconds to reach a Dask scheduler before giving up (distributed's own default is 30 s).
SCHEDULER_CONNECT_TIMEOUT = 5.0


def run_registered(registered: bytes, task: Task, log_dir: str | None = None) -> dict:
    """run_isolated in a Dask worker, once the backends the sweep's process registered are registered there too."""
    registry.adopt(registered)
    return run_isolated(task, log_dir)


def run_dask(tasks: list[Task], on_row: Callable[[dict], None], *, scheduler: str | None = None,
             workers: int = 1, log_dir: str | None = None) -> None:
    """Submit the same `run_isolated` to a Dask cluster (a LocalCluster when `scheduler` is None)."""
    if not tasks:
        return
    import dask
    from distributed import Client, LocalCluster
    from distributed import as_completed as dask_completed

    cluster = None
    if scheduler:
        client = Client(scheduler, timeout=SCHEDULER_CONNECT_TIMEOUT)
    else:
        # Non-daemonic workers may start the solve processes that make a timeout killable.
        with dask.config.set({"distributed.worker.daemon": False}):
            cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    futures = []
    registered = registry.added_payload()  # the backends registered here, for each worker (run_registered)
    try:
        futures = [client.submit(run_registered, registered, task, log_dir, key=f"svm-solve-{task.id}", pure=False)
                   for task in tasks]
        by_key = {fut.key: task for fut, task in zip(futures, tasks)}
        for fut in dask_completed(futures):
            task = by_key[fut.key]
            try:
                row = fut.result()
            except Exception as exc:  # a worker lost, a pickling problem...
                row = failure_row(task, ERROR, f"dask: {type(exc).__name__}: {exc}", math.nan)
            on_row(row)
    except BaseException:
        with contextlib.suppress(Exception):
            client.cancel(futures)
        kill_running()
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
