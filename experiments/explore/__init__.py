"""The interactive explorer (``python -m experiments.explore``): ``compute`` solves and checks
without a browser, ``page`` is the Panel layout, ``app`` serves it."""
