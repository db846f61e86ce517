"""``python -m experiments.exercise --kind hard|soft|dual|kernel --seed S``: an exercise in the notes' style,
and its solution key kept apart.

    hard    Example 5.1: the hard-margin primal on two separable sets A (+1) and B (-1) in [0, 10]^2
    dual    Example 5.2: the same kind of data, solved through the dual (6): hand in alpha
    soft    Exercise 5.4: one point of B among A (not separable), the soft margin with C = 10: w, b and xi
    kernel  Exercise 5.5: A inside the unit disc, B around it in [-2, 2]^2, Gaussian kernel gamma = 1, C = 1

The student's folder (--out) gets data.csv (x1, x2, y), problem.json (formulation, C, kernel: what
python -m experiments.grade reads) and exercise.md (the statement, A and B printed as the notes print them, to
4 decimals). The key's folder (--key, default OUT-key) gets key.json (an answer file: it grades as optimal) and
key.md. The same kind and seed give the same files, bit for bit: numpy's Generator seeded by S, the data rounded
to 4 decimals, the key rounded to 12 significant digits (far below any tolerance, above a solver's last-bit noise).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from experiments.grading.rubric import DEFAULT_TOLERANCE
from experiments.runner.options import UsageError  # the command lines' one bad-input error

KINDS = {
    "hard": {"formulation": "hard_primal", "C": None, "kernel": None, "per_class": 10,
             "task": "Find the separating hyperplane with maximum margin for the data set (hard-margin primal): "
                     "hand in w and b."},
    "dual": {"formulation": "dual", "C": None, "kernel": None, "per_class": 10,
             "task": "Find the separating hyperplane with maximum margin for the data set by solving the dual "
                     "problem: hand in the multipliers alpha (and b)."},
    "soft": {"formulation": "soft_primal", "C": 10.0, "kernel": None, "per_class": 10,
             "task": "Find the separating hyperplane with soft margin for the data set with C = 10: hand in w, b "
                     "and the vector xi of the errors."},
    "kernel": {"formulation": "kernel_dual", "C": 1.0, "kernel": {"name": "rbf", "gamma": 1.0}, "per_class": 10,
               "task": "Find the optimal separating surface for the data set using a Gaussian kernel with "
                       "C = 1 and gamma = 1: hand in alpha and b."},
}
DIGITS = 12  # the key's significant digits


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.exercise",
        description="Write a small SVM exercise in the lecture notes' style (data, problem, statement) and, "
                    "in a separate folder, its solution key. The same kind and seed give the same files.")
    parser.add_argument("--kind", required=True, choices=list(KINDS), help="the kind of exercise")
    parser.add_argument("--seed", required=True, help="an integer >= 0: the same seed, the same exercise")
    parser.add_argument("--out", help="the student's folder (default: exercises/KIND-SEED)")
    parser.add_argument("--key", help="the key's folder (default: OUT-key)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        seed = _seed(args.seed)
        out = Path(args.out) if args.out else Path("exercises") / f"{args.kind}-{seed}"
        key = Path(args.key) if args.key else out.with_name(out.name + "-key")
        for folder in (out, key):
            if folder.exists() and not folder.is_dir():
                raise UsageError(f"{folder}: exists and is not a folder")
        if key.resolve() == out.resolve():
            raise UsageError("--key must differ from --out: the key stays out of the student's copy")
        write(args.kind, seed, out, key)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"exercise in {out}/ (data.csv, problem.json, exercise.md); key in {key}/ (key.json, key.md)")
    return 0


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        raise UsageError(f"--seed: {text!r} is not a whole number") from None
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    return seed


# ------------------------------------------------------------------ the data


def make_data(kind: str, seed: int):
    """(X, y) of the exercise, to 4 decimals: A (+1) first, then B (-1), as the notes stack T = [A; B]."""
    import numpy as np  # deferred with the solver: --help and a bad argument answer at once

    rng = np.random.default_rng([seed, list(KINDS).index(kind)])
    m = KINDS[kind]["per_class"]
    if kind == "kernel":
        A = _ring(rng, m, 0.0, 0.95, 1.0)
        B = _ring(rng, m, 1.15, 2.0, 2.0)
    else:
        phi = rng.uniform(0.3, 1.2)  # the separating line's normal (-sin phi, cos phi), through (5, 5)
        normal = np.array([-math.sin(phi), math.cos(phi)])
        A, B = _sides(rng, normal, m)
        if kind == "soft":  # one point of B among A (Exercise 5.4's (6, 8))
            deep = _sides(rng, normal, 1, gap=1.5)[0]
            B = np.vstack([B, deep])
    X = np.round(np.vstack([A, B]), 4)
    y = np.concatenate([np.ones(len(A)), -np.ones(len(X) - len(A))])
    return X, y


def _sides(rng, normal, m: int, gap: float = 0.5):
    """m points of [0, 10]^2 on each side of the line normal'(x - (5, 5)) = 0, at least `gap` from it."""
    import numpy as np  # deferred: see make_data

    A, B = [], []
    while len(A) < m or len(B) < m:
        x = rng.uniform(0.0, 10.0, size=2)
        s = float(normal @ (x - 5.0))
        if s > gap and len(A) < m:
            A.append(x)
        elif s < -gap and len(B) < m:
            B.append(x)
    return np.array(A), np.array(B)


