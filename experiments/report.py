"""Entry point of ``python -m experiments.report``, kept where the README shows it; the command
lives in experiments/runner/run_report.py."""

from experiments.runner.run_report import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
