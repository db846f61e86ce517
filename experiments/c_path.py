"""Entry point of ``python -m experiments.c_path``, kept where the README shows it; the command
lives in experiments/bench/c_path.py."""

from experiments.bench.c_path import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
