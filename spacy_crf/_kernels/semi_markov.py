"""Semi-Markov CRF kernels over a ragged batch (numba only, no spaCy).

A labelling is a segmentation of each sequence into segments of at most ``D``
tokens, each of a *segment type* ``k``. Segments are scored in the tag space of
a span scheme, so the token-level scores of the chain serve unchanged: a
segment of type ``k`` and length ``d`` carries the tags

* ``unit[k]`` when ``d == 1``;
* ``begin[k]``, ``inside[k]`` x ``(d - 2)``, ``last[k]`` when ``d >= 2``

(BILUO: U / B I.. L; BIO: B / B I.. I; the outside type has only its unit,
``O``, and length 1). A segment scores the emissions of its tags, the
transitions between them, and ``seg[first row, d - 1, first tag]`` (the
segment features, conjoined with the segment's first tag); consecutive
segments score ``transitions[last tag, next first tag]``, and ``start`` /
``end`` the first and last tag of the sequence. With ``seg`` at zero this is
exactly the constrained chain over the labellings whose spans are at most ``D``
long, which the tests use.

Table ``-1`` entries mark tags a type does not have (no segments of the
lengths that would need them); ``maxlen[k]`` caps each type's length.

One recurrence, :func:`_forward`, serves both semirings (``use_max``: Viterbi
with back-pointers; else log-sum-exp: the partition function); the backward
pass and the expected counts exist only for the sum. Everything is in log
space: a token costs ``D * K`` segment terms plus ``L**2`` for entering a tag.
"""

import numpy as np
from numba import njit

from .kbest import merge_top_k
from .primitives import FALSE, NEG_INF, TRUE, ZERO, logaddexp


@njit(cache=True)
def _plus(a, b, use_max):
    """The semiring's addition: max, or log(exp(a) + exp(b))."""
    if use_max:
        return a if a > b else b
    return logaddexp(a, b)


@njit(cache=True)
def _tags(k, d, unit, begin, last):
    """First and last tag of a segment of type ``k`` and length ``d``."""
    if d == 1:
        return unit[k], unit[k]
    return begin[k], last[k]


@njit(cache=True)
def _write_segment(labels, a, b, k, unit, begin, inside, last):
    """The tags of a segment of type ``k`` over rows ``a .. b - 1``."""
    if b - a == 1:
        labels[a] = unit[k]
        return
    labels[a] = begin[k]
    for t in range(a + 1, b - 1):
        labels[t] = inside[k]
    labels[b - 1] = last[k]


@njit(cache=True)
def _inner(emissions, o, n, transitions, seg, unit, begin, inside, last, maxlen, inner):
    """``inner[i, k, d - 1]``: the score of the segment of type ``k`` covering
    rows ``o + i .. o + i + d - 1`` (its tags, the moves between them and its
    segment features), ``-inf`` where the type has no such segment."""
    D = inner.shape[2]
    for i in range(n):
        r = o + i
        for k in range(unit.shape[0]):
            dmax = min(D, maxlen[k], n - i)
            for d in range(D):
                inner[i, k, d] = NEG_INF
            if dmax < 1:
                continue
            u = unit[k]
            if u >= 0:
                inner[i, k, 0] = emissions[r, u] + seg[r, 0, u]
            b, m, e = begin[k], inside[k], last[k]
            if b < 0 or e < 0:
                continue
            middle = 0.0  # emissions of the inside tags so far
            middle_moves = 0.0  # begin -> inside -> ... -> inside
            for d in range(2, dmax + 1):
                if d == 2:
                    moves = transitions[b, e]
                else:
                    if m < 0:
                        break
                    middle += emissions[r + d - 2, m]
                    middle_moves += transitions[b, m] if d == 3 else transitions[m, m]
                    moves = middle_moves + transitions[m, e]
                inner[i, k, d - 1] = (emissions[r, b] + middle + emissions[r + d - 1, e] + moves
                                      + seg[r, d - 1, b])


