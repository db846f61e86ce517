"""The machinery of the suites that run scikit-learn's own sklearn.svm tests against the project's estimators
(tests/test_sklearn_svc_suite.py, tests/test_sklearn_family_suite.py): read the installed test file, replace
scikit-learn's classes by the project's (an AST transform: no assertion is touched), compile it under the installed
file's path (tracebacks show its lines), and put its test functions, marked, in the calling suite's namespace.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest
import sklearn
from sklearn import svm as sklearn_svm

SOURCE_DIR = Path(sklearn.__file__).parent / "svm" / "tests"
SOURCES = ("test_svm", "test_sparse")
PROBABILITY_CALLS = {"predict_proba", "predict_log_proba"}


class _Replace(ast.NodeTransformer):
    """svm.X -> ours[X] (and a bare X where `bare` is set); counts the replacements."""

    def __init__(self, ours: dict[str, str], bare: bool):
        self.ours, self.bare, self.replaced = ours, bare, 0

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        if node.attr in self.ours and isinstance(node.value, ast.Name) and node.value.id == "svm":
            self.replaced += 1
            return ast.copy_location(ast.Name(id=self.ours[node.attr], ctx=node.ctx), node)
        return node

    def visit_Name(self, node: ast.Name):
        if self.bare and node.id in self.ours and isinstance(node.ctx, ast.Load):
            self.replaced += 1
            return ast.copy_location(ast.Name(id=self.ours[node.id], ctx=node.ctx), node)
        return node


def names_in(node: ast.AST) -> set[str]:
    """Every identifier and attribute name used in `node`."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def generated(stem: str, replaced: dict[str, str], classes: dict[str, type], prefix: str,
              bare: bool) -> tuple[types.ModuleType, dict[str, ast.FunctionDef]]:
    """The transformed module of SOURCE_DIR/<stem>.py (scikit-learn's class -> the name of ours, `classes` giving
    ours by name), and the names each of its test functions uses (decorators included)."""
    path = SOURCE_DIR / f"{stem}.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    transform = _Replace(replaced, bare)
    tree = ast.fix_missing_locations(transform.visit(tree))
    assert transform.replaced > 0, f"{path}: nothing to replace (scikit-learn's tests changed)"
    module = types.ModuleType(f"{prefix}_{stem}")
    module.__file__ = str(path)
    for name, cls in classes.items():
        setattr(module, name, cls)
    sys.modules[module.__name__] = module
    exec(compile(tree, str(path), "exec"), module.__dict__)
    tests = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    return module, tests


def collect(namespace: dict, generate: Callable[[str], tuple], marks: Callable[[str, str, set], list]) -> None:
    """Put each generated test function in `namespace` as test_<file>__<name>, with the marks `marks(stem, name,
    names it uses)` gives it."""
    for stem in SOURCES:
        module, tests = generate(stem)
        for name, node in tests.items():
            func = getattr(module, name)
            for mark in marks(stem, name, names_in(node)):
                func = mark(func)
            namespace[f"test_{stem[5:]}__{name[5:]}"] = func


def other_class(value, others) -> str | None:
    """The sklearn.svm class among `others` a parameter value is (or is an instance of), if any."""
    for name in others:
        cls = getattr(sklearn_svm, name, None)
        if isinstance(cls, type) and (value is cls or isinstance(value, cls)):
            return name
    return None


def skip_other_cases(request, others, what: str) -> None:
    """Skip a parametrized case whose parameter is one of `others` (or an instance of one): not `what`'s test
    (pytest evaluates a mark added during setup, so this is a skip, not a mark)."""
    callspec = getattr(request.node, "callspec", None)
    for value in (callspec.params.values() if callspec else ()):
        other = other_class(value, others)
        if other:
            pytest.skip(f"the case of {other}, not {what}")


@pytest.fixture
def global_random_seed():
    """scikit-learn's own fixture at its default seed (SKLEARN_TESTS_GLOBAL_RANDOM_SEED unset: 42); a suite
    imports it so that its generated tests find it."""
    return 42
