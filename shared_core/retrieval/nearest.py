"""The dedup search's arithmetic: cosines of a batch's vectors with a partition, best first (W2, W8).

Used by :meth:`~.partition.Partition.neighbours`. A batch used to be compared one vector at a time,
each with a pass over the whole partition and a sort of all of it; here it is one matrix product
and a sort of the memories over the threshold only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["MATMUL_FROM", "nearest"]

MATMUL_FROM = 8
"""From this many vectors on, one BLAS matrix product; below it, one ``einsum`` per vector.

A BLAS product starts OpenBLAS threads, which cost more than a small product on a busy machine
(matrix-vector: 0.16 ms idle, 8 ms at load average ~5, against 0.4 ms for ``einsum``; see
``benchmarks/README.md``). Beside a batch's work the start-up is small: 100 vectors over 15,000
memories took 11 ms (23 ms with both cores busy) against 185 ms for one ``einsum`` each.
"""


def nearest(
    matrix: NDArray[np.float32], vecs: NDArray[np.float32], thresholds: Sequence[float], limit: int
) -> tuple[NDArray[np.float32], list[NDArray[np.intp]]]:
    """Cosines of unit ``vecs`` with the unit rows of ``matrix``, and each vector's nearest rows.

    For each vector, the rows whose cosine is >= its threshold, best first, ties in row order, at
    most ``limit`` (at least one); only the rows over the threshold are sorted.
    """
    if not len(matrix) or not len(vecs):
        return np.zeros((len(vecs), len(matrix)), dtype=np.float32), [np.zeros(0, dtype=np.intp) for _ in vecs]
    if len(vecs) >= MATMUL_FROM:
        sims: NDArray[np.float32] = vecs @ matrix.T
    else:
        sims = np.stack([np.einsum("ij,j->i", matrix, v) for v in vecs])
    orders = []
    for row, threshold in zip(sims, thresholds, strict=True):
        hit = np.flatnonzero(row >= threshold)
        orders.append(hit[np.argsort(-row[hit], kind="stable")][: max(1, limit)])
    return sims, orders
