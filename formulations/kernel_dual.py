r"""Kernel dual (001 "Nonlinear SVM"; 000 `svm(K, y, C)`; Exercise 5.5).

    max_{alpha}  sum_i alpha_i - 1/2 sum_i sum_j y_i y_j K_ij alpha_i alpha_j
    s.t.         sum_i alpha_i y_i = 0                       [balance, multiplier b]
                 0 <= alpha_i <= C     (or C_i per sample: formulations.penalty)

with the Gram matrix K_ij = k(x_i, x_j) given precomputed (Mercer's condition,
K positive semidefinite, is checked by the caller: formulations.kernels.mercer_check).

Two ways to hand the quadratic form to a solver:

- ``form="dense"``: the matrix Q = Y K Y itself, Y = diag(y). cvxpy:
  ``quad_form(alpha, psd_wrap(Q))`` (cvxpy's own eigenvalue probe is skipped: PSD
  is settled by the project's Mercer check), Q handed over in COO form (`psd_constant`).
  Pyomo: a `QuadraticForm` component (formulations.quadratic_form) that keeps Q as an
  array, so the model is built without a Python object per term and the standard-form
  bridge reads Q directly.
- ``form="factor"``: K ~ L L' (L is n x r, formulations.kernels.factorize), a
  lifted variable v = L' (y * alpha)                           [factor]
  and the objective sum_i alpha_i - 1/2 ||v||^2, which pays when r << n. The rank r
  and the relative residual ||K - L L'||_F / ||K||_F are recorded in the model
  (Pyomo: attributes `factor_rank`, `factor_residual`, `factor_method`; cvxpy:
  `CvxpyModel.info`), and `model_info` collects them for `Solution.extras`.

`choose_form` picks the faster form for a case (dense unless a low-rank factor
is much smaller than n) and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import scipy.sparse

from formulations import penalty
from formulations.kernels import factorize
from formulations.model import (KERNEL_DUAL, CvxpyModel, alpha_bounds, lifted_rows, linear_sum, matrix_rows,
                                new_pyomo_model, pyomo_alpha_bounds, signed)
from formulations.quadratic_form import QuadraticForm

FORMS = ("dense", "factor")

#: choose_form takes the factor when its rank is at most this fraction of n: a factor of rank n/10 is about
#: twice as fast as the dense form, one of rank n/4 already slower (experiments.bench.kernel_forms).
FACTOR_RANK_FRACTION = 0.1


def _check_form(form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"unknown kernel-dual form {form!r}; choose one of {FORMS}")


@dataclass
class _FactorInfo:
    L: np.ndarray
    rank: int
    residual: float
    method: str


def factor_of(K: np.ndarray, L: np.ndarray | None = None) -> _FactorInfo:
    """The factor to use: the given L (its residual measured against K) or a new one."""
    if L is None:
        f = factorize(np.asarray(K, dtype=float))
        return _FactorInfo(f.L, f.rank, f.residual, f.method)
    L = np.asarray(L, dtype=float)
    if L.ndim != 2 or L.shape[0] != K.shape[0]:
        raise ValueError(f"the factor L must have shape (n, r) with n = {K.shape[0]}, got {L.shape}")
    norm_K = np.linalg.norm(K)
    residual = float(np.linalg.norm(K - L @ L.T) / norm_K) if norm_K > 0 else 0.0
    return _FactorInfo(L, L.shape[1], residual, "given")


def dual_matrix(K: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Q = Y K Y (Y = diag(y)), dense as K is."""
    return (y[:, None] * K) * y[None, :]


def psd_constant(Q: np.ndarray):
    """Q as the constant of a cvxpy quad_form: a scipy COO matrix, the form cvxpy's coefficient
    extractor turns every constant P into (cvxpy 1.9), which it then takes as it is; handed the
    dense array, its compile also sorts the n^2 entries. Every entry is listed, in row-major order,
    from index arrays rather than by scipy's scan for the nonzeros (coo_matrix(Q)), which is slower;
    an exact zero stays an explicit entry, which is harmless. The alternatives tried (a cvxpy
    Parameter, a factor form, other canonicalisation backends) are in docs/benchmarks.md.
    """
    n = Q.shape[0]
    index = np.arange(n, dtype=np.int32)
    return scipy.sparse.coo_matrix((np.ravel(Q), (np.repeat(index, n), np.tile(index, n))), shape=Q.shape)


def build_pyomo(
    K: np.ndarray, y: np.ndarray, C: float, form: str = "dense", L: np.ndarray | None = None
) -> pyo.ConcreteModel:
    """The kernel dual as a Pyomo model (maximise; components alpha, balance, obj,
    and for form="factor" also v, factor)."""
    _check_form(form)
    y = np.asarray(y, dtype=float)
    n = len(y)
    m = new_pyomo_model(KERNEL_DUAL, n)
    m.C = penalty.as_float(C)
    m.form = form
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(C))
    m.balance = matrix_rows(y[None, :], m.alpha, lower=0.0, upper=0.0)  # one row: m.balance[0]
    if form == "dense":
        # alpha' (Y K Y) alpha, kept as the matrix (no expression per term).
        m.quad = QuadraticForm(dual_matrix(K, y), m.alpha)
        quad = m.quad
    else:
        f = factor_of(K, L)
        m.factor_rank, m.factor_residual, m.factor_method = f.rank, f.residual, f.method
        m.R = pyo.RangeSet(0, f.rank - 1)
        m.v = pyo.Var(m.R)
        # Rows v_k - sum_i L_ik y_i alpha_i = 0, as one r x (n + r) matrix.
        m.factor = matrix_rows(lifted_rows(y, f.L), [*m.alpha.values(), *m.v.values()], lower=0.0, upper=0.0)
        quad = pyo.quicksum(m.v[k] ** 2 for k in m.R)
    m.obj = pyo.Objective(expr=linear_sum(1.0, m.alpha) - 0.5 * quad, sense=pyo.maximize)
    return m


