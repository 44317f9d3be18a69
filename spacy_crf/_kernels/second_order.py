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

# the first-order chain's shift, underflow guard and semiring modes: one rule for both kernels
from .primitives import (FALSE, MAX, NEG_INF, SCALED, ZERO, all_known, allowed, finite_max,
                         logaddexp, within_guard)
from .span_probabilities import blocked_rows


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
def _scaled_sequence(emissions, o, n, src, dst, exp_w, in_ptr, in_edges, out_ptr, out_edges,
                     exp_s, exp_e, shifts, alpha, beta, ex, scale, out_log_z):
    """The scaled forward-backward of the sequence at rows ``o:o+n`` (``n > 0``).

    Fills ``alpha`` (rows sum to one), ``beta`` (``sum_d alpha[t, d] beta[t, d]
    = z_hat`` at every ``t``), ``ex`` (the exponentiated, shifted emissions)
    and ``scale``. ``shifts`` holds the edge, start and end shifts, and a NaN
    in ``shifts[3]`` where they are not within the guard. The sequence's log Z
    goes to ``out_log_z[0]``. Returns ``z_hat``, NaN where scaling cannot
    represent the sequence or it has no labelling (the caller goes to logs).
    """
    P = emissions.shape[1]
    if shifts[3] != shifts[3]:
        return np.nan
    log_scale = shifts[1] + shifts[2]
    for t in range(n):
        row = emissions[o + t]
        m = finite_max(row)
        if not within_guard(row, m):
            return np.nan
        for d in range(P):
            ex[t, d] = np.exp(row[d] - m)
        log_scale += m
        if t > 0:
            log_scale += shifts[0]
    # forward: alpha_hat[t] sums to one
    no_back = np.zeros((1, 1), dtype=np.int64)  # SCALED keeps no back-pointers
    scales = _inside(emissions, o, n, src, exp_w, in_ptr, in_edges, exp_s, SCALED, alpha,
                     no_back, ex, scale)
    if scales != scales:
        return np.nan
    log_scale += scales
    z_hat = 0.0
    for d in range(P):
        z_hat += alpha[n - 1, d] * exp_e[d]
    if z_hat == 0.0:
        return np.nan
    out_log_z[0] = log_scale + np.log(z_hat)
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
    return z_hat


@njit(cache=True)
def _scaled_buffers(emissions, lengths, weight, start, end, force_log):
    """Work arrays of a scaled forward-backward over the batch's longest sequence
    (alpha, beta, ex, scale), the exponentiated potentials and their shifts;
    ``shifts[3]`` is NaN where scaling cannot represent them (or ``force_log``)."""
    P = emissions.shape[1]
    max_n = 0
    for s in range(lengths.shape[0]):
        max_n = max(max_n, lengths[s])
    w_shift = finite_max(weight)
    s_shift = finite_max(start)
    e_shift = finite_max(end)
    all_ok = within_guard(weight, w_shift) and within_guard(start, s_shift) and within_guard(end, e_shift)
    shifts = np.array([w_shift, s_shift, e_shift, 0.0 if all_ok and not force_log else np.nan])
    return (np.zeros((max_n, P)), np.zeros((max_n, P)), np.zeros((max_n, P)), np.zeros(max_n),
            np.exp(weight - w_shift), np.exp(start - s_shift), np.exp(end - e_shift), shifts)


@njit(cache=True)
def _counted_sequence(emissions, o, n, src, dst, exp_w, in_ptr, in_edges, out_ptr, out_edges,
                      exp_s, exp_e, shifts, alpha, beta, ex, scale, seq_log_z, sign, marginals,
                      mo, edge_sum, start_sum, end_sum):
    """The scaled forward-backward of the sequence at rows ``o:o+n``
    (:func:`_scaled_sequence`, its log Z in ``seq_log_z[0]``) and ``sign`` times
    its expected counts: its pair marginals added into ``marginals[mo:mo+n]``,
    its edge, start and end counts into ``edge_sum`` (E,), ``start_sum``,
    ``end_sum`` (P,). False, and nothing counted, where scaling cannot hold."""
    z_hat = _scaled_sequence(emissions, o, n, src, dst, exp_w, in_ptr, in_edges, out_ptr,
                             out_edges, exp_s, exp_e, shifts, alpha, beta, ex, scale, seq_log_z)
    if z_hat != z_hat:
        return False
    P = alpha.shape[1]
    for t in range(n):
        for d in range(P):
            marginals[mo + t, d] += sign * alpha[t, d] * beta[t, d] / z_hat
    for d in range(P):
        start_sum[d] += sign * alpha[0, d] * beta[0, d] / z_hat
        end_sum[d] += sign * alpha[n - 1, d] * exp_e[d] / z_hat
    for t in range(1, n):
        norm = scale[t] * z_hat
        for b in range(P):
            if alpha[t, b] == 0.0:
                continue
            tail = sign * ex[t, b] * beta[t, b] / norm
            for k in range(in_ptr[b], in_ptr[b + 1]):
                e = in_edges[k]
                edge_sum[e] += alpha[t - 1, src[e]] * exp_w[e] * tail
    return True


