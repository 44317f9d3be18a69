"""Exact k-best (list) Viterbi for the linear-chain CRF (numba only, no spaCy).

Same conventions as ``chain.py``: ``emissions`` is ``(N, L)`` float64 (the
concatenated tokens of a ragged batch), ``lengths`` is ``(S,)`` int64 and sums
to ``N``; ``transitions[i, j]`` scores label ``i`` followed by label ``j``,
``start[j]`` / ``end[j]`` a sequence starting / ending with ``j``; ``fixed`` is
``(N,)`` int64 with ``-1`` where a token is free, else its only allowed label.
Output arrays are allocated by the caller and filled here.

A labelling is *allowed* when it honours ``fixed`` and its score is above
``-inf``: a ``-inf`` transition, start, end or emission forbids every
labelling that uses it, and no such labelling is ever returned.

Each cell ``(t, j)`` keeps the ``k`` best prefixes that end in label ``j`` at
position ``t``, as (score, previous label, rank in the previous cell). The
lists of the cells at ``t - 1`` are sorted, so the ``k`` best of the ``L * k``
extensions come from one pass over the ``L`` lists, each read while it beats
the ``k``-th best so far: ``O(L k)`` per cell at worst, about ``L`` where few
lists have more than their best to add (3.7 to 9 times faster than ``k``
scans of the ``L`` heads), in workspace allocated once per call.

Order: scores descending; among equal scores (exact ties, e.g. integer
weights) the labelling with the lower label at the last position where two
labellings differ comes first. Rank 0 is therefore exactly ``chain.viterbi``'s
labelling and score (same arithmetic, same lowest-label tie-break).
"""

import numpy as np
from numba import njit

from .chain import max_length
from .primitives import NEG_INF, ZERO, allowed


@njit(cache=True)
def merge_top_k(prev, prev_cnt, add, k, heads, out_val, out_label, out_rank):
    """The ``k`` best of ``prev[i, r] + add[i]`` over ``i`` and ``r < prev_cnt[i]``.

    ``prev[i, :prev_cnt[i]]`` must be sorted descending. Writes the selected
    values, their ``i`` and ``r`` into ``out_val``, ``out_label``, ``out_rank``
    (best first; ties to the lower ``i``, then the lower ``r``) and returns how
    many were selected: at most ``k``, and never a ``-inf`` (or NaN) value.

    One pass over the lists, each read while it beats the ``k``-th best so far
    (it is sorted: its later entries are no better), each kept value put in
    place among the ``k``: a list costs one comparison where it has nothing
    to add, the usual case (``heads``: unused, kept for the callers).
    """
    if k <= 0:
        return 0
    count = 0
    for i in range(prev.shape[0]):
        a = add[i]
        for r in range(prev_cnt[i]):
            v = prev[i, r] + a
            if not v > NEG_INF:
                break  # (-inf or NaN: and the rest of the list no better)
            if count == k and not v > out_val[k - 1]:
                break  # a tie goes to the lower i, already kept
            count = keep_in_top_k(v, i, r, count, k, out_val, out_label, out_rank)
    return count


@njit(cache=True)
def keep_in_top_k(v, i, r, count, k, out_val, out_label, out_rank):
    """Put ``(v, i, r)`` among the ``count`` best kept (``count == k``: in place
    of the last, which ``v`` beats), after every kept value ``>= v`` (those
    read before it win ties); the new count."""
    pos = count if count < k else k - 1
    while pos > 0 and out_val[pos - 1] < v:
        out_val[pos] = out_val[pos - 1]
        out_label[pos] = out_label[pos - 1]
        out_rank[pos] = out_rank[pos - 1]
        pos -= 1
    out_val[pos] = v
    out_label[pos] = i
    out_rank[pos] = r
    return count + 1 if count < k else count


@njit(cache=True)
def kbest_viterbi(emissions, lengths, transitions, start, end, fixed, k, labels, scores,
                  counts):
    """The ``k`` best labellings of every sequence, honouring ``fixed``: the
    chain's, whose every move scores ``transitions`` (see :func:`kbest_moves`)."""
    moves = np.ascontiguousarray(transitions).reshape(1, transitions.shape[0],
                                                      transitions.shape[1])
    kbest_moves(emissions, lengths, moves, np.zeros(emissions.shape[0], dtype=np.int64),
                start, end, fixed, k, labels, scores, counts)


