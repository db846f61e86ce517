r"""The family's members solved in well-conditioned units, their point mapped back to the user's.

Interior-point and first-order solvers stop on absolute tolerances, so a member's dual whose K is 1e-6 (features in
thousandths) or whose K is 1e8 with its information in differences of 1 (features moved by 1e4) is not the problem
they were tuned for. Each member is the same problem in other units up to a known rescaling:

    features     x' = (x - m) / s: K' = c K with c = 1/s^2 (a kernel dual: K' = c K for any K)
    targets      y' = t (y - y0), epsilon' = t epsilon (the regressions)
    nu-SVC, one-class   alpha' = alpha: the constraints do not involve K, the objective scales by c;
                        b' = c b, rho' = c rho, w' = w / s
    eps-, nu-SVR        C' = C t / c, alpha' = (t / c) alpha: the dual scales by t^2 / c; b' = t (b - y0), eps' = t eps,
                        w' = t s w

m (centering) only for the members with a free b on a linear kernel or their primals (b absorbs w'm; in the dual
the m terms cancel on sum_i y_i alpha_i = 0 or sum_i (alpha_i - alpha*_i) = 0) and only where X sits far from the
origin (formulations.scaling.far_from_origin). Not the one-class SVM: it separates the data from the origin, so
the origin is part of its problem (moving the data moves its boundary and changes alpha). c and t are powers of 2,
so K' and y' are exact scalings of the user's.

The point read back is mapped to the user's units (`to_user`) and the member's closing checks then judge it there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from formulations import kernels, scaling
from formulations.data_matrix import column_moments
from formulations.family import REGRESSION
from formulations.family.names import EPS_SVR, KERNEL_DUAL, NU_SVC, NU_SVR, ONE_CLASS

#: the members whose b is free (the one-class SVM's origin is part of its problem: module docstring)
TRANSLATION_INVARIANT = (NU_SVC, EPS_SVR, NU_SVR)
#: the members this module rescales (the LIBLINEAR members keep their own units)
RESCALED = (*TRANSLATION_INVARIANT, ONE_CLASS)
#: features whose largest spread is within this factor of 1 are left in the user's units: a standardized set's is
#: 1, and a solve in other units only changes which of the solvers' absolute tolerances bite
WELL_CONDITIONED = 8.0
#: targets whose spread is within this factor of 1 keep their units: moderate target units suit the solvers as they
#: are, and rescaling them moves C by the same factor (docs/family.md)
TARGETS_WELL_CONDITIONED = 1024.0


@dataclass(frozen=True)
class Units:
    """x' = (x - shift) / s with K' = kernel K (kernel = 1/s^2 for the linear features), y' = target (y - y0)."""

    regression: bool
    shift: np.ndarray | None = None
    kernel: float = 1.0
    target: float = 1.0
    target_shift: float = 0.0

    @property
    def feature(self) -> float:
        """s: x' = (x - m) / s."""
        return 1.0 / math.sqrt(self.kernel)

    def params(self, params: dict) -> dict:
        """The member's parameters in the solve's units (C' = C t / c, epsilon' = t epsilon; nu unchanged)."""
        out = dict(params)
        if "C" in out and self.regression:
            out["C"] = out["C"] * self.target / self.kernel
        if "epsilon" in out:
            out["epsilon"] = out["epsilon"] * self.target
        return out

    def targets(self, y):
        """y' = t (y - y0) for the regressions; labels as they are."""
        return self.target * (y - self.target_shift) if self.regression else y

    def describe(self) -> dict:
        """What the row's extras say about the units it was solved in."""
        out = {"kernel_factor": self.kernel}
        if self.shift is not None:
            out["centered"] = self.shift.tolist()
        if self.regression:
            out.update(target_factor=self.target, target_shift=self.target_shift)
        return out


def _power(size: float, base: float) -> float:
    """The power of `base` nearest 1 / size (1 for a size of 0 or not finite)."""
    if not (size > 0 and math.isfinite(size)):
        return 1.0
    return base ** round(-math.log(size, base))


def _near(factor: float, within: float) -> bool:
    return 1.0 / within <= factor <= within


def _column_means(X) -> np.ndarray:
    """The features' means (X's shift where it sits far from the origin)."""
    return np.asarray(X.mean(axis=0), dtype=float).ravel()


def _target_shift(y) -> float:
    """y0: the targets' mean where they sit far from the origin (|mean| > FAR_FROM_ORIGIN std), else 0."""
    mean = float(y.mean())
    return mean if abs(mean) > scaling.FAR_FROM_ORIGIN * float(y.std()) else 0.0


