"""solvers/ keeps its rooms: the core at the entrance, adapters/, bridge/ and algorithms/ below it,
no shim modules at the old paths, and no module reaching into another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

SOLVERS = Path(__file__).resolve().parents[1] / "solvers"
CORE = {"__init__", "api", "closing", "checks", "grading", "reference", "solution", "registry", "backends", "profiles",
        "errors", "lp", "blas", "lapack_inplace", "methods", "deadline", "isolation", "kernel_audit", "family", "family_proof",
        "family_smo", "family_units"}
ROOMS = {"adapters": {"__init__", "base", "cvxpy_layer", "pyomo_highs", "pyomo_ipopt", "pyomo_qp"},
         "bridge": {"__init__", "pyomo_standard_form", "pyomo_quadratic"},
         "algorithms": {"__init__", "direct", "working_set/", "primal_working_set", "kernel_rows", "compiled_gram", "background_gram", "smo", "smo_dual", "smo_gram"},
         "algorithms/working_set": {"__init__", "optimality", "subproblems", "polish", "pair_steps", "start",
                                    "selection", "proof", "state", "loop", "solver"}}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def _contents(folder: Path) -> set[str]:
    """The modules of a folder, and its packages as "name/"."""
    return {p.stem for p in folder.glob("*.py")} | {f"{p.parent.name}/" for p in folder.glob("*/__init__.py")}


def test_each_module_is_in_its_room():
    assert _contents(SOLVERS) == CORE | {f"{room}/" for room in ROOMS if "/" not in room}
    for room, modules in ROOMS.items():
        assert _contents(SOLVERS / room) == modules, room


def test_no_module_imports_a_private_name_of_another():
    offenders = [f"{path.relative_to(SOLVERS.parent)}: from {module} import {name}"
                 for path in SOLVERS.rglob("*.py") for module, names in _imports(path)
                 if module.split(".")[0] in ("solvers", "formulations")
                 for name in names if name.startswith("_") and not name.startswith("__")]
    assert not offenders, "\n".join(offenders)


def test_the_rooms_below_the_core_do_not_import_the_entry_point():
    for room in ("adapters", "bridge", "algorithms"):
        for path in (SOLVERS / room).rglob("*.py"):
            modules = {module for module, _ in _imports(path)}
            assert "solvers.api" not in modules, f"{path.name} imports solvers.api"
