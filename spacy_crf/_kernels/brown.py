"""Brown clustering kernels (numba only, no spaCy): Liang's windowed algorithm.

Brown et al. (1992) cluster words so that a class bigram model keeps as much
of the text's average mutual information as possible; Liang (2005) made it
tractable with a window of ``C + 1`` active clusters. Words are taken from the
most frequent down: each new word becomes a cluster of its own, and whenever
``C + 1`` clusters are active the pair whose merge loses the least mutual
information is merged. After the last word, the ``C`` clusters are merged down
to one, and that second phase's merge tree gives every cluster its bit path.

With ``p(c, d)`` the probability of a bigram from cluster c to cluster d
(counts over the bigrams of the text, both words already added) and ``p(c)``
the unigram probability of c's words, the objective is

    I = sum_{c,d} q(c, d),    q(c, d) = p(c, d) log( p(c, d) / (p(c) p(d)) )

and the loss of merging i and j into m is

    L(i, j) = sum_{x or y in {i, j}} q(x, y)  -  sum_{x or y = m} q'(x, y).

Splitting both sums by the third cluster c they involve gives ``L(i, j) =
self(i, j) + sum_{c not in {i, j}} t(i, j, c)``, where ``t`` depends on c's
row and column only. So when a cluster c joins (a new word) or two clusters
a, b become one k, every other pair's loss changes by ``t(i, j, c)``, or by
``t(i, j, k) - t(i, j, a) - t(i, j, b)``: O(1) per pair, O(C^2) per step, and
only the pairs with the new cluster are summed anew (O(C) each). The
unigram probabilities do not depend on which words are active, so no other
term moves (as in Liang's ``wcluster``).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def _q(pxy, px, py):
    if pxy <= 0.0:
        return 0.0
    return pxy * np.log(pxy / (px * py))


@njit(cache=True)
def _term(P, Q, p1, i, j, c):
    """t(i, j, c): what cluster c adds to the loss of merging i and j
    (``Q`` caches q of the active pairs: two logarithms per term, not six)."""
    pm = p1[i] + p1[j]
    return (Q[i, c] + Q[j, c] + Q[c, i] + Q[c, j]
            - _q(P[i, c] + P[j, c], pm, p1[c]) - _q(P[c, i] + P[c, j], p1[c], pm))


@njit(cache=True)
def _pair_loss(P, Q, p1, active, i, j):
    """L(i, j) summed in full."""
    pm = p1[i] + p1[j]
    loss = (Q[i, i] + Q[i, j] + Q[j, i] + Q[j, j]
            - _q(P[i, i] + P[i, j] + P[j, i] + P[j, j], pm, pm))
    for c in range(active.shape[0]):
        if active[c] and c != i and c != j:
            loss += _term(P, Q, p1, i, j, c)
    return loss


@njit(cache=True)
def _fill_q(P, Q, p1, active, s):
    """Q's row and column of slot s, against every active slot and s itself."""
    for c in range(active.shape[0]):
        if active[c] or c == s:
            Q[s, c] = _q(P[s, c], p1[s], p1[c])
            Q[c, s] = _q(P[c, s], p1[c], p1[s])


@njit(cache=True)
def _add_slot(P, Q, p1, L, active, s):
    """Slot s (filled in P and p1) joins: every other pair gains t(i, j, s)."""
    K = active.shape[0]
    _fill_q(P, Q, p1, active, s)
    for i in range(K):
        if not active[i]:
            continue
        for j in range(i + 1, K):
            if active[j]:
                L[i, j] += _term(P, Q, p1, i, j, s)
    active[s] = True
    for i in range(K):
        if active[i] and i != s:
            a, b = min(i, s), max(i, s)
            L[a, b] = _pair_loss(P, Q, p1, active, a, b)


@njit(cache=True)
def _merge(P, Q, p1, L, active, a, b):
    """Merge slot b into slot a (a < b); b is freed."""
    K = active.shape[0]
    for i in range(K):
        if not active[i] or i == a or i == b:
            continue
        for j in range(i + 1, K):
            if active[j] and j != a and j != b:
                L[i, j] -= _term(P, Q, p1, i, j, a) + _term(P, Q, p1, i, j, b)
    for c in range(K):
        if c != a and c != b:
            P[a, c] += P[b, c]
            P[c, a] += P[c, b]
    P[a, a] += P[a, b] + P[b, a] + P[b, b]
    p1[a] += p1[b]
    for c in range(K):
        P[b, c] = 0.0
        P[c, b] = 0.0
        Q[b, c] = 0.0
        Q[c, b] = 0.0
    p1[b] = 0.0
    active[b] = False
    _fill_q(P, Q, p1, active, a)
    for i in range(K):
        if not active[i] or i == a:
            continue
        for j in range(i + 1, K):
            if active[j] and j != a:
                L[i, j] += _term(P, Q, p1, i, j, a)
    for i in range(K):
        if active[i] and i != a:
            x, y = min(i, a), max(i, a)
            L[x, y] = _pair_loss(P, Q, p1, active, x, y)


