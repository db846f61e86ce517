"""Imported last by the runner's and the benchmark's fork servers (sweep.PRELOAD, bench.scaling.PRELOAD),
after the libraries; two things a forked solve process would otherwise pay for in its own time.

- The threadpoolctl controller that solvers.blas keeps for the working sets' one-thread sections is made
  here once, so that no solve process scans the loaded libraries again (a scan in each forked solve:
  22-36 ms, about 3 % of the kernel dual's working set at n = 5,000). A forked process shares the server's
  libraries, so the controller made here limits the same ones (numpy's, scipy's and SCS's OpenBLAS, and
  libgomp).
- The objects the imports made (about 180,000 that the garbage collector tracks: Pyomo, cvxpy, scipy) are
  moved out of its reach (gc.freeze, the standard library's advice for a server that forks): a full
  collection walked them all, 0.1 s, at intervals set by the allocations, so that one solve in several
  took 0.1 s longer (the kernel dual at n = 5,000 through Pyomo: 0.28 s against 0.18 s), and in a forked
  process its writes copied the server's memory pages. Nothing imported is collected later in any case.
"""

import gc

from solvers import blas

blas.controller()
gc.collect()  # the imports' garbage first: what is frozen is never freed
gc.freeze()
