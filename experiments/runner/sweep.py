"""The sweep: problems x (layer, backend) -> tasks -> isolated solves -> rows.

Each task is solved in a process of its own (`run_isolated`): a child of the
solve server (solvers.isolation), which has already imported Pyomo, cvxpy and
the solvers, so isolation costs milliseconds, not an import. The parent waits
for the row and kills the child at --timeout plus the grace every killed process
gets (isolation.grace); an exception, a crash (even a segfault inside a solver),
the server's death or a timeout comes back as a row with status ``error`` or
``time_limit`` and its message, and the sweep goes on.
The solver's console output goes to ``logs/<task id>.log``, not the terminal.

A task names its formulation; `execute_task` sends the QPs to `solvers.api.solve`,
the 1-norm SVM LPs to `solvers.lp.solve_lp` and `separability` to
`experiments.separability.is_separable` (the row then carries the verdict in
`separable` and its proof, as JSON, in `certificate`). LP tasks carry a HiGHS
`method` ("simplex" / "ipm"; "" for other backends). A hard-margin task carries
the separability verdict of its data (`separable`); when the data are proven not
separable, no hard-margin row can be `optimal` (the problem has no solution).

Two executors run the same function, `run_isolated`, with the same stop rules: the kill at
--timeout, and a solve still running at 20 x the fastest answered solve of its problem (at least
30 s) stopped, a `time_limit` row saying so (`SlowStop`, ``--stop-slow``), so that a default run
over every backend does not wait minutes for the few that are slow on a method:

* ``local``: a thread pool of ``workers`` threads, each waiting on its child;
* ``dask``: ``Client.submit`` to a Dask distributed cluster (a scheduler address, or a
  ``LocalCluster`` when none is given); each worker runs its tasks in a solve server of its own,
  and reads the fastest times that the client publishes (`SharedSlowStop`). A script that starts it
  with a LocalCluster must do so under ``if __name__ == "__main__":`` (Dask's worker processes
  import the main module).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
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

#: The modules a task's child uses beyond the solvers' (isolation.PRELOAD), imported once by the runner's server.
TASK_MODULES = ("psutil", "solvers.lp", "experiments.separability", "experiments.runner.sweep")


@dataclass(frozen=True, eq=False)
class SolveTask:
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
) -> list[SolveTask]:
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
            tasks.append(SolveTask(
                key=key, order=len(tasks), suite=suite, dataset=ds.name, formulation=problem.formulation,
                layer=layer, backend=backend, C=float(problem.C), kernel=problem.kernel, profile=problem.profile,
                kernel_form=problem.kernel_form, X=np.asarray(ds.X), y=np.asarray(ds.y),
                label_map=(label_maps or {}).get(ds.name, {}), timeout=timeout, fault=fault, run_id=run_id,
                method=method, separable=verdict, solve_method="" if lp else problem.method,
                problem_key=task_key(ds.name, problem, "*", "*", data=ds.fingerprint), standardize=standardize,
            ))
    return tasks


def leave_out_stalls(tasks: list[SolveTask], named: Iterable[str] | None) -> tuple[list[SolveTask], list[str]]:
    """The tasks less those of a backend whose record says its QP solver stalls on their formulation at their n
    (RECORDS' stalls_from: HiGHS from 1,000 points, minutes a solve; ProxQP on the linear dual from 1,500), unless
    the backend is `named` (--backends); and one line per left-out (layer, backend, formulation) saying why and how
    to include it. LP tasks stay (the stall is the QP solver's)."""
    named = set(named or ())
    kept, left = [], {}
    for task in tasks:
        record = RECORDS[task.backend]
        # the method is asked (solvers.api, imported then) only where a stall of the record is within reach
        stalls_from = (record.stalls_from(task.formulation, _solve_method(task))
                       if len(task.y) >= min(record.qp_stalls_from_n.values(), default=math.inf) else None)
        if (task.method is not None or task.backend in named or stalls_from is None
                or len(task.y) < stalls_from):
            kept.append(task)
            continue
        group = left.setdefault((task.layer, task.backend, task.formulation), [stalls_from, set()])
        group[1].add(len(task.y))
    notes = [f"note: left out {layer}/{backend} on {formulation} (n = {', '.join(f'{n:,}' for n in sorted(sizes))}): "
             f"{RECORDS[backend].title}'s QP solver stalls on SVM {formulation} problems from n = {stalls_from:,} "
             f"(solvers/backends.py); "
             f"include it with --backends {backend},..."
             for (layer, backend, formulation), (stalls_from, sizes) in left.items()]
    return kept, notes


def _solve_method(task: SolveTask) -> str:
    """The method solvers.api.solve takes for a QP task (its choose_method; "full" where the task's own asks for one
    it cannot take: that solve's row says why)."""
    from solvers.api import choose_method  # solvers.api imports the layers: here, where it is used

    try:
        return choose_method(task.formulation, len(task.y), task.layer, task.C, task.solve_method or "auto",
                             d=task.X.shape[1], backend=task.backend)
    except SVMInputError:
        return "full"


def separability_task(ds, *, profile: str = "default", timeout: float | None = None, run_id: str = "",
                      suite: str = "") -> SolveTask:
    """The check the sweep runs once per data set before its hard-margin solves: `is_separable` through
    pyomo/highs (HiGHS's default LP method)."""
    problem = Problem(ds.name, SEPARABILITY, math.inf, LINEAR, {}, profile)
    key = task_key(ds.name, problem, "pyomo", "highs", data=ds.fingerprint) + "|check"
    return SolveTask(key=key, order=-1, suite=suite,
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


def solution_row(sol, task: SolveTask) -> dict:
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


def lp_solution_row(sol, task: SolveTask) -> dict:
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


def separability_row(res, task: SolveTask) -> dict:
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


def _hard_margin_guard(row: dict, task: SolveTask) -> dict:
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


def _own_time_limit(task: SolveTask) -> float | None:
    """The task's timeout for a backend that stops itself; for the others the worker is killed at it."""
    from solvers.registry import takes_time_limit  # the solve's imports stay in the worker

    return task.timeout if takes_time_limit(task.layer, task.backend) else None


def _standardized(task: SolveTask):
    """(X, None), or with --standardize (X standardized, its Standardizer) for the 1-norm SVM's LPs."""
    if not task.standardize:
        return task.X, None
    standardizer = Standardizer.fit(task.X)
    return standardizer.transform(task.X), standardizer


def execute_task(task: SolveTask) -> dict:
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


def failure_row(task: SolveTask, status: str, error: str, wall_s: float) -> dict:
    """The row of a solve the runner ended (killed at --timeout or by the slow stop, or its process died): the
    cause is its error and its message (the results table's message column was blank on these rows)."""
    row = task.params()
    row.update(status=status, solver_status=status, raw_status=status, error=error, message=error, wall_s=wall_s)
    return _hard_margin_guard(row, task)


# ------------------------------------------------------------------ isolation


#: The BLAS libraries' thread-count variables, read once when a library loads.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: What the runner's server adds to its environment (warm_up): the BLAS threads of each solve process.
_SERVER_VARIABLES: dict[str, str] = {}


def blas_threads(workers: int) -> int:
    """BLAS threads per solve process when `workers` solve at a time: the cores shared out, at least 1, so that
    `workers` processes do not run cores x workers BLAS threads (OpenBLAS's idle threads spin)."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


#: Seconds over which idle_cores() measures how busy the CPUs are (psutil.cpu_percent's interval).
IDLE_SAMPLE_S = 0.3


def idle_cores(sample_s: float = IDLE_SAMPLE_S) -> float:
    """The CPU cores not busy now: cores x (1 - the share of CPU time used over `sample_s` seconds)."""
    import psutil  # lazy: --help and --list stay fast

    return (os.cpu_count() or 1) * (1.0 - psutil.cpu_percent(interval=sample_s) / 100.0)


def workers_for(idle: float) -> int:
    """Solves at a time when --workers is not given: the `idle` cores (idle_cores() when the run starts), rounded,
    at least 1, so that a solve's time is its own work and not a wait for a core (more solves than idle cores
    only share them: the same CPU time, a longer wall time). On an idle machine this is the number of cores."""
    return max(1, int(idle + 0.5))


def warm_up(workers: int = 1) -> None:
    """Start the runner's solve server now, with blas_threads(workers) BLAS threads in every solve process
    (unless the user set the variables): it imports the solvers (about 3 s) in its own process while the caller
    reads and checks the data, instead of before the first solve. This process's environment stays as it was."""
    _SERVER_VARIABLES.clear()
    _SERVER_VARIABLES.update(dict.fromkeys(BLAS_THREAD_VARIABLES, str(blas_threads(workers))))
    if isolation.SERVES:
        isolation.Server.start(isolation.PRELOAD + TASK_MODULES, _SERVER_VARIABLES)


def _solve_in_child(task: SolveTask, log_path: str | None) -> dict:
    """A task's row, in a child of the runner's server: the solver's console output (C level too) to its log."""
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    row = execute_task(task)
    sys.stdout.flush()
    sys.stderr.flush()
    return row


#: A solve still running at this many times the fastest answered solve of the same problem is stopped
#: (--stop-slow; 0: never), so that a run over every backend does not wait minutes for the few slow on a method.
STOP_SLOW_FACTOR = 20.0
#: ... but never before this many seconds: on small problems (fastest 0.05 s) every solve runs.
STOP_SLOW_FLOOR_S = 30.0


#: The rows whose time sets the slow stop's pace: a point the solver called optimal, verified or not (a large
#: soft primal can be optimal to 1e-12 and still fail the proof of the optimum).
ANSWERED = (OPTIMAL, OPTIMAL_INACCURATE)


class SlowStop:
    """The fastest answered solve of each problem so far (over its layer/backend pairs: status
    optimal or optimal_inaccurate), shared by the executor's solves, and the time it leaves
    the others: max(floor, factor x fastest).

    A solve stopped by it is a `time_limit` row whose error names the fastest solve and the option
    (--stop-slow) that lets it run to --timeout."""

    def __init__(self, factor: float = STOP_SLOW_FACTOR, floor_s: float | None = None):
        self.factor, self.floor_s = factor, STOP_SLOW_FLOOR_S if floor_s is None else floor_s
        self._fastest: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def record(self, task: SolveTask, row: dict) -> bool:
        """Count a finished row: an answered one may become its problem's fastest (then True)."""
        wall = row.get("wall_s")
        if row.get("status") not in ANSWERED or not isinstance(wall, (int, float)) or not math.isfinite(wall):
            return False
        with self._lock:
            if task.problem_key in self._fastest and wall >= self._fastest[task.problem_key][0]:
                return False
            self._fastest[task.problem_key] = (float(wall), f"{task.layer}/{task.backend}, {row['status']}")
            return True

    def fastest(self) -> dict[str, tuple[float, str]]:
        """The fastest answered solve of each problem so far: problem_key -> (seconds, which)."""
        with self._lock:
            return dict(self._fastest)

    def limit(self, task: SolveTask) -> tuple[float, str] | None:
        """(seconds `task` may run, why), or None while no solve of its problem has answered."""
        fastest = self._fastest_of(task.problem_key)
        if fastest is None:
            return None
        seconds = max(self.floor_s, self.factor * fastest[0])
        return seconds, (f"stopped after {seconds:.1f} s: {self.factor:g} x the fastest solve of this problem "
                         f"({fastest[0]:.2f} s, {fastest[1]}), at least {self.floor_s:g} s; "
                         f"--stop-slow 0 runs every solve to --timeout")

    def _fastest_of(self, problem_key: str) -> tuple[float, str] | None:
        with self._lock:
            return self._fastest.get(problem_key)


class _StopRule:
    """When a task's child is killed: task.timeout plus the one grace (isolation.grace), or sooner the slow
    stop's limit, which moves as faster rows come in; `why` says which, for the row."""

    def __init__(self, task: SolveTask, slow: SlowStop | None):
        self.task, self.slow, self.began = task, slow, time.monotonic()
        timeout = task.timeout
        self.hard = None if timeout is None else timeout + isolation.grace(timeout)
        self.why = "" if self.hard is None else f"killed after {self.hard:.1f} s (--timeout {timeout:g} s)"

    def start(self):
        """The clock started now (a server's start is not the task's time); the kill time to wait by."""
        self.began = time.monotonic()
        return self.kill_at

    def kill_at(self) -> float | None:
        stop = self.slow.limit(self.task) if self.slow is not None else None
        if stop is not None and (self.hard is None or stop[0] < self.hard):
            seconds, self.why = stop
            return self.began + seconds
        return None if self.hard is None else self.began + self.hard


def run_isolated(task: SolveTask, log_dir: str | None = None, slow: SlowStop | None = None) -> dict:
    """Solve `task` in a child of the runner's solve server (solvers.isolation), killed after task.timeout plus
    the grace, or sooner when `slow` says it runs far longer than the fastest answered solve of its problem;
    always returns a row. Where no server can take it, the solve runs here and its message says so."""
    start = time.perf_counter()
    log_path = _log_path(task, log_dir)
    frames, why = isolation.request(partial(_solve_in_child, task, log_path), forward_warnings=False)
    answer, stop = isolation.NOT_TAKEN, _StopRule(task, slow)
    if frames is not None and isolation.SERVES:
        answer, why, _ = isolation.call(frames, stop.start, preload=isolation.PRELOAD + TASK_MODULES,
                                        variables=_SERVER_VARIABLES)
    if answer is isolation.NOT_TAKEN:
        row = execute_task(task)
        why = why or "this system cannot fork a solve process"
        row["message"] = f"{row.get('message') or ''} [in-process: {why}; --timeout cannot kill it]".strip()
    elif isinstance(answer, isolation.Ended):
        row = failure_row(task, *_ended_words(answer, stop), time.perf_counter() - start)
    else:
        row = answer
    if log_path and os.path.exists(log_path):
        if os.path.getsize(log_path) == 0:
            os.remove(log_path)
        else:
            row["log"] = os.path.relpath(log_path, Path(log_dir).parent)
    if slow is not None:
        slow.record(task, row)
    return row


def _log_path(task: SolveTask, log_dir: str | None) -> str | None:
    if not log_dir:
        return None
    try:  # a remote Dask worker may not be able to write where the client asked
        Path(log_dir).mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(Path(log_dir) / f"{task.id}.log")


def _ended_words(ended: isolation.Ended, stop: _StopRule) -> tuple[str, str]:
    """(status, error) of a task whose child gave no row."""
    if ended.killed:
        return TIME_LIMIT, stop.why
    if ended.server_pid:
        return ERROR, f"the solve server (pid {ended.server_pid}) died during the solve ({ended.how})"
    how = f"exit code {ended.how[5:]}" if ended.how.startswith("exit ") else f"killed by {ended.how}"
    return ERROR, f"solve process died ({how})"


def kill_running() -> int:
    """Kill every solve process still running (on Ctrl-C); returns how many."""
    return isolation.kill_running()


# ------------------------------------------------------------------ executors


def fastest_first(tasks: list[SolveTask]) -> list[SolveTask]:
    """The order to run tasks in: problem by problem as the grid has them, and within a problem the
    backends that answer first (their records' "speed" rank) first, so that its fastest time is known
    early and SlowStop can stop the slow ones (else, with one worker and a slow backend first, it runs alone
    to --timeout). The table keeps the grid's order (SolveTask.order)."""
    first_of = {}
    for task in tasks:
        first_of.setdefault(task.problem_key, task.order)
    return sorted(tasks, key=lambda task: (first_of[task.problem_key], RECORDS[task.backend].rank("speed")
                                           if task.backend in RECORDS else math.inf, task.order))


def run_local(tasks: list[SolveTask], on_row: Callable[[dict], None], *, workers: int = 1,
              log_dir: str | None = None, slow: SlowStop | None = None) -> None:
    """Run tasks on this machine, `workers` at a time; `on_row` gets each row as it finishes. `slow`
    (shared by the workers' threads) stops a solve far slower than its problem's fastest."""
    if not tasks:
        return
    warm_up(workers)  # start the solve server now (if the caller has not): its imports overlap what follows
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


class SharedSlowStop(SlowStop):
    """A Dask worker's view of the client's SlowStop: the fastest times the client publishes in a Dask Variable
    (run_dask), read again at most every _SHARED_READ_S; the client alone records rows."""

    def __init__(self, variable: str, factor: float, floor_s: float):
        super().__init__(factor, floor_s)
        self.variable, self._read_at = variable, -math.inf

    def record(self, task: SolveTask, row: dict) -> bool:
        """The client records the rows (run_dask): a worker sees only its own."""
        return False

    def _fastest_of(self, problem_key: str) -> tuple[float, str] | None:
        if time.monotonic() - self._read_at >= _SHARED_READ_S:
            from distributed import Variable

            with contextlib.suppress(Exception):  # the scheduler busy or gone: the times read last stay
                published = Variable(self.variable).get(timeout=_SHARED_READ_S)
                with self._lock:
                    self._fastest = {key: tuple(value) for key, value in published.items()}
            self._read_at = time.monotonic()
        return super()._fastest_of(problem_key)


#: How often a Dask worker reads the published fastest times again.
_SHARED_READ_S = 0.5


def run_registered(registered: bytes, task: SolveTask, log_dir: str | None = None,
                   slow: tuple[str, float, float] | None = None) -> dict:
    """run_isolated in a Dask worker, once the backends the sweep's process registered are registered there too;
    `slow`: SharedSlowStop's (variable, factor, floor_s), the client's slow stop."""
    registry.adopt(registered)
    return run_isolated(task, log_dir, SharedSlowStop(*slow) if slow is not None else None)


def run_dask(tasks: list[SolveTask], on_row: Callable[[dict], None], *, scheduler: str | None = None,
             workers: int = 1, log_dir: str | None = None, slow: SlowStop | None = None) -> None:
    """Submit the same `run_isolated` to a Dask cluster (a LocalCluster when `scheduler` is None), with the same
    stop rules as run_local: the kill at --timeout plus the grace, and `slow`, whose fastest times this process
    records and publishes to the workers (SharedSlowStop)."""
    if not tasks:
        return
    from distributed import Client, LocalCluster, Variable
    from distributed import as_completed as dask_completed

    cluster = None
    if scheduler:
        client = Client(scheduler, timeout=SCHEDULER_CONNECT_TIMEOUT)
    else:
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    futures = []
    registered = registry.added_payload()  # the backends registered here, for each worker (run_registered)
    try:
        shared = published = None
        if slow is not None:
            shared = (f"svm-fastest-{os.getpid()}-{id(tasks)}", slow.factor, slow.floor_s)
            published = Variable(shared[0], client=client)
            published.set({})
        ordered = fastest_first(tasks)
        futures = [client.submit(run_registered, registered, task, log_dir, shared, key=f"svm-solve-{task.id}",
                                 pure=False) for task in ordered]
        by_key = {fut.key: task for fut, task in zip(futures, ordered)}
        for fut in dask_completed(futures):
            task = by_key[fut.key]
            try:
                row = fut.result()
            except Exception as exc:  # a worker lost, a pickling problem...
                row = failure_row(task, ERROR, f"dask: {type(exc).__name__}: {exc}", math.nan)
            if slow is not None and slow.record(task, row):  # the workers read a problem's new fastest time
                published.set(slow.fastest())
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