def plan(member, kind: str, X, y, kernel, K) -> Units | None:
    """The units `member`'s `kind` is solved in, or None where the user's are well-conditioned (or the member
    keeps its own). X: the checked data (dense or sparse); kernel: the checked Kernel (None for the linear forms
    and a precomputed K); K: a kernel dual's Gram matrix in the user's units."""
    if member.name not in RESCALED:
        return None
    linear = kind != KERNEL_DUAL or kernel is not None and kernel.name == "linear"
    shift = None
    if linear and member.name in TRANSLATION_INVARIANT and scaling.far_from_origin(X):
        shift = _column_means(X)
    if linear:  # the features' unit: a power of 2 near their largest spread, as standardized data's is 1
        mean, var = column_moments(X)
        # the spread about the origin where the origin is part of the problem (the one-class SVM), else the std
        spread = var if member.name in TRANSLATION_INVARIANT else var + np.asarray(mean) ** 2
        s = 1.0 / _power(float(np.sqrt(np.max(spread, initial=0.0))), 2.0)
        c = 1.0 if _near(s, WELL_CONDITIONED) else 1.0 / s ** 2
    else:  # another kernel's values keep their units: they span the kernel's own range, and scaled to a largest
        # k(x, x) of 1 the small ones can fall below the solvers' absolute tolerances (docs/family.md)
        c = 1.0
    t, y0 = 1.0, 0.0
    if member.task == REGRESSION:
        y0 = _target_shift(y)
        t = _power(float(np.max(np.abs(y - y0))), 2.0)
        t = 1.0 if _near(t, TARGETS_WELL_CONDITIONED) else t
    if shift is None and c == 1.0 and t == 1.0 and y0 == 0.0:
        return None
    return Units(member.task == REGRESSION, shift, c, t, y0)


def kernel_problem(units: Units, K: np.ndarray, X, kernel, y, params: dict):
    """(K', y', params') of a kernel dual in the solve's units: K' = c K, or c (X - m)(X - m)' when centered."""
    if units.shift is not None:
        K = kernels.gram(kernel, X - units.shift)
    return units.kernel * K, units.targets(y), units.params(params)


def linear_problem(units: Units, X, y, params: dict):
    """(X', y', params') of a primal or linear dual in the solve's units: X' = (X - m) / s."""
    X = X if units.shift is None else X - units.shift
    return X * (1.0 / units.feature), units.targets(y), units.params(params)


def to_user(units: Units, values: dict) -> dict:
    """The point read back in the solve's units (solvers.family.read_model), in the user's: alpha, alpha*, w, b,
    rho, eps and the solver's multipliers of the dual's equalities (module docstring)."""
    c, t, s = units.kernel, units.target, units.feature
    k = t if units.regression else c  # f' = k (f - y0)
    out = dict(values)
    if units.regression:
        for name in ("alpha", "alpha_star"):
            if name in out:
                out[name] = np.asarray(out[name], dtype=float) * (c / t)
    if "w" in out:
        out["w"] = np.asarray(out["w"], dtype=float) / (s * k)
    if "b" in out:
        out["b"] = float(out["b"]) / k + units.target_shift
        if units.shift is not None:
            out["b"] -= float(out["w"] @ units.shift)
    if units.shift is not None:  # the solver's b-multiplier is b in the centered units: not the user's b
        out.pop("solver_balance", None)
    for name in ("rho", "eps", "solver_balance", "solver_total"):
        if name in out:
            out[name] = float(out[name]) / k
    return out


def objective_to_user(units: Units, objective: float) -> float:
    """The solver's objective in the user's units: the nu members' scales by c, the regressions' by t^2 / c."""
    return objective / (units.target ** 2 / units.kernel if units.regression else units.kernel)


def kernel_part_error(difference: np.ndarray, free_b: bool) -> float:
    """max_i |d_i|, d the difference of two points' kernel parts f - b on the training points; for a member with a
    free b, up to the constant that b absorbs: far from the origin a w off by dw moves every f - b by about dw'm,
    which the recovered b takes back, so only the spread of d is an error in f."""
    d = np.asarray(difference, dtype=float)
    if not d.size:
        return 0.0
    return 0.5 * float(d.max() - d.min()) if free_b else float(np.max(np.abs(d)))


def proof_data(data):
    """The data a member with a free b proves its optimum on: X and the targets centered where they sit far from
    the origin (the same alpha is optimal: module docstring). In the user's units K's entries there are 1e8 at a
    move of 1e4, and the proof's rounding allowance, relative to them, lets a wrong active set pass or a right one
    fail. A kernel's K (data.X None) is as given. The gap bound measured on it bounds f - b up to a constant."""
    X, y = data.X, data.y
    if X is not None and scaling.far_from_origin(X):
        X = X - _column_means(X)
    labels = y is None or np.all(np.isin(y, (-1.0, 1.0)))
    y0 = 0.0 if labels else _target_shift(y)
    if y0:
        y = y - y0
    if X is data.X and y is data.y:
        return data
    return replace(data, X=X, y=y, K=data.K if X is data.X else None)  # a linear K: X X', formed from X again


def b_compensated(multipliers: dict, difference: np.ndarray) -> dict:
    """The recovered multipliers ("b", "rho - b", "b + eps", ...) with b moved by the constant the kernel parts
    differ by (the middle of `difference`'s range, kernel_part_error's): that constant and b's error are one."""
    d = np.asarray(difference, dtype=float)
    shift = 0.5 * float(d.max() + d.min()) if d.size else 0.0
    return {name: value + _b_sign(name) * shift for name, value in multipliers.items()}


def _b_sign(name: str) -> float:
    """b's coefficient in a multiplier named as the members name them ("rho - b": -1, "b + eps": +1, "b": +1)."""
    terms = name.replace(" ", "")
    if terms.startswith("b") or "+b" in terms:
        return 1.0
    return -1.0 if "-b" in terms else 0.0
