"""Entry point of ``python -m experiments.bench`` (the command lives in bench/scaling.py).

The command runs ``experiments.bench.scaling.main`` from its own module (not from ``__main__``) so
the worker processes unpickle the same classes."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # figures are written to files; no display on a server

from experiments.bench.scaling import main  # noqa: E402  (after the backend is chosen)

raise SystemExit(main())
