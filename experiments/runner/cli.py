"""``python -m experiments.run``: solve a suite (or your own grid), check it, report it.

With no arguments: the `default` suite (the lecture examples and a small synthetic
sweep) on every available backend of both layers, into results/<timestamp>/
(and results/latest), then a summary in the terminal. ``--help`` lists the options.

Flow: problems (suite or grid) x (layer, backend) -> tasks -> isolated solves
(local processes or Dask) -> rows.jsonl as they finish -> results.parquet/csv
-> duality.csv, agreement, report.md, figures/.

Before the sweep, every data set with a hard-margin problem (C = inf, linear) or a
`separability` problem is checked once for linear separability (pyomo/highs, in
an isolated process); the verdicts and their proofs go to separability.json and
into the `separable` column of the hard-margin rows. LP formulations (`--suite lp`,
or `--formulations separability,l1_primal,l1_dual` with a grid) run on every LP
setting: HiGHS's simplex and ipm (two settings, column `method`) and the other
LP-capable backends.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata as md
import json
import math
import os
import platform
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

# pandas (with the results table), tqdm, cvxpy, Pyomo and scikit-learn are imported where a solve or a
# report needs them, on purpose: --help, --version and --list answer in well under a second.
from experiments.datasets import DATASETS, Dataset, check_params, load_dataset
from experiments.progress import Progress
from experiments.runner.folder import (RUN_FILE, SEPARABILITY_FILE, RunFolderError, read_run_meta,
                                       read_separability, write_json, write_text, write_whole, writing)
from experiments.runner.lock import RunFolderLock
from experiments.runner.options import UsageError, build_parser, check_options, parse_names
from experiments.runner.section_options import section_options
from experiments.runner.suites import FORMULATION_NAMES, SEPARABILITY, SUITES, get_suite, grid, is_hard_margin, is_lp
from formulations.errors import SVMInputError
from formulations.kernels import Kernel
from formulations.scaling import SCALE_RATIO_WARN, scale_ratio
from formulations.validation import MEMORY_BUDGET_ENV, check_C, check_labels, check_X, memory_budget, parse_number
from solvers.backends import RECORDS
from solvers.methods import METHODS, WORKING_SET_FORMULATIONS
from solvers.profiles import PROFILES
from solvers.registry import BACKEND_NAMES, LAYERS, availability, available_backends, backend_table

#: Parameters for generators that need a size when the command line gives none.
DEFAULT_PARAMS = {"separable": {"n": 100}, "overlapping": {"n": 100}, "nonlinear": {"n": 100},
                  "sparse_features": {"n": 100}, "gendata": {"n_pos": 50, "n_neg": 50}}
PACKAGES = ["numpy", "scipy", "pandas", "pyarrow", "matplotlib", "scikit-learn", "pyomo", "cvxpy",
            *(record.distribution for record in RECORDS.values()), "qpsolvers", "dask",
            "distributed", "tqdm"]


# ------------------------------------------------------------------ parsing helpers


def split_top(text: str) -> list[str]:
    """Split at commas outside parentheses: 'a(n=1,seed=2),b' -> ['a(n=1,seed=2)', 'b']."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_dataset(spec: str) -> tuple[str, dict]:
    """'overlapping(n=200,seed=1)' -> ('overlapping', {'n': 200, 'seed': 1})."""
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*", spec)
    if not m:
        raise UsageError(f"cannot read dataset {spec!r}; write NAME or NAME(key=value,...)")
    name, inner = m.group(1), m.group(2)
    if name not in DATASETS:
        raise UsageError(f"unknown dataset {name!r}; datasets: {', '.join(DATASETS)} (see --list)")
    params = {}
    for item in split_top(inner or ""):
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"dataset {spec!r}: parameter {item!r} is not key=value")
        try:
            params[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key.strip()] = value.strip()
    try:  # by name and type here: a list or a dict would reach the task keys and the generator
        check_params(name, params, partial=True)
    except SVMInputError as exc:
        raise UsageError(str(exc)) from None
    return name, params


def parse_float(item: str, what: str) -> float:
    """One number of a comma list (validation.parse_number: a value too large for a float is refused)."""
    try:
        return parse_number(item, what)
    except SVMInputError as exc:
        raise UsageError(str(exc)) from None


def parse_floats(text: str, what: str) -> list[float]:
    return [parse_float(item, what) for item in text.split(",")]


def parse_ints(text: str, what: str) -> list[int]:
    out = []
    for item in text.split(","):
        try:
            out.append(int(item))
        except ValueError:
            raise UsageError(f"{what}: {item.strip()!r} is not a whole number") from None
    return out


