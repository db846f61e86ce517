"""Entry point of ``python -m experiments.exercise``; the command lives in experiments/grading/exercises.py."""

from experiments.grading.exercises import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
