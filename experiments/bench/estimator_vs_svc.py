"""The estimator against SVC: its time as a ratio to SVC's, measured side by side.

    python -m experiments.estimator_bench            # both measurements (about a minute at n = 5,000)
    python -m experiments.estimator_bench --n 2000   # the single fit at another n

1. A 5-fold GridSearchCV over 6 settings (C in 0.1, 1, 10 x gamma in 0.01, 0.1; RBF kernel) on
   scikit-learn's breast-cancer data, standardized: SVMClassifier (default layer and backend)
   against SVC at its default tolerance and at tol = 1e-8; the validation scores must agree.
2. One fit on the benchmark's Gaussian-kernel data (experiments.bench.scaling.bench_data, d = 10,
   C = 1, gamma = 0.1) at n = 5,000, against SVC at tol 1e-3 and 1e-6, with the largest
   difference of the decision values relative to their size; then the same with sample weights
   (per-sample bounds C_i, which the kernel working set takes as it takes one C).
3. --small: digits, iris, a breast-cancer grid search (4 C x 3 gamma) and one fit on the hard family (3 clusters
   per class, 8% flipped labels, 60/40, class_sep 0.85; gamma = 1/d) at --n, the estimator's defaults against
   SVC's, interleaved, medians of --repeat runs and of the run-by-run ratios.
4. --large-c: noisy moons (n = 1,000, noise 0.35, standardized) at C = 1e3, 1e4, 1e5, where SMO's steps grow
   with C and a pair goes to the solver alone past its budget: the estimator's defaults against SVC's, interleaved
   (about two minutes, most of it SVC's at C = 1e5), medians of --repeat runs and of the run-by-run ratios.
5. --fresh: a user's first fit, each in a process of its own (python, the imports, the data, one timed fit),
   the estimator's and SVC's in turn, --pairs pairs after untimed ones (until the ahead-of-time build is loaded):
   digits (raw and standardized), iris, wine and breast cancer (raw), each a 70/30 stratified split
   (random_state 11), and the whole raw digits set; defaults. The median of the pair-by-pair ratios, and their
   range. --one-core: every child (the estimator's and SVC's) pinned to one core, as where another process keeps
   the other busy (LIBSVM uses one core; the estimator, by default, both).

Each time is the best of --repeat runs (default 3; on a machine shared with other jobs one run of
SVC's grid search took 0.11 s or 0.22 s), and "x SVC" is it divided by SVC's at its default
tolerance 1e-3, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from experiments.bench.interleaved import interleaved
from experiments.bench.scaling import C_VALUE, GAMMA, KERNEL_D, bench_data
from experiments.datasets import hard
from experiments.estimator import SVMClassifier

PARAM_GRID = {"C": [0.1, 1.0, 10.0], "gamma": [0.01, 0.1]}


def _timed(fn, repeat: int = 1):
    """(fn()'s last result, the best wall time of `repeat` calls)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


def _with_ratios(rows: list[dict]) -> list[dict]:
    """Each row's seconds over the first row's (SVC at its default tolerance), as "x SVC"."""
    svc = rows[0]["seconds"]
    return [{**row, "x SVC": row["seconds"] / svc} for row in rows]


def grid_search(repeat: int = 3) -> list[dict]:
    """Best wall time of the grid search for the estimator and SVC, and whether their scores agree."""
    import numpy as np
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC


    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    models = {"SVC (tol 1e-3)": SVC(kernel="rbf"), "SVC (tol 1e-8)": SVC(kernel="rbf", tol=1e-8),
              "SVMClassifier (pyomo/piqp)": SVMClassifier(kernel="rbf"),
              "SVMClassifier (cvxpy/piqp)": SVMClassifier(kernel="rbf", layer="cvxpy")}
    rows, reference = [], None
    for name, model in models.items():
        search, seconds = _timed(lambda m=model: GridSearchCV(m, PARAM_GRID, cv=cv).fit(X, y), repeat)
        scores = search.cv_results_["mean_test_score"]
        reference = scores if reference is None else reference
        rows.append({"what": f"grid search, {name}", "seconds": seconds,
                     "max score difference vs SVC": float(np.max(np.abs(scores - reference)))})
    return _with_ratios(rows)


def single_fit(n: int, repeat: int = 3, weighted: bool = False) -> list[dict]:
    """One RBF fit at n samples (best of `repeat`): the estimator against SVC, and how far its decision values are.
    weighted: every fit takes the same sample weights (uniform in [0.5, 2], seed 0): per-sample bounds C_i."""
    import numpy as np
    from sklearn.svm import SVC


    X, y = bench_data(n, KERNEL_D)
    fit_kw = {"sample_weight": np.random.default_rng(0).uniform(0.5, 2.0, n)} if weighted else {}
    models = {"SVC (tol 1e-3)": SVC(kernel="rbf", gamma=GAMMA, C=C_VALUE),
              "SVC (tol 1e-6)": SVC(kernel="rbf", gamma=GAMMA, C=C_VALUE, tol=1e-6),
              "SVMClassifier (pyomo/piqp)": SVMClassifier(kernel="rbf", gamma=GAMMA, C=C_VALUE)}
    timed = {name: _timed(lambda m=model: m.fit(X, y, **fit_kw), repeat) for name, model in models.items()}
    values = {name: fitted.decision_function(X) for name, (fitted, _) in timed.items()}
    tight = values["SVC (tol 1e-6)"]
    scale = np.max(np.abs(tight))
    what = f"fit n = {n:,}{', sample weights' if weighted else ''}"
    return _with_ratios([{"what": f"{what}, {name}", "seconds": seconds,
                          "max |f - f_SVC 1e-6| / max |f|": float(np.max(np.abs(values[name] - tight)) / scale)}
                         for name, (_, seconds) in timed.items()])


def _median_rows(what: str, times: dict[str, list[float]], yardstick: str, extra: dict | None = None) -> list[dict]:
    """Rows of median seconds, the median of the run-by-run ratios to `yardstick`'s, and those ratios."""
    import numpy as np

    base = np.array(times[yardstick])
    return [{"what": f"{what}, {name}", "seconds": float(np.median(t)),
             "x SVC": float(np.median(np.array(t) / base)),
             "x SVC run by run": " ".join(f"{r:.2f}" for r in np.array(t) / base), **(extra or {}).get(name, {})}
            for name, t in times.items()]


def hard_family(n: int = 5000, seed: int = 1):
    """The hard family as the kernel targets read it (experiments.datasets.hard): 3 clusters per class, 8% flipped
    labels, 60/40 classes, class_sep 0.85, d = 10, standardized; (X, y) with y in {-1, +1} (gamma = 1/d: the
    caller's)."""
    ds = hard(n, d=10, seed=seed, clusters=3, flip=0.08, separation=0.85, positive=0.4)
    return ds.X, ds.y


def small_and_hard(repeat: int = 5, n_hard: int = 5000) -> list[dict]:
    """The estimator's default settings against SVC's on digits (10 classes), iris (3), a breast-cancer grid
    search (4 C x 3 gamma, 5 folds) and one fit on the hard family (C = 1, gamma = 1/d): median seconds of
    `repeat` interleaved runs after one untimed fit of each (the first fit in a process loads the compiled code),
    the median run-by-run ratio, and how far the decision values are from SVC's at tol 1e-6 (LIBSVM's
    single-precision kernel cache: ~2e-5 is agreement)."""
    import numpy as np
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    rows = []
    X_h, y_h = hard_family(n_hard)
    cases = {"digits": load_digits(return_X_y=True), "iris": load_iris(return_X_y=True),
             f"hard family n = {n_hard:,}": (X_h, y_h)}
    for what, (X, y) in cases.items():
        kw = {"gamma": 1.0 / X.shape[1]} if what.startswith("hard") else {}
        models = {"SVC": SVC(**kw), "SVMClassifier": SVMClassifier(**kw)}
        times = interleaved({name: (lambda m=m: m.fit(X, y)) for name, m in models.items()}, repeat, warm=True)
        tight = SVC(**kw, tol=1e-6, decision_function_shape="ovo").fit(X, y).decision_function(X)
        ours = models["SVMClassifier"].set_params(decision_function_shape="ovo").decision_function(X)
        off = {"SVMClassifier": {"max |f - f_SVC 1e-6| / max |f|": float(np.max(np.abs(ours - tight)) /
                                                                          np.max(np.abs(tight)))}}
        rows += _median_rows(what, times, "SVC", off)
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.01, 0.03, 0.1]}
    searches = {"SVC": lambda: GridSearchCV(SVC(), grid, cv=cv).fit(X, y),
                "SVMClassifier": lambda: GridSearchCV(SVMClassifier(), grid, cv=cv).fit(X, y)}
    rows += _median_rows("grid search 4 x 3 x 5 folds, breast cancer", interleaved(searches, repeat), "SVC")
    return rows


