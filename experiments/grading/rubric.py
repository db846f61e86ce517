"""The rubric: the tolerance every condition is judged to, and each condition's weight in the credit.

A JSON or TOML file, every key optional:

    tolerance = 1e-3          # the bar of every residual (each on its own scale, solvers.checks)
    points = 10               # the credit of an answer where every condition holds
    [weights]                 # a condition's share of the points (solvers.grading.CONDITIONS); 0 leaves it out
    "duality gap" = 2
    optimum = 3

Why 1e-3 by default: the notes print answers to 4 decimals. Rounding w and b to 4 decimals moves each
decision value f(x_i) = w'x_i + b by up to 5e-5 (sum_k |x_ik| + 1), 9.3e-4 margin units on Example 5.1's
data (largest |x_i1| + |x_i2| = 17.7), and the printed answer's worst residual there is 2.8e-4. An exact
answer passes at 1e-6 (the `high` profile's bar): set tolerance = 1e-6 to ask for one.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from formulations.errors import SVMInputError

#: solvers.grading.CONDITIONS (named here too so that --help and a rubric's check import no solver)
CONDITIONS = ("primal feasibility", "dual feasibility", "balance", "stationarity", "complementarity",
              "duality gap", "slacks", "objective", "optimum", "closing checks")
DEFAULT_TOLERANCE = 1e-3  # solvers.grading.HAND_ROUNDED (named here too: no solver imported for a rubric)
DEFAULT_WEIGHTS = {name: 1.0 for name in CONDITIONS} | {"optimum": 2.0}


@dataclass(frozen=True)
class Rubric:
    tolerance: float = DEFAULT_TOLERANCE
    points: float = 10.0
    weights: dict = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    source: str = "default"

    def credit(self, conditions) -> float:
        """points x (the weight of the conditions that hold) / (the weight of the conditions judged)."""
        judged = [(self.weights.get(c.name, 1.0), c.holds) for c in conditions]
        total = sum(weight for weight, _ in judged)
        return self.points * sum(weight for weight, holds in judged if holds) / total if total > 0 else 0.0


def load_rubric(path: str | None) -> Rubric:
    """The rubric of a JSON or TOML file (None: the defaults), or an SVMInputError naming the bad key."""
    if path is None:
        return Rubric()
    p = Path(path)
    if not p.is_file():
        raise SVMInputError(f"--rubric {path}: no such file")
    try:
        raw = tomllib.loads(p.read_text()) if p.suffix.lower() == ".toml" else json.loads(p.read_text())
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SVMInputError(f"--rubric {p.name}: not valid {p.suffix.lstrip('.').upper() or 'JSON'} "
                            f"({' '.join(str(exc).split())})") from None
    if not isinstance(raw, dict):
        raise SVMInputError(f"--rubric {p.name}: the rubric is one table of keys (tolerance, points, weights)")
    unknown = sorted(set(raw) - {"tolerance", "points", "weights"})
    if unknown:
        raise SVMInputError(f"--rubric {p.name}: unknown key {unknown[0]!r}; keys: tolerance, points, weights")
    tolerance = _number(p.name, "tolerance", raw.get("tolerance", DEFAULT_TOLERANCE), upper=1.0)
    points = _number(p.name, "points", raw.get("points", 10.0))
    weights = dict(DEFAULT_WEIGHTS)
    given = raw.get("weights", {})
    if not isinstance(given, dict):
        raise SVMInputError(f"--rubric {p.name}: weights must be a table of condition = weight")
    for name, weight in given.items():
        if name not in CONDITIONS:
            raise SVMInputError(f"--rubric {p.name}: unknown condition {name!r} in weights; "
                                f"conditions: {', '.join(CONDITIONS)}")
        weights[name] = _number(p.name, f"weights.{name}", weight, allow_zero=True)
    return Rubric(tolerance, points, weights, p.name)


def _number(file: str, key: str, value, upper: float = math.inf, allow_zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (value >= 0 if allow_zero else value > 0) or value >= upper:
        bound = f"in (0, {upper:g})" if math.isfinite(upper) else (">= 0" if allow_zero else "> 0")
        raise SVMInputError(f"--rubric {file}: {key} must be a number {bound}, got {value!r}")
    return float(value)
