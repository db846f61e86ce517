"""Timing several ways of doing one thing side by side, A B A B ...: the machine's drift then moves every way
alike, and ratios are taken run by run (the estimator against SVC, the family's members against scikit-learn)."""

from __future__ import annotations

import time


def interleaved(fits: dict, repeat: int, warm: bool = False) -> dict[str, list[float]]:
    """Each of `fits` (name -> a function that fits once) timed `repeat` times in turn: name -> its seconds.
    warm: each fit once first, untimed (a process's first fit loads compiled code: once, like an import)."""
    if warm:
        for fit in fits.values():
            fit()
    times: dict[str, list[float]] = {name: [] for name in fits}
    for _ in range(repeat):
        for name, fit in fits.items():
            start = time.perf_counter()
            fit()
            times[name].append(time.perf_counter() - start)
    return times
