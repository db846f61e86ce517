"""Entry point of ``python -m experiments.runner_bench``: the runner's default against the benchmark's
best path; the command lives in experiments/bench/runner_default.py."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # the runner's report writes figures to files

from experiments.bench.runner_default import main  # noqa: E402  (after the backend is chosen)

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
