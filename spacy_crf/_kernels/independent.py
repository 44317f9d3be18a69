"""Kernels of the zeroth-order CRF: each token's label on its own (numba only).

With no label interactions the distribution over a sequence's labellings
factorises over its tokens, so every quantity is per token:

    log Z(s)       = sum_{t in s} log sum_j exp(e[t, j])
    P(y_t = j)     = exp(e[t, j]) / sum_k exp(e[t, k])
    MAP y_t        = argmax_j e[t, j]
    nll(s, gold)   = sum_{t in s, gold[t] >= 0} log sum_j exp(e[t, j]) - e[t, gold[t]]
    d nll / d e[t] = P(y_t = .) - onehot(gold[t])     (0 where gold[t] < 0)

``fixed[t] >= 0`` allows only that label at ``t`` (forced decoding); ``-inf``
emissions are labels a target forbids. A token with no allowed label gives
log Z = -inf, and its marginals are 0.
"""

import numpy as np
from numba import njit

from .primitives import NEG_INF, allowed


@njit(cache=True)
def _log_norm(emissions, fixed, t):
    """log sum_j exp(e[t, j]) over the labels row ``t`` may take."""
    top = NEG_INF
    for j in range(emissions.shape[1]):
        if allowed(fixed, t, j) and emissions[t, j] > top:
            top = emissions[t, j]
    if top == NEG_INF:
        return NEG_INF
    total = 0.0
    for j in range(emissions.shape[1]):
        if allowed(fixed, t, j):
            total += np.exp(emissions[t, j] - top)
    return top + np.log(total)


@njit(cache=True)
def marginals(emissions, lengths, fixed, log_z, out):
    """Fill ``log_z`` (S,) and the token marginals ``out`` (N, L)."""
    t = 0
    for s in range(lengths.shape[0]):
        total = 0.0
        for _ in range(lengths[s]):
            norm = _log_norm(emissions, fixed, t)
            total += norm
            for j in range(emissions.shape[1]):
                if norm == NEG_INF or not allowed(fixed, t, j):
                    out[t, j] = 0.0
                else:
                    out[t, j] = np.exp(emissions[t, j] - norm)
            t += 1
        log_z[s] = total


@njit(cache=True)
def best_labels(emissions, lengths, fixed, labels, best):
    """Fill ``labels`` (N,) with each row's best allowed label and ``best`` (S,)
    with each sequence's score of its best labelling (ties: the lowest label)."""
    t = 0
    for s in range(lengths.shape[0]):
        total = 0.0
        for _ in range(lengths[s]):
            arg, top = 0, NEG_INF
            for j in range(emissions.shape[1]):
                if allowed(fixed, t, j) and emissions[t, j] > top:
                    arg, top = j, emissions[t, j]
            if top == NEG_INF and fixed[t] >= 0:
                arg = fixed[t]
            labels[t] = arg
            total += top
            t += 1
        best[s] = total


@njit(cache=True)
def nll_gradient(emissions, lengths, gold, nll, d_emissions):
    """Fill ``nll`` (S,) with each sequence's negative log-likelihood of
    ``gold`` (-1: unannotated, marginalised out) and ``d_emissions`` (N, L)."""
    free = np.full(emissions.shape[0], -1, dtype=np.int64)
    t = 0
    for s in range(lengths.shape[0]):
        total = 0.0
        for _ in range(lengths[s]):
            g = gold[t]
            if g >= 0:
                norm = _log_norm(emissions, free, t)
                total += norm - emissions[t, g]
                for j in range(emissions.shape[1]):
                    if norm == NEG_INF:
                        d_emissions[t, j] = 0.0
                    else:
                        d_emissions[t, j] = np.exp(emissions[t, j] - norm)
                d_emissions[t, g] -= 1.0
            else:
                for j in range(emissions.shape[1]):
                    d_emissions[t, j] = 0.0
            t += 1
        nll[s] = total
