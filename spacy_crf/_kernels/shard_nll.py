"""The full-batch likelihood of a featurized shard and its gradient (numba only, no spaCy).

The batch trainer keeps every parameter in one flat float64 vector; these
kernels see views of it. ``rows`` is ``(N, K)`` int64: for every token and
feature template, the row of the compact weight table ``weights`` (``(R,
L)``: only the rows the training corpus uses) that the feature selects. The
emissions are those of the hashed layer, ``bias + sum_k weights[rows[t, k]]``;
the likelihood is the chain's or the tree's own ``nll_gradient``.

Entry points release the GIL (``nogil=True``), so a thread pool runs one
shard per core; each shard adds into gradient buffers of its own.
"""

import numpy as np
from numba import njit

from . import chain, tree
from .emissions import gather_sum, prefetch_ahead
from .primitives import FALSE


@njit(cache=True)
def scatter_sum(d_emissions, rows, d_weights, d_bias):
    """The adjoint of ``gather_sum`` over compact rows, added into ``d_weights``, ``d_bias``."""
    L = d_emissions.shape[1]
    # d_weights[rows[t, k], j] += d_emissions[t, j];  d_bias[j] += d_emissions[t, j]
    for t in range(rows.shape[0]):
        prefetch_ahead(d_weights, rows, t)
        for j in range(L):
            d_bias[j] += d_emissions[t, j]
        for k in range(rows.shape[1]):
            r = rows[t, k]
            for j in range(L):
                d_weights[r, j] += d_emissions[t, j]


@njit(cache=True, nogil=True)
def chain_nll(rows, lengths, gold, weights, bias, transitions, start, end, emissions,
              d_emissions, nll, d_weights, d_bias, d_transitions, d_start, d_end):
    """Summed negative log-likelihood of a shard of chains; gradients added into ``d_*``.

    ``emissions`` and ``d_emissions`` (N, L) and ``nll`` (S,) are workspaces
    (overwritten). ``gold`` is (N,) int64, -1 where unknown (marginalised).
    Forbidden moves of a span scheme are ``-inf`` in ``transitions``,
    ``start``, ``end``. Returns the sum of ``nll``.
    """
    gather_sum(weights, bias, rows, np.float64(1.0), emissions)
    d_emissions[:] = 0.0
    chain.nll_gradient(emissions, lengths, transitions, start, end, gold, nll, d_emissions,
                       d_transitions, d_start, d_end, FALSE)
    scatter_sum(d_emissions, rows, d_weights, d_bias)
    return nll.sum()


@njit(cache=True, nogil=True)
def tree_nll(rows, lengths, heads, order, rel, gold, weights, bias, pair, root, emissions,
             d_emissions, nll, d_weights, d_bias, d_pair, d_root):
    """As :func:`chain_nll` for a shard of dependency forests (``heads`` shard-relative)."""
    gather_sum(weights, bias, rows, np.float64(1.0), emissions)
    d_emissions[:] = 0.0
    tree.nll_gradient(emissions, lengths, heads, order, pair, rel, root, gold, nll,
                      d_emissions, d_pair, d_root, FALSE)
    scatter_sum(d_emissions, rows, d_weights, d_bias)
    return nll.sum()


@njit(cache=True, nogil=True)
def gather_zeroed(weights, bias, rows, emissions, d_emissions):
    """The shard's emissions (``gather_sum``) and ``d_emissions`` zeroed, without the GIL."""
    gather_sum(weights, bias, rows, np.float64(1.0), emissions)
    d_emissions[:] = 0.0


@njit(cache=True, nogil=True)
def scatter_gradient(d_emissions, rows, d_weights, d_bias):
    """:func:`scatter_sum` without the GIL."""
    scatter_sum(d_emissions, rows, d_weights, d_bias)
