"""Kernels of the pruned chain: each token's best labels by emission score (numba only).

For every row ``t`` of ``emissions`` (N, L), ``out[t]`` gets the ``n`` labels
of highest ``e[t, j]`` (ties to the lower label id) among those within
``margin`` of the row's best (``margin = inf``: all of them), with ``keep[t]``
(a label id, or -1) added where it is not among them (in place of the worst
where there are ``n`` already), in increasing label order; ``counts[t]`` is
how many there are, and the slots after them repeat the last one::

    cand[t] = sorted(top_n {j : e[t, j] >= max_j e[t, j] - margin})   (+ keep[t])

A margin keeps fewer labels where the emissions are sure of a few: on UD
Greek GDT's morphology, 4.5 a token at ``margin = 6`` where ``n = 8``, and
the same decoding (``structures/pruned_chain.py``).

A row is read twice: its first labels in a given order (likely ones first)
fill a list of ``n`` by insertion, whose worst score is then a threshold; a
branch-free pass over the whole row collects the labels at or above it (22
of 321 on EWT's morphology), and only those are inserted. Where
``numpy.argpartition`` cost 11 ns a label at 321, and one branchy pass with
an insertion per label 2, this costs about 1.

A factored table's emissions need not be written out at all:
:func:`compose_candidates` composes them from the parts' scores a block of
tokens at a time and searches each block while it is in cache.

The candidates' own scores come out beside them, and the lattice kernels
read those: :func:`lattice_scores` writes the lattice's scores (each
candidate's emission, ``start`` and ``end``; the transitions between
neighbours' candidates) in one pass, where numpy's fancy indexing made three
arrays of indices first.
"""

import numpy as np
from numba import njit

from .label_parts import BLOCK, add_label_scores, compose_block, load_block


#: labels read first, in the caller's order, to set the threshold: a multiple
#: of the candidates (on EWT's 321 labels, 8 candidates: 16 first labels leave
#: 22 labels at or above the threshold a token, 8 leave 50, 32 leave 18)
FIRST_READ = 2


@njit(cache=True, nogil=True)
def best_candidates(emissions, n, keep, visit, margin, out, counts, scores):
    """Fill ``out`` (N, n) int64 with each row's candidates, ``counts`` (N,)
    int64 with their number and ``scores`` (N, n) with their emissions
    (``-inf`` past the count) (see the module).

    ``visit`` (a permutation of the labels) is the order the first labels
    are read in where there is no margin: likely labels first (the caller's
    guess) give a high threshold, so that the second pass collects few
    labels. With a margin, the threshold is the row's best minus the margin
    (a pass of its own), which leaves fewer. The candidates depend on neither:
    every label at or above the threshold is inserted, and a score ties with
    the worst kept only by the lower label id.
    """
    n_rows, n_labels = emissions.shape
    top = np.empty(n)
    by_margin = margin < np.inf
    n_first = 0 if by_margin else min(n_labels, FIRST_READ * n)
    first = np.zeros(n_labels, dtype=np.bool_)
    for v in range(n_first):
        first[visit[v]] = True
    hits = np.empty(n_labels + 1, dtype=np.int64)
    for t in range(n_rows):
        row = emissions[t]
        # top[:m] descending scores (equal scores: lower label first), out[t, :m] their labels
        m = 0
        if by_margin:
            best = row[0]
            for j in range(1, n_labels):
                best = max(best, row[j])
            threshold = best - margin
        else:
            for v in range(n_first):
                m = _insert(top, out, t, m, n, row[visit[v]], visit[v])
            threshold = top[n - 1] if m == n else -np.inf
        n_hits = 0
        for j in range(n_labels):  # branch-free: every label is written, the count moves on a hit
            hits[n_hits] = j
            n_hits += row[j] >= threshold
        for h in range(n_hits):
            j = hits[h]
            if not first[j]:
                m = _insert(top, out, t, m, n, row[j], j)
        m = _finish(out, t, m, n, keep[t])
        for i in range(n):
            scores[t, i] = row[out[t, i]] if i < m else -np.inf
        counts[t] = m


@njit(cache=True, inline="always")
def _finish(out, t, m, n, k):
    """Row ``t`` of ``out`` holding ``m`` candidates in any order: label ``k``
    (-1: none) added where it is not among them (in place of the last where
    there are ``n``), the candidates put in increasing label order and the
    slots after them filled with the last; their number."""
    if k >= 0:
        present = False
        for i in range(m):
            if out[t, i] == k:
                present = True
        if not present:
            if m < n:
                m += 1
            out[t, m - 1] = k  # in place of the worst where the list is full
    # increasing label order (n is small: insertion sort)
    for i in range(1, m):
        label = out[t, i]
        h = i
        while h > 0 and out[t, h - 1] > label:
            out[t, h] = out[t, h - 1]
            h -= 1
        out[t, h] = label
    for i in range(m, n):
        out[t, i] = out[t, m - 1]
    return m