def _ring(rng, m: int, r_min: float, r_max: float, box: float):
    """m points with r_min <= ||x|| <= r_max inside [-box, box]^2 (uniform, by rejection)."""
    import numpy as np  # deferred: see make_data

    out = []
    while len(out) < m:
        x = rng.uniform(-box, box, size=2)
        if r_min <= float(np.hypot(*x)) <= r_max:
            out.append(x)
    return np.array(out)


# ------------------------------------------------------------------ the files


def write(kind: str, seed: int, out: Path, key: Path) -> None:
    X, y = make_data(kind, seed)
    spec = KINDS[kind]
    problem = {"kind": kind, "seed": seed, "formulation": spec["formulation"]}
    problem.update({k: spec[k] for k in ("C", "kernel") if spec[k] is not None})
    answer = solution_key(spec, X, y)
    out.mkdir(parents=True, exist_ok=True)
    key.mkdir(parents=True, exist_ok=True)
    rows = ["x1,x2,y"] + [f"{a:.4f},{b:.4f},{int(c)}" for (a, b), c in zip(X, y)]
    (out / "data.csv").write_text("\n".join(rows) + "\n")
    (out / "problem.json").write_text(json.dumps(problem, indent=2) + "\n")
    (out / "exercise.md").write_text(statement(kind, seed, spec, X, y))
    (key / "key.json").write_text(json.dumps(answer, indent=2) + "\n")
    (key / "key.md").write_text(key_page(kind, seed, answer))


def solution_key(spec: dict, X, y) -> dict:
    """The optimum by a tight solve (profile high), verified by the project's checks, as an answer file."""
    from solvers.api import solve  # deferred on purpose: --help and a bad argument answer before the solver stack

    sol = solve(spec["formulation"], X, y, layer="cvxpy", backend="clarabel", C=spec["C"], kernel=spec["kernel"],
                profile="high")
    if not sol.is_optimal:
        raise UsageError(f"the key's solve was not verified ({sol.status}: {sol.checks.get('verdict')}); "
                         "try another seed")
    alpha = sol.proved_alpha if sol.proved_alpha is not None else sol.alpha
    answer = {"student": "key", "formulation": spec["formulation"]}
    if spec["formulation"] in ("hard_primal", "soft_primal", "dual"):
        answer["w"] = _rounded(sol.w)
    answer["b"] = _rounded([sol.b])[0]
    if spec["formulation"] == "soft_primal":
        answer["xi"] = _rounded(sol.xi)
    answer["alpha"] = _rounded(alpha)
    answer["objective"] = _rounded([sol.objective])[0]
    return answer


def _rounded(values) -> list[float]:
    """To DIGITS significant digits, exact zeros kept (+0.0: -0.0 would print as a different file)."""
    return [float(f"{float(v):.{DIGITS}g}") + 0.0 for v in values]


def _matrix(rows) -> str:
    return "\n".join("    " + "  ".join(f"{v:8.4f}" for v in row) for row in rows)


def statement(kind: str, seed: int, spec: dict, X, y) -> str:
    A, B = X[y > 0], X[y < 0]
    return (f"# Exercise ({kind}, seed {seed})\n\n{spec['task']}\n\n"
            f"A (label +1, {len(A)} points):\n\n{_matrix(A)}\n\nB (label -1, {len(B)} points):\n\n{_matrix(B)}\n\n"
            "The same points are in data.csv (columns x1, x2, y). Hand in a JSON file such as\n"
            '`{"student": "NAME", "formulation": "' + spec["formulation"] + '", ...}` or a CSV with one field a '
            "line (`w,0.5,-1.2` / `b,0.3`); see docs/grading.md.\n\n"
            f"Give numbers to at least 4 decimals: each condition is graded to {DEFAULT_TOLERANCE:g} on its own scale, "
            "and a w and b rounded to 3 decimals can move a decision value by more than that.\n")


def key_page(kind: str, seed: int, answer: dict) -> str:
    lines = [f"# Key: exercise ({kind}, seed {seed})", ""]
    for name, value in answer.items():
        if isinstance(value, list):
            support = [i + 1 for i, v in enumerate(value) if v != 0] if name == "alpha" else None
            lines.append(f"- {name}: [{', '.join(f'{v:.4f}' for v in value)}]"
                         + (f" (support vectors: points {support})" if support else ""))
        else:
            lines.append(f"- {name}: {value:.4f}" if isinstance(value, float) else f"- {name}: {value}")
    return "\n".join(lines) + "\n"
