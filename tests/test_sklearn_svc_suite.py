"""scikit-learn's own SVC tests, run against SVMClassifier.

The installed scikit-learn's ``sklearn/svm/tests/test_svm.py`` and ``test_sparse.py`` are read at
collection time, every ``svm.SVC`` in them is replaced by ``SVMClassifier`` (an AST transform: no
assertion is touched), and the result is compiled under the installed file's path (tracebacks show
its lines) and its test functions collected here as ``test_<file>__<name>``.

Left out, each with its reason:
  * tests that never construct SVC (NuSVC, SVR, NuSVR, OneClassSVM, LinearSVC, LinearSVR, the
    private libsvm layer), and the cases of a parametrized test whose parameter is such a class;
  * xfail, "probability": tests that call predict_proba (scikit-learn 1.9 deprecates SVC's
    probability; SVMClassifier has none: wrap it in CalibratedClassifierCV, tested below);
  * xfail, "regex names SVC": tests whose expected error message names the class SVC;

Everything here carries the ``sklearn_suite`` marker (``-m "not sklearn_suite"`` leaves it out).
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest
import sklearn
from sklearn import svm as sklearn_svm

from experiments.estimator import SVMClassifier

SOURCE_DIR = Path(sklearn.__file__).parent / "svm" / "tests"
SOURCES = ("test_svm", "test_sparse")
#: sklearn.svm's classes other than SVC, and its private libsvm layer: their tests are not SVMClassifier's
OTHER_CLASSES = ("NuSVC", "SVR", "NuSVR", "OneClassSVM", "LinearSVC", "LinearSVR", "_libsvm", "_libsvm_sparse")
PROBABILITY = "probability: scikit-learn 1.9 deprecates SVC(probability=True); use CalibratedClassifierCV"
REGEX_NAMES_SVC = "regex names SVC"
#: tests whose expected message is a regex naming the class SVC (SVMClassifier's messages name SVMClassifier)
SVC_REGEX_TESTS = {"test_svm": ("test_unfitted", "test_svc_raises_error_internal_representation")}

pytestmark = pytest.mark.sklearn_suite


class _SVCToSVMClassifier(ast.NodeTransformer):
    """svm.SVC -> SVMClassifier; counts the replacements."""

    def __init__(self):
        self.replaced = 0

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        if node.attr == "SVC" and isinstance(node.value, ast.Name) and node.value.id == "svm":
            self.replaced += 1
            return ast.copy_location(ast.Name(id="SVMClassifier", ctx=node.ctx), node)
        return node


def _names_in(node: ast.AST) -> set[str]:
    """Every identifier and attribute name used in `node`."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def _generated(stem: str) -> tuple[types.ModuleType, dict[str, ast.FunctionDef]]:
    """The transformed module, and the names each of its test functions uses (decorators included)."""
    path = SOURCE_DIR / f"{stem}.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    transform = _SVCToSVMClassifier()
    tree = ast.fix_missing_locations(transform.visit(tree))
    assert transform.replaced > 0, f"{path}: no svm.SVC to replace (scikit-learn's tests changed)"
    module = types.ModuleType(f"sklearn_suite_{stem}")
    module.__file__ = str(path)
    module.SVMClassifier = SVMClassifier
    sys.modules[module.__name__] = module
    exec(compile(tree, str(path), "exec"), module.__dict__)
    tests = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    return module, tests


def _out_of_scope(value) -> str | None:
    """The other sklearn.svm class a parameter value is (or is an instance of), if any."""
    for name in OTHER_CLASSES:
        cls = getattr(sklearn_svm, name, None)
        if isinstance(cls, type) and (value is cls or isinstance(value, cls)):
            return name
    return None


def _collect() -> None:
    """Put each generated test function in this module's namespace, marked as the module docstring says."""
    for stem in SOURCES:
        module, tests = _generated(stem)
        for name, node in tests.items():
            names = _names_in(node)
            func = getattr(module, name)
            marks = []
            if "SVMClassifier" not in names:
                others = sorted(names & set(OTHER_CLASSES))
                what = ", ".join(others) if others else "scikit-learn's private helpers"
                marks.append(pytest.mark.skip(reason=f"{name} tests {what}, not SVC"))
            elif names & {"predict_proba", "predict_log_proba"}:
                marks.append(pytest.mark.xfail(reason=PROBABILITY))
            elif name in SVC_REGEX_TESTS.get(stem, ()):
                marks.append(pytest.mark.xfail(reason=REGEX_NAMES_SVC))
            for mark in marks:
                func = mark(func)
            globals()[f"test_{stem[5:]}__{name[5:]}"] = func


_collect()


@pytest.fixture
def global_random_seed():
    """scikit-learn's own fixture at its default seed (SKLEARN_TESTS_GLOBAL_RANDOM_SEED unset: 42)."""
    return 42


@pytest.fixture(autouse=True)
def _mark_cases(request):
    """A parametrized case whose parameter is NuSVC, SVR, ... (or an instance of one) is not SVMClassifier's:
    skipped (pytest evaluates a mark added during setup)."""
    callspec = getattr(request.node, "callspec", None)
    for value in (callspec.params.values() if callspec else ()):
        other = _out_of_scope(value)
        if other:
            pytest.skip(f"the case of {other}, not SVC")
