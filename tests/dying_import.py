"""Preloaded by a test's solve server (solvers.isolation): its import ends the process, as a crash during the start."""

import os

os._exit(3)
