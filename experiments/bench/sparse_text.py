"""The linear soft primal on sparse text-like data: solve() (the default method) against LinearSVC.

    python -m experiments.bench.sparse_text                         # n = 20,000, d = 50,000, density 1e-3
    python -m experiments.bench.sparse_text --n 2000 --d 5000 --time-limit 60

The data: X with density * n * d nonzeros at random coordinates (standard normal values), as
scipy.sparse.random draws them, built from the coordinates directly (scipy.sparse.random took 7.7 GB to draw
1e6 of 1e9 positions); labels from a planted w with 10% noise in the score. One run of each, in this order:
solve("soft_primal", method="auto") with the given time limit, then LinearSVC(loss="hinge") at tol 1e-4 and
1e-8. Each row: wall seconds, the status, the peak memory of the process and its children (the solve
server's, started by the first solve) above the row's start, and P(w, b) = 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (w'x_i + b)) at the returned
point (LinearSVC penalises b as a feature of size intercept_scaling, so its P is at best the optimum's).
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
import scipy.sparse as sp

from solvers.api import solve


def text_like(n: int, d: int, density: float, seed: int = 0):
    """(X CSR n x d, y in {-1, +1}) with density * n * d random nonzeros and labels from a planted w."""
    rng = np.random.default_rng(seed)
    nnz = int(density * n * d)
    X = sp.csr_matrix((rng.standard_normal(nnz), (rng.integers(0, n, nnz), rng.integers(0, d, nnz))), shape=(n, d))
    score = X @ rng.standard_normal(d)
    y = np.where(score + 0.1 * np.std(score) * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


class PeakMemory:
    """The largest resident memory of this process and its children (the solve server's), sampled every `every`
    seconds; `above` is the peak less the first sample (the row's start)."""

    def __init__(self, every: float = 0.2):
        import psutil

        self._me, self._every, self.peak, self.first = psutil.Process(), every, 0, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            for proc in [self._me, *self._me.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:  # a child that ended between the listing and the read
                    pass
            self.peak = max(self.peak, total)
            self.first = total if self.first is None else self.first
            self._stop.wait(self._every)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        while self.first is None:  # the row starts after its first sample
            time.sleep(0.01)
        return self

    @property
    def above(self) -> float:
        """MB of the peak above the first sample."""
        return (self.peak - self.first) / 2**20

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def primal_objective(X, y, w, b, C: float) -> float:
    return float(0.5 * w @ w + C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum())


def measure(n: int, d: int, density: float, *, C: float = 1.0, layer: str = "cvxpy", backend: str = "piqp",
            time_limit: float = 300.0, seed: int = 0) -> list[dict]:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    X, y = text_like(n, d, density, seed)
    rows = []
    start = time.perf_counter()
    with PeakMemory() as mem:
        sol = solve("soft_primal", X, y, layer=layer, backend=backend, C=C, method="auto", time_limit=time_limit)
    rows.append({"what": f"solve soft_primal {layer}/{backend} ({sol.extras.get('method')})",
                 "seconds": time.perf_counter() - start, "status": sol.status, "peak MB above the start": mem.above,
                 "P(w, b)": primal_objective(X, y, sol.w, sol.b, C) if sol.w is not None else float("nan"),
                 "note": sol.message[:160]})
    for tol in (1e-4, 1e-8):
        start = time.perf_counter()
        with PeakMemory() as mem, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model = LinearSVC(loss="hinge", C=C, tol=tol, max_iter=100_000).fit(X, y)
        rows.append({"what": f"LinearSVC(loss='hinge', tol={tol:g})", "seconds": time.perf_counter() - start,
                     "status": "converged" if not caught else "ConvergenceWarning",
                     "peak MB above the start": mem.above,
                     "P(w, b)": primal_objective(X, y, model.coef_.ravel(), float(model.intercept_[0]), C),
                     "note": f"{model.n_iter_} iterations"})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench.sparse_text", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--n", type=int, default=20_000, help="samples (default 20,000)")
    parser.add_argument("--d", type=int, default=50_000, help="features (default 50,000)")
    parser.add_argument("--density", type=float, default=1e-3, help="share of nonzeros (default 1e-3)")
    parser.add_argument("--C", type=float, default=1.0, help="C (default 1)")
    parser.add_argument("--layer", default="cvxpy", help="the solve's layer (default cvxpy)")
    parser.add_argument("--backend", default="piqp", help="the solve's backend (default piqp)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="the solve's time limit in s (default 300)")
    args = parser.parse_args(argv)
    if args.n < 10 or args.d < 1 or not 0 < args.density <= 1:
        parser.error("--n must be at least 10, --d at least 1, --density in (0, 1]")
    import pandas as pd

    rows = measure(args.n, args.d, args.density, C=args.C, layer=args.layer, backend=args.backend,
                   time_limit=args.time_limit)
    print(f"n = {args.n:,}, d = {args.d:,}, density {args.density:g} ({int(args.density * args.n * args.d):,} nonzeros; "
          f"a dense copy: {8 * args.n * args.d / 2**30:.1f} GiB), C = {args.C:g}")
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