@njit(cache=True)
def kbest_moves(emissions, lengths, moves, move_of, start, end, fixed, k, labels, scores,
                counts):
    """The ``k`` best labellings of every sequence, honouring ``fixed``, where
    the move into token ``t`` scores ``moves[move_of[t]]`` (a chain: one
    matrix for every move; a pruned lattice: one per token, over its
    candidates).

    delta[0, j, 0]  = start(j) + e(0, j)
    delta[t, j, :]  = e(t, j) + k-max_{i, r} (delta[t-1, i, r] + T(i, j)),
                      back[t, j, :] = the (i, r) selected
    final           = k-max_{j, r} (delta[n-1, j, r] + end(j)), then follow ``back``.

    Parameters
    ----------
    emissions, lengths, start, end, fixed
        As in ``chain.viterbi``.
    moves : ndarray of float64, shape (M, L, L)
        ``moves[m, i, j]`` scores label ``i`` followed by label ``j``.
    move_of : ndarray of int64, shape (N,)
        The matrix of ``moves`` that scores the move into each token (read
        for tokens after a sequence's first).
    k : int
        How many labellings to find per sequence (``k >= 1``).
    labels : ndarray of int64, shape (k, N)
        Filled: row ``r`` holds the ``r``-th best labelling of every sequence,
        concatenated like ``emissions`` (``labels[r, o:o+n]`` for the sequence
        at rows ``o:o+n``). Rows ``r >= counts[s]`` hold, token by token, the
        fixed label (0 where free), as ``chain.viterbi`` does when nothing is
        allowed.
    scores : ndarray of float64, shape (S, k)
        Filled: ``scores[s, r]`` is the score of ``labels[r]`` on sequence
        ``s``, descending in ``r``; ``-inf`` for ``r >= counts[s]``.
    counts : ndarray of int64, shape (S,)
        Filled: the number of labellings found, ``min(k, number of allowed
        labellings)``. A zero-length sequence has one labelling, the empty
        one, of score 0.

    Ties between equal scores go to the labelling with the lower label at the
    last position where the two differ; row 0 equals ``chain.viterbi`` exactly.
    """
    L = emissions.shape[1]
    delta, back_label, back_rank, cnt, heads = workspace(max_length(lengths), L, k)
    add = np.empty(L)
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        pad_sequence(labels, scores, fixed, s, o, n, k)
        if n == 0:
            if k > 0:
                scores[s, 0] = 0.0
                counts[s] = 1
            else:
                counts[s] = 0
            continue
        # delta[t, j, r] for r < cnt[t, j]: the k-max above, without -inf entries
        for t in range(n):
            for j in range(L):
                cnt[t, j] = 0
                if not allowed(fixed, o + t, j):
                    continue
                if t == 0:
                    v = start[j] + emissions[o, j]
                    if v > NEG_INF and k > 0:
                        delta[0, j, 0] = v
                        back_label[0, j, 0] = 0
                        back_rank[0, j, 0] = 0
                        cnt[0, j] = 1
                    continue
                move = moves[move_of[o + t]]
                for i in range(L):
                    add[i] = move[i, j]
                m = merge_top_k(delta[t - 1], cnt[t - 1], add, k, heads,
                                delta[t, j], back_label[t, j], back_rank[t, j])
                cnt[t, j] = plus_emission(delta, t, j, m, emissions[o + t, j])
        for j in range(L):
            add[j] = end[j]
        counts[s] = trace_back(delta, cnt, back_label, back_rank, add, k, heads, n, o, s,
                               labels, scores)
        o += n


@njit(cache=True)
def workspace(max_len, L, k):
    """The k-best kernels' tables, once per call: each cell's kept prefix
    scores, their previous label and rank, how many there are, and the
    merge's heads."""
    return (np.empty((max_len, L, k)), np.zeros((max_len, L, k), dtype=np.int64),
            np.zeros((max_len, L, k), dtype=np.int64), np.zeros((max_len, L), dtype=np.int64),
            np.zeros(L, dtype=np.int64))


