"""Entry point of ``python -m experiments.coursework SUITE`` (the command lives in coursework/cli.py)."""

from experiments.coursework.cli import main

raise SystemExit(main())
