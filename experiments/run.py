"""Entry point of ``python -m experiments.run``, kept where the README shows it; the command
lives in experiments/runner/cli.py."""

import sys

from experiments.runner.options import UsageError, build_parser, check_options


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)  # a bad option, --help and --version answer before the heavy imports
    try:
        check_options(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from experiments.runner.cli import main as run  # deferred on purpose: pandas, scipy, Pyomo, cvxpy

    return run(argv)


__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
