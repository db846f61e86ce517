"""Preloaded by a test's solve server (solvers.isolation): its imports never end, as a start that outlasts any limit."""

import threading

threading.Event().wait()  # never set: only the server's kill ends its start