@njit(cache=True)
def _forward(n, transitions, start, unit, begin, last, inner, use_max, alpha, enter, enter_arg,
             back_d, back_k):
    """``alpha[j, l]``: the best (max) or total (sum) score of the segmentations
    of the first ``j`` tokens whose last segment ends in tag ``l``;
    ``enter[i, f]``: of starting a segment with tag ``f`` at token ``i``
    (``start`` at 0). With ``use_max`` the back-pointers are filled too."""
    L = transitions.shape[0]
    K, D = inner.shape[1], inner.shape[2]
    for j in range(n + 1):
        for l in range(L):
            alpha[j, l] = NEG_INF
    for i in range(n):
        for f in range(L):
            if i == 0:
                enter[i, f] = start[f]
                enter_arg[i, f] = -1
                continue
            acc = NEG_INF
            arg = -1
            for y in range(L):
                v = alpha[i, y] + transitions[y, f]
                if use_max:
                    if v > acc:
                        acc, arg = v, y
                else:
                    acc = _plus(acc, v, FALSE)
            enter[i, f] = acc
            enter_arg[i, f] = arg
        for k in range(K):
            for d in range(1, min(D, n - i) + 1):
                s = inner[i, k, d - 1]
                if s == NEG_INF:
                    continue
                f, l = _tags(k, d, unit, begin, last)
                v = enter[i, f] + s
                if use_max:
                    if v > alpha[i + d, l]:
                        alpha[i + d, l] = v
                        back_d[i + d, l] = d
                        back_k[i + d, l] = k
                else:
                    alpha[i + d, l] = _plus(alpha[i + d, l], v, FALSE)


@njit(cache=True)
def _total(alpha, n, end, use_max):
    best = NEG_INF
    arg = -1
    for l in range(end.shape[0]):
        v = alpha[n, l] + end[l]
        if use_max:
            if v > best:
                best, arg = v, l
        else:
            best = _plus(best, v, FALSE)
    return best, arg


def _workspace(lengths, n_labels, n_types, D):
    n = max(int(lengths.max()) if lengths.shape[0] else 0, 1)
    return (np.empty((n + 1, n_labels)), np.empty((n, n_labels)),
            np.empty((n, n_labels), dtype=np.int64), np.zeros((n + 1, n_labels), dtype=np.int64),
            np.zeros((n + 1, n_labels), dtype=np.int64), np.empty((n, n_types, D)))


@njit(cache=True)
def _viterbi(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
             labels, best, alpha, enter, enter_arg, back_d, back_k, inner):
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            best[s] = 0.0
            continue
        _inner(emissions, o, n, transitions, seg, unit, begin, inside, last, maxlen, inner)
        _forward(n, transitions, start, unit, begin, last, inner, TRUE, alpha, enter, enter_arg,
                 back_d, back_k)
        score, l = _total(alpha, n, end, TRUE)
        best[s] = score
        if score == NEG_INF:  # no labelling (fixed labels that no segmentation allows)
            for t in range(n):
                labels[o + t] = 0
            o += n
            continue
        j = n
        while j > 0:
            d = back_d[j, l]
            k = back_k[j, l]
            i = j - d
            _write_segment(labels, o + i, o + j, k, unit, begin, inside, last)
            if i > 0:
                l = enter_arg[i, labels[o + i]]
            j = i
        o += n


def viterbi(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
            labels, best):
    """Fill ``labels`` (N,) with each sequence's best segmentation, as tags, and
    ``best`` (S,) with its score (``-inf``, labels 0, where there is none).

    ``emissions`` carry fixed labels as ``-inf`` on the tags they exclude."""
    work = _workspace(lengths, transitions.shape[0], unit.shape[0], seg.shape[1])
    _viterbi(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
             labels, best, *work)


