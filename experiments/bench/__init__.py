"""The benchmark: how the paths scale with n (``python -m experiments.bench``).

``scaling`` is the run (data, paths, budgets, the CSV); ``scaling_report`` writes report.md and the
figures from it; ``c_path`` times warm starts along a C path (``python -m experiments.c_path``);
``kernel_forms`` compares the dense and the factored kernel dual; ``estimator_vs_svc`` times
:class:`~experiments.estimator.SVMClassifier` against scikit-learn's SVC; ``runner_default`` times the
runner's default against the best path (``python -m experiments.runner_bench``); ``members`` times the SVM
family's estimators (SMO) against scikit-learn's NuSVC, SVR, NuSVR and OneClassSVM
(``python -m experiments.bench --members``).
"""
