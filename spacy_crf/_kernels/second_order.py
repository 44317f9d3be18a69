"""Second-order chain kernels over label pairs, with sparse pair transitions (numba only).

The second-order chain is a first-order chain over label pairs
``(y_{t-1}, y_t)`` (``spacy_crf/structures/second_order.py``), but a pair
``(a, b)`` can only be followed by a pair ``(b, c)``: of the ``P x P`` pair
transitions only the ``E`` *edges* between joining pairs exist (one per
allowed label triple). These kernels walk the edges, so a token costs ``E``
multiply-adds instead of ``P**2``.

Conventions:

* ``emissions`` ``(N, P)`` float64 pair scores of the concatenated tokens,
  ``-inf`` where a pair is excluded (fixed labels); ``lengths`` ``(S,)``.
* ``src``, ``dst``, ``weight`` ``(E,)``: edge ``e`` goes from pair ``src[e]``
  at ``t - 1`` to pair ``dst[e]`` at ``t`` and scores ``weight[e]``;
  ``in_ptr`` ``(P + 1,)`` and ``in_edges`` list the edges into each pair,
  ``out_ptr`` and ``out_edges`` those out of it.
* ``start``, ``end`` ``(P,)`` pair start / end scores (``-inf`` where not allowed).

The sum pass runs in probability space with one scale factor per position,
as the first-order chain does. A sequence whose shifted scores fall below
the chain's ``UNDERFLOW_GUARD`` (where scaling could lose mass) or that has no labelling
is flagged in ``status`` instead: the caller recomputes it exactly in log
space. Viterbi runs in log space. Both run the one forward recurrence,
:func:`_inside`, in its sum (scaled) or max mode.
"""

import numpy as np
from numba import njit

# the first-order chain's shift and underflow guard: one rule for both kernels
from .chain import NEG_INF, _finite_max
from .chain import _within_guard as _guarded


#: the semiring of the forward pass (the first-order chain's names)
SCALED, MAX = 0, 2


@njit(cache=True)
def _inside(emissions, o, n, src, weight, in_ptr, in_edges, start, mode, alpha, back, ex, scale):
    """The forward recurrence over pairs for the sequence at rows ``o:o+n``:

        alpha[0, d] = start(d) (x) e(0, d)
        alpha[t, d] = e(t, d) (x) (+)_{edges k into d} alpha[t-1, src[k]] (x) w[k]

    * ``SCALED``: ``ex``, ``start`` and ``weight`` hold exponentiated, shifted
      scores; (+) is a sum, (x) a product, and each row is divided by its sum
      ``scale[t]``. Returns the log of the scales, or NaN where a row vanishes.
    * ``MAX``: log-space scores; (+) is max (ties to the first edge), kept in
      ``back`` as the previous pair. Returns 0.
    """
    P = alpha.shape[1]
    log_scale = 0.0
    for d in range(P):
        if mode == SCALED:
            alpha[0, d] = start[d] * ex[0, d]
        else:
            alpha[0, d] = start[d] + emissions[o, d]
    for t in range(n):
        if t > 0 and mode == SCALED:
            for d in range(P):
                acc = 0.0
                if ex[t, d] != 0.0:
                    for k in range(in_ptr[d], in_ptr[d + 1]):
                        e = in_edges[k]
                        acc += alpha[t - 1, src[e]] * weight[e]
                alpha[t, d] = acc * ex[t, d]
        elif t > 0:
            for d in range(P):
                top = NEG_INF
                arg = 0
                if emissions[o + t, d] != NEG_INF:
                    for k in range(in_ptr[d], in_ptr[d + 1]):
                        e = in_edges[k]
                        v = alpha[t - 1, src[e]] + weight[e]
                        if v > top:
                            top = v
                            arg = src[e]
                alpha[t, d] = top + emissions[o + t, d]
                back[t, d] = arg
        if mode == SCALED:
            c = 0.0
            for d in range(P):
                c += alpha[t, d]
            if c == 0.0:
                return np.nan
            scale[t] = c
            log_scale += np.log(c)
            for d in range(P):
                alpha[t, d] /= c
    return log_scale


