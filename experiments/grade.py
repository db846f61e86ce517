"""Entry point of ``python -m experiments.grade``; the command lives in experiments/grading/cli.py."""

from experiments.grading.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