#: --large-c's values of C, on LARGE_C_DATA's noisy moons.
LARGE_C = (1e3, 1e4, 1e5)
LARGE_C_DATA = {"n_samples": 1000, "noise": 0.35, "random_state": 1}


def large_c(repeat: int = 3, Cs=LARGE_C) -> list[dict]:
    """The estimator's default settings against SVC's on noisy moons at each C of `Cs` (LARGE_C_DATA): median
    seconds of `repeat` interleaved runs after one untimed fit of each, the median run-by-run ratio, and the
    estimator's pairs' statuses and solvers (SMO, or the solver alone past SMO's budget)."""
    from sklearn.datasets import make_moons
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = make_moons(**LARGE_C_DATA)
    X = StandardScaler().fit_transform(X)
    rows = []
    for C in Cs:
        models = {"SVC": SVC(C=C), "SVMClassifier": SVMClassifier(C=C)}
        times = interleaved({name: (lambda m=m: m.fit(X, y)) for name, m in models.items()}, repeat, warm=True)
        solutions = models["SVMClassifier"].solutions_
        how = {"SVMClassifier": {"pairs": ", ".join(f"{s.status} via {s.layer}/{s.backend}" for s in solutions)}}
        rows += _median_rows(f"noisy moons n = {len(y):,}, C = {C:g}", times, "SVC", how)
        print(f"C = {C:g}: {rows[-1]['x SVC']:.2f}x SVC", file=sys.stderr, flush=True)
    return rows