@njit(cache=True)
def sum_pass(emissions, lengths, src, dst, weight, in_ptr, in_edges, out_ptr, out_edges,
             start, end, log_z, marginals, edge_sum, start_sum, end_sum, status):
    """Log Z (S,), pair marginals added into ``marginals`` (N, P), expected edge,
    start and end counts added into ``edge_sum`` (E,), ``start_sum``, ``end_sum``
    (P,). ``status[s]`` is 1 where sequence ``s`` must be recomputed in log
    space (nothing is added for it), else 0."""
    P = emissions.shape[1]
    max_n = 0
    for s in range(lengths.shape[0]):
        max_n = max(max_n, lengths[s])
    alpha = np.zeros((max_n, P))
    beta = np.zeros((max_n, P))
    ex = np.zeros((max_n, P))
    scale = np.zeros(max_n)
    w_shift = _finite_max(weight)
    s_shift = _finite_max(start)
    e_shift = _finite_max(end)
    all_ok = _guarded(weight, w_shift) and _guarded(start, s_shift) and _guarded(end, e_shift)
    exp_w = np.exp(weight - w_shift)
    exp_s = np.exp(start - s_shift)
    exp_e = np.exp(end - e_shift)
    no_back = np.zeros((1, 1), dtype=np.int64)  # SCALED keeps no back-pointers
    o = 0
    for s in range(lengths.shape[0]):
        n = lengths[s]
        status[s] = 0
        if n == 0:
            log_z[s] = 0.0
            continue
        ok = all_ok
        log_scale = s_shift + e_shift
        for t in range(n):
            row = emissions[o + t]
            m = _finite_max(row)
            if not _guarded(row, m):
                ok = False
                break
            for d in range(P):
                ex[t, d] = np.exp(row[d] - m)
            log_scale += m
            if t > 0:
                log_scale += w_shift
        if not ok:
            status[s] = 1
            o += n
            continue
        # forward: alpha_hat[t] sums to one
        scales = _inside(emissions, o, n, src, exp_w, in_ptr, in_edges, exp_s, SCALED, alpha,
                         no_back, ex, scale)
        if scales != scales:
            status[s] = 1
            o += n
            continue
        log_scale += scales
        z_hat = 0.0
        for d in range(P):
            z_hat += alpha[n - 1, d] * exp_e[d]
        if z_hat == 0.0:
            status[s] = 1
            o += n
            continue
        log_z[s] = log_scale + np.log(z_hat)
        # backward: beta_hat[t] such that sum_d alpha_hat[t, d] beta_hat[t, d] = z_hat.
        # Only pairs with alpha > 0 need it (every pair an edge reaches from one has
        # alpha > 0 too): under fixed labels (the likelihood's clamped pass) that is
        # one pair per token, and the pass costs next to nothing.
        for d in range(P):
            beta[n - 1, d] = exp_e[d]
        for t in range(n - 2, -1, -1):
            for a in range(P):
                if alpha[t, a] == 0.0:
                    beta[t, a] = 0.0
                    continue
                acc = 0.0
                for k in range(out_ptr[a], out_ptr[a + 1]):
                    e = out_edges[k]
                    b = dst[e]
                    acc += exp_w[e] * ex[t + 1, b] * beta[t + 1, b]
                beta[t, a] = acc / scale[t + 1]
        for t in range(n):
            for d in range(P):
                marginals[o + t, d] += alpha[t, d] * beta[t, d] / z_hat
        for d in range(P):
            start_sum[d] += alpha[0, d] * beta[0, d] / z_hat
            end_sum[d] += alpha[n - 1, d] * exp_e[d] / z_hat
        for t in range(1, n):
            norm = scale[t] * z_hat
            for b in range(P):
                if alpha[t, b] == 0.0:
                    continue
                tail = ex[t, b] * beta[t, b] / norm
                for k in range(in_ptr[b], in_ptr[b + 1]):
                    e = in_edges[k]
                    edge_sum[e] += alpha[t - 1, src[e]] * exp_w[e] * tail
        o += n


@njit(cache=True)
def viterbi(emissions, lengths, src, weight, in_ptr, in_edges, start, end, states, best):
    """Best pair of every token (``states`` (N,)) and each sequence's best score
    (``best`` (S,), ``-inf`` where nothing is allowed), in log space."""
    P = emissions.shape[1]
    max_n = 0
    for s in range(lengths.shape[0]):
        max_n = max(max_n, lengths[s])
    delta = np.full((max_n, P), NEG_INF)
    back = np.zeros((max_n, P), dtype=np.int64)
    no_ex, no_scale = np.zeros((1, 1)), np.zeros(1)  # MAX neither exponentiates nor scales
    o = 0
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            best[s] = 0.0
            continue
        _inside(emissions, o, n, src, weight, in_ptr, in_edges, start, MAX, delta, back, no_ex,
                no_scale)
        top = NEG_INF
        arg = 0
        for d in range(P):
            v = delta[n - 1, d] + end[d]
            if v > top:
                top = v
                arg = d
        best[s] = top
        states[o + n - 1] = arg
        for t in range(n - 1, 0, -1):
            states[o + t - 1] = back[t, states[o + t]]
        o += n
