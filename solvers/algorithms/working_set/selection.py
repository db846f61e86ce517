r"""Which points the working-set loop optimises next (the block B) and which it leaves out for a while
(shrinking).

`choose_block` sizes the block by the free points and fills it: the violating pairs first (`select_block`:
by default the second-order choice of Fan, Chen and Lin 2005 for blocks; "first_order" is SVMlight's q/2
most violating from each side), then free points, the last block's first. Points at a bound that cannot be
part of a violating pair are shrunk out of the selection (`shrinkable`) and rechecked at the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from solvers.algorithms.working_set.optimality import violating_sets

if TYPE_CHECKING:  # annotations only
    from solvers.algorithms.working_set.state import WorkingSetOptions

SELECTIONS = ("second_order", "first_order")

#: Where even the largest block cannot hold every free point, its steps zig-zag among them at O(q^3) each. When
#: the free points are weakly coupled (K near I on them: a kernel row's mass over the free points off its
#: diagonal is at most WEAK_COUPLING times the diagonal, the median of SAMPLED_ROWS rows), the base q does the
#: same at a fraction of the cost; strongly coupled free points keep the largest block.
WEAK_COUPLING = 1.0
SAMPLED_ROWS = 5


def choose_block(src, y, alpha, g, C, eps, active, previous, settings: WorkingSetOptions) -> np.ndarray:
    """The next block: select_block's points among the active ones, filled with free points (the previous
    block's first: fewer zig-zags) up to the block's size.

    The block grows with the free points (settings.growth times them, up to settings.max_q, and at most the
    rows a KernelRows cache holds: a bigger block's rows would be recomputed each step) and is filled with all
    of them: with more free points than a block holds, blocks zig-zag among them."""
    free_now = (alpha > eps) & (alpha < C - eps)
    n_free = int(np.count_nonzero(free_now))
    largest = min(max(settings.q, settings.max_q), src.capacity)
    q_now = int(min(max(settings.q, settings.growth * n_free), largest))
    if n_free > largest and weakly_coupled(src, free_now):
        q_now = settings.q  # WEAK_COUPLING's comment
    B = select_block(src, y, alpha, g, C, eps, q_now, active, settings.selection)
    if len(B) < q_now:
        is_free = free_now & active
        is_free[B] = False
        free = np.flatnonzero(is_free)
        if previous is not None:
            free = free[np.argsort(~np.isin(free, previous), kind="stable")]
        B = np.union1d(B, free[: q_now - len(B)])
    return B


def select_block(src, y, alpha, g, C, eps, q, candidates, selection="second_order") -> np.ndarray:
    """The working set: at most q points, half from each side of the violation, among `candidates`.

    first_order (SVMlight): the q/2 largest -y_i g_i in I_up and the q/2 smallest in I_low.
    second_order (Fan, Chen and Lin 2005, LIBSVM's WSS2, for blocks): i the most violating point
    of I_up and j of I_low as before; every other point t of I_low is scored by the decrease of f
    that a two-point step on (i, t) alone would give, b_it^2 / a_it with b_it = m + y_t g_t > 0 and
    a_it = K_ii + K_tt - 2 K_it, and symmetrically every t in I_up against j; the q/2 best of each
    side join i and j. Costs the two rows K_i, K_j (usually cached: they are kept in the block).
    """
    up, low, minus_yg = violating_sets(alpha, g, y, C, eps)
    up_idx = np.flatnonzero(up & candidates)
    low_idx = np.flatnonzero(low & candidates)
    half = max(1, q // 2)
    if selection == "first_order":
        top_up = up_idx[np.argsort(-minus_yg[up_idx], kind="stable")[:half]]
        top_low = low_idx[np.argsort(minus_yg[low_idx], kind="stable")[:half]]
        return np.union1d(top_up, top_low)
    i = up_idx[np.argmax(minus_yg[up_idx])]
    j = low_idx[np.argmin(minus_yg[low_idx])]
    m, M = minus_yg[i], minus_yg[j]
    K_i, K_j = src.rows([i, j])
    diag = src.diagonal()

    def best(idx, partner_diag, K_partner, gain_b):
        keep = gain_b > 0
        idx, gain_b = idx[keep], gain_b[keep]
        curvature = np.maximum(partner_diag + diag[idx] - 2.0 * K_partner[idx], 1e-12)
        return idx[np.argsort(-(gain_b ** 2) / curvature, kind="stable")[:half]]

    top_low = best(low_idx, diag[i], K_i, m - minus_yg[low_idx])
    top_up = best(up_idx, diag[j], K_j, minus_yg[up_idx] - M)
    return np.union1d(np.union1d(top_up, top_low), [i, j])


def shrinkable(alpha, minus_yg, y, C, eps, m, M) -> np.ndarray:
    """Points at a bound that no violating pair can use while m and M hold (LIBSVM's be_shrunk):
    in I_up only with -y_i g_i < M, or in I_low only with -y_i g_i > m. Free points are never shrunk."""
    at_lower = alpha <= eps
    at_upper = alpha >= C - eps
    up_only = ((y > 0) & at_lower) | ((y < 0) & at_upper)
    low_only = ((y > 0) & at_upper) | ((y < 0) & at_lower)
    return (up_only & (minus_yg < M)) | (low_only & (minus_yg > m))


def weakly_coupled(src, free: np.ndarray) -> bool:
    """Whether the free points' kernel rows are diagonally dominant over the free points (WEAK_COUPLING)."""
    F = np.flatnonzero(free)
    sample = F[np.linspace(0, F.size - 1, min(SAMPLED_ROWS, F.size)).astype(int)]
    rows = src.rows(sample)
    diagonal = rows[np.arange(sample.size), sample]
    off = np.abs(rows[:, F]).sum(axis=1) - np.abs(diagonal)
    return bool(np.median(off / np.maximum(np.abs(diagonal), np.finfo(float).tiny)) <= WEAK_COUPLING)