#: --fresh's cases: (scikit-learn's loader, standardized, 70/30 split). The whole digits set is the one whose SVC
#: time (0.039 s) the hard-data targets quote.
FRESH_CASES = {"digits": ("load_digits", False, True), "digits, standardized": ("load_digits", True, True),
               "digits, whole set": ("load_digits", False, False), "iris": ("load_iris", False, True),
               "wine": ("load_wine", False, True), "breast cancer": ("load_breast_cancer", False, True)}

#: A fresh process's one fit: it prints the fit's seconds (the imports and the data before it are not timed), whether
#: the estimator's ran the ahead-of-time build, and the samples fitted.
FRESH_FIT = """
import json, time
from sklearn import datasets
from sklearn.model_selection import train_test_split
X, y = getattr(datasets, {loader!r})(return_X_y=True)
if {standardized}:
    from sklearn.preprocessing import StandardScaler
    X = StandardScaler().fit_transform(X)
if {split}:
    X, _, y, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=11)
if {ours}:
    from experiments.estimator import SVMClassifier as Model
else:
    from sklearn.svm import SVC as Model
start = time.perf_counter()
Model().fit(X, y)
seconds = time.perf_counter() - start
if {ours}:
    from formulations import ahead_of_time
print(json.dumps([seconds, ahead_of_time.loaded() if {ours} else None, len(y)]))
"""

#: The longest wait, in seconds, for the compiled code's ahead-of-time build (started in the background by a fresh
#: install's first fit, about 40 s) before the timed pairs: a fit that ran beside the build would time the build.
BUILD_WAIT = 180


