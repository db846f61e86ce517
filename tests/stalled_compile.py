"""Preloaded by a test's solve server (solvers.isolation): the server's compile step never ends, as a first compile
on an empty numba cache that outlasts any time limit."""

import threading

from solvers.algorithms import smo

smo.warm = threading.Event().wait  # never set: only the server's kill ends its start
