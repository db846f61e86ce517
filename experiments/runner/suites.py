"""Named suites: which problems a sweep solves (data x formulation x parameters).

A suite does not name backends: the sweep crosses every problem with every
available (layer, backend) pair, so a new backend joins every suite by itself.

To add a suite, write a function ``seed -> list[Problem]`` (the seed feeds the
synthetic generators) and register it::

    register(Suite("my_suite", "what it shows", lambda seed: grid(...)))

``grid`` applies the rule "every formulation that applies": C = inf means the
hard margin (hard_primal, dual with C = inf, kernel_dual with C = inf); a finite
C means the soft margin (soft_primal, dual, kernel_dual); a nonlinear kernel
applies to kernel_dual only.

The LP formulations (solvers.lp) join a grid only when asked for by name:
``separability`` (is the data linearly separable? once per data set, C = inf),
``l1_primal`` and ``l1_dual`` (the 1-norm SVM and its LP dual, finite C, linear).
The sweep crosses them with the LP settings (HiGHS's simplex and ipm as two
settings, and the other LP-capable backends) instead of the QP backends.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from formulations.errors import SVMInputError
from formulations.kernels import Kernel
from formulations.names import (DUAL, HARD_PRIMAL, KERNEL_DUAL, L1_DUAL, L1_FORMULATIONS, L1_PRIMAL,
                                 QP_FORMULATIONS, SEPARABILITY, SOFT_PRIMAL)

# The LPs a grid can name (the convex-hull LP is the separability check's certificate, not a task).
LP_FORMULATIONS = (SEPARABILITY, L1_PRIMAL, L1_DUAL)
FORMULATION_NAMES = QP_FORMULATIONS + LP_FORMULATIONS
#: The formulations that solve the hard margin when C = inf (linear kernel): the sweep checks
#: linear separability first, since without it they have no solution.
HARD_MARGIN_FORMULATIONS = (HARD_PRIMAL, DUAL, KERNEL_DUAL)
LINEAR = Kernel("linear")


def is_lp(formulation: str) -> bool:
    return formulation in LP_FORMULATIONS


def is_hard_margin(formulation: str, C: float, kernel: Kernel) -> bool:
    """A hard-margin SVM in input space (C = inf, linear kernel): it exists only for separable data."""
    return formulation in HARD_MARGIN_FORMULATIONS and math.isinf(C) and kernel.name == "linear"


@dataclass(frozen=True)
class Problem:
    """One thing to solve, before a backend is chosen.

    dataset/params name a data set of experiments.datasets (``load_dataset(dataset, **params)``);
    C = inf is the hard margin; ``kernel`` is used by kernel_dual only (the other
    formulations are linear by construction).
    """

    dataset: str
    formulation: str
    C: float = math.inf
    kernel: Kernel = LINEAR
    params: Mapping = field(default_factory=dict)
    profile: str = "default"
    kernel_form: str = "dense"
    method: str = "auto"  # solvers.api.solve's method: "full", "working_set" or "auto" (the QPs only)

    def __post_init__(self) -> None:
        if self.formulation not in FORMULATION_NAMES:
            raise SVMInputError(f"unknown formulation {self.formulation!r}; choose from {', '.join(FORMULATION_NAMES)}")
        if self.formulation != KERNEL_DUAL and self.kernel.name != "linear":
            raise SVMInputError(f"{self.formulation} is linear; only kernel_dual takes kernel {self.kernel.label}")
        if self.formulation == HARD_PRIMAL and math.isfinite(self.C):
            raise SVMInputError("hard_primal has no C (it is the C = inf case)")
        if self.formulation == SOFT_PRIMAL and not math.isfinite(self.C):
            raise SVMInputError("soft_primal needs a finite C > 0; for C = inf use hard_primal")
        if self.formulation in L1_FORMULATIONS and not math.isfinite(self.C):
            raise SVMInputError(f"{self.formulation} (the 1-norm SVM) needs a finite C > 0")
        if self.formulation == SEPARABILITY and math.isfinite(self.C):
            raise SVMInputError("separability has no C (it is written with C = inf, as the hard margin)")
        object.__setattr__(self, "params", dict(self.params))

    def __hash__(self) -> int:  # params is a dict: hash its items
        return hash((self.dataset, self.formulation, self.C, self.kernel, tuple(sorted(self.params.items())),
                     self.profile, self.kernel_form))


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    problems: Callable[[int], list[Problem]]  # seed -> problems
    # A suite that writes its own report (the coursework demos): (out_dir, **options) -> Section, the options
    # being the command line's that its function takes (experiments/runner/section_options.py).
    section: Callable[..., object] | None = None
    # Extra work after the sweep, before the report (out_dir, seed) -> None; it writes its
    # own files into out_dir, which the report reads (the lp suite's 1-norm vs 2-norm table).
    after: Callable[[object, int], None] | None = None


SUITES: dict[str, Suite] = {}


def register(suite: Suite) -> Suite:
    """Add (or replace) a suite in the registry; returns it, so it can decorate a module-level name."""
    SUITES[suite.name] = suite
    return suite


def get_suite(name: str) -> Suite:
    try:
        return SUITES[name]
    except KeyError:
        raise SVMInputError(f"unknown suite {name!r}; suites: {', '.join(SUITES)}") from None


def applicable(C: float, kernel: Kernel) -> tuple[str, ...]:
    """The formulations that solve the SVM with this C and kernel."""
    if kernel.name != "linear":
        return (KERNEL_DUAL,)
    if math.isinf(C):
        return (HARD_PRIMAL, DUAL, KERNEL_DUAL)
    return (SOFT_PRIMAL, DUAL, KERNEL_DUAL)


def lp_applicable(C: float, kernel: Kernel) -> tuple[str, ...]:
    """The 1-norm SVM LPs that fit this C and kernel (linear, finite C); used when asked for by name."""
    return L1_FORMULATIONS if kernel.name == "linear" and math.isfinite(C) else ()


def grid(
    datasets: Iterable[tuple[str, Mapping]],
    Cs: Iterable[float] = (1.0,),
    kernels: Iterable[Kernel] = (LINEAR,),
    formulations: Iterable[str] | None = None,
    profile: str = "default",
) -> list[Problem]:
    """Every (dataset, C, kernel) crossed with the formulations that apply (a subset if given).

    LP formulations only when named in `formulations`: `separability` once per data
    set (it has no C), `l1_primal` / `l1_dual` for every finite C (linear kernel).
    """
    wanted = None if formulations is None else tuple(formulations)
    Cs, kernels = list(Cs), list(kernels)
    problems = []
    for name, params in datasets:
        if wanted is not None and SEPARABILITY in wanted:
            problems.append(Problem(name, SEPARABILITY, math.inf, LINEAR, params, profile))
        for kernel in kernels:
            for C in Cs:
                forms = applicable(C, kernel) + (lp_applicable(C, kernel) if wanted is not None else ())
                for form in forms:
                    if wanted is None or form in wanted:
                        problems.append(Problem(name, form, C, kernel, params, profile))
    return problems


# ------------------------------------------------------------------ the suites


def _default(seed: int) -> list[Problem]:
    """The lecture examples, then a small synthetic C sweep.

    Profile `high` (about 1e-9 in every backend, check tolerance 1e-6): the notes
    print w*, b* to 4 decimals, and with solver defaults the first-order methods
    (OSQP, SCS) and some active-set exits stop near 1e-3..1e-4, which the checks
    rightly refuse; asking for 1e-9 lets every backend reach the published numbers
    and costs well under a second per solve at these sizes.
    """
    high = "high"
    return [
        # Example 5.1 (hard-margin primal) and Example 5.2 (the same data through the dual)
        *grid([("example_5_1", {})], Cs=[math.inf], profile=high),
        # Exercise 5.4: soft margin, C = 10
        *grid([("exercise_5_4", {})], Cs=[10.0], profile=high),
        # Exercise 5.5: Gaussian kernel, gamma = 1, C = 1
        *grid([("exercise_5_5", {})], Cs=[1.0], kernels=[Kernel("rbf", gamma=1.0)], profile=high),
        # A small synthetic sweep: overlapping classes, where C matters
        *grid([("overlapping", {"n": 100, "d": 2, "seed": seed})], Cs=[0.1, 1.0, 10.0], profile=high),
    ]


def _smoke(seed: int) -> list[Problem]:
    """A handful of tiny problems for tests: both margins, a kernel, a soft margin."""
    return [
        Problem("example_5_1", HARD_PRIMAL, profile="high"),
        Problem("example_5_1", DUAL, profile="high"),
        Problem("exercise_5_5", KERNEL_DUAL, 1.0, Kernel("rbf", gamma=1.0), profile="high"),
        Problem("overlapping", SOFT_PRIMAL, 1.0, params={"n": 20, "d": 2, "seed": seed}, profile="high"),
    ]


register(Suite(
    "default",
    "Lecture examples (Example 5.1/5.2 hard margin, Exercise 5.4 C=10, Exercise 5.5 rbf gamma=1 C=1) "
    "and overlapping(n=100) for C in 0.1, 1, 10; every formulation that applies; profile high",
    _default,
))
register(Suite("smoke", "Four tiny problems (Example 5.1 primal+dual, Exercise 5.5 rbf, overlapping n=20) for tests",
               _smoke))

#: The lp suite's synthetic set: 50 features of which 3 carry the label (the 1-norm SVM drops the rest).
LP_SPARSE = {"n": 300, "d": 50}
LP_SPARSE_C = 0.05
L1_VS_L2 = "l1_vs_l2.csv"  # written by the lp suite after its sweep, read by the report


def _lp(seed: int) -> list[Problem]:
    """Separability of the lecture data, and the 1-norm SVM with its LP dual.

    Profile `high` (about 1e-9): the claim to show is primal optimum = dual optimum
    to 1e-9 relative, which HiGHS's simplex and ipm (with crossover) meet exactly.
    """
    high = "high"
    sparse = {**LP_SPARSE, "seed": seed}
    return [
        Problem("example_5_1", SEPARABILITY, profile=high),
        Problem("exercise_5_4", SEPARABILITY, profile=high),
        *[Problem("exercise_5_4", f, 10.0, profile=high) for f in L1_FORMULATIONS],
        *[Problem("example_5_1", f, 1.0, profile=high) for f in L1_FORMULATIONS],
        *[Problem("sparse_features", f, LP_SPARSE_C, params=sparse, profile=high) for f in L1_FORMULATIONS],
    ]


def _lp_after(out_dir, seed: int) -> None:
    """1-norm vs 2-norm SVM on sparse_features (70/30 split, both layers) -> out_dir/l1_vs_l2.csv."""
    from pathlib import Path

    import pandas as pd

    from experiments.coursework.l1_compare import compare_on_dataset  # lazy: cvxpy; --help and --list read this module

    frames = [compare_on_dataset("sparse_features", LP_SPARSE_C, seed=seed,
                                 dataset_params={**LP_SPARSE, "seed": seed}, layer=layer, l1_backend="highs",
                                 method="simplex", l2_backend="clarabel", profile="high")
              for layer in ("pyomo", "cvxpy")]
    table = pd.concat(frames, ignore_index=True)
    table["kept_features"] = table.kept_features.map(lambda v: " ".join(map(str, v)))
    table.to_csv(Path(out_dir) / L1_VS_L2, index=False)


register(Suite(
    "lp",
    "LPs where HiGHS shines: separability (with its convex-hull certificate) of Example 5.1 and Exercise 5.4; "
    "the 1-norm SVM and its LP dual on Exercise 5.4 (C=10), Example 5.1 (C=1), sparse_features(n=300, d=50) "
    "(C=0.05); every LP setting (HiGHS simplex and ipm, and the other LP-capable backends); profile high; "
    "plus the 1-norm vs 2-norm comparison",
    _lp,
    after=_lp_after,
))


def _coursework_section(name: str) -> Callable[[object], object]:
    def run(out_dir, **options):
        from experiments.coursework.cli import run_suite  # lazy: matplotlib and scikit-learn

        return run_suite(name, out_dir, **options)

    return run


for _name, _description in (
    ("demo-linear", "svmdemo_linear: linear soft-margin SVM on gendata(15, 15), C = 0.1, 1, 10, 100"),
    ("demo-rbf", "svmdemo_rbf: Gaussian-kernel SVM on gendata(15, 15), C = 1, gamma = 0.5, 2, 10"),
    ("demo-compare", "svmdemo_compare: linear, poly and rbf kernels x C on gendata(15, 15)"),
    ("seeds", "every worked example of the lecture notes (001, 002) against its published numbers, pass/fail"),
    ("choose-C", "k-fold cross-validated grid search over C and gamma, heat map, regularization path"),
    ("perceptron-vs-svm", "the perceptron's line beside the maximum-margin line, with both margins"),
    ("family", "the SVM family (nu-SVC, one-class, epsilon-SVR, nu-SVR): every primal and dual in both layers, "
               "P* = D*, the multipliers' meaning (rho, eps, alpha_i alpha*_i = 0), nu's bounds on the fractions"),
):
    register(Suite(_name, _description, lambda seed: [], section=_coursework_section(_name)))
