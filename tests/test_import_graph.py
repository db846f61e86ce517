"""The project's import graph: no loops between its modules, and no import of the project's own
modules inside a function unless a comment says why (an optional heavy dependency deferred on
purpose, e.g. to keep ``--help`` fast: tests/test_cli_boundary.py checks that one).

Read from the source with ``ast`` (nothing is imported), so a loop hidden behind a
function-level import is found as soon as the import moves to the top of its module.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("formulations", "solvers", "experiments")
# Where every in-function import of a project module must say why.
COMMENT_CHECKED = ("experiments", "solvers", "formulations")
# The deferred imports of experiments/: a new one is a decision, so it raises this number in the same change as
# its comment.
MAX_DEFERRED_IN_EXPERIMENTS = 29  # +1: the runner's --method axis reads solvers.api's names where it expands;
# +1: the runner's leave-out of stalling pairs asks solvers.api which method a task's solve takes;
# +1: experiments/run.py parses the options before it imports the command (a bad option answers at once);
# +1: --standardize's LPs map w*, b* back with solvers.closing where the solve runs;
# +2: the grader's and the exercise's command lines answer --help and bad arguments before the solver stack;
# +1: the LIBLINEAR members' comparison with LinearSVC answers --help before the solver stack;
# +1: the LIBSVM members' comparison with scikit-learn (family_peers) likewise;
# +1: the benchmark's --members mode loads the family's estimators only when asked


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the project module imported
    line: int
    in_function: bool


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the three packages."""
    files = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    return files


def _imported_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, files) -> set[str]:
    """The project modules an import statement reaches: ``from a import b`` reaches ``a.b`` when that
    is a module, else ``a``; relative imports are resolved against ``module``."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
    reached = set()
    for name in names:
        while name and name not in files:  # `import a.b.c` of a name inside a module: the module
            name = name.rpartition(".")[0]
        if name:
            reached.add(name)
    return reached


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def project_imports() -> list[Import]:
    files = module_files()
    found = []
    for module, path in files.items():
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if _is_type_checking(child):
                    continue  # annotations only: not an import at run time
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    found.extend(Import(module, target, child.lineno, in_function)
                                 for target in sorted(_imported_modules(child, module, is_package, files)))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(ast.parse(path.read_text(), filename=str(path)), False)
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import loops: strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, loops = {}, {}, [], set(), []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return loops


def test_the_cycle_finder_finds_a_loop():
    """The checker itself: a loop of three is found, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_the_project():
    """The parse reaches the modules and their top-level imports (else the next test proves nothing)."""
    imports = project_imports()
    edges = {(i.module, i.target) for i in imports if not i.in_function}
    assert ("experiments.runner.cli", "experiments.runner.suites") in edges
    assert ("experiments.bench.scaling_report", "experiments.bench.scaling") in edges or \
        ("experiments.bench.scaling", "experiments.bench.scaling_report") in edges
    assert len(edges) > 100


def test_no_import_loops_once_every_import_is_at_the_top():
    """No loop among the project's modules, counting the imports inside functions as if they were at
    the top of their module: a deferred import must not be what breaks a loop."""
    edges: dict[str, set[str]] = {}
    for i in project_imports():
        if i.target != i.module and not i.target.startswith(i.module + "."):  # a package's own submodules
            edges.setdefault(i.module, set()).add(i.target)
    assert cycles(edges) == []


def _deferred_in(packages: tuple[str, ...]) -> list[Import]:
    return [i for i in project_imports() if i.in_function and i.module.split(".")[0] in packages]


@pytest.mark.parametrize("package", COMMENT_CHECKED)
def test_every_import_inside_a_function_says_why(package):
    """An import of a project module inside a function carries a comment (its line or the line above)
    saying why it is deferred."""
    files = module_files()
    silent = []
    for i in _deferred_in((package,)):
        lines = files[i.module].read_text().splitlines()
        here, above = lines[i.line - 1], lines[i.line - 2] if i.line > 1 else ""
        if "#" not in here and not above.lstrip().startswith("#"):
            silent.append(f"{files[i.module].relative_to(ROOT)}:{i.line}: {here.strip()}")
    assert silent == [], "in-function imports without a comment saying why:\n" + "\n".join(silent)


def test_deferred_imports_are_few():
    """The count of in-function imports of the project's modules in experiments/ stays at most
    MAX_DEFERRED_IN_EXPERIMENTS: each one is a decision."""
    deferred = {(i.module, i.line) for i in _deferred_in(("experiments",))}
    assert len(deferred) <= MAX_DEFERRED_IN_EXPERIMENTS, sorted(deferred)


def test_every_command_the_readme_shows_is_a_runnable_module():
    """`python -m experiments.X` in the README or docs/: X is a module, or a package with a __main__.py; the
    small modules kept at experiments/ for those commands only forward to their room's `main`."""
    shown = "".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    commands = set(re.findall(r"python -m (experiments(?:\.\w+)+)", shown))
    assert {"experiments.run", "experiments.bench", "experiments.coursework", "experiments.c_path"} <= commands
    for command in sorted(commands):
        spec = importlib.util.find_spec(command)
        assert spec is not None, command
        if spec.submodule_search_locations:  # a package
            assert (Path(spec.origin).parent / "__main__.py").exists(), command
            continue
        tree = ast.parse(Path(spec.origin).read_text())
        if any(isinstance(node, ast.FunctionDef) for node in tree.body):
            continue  # the command's own module
        imported = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
        assert [(node.module.split(".")[1], [a.name for a in node.names]) for node in imported] in (
            [("runner", ["main"])], [("bench", ["main"])], [("coursework", ["main"])], [("grading", ["main"])]), command