@njit(cache=True, nogil=True)
def compose_candidates(part_scores, parent, part, label_node, bias, label_scores, n, keep, margin,
                       out, counts, scores):
    """:func:`best_candidates` with a ``margin`` over the emissions of a
    factored table, composed from its part scores (``label_parts.py``: the
    labels' trie ``parent``, ``part``, ``label_node``, and ``bias``) a block
    of tokens at a time, without writing the (N, L) emissions out: the
    same ``out``, ``counts`` and ``scores``. ``label_scores`` (N, L), or (N,
    0) for none: each token's scores for whole labels, added to its
    composed ones (``models/whole_label.py``).

    Composing a block leaves its labels' scores transposed (a row per label,
    in cache), where each token's best, then the labels within ``margin`` of
    it, are read over the block's tokens at once; a token with no more than
    ``n`` of them keeps them all, in label order already, and only one with
    more sorts them. On UD Greek GDT's morphology (391 labels, 32k tokens):
    25 ms for the composition and the search apart, 13 fused.
    """
    n_tokens, n_parts = part_scores.shape
    n_labels = bias.shape[0]
    parts = np.zeros((n_parts, BLOCK), dtype=part_scores.dtype)
    nodes = np.zeros((parent.shape[0], BLOCK), dtype=part_scores.dtype)
    labels = np.empty((n_labels, BLOCK), dtype=part_scores.dtype)
    threshold = np.empty(BLOCK, dtype=part_scores.dtype)
    n_hits = np.zeros(BLOCK, dtype=np.int64)
    hits = np.empty((BLOCK, n_labels + 1), dtype=np.int64)
    top = np.empty(n)
    for t0 in range(0, n_tokens, BLOCK):
        m = load_block(part_scores, t0, parts)
        compose_block(parts, parent, part, label_node, bias, nodes, labels)
        add_label_scores(label_scores, t0, m, labels)
        for u in range(BLOCK):
            threshold[u] = labels[0, u]
        for k in range(1, n_labels):
            row = labels[k]
            for u in range(BLOCK):
                threshold[u] = max(threshold[u], row[u])
        for u in range(BLOCK):
            threshold[u] -= margin
            n_hits[u] = 0
        for k in range(n_labels):
            # the block's tokens that keep label k, as the bits of a word: a
            # token is visited for its hits alone (15 a token of 391 on GDT),
            # each token's in label order
            row = labels[k]
            bits = np.uint64(0)
            for u in range(BLOCK):
                bits |= np.uint64(row[u] >= threshold[u]) << np.uint64(u)
            while bits != 0:
                lowest = bits & (~bits + np.uint64(1))
                u = _bit_position(lowest)
                hits[u, n_hits[u]] = k
                n_hits[u] += 1
                bits ^= lowest
        for u in range(m):
            t = t0 + u
            c = n_hits[u]
            if c < n or (c == n and keep[t] < 0):
                for i in range(c):  # all of them, in label order
                    out[t, i] = hits[u, i]
            else:
                c = 0
                for h in range(n_hits[u]):
                    k = hits[u, h]
                    c = _insert(top, out, t, c, n, labels[k, u], k)
            c = _finish(out, t, c, n, keep[t])
            for i in range(n):
                scores[t, i] = labels[out[t, i], u] if i < c else -np.inf
            counts[t] = c


@njit(cache=True, inline="always")
def _bit_position(bit):
    """The position of the one set bit of the uint64 ``bit``."""
    position = 0
    if bit & np.uint64(0xFFFFFFFF00000000):
        position += 32
    if bit & np.uint64(0xFFFF0000FFFF0000):
        position += 16
    if bit & np.uint64(0xFF00FF00FF00FF00):
        position += 8
    if bit & np.uint64(0xF0F0F0F0F0F0F0F0):
        position += 4
    if bit & np.uint64(0xCCCCCCCCCCCCCCCC):
        position += 2
    if bit & np.uint64(0xAAAAAAAAAAAAAAAA):
        position += 1
    return position


@njit(cache=True, inline="always")
def _insert(top, labels, t, m, n, s, j):
    """Insert label ``j`` of score ``s`` into the descending list ``top[:m]``
    (``labels[t, :m]`` its labels, at most ``n``; equal scores: lower label
    first) if it belongs there; the list's new length."""
    if m < n:
        i = m
        m += 1
    elif s > top[n - 1] or (s == top[n - 1] and j < labels[t, n - 1]):
        i = n - 1
    else:
        return m
    while i > 0 and (top[i - 1] < s or (top[i - 1] == s and labels[t, i - 1] > j)):
        top[i] = top[i - 1]
        labels[t, i] = labels[t, i - 1]
        i -= 1
    top[i] = s
    labels[t, i] = j
    return m


