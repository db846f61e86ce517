"""The SVM family beyond the C-SVM: one module per member, each with its primal and its dual(s), each declared
as a Pyomo model and as a cvxpy model beside the maths (the notes' notation), and this registry of the members.

A member is one record (`Member`): its module, its task (classification, novelty, regression), its parameters
(C, nu, epsilon), its primal's and duals' names and its scikit-learn peer. A formulation's name is
"<member>_<kind>" (formulations.family.names). The modules import Pyomo and cvxpy, so they are loaded on first
use: importing this package, or its names, stays cheap.

What a member's module provides (what solvers.family reads; a new member is its record here and its module):

    build_<kind>_pyomo(data, y, params), build_<kind>_cvxpy(data, y, params)
                    data: X for the primal and a linear dual, K for a kernel dual; y: -1/+1, targets or None;
                    params: the member's parameters by name. Variables and rows by the family's names (alpha,
                    alpha_star, w, b, rho, eps; margin, upper, lower: the primal rows whose multipliers are alpha
                    and alpha*; balance, total: the dual's equalities)
    conditions(values, data, params, kind) -> common.Conditions
                    the point judged by the member's optimality conditions (objectives, residuals each on its own
                    scale, f, coef, b, w, what the multipliers mean); data a common.FamilyData
    box_qp(data, params) -> common.BoxQP
                    its dual as min 1/2 a'Qa + p'a, A a = c, 0 <= a <= U, for the proof of the optimum
    DEGENERATE      (optional) what a proved optimum with w* = 0 means, said in its row
    proof_start(values) -> a
                    (optional) the multipliers the proof starts from, where the point has an equivalent one
                    nearer the optimum's active set (epsilon-SVR: alpha_i alpha*_i = 0)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from formulations.errors import SVMInputError
from formulations.family.names import (CLASSIFICATION, CRAMMER_SINGER, EPS_SVR, KERNEL_DUAL, LINEAR_DUAL, MULTICLASS,
                                       NOVELTY, NU_SVC, NU_SVR, ONE_CLASS, PRIMAL, REGRESSION, SQUARED_HINGE)


@dataclass(frozen=True)
class Member:
    """One member of the family: where its models are built and what it takes."""

    name: str
    module: str  # formulations.family.<module>
    task: str  # CLASSIFICATION, MULTICLASS, NOVELTY or REGRESSION: how y is checked
    parameters: tuple[str, ...]  # the ones it takes, in solve()'s names: "C", "nu", "epsilon", "intercept", ...
    kinds: tuple[str, ...]  # PRIMAL, LINEAR_DUAL, KERNEL_DUAL: the formulations it has
    peer: str  # scikit-learn's class of the same problem
    source: str  # where the formulation is from
    weighted: bool = False  # takes one weight per point (LIBSVM's W_i: each point's bound in the dual scaled)

    @property
    def primal(self) -> str:
        return f"{self.name}_{PRIMAL}"

    @property
    def duals(self) -> tuple[str, ...]:
        return tuple(f"{self.name}_{kind}" for kind in self.kinds if kind != PRIMAL)

    @property
    def formulations(self) -> tuple[str, ...]:
        return tuple(f"{self.name}_{kind}" for kind in self.kinds)


MEMBERS: dict[str, Member] = {
    NU_SVC: Member(NU_SVC, "nu_svc", CLASSIFICATION, ("nu",), (PRIMAL, LINEAR_DUAL, KERNEL_DUAL), "NuSVC",
                   "Scholkopf, Smola, Williamson, Bartlett 2000; Chang and Lin 2001", weighted=True),
    ONE_CLASS: Member(ONE_CLASS, "one_class", NOVELTY, ("nu",), (PRIMAL, KERNEL_DUAL), "OneClassSVM",
                      "Scholkopf, Platt, Shawe-Taylor, Smola, Williamson 2001", weighted=True),
    EPS_SVR: Member(EPS_SVR, "eps_svr", REGRESSION, ("C", "epsilon"), (PRIMAL, KERNEL_DUAL), "SVR",
                    "Vapnik 1995; Smola and Scholkopf 2004", weighted=True),
    NU_SVR: Member(NU_SVR, "nu_svr", REGRESSION, ("C", "nu"), (PRIMAL, KERNEL_DUAL), "NuSVR",
                   "Scholkopf, Smola, Williamson, Bartlett 2000; Chang and Lin 2002", weighted=True),
    SQUARED_HINGE: Member(SQUARED_HINGE, "squared_hinge", CLASSIFICATION, ("C", "intercept", "intercept_scaling"),
                          (PRIMAL, LINEAR_DUAL), "LinearSVC(loss='squared_hinge')",
                          "Mangasarian and Musicant 2001; Hsieh, Chang, Lin, Keerthi and Sundararajan 2008"),
    CRAMMER_SINGER: Member(CRAMMER_SINGER, "crammer_singer", MULTICLASS, ("C", "intercept", "intercept_scaling"),
                           (PRIMAL, LINEAR_DUAL), "LinearSVC(multi_class='crammer_singer')",
                           "Crammer and Singer 2001; Keerthi, Sundararajan, Chang, Hsieh and Lin 2008"),
}

KINDS = (PRIMAL, LINEAR_DUAL, KERNEL_DUAL)


def formulations() -> dict[str, tuple[Member, str]]:
    """Every family formulation: name -> (its member, its kind)."""
    return {f"{m.name}_{kind}": (m, kind) for m in MEMBERS.values() for kind in m.kinds}


def member_of(formulation: str) -> tuple[Member, str]:
    """(member, kind) of a family formulation, or an SVMInputError naming the known ones."""
    known = formulations()
    if formulation not in known:
        raise SVMInputError(f"unknown family formulation {formulation!r}; choose one of {list(known)}")
    return known[formulation]


def module(member: Member):
    """The member's module (imports Pyomo and cvxpy on first use)."""
    return importlib.import_module(f"formulations.family.{member.module}")


def builder(formulation: str, layer: str):
    """The function that builds `formulation` in `layer` ("pyomo" or "cvxpy")."""
    if layer not in ("pyomo", "cvxpy"):
        raise SVMInputError(f"unknown layer {layer!r}; choose 'pyomo' or 'cvxpy'")
    member, kind = member_of(formulation)
    return getattr(module(member), f"build_{kind}_{layer}")


__all__ = ["MEMBERS", "KINDS", "Member", "builder", "formulations", "member_of", "module",
           "CLASSIFICATION", "MULTICLASS", "NOVELTY", "REGRESSION", "PRIMAL", "LINEAR_DUAL", "KERNEL_DUAL"]