def build_cvxpy(
    K: np.ndarray, y: np.ndarray, C: float, form: str = "dense", L: np.ndarray | None = None
) -> CvxpyModel:
    """The kernel dual as a cvxpy problem (variables alpha (and v); constraints
    balance (and factor)); `info` holds the form and, for a factor, its rank and residual."""
    _check_form(form)
    y = np.asarray(y, dtype=float)
    n = len(y)
    alpha = cp.Variable(n, name="alpha", bounds=alpha_bounds(C))
    balance = y @ alpha == 0
    constraints = [balance]
    variables = {"alpha": alpha}
    named = {"balance": balance}
    info: dict = {"form": form}
    if form == "dense":
        quad = cp.quad_form(alpha, cp.psd_wrap(psd_constant(dual_matrix(K, y))))
    else:
        f = factor_of(K, L)
        info.update(factor_rank=f.rank, factor_residual=f.residual, factor_method=f.method)
        v = cp.Variable(f.rank, name="v")
        factor = v == signed(y, f.L).T @ alpha  # v = L'(y * alpha)
        constraints.append(factor)
        variables["v"] = v
        named["factor"] = factor
        quad = cp.sum_squares(v)
    problem = cp.Problem(cp.Maximize(cp.sum(alpha) - 0.5 * quad), constraints)
    return CvxpyModel(KERNEL_DUAL, problem, variables, named, info=info)


def build_block_pyomo(Q: np.ndarray, p: np.ndarray, y: np.ndarray, rhs: float, C) -> pyo.ConcreteModel:
    """One block of the kernel dual, the others fixed (the working set's subproblem,
    solvers.algorithms.working_set), as a Pyomo model:

        min  1/2 alpha' Q alpha + p' alpha    s.t.  y' alpha = rhs,  0 <= alpha <= C

    Q: the block's Y K Y (in whatever scale the caller solves it), p: the gradient's part from the fixed
    points, rhs: the balance they leave. The components are build_pyomo's: alpha, balance, quad, obj."""
    m = new_pyomo_model(KERNEL_DUAL, len(p))
    m.alpha = pyo.Var(m.I, bounds=pyomo_alpha_bounds(C))
    m.balance = matrix_rows(y[None, :], m.alpha, lower=rhs, upper=rhs)  # one row, as build_pyomo's
    m.quad = QuadraticForm(Q, m.alpha)
    m.obj = pyo.Objective(expr=linear_sum(p, m.alpha) + 0.5 * m.quad)
    return m


def build_block_cvxpy(Q: np.ndarray, p: np.ndarray, y: np.ndarray, rhs: float, C) -> CvxpyModel:
    """build_block_pyomo's block as a cvxpy problem (variable alpha, constraint balance, as build_cvxpy's).

    0 <= alpha <= C are bounds, which PIQP and ProxQP take natively (faster than two rows of constraints)."""
    alpha = cp.Variable(len(p), name="alpha", bounds=alpha_bounds(C))
    balance = y @ alpha == rhs
    objective = 0.5 * cp.quad_form(alpha, cp.psd_wrap(psd_constant(Q))) + p @ alpha
    problem = cp.Problem(cp.Minimize(objective), [balance])
    return CvxpyModel(KERNEL_DUAL, problem, {"alpha": alpha}, {"balance": balance}, info={"form": "dense"})


def model_info(model) -> dict:
    """{"kernel_form": form, and for a factor "factor_rank", "factor_residual"
    (||K - L L'||_F / ||K||_F), "factor_method"}, from either layer's model."""
    source = model.info if isinstance(model, CvxpyModel) else vars(model)
    info = {"kernel_form": source.get("form")}
    info.update((key, source[key]) for key in ("factor_rank", "factor_residual", "factor_method") if key in source)
    return info


# --------------------------------------------------------------------------- form choice


@dataclass
class FormChoice:
    """Which form `choose_form` picked, why, and the factor it found (if any)."""

    form: str
    reason: str
    rank: int | None = None  # rank of the factor found, None when the search stopped at the cap
    residual: float | None = None
    L: np.ndarray | None = None

    def as_dict(self) -> dict:
        return {"kernel_form": self.form, "kernel_form_reason": self.reason,
                "auto_factor_rank": self.rank, "auto_factor_residual": self.residual}


def choose_form(K: np.ndarray, rtol: float = 1e-10, fraction: float = FACTOR_RANK_FRACTION) -> FormChoice:
    """The faster kernel-dual form for Gram matrix K: "factor" if K has a factor of
    rank r <= fraction * n to relative tolerance rtol, else "dense".

    The search is a pivoted Cholesky capped at fraction * n columns, O(n r^2): it
    never pays for a full factor that would be thrown away. A factor it finds is
    returned (`L`) so the model need not factor K again.
    """
    n = K.shape[0]
    cap = max(1, int(fraction * n))
    if cap >= n:  # tiny problems: both forms are instant; the dense one has no rounding to discuss
        return FormChoice("dense", f"n = {n}: too small for a factor to pay")
    f = factorize(K, rtol=rtol, max_rank=cap + 1)
    if f.rank <= cap:
        return FormChoice(
            "factor",
            f"K has rank {f.rank} <= {fraction:g} n = {cap} (pivoted Cholesky, rtol {rtol:g}); "
            f"the factor form has {f.rank} lifted variables instead of an n x n matrix",
            rank=f.rank, residual=f.residual, L=f.L,
        )
    return FormChoice("dense", f"K has numerical rank > {fraction:g} n = {cap} (pivoted Cholesky, rtol {rtol:g})")
