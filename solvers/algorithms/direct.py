r"""The solver alone: each formulation's QP assembled from the data as matrices, no modeling layer.

    min  1/2 x' P x + q' x     s.t.  A x = b,  G x <= h,  lb <= x <= ub

The same problems the Pyomo and cvxpy models describe, written straight into
sparse matrices (numpy/scipy, O(nnz)), so that the benchmark can put a number
on what the modeling layers cost (experiments.bench):

- ``soft_primal``   x = (w, b, xi):  P = diag(I_d, 0, 0),  q = (0, 0, C 1),
                    G = -[Y X, y, I],  h = -1,  xi >= 0          [G rows: margin, multipliers alpha]
                    (restricted to a working set, ``inside=(X_L, y_L)``: q = (-C s, -C t, C 1)
                    and the constant C |L|, formulations.soft_primal)
- ``hard_primal``   x = (w, b):      P = diag(I_d, 0),  G = -[Y X, y],  h = -1
- ``dual``          x = (alpha, w):  min -1'alpha + 1/2||w||^2,
                    A = [[-(Y X)', I_d], [y', 0]],  b = 0,  0 <= alpha <= C
                    (the lifted dual: l + d variables, no l x l matrix)
- ``kernel_dual``   dense:  x = alpha, P = Y K Y (handed over as a dense array),
                    q = -1, A = y', 0 <= alpha <= C;
                    factor: x = (alpha, v), K = L L', A = [[-L'Y, I_r], [y', 0]],
                    P = diag(0, I_r).

The dual formulations are maximisations; the returned objective is in the
formulation's own sense (D(alpha), not -D). The multipliers come back in the
project's convention (alpha_i >= 0 of the margin rows; b = multiplier of the
balance row, d D*/d rhs), and the point goes through the same recovery and
checks as a layer's (solvers.api, solvers.checks).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from formulations import kernel_dual, penalty, soft_primal, validation
from formulations.data_matrix import as_data
from formulations.model import DUAL, HARD_PRIMAL, KERNEL_DUAL, SOFT_PRIMAL, lifted_rows, signed
from solvers import isolation
from solvers.solution import ERROR, Solution
from solvers.adapters.pyomo_ipopt import ipopt_status, solve_qp_with_ipopt
from solvers.adapters.pyomo_qp import (has_point, iterations_of, point_status, qpsolvers_status, solve_standard_qp,
                                      solver_message)
from solvers.backends import PYOMO_IPOPT_BRIDGE, RECORDS, ranked
from solvers.bridge.pyomo_standard_form import StandardQP
from solvers.closing import answered, close, resolve_C, unanswered
from solvers.deadline import Deadline
from solvers.profiles import get_profile, native_options
from solvers.registry import check_time_limit

# Backends that can take the matrices directly (their records say `direct`): through qpsolvers,
# or Ipopt through the project's cyipopt bridge.
DIRECT_BACKENDS = tuple(name for name in ranked("cvxpy") if RECORDS[name].direct)


@dataclass
class Assembled:
    """A formulation's QP as matrices, and where its parts sit in x and in the rows."""

    qp: StandardQP
    formulation: str
    sense: int  # +1 the formulation minimises, -1 it maximises (qp holds the minimisation form)
    n: int
    d: int
    r: int = 0  # rank of the kernel factor (form "factor")
    kernel_form: str = ""


def standard_qp(P, q, A, b, G, h, lb, ub, sense) -> StandardQP:
    """A StandardQP from matrices, with no model behind its columns (solvers.adapters.pyomo_qp.solve_standard_qp
    takes it to any qpsolvers backend)."""
    n = len(q)
    empty = sp.csc_matrix((0, n))
    return StandardQP(
        P=P, q=np.asarray(q, dtype=float), c0=0.0,
        A=sp.csc_matrix(A) if A is not None else empty, b=np.zeros(0) if b is None else np.asarray(b, dtype=float),
        G=sp.csc_matrix(G) if G is not None else empty, h=np.zeros(0) if h is None else np.asarray(h, dtype=float),
        lb=np.asarray(lb, dtype=float), ub=np.asarray(ub, dtype=float),
        columns=[None] * n, sense=sense, eq_rows=[], ineq_rows=[],  # no model behind the columns
    )


def _lifted_dual(F: np.ndarray, y: np.ndarray, C: float) -> StandardQP:
    """min -1'alpha + 1/2 ||v||^2  s.t.  v = F'(y * alpha),  y'alpha = 0,  0 <= alpha <= C.

    x = (alpha, v): F = X gives the dual (v = w), F = L (K = L L') the kernel dual's factor form.
    """
    n, r = F.shape
    P = sp.diags(np.r_[np.zeros(n), np.ones(r)], format="csc")
    A = sp.vstack([
        lifted_rows(y, F),
        sp.hstack([sp.csr_matrix(y[None, :]), sp.csr_matrix((1, r))]),
    ], format="csc")
    lb = np.r_[np.zeros(n), np.full(r, -np.inf)]
    ub = np.r_[penalty.upper_bounds(C, n), np.full(r, np.inf)]
    return standard_qp(P, np.r_[-np.ones(n), np.zeros(r)], A, np.zeros(r + 1), None, None, lb, ub, -1)


