"""Entry point of ``python -m experiments.estimator_bench``, kept where the README shows it; the command
lives in experiments/bench/estimator.py."""

from experiments.bench.estimator import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