@njit(cache=True)
def sum_pass(emissions, lengths, src, dst, weight, in_ptr, in_edges, out_ptr, out_edges,
             start, end, log_z, marginals, edge_sum, start_sum, end_sum, status):
    """Log Z (S,), pair marginals added into ``marginals`` (N, P), expected edge,
    start and end counts added into ``edge_sum`` (E,), ``start_sum``, ``end_sum``
    (P,). ``status[s]`` is 1 where sequence ``s`` must be recomputed in log
    space (nothing is added for it), else 0."""
    alpha, beta, ex, scale, exp_w, exp_s, exp_e, shifts = _scaled_buffers(
        emissions, lengths, weight, start, end, FALSE)
    seq_log_z = np.zeros(1)
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        status[s] = 0
        if n == 0:
            log_z[s] = 0.0
            continue
        if _counted_sequence(emissions, o, n, src, dst, exp_w, in_ptr, in_edges, out_ptr,
                             out_edges, exp_s, exp_e, shifts, alpha, beta, ex, scale, seq_log_z,
                             1.0, marginals, o, edge_sum, start_sum, end_sum):
            log_z[s] = seq_log_z[0]
        else:
            status[s] = 1
        o += n


@njit(cache=True, nogil=True)  # nogil: the batch trainer runs one shard per thread
def shard_pass(emissions, lengths, gold, clamp, label, prev, pair_of, pair_score, src, dst,
               weight, in_ptr, in_edges, out_ptr, out_edges, start, end, sign, log_z,
               d_emissions, per_pair, edge_sum, start_sum, end_sum, status):
    """The batch trainer's sum pass over the pairs, from *token* emissions (N, L).

    Each sequence's pair emissions are built as it is reached,
    ``emissions[t, label[p]] + pair_score[p]`` (with ``clamp``, ``-inf`` for
    the pairs that disagree with ``gold`` at the token or the one before, as
    ``_Expanded.mask``), so no ``(N, P)`` array is made. ``sign`` times the
    expected counts go into the token gradient ``d_emissions`` (N, L), at each
    pair's label, and into ``per_pair`` (its summed marginals), ``edge_sum``,
    ``start_sum``, ``end_sum``. A clamped sequence whose gold is all known has
    one labelling: its path is scored and counted directly (``-inf`` and
    nothing counted where a pair or edge of it is not kept). ``status[s]`` is 1
    where sequence ``s`` must be recomputed exactly (nothing added for it).
    """
    P = label.shape[0]
    max_n = 1
    for s in range(lengths.shape[0]):
        max_n = max(max_n, lengths[s])
    pairs = np.empty((max_n, P))
    alpha, beta, ex, scale, exp_w, exp_s, exp_e, shifts = _scaled_buffers(
        pairs, lengths, weight, start, end, FALSE)
    seq_log_z = np.zeros(1)
    counts = np.empty_like(alpha)
    path = np.empty(max_n, dtype=np.int64)
    path_edges = np.empty(max_n, dtype=np.int64)
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        status[s] = 0
        if n == 0:
            log_z[s] = 0.0
            continue
        if clamp and all_known(gold, o, n):
            log_z[s] = _gold_path(emissions, o, n, gold, pair_of, pair_score, weight, out_ptr,
                                  out_edges, dst, start, end, sign, path, path_edges,
                                  d_emissions, per_pair, edge_sum, start_sum, end_sum)
            o += n
            continue
        for i in range(n):
            t = o + i
            for p in range(P):
                # clamped: the pair's label agrees with gold here, its previous one there
                if clamp and not (allowed(gold, t, label[p])
                                  and (i == 0 or allowed(gold, t - 1, prev[p]))):
                    pairs[i, p] = NEG_INF
                else:
                    pairs[i, p] = emissions[t, label[p]] + pair_score[p]
        counts[:n] = 0.0
        if _counted_sequence(pairs, 0, n, src, dst, exp_w, in_ptr, in_edges, out_ptr, out_edges,
                             exp_s, exp_e, shifts, alpha, beta, ex, scale, seq_log_z, sign,
                             counts, ZERO, edge_sum, start_sum, end_sum):
            log_z[s] = seq_log_z[0]
            for i in range(n):
                for d in range(P):
                    d_emissions[o + i, label[d]] += counts[i, d]
                    per_pair[d] += counts[i, d]
        else:
            status[s] = 1
        o += n