def assemble(formulation: str, X=None, y=None, C: float = math.inf, K=None, L=None, kernel_form: str = "dense",
             inside=None) -> Assembled:
    """The QP of `formulation` as matrices (data already validated: y in {-1, +1}).

    inside: the soft primal's points held inside the margin (formulations.soft_primal).
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    if formulation in (HARD_PRIMAL, SOFT_PRIMAL, DUAL):
        X = as_data(X)  # a sparse X stays sparse: its rows enter G and A as they are
        d = X.shape[1]
    if formulation in (HARD_PRIMAL, SOFT_PRIMAL):
        YX = sp.csr_matrix(signed(y, X))
    if formulation == SOFT_PRIMAL:
        P = sp.diags(np.r_[np.ones(d), np.zeros(1 + n)], format="csc")
        s, t, constant = soft_primal.held_terms(inside, d, C)  # the held points' linear term
        q = np.r_[-s, -t, penalty.upper_bounds(C, n)]
        G = -sp.hstack([YX, sp.csr_matrix(y[:, None]), sp.identity(n, format="csr")], format="csc")
        lb = np.r_[np.full(d + 1, -np.inf), np.zeros(n)]
        qp = standard_qp(P, q, None, None, G, -np.ones(n), lb, np.full(d + 1 + n, np.inf), 1)
        qp.c0 = constant
        return Assembled(qp, formulation, 1, n, d)
    if formulation == HARD_PRIMAL:
        P = sp.diags(np.r_[np.ones(d), 0.0], format="csc")
        G = -sp.hstack([YX, sp.csr_matrix(y[:, None])], format="csc")
        return Assembled(standard_qp(P, np.zeros(d + 1), None, None, G, -np.ones(n), np.full(d + 1, -np.inf),
                             np.full(d + 1, np.inf), 1), formulation, 1, n, d)
    if formulation == DUAL:
        return Assembled(_lifted_dual(X, y, C), formulation, -1, n, d)
    if formulation == KERNEL_DUAL:
        if kernel_form == "dense":
            K = np.asarray(K, dtype=float)
            P = kernel_dual.dual_matrix(K, y)  # dense on purpose: the matrix is dense
            qp = standard_qp(P, -np.ones(n), sp.csr_matrix(y[None, :]), np.zeros(1), None, None,
                     np.zeros(n), penalty.upper_bounds(C, n), -1)
            # All dense: qpsolvers then picks PIQP's and ProxQP's dense backends (a sparse A next to
            # the dense P would make PIQP take its sparse backend, many times slower).
            qp.P, qp.A = P, y[None, :].copy()
            return Assembled(qp, formulation, -1, n, 0, kernel_form="dense")
        if kernel_form == "factor":
            # A given L is used as it is: its residual against K is the caller's (experiments.bench).
            L = kernel_dual.factor_of(K).L if L is None else np.asarray(L, dtype=float)
            return Assembled(_lifted_dual(L, y, C), formulation, -1, n, 0, r=L.shape[1], kernel_form="factor")
        raise ValueError(f"unknown kernel_form {kernel_form!r}; choose 'dense' or 'factor'")
    raise ValueError(f"unknown formulation {formulation!r}")


@dataclass
class DirectResult:
    status: str
    raw_status: str
    x: np.ndarray | None
    eq_mult: np.ndarray | None  # qpsolvers' y: Lagrangian f + y'(Ax - b) + z'(Gx - h)
    ineq_mult: np.ndarray | None
    objective: float  # in the formulation's own sense
    solve_s: float
    iterations: int | None
    message: str = ""


def solve_assembled(asm: Assembled, backend: str, options: dict | None = None,
                    time_limit: float | None = None) -> DirectResult:
    """Hand the matrices to the solver (qpsolvers, or cyipopt for Ipopt) and time that call only."""
    record = RECORDS.get(backend)
    if record is None or not record.direct:
        raise ValueError(f"unknown direct backend {backend!r}; choose one of {DIRECT_BACKENDS}")
    options = dict(options or {})
    qp = asm.qp
    message = ""  # what the solver said beside its status (qpsolvers' warnings)
    start = time.perf_counter()
    try:
        if record.pyomo_route == PYOMO_IPOPT_BRIDGE:  # Ipopt: the project's cyipopt bridge
            qp_sparse = StandardQP(**{**qp.__dict__, "P": sp.csc_matrix(qp.P), "A": sp.csc_matrix(qp.A),
                                      "G": sp.csc_matrix(qp.G)})
            x, y_eq, z_in, info, iters = solve_qp_with_ipopt(qp_sparse, record.with_time_limit(options, time_limit))
            elapsed = time.perf_counter() - start
            status, raw = ipopt_status(info)
        else:
            options = record.with_time_limit(options, time_limit)
            sol = solve_standard_qp(qp, record, options)
            elapsed = time.perf_counter() - start
            status, raw = qpsolvers_status(sol)
            x, y_eq, z_in, iters = sol.x, sol.y, sol.z, iterations_of(sol.extras)
            message = solver_message(sol)
    except Exception as exc:  # a crashing solver is a failed row, not a crashed run
        return DirectResult(ERROR, type(exc).__name__, None, None, None, math.nan,
                            time.perf_counter() - start, None, f"{type(exc).__name__}: {exc}")
    point = has_point(x)
    objective = qp.objective(np.asarray(x, dtype=float)) if point else math.nan  # own sense
    return DirectResult(point_status(status, point), str(raw),
                        np.asarray(x, dtype=float) if point else None,
                        None if y_eq is None else np.asarray(y_eq, dtype=float),
                        None if z_in is None else np.asarray(z_in, dtype=float),
                        objective, elapsed, iters, message)


def named_values(asm: Assembled, res: DirectResult) -> dict:
    """The point in the formulations' names (w, b, xi, alpha, b_multiplier), as solvers.api reads a model."""
    out: dict = {}
    if res.x is None:
        return out
    x, n, d = res.x, asm.n, asm.d
    if asm.formulation in (HARD_PRIMAL, SOFT_PRIMAL):
        out["w"], out["b"] = x[:d], float(x[d])
        if asm.formulation == SOFT_PRIMAL:
            out["xi"] = x[d + 1:]
        if res.ineq_mult is not None and len(res.ineq_mult) == n:
            out["alpha"] = res.ineq_mult  # z of -(margin) <= -1: alpha_i >= 0
        return out
    out["alpha"] = x[:n]
    if asm.formulation == DUAL:
        out["w"] = x[n:n + d]
    if res.eq_mult is not None and len(res.eq_mult):
        # Balance is the last equality row; min -D: d(-D*)/d rhs = -y, so d D*/d rhs = y.
        out["b_multiplier"] = float(res.eq_mult[-1])
    return out


