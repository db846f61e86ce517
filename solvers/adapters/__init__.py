"""Adapters: one module per solver API, each serving the backends whose records (solvers.backends) name it."""
