"""Imported last by the runner's fork server (sweep.PRELOAD), after the libraries that bring a BLAS: the
threadpoolctl controller that solvers.blas keeps for the working sets' one-thread sections is made there
once, so that no solve process scans the loaded libraries again (a scan in each forked solve: 22-36 ms,
about 3 % of the kernel dual's working set at n = 5,000). A forked process shares the server's libraries,
so the controller made here limits the same ones (numpy's, scipy's and SCS's OpenBLAS, and libgomp)."""

from solvers import blas

blas.controller()