@njit(cache=True)
def _gold_path(emissions, o, n, gold, pair_of, pair_score, weight, out_ptr, out_edges, dst,
               start, end, sign, path, path_edges, d_emissions, per_pair, edge_sum, start_sum,
               end_sum):
    """The score of the one labelling ``gold[o:o+n]`` (all known) and, where it is
    finite, ``sign`` times its counts (one per pair, edge, start and end of the
    path); ``-inf`` and no count where a pair or edge of it is not kept.
    ``path`` and ``path_edges`` (n,) receive its pairs and the edges into them."""
    first = pair_of[0, gold[o]]
    if first < 0:
        return NEG_INF
    path[0] = first
    score = start[first] + emissions[o, gold[o]] + pair_score[first]
    for i in range(1, n):
        p = pair_of[gold[o + i - 1] + 1, gold[o + i]]
        if p < 0:
            return NEG_INF
        e = _edge(path[i - 1], p, out_ptr, out_edges, dst)
        if e < 0:
            return NEG_INF
        path[i] = p
        path_edges[i] = e
        score += weight[e] + emissions[o + i, gold[o + i]] + pair_score[p]
    score += end[path[n - 1]]
    if not np.isfinite(score):
        return score
    start_sum[path[0]] += sign
    end_sum[path[n - 1]] += sign
    for i in range(n):
        d_emissions[o + i, gold[o + i]] += sign
        per_pair[path[i]] += sign
        if i > 0:
            edge_sum[path_edges[i]] += sign
    return score


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
    o = ZERO
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


# --------------------------------------------------------------------------- span probabilities
#
# P(span [a, b) with labels y_a .. y_{b-1}) is the mass of the pair paths that
# take those labels there and, at b, no label that would continue the span:
#
#   at a:       any pair (x, y_a): alpha[a, (x, y_a)]
#   at a + 1:   v = sum_x alpha[a, (x, y_a)] w[(x, y_a) -> (y_a, y_{a+1})] e(a + 1, (y_a, y_{a+1}))
#   a+2..b-1:   one pair per token: v *= w[edge] e(t, (y_{t-1}, y_t))
#   at b - 1:   v * R, R = beta[b - 1, pair] without a blocked label after the span,
#               else the sum of beta's terms over the unblocked next labels
#
# divided by Z. So one forward-backward per sequence serves all its spans, and a
# span costs its length (plus the in- and out-edges of two pairs): linear in tokens.


@njit(cache=True)
def _edge(p, q, out_ptr, out_edges, dst):
    """The edge from pair ``p`` to pair ``q``, -1 if they do not join."""
    for k in range(out_ptr[p], out_ptr[p + 1]):
        e = out_edges[k]
        if dst[e] == q:
            return e
    return -1


@njit(cache=True)
def _tail_scaled(d, n, b, label, dst, exp_w, out_ptr, out_edges, blocked_after, has_blocked,
                 beta, ex, scale):
    """R (scaled) for a span ending at ``b`` in pair ``d``: beta without a blocked
    next label, else its terms over the labels that do not continue the span."""
    y = label[d]
    if b == n or not has_blocked[y]:
        return beta[b - 1, d]
    acc = 0.0
    for k in range(out_ptr[d], out_ptr[d + 1]):
        e = out_edges[k]
        q = dst[e]
        if not blocked_after[y, label[q]]:
            acc += exp_w[e] * ex[b, q] * beta[b, q]
    return acc / scale[b]


