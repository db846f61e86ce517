r"""Warm starts along a regularisation path C_1 < C_2 < ...: cold against warm, per C.

    python -m experiments.c_path                  # the full run (kernel n = 5,000, linear n = 10,000)
    python -m experiments.c_path --quick          # tiny n, seconds: what the tests run
    python -m experiments.c_path --n 2000 --n-linear 5000 --out results/bench

Paths (each solved "cold", i.e. from scratch at every C, and "warm"):

- ``kernel/<layer>/<backend>``: the kernel dual (Gaussian, gamma = 0.1, overlapping(n, d = 10))
  by the working-set decomposition (solvers.algorithms.working_set) with PIQP, through the solver alone
  ("direct") and through Pyomo. Warm: the previous optimum scaled, alpha_prev * C / C_prev, which
  is feasible for the new C; the gradient Q alpha0 - 1 is then computed once (O(n |S|)).
- ``linear/cvxpy/<formulation>/<backend>``: the soft primal and the lifted dual
  (overlapping(n, d = 20)) with C a ``cp.Parameter``. Three modes separate the two gains:
  ``cold`` = build the model with a float C and solve (compile + solver setup every time);
  ``reuse`` = one Parameter problem re-solved with ``warm_start=False`` (cvxpy re-uses its
  compiled DPP program: only the compile is skipped); ``warm`` = the same with
  ``warm_start=True`` (cvxpy also keeps the solver: OSQP and PIQP update their matrices in
  place and OSQP restarts from the previous x, y; SCS restarts from the previous x, y, s).
  cold -> reuse is the compile's share of the gain, reuse -> warm the solver's.

Every point is checked (solvers.checks for the linear paths; the KKT violation
m(alpha) - M(alpha) of solvers.algorithms.working_set recomputed at the returned point for the kernel
paths), and each warm (and reuse) objective is compared with the cold one at the same C
(`rel_obj_diff`). Writes <out>/c_path.csv (one row per path, C, mode), <out>/c_path.md and
<out>/c_path.png.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import formulations
from experiments.bench.scaling import GAMMA, KERNEL_D, LINEAR_D, bench_data
from formulations.kernels import Kernel, gram
from solvers.algorithms import working_set as ws
from solvers.closing import close_model
from solvers.profiles import Profile, backend_options, get_profile
from solvers.registry import get_backend

# The kernel path stops at C = 10^0.5: from C = 10 on at n = 5,000, the cold and warm solves end at
# different objectives, which is no point to compare warm starts at (docs/benchmarks.md).
KERNEL_CS = tuple(np.logspace(-2, 0.5, 6))
LINEAR_CS = tuple(np.logspace(-2, 2, 9))
KERNEL_PATHS = (("direct", "piqp"), ("pyomo", "piqp"))
LINEAR_PATHS = tuple((f, b) for f in ("soft_primal", "dual") for b in ("piqp", "osqp", "scs"))
PROFILE_KERNEL = "high"  # the working set's own default (the bench's)
PROFILE_LINEAR = "scale"  # the bench's: tolerances about 1e-8, iteration caps for large n
MODES = ("cold", "reuse", "warm")


def _row(**kw) -> dict:
    base = dict(path="", problem="", formulation="", layer="", backend="", profile="", mode="", C=math.nan,
                n=0, time_s=math.nan, compile_s=math.nan, solver_s=math.nan, objective=math.nan,
                solver_objective=math.nan, status="", iterations=math.nan, kkt_violation=math.nan,
                rel_gap=math.nan, smo_steps=math.nan, message="")
    base.update(kw)
    return base


# ----------------------------------------------------------------------------- kernel


def kernel_path(K: np.ndarray, y: np.ndarray, Cs, layer: str, backend: str = "piqp", *, q: int | None = None,
                tol: float = 1e-6, progress=None) -> list[dict]:
    """The kernel dual along Cs by working sets, cold and warm (alpha_prev * C / C_prev)."""
    n = len(y)
    q = q or ws.block_size(n)
    rows = []
    label = f"kernel/{layer}/{backend}"
    previous: tuple[np.ndarray, float] | None = None
    for C in Cs:
        C = float(C)
        for mode in ("cold", "warm"):
            alpha0 = None
            start = time.perf_counter()
            if mode == "warm" and previous is not None:
                alpha0 = ws.scaled_warm_start(previous[0], previous[1], C)
            # The stall floor grows with C (solvers.algorithms.working_set.decompose); the same for both modes.
            res = ws.decompose(K, y, C, backend=backend, layer=layer, q=q, tol=tol, profile=PROFILE_KERNEL,
                               alpha0=alpha0, stall_floor=1e-3 * max(1.0, C))
            elapsed = time.perf_counter() - start
            if mode == "warm":
                previous = (res.alpha, C)
            status = "optimal" if res.converged else ("stalled" if res.stalled else "not_converged")
            rows.append(_row(path=label, problem="kernel", formulation="kernel_dual", layer=layer, backend=backend,
                             profile=PROFILE_KERNEL, mode=mode, C=C, n=n, time_s=elapsed, solver_s=res.subproblem_s,
                             objective=res.objective, solver_objective=res.objective, status=status,
                             iterations=res.outer_iterations, smo_steps=res.smo_steps,
                             kkt_violation=ws.kkt_violation(K, y, res.alpha, C),
                             message="warm from the scaled previous optimum" if alpha0 is not None else ""))
            if progress is not None:
                progress.update(1)
    return rows


# ----------------------------------------------------------------------------- cvxpy


def _checked(model, formulation: str, backend: str, raw, X, y, C: float, check_tol: float) -> tuple[float, str, float]:
    """(the project's objective at the point, verified status, relative gap): solvers.closing.close_model, as every
    solve path."""
    sol = close_model(raw, model, formulation=formulation, layer="cvxpy", backend=backend, X=X, y=y, C=C,
                      profile=Profile("c_path", None, check_tol, "the C path's check"))
    kind = "primal_objective" if formulation == "soft_primal" else "dual_objective"
    return float(sol.checks[kind]), sol.status, float(sol.checks["rel_duality_gap"])


def cvxpy_path(X: np.ndarray, y: np.ndarray, Cs, formulation: str, backend: str, *, profile: str = PROFILE_LINEAR,
               modes=MODES, progress=None) -> list[dict]:
    """One linear formulation along Cs through cvxpy: cold, reuse and warm (module docstring)."""
    import cvxpy as cp

    prof = get_profile(profile)
    adapter = get_backend("cvxpy", backend)
    base = backend_options(backend, prof)
    label = f"linear/cvxpy/{formulation}/{backend}"
    rows = []
    param_models = {}
    for mode in modes:
        for C in Cs:
            C = float(C)
            start = time.perf_counter()
            if mode == "cold":
                model = formulations.build(formulation, "cvxpy", X=X, y=y, C=C)
                options = base
            else:
                if mode not in param_models:  # built once; its build time counts at the first C
                    param = cp.Parameter(nonneg=True, name="C")
                    param_models[mode] = (param, formulations.build(formulation, "cvxpy", X=X, y=y, C=param))
                param, model = param_models[mode]
                param.value = C
                options = {**base, "warm_start": mode == "warm"}
            raw = adapter.solve(model, options)
            elapsed = time.perf_counter() - start
            objective, status, gap = _checked(model, formulation, backend, raw, X, y, C, prof.check_tol)
            stats = model.problem.solver_stats
            rows.append(_row(path=label, problem="linear", formulation=formulation, layer="cvxpy", backend=backend,
                             profile=prof.name, mode=mode, C=C, n=len(y), time_s=elapsed,
                             compile_s=float(model.problem.compilation_time or math.nan),
                             solver_s=float(stats.solve_time) if stats is not None and stats.solve_time else math.nan,
                             objective=objective, solver_objective=raw.objective, status=status,
                             iterations=raw.iterations if raw.iterations is not None else math.nan,
                             rel_gap=gap, message=raw.raw_status[:80]))
            if progress is not None:
                progress.update(1)
    return rows


# ----------------------------------------------------------------------------- run and report


def add_differences(df):
    """rel_obj_diff = |objective - cold objective| / |cold objective| at the same (path, C) (every SVM
    optimum is > 0, so the cold objective is its own scale)."""
    cold = df[df["mode"] == "cold"].set_index(["path", "C"])["objective"]
    ref = df.set_index(["path", "C"]).index.map(cold.to_dict().get).astype(float)
    df = df.copy()
    df["rel_obj_diff"] = np.abs(df["objective"].to_numpy() - ref) / np.abs(ref)
    return df


def run(n_kernel: int, n_linear: int, *, kernel_Cs=KERNEL_CS, linear_Cs=LINEAR_CS, kernel_paths=KERNEL_PATHS,
        linear_paths=LINEAR_PATHS, progress: bool = True):
    """Every path cold and warm; a tidy DataFrame, one row per (path, C, mode)."""
    import pandas as pd
    from tqdm import tqdm


    total = len(kernel_paths) * len(kernel_Cs) * 2 + len(linear_paths) * len(linear_Cs) * len(MODES)
    rows: list[dict] = []
    with warnings.catch_warnings(), tqdm(total=total, disable=not progress or None, desc="c_path", unit="solve") as bar:
        warnings.simplefilter("ignore")
        if kernel_paths:
            X, y = bench_data(n_kernel, KERNEL_D)
            K = gram(Kernel("rbf", gamma=GAMMA), X)
            for layer, backend in kernel_paths:
                bar.set_postfix_str(f"kernel/{layer}/{backend}")
                rows += kernel_path(K, y, kernel_Cs, layer, backend, progress=bar)
            del K
        if linear_paths:
            X, y = bench_data(n_linear, LINEAR_D)
            for formulation, backend in linear_paths:
                bar.set_postfix_str(f"cvxpy/{formulation}/{backend}")
                rows += cvxpy_path(X, y, linear_Cs, formulation, backend, progress=bar)
    return add_differences(pd.DataFrame(rows))


def summary(df):
    """Per path: total time of each mode over the path, the ratios, the largest objective difference."""
    import pandas as pd

    totals = df.pivot_table(index="path", columns="mode", values="time_s", aggfunc="sum")
    out = pd.DataFrame(index=totals.index)
    out["n"] = df.groupby("path")["n"].first()
    out["n_C"] = df.groupby("path")["C"].nunique()
    for mode in MODES:
        if mode in totals:
            out[f"{mode}_s"] = totals[mode]
    out["warm/cold"] = out["warm_s"] / out["cold_s"]
    if "reuse_s" in out:
        out["reuse/cold"] = out["reuse_s"] / out["cold_s"]
        # The share of the saving (cold - warm) that skipping the compile explains.
        out["compile_share"] = (out["cold_s"] - out["reuse_s"]) / (out["cold_s"] - out["warm_s"])
    warm = df[df["mode"] != "cold"]
    out["max_rel_obj_diff"] = warm.groupby("path")["rel_obj_diff"].max()
    out["not_optimal"] = df[~df["status"].isin(["optimal"])].groupby("path").size().reindex(out.index).fillna(0).astype(int)
    if df["kkt_violation"].notna().any():
        out["max_kkt_violation"] = df.groupby("path")["kkt_violation"].max()
    return out.reset_index()


def _md_table(frame, float_fmt="{:.3g}") -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in frame.itertuples(index=False):
        cells = []
        for v in rec:
            if isinstance(v, (float, np.floating)):
                cells.append("" if not np.isfinite(v) else float_fmt.format(v))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(df, out_dir: Path, command: str = "python -m experiments.c_path") -> dict:
    """c_path.csv, c_path.md and c_path.png under out_dir; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / "c_path.csv", "md": out_dir / "c_path.md", "png": out_dir / "c_path.png"}
    df.sort_values(["path", "mode", "C"]).to_csv(paths["csv"], index=False)

    summ = summary(df)
    per_C = (df[df["mode"] != "cold"].groupby(["path", "C"])["rel_obj_diff"].max().unstack("path"))
    per_C = per_C.reset_index().rename(columns={"C": "C \\ path"})
    statuses = (df.groupby(["path", "mode"])["status"].agg(lambda s: ", ".join(f"{k}: {v}" for k, v in s.value_counts().items()))
                .reset_index())
    text = [
        "# Warm starts along a C path",
        "",
        f"Generated by `{command}` (experiments/c_path.py; read its docstring for the paths and modes).",
        "Times are wall-clock seconds summed over the path (the cvxpy paths' first C includes the build "
        "and compile in every mode). `cold`: from scratch at each C; `reuse` (cvxpy): one Parameter problem, "
        "`warm_start=False` (compile skipped); `warm`: the previous point (kernel: alpha_prev * C / C_prev; "
        "cvxpy: `warm_start=True`). `compile_share`: (cold - reuse) / (cold - warm), the part of the saving "
        "that skipping cvxpy's compile explains; the rest is the solver's warm start.",
        "",
        "## Total path time, cold against warm",
        "",
        _md_table(summ),
        "",
        "## Largest relative objective difference to cold, per C",
        "",
        "|objective - cold| / |cold| at the same C, over the warm (and reuse) modes; "
        "objectives are the project's (solvers.checks: primal for soft_primal, dual otherwise; "
        "the kernel dual's D(alpha)).",
        "",
        _md_table(per_C, "{:.1e}"),
        "",
        "## Statuses",
        "",
        _md_table(statuses),
        "",
        "![time per C](c_path.png)",
        "",
    ]
    paths["md"].write_text("\n".join(text))

    labels = list(dict.fromkeys(df["path"]))
    ncol = min(3, len(labels))
    nrow = math.ceil(len(labels) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    styles = {"cold": ("o-", "tab:red"), "reuse": ("s--", "tab:orange"), "warm": ("^-", "tab:blue")}
    for ax, label in zip(axes.flat, labels):
        sub = df[df["path"] == label]
        for mode, (fmt, color) in styles.items():
            part = sub[sub["mode"] == mode].sort_values("C")
            if not part.empty:
                ax.plot(part["C"], part["time_s"], fmt, color=color, label=mode, markersize=4)
        ax.set_xscale("log")
        ax.set_title(f"{label} (n={int(sub['n'].iloc[0])})", fontsize=8)
        ax.set_xlabel("C")
        ax.set_ylabel("time per C [s]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(labels):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(paths["png"], dpi=120)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.c_path", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="points of the kernel paths (default 5000; --quick 200)")
    parser.add_argument("--n-linear", type=int, default=None,
                        help="points of the cvxpy (linear) paths (default 10000; --quick 300)")
    parser.add_argument("--out", type=Path, default=Path("results/bench"), help="output folder (default results/bench)")
    parser.add_argument("--quick", action="store_true", help="tiny n and 3 values of C per path (seconds)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    for name in ("n", "n_linear"):
        value = getattr(args, name)
        if value is not None and value < 10:
            parser.error(f"--{name.replace('_', '-')} must be at least 10 (got {value})")
    n_kernel = args.n or (200 if args.quick else 5000)
    n_linear = args.n_linear or (300 if args.quick else 10_000)
    kwargs = {}
    if args.quick:
        kwargs = dict(kernel_Cs=KERNEL_CS[::2], linear_Cs=LINEAR_CS[::4])
    df = run(n_kernel, n_linear, progress=not args.no_progress, **kwargs)
    command = "python -m experiments.c_path " + " ".join(argv if argv is not None else sys.argv[1:])
    paths = write_report(df, args.out, command.strip())
    print(summary(df).to_string(index=False))
    for p in paths.values():
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