@njit(cache=True, nogil=True)
def lattice_scores(cand_scores, cand, counts, lengths, start, end, transitions, local, pair):
    """The scores of the lattice of candidates ``cand`` (N, n), ``counts[t]``
    of them real (the rest repeat the last), sequences of ``lengths``.

    ``local[t, i]`` = the emission of candidate ``i`` of token ``t``
    (``cand_scores[t, i]``, from :func:`best_candidates`), plus
    ``start`` of it on a sequence's first token and ``end`` on its last, and
    ``-inf`` for a slot past ``counts[t]`` (no labelling takes it);
    ``pair[t, i, j]`` = the transition from token ``t - 1``'s candidate ``j``
    to token ``t``'s candidate ``i`` (0 on first tokens, which have no move
    into them).
    """
    n = cand.shape[1]
    o = 0
    for s in range(lengths.shape[0]):
        for t in range(o, o + lengths[s]):
            for i in range(n):
                label = cand[t, i]
                score = np.float64(cand_scores[t, i]) if i < counts[t] else -np.inf
                if t == o:
                    score += start[label]
                if t == o + lengths[s] - 1:
                    score += end[label]
                local[t, i] = score
                for j in range(n):
                    pair[t, i, j] = 0.0 if t == o else transitions[cand[t - 1, j], label]
        o += lengths[s]


@njit(cache=True, nogil=True)
def lattice_viterbi(cand_scores, cand, counts, lengths, start, end, transitions, fixed_slot, slots,
                    best):
    """The MAP labelling of each sequence over its candidates, read in place.

    The lattice's scores are those :func:`lattice_scores` writes out, read
    where they are needed instead (a move reads ``transitions[cand[t - 1, j],
    cand[t, i]]`` from the (L, L) matrix, which stays in cache, where the
    (N, n, n) pair matrix would be written and read again: on EWT's
    morphology 9 -> 6 ms for 25k tokens, on a busy machine).

    Parameters
    ----------
    cand_scores : (N, n) float array
        The candidates' emission scores (:func:`best_candidates`).
    cand : (N, n) int64
        Each token's candidates.
    counts : (N,) int64
        How many of them are real: a move reads ``counts[t - 1] * counts[t]``
        label pairs, not ``n * n``.
    lengths : (S,) int64
        Sequence lengths.
    start, end : (L,) float64
        Scores of a sequence's first and last labels.
    transitions : (L, L) float64
        ``transitions[a, b]``: ``a`` then ``b``.
    fixed_slot : (N,) int64
        The only candidate a token may take (-1: any).
    slots : (N,) int64
        Filled with the chosen candidate of each token (ties: the lowest
        slot). Where a sequence allows no labelling, each token takes its
        fixed slot (slot 0 where free), as ``tree.max_product`` does.
    best : (S,) float64
        Filled with the MAP score of each sequence (``-inf`` if none is
        allowed, 0 if empty).
    """
    n_tokens, n = cand.shape
    back = np.zeros((n_tokens, n), dtype=np.int64)
    delta = np.empty(n)
    following = np.empty(n)
    o = 0
    for s in range(lengths.shape[0]):
        m = lengths[s]
        if m == 0:
            best[s] = 0.0
            continue
        for i in range(counts[o]):
            label = cand[o, i]
            delta[i] = cand_scores[o, i] + start[label] if _allowed(fixed_slot, o, i) \
                else -np.inf
        for t in range(o + 1, o + m):
            for i in range(counts[t]):
                if not _allowed(fixed_slot, t, i):
                    following[i] = -np.inf
                    back[t, i] = 0
                    continue
                label = cand[t, i]
                top, arg = -np.inf, 0
                for j in range(counts[t - 1]):  # branch-free: which j wins is a coin toss
                    score = delta[j] + transitions[cand[t - 1, j], label]
                    better = score > top
                    arg = j if better else arg
                    top = score if better else top
                following[i] = top + cand_scores[t, i]
                back[t, i] = arg
            for i in range(counts[t]):
                delta[i] = following[i]
        last = o + m - 1
        top, arg = -np.inf, 0
        for i in range(counts[last]):
            score = delta[i] + end[cand[last, i]]
            if score > top:
                top, arg = score, i
        best[s] = top
        if not top > -np.inf:
            for t in range(o, o + m):
                slots[t] = max(fixed_slot[t], 0)
        else:
            slots[last] = arg
            for t in range(last, o, -1):
                slots[t - 1] = back[t, slots[t]]
        o += m


@njit(cache=True, inline="always")
def _allowed(fixed_slot, t, i):
    return fixed_slot[t] < 0 or fixed_slot[t] == i
