"""Entry point of ``python -m experiments.kernel_figures``, kept where the README shows it; the command
lives in experiments/coursework/kernel_figures.py."""

from experiments.coursework.kernel_figures import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
