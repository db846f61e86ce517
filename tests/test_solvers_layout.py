"""solvers/ keeps its rooms: the core at the entrance, adapters/, bridge/ and algorithms/ below it,
no shim modules at the old paths, and no module reaching into another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

SOLVERS = Path(__file__).resolve().parents[1] / "solvers"
CORE = {"__init__", "api", "closing", "checks", "grading", "reference", "solution", "registry", "backends", "profiles",
        "errors", "lp", "blas", "methods", "deadline", "isolation", "kernel_audit"}
ROOMS = {"adapters": {"__init__", "base", "cvxpy_layer", "pyomo_highs", "pyomo_ipopt", "pyomo_qp"},
         "bridge": {"__init__", "pyomo_standard_form", "pyomo_quadratic"},
         "algorithms": {"__init__", "direct", "working_set", "primal_working_set", "kernel_rows", "smo", "smo_dual", "smo_gram"}}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def test_each_module_is_in_its_room():
    assert {p.stem for p in SOLVERS.glob("*.py")} == CORE
    for room, modules in ROOMS.items():
        assert {p.stem for p in (SOLVERS / room).glob("*.py")} == modules, room


def test_no_module_imports_a_private_name_of_another():
    offenders = [f"{path.relative_to(SOLVERS.parent)}: from {module} import {name}"
                 for path in SOLVERS.rglob("*.py") for module, names in _imports(path)
                 if module.split(".")[0] in ("solvers", "formulations")
                 for name in names if name.startswith("_") and not name.startswith("__")]
    assert not offenders, "\n".join(offenders)


def test_the_rooms_below_the_core_do_not_import_the_entry_point():
    for room in ("adapters", "bridge", "algorithms"):
        for path in (SOLVERS / room).glob("*.py"):
            modules = {module for module, _ in _imports(path)}
            assert "solvers.api" not in modules, f"{path.name} imports solvers.api"