@njit(cache=True)
def pad_sequence(labels, scores, fixed, s, o, n, k):
    """Padding first: the rows ``r`` past what sequence ``s`` (``n`` tokens
    from row ``o``) finds keep score -inf and, token by token, the fixed
    label (0 where free)."""
    for r in range(k):
        scores[s, r] = NEG_INF
        for t in range(n):
            labels[r, o + t] = max(fixed[o + t], 0)


@njit(cache=True)
def plus_emission(delta, t, j, m, emission):
    """``delta[t, j, :m] += emission`` (a cell's sorted prefix scores), up to
    the first that is -inf then; how many are left. (The cell by its indices:
    a view of it made at every cell cost as much as the rest of the cell.)"""
    c = 0
    while c < m:
        v = delta[t, j, c] + emission
        if not v > NEG_INF:
            break
        delta[t, j, c] = v
        c += 1
    return c


@njit(cache=True)
def trace_back(delta, cnt, back_label, back_rank, end, k, heads, n, o, s, labels, scores):
    """The ``k`` best ends of the sequence ``s`` (of ``n`` tokens from row
    ``o``) by ``end`` scores, each followed back to its first token into
    ``labels[r, o:o + n]`` and ``scores[s, r]``; how many there are."""
    fin_val = np.empty(k)
    fin_label = np.zeros(k, dtype=np.int64)
    fin_rank = np.zeros(k, dtype=np.int64)
    found = merge_top_k(delta[n - 1], cnt[n - 1], end, k, heads, fin_val, fin_label, fin_rank)
    # labels[r, o+n-1] = fin_label[r]; (j, q) <- back[t, j, q] down to t = 0
    for r in range(found):
        scores[s, r] = fin_val[r]
        j, q = fin_label[r], fin_rank[r]
        labels[r, o + n - 1] = j
        for t in range(n - 1, 0, -1):
            j, q = back_label[t, j, q], back_rank[t, j, q]
            labels[r, o + t - 1] = j
    return found


@njit(cache=True)
def kbest_edges(emissions, lengths, src, weight, in_ptr, in_edges, start, end, k, labels,
                scores, counts):
    """:func:`kbest_moves` over a sparse graph of moves: state ``j`` at token
    ``t`` extends the prefixes of state ``src[e]`` at ``t - 1`` for each edge
    ``e`` into ``j`` (``in_edges[in_ptr[j]:in_ptr[j + 1]]``, in increasing
    ``src``), scored ``weight[e]``; no other move is allowed. The order-2
    chain's pair states: a state has a handful of edges in, where a dense
    move matrix would read every state (``P**2`` a token, the labels' fourth
    power). The same lists, order and ties as :func:`kbest_moves` over the
    dense matrix (``-inf`` off the edges); every state free (fixed labels are
    ``-inf`` emissions here)."""
    P = emissions.shape[1]
    delta, back_label, back_rank, cnt, heads = workspace(max_length(lengths), P, k)
    free = np.full(emissions.shape[0], -1, dtype=np.int64)
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        pad_sequence(labels, scores, free, s, o, n, k)
        if n == 0:
            scores[s, 0] = 0.0
            counts[s] = 1
            continue
        for j in range(P):
            cnt[0, j] = 0
            v = start[j] + emissions[o, j]
            if v > NEG_INF:
                delta[0, j, 0] = v
                back_label[0, j, 0] = 0
                back_rank[0, j, 0] = 0
                cnt[0, j] = 1
        for t in range(1, n):
            for j in range(P):
                # the k best of the sorted lists of the states into j (as merge_top_k)
                m = 0
                for q in range(in_ptr[j], in_ptr[j + 1]):
                    e = in_edges[q]
                    i = src[e]
                    for r in range(cnt[t - 1, i]):
                        v = delta[t - 1, i, r] + weight[e]
                        if not v > NEG_INF or (m == k and not v > delta[t, j, k - 1]):
                            break
                        m = keep_in_top_k(v, i, r, m, k, delta[t, j], back_label[t, j],
                                          back_rank[t, j])
                cnt[t, j] = plus_emission(delta, t, j, m, emissions[o + t, j])
        counts[s] = trace_back(delta, cnt, back_label, back_rank, end, k, heads, n, o, s,
                               labels, scores)
        o += n