@njit(cache=True)
def _tail_log(d, o, n, b, label, dst, weight, out_ptr, out_edges, blocked_after, has_blocked,
              emissions, lb):
    """log R for a span ending at ``b`` in pair ``d``, in log space."""
    y = label[d]
    if b == n or not has_blocked[y]:
        return lb[b - 1, d]
    acc = NEG_INF
    for k in range(out_ptr[d], out_ptr[d + 1]):
        e = out_edges[k]
        q = dst[e]
        if not blocked_after[y, label[q]]:
            acc = logaddexp(acc, weight[e] + emissions[o + b, q] + lb[b, q])
    return acc


@njit(cache=True)
def _span_scaled(o, n, a, b, labels, pair_of, label, src, dst, exp_w, in_ptr, in_edges,
                 out_ptr, out_edges, blocked_after, has_blocked, alpha, beta, ex, scale, z_hat):
    """log P(span [a, b)) of the sequence at rows ``o:o+n`` from its scaled pass."""
    P = alpha.shape[1]
    y = labels[o + a]
    if b - a == 1:  # the pair at a is (any label, y): sum over them
        total = 0.0
        for d in range(P):
            if label[d] == y and alpha[a, d] > 0.0:
                total += alpha[a, d] * _tail_scaled(d, n, b, label, dst, exp_w, out_ptr,
                                                    out_edges, blocked_after, has_blocked,
                                                    beta, ex, scale)
        return np.log(total) - np.log(z_hat)
    q = pair_of[y + 1, labels[o + a + 1]]
    if q < 0:
        return NEG_INF
    acc = 0.0
    for k in range(in_ptr[q], in_ptr[q + 1]):  # every edge into q leaves a pair (x, y)
        e = in_edges[k]
        acc += alpha[a, src[e]] * exp_w[e]
    # products of factors below one underflow on a long span: summed in logs
    log_v = np.log(acc) + np.log(ex[a + 1, q]) - np.log(scale[a + 1])
    for t in range(a + 2, b):
        p = q
        q = pair_of[labels[o + t - 1] + 1, labels[o + t]]
        if q < 0:
            return NEG_INF
        e = _edge(p, q, out_ptr, out_edges, dst)
        if e < 0:
            return NEG_INF
        log_v += np.log(exp_w[e]) + np.log(ex[t, q]) - np.log(scale[t])
    tail = _tail_scaled(q, n, b, label, dst, exp_w, out_ptr, out_edges, blocked_after,
                        has_blocked, beta, ex, scale)
    return log_v + np.log(tail) - np.log(z_hat)


@njit(cache=True)
def _span_log(o, n, a, b, labels, pair_of, label, src, dst, weight, in_ptr, in_edges,
              out_ptr, out_edges, blocked_after, has_blocked, emissions, la, lb, log_z):
    """log P(span [a, b)) of the sequence at rows ``o:o+n`` from its log-space pass."""
    P = la.shape[1]
    y = labels[o + a]
    if b - a == 1:
        total = NEG_INF
        for d in range(P):
            if label[d] == y and la[a, d] != NEG_INF:
                total = logaddexp(total, la[a, d] + _tail_log(
                    d, o, n, b, label, dst, weight, out_ptr, out_edges, blocked_after,
                    has_blocked, emissions, lb))
        return total - log_z
    q = pair_of[y + 1, labels[o + a + 1]]
    if q < 0:
        return NEG_INF
    acc = NEG_INF
    for k in range(in_ptr[q], in_ptr[q + 1]):
        e = in_edges[k]
        acc = logaddexp(acc, la[a, src[e]] + weight[e])
    log_v = acc + emissions[o + a + 1, q]
    for t in range(a + 2, b):
        p = q
        q = pair_of[labels[o + t - 1] + 1, labels[o + t]]
        if q < 0:
            return NEG_INF
        e = _edge(p, q, out_ptr, out_edges, dst)
        if e < 0:
            return NEG_INF
        log_v += weight[e] + emissions[o + t, q]
    tail = _tail_log(q, o, n, b, label, dst, weight, out_ptr, out_edges, blocked_after,
                     has_blocked, emissions, lb)
    return log_v + tail - log_z