@njit(cache=True)
def _sum(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
         log_z, marginals, d_transitions, d_start, d_end, d_seg,
         alpha, enter, enter_arg, back_d, back_k, inner):
    L = transitions.shape[0]
    K, D = inner.shape[1], inner.shape[2]
    n_max = enter.shape[0]
    beta = np.empty((n_max + 1, L))
    first_mass = np.empty((n_max, L))  # G[i, f]: segments from i with first tag f, and after
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            log_z[s] = 0.0
            continue
        _inner(emissions, o, n, transitions, seg, unit, begin, inside, last, maxlen, inner)
        _forward(n, transitions, start, unit, begin, last, inner, FALSE, alpha, enter, enter_arg,
                 back_d, back_k)
        z, _ = _total(alpha, n, end, FALSE)
        log_z[s] = z
        if z == NEG_INF:
            o += n
            continue
        for l in range(L):
            beta[n, l] = end[l]
        for i in range(n - 1, -1, -1):
            for f in range(L):
                first_mass[i, f] = NEG_INF
            for k in range(K):
                for d in range(1, min(D, n - i) + 1):
                    sc = inner[i, k, d - 1]
                    if sc == NEG_INF:
                        continue
                    f, l = _tags(k, d, unit, begin, last)
                    first_mass[i, f] = _plus(first_mass[i, f], sc + beta[i + d, l], FALSE)
            if i > 0:
                for y in range(L):
                    acc = NEG_INF
                    for f in range(L):
                        acc = _plus(acc, transitions[y, f] + first_mass[i, f], FALSE)
                    beta[i, y] = acc
        # expected counts: moves between segments, start and end
        for f in range(L):
            d_start[f] += np.exp(start[f] + first_mass[0, f] - z)
            d_end[f] += np.exp(alpha[n, f] + end[f] - z)
        for i in range(1, n):
            for y in range(L):
                if alpha[i, y] == NEG_INF:
                    continue
                for f in range(L):
                    v = alpha[i, y] + transitions[y, f] + first_mass[i, f]
                    if v != NEG_INF:
                        d_transitions[y, f] += np.exp(v - z)
        # each segment's marginal: its tokens' tags, its inner moves, its features
        for i in range(n):
            r = o + i
            for k in range(K):
                for d in range(1, min(D, n - i) + 1):
                    sc = inner[i, k, d - 1]
                    if sc == NEG_INF:
                        continue
                    f, l = _tags(k, d, unit, begin, last)
                    v = enter[i, f] + sc + beta[i + d, l]
                    if v == NEG_INF:
                        continue
                    p = np.exp(v - z)
                    d_seg[r, d - 1, f] += p
                    marginals[r, f] += p
                    if d == 1:
                        continue
                    marginals[r + d - 1, l] += p
                    if d == 2:
                        d_transitions[f, l] += p
                        continue
                    m = inside[k]
                    for t in range(r + 1, r + d - 1):
                        marginals[t, m] += p
                    d_transitions[f, m] += p
                    d_transitions[m, m] += p * (d - 3)
                    d_transitions[m, l] += p
        o += n


def sum_pass(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
             log_z, marginals, d_transitions, d_start, d_end, d_seg):
    """Forward-backward over segments: ``log_z`` (S,); and, added into the
    outputs, the token marginals (N, L), the expected counts of the moves
    (L, L), first and last tags (L,), and ``d_seg`` (N, D, L): the marginal of
    each segment, at its first row, length and first tag (a span's probability)."""
    work = _workspace(lengths, transitions.shape[0], unit.shape[0], seg.shape[1])
    _sum(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
         log_z, marginals, d_transitions, d_start, d_end, d_seg, *work)


@njit(cache=True)
def _insert(values, a, b, c, count, k, v, x, y, z):
    """Put ``v`` (with its back-pointers ``x, y, z``) into the descending list
    ``values[:count]`` of at most ``k``; returns the new count."""
    if v == NEG_INF or (count == k and v <= values[k - 1]):
        return count
    pos = count if count < k else k - 1
    while pos > 0 and values[pos - 1] < v:
        if pos < k:
            values[pos], a[pos], b[pos], c[pos] = values[pos - 1], a[pos - 1], b[pos - 1], c[pos - 1]
        pos -= 1
    values[pos], a[pos], b[pos], c[pos] = v, x, y, z
    return min(count + 1, k)


