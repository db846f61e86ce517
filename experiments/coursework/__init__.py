"""Coursework: the lecture demos and worked examples, one module per topic.

Each topic is a function that writes its figures, tables and a Markdown report section into an
output directory and returns a :class:`~experiments.coursework.section.Section`; runner suites
(``python -m experiments.run --suite NAME``), ``python -m experiments.coursework SUITE``, the
notebooks and the tests call them.

Topics (computing, plotting and prose kept apart):

* ``demos``: the MATLAB demo's ``svmdemo_linear``, ``svmdemo_rbf``, ``svmdemo_compare`` (seed 000).
* ``seeds``: every worked example of 001 and 002, checked against its published numbers.
* ``perceptron`` (the algorithm of 002) and ``perceptron_vs_svm`` (its line beside the SVM's).
* ``choosing_C``: 002's "Grid search using cross-validation" and the regularization path.
* ``kernel_duality`` (compute) and ``kernel_figures`` (plots): the kernel trick, primal in
  feature space against the kernel dual.
* ``l1_compare``: the 1-norm SVM (an LP) beside the 2-norm SVM.

Shared pieces: ``fitting`` (an estimator per fit, its row beside scikit-learn's SVC), ``plotting``
(a 2-D classifier drawn like the notes' MATLAB plots), ``section`` (the Markdown section and its
files), ``cli`` (the suites by name and the command).

Notation of the notes: labels y_i in {-1, +1} (A = +1 drawn blue, B = -1 drawn red, as in 001's
MATLAB plots), f(x) = w'x + b or sum_i alpha_i y_i k(x_i, x) + b, slacks
xi_i = max(0, 1 - y_i f(x_i)), margin width 2 / ||w||.
"""
