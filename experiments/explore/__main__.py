"""Entry point of ``python -m experiments.explore`` (the command lives in explore/app.py)."""

from experiments.explore.app import main

raise SystemExit(main())
