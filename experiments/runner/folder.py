"""The files of a run folder (``results/<run id>/``), each named once: the runner writes them,
the analysis and the report read them (the table's own file is ``results_table.PARQUET``)."""

RUN_FILE = "run.json"  # the options that decide the run's tasks, reused by --resume
LOCK_FILE = ".lock"  # held by the live run (its pid), so two runs never write one folder
SEPARABILITY_FILE = "separability.json"  # one separability record per data set