@njit(cache=True)
def _kbest(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
           k, labels, scores, counts, inner):
    L = transitions.shape[0]
    K, D = inner.shape[1], inner.shape[2]
    n_max = inner.shape[0]
    # alpha[j, l, r]: the r-th best segmentation of the first j tokens ending in tag l,
    # from segment length back_d, type back_k, entering rank back_r
    alpha = np.empty((n_max + 1, L, k))
    alpha_n = np.zeros((n_max + 1, L), dtype=np.int64)
    back_d = np.zeros((n_max + 1, L, k), dtype=np.int64)
    back_k = np.zeros((n_max + 1, L, k), dtype=np.int64)
    back_r = np.zeros((n_max + 1, L, k), dtype=np.int64)
    # enter[i, f, r]: the r-th best way to start a segment with tag f at token i,
    # from the previous segment's last tag enter_y and its rank enter_r
    enter = np.empty((n_max, L, k))
    enter_n = np.zeros((n_max, L), dtype=np.int64)
    enter_y = np.zeros((n_max, L, k), dtype=np.int64)
    enter_r = np.zeros((n_max, L, k), dtype=np.int64)
    heads = np.zeros(L, dtype=np.int64)
    final = np.empty(k)
    final_l = np.zeros(k, dtype=np.int64)
    final_r = np.zeros(k, dtype=np.int64)
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        for r in range(k):
            scores[s, r] = NEG_INF
        if n == 0:
            counts[s] = 0
            continue
        _inner(emissions, o, n, transitions, seg, unit, begin, inside, last, maxlen, inner)
        for j in range(n + 1):
            for l in range(L):
                alpha_n[j, l] = 0
        for i in range(n):
            for f in range(L):
                if i == 0:
                    enter_n[0, f] = 0
                    if start[f] != NEG_INF:
                        enter[0, f, 0] = start[f]
                        enter_y[0, f, 0] = -1
                        enter_r[0, f, 0] = 0
                        enter_n[0, f] = 1
                    continue
                enter_n[i, f] = merge_top_k(alpha[i], alpha_n[i], transitions[:, f], k, heads,
                                            enter[i, f], enter_y[i, f], enter_r[i, f])
            for t in range(K):
                for d in range(1, min(D, n - i) + 1):
                    sc = inner[i, t, d - 1]
                    if sc == NEG_INF:
                        continue
                    f, l = _tags(t, d, unit, begin, last)
                    for r in range(enter_n[i, f]):
                        alpha_n[i + d, l] = _insert(alpha[i + d, l], back_d[i + d, l],
                                                    back_k[i + d, l], back_r[i + d, l],
                                                    alpha_n[i + d, l], k, enter[i, f, r] + sc,
                                                    d, t, r)
        found = merge_top_k(alpha[n], alpha_n[n], end, k, heads, final, final_l, final_r)
        counts[s] = found
        for q in range(found):
            scores[s, q] = final[q]
            j, l, r = n, final_l[q], final_r[q]
            while j > 0:
                d, t, er = back_d[j, l, r], back_k[j, l, r], back_r[j, l, r]
                i = j - d
                _write_segment(labels[q], o + i, o + j, t, unit, begin, inside, last)
                f = labels[q, o + i]
                l, r = enter_y[i, f, er], enter_r[i, f, er]
                j = i
        o += n


def k_best(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
           k, labels, scores, counts):
    """The ``k`` best segmentations of every sequence, as tags: ``labels`` (k, N),
    ``scores`` (S, k) descending (``-inf`` past ``counts``), ``counts`` (S,).
    Each cell keeps its ``k`` best prefixes; entering a tag merges the sorted
    lists of the previous segment's last tags (``kbest.merge_top_k``)."""
    n = max(int(lengths.max()) if lengths.shape[0] else 0, 1)
    _kbest(emissions, lengths, transitions, start, end, seg, unit, begin, inside, last, maxlen,
           k, labels, scores, counts, np.empty((n, unit.shape[0], seg.shape[1])))
