"""Hashed linear emission kernels (numba only, no spaCy).

``feature_rows`` is the one place where a feature id becomes a weight row;
the gather kernels (here, and ``sparse_update.gather_rows`` for the gradient)
read those rows, so the forward pass and its gradient use the same rows by
construction, and a dropped feature (row -1) is skipped by both.
"""

import numpy as np
from numba import njit

from .prefetch import LINE, prefetch_lines, prefetch_row

#: how many tokens ahead ``gather_sum`` asks for rows (1-16 measured alike on EWT)
PREFETCH_AHEAD = 2


@njit(cache=True)
def feature_rows(features, n_buckets, unsigned, rows):
    """rows[t, k] = features[t, k] % n_buckets, with ``features`` as uint64.

    ``unsigned = False`` is the mapping of models saved before it was made
    explicit (spacy-crf 0.1.x): numba typed ``uint64 % int64`` as signed, so
    an id of 2**63 or more was read as the negative int64 ``id - 2**64`` and
    floored: id 2**64 - 1 went to row 999 of 1000, where ``id % 1000`` is 615.
    When ``n_buckets`` is a power of two both mappings agree (2**64 is a
    multiple of it, so subtracting 2**64 changes nothing modulo n_buckets).
    """
    if n_buckets > 0 and n_buckets & (n_buckets - 1) == 0:
        # a power of two (the default): the low bits, where a 64-bit division per
        # feature cost ~2 ns (63 of a decode's 1,300 ns a token on EWT)
        mask = np.uint64(n_buckets - 1)
        for t in range(features.shape[0]):
            for k in range(features.shape[1]):
                rows[t, k] = np.int64(features[t, k] & mask)
        return
    n_unsigned = np.uint64(n_buckets)
    n_signed = np.int64(n_buckets)
    for t in range(features.shape[0]):
        for k in range(features.shape[1]):
            if unsigned:
                rows[t, k] = features[t, k] % n_unsigned
            else:
                rows[t, k] = np.int64(features[t, k]) % n_signed


@njit(cache=True)
def gather_sum(weights, bias, rows, scale, out):
    """out[t, :] = bias + sum_{k: rows[t, k] >= 0} scale * weights[rows[t, k], :].

    ``scale`` has the dtype of ``weights``: at 1 the sum is bit-identical to
    an unscaled one. While token ``t`` is summed, the rows of token
    ``t + PREFETCH_AHEAD`` are prefetched (``prefetch.py``).
    """
    n_labels = weights.shape[1]
    for t in range(rows.shape[0]):
        prefetch_ahead(weights, rows, t)
        for j in range(n_labels):
            out[t, j] = bias[j]
        for k in range(rows.shape[1]):
            r = rows[t, k]
            if r < 0:
                continue  # a dropped feature
            for j in range(n_labels):
                out[t, j] += scale * weights[r, j]


@njit(cache=True, inline="always")
def prefetch_ahead(table, rows, t):
    """Before token ``t``'s rows of ``table`` are read (or written), ask for those
    of token ``t + PREFETCH_AHEAD`` (at ``t = 0``, of the first tokens as well)."""
    n_tokens = rows.shape[0]
    if t == 0:
        for u in range(min(PREFETCH_AHEAD, n_tokens)):
            _prefetch_rows(table, rows, u)
    if t + PREFETCH_AHEAD < n_tokens:
        _prefetch_rows(table, rows, t + PREFETCH_AHEAD)


@njit(cache=True, inline="always")
def _prefetch_rows(weights, rows, t):
    # a row of more than two cache lines (a factored table's 80 parts) is
    # asked for line by line; a narrow one by its ends, without the loop
    if weights.shape[1] * weights.itemsize > 2 * LINE:
        for k in range(rows.shape[1]):
            if rows[t, k] >= 0:
                prefetch_lines(weights, rows[t, k])
    else:
        for k in range(rows.shape[1]):
            if rows[t, k] >= 0:
                prefetch_row(weights, rows[t, k])
