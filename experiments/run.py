"""Entry point of ``python -m experiments.run``, kept where the README shows it; the command
lives in experiments/runner/cli.py."""

from experiments.runner.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
