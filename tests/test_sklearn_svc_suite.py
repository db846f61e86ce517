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

from functools import partial

import pytest

from experiments.estimator import SVMClassifier
from tests.sklearn_suites import PROBABILITY_CALLS, collect, generated, global_random_seed, skip_other_cases  # noqa: F401

#: sklearn.svm's classes other than SVC, and its private libsvm layer: their tests are not SVMClassifier's
OTHER_CLASSES = ("NuSVC", "SVR", "NuSVR", "OneClassSVM", "LinearSVC", "LinearSVR", "_libsvm", "_libsvm_sparse")
PROBABILITY = "probability: scikit-learn 1.9 deprecates SVC(probability=True); use CalibratedClassifierCV"
REGEX_NAMES_SVC = "regex names SVC"
#: tests whose expected message is a regex naming the class SVC (SVMClassifier's messages name SVMClassifier)
SVC_REGEX_TESTS = {"test_svm": ("test_unfitted", "test_svc_raises_error_internal_representation")}

pytestmark = pytest.mark.sklearn_suite


def _marks(stem: str, name: str, names: set[str]) -> list:
    """The module docstring's skip and xfail marks of one generated test."""
    if "SVMClassifier" not in names:
        others = sorted(names & set(OTHER_CLASSES))
        what = ", ".join(others) if others else "scikit-learn's private helpers"
        return [pytest.mark.skip(reason=f"{name} tests {what}, not SVC")]
    if names & PROBABILITY_CALLS:
        return [pytest.mark.xfail(reason=PROBABILITY)]
    if name in SVC_REGEX_TESTS.get(stem, ()):
        return [pytest.mark.xfail(reason=REGEX_NAMES_SVC)]
    return []


# only svm.SVC is replaced: a bare SVC is left as scikit-learn's
collect(globals(), partial(generated, replaced={"SVC": "SVMClassifier"}, classes={"SVMClassifier": SVMClassifier},
                           prefix="sklearn_suite", bare=False), _marks)


@pytest.fixture(autouse=True)
def _mark_cases(request):
    """A parametrized case whose parameter is NuSVC, SVR, ... (or an instance of one) is not SVMClassifier's:
    skipped."""
    skip_other_cases(request, OTHER_CLASSES, "SVC")