def _fresh_fit(case: str, ours: bool, one_core: bool = False) -> tuple[float, bool | None, int]:
    """(the seconds of one fit in a new process (FRESH_FIT), whether the estimator's ran the ahead-of-time build
    (None for SVC), the samples fitted); a child that fails is an error naming the case. one_core: the child pinned
    to one core before it starts (its BLAS and the estimator's threads then see one)."""
    loader, standardized, split = FRESH_CASES[case]
    code = FRESH_FIT.format(loader=loader, standardized=standardized, split=split, ours=ours)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          preexec_fn=_on_one_core if one_core else None)
    if done.returncode != 0:
        raise RuntimeError(f"the fresh fit of {case} ({'SVMClassifier' if ours else 'SVC'}) failed: "
                           f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    seconds, built, samples = json.loads(done.stdout.strip().splitlines()[-1])
    return float(seconds), built, int(samples)


def _on_one_core() -> None:
    """A child's start (preexec_fn): this process, and so the program it runs, on the first core it may use."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def fresh_first_fits(pairs: int = 15, cases=tuple(FRESH_CASES), one_core: bool = False) -> list[dict]:
    """Each case's first fit in fresh processes, the estimator's then SVC's, `pairs` times after untimed ones (the
    estimator's until a process runs the ahead-of-time build, BUILD_WAIT at most): median seconds, the median of
    the pair-by-pair ratios and their range, and how many of the estimator's processes ran the build. one_core:
    every child on one core (_fresh_fit). Progress on stderr, a line a case."""
    import numpy as np

    rows = []
    where = ", one core" if one_core else ""
    for case in cases:
        waited = time.monotonic()
        while not _fresh_fit(case, True, one_core)[1] and time.monotonic() - waited < BUILD_WAIT:
            time.sleep(5)  # untimed: the first build, the data's first read
        _fresh_fit(case, False, one_core)
        timed = [(_fresh_fit(case, True, one_core), _fresh_fit(case, False, one_core)) for _ in range(pairs)]
        ours, svc = np.array([[mine[0], theirs[0]] for mine, theirs in timed]).T
        ratios = ours / svc
        samples = timed[0][0][2]  # the first pair's estimator's child: every child fits the same samples
        rows.append({"what": f"first fit in a fresh process{where}, {case}", "samples": samples,
                     "seconds": float(np.median(ours)),
                     "SVC seconds": float(np.median(svc)), "x SVC": float(np.median(ratios)),
                     "x SVC min-max": f"{ratios.min():.2f}-{ratios.max():.2f}", "pairs": pairs,
                     "ahead-of-time build": f"{sum(bool(mine[1]) for mine, _ in timed)} of {pairs}"})
        print(f"{case}{where}: {rows[-1]['x SVC']:.2f}x SVC over {pairs} pairs", file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.estimator_bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--n", type=int, default=5000, help="samples of the single fit (default 5000)")
    parser.add_argument("--skip-grid", action="store_true", help="only the single fit")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement, the best kept (default 3)")
    parser.add_argument("--small", action="store_true",
                        help="instead: digits, iris, a breast-cancer grid search and the hard family at --n, "
                             "interleaved with SVC, medians of --repeat runs")
    parser.add_argument("--large-c", action="store_true",
                        help="instead: noisy moons at C = 1e3, 1e4, 1e5, interleaved with SVC, medians of --repeat runs")
    parser.add_argument("--fresh", action="store_true",
                        help="instead: each first fit in a process of its own, the estimator's and SVC's in turn "
                             "(digits, iris, wine, breast cancer)")
    parser.add_argument("--pairs", type=int, default=15, help="--fresh's pairs of processes per case (default 15)")
    parser.add_argument("--one-core", action="store_true",
                        help="with --fresh: every child pinned to one core (as beside a busy process)")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs must be at least 1, got {args.pairs}")
    if args.one_core and not args.fresh:
        parser.error("--one-core goes with --fresh")
    if args.one_core and not hasattr(os, "sched_setaffinity"):
        parser.error("--one-core needs a platform that pins a process to a core (os.sched_setaffinity: Linux)")
    if args.n < 10:
        parser.error(f"--n must be at least 10, got {args.n}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    import pandas as pd

    if args.fresh:
        rows = fresh_first_fits(args.pairs, one_core=args.one_core)
    elif args.large_c:
        rows = large_c(args.repeat)
    elif args.small:
        rows = small_and_hard(args.repeat, args.n)
    else:
        rows = ([] if args.skip_grid else grid_search(args.repeat)) + single_fit(args.n, args.repeat)
        rows += single_fit(args.n, args.repeat, weighted=True)
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