@njit(cache=True)
def _best_pair(L, active):
    """The active pair of least loss (the first in index order among ties)."""
    K = active.shape[0]
    best, bi, bj = np.inf, -1, -1
    for i in range(K):
        if not active[i]:
            continue
        for j in range(i + 1, K):
            if active[j] and L[i, j] < best:
                best, bi, bj = L[i, j], i, j
    return bi, bj


@njit(cache=True)
def _find(parent, w):
    """The union-find root of word w's cluster (path halving)."""
    while parent[w] != w:
        parent[w] = parent[parent[w]]
        w = parent[w]
    return w


@njit(cache=True)
def brown_clusters(n_clusters, unigram, right_ptr, right_word, right_count, n_bigrams,
                   slot_of_word, merges):
    """Cluster words ``0..V-1`` (most frequent first) into ``n_clusters``, then
    merge those down to one.

    Parameters
    ----------
    n_clusters : int
        C, the clusters kept in the first phase (at least 1).
    unigram : (V,) float64
        Each word's probability in the text.
    right_ptr, right_word, right_count : CSR arrays
        The bigrams: word ``w`` is followed ``right_count[k]`` times by
        ``right_word[k]`` for ``k`` in ``right_ptr[w]:right_ptr[w + 1]``.
    n_bigrams : float
        The text's bigram count (the probabilities' denominator).
    slot_of_word : (V,) int64, out
        The first-phase cluster of each word, as a slot index in ``0..C``.
    merges : (C, 2) int64, out
        The second phase's merges, in order: slot ``merges[m, 1]`` into
        ``merges[m, 0]`` (at most ``C - 1``; the rest are set to -1).

    Returns
    -------
    int
        The number of second-phase merges written.
    """
    V = unigram.shape[0]
    K = n_clusters + 1
    P = np.zeros((K, K))
    Q = np.zeros((K, K))
    p1 = np.zeros(K)
    L = np.zeros((K, K))
    active = np.zeros(K, dtype=np.bool_)
    # the left neighbours of every word, from the right lists (a CSR transpose)
    left_ptr = np.zeros(V + 1, dtype=np.int64)
    for w in range(V):
        for k in range(right_ptr[w], right_ptr[w + 1]):
            left_ptr[right_word[k] + 1] += 1
    for w in range(V):
        left_ptr[w + 1] += left_ptr[w]
    fill = left_ptr[:-1].copy()
    left_word = np.empty(right_word.shape[0], dtype=np.int64)
    left_count = np.empty(right_word.shape[0], dtype=np.float64)
    for w in range(V):
        for k in range(right_ptr[w], right_ptr[w + 1]):
            u = right_word[k]
            left_word[fill[u]] = w
            left_count[fill[u]] = right_count[k]
            fill[u] += 1
    # a word's cluster: words merged together share a union-find root, and
    # each root lives in one slot
    parent = np.arange(V)
    slot_of_root = np.full(V, -1, dtype=np.int64)
    root_of_slot = np.full(K, -1, dtype=np.int64)
    for w in range(V):
        s = 0
        while active[s]:
            s += 1
        slot_of_root[w] = s
        root_of_slot[s] = w
        p1[s] = unigram[w]
        for k in range(right_ptr[w], right_ptr[w + 1]):
            u = right_word[k]
            if u <= w:  # added already (w itself included)
                P[s, slot_of_root[_find(parent, u)]] += right_count[k] / n_bigrams
        for k in range(left_ptr[w], left_ptr[w + 1]):
            u = left_word[k]
            if u < w:  # w followed by w was counted above
                P[slot_of_root[_find(parent, u)], s] += left_count[k] / n_bigrams
        _add_slot(P, Q, p1, L, active, s)
        if w + 1 >= K:  # C + 1 active: merge back to C
            a, b = _best_pair(L, active)
            _merge(P, Q, p1, L, active, a, b)
            parent[root_of_slot[b]] = root_of_slot[a]
            root_of_slot[b] = -1
    for w in range(V):
        slot_of_word[w] = slot_of_root[_find(parent, w)]
    n_merges = 0
    for m in range(merges.shape[0]):
        merges[m, 0] = -1
        merges[m, 1] = -1
    while True:
        a, b = _best_pair(L, active)
        if a < 0:
            break
        merges[n_merges, 0] = a
        merges[n_merges, 1] = b
        n_merges += 1
        _merge(P, Q, p1, L, active, a, b)
    return n_merges
