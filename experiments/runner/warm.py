"""Imported last by the runner's and the benchmark's fork servers (sweep.PRELOAD, bench.scaling.PRELOAD), after
the libraries: what a server that forks a process per solve does once (solvers.isolation.prepare_to_fork, which
says why: the BLAS controller made once, and the imports' objects frozen out of the garbage collector's reach)."""

from solvers.algorithms.smo import warm
from solvers.isolation import prepare_to_fork

warm()  # the compiled SMO loaded once here, not in every forked solve
prepare_to_fork()