def kernels_from(args) -> list[Kernel]:
    names = [k.strip() for k in args.kernel.split(",")]
    if "precomputed" in names:
        raise UsageError("--kernel precomputed needs a Gram matrix K, which the command line has no way to pass; "
                         "from Python: solvers.api.solve('kernel_dual', None, y, K=K, kernel='precomputed', ...)")
    gammas = [None] if args.gamma is None else [None if g.strip() in ("auto", "") else parse_float(g, "--gamma")
                                                 for g in args.gamma.split(",")]
    degrees = [3] if args.degree is None else parse_ints(args.degree, "--degree")
    coef0s = [0.0] if args.coef0 is None else parse_floats(args.coef0, "--coef0")
    out = {}
    try:
        for name in names:
            for g in gammas:
                for deg in degrees:
                    for c0 in coef0s:
                        k = Kernel(name, gamma=g, degree=deg, coef0=c0)
                        if k.name == "linear":
                            k = Kernel("linear")
                        out.setdefault(k.key, k)  # exact parameters: 0.1 and 0.1000001 are two kernels
    except (SVMInputError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return list(out.values())


def read_csv_dataset(path: str, label_column: str | None) -> tuple[Dataset, dict]:
    """The user's CSV: numeric feature columns plus one label column with any two distinct values."""
    import pandas as pd  # deferred on purpose: --help and --list must not pay for pandas


    p = Path(path)
    if not p.exists():
        raise UsageError(f"--data {path}: no such file")
    if not p.is_file():
        raise UsageError(f"--data {path}: not a file (a directory?); give the path of a CSV file")
    if not label_column:
        raise UsageError("--data needs --label-column NAME (the column holding the two class labels)")
    try:
        frame = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise UsageError(f"--data {path}: the file is empty (no header, no rows)") from None
    except pd.errors.ParserError as exc:  # a ragged row: pandas names the line and the field counts
        raise UsageError(f"--data {path}: not a well-formed CSV: {' '.join(str(exc).split())}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"--data {path}: not UTF-8 text (byte {exc.object[exc.start]:#04x}); "
                         f"save the CSV as UTF-8") from None
    if len(frame) == 0:
        raise UsageError(f"{p.name} is empty: it has a header but no data rows")
    _refuse_repeated_names(p)
    if label_column not in frame.columns:
        raise UsageError(f"--label-column {label_column!r} is not a column of {p.name}; "
                         f"columns: {', '.join(map(str, frame.columns))}")
    features = frame.drop(columns=[label_column])
    non_numeric = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if non_numeric:
        raise UsageError(f"{p.name}: feature columns must be numeric; not numeric: {', '.join(map(str, non_numeric))}")
    if features.shape[1] == 0:
        raise UsageError(f"{p.name}: no feature columns besides {label_column!r}")
    values = features.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():  # named by the file's line (1 is the header) and the column's name, where a spreadsheet shows it
        row, col = np.argwhere(bad)[0]
        kind = "NaN (an empty cell reads as NaN)" if np.isnan(values[row, col]) else "infinity"
        count = int(bad.sum())
        raise UsageError(f"{p.name}: line {row + 2}, column {features.columns[col]!r} holds {kind}; "
                         f"{count} such cell{'s' if count > 1 else ''} in all")
    try:  # what else the API refuses in X (values whose products overflow)
        check_X(values)
    except SVMInputError as exc:
        raise UsageError(f"{p.name}: {exc}") from None
    missing = frame[label_column].isna().to_numpy()
    if missing.any():
        raise UsageError(f"{p.name}: label column {label_column!r} has a missing label on line "
                         f"{int(np.argmax(missing)) + 2}")
    try:
        # a plain list -> numpy picks a numeric or a unicode dtype (object arrays of str trip np.unique users)
        y, labels = check_labels(np.asarray(frame[label_column].tolist()))
    except SVMInputError as exc:
        raise UsageError(f"{p.name}, column {label_column!r}: {exc}") from None
    mapping = labels.as_dict()
    # named by its file name (with .csv): never the same name as a built-in data set
    ds = Dataset(name=p.name, X=features.to_numpy(dtype=float), y=y,
                 description=f"user data {p.name}: {len(y)} rows, features {', '.join(map(str, features.columns))}; "
                             f"labels {mapping}",
                 source=str(p.resolve()), feature_names=tuple(map(str, features.columns)))
    return ds, mapping


def _refuse_repeated_names(p: Path) -> None:
    """A column name twice in the header is refused: pandas renames the second (a -> a.1), so it would be used as
    a feature under a name the file does not have, or a --label-column would pick one of the two."""
    import csv
    from collections import Counter

    with p.open(newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    repeated = [name for name, count in Counter(header).items() if count > 1]
    if repeated:
        name = repeated[0]
        where = ", ".join(str(i + 1) for i, h in enumerate(header) if h == name)
        raise UsageError(f"--data {p}: column name {name!r} appears {header.count(name)} times in the header "
                         f"(columns {where}); give each column its own name")


# ------------------------------------------------------------------ run pieces


def environment() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = "not installed"
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "packages": versions, "backends": backend_table()}


def default_out_dir(base: Path = Path("results")) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = base / stamp
    i = 1
    while out.exists():
        out = base / f"{stamp}-{i}"
        i += 1
    return out


def point_latest(out: Path) -> None:
    """results/latest -> this run (a symlink, or a text file holding the path where links are not allowed)."""
    latest = out.parent / "latest"
    try:
        if latest.is_symlink() or latest.is_file():
            latest.unlink()
        if not latest.exists():
            latest.symlink_to(out.name, target_is_directory=True)
    except OSError:
        write_text(latest.with_suffix(".txt"), str(out.resolve()) + "\n")


def resolve_latest(base: Path = Path("results")) -> Path | None:
    latest = base / "latest"
    if latest.exists():
        return latest.resolve()
    if latest.with_suffix(".txt").exists():
        return Path(latest.with_suffix(".txt").read_text().strip())
    return None


def parse_faults(specs: list[str] | None) -> dict:
    """--inject-fault '[layer/]backend=kind' ('*' for any) -> {(layer, backend): kind}."""
    faults = {}
    for spec in specs or []:
        sel, eq, kind = spec.partition("=")
        if not eq or not kind:
            raise UsageError(f"--inject-fault {spec!r}: write [LAYER/]BACKEND=KIND, e.g. cvxpy/osqp=raise")
        layer, _, backend = sel.rpartition("/")
        faults[(layer or "*", backend or "*")] = kind
    return faults


def problems_from(args) -> tuple[str, list]:
    """The suite's problems, or a custom grid when --datasets or --data is given."""
    custom = args.datasets is not None or args.data is not None
    forms = parse_names(args.formulations, FORMULATION_NAMES, "formulation")
    if not custom:
        for opt in ("C", "gamma", "degree", "coef0"):
            if getattr(args, opt) is not None:
                raise UsageError(f"--{opt} applies to a grid of your own: give --datasets or --data too "
                                 f"(suite {args.suite!r} fixes its own parameters)")
        if args.kernel != "linear":
            raise UsageError("--kernel applies to a grid of your own: give --datasets or --data too")
        try:
            suite = get_suite(args.suite)
        except SVMInputError as exc:
            raise UsageError(str(exc)) from None
        problems = suite.problems(args.seed)
        if forms:
            problems = [p for p in problems if p.formulation in forms]
        name = suite.name
    else:
        specs = []
        for item in split_top(args.datasets or ""):
            dname, params = parse_dataset(item)
            params = {**DEFAULT_PARAMS.get(dname, {}), **params}
            if "seed" in _signature(dname) and "seed" not in params:
                params["seed"] = args.seed
            specs.append((dname, params))
        if args.data:
            specs.append((f"csv:{args.data}", {}))
        Cs = parse_floats(args.C, "--C") if args.C is not None else [1.0]
        for c in Cs:  # refused here, before any solve (C = inf is the hard margin), naming the option
            try:
                check_C(c, allow_infinite=True)
            except SVMInputError as exc:
                raise UsageError(f"--C: {exc}") from None
        problems = grid(specs, Cs=Cs, kernels=kernels_from(args), formulations=forms,
                        profile=args.profile or "default")
        name = "custom"
    if not problems:
        raise UsageError("no problem to solve: no formulation of --formulations applies to the chosen C and kernel "
                         "(hard_primal: C = inf; soft_primal, l1_primal, l1_dual: finite C; nonlinear kernels: "
                         "kernel_dual only)")
    if args.profile:
        from dataclasses import replace

        problems = [replace(p, profile=args.profile) for p in problems]
    return name, with_methods(problems, args.method)


def with_methods(problems: list, method_list: str | None) -> list:
    """Each QP problem once per solve method asked (`--method`, an axis like C); "working_set" only
    where a working set exists (the soft margin and the duals at a finite C), as a formulation only
    where it applies. The LPs have one method (HiGHS's simplex/ipm are their settings)."""
    from dataclasses import replace

    methods = parse_names(method_list, METHODS, "method") or ["auto"]
    out = []
    for problem in problems:
        if is_lp(problem.formulation):
            out.append(problem)
            continue
        for method in methods:
            if method == "working_set" and not (problem.formulation in WORKING_SET_FORMULATIONS
                                                and math.isfinite(problem.C)):
                continue
            out.append(replace(problem, method=method))
    if not out:
        raise UsageError("no problem to solve: --method working_set applies to soft_primal, dual and kernel_dual "
                         "at a finite C only")
    return out


def _signature(name: str) -> set[str]:
    import inspect

    return set(inspect.signature(DATASETS[name]).parameters)


def _signature_defaults(name: str) -> dict:
    import inspect

    return {k: v.default for k, v in inspect.signature(DATASETS[name]).parameters.items()
            if v.default is not inspect.Parameter.empty}


def build_datasets(problems, args) -> tuple[dict, dict]:
    """{dataset_key: Dataset} and {dataset name: label map} for every problem."""
    from experiments.runner.sweep import dataset_key  # lazy: pandas; --help and --list stay fast

    datasets, maps = {}, {}
    for p in problems:
        key = dataset_key(p.dataset, p.params)
        if key in datasets:
            continue
        if p.dataset.startswith("csv:"):
            ds, mapping = read_csv_dataset(p.dataset[4:], args.label_column)
            maps[ds.name] = mapping
        else:
            check_dataset_size(p.dataset, p.params)
            try:
                ds = load_dataset(p.dataset, **p.params)
            except SVMInputError as exc:
                raise UsageError(str(exc)) from None
        datasets[key] = ds
    return datasets, maps


#: Bytes per feature value a generator holds at its peak (X, its noise and shift temporaries, the copy).
GENERATOR_BYTES_PER_VALUE = 4 * 8


def check_dataset_size(name: str, params: dict) -> None:
    """Refuse a synthetic data set too large for memory before its generator allocates anything."""
    n = params.get("n")
    if n is None and isinstance(params.get("n_pos"), int) and isinstance(params.get("n_neg"), int):
        n = params["n_pos"] + params["n_neg"]
    default_d = _signature_defaults(name).get("d", 2)
    d = params.get("d", default_d)
    if not (isinstance(n, int) and isinstance(d, int)) or n <= 0 or d <= 0:
        return  # not sizes yet: the generator's own check names the bad value
    need = GENERATOR_BYTES_PER_VALUE * float(n) * float(d)
    budget = memory_budget()
    if need > budget:
        raise UsageError(f"dataset {name}(n={n:,}, d={d}) would need about {need / 2**30:.1f} GiB to generate, "
                         f"more than the memory budget of {budget / 2**30:.1f} GiB; use a smaller n "
                         f"(or raise ${MEMORY_BUDGET_ENV}, in bytes)")


def backends_from(args) -> list[tuple[str, str]]:
    layers = parse_names(args.layers, LAYERS, "layer") or list(LAYERS)
    names = parse_names(args.backends, BACKEND_NAMES, "backend")
    if names:
        missing = [(lay, n) for lay in layers for n in names if not availability(lay, n)[0]]
        for lay, n in missing:
            print(f"note: {lay}/{n} is not available ({availability(lay, n)[1]}); skipped", file=sys.stderr)
    pairs = [(lay, n) for lay, n in available_backends() if lay in layers and (names is None or n in names)]
    if not pairs:
        raise UsageError("no available backend matches --layers/--backends (see --list)")
    return pairs


def _save_npz(path: Path, ds: Dataset) -> None:
    with path.open("wb") as fh:  # a file object: numpy would add .npz to the temporary name
        np.savez_compressed(fh, X=ds.X, y=ds.y)


def save_data(out: Path, datasets: dict, maps: dict) -> dict:
    info = {}
    with writing(out / "data"):
        (out / "data").mkdir(parents=True, exist_ok=True)
    for ds in datasets.values():
        fname = "data/" + re.sub(r"[^A-Za-z0-9]+", "_", ds.name).strip("_") + ".npz"
        write_whole(out / fname, lambda tmp, ds=ds: _save_npz(tmp, ds))
        info[ds.name] = {"file": fname, "n": ds.n, "d": ds.d, "description": ds.description, "source": ds.source,
                         "label_map": maps.get(ds.name, {}), "fingerprint": ds.fingerprint}
        if ds.feature_names:  # the report and the figures name the axes as the user did
            info[ds.name]["features"] = list(ds.feature_names)
        info[ds.name]["scaling"] = feature_scaling(ds)
    return info


def feature_scaling(ds: Dataset) -> dict:
    """How far apart the data set's feature scales are (formulations.scaling: the ratio of the largest to the
    smallest, the two features named), and whether that is over the BadScalingWarning's threshold."""
    ratio, hi, lo = scale_ratio(ds.X) if ds.d else (1.0, 0, 0)
    names = ds.feature_names or tuple(f"x{j + 1}" for j in range(ds.d))
    return {"ratio": ratio, "largest": names[hi] if ds.d else "", "smallest": names[lo] if ds.d else "",
            "bad": bool(ratio > SCALE_RATIO_WARN)}


def scaling_warnings(datasets: dict, standardize: bool) -> list[str]:
    """One line per data set whose feature scales are far apart, said once on the console (each solve's
    BadScalingWarning goes to its log only); none when the run standardizes."""
    lines = []
    for ds in datasets.values():
        scaling = feature_scaling(ds)
        if scaling["bad"] and not standardize:
            lines.append(f"warning: {ds.name}: badly scaled features: {scaling['largest']!r} has a scale "
                         f"{scaling['ratio']:.3g} times that of {scaling['smallest']!r}; solvers may lose accuracy and "
                         f"rows go unverified. Add --standardize (w*, b* are still reported in the data's units)")
    return lines


# ------------------------------------------------------------------ the run folder: options, data, lock

#: The options that decide which tasks a run holds: recorded in run.json, reused by --resume.
#: (--workers, --executor, --timeout, --stop-slow, output and fault options may change between sessions.)
RUN_OPTIONS = ("suite", "datasets", "data", "label_column", "formulations", "layers", "backends", "C", "kernel",
               "gamma", "degree", "coef0", "profile", "seed", "method", "standardize")


def recorded_options(args) -> dict:
    """The task-defining options as they go into run.json (--data as an absolute path)."""
    options = {name: getattr(args, name) for name in RUN_OPTIONS}
    if options["data"]:
        options["data"] = str(Path(options["data"]).resolve())
    return options


def given_options(argv: list[str]) -> set[str]:
    """The destinations of the options written on the command line (not left at their defaults)."""
    parser = build_parser()
    unset = object()  # argparse fills in a default only where the namespace has no value yet
    namespace = argparse.Namespace(**{name: unset for name in vars(parser.parse_args([]))})
    return {name for name, value in vars(parser.parse_args(argv, namespace=namespace)).items() if value is not unset}


def reuse_options(args, argv: list[str], out: Path) -> dict:
    """--resume: take the run's recorded options; refuse (naming it) an option that differs. Returns run.json."""
    if not (out / RUN_FILE).is_file():
        raise UsageError(f"--resume: {out} holds no run ({RUN_FILE} is missing); start one with --out {out}")
    try:
        meta = read_run_meta(out)
    except RunFolderError as exc:
        raise UsageError(f"--resume: {exc}") from None
    recorded = meta.get("options")
    if not isinstance(recorded, dict):  # a run.json written before options were recorded: trust the command line
        return meta
    mine = recorded_options(args)
    for name in sorted(given_options(argv) & set(RUN_OPTIONS)):
        if mine[name] != recorded.get(name):
            flag = "--" + name.replace("_", "-") if name != "C" else "--C"
            raise UsageError(f"--resume: {out} was run with {flag} {recorded.get(name)!r}, the command line says "
                             f"{mine[name]!r}; drop {flag} to reuse the run's options, or choose another --out")
    for name in RUN_OPTIONS:
        if name in recorded:
            setattr(args, name, recorded[name])
    return meta


def check_same_data(datasets: dict, meta: dict, out: Path) -> None:
    """--resume: every data set the run already solved must hold the same numbers (content hash)."""
    before = meta.get("datasets", {})
    for ds in datasets.values():
        old = before.get(ds.name, {}).get("fingerprint")
        new = ds.fingerprint
        if old and old != new:
            raise UsageError(f"--resume: the data of {ds.name} changed since the run in {out} (content hash {old} "
                             f"-> {new}, source {ds.source}); restore them, or start a new run with another --out")


def check_out_path(out: Path) -> None:
    """An --out that cannot become a folder is refused before any work."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"--out {out}: {parent} is a file, not a directory")
            break


def make_out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


def check_scheduler(address: str) -> None:
    """A Dask scheduler that does not answer is refused at once, not after a long connect retry."""
    import socket

    # lazy: pandas; --help and --list stay fast
    from experiments.runner.sweep import SCHEDULER_CONNECT_TIMEOUT as timeout

    m = re.fullmatch(r"(?:tcp://)?\[?([^\[\]/]+?)\]?:(\d+)/?", address.strip())
    if not m:
        return  # another protocol (tls://, ucx://...): distributed's own connect timeout applies
    try:
        socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout).close()
    except OSError as exc:
        raise UsageError(f"--scheduler {address}: no Dask scheduler answers there ({exc.strerror or exc}); start "
                         f"one, or leave --scheduler out for a LocalCluster on this machine") from None


def check_separability(problems, datasets: dict, out: Path, args, run_id: str, suite_name: str) -> dict:
    """Is each data set with a hard-margin or separability problem linearly separable? Once per data set.

    `experiments.separability.is_separable` through pyomo/highs, in an isolated process (a crash or
    a timeout is a verdict of None). Writes out/separability.json ({dataset: record}; with
    --resume, data sets already checked are kept) and returns {dataset: separable (True/False/None)}.
    """
    # lazy: pandas; --help and --list stay fast
    from experiments.runner.sweep import dataset_key, run_isolated, separability_task

    path = out / SEPARABILITY_FILE
    records = read_separability(out) if args.resume else {}
    todo = {}
    for p in problems:
        if p.formulation == SEPARABILITY or is_hard_margin(p.formulation, p.C, p.kernel):
            ds = datasets[dataset_key(p.dataset, p.params)]
            todo.setdefault(ds.name, (ds, p.profile))
    for name, (ds, profile) in todo.items():
        if name in records:
            continue
        task = separability_task(ds, profile=profile, timeout=args.timeout, run_id=run_id, suite=suite_name)
        row = run_isolated(task, str((out / "logs").resolve()))
        cert = json.loads(row["certificate"]) if row.get("certificate") else {}
        records[name] = {"dataset": name, "n": ds.n, "d": ds.d, "status": row.get("status"),
                         "separable": row.get("separable"), "message": row.get("verdict") or row.get("error", ""),
                         "solve_s": row.get("solve_s"), "wall_s": row.get("wall_s"), "certificate": cert}
        verdict = {True: "linearly separable", False: "NOT linearly separable", None: "undecided"}[row.get("separable")]
        if args.quiet:
            continue
        print(f"separability ({task.layer}/{task.backend}): {name}: {verdict}"
              + (f"; common point {tuple(round(v, 6) for v in cert['point'])}" if row.get("separable") is False
                 and cert.get("point") else ""), file=sys.stderr)
    if todo or records:
        write_json(path, records)
    return {name: rec.get("separable") for name, rec in records.items()}


def run_section(suite, args) -> int:
    """A suite that writes its own report (figures, tables, Markdown) into the output folder."""
    from experiments.coursework.cli import COURSEWORK_SUITES  # lazy: matplotlib and scikit-learn
    coursework = COURSEWORK_SUITES.get(suite.name)
    # a suite registered with a bare section function takes no option besides --out
    options = section_options(suite.name, coursework.run if coursework else (lambda out_dir: None), args)
    out = Path(args.out) if args.out else default_out_dir()
    check_out_path(out)
    make_out_dir(out)
    if not args.out:
        point_latest(out)
    section = suite.section(out, **options)
    print(f"{suite.name}: {getattr(section, 'title', '')} -> {out}")
    failed = getattr(section, "passed", None) is False
    if failed:
        print("some checks FAILED: see the report")
    if getattr(section, "summary", None):
        print(section.summary)  # the suite's verdict in one line, last (seeds: how many numbers reproduced)
    return int(failed)


def print_list() -> None:
    print("Datasets (NAME or NAME(key=value,...) for --datasets):")
    for name, fn in DATASETS.items():
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        print(f"  {name:<18} {doc}")
    print("\nSuites (--suite):")
    for name, suite in SUITES.items():
        size = "writes its own report" if suite.section else f"{len(suite.problems(0))} problems x backends"
        print(f"  {name:<18} {suite.description} [{size}]")
    print("\nFormulations (--formulations):", ", ".join(FORMULATION_NAMES))
    print("  (separability, l1_primal, l1_dual are LPs: they run on HiGHS simplex and ipm and the other LP-capable "
          "backends, and join a grid only when named here)")
    print("Kernels (--kernel): linear, poly, rbf, sigmoid")
    print("Profiles (--profile):", ", ".join(f"{p.name} ({p.description}; check tol {p.check_tol:g})"
                                            for p in PROFILES.values()))
    print("\nBackends (--layers, --backends; 'installed' means the packages are there: each is loaded, and "
          "refused by name if it cannot be, when a solve asks for it):")
    import pandas as pd  # deferred on purpose (see the imports)

    print(pd.DataFrame(backend_table(probe=False)).to_string(index=False))


def summarize(df: pd.DataFrame, tables: dict, out: Path, wall: float) -> str:
    from experiments.runner import analysis  # lazy: pandas; --help and --list stay fast

    lines = [f"\n{len(df)} solves in {wall:.1f} s; verified optimal: {(df.status == 'optimal').sum()}", ""]
    lines.append(analysis.status_counts(df).to_string())
    wb = analysis.wb_table(df)
    if not wb.empty:
        lec = wb[wb.dataset.isin(["example_5_1", "exercise_5_4"]) & (wb.status == "optimal")]
        if not lec.empty:
            wcols = [c for c in lec.columns if re.fullmatch(r"w\d+", c)]
            # one line per problem and formulation: solves at another C (or kernel, profile) are another problem
            keys = ["dataset", "kernel", "C", "profile", "formulation"]
            t = lec.groupby(keys, sort=False)[wcols + ["b", "objective"]].agg(["min", "max"])
            lines += ["", "Lecture examples, w* and b* over all verified backends and layers (min, max) per problem:",
                      t.round(4).to_string()]
    ds = tables.get("duality_summary")
    if ds is not None and not ds.empty:
        from experiments.runner.run_report import by_problem, problems  # lazy: pandas; --help and --list stay fast

        lines += ["", "Strong duality, P* - D* over all primal x dual pairs:",
                  by_problem(ds, problems(df)).to_string(index=False, float_format=lambda v: f"{v:.2e}")]
    separability = tables.get("separability") or {}
    if separability:
        lines += ["", "Linear separability (pyomo/highs, checked before the hard-margin solves):"]
        for name, rec in separability.items():
            verdict = {True: "separable", False: "NOT linearly separable", None: "undecided"}[rec.get("separable")]
            point = rec.get("certificate", {}).get("point")
            extra = (f": common point of both hulls ({', '.join(f'{v:.6g}' for v in point)}), verified to "
                     f"{rec['certificate']['certificate']['max_residual']:.1e}") if rec.get("separable") is False \
                and point else ""
            lines.append(f"  {name}: {verdict}{extra}")
        hard = df[analysis.separable_mask(df, False) & (df.formulation != SEPARABILITY)]
        if len(hard):
            lines.append(f"  hard-margin rows on data that are not separable: {len(hard)}, optimal: "
                         f"{int((hard.status == 'optimal').sum())} (statuses: "
                         + ", ".join(f"{k} {v}" for k, v in hard.status.value_counts().items()) + ")")
    l1 = tables.get("l1_pairs")
    if l1 is not None and not l1.empty:
        both = l1[(l1.primal_status == "optimal") & (l1.dual_status == "optimal")]
        lines += ["", f"1-norm SVM: {len(both)} of {len(l1)} (problem, LP setting) pairs verified in both LPs; "
                      f"largest |P* - D*| / |P*|: {both.rel_objective_diff.max():.1e}"]
        for group, g in l1.groupby("group", sort=False):
            ok = g[(g.primal_status == "optimal") & (g.dual_status == "optimal")]
            lines.append(f"  {group}: P* = {ok.P_star.median():.10g}, nonzero w_j: "
                         f"{int(ok.nnz_w.median()) if len(ok) else '-'} of {int(g.d.iloc[0])}"
                         if len(ok) else f"  {group}: no setting verified both LPs")
    lines += ["", f"results: {out}/results.parquet, results.csv, duality.csv, report.md, report.html, figures/"]
    return "\n".join(lines)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    try:
        return run(args, argv)
    except (UsageError, SVMInputError, RunFolderError) as exc:  # bad input, a folder that refuses: one clear line
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write no writer named (folder.writing names the file where it can)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


def choose_workers() -> tuple[int, str]:
    """The default --workers (sweep.workers_for the idle cores), and the line that says so when the machine
    is busy ("" when not): printed once the run starts, after every check of the input (a bad input's
    error stays its one line)."""
    from experiments.runner.sweep import idle_cores, workers_for  # lazy: pandas; --help and --list stay fast

    idle, cores = idle_cores(), os.cpu_count() or 1
    workers = workers_for(idle)
    if workers >= cores:
        return workers, ""
    return workers, (f"{workers} solve{'s' if workers > 1 else ''} at a time: the machine is busy ({idle:.1f} of "
                     f"{cores} CPU cores idle; --workers N to choose)")


def output_dir(args) -> Path:
    if args.out:
        out = Path(args.out)
    elif args.resume:
        out = resolve_latest()
        if out is None:
            raise UsageError("--resume without --out needs a previous run under results/latest")
    else:
        out = default_out_dir()
    check_out_path(out)
    return out


def run(args, argv: list[str]) -> int:
    if args.list:
        print_list()
        return 0
    check_options(args)
    if args.datasets is None and args.data is None:
        suite = SUITES.get(args.suite)
        if suite is not None and suite.section is not None:
            return run_section(suite, args)
    busy = ""
    if args.workers is None:  # read now, before this run's own work keeps the cores busy
        args.workers, busy = choose_workers()
    if args.executor == "local":
        from experiments.runner.sweep import warm_up  # lazy: pandas; --help and --list stay fast

        warm_up(args.workers)  # the solve processes' imports overlap the reading and checking below
    out = output_dir(args)
    meta = reuse_options(args, argv, out) if args.resume else {}
    suite_name, problems = problems_from(args)
    datasets, maps = build_datasets(problems, args)
    if args.resume:
        check_same_data(datasets, meta, out)
    backends = backends_from(args)
    if args.executor == "dask" and args.scheduler:
        check_scheduler(args.scheduler)

    from experiments.runner import results_table  # lazy: pandas; --help and --list stay fast

    make_out_dir(out)
    with RunFolderLock(out):
        if not args.resume and ((out / results_table.JOURNAL).exists() or (out / RUN_FILE).exists()):
            raise UsageError(f"{out} already holds a run; use --resume to complete it or another --out")
        if not args.out and not args.resume:
            point_latest(out)
        return sweep(args, argv, out, suite_name, problems, datasets, maps, backends, busy)


def write_run_meta(out: Path, args, argv, suite_name: str, n_tasks: int, datasets: dict, maps: dict,
                   run_id: str) -> dict:
    """run.json: the run's options (reused by --resume), its data (with content hashes), its sessions."""
    meta = read_run_meta(out)
    data_info = {**meta.get("datasets", {}), **save_data(out, datasets, maps)}
    meta.update(suite=suite_name, command="python -m experiments.run " + " ".join(argv),
                executor=args.executor, workers=args.workers, timeout=args.timeout, seed=args.seed,
                started=datetime.now().isoformat(timespec="seconds"), tasks=n_tasks, datasets=data_info,
                runs=meta.get("runs", []) + [run_id], options=recorded_options(args))
    write_json(out / RUN_FILE, meta)
    return meta


def sweep(args, argv, out: Path, suite_name: str, problems, datasets: dict, maps: dict, backends,
          busy: str = "") -> int:
    """Solve what is not done yet into `out` (locked by the caller), then the table, report and summary;
    `busy`: the line saying why fewer solves run at a time than there are cores (choose_workers)."""
    from experiments.runner import results_table  # lazy: pandas; --help and --list stay fast
    # lazy: pandas; --help and --list stay fast
    from experiments.runner.sweep import STOP_SLOW_FACTOR, SlowStop, leave_out_stalls, make_tasks, run_dask, run_local

    run_id = datetime.now().strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
    separable = check_separability(problems, datasets, out, args, run_id, suite_name)
    tasks = make_tasks(problems, datasets, backends, suite=suite_name, timeout=args.timeout,
                       faults=parse_faults(args.inject_fault), run_id=run_id, label_maps=maps, separable=separable,
                       standardize=args.standardize)
    tasks, stalls = leave_out_stalls(tasks, parse_names(args.backends, BACKEND_NAMES, "backend"))
    for note in stalls:
        print(note, file=sys.stderr)
    journal = results_table.Journal(out)
    done = journal.done_keys(retry_failed=args.retry_failed) if args.resume else set()
    if journal.skipped:
        print(f"warning: {journal.path}: skipped {len(journal.skipped)} line(s) that are not rows: "
              + "; ".join(journal.skipped[:3]) + (" ..." if len(journal.skipped) > 3 else ""), file=sys.stderr)
    todo = [t for t in tasks if t.key not in done]

    meta = write_run_meta(out, args, argv, suite_name, len(tasks), datasets, maps, run_id)
    if stalls:
        meta["left_out"] = stalls
        write_json(out / RUN_FILE, meta)
    write_json(out / "environment.json", environment())

    if not args.quiet:
        print(f"{len(tasks)} solves ({len(problems)} problems x {len(backends)} layer/backend pairs, LP problems x "
              f"their LP settings)"
              + (f", {len(stalls)} pair(s) left out (the notes above)" if stalls else "")
              + (f", {len(done & {t.key for t in tasks})} already done" if args.resume else "") + f" -> {out}",
              file=sys.stderr)
        if busy and todo:
            print(busy, file=sys.stderr)
    for line in scaling_warnings(datasets, args.standardize):
        print(line, file=sys.stderr)  # also with -q: it says why rows go unverified
    start = time.perf_counter()
    bar = Progress(len(todo), enabled=not (args.no_progress or args.quiet), unit="solve")
    failed = 0

    def on_row(row: dict) -> None:
        nonlocal failed
        journal.append(row)
        failed += row.get("status") != "optimal"
        bar.done(f"{row.get('status')}: {row.get('task_key')} ({row.get('wall_s', math.nan):.2f} s)"
                 + (f" {row['error']}" if row.get("error") else ""), always=args.verbose)
        bar.note(f"not optimal: {failed}")

    log_dir = str((out / "logs").resolve())
    interrupted = False
    try:
        factor = STOP_SLOW_FACTOR if args.stop_slow is None else args.stop_slow
        slow = SlowStop(factor) if factor > 0 else None
        if args.executor == "dask":
            run_dask(todo, on_row, scheduler=args.scheduler, workers=args.workers, log_dir=log_dir, slow=slow)
        else:
            run_local(todo, on_row, workers=args.workers, log_dir=log_dir, slow=slow)
    except KeyboardInterrupt:
        interrupted = True
    except RunFolderError as exc:  # the journal could not take a row: the sweep stops, the rows before it stay
        raise RunFolderError(f"{exc}; the finished solves before it are saved in {journal.path}: make room, then "
                             f"complete the run with: python -m experiments.run --resume --out {out}") from None
    finally:
        bar.close()
    wall = time.perf_counter() - start
    df = results_table.consolidate(out)
    if interrupted:
        print(f"\ninterrupted: {len(df)} finished solves are saved in {out}; "
              f"complete the run with: python -m experiments.run --resume --out {out}", file=sys.stderr)
        return 130
    meta.update(wall_s=wall, finished=datetime.now().isoformat(timespec="seconds"))
    write_json(out / RUN_FILE, meta)

    suite = SUITES.get(suite_name)
    if suite is not None and suite.after is not None:
        try:  # the suite's own extra tables (the lp suite: 1-norm vs 2-norm); a failure must not cost the report
            suite.after(out, args.seed)
        except Exception as exc:
            print(f"warning: {suite_name} extras failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    from experiments.runner.run_report import write_report  # lazy: pandas; --help and --list stay fast

    _, tables = write_report(out, figures=not args.no_figures)
    print(f"results: {out}" if args.quiet else summarize(df, tables, out, wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
