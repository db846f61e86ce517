"""Preloaded by a test's solve server (solvers.isolation): the family's SMO never ends, as a solve that outlasts
any time limit; only the kill at the limit ends the child."""

import threading

from solvers import family

family.solve_dual = lambda *args, **kwargs: threading.Event().wait()  # never set
