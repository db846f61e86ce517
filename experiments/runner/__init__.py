"""The runner: a suite (or your own grid) solved, checked, tabulated and reported.

``cli`` is ``python -m experiments.run``; ``suites`` names the grids; ``sweep`` turns a grid into
tasks and runs them (in-process, isolated, or on dask); ``results_table`` is the long table and
its file; ``analysis`` derives the duality and KKT summaries from it; ``run_report`` writes report.md
and report.html; ``figures`` draws the report's figures.
"""
