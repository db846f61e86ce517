"""Entry point of ``python -m experiments.estimator_bench``, kept where the README shows it; the command
lives in experiments/bench/estimator_vs_svc.py."""

from experiments.bench.estimator_vs_svc import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