def solve(formulation: str, X, y, *, backend: str, C: float | None = None, K=None, L=None,
          kernel_form: str = "dense", profile: str = "default", options: dict | None = None,
          time_limit: float | None = None) -> Solution:
    """Assemble, solve with the solver alone, recover and check: a `Solution` with layer "direct".

    build_s is the assembly from numpy arrays, solve_s the solver call alone. time_limit: seconds from this
    call's start (solvers.deadline), as in solvers.api.solve: the solver is given what remains after the assembly,
    the closing checks' proof stops at it, and the call runs in a process of the solve server (solvers.isolation)
    killed shortly past it, which stops a solver without a time limit of its own (PIQP, ProxQP) too.
    """
    began = time.perf_counter()
    time_limit = validation.check_time_limit(time_limit)
    if K is not None and X is None:
        X = np.zeros((len(y), 0))
        y, labels = validation.check_labels(y)
    else:
        X, y, labels = validation.check_data(X, y)
    C = resolve_C(formulation, C, n=len(y))
    if not isolation.ISOLATE:  # no solve server to kill a backend that cannot stop itself
        check_time_limit("direct", backend, time_limit)
    prof = get_profile(profile)
    deadline = Deadline(time_limit, began=began)  # the user's promise runs from the call's start
    row = dict(formulation=formulation, layer="direct", backend=backend, deadline=deadline,
               extras={"labels": labels.as_dict(), "kernel_form": kernel_form} if formulation == KERNEL_DUAL
               else {"labels": labels.as_dict()})
    work = partial(_solve, X, y, C, K, L, kernel_form, row=row, prof=prof,
                   opts=native_options(backend, prof, options))
    # with a limit, in a process of the solve server killed past it, as solvers.api.solve (PIQP and ProxQP have no
    # time limit of their own: the kill stops them)
    return isolation.run_solve(deadline, work, partial(unanswered, X=X, y=y, C=C, profile=prof, **row))


def _solve(X, y, C, K, L, kernel_form, *, row: dict, prof, opts: dict) -> Solution:
    """solve's assembly, solver call and closing, in the time that remains of row["deadline"]."""
    deadline = row["deadline"]
    isolation.stage("the assembly of the matrices")
    start = time.perf_counter()
    asm = assemble(row["formulation"], X, y, C, K=K, L=L, kernel_form=kernel_form)
    build_s = time.perf_counter() - start
    given = deadline.for_backend()
    isolation.stage(f"the call to {row['backend']} (the solver alone)"
                    + (f", given the {given:.3g} s left" if given is not None else ""))
    res = solve_assembled(asm, row["backend"], opts, given)
    sol = answered(res, profile=prof.name, given=given, build_s=build_s, **row)
    isolation.stage("the closing checks")
    return close(sol, named_values(asm, res), X=X, y=y, C=C, K=K, profile=prof, deadline=deadline)