@njit(cache=True)
def _log_sequence(emissions, o, n, src, dst, weight, in_ptr, in_edges, out_ptr, out_edges,
                  start, end, la, lb):
    """Log-space alpha and beta of the sequence at rows ``o:o+n``; returns its log Z
    (``-inf`` where it has no labelling). Exact where scaling cannot serve."""
    P = emissions.shape[1]
    for d in range(P):
        la[0, d] = start[d] + emissions[o, d]
    for t in range(1, n):
        for d in range(P):
            acc = NEG_INF
            if emissions[o + t, d] != NEG_INF:
                for k in range(in_ptr[d], in_ptr[d + 1]):
                    e = in_edges[k]
                    acc = logaddexp(acc, la[t - 1, src[e]] + weight[e])
            la[t, d] = acc + emissions[o + t, d]
    log_z = NEG_INF
    for d in range(P):
        lb[n - 1, d] = end[d]
        log_z = logaddexp(log_z, la[n - 1, d] + end[d])
    for t in range(n - 2, -1, -1):
        for d in range(P):
            acc = NEG_INF
            for k in range(out_ptr[d], out_ptr[d + 1]):
                e = out_edges[k]
                q = dst[e]
                acc = logaddexp(acc, weight[e] + emissions[o + t + 1, q] + lb[t + 1, q])
            lb[t, d] = acc
    return log_z


@njit(cache=True)
def span_log_probabilities(emissions, lengths, src, dst, weight, in_ptr, in_edges, out_ptr,
                           out_edges, start, end, pair_of, label, labels, starts, ends,
                           blocked_after, force_log, log_z, log_p):
    """Log probability of every span ``[starts[k], ends[k])`` of ``labels`` (N,).

    ``emissions`` (N, P) are the pair emissions with ``-inf`` where fixed labels
    exclude a pair; ``pair_of`` (L + 1, L) the pair index of ``(previous + 1,
    label)`` (row 0: START), -1 where not kept; ``label`` (P,) each pair's
    label. Spans are sorted by start, each inside one sequence (the caller
    checks); ``blocked_after`` (L, L) ``[i, j]`` where label ``j`` after a span
    ending in ``i`` would continue it. Fills ``log_z`` (S,) and ``log_p`` (M,):
    NaN for the spans of a sequence with no labelling. One forward-backward
    per sequence, scaled, or in log space where scaling cannot represent it
    (or ``force_log``).
    """
    alpha, beta, ex, scale, exp_w, exp_s, exp_e, shifts = _scaled_buffers(
        emissions, lengths, weight, start, end, force_log)
    seq_log_z = np.zeros(1)
    has_blocked = blocked_rows(blocked_after)
    o = ZERO
    k = 0
    for s in range(lengths.shape[0]):
        n = lengths[s]
        log_z[s] = 0.0
        if n == 0:
            continue
        z_hat = _scaled_sequence(emissions, o, n, src, dst, exp_w, in_ptr, in_edges, out_ptr,
                                 out_edges, exp_s, exp_e, shifts, alpha, beta, ex, scale,
                                 seq_log_z)
        scaled = z_hat == z_hat
        if scaled:
            log_z[s] = seq_log_z[0]
        else:  # alpha and beta hold log-space values from here on
            log_z[s] = _log_sequence(emissions, o, n, src, dst, weight, in_ptr, in_edges,
                                     out_ptr, out_edges, start, end, alpha, beta)
        while k < starts.shape[0] and starts[k] < o + n:
            a = starts[k] - o
            b = ends[k] - o
            if log_z[s] == NEG_INF:
                log_p[k] = np.nan
            elif scaled:
                log_p[k] = _span_scaled(o, n, a, b, labels, pair_of, label, src, dst, exp_w,
                                        in_ptr, in_edges, out_ptr, out_edges, blocked_after,
                                        has_blocked, alpha, beta, ex, scale, z_hat)
            else:
                log_p[k] = _span_log(o, n, a, b, labels, pair_of, label, src, dst, weight,
                                     in_ptr, in_edges, out_ptr, out_edges, blocked_after,
                                     has_blocked, emissions, alpha, beta, log_z[s])
            k += 1
        o += n
