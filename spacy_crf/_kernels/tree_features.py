"""Dependency-tree feature columns (numba only, no spaCy).

``heads`` is (N,) int64: the absolute row of each token's head in the batch,
-1 for a root; ``order`` lists every child before its head (as
``tree.check_forest`` gives it).
"""

import numpy as np
from numba import njit

ROOT = np.uint64(0x52F07A11C0FFEE01)  # the value of head:ATTR at a root
NONE = np.uint64(0x7E11D0C5AB1E0003)  # no such child
MAX_DIST = 5
MAX_DEPTH = 10
MAX_CHILDREN = 5
N_STRUCTURE = 5  # N_CHILDREN, DEPTH, HEAD_DIST, LCHILD_DEP, RCHILD_DEP


@njit(cache=True)
def head_columns(values, heads, cols, out):
    """out[t, k] = values[heads[t], cols[k]], or ROOT where t is a root."""
    for t in range(heads.shape[0]):
        h = heads[t]
        for k in range(cols.shape[0]):
            out[t, k] = ROOT if h < 0 else values[h, cols[k]]


@njit(cache=True)
def structure_columns(heads, order, deps, out):
    """Fill ``out`` (N, N_STRUCTURE) with per-token tree attributes:

    0 number of children (clipped to MAX_CHILDREN)
    1 depth, roots 0 (clipped to MAX_DEPTH); depth[t] = depth[head[t]] + 1,
      filled heads-first by walking ``order`` backwards
    2 signed distance head - t, clipped to +-MAX_DIST (roots: MAX_DIST + 1)
    3 DEP of the leftmost child (NONE if none);  4 DEP of the rightmost child
    """
    n = heads.shape[0]
    children = np.zeros(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    for t in range(n):
        h = heads[t]
        if h >= 0:
            children[h] += 1
            if left[h] < 0 or t < left[h]:
                left[h] = t
            if t > right[h]:
                right[h] = t
    for i in range(n - 1, -1, -1):
        t = order[i]
        h = heads[t]
        depth[t] = 0 if h < 0 else depth[h] + 1
    for t in range(n):
        h = heads[t]
        out[t, 0] = np.uint64(min(children[t], MAX_CHILDREN))
        out[t, 1] = np.uint64(min(depth[t], MAX_DEPTH))
        if h < 0:
            dist = MAX_DIST + 1
        else:
            dist = max(-MAX_DIST, min(MAX_DIST, h - t))
        out[t, 2] = np.uint64(dist + 2 * MAX_DIST)
        out[t, 3] = NONE if left[t] < 0 else deps[left[t]]
        out[t, 4] = NONE if right[t] < 0 else deps[right[t]]
