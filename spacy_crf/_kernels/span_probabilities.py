"""Exact probabilities of given spans under a linear-chain CRF (numba only, no spaCy).

A span ``[a, b)`` of a labelling ``y`` (its tags ``y_a .. y_{b-1}``) has

    P(span) = alpha[a, y_a] * prod_{t=a+1}^{b-1} T(y_{t-1}, y_t) e(t, y_t) * R / Z
    R       = sum_{j not in blocked_after[y_{b-1}]} T(y_{b-1}, j) e(b, j) beta[b, j]   (b < n)
    R       = end(y_{b-1})                                                           (b = n)

the mass of the labellings that take exactly those tags there and, at ``b``,
no tag that would continue the span (``blocked_after``: in BIO, ``I-X`` after
``B-X`` or ``I-X``). Without a blocked tag, ``R`` is ``beta[b-1, y_{b-1}]``.
One forward-backward per sequence (``chain``'s, the same one the token
marginals use) gives ``alpha`` and ``beta`` for all its spans, so the cost is
linear in tokens however many spans there are. ``fixed`` restricts every
labelling, as in ``chain``; a span whose tags ``fixed`` forbids gets
probability 0.

In the scaled space of ``chain`` (rows of alpha sum to one, ``scale[t]`` per
position) Z cancels: ``P = alpha[a, y_a] * prod (T e / scale[t]) * R / scale[b]``
with ``R`` from the scaled beta. The product is summed in logs, so a long or
unlikely span underflows nowhere; sequences that scaling cannot represent take
``chain``'s log-space path, and the formula above in logs.
"""

import numpy as np
from numba import njit

from .chain import max_length, scaled_potentials, sequence_log, sequence_scaled
from .primitives import FALSE, NEG_INF, ZERO, allowed, logaddexp


@njit(cache=True)
def blocked_rows(blocked_after):
    """(L,) whether some label after a span ending in label ``i`` would continue it."""
    L = blocked_after.shape[0]
    out = np.zeros(L, dtype=np.bool_)
    for i in range(L):
        for j in range(blocked_after.shape[1]):
            if blocked_after[i, j]:
                out[i] = True
    return out


@njit(cache=True)
def _span_scaled(n, a, b, labels, transitions, t_shift, exp_t, blocked_after, has_blocked,
                 alpha, beta, ex, scale):
    """log P(span [a, b)) from scaled alpha, beta, ex and scale of one sequence."""
    y = labels[a]
    # alpha[a, y] holds every prefix up to a (start, or the sum over y_{a-1}) and e(a, y)
    log_p = np.log(alpha[a, y])
    # log prod_{t=a+1}^{b-1} T(y_{t-1}, y_t) ex[t, y_t] / scale[t]   (ex is 0 where fixed forbids y_t)
    for t in range(a + 1, b):
        prev, y = y, labels[t]
        log_p += transitions[prev, y] - t_shift + np.log(ex[t, y]) - np.log(scale[t])
    if b == n or not has_blocked[y]:
        return log_p + np.log(beta[b - 1, y])
    # R / scale[b] = sum_{j not blocked} T(y, j) ex[b, j] beta[b, j] / scale[b]
    # (beta[b-1, y] is the same sum over every j; ex[b, j] is 0 where fixed forbids j)
    acc = 0.0
    for j in range(exp_t.shape[1]):
        if not blocked_after[y, j]:
            acc += exp_t[y, j] * ex[b, j] * beta[b, j]
    return log_p + np.log(acc) - np.log(scale[b])


@njit(cache=True)
def _span_log(em, fx, n, a, b, labels, transitions, blocked_after, has_blocked, alpha, beta):
    """log (Z * P(span [a, b))) from log-space alpha and beta of one sequence."""
    y = labels[a]
    log_p = alpha[a, y]
    # sum_{t=a+1}^{b-1} T(y_{t-1}, y_t) + e(t, y_t), -inf where fixed forbids y_t
    for t in range(a + 1, b):
        prev, y = y, labels[t]
        if not allowed(fx, t, y):
            return NEG_INF
        log_p += transitions[prev, y] + em[t, y]
    if b == n or not has_blocked[y]:
        return log_p + beta[b - 1, y]
    # log R = logsumexp_{j not blocked, allowed at b} T(y, j) + e(b, j) + beta[b, j]
    acc = NEG_INF
    for j in range(em.shape[1]):
        if not blocked_after[y, j] and allowed(fx, b, j):
            acc = logaddexp(acc, transitions[y, j] + em[b, j] + beta[b, j])
    return log_p + acc


@njit(cache=True)
def span_log_probabilities(emissions, lengths, transitions, start, end, fixed, labels, starts,
                           ends, blocked_after, log_z, log_p, force_log):
    """Log probability of every span ``[starts[k], ends[k])`` of ``labels``.

    ``starts`` and ``ends`` are absolute rows, sorted by start, each span
    inside one sequence (the caller checks). ``blocked_after`` is (L, L)
    bool: ``[i, j]`` where tag ``j`` after a span ending in tag ``i`` would
    continue it. Fills ``log_z`` (S,) and ``log_p`` (M,); ``log_p`` is NaN
    for the spans of a sequence that ``fixed`` leaves no labelling.
    """
    L = emissions.shape[1]
    max_len = max_length(lengths)
    alpha = np.empty((max_len, L))
    beta = np.empty((max_len, L))
    ex = np.empty((max_len, L))
    scale = np.empty(max_len)
    # chain's pass also accumulates marginals and expected counts: scratch space here
    marginals = np.zeros((max_len, L))
    edge_sum = np.zeros((L, L))
    start_sum = np.zeros(L)
    end_sum = np.zeros(L)
    no_edges = np.zeros((1, 1, 1))
    factors = scaled_potentials(transitions, start, end)
    exp_t = factors[0]
    t_shift = factors[4][0]  # NaN where scaling cannot serve: every sequence goes to logs
    has_blocked = blocked_rows(blocked_after)
    # per sequence: one forward-backward (scaled, or in logs where scaling fails),
    # then each of its spans from alpha at its start, beta at its end and the
    # potentials in between (the formula of the module docstring)
    o = ZERO
    k = 0
    for s in range(lengths.shape[0]):
        n = lengths[s]
        log_z[s] = 0.0
        if n == 0:
            continue
        em = emissions[o:o + n]
        fx = fixed[o:o + n]
        ys = labels[o:o + n]
        scaled = False
        if not force_log:
            z = sequence_scaled(em, ZERO, n, factors, fx, 1.0, marginals, edge_sum,
                                start_sum, end_sum, no_edges, FALSE, alpha, beta, ex, scale)
            scaled = z == z
        if not scaled:
            z = sequence_log(em, ZERO, n, transitions, start, end, fx, 1.0, marginals, edge_sum,
                             start_sum, end_sum, no_edges, FALSE, alpha, beta)
        log_z[s] = z
        while k < starts.shape[0] and starts[k] < o + n:
            a = starts[k] - o
            b = ends[k] - o
            if z == NEG_INF:
                log_p[k] = np.nan
            elif scaled:
                log_p[k] = _span_scaled(n, a, b, ys, transitions, t_shift, exp_t,
                                        blocked_after, has_blocked, alpha, beta, ex, scale)
            else:
                log_p[k] = _span_log(em, fx, n, a, b, ys, transitions, blocked_after,
                                     has_blocked, alpha, beta) - z
            k += 1
        o += n
