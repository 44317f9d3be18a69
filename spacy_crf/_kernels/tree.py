"""Tree-structured CRF kernels over a ragged batch of dependency forests (numba only, no spaCy).

Conventions shared by every function here:

* ``emissions`` is ``(N, L)`` float64: the concatenated tokens of every
  segment (document or sentence) in the batch; ``lengths`` is ``(S,)`` int64
  and sums to ``N``.
* ``heads`` is ``(N,)`` int64: the absolute row, in the batch, of each token's
  head, or ``-1`` for a root. A segment may hold several trees; trees may be
  non-projective and branch any number of ways. ``order`` is ``(N,)`` int64 as
  filled by :func:`check_forest`: ``order[o:o+n]`` lists the tokens of the
  segment at rows ``o:o+n``, every child before its head.
* ``pair_scores[r, c, h]`` scores child label ``c`` under head label ``h`` on
  an edge of relation group ``r``; ``rel`` is ``(N,)`` int64, the group of each
  token's edge to its head (ignored at roots); ``root[j]`` scores label ``j`` at
  a root.
* ``fixed`` is ``(N,)`` int64: ``-1`` where a token's label is free, else the
  only label that token may take (partial gold annotation, forced decoding).
* Output arrays are allocated by the caller; functions fill them and return
  nothing, or a scalar status.

The score of a labelling ``y`` of a segment is::

    sum_t e(t, y_t) + sum_{t not root} pair_scores[rel[t], y_t, y_{heads[t]}]
                    + sum_{t root} root[y_t]

and log Z of a segment is the logsumexp of that over every labelling (the
product over its trees).

Sum-product is belief propagation: an upward pass (children to roots) and a
downward pass (roots to leaves). As in ``chain.py`` it runs in probability
space, every vector rescaled to unit total and the log of the total kept, so a
node costs ``L**2`` multiply-adds and no ``exp``/``log`` per cell. Where
scaling cannot represent a segment (a total underflows or is not finite), that
segment alone is recomputed in log space. Both run the same traversal,
``_forest_pass``, whose vector operations take a ``mode`` flag. A total
below ``TINY`` counts as underflow: dividing it out would magnify entries that
``exp`` may already have rounded to subnormals or zero. Max-product is always
in log space.
"""

import numpy as np
from numba import njit

from .primitives import FALSE, LOG, MAX, NEG_INF, SCALED, ZERO, all_known, allowed, finite_max

TINY = 1e-150


# --------------------------------------------------------------------------- forests


@njit(cache=True)
def check_forest(heads, lengths, order):
    """Validate a batch of dependency forests and order each one leaves to roots.

    Parameters
    ----------
    heads : (N,) int64
        Absolute head row of each token, ``-1`` for a root.
    lengths : (S,) int64
        Segment lengths; they must sum to ``N``.
    order : (N,) int64
        Filled so that ``order[o:o+n]`` holds the tokens of the segment at rows
        ``o:o+n``, every child before its head. Meaningful only when 0 is returned.

    Returns
    -------
    int
        0 if every segment is a forest; 1 if a length is negative or they do not
        sum to ``N``, or some head is out of range, outside its token's segment
        or the token itself; 2 if some segment has a cycle. Heads are checked
        in the whole batch before cycles are looked for.
    """
    N = heads.shape[0]
    pending = np.zeros(N, dtype=np.int64)
    total = 0
    # total = sum_s lengths[s], each non-negative
    for s in range(lengths.shape[0]):
        if lengths[s] < 0:
            return 1
        total += lengths[s]
    if total != N:
        return 1
    o = ZERO
    # pending[h] = number of children of h, every head inside its token's segment
    for s in range(lengths.shape[0]):
        n = lengths[s]
        for t in range(o, o + n):
            h = heads[t]
            if h == -1:
                continue
            if h < o or h >= o + n or h == t:
                return 1
            pending[h] += 1
        o += n
    o = ZERO
    # Kahn's algorithm per segment, order[o:o+n] doubling as the queue: leaves
    # first; a head is appended once its last child has been taken off
    for s in range(lengths.shape[0]):
        n = lengths[s]
        tail = o
        for t in range(o, o + n):
            if pending[t] == 0:
                order[tail] = t
                tail += 1
        k = o
        while k < tail:
            h = heads[order[k]]
            k += 1
            if h >= 0:
                pending[h] -= 1
                if pending[h] == 0:
                    order[tail] = h
                    tail += 1
        if tail < o + n:
            return 2
        o += n
    return 0


@njit(cache=True)
def _local(emissions, heads, root, t, j):
    """Score of label ``j`` at token ``t`` on its own: e(t, j), plus root(j) at a root."""
    if heads[t] < 0:
        return emissions[t, j] + root[j]
    return emissions[t, j]


# --------------------------------------------------------------------------- vector operations
# Each works in probability space, or on logs when ``mode`` is true.


@njit(cache=True)
def _ok(total, mode):
    """Whether ``total`` can be divided out: in (TINY, inf), or finite in log space."""
    if mode:
        return total > NEG_INF and total < np.inf
    return total > TINY and total < np.inf


@njit(cache=True)
def _failure(total, mode):
    """What a pass returns for a total that is not ``_ok``.

    ``-inf`` when, in log space, it shows that no labelling is allowed; NaN
    otherwise (in probability space a zero may just be underflow).
    """
    if mode and total == NEG_INF:
        return NEG_INF
    return np.nan


@njit(cache=True)
def _log(total, mode):
    """log of a total, which log space already holds."""
    if mode:
        return total
    return np.log(total)


@njit(cache=True)
def _mul(a, b, mode):
    """a b, or a + b in log space."""
    if mode:
        return a + b
    return a * b


@njit(cache=True)
def _div(a, b, mode):
    """a / b, or a - b in log space."""
    if mode:
        return a - b
    return a / b


@njit(cache=True)
def _prob(x, mode):
    """x as a probability: x itself, or exp(x) in log space."""
    if mode:
        return np.exp(x)
    return x


@njit(cache=True)
def _unit(v, mode):
    """Fill ``v`` with the multiplicative identity (1, or 0 in log space)."""
    one = 0.0 if mode else 1.0
    # v[j] = 1
    for j in range(v.shape[0]):
        v[j] = one


@njit(cache=True)
def _copy(dst, src):
    """dst[j] = src[j]."""
    # dst[j] = src[j]
    for j in range(dst.shape[0]):
        dst[j] = src[j]


@njit(cache=True, inline="always")
def _times(dst, src, mode):
    """dst[j] *= src[j], or dst[j] += src[j] in log space."""
    # dst[j] = dst[j] src[j]
    for j in range(dst.shape[0]):
        dst[j] = _mul(dst[j], src[j], mode)


@njit(cache=True)
def _dot(a, b, mode):
    """sum_j a[j] b[j], or logsumexp_j (a[j] + b[j]) in log space.

    In log space: ``-inf`` if every term is ``-inf``, NaN if a term is NaN.
    """
    if mode:
        m = NEG_INF
        # m = max_j (a[j] + b[j])
        for j in range(a.shape[0]):
            x = a[j] + b[j]
            if x != x:
                return np.nan
            if x > m:
                m = x
        if m == NEG_INF or m == np.inf:
            return m
        acc = 0.0
        # acc = sum_j exp(a[j] + b[j] - m)
        for j in range(a.shape[0]):
            acc += np.exp(a[j] + b[j] - m)
        return m + np.log(acc)
    acc = 0.0
    # acc = sum_j a[j] b[j]
    for j in range(a.shape[0]):
        acc += a[j] * b[j]
    return acc


@njit(cache=True)
def _rescale(v, mode):
    """Divide ``v`` by its total (subtract its logsumexp; in ``MAX`` its max) and
    return that total.

    ``v`` is left as is when the total is not ``_ok``.
    """
    if mode:
        # m = max_j v[j], then total = m + log sum_j exp(v[j] - m) (MAX: total = m)
        m = NEG_INF
        for j in range(v.shape[0]):
            if v[j] != v[j]:
                return np.nan
            if v[j] > m:
                m = v[j]
        if m == NEG_INF or m == np.inf:
            return m
        if mode == MAX:
            for j in range(v.shape[0]):
                v[j] -= m
            return m
        acc = 0.0
        # acc = sum_j exp(v[j] - m)
        for j in range(v.shape[0]):
            acc += np.exp(v[j] - m)
        total = m + np.log(acc)
        # v[j] -= total
        for j in range(v.shape[0]):
            v[j] -= total
        return total
    total = 0.0
    # total = sum_j v[j]
    for j in range(v.shape[0]):
        total += v[j]
    if not _ok(total, SCALED):
        return total
    inv = 1.0 / total
    # v[j] /= total
    for j in range(v.shape[0]):
        v[j] *= inv
    return total


@njit(cache=True, inline="always")
def _send_up(src, pot, dst, mode, back):
    """Message to the head: dst[j] = sum_i src[i] pot[i, j] (child label i, head label j).

    In log space dst[j] = logsumexp_i (src[i] + pot[i, j]); in ``MAX`` dst[j] =
    max_i (src[i] + pot[i, j]) and back[j] its first argmax (``back`` is
    written in ``MAX`` only).
    """
    L = dst.shape[0]
    if mode == MAX:
        # row by row (contiguous in pot), as the sum does below; ties keep the lower i
        for j in range(L):
            dst[j] = NEG_INF
            back[j] = 0
        for i in range(L):
            a = src[i]
            if a == NEG_INF:
                continue
            for j in range(L):
                v = a + pot[i, j]
                if v > dst[j]:
                    dst[j] = v
                    back[j] = i
        return
    if mode:
        # dst[j] = m_j + log sum_i exp(src[i] + pot[i, j] - m_j),  m_j = max_i (src[i] + pot[i, j])
        for j in range(L):
            m = NEG_INF
            for i in range(L):
                x = src[i] + pot[i, j]
                if x > m:
                    m = x
            if m == NEG_INF or m == np.inf:
                dst[j] = m
                continue
            acc = 0.0
            for i in range(L):
                acc += np.exp(src[i] + pot[i, j] - m)
            dst[j] = m + np.log(acc)
        return
    # dst[j] = sum_i src[i] pot[i, j], accumulated row by row (rows with src[i] = 0 skipped)
    for j in range(L):
        dst[j] = 0.0
    for i in range(L):
        a = src[i]
        if a == 0.0:
            continue
        for j in range(L):
            dst[j] += a * pot[i, j]


@njit(cache=True)
def _send_down(src, pot, dst, mode):
    """Message to a child: dst[i] = sum_j pot[i, j] src[j] (child label i, head label j).

    In log space dst[i] = logsumexp_j (pot[i, j] + src[j]).
    """
    L = dst.shape[0]
    # dst[i] = sum_j pot[i, j] src[j]  (= _dot of row i of pot with src)
    for i in range(L):
        dst[i] = _dot(pot[i], src, mode)


# --------------------------------------------------------------------------- sum-product


@njit(cache=True)
def _workspace(N, L):
    """Per-call buffers of the sum-product passes: ``vec`` (5, N, L), ``tot`` (3, N)."""
    return np.empty((5, N, L)), np.empty((3, N))


@njit(cache=True)
def _exp_pairs(pair_scores):
    """exp(pair_scores[r] - shift[r]) and shift[r], the finite max of group ``r``."""
    R, L = pair_scores.shape[0], pair_scores.shape[1]
    exp_pair = np.empty((R, L, L))
    shift = np.empty(R)
    # shift[r] = max finite pair_scores[r]
    # exp_pair[r, i, j] = exp(pair_scores[r, i, j] - shift[r])
    for r in range(R):
        shift[r] = finite_max(pair_scores[r])
        for i in range(L):
            for j in range(L):
                exp_pair[r, i, j] = np.exp(pair_scores[r, i, j] - shift[r])
    return exp_pair, shift


@njit(cache=True)
def _forest_pass(o, n, heads, order, pot, rel, vec, tot, mode, back):
    """Upward and downward belief propagation over the forest at rows ``o:o+n``.

    On entry ``vec[0, t]`` holds each token's local potential (probability
    space with ``pot`` the exponentiated pair scores, or logs with ``pot`` the
    pair scores). On success returns the log of the product of every total
    divided out, which is log Z less whatever shifts the caller took out of
    the potentials, and leaves, for every token ``t`` of the segment with head
    ``h`` (vectors rescaled to unit total, or logs of such vectors)::

        vec[0, t]  in:   local potential of t times the messages of its children
        vec[1, t]  msg:  message t sends h, msg[t, j] = sum_i in[t, i] pot[rel[t], i, j]
        vec[2, t]  excl: h-side belief of h without t: potential of h, message from
                         h's own head side, and the messages of t's siblings
        vec[4, t]  out:  message into t from h's side (unit at roots)
        tot[0, t]  total of msg[t] before it was rescaled
        tot[1, t]  sum_j in[t, j] out[t, j]                       (normaliser of t's marginal)
        tot[2, t]  sum_ij in[t, i] pot[rel[t], i, j] excl[t, j]   (normaliser of t's pair marginal)

    (``vec[3]`` is scratch.) Totals are logs in log space. When a total is not
    ``_ok`` returns ``_failure`` of it: ``-inf`` in log space if no labelling
    is allowed, NaN otherwise.

    In ``MAX`` (logs, max in place of log-sum-exp, nothing rescaled) only the
    upward pass runs: it returns the best score of the forest (``-inf`` if
    there is none), leaves in ``in[t]`` the best score of t's subtree for each
    label of t, and fills ``back[t, j]``, the best label of ``t`` under head
    label ``j`` (max-product); ``back`` is not touched in the other modes.
    """
    inn = vec[0]
    msg = vec[1]
    excl = vec[2]
    suf = vec[3]
    out = vec[4]
    msg_total = tot[0]
    bel_total = tot[1]
    pair_total = tot[2]
    log_total = 0.0
    # in[t] /= sum_j in[t, j]: the local potentials, rescaled (sums only: maxima of
    # logs neither overflow nor underflow)
    for t in range(o, o + n):
        if mode == MAX:
            break
        s = _rescale(inn[t], mode)
        if not _ok(s, mode):
            return _failure(s, mode)
        log_total += _log(s, mode)
    # upward, children before heads; for t with head h and group r = rel[t]
    # (in[t] is final when t is reached: its children came first):
    #   msg[t, j]  = sum_i in[t, i] pot[r, i, j]
    #   excl[t]    = in[h]  (prefix: h's potential times the messages of earlier siblings)
    #   in[h, j]  *= msg[t, j]
    # each rescaled and the log of its total added; at the end in[root] sums to one,
    # so log_total is log Z less the caller's shifts
    for k in range(o, o + n):
        t = order[k]
        h = heads[t]
        if h < 0:
            continue
        _send_up(inn[t], pot[rel[t]], msg[t], mode, back[t])
        if mode == MAX:
            _times(inn[h], msg[t], mode)
            continue
        s = _rescale(msg[t], mode)
        if not _ok(s, mode):
            return _failure(s, mode)
        msg_total[t] = s
        log_total += _log(s, mode)
        _copy(excl[t], inn[h])
        _times(inn[h], msg[t], mode)
        s = _rescale(inn[h], mode)
        if not _ok(s, mode):
            return _failure(s, mode)
        log_total += _log(s, mode)
    if mode == MAX:  # max-product needs the upward pass only (and its back-pointers)
        # the best score: every root's best label, summed over the forest's trees
        for t in range(o, o + n):
            if heads[t] < 0:
                best = NEG_INF
                for j in range(inn.shape[1]):
                    best = max(best, inn[t, j])
                log_total += best
        return log_total
    # downward, heads before children (reverse order). suf[h] starts as out[h] and
    # takes in the messages of h's children in reverse order, so when t is reached
    # it holds out[h] times the messages of t's later siblings:
    #   excl[t, j]   *= suf[h, j]      (= potential of h x out[h] x siblings' messages)
    #   out[t, i]     = sum_j pot[r, i, j] excl[t, j]       (unit at roots)
    #   suf[h, j]    *= msg[t, j];    suf[t] = out[t]
    #   pair_total[t] = msg_total[t] sum_j msg[t, j] excl[t, j]
    #   bel_total[t]  = sum_j in[t, j] out[t, j]
    for k in range(o + n - 1, o - 1, -1):
        t = order[k]
        h = heads[t]
        if h < 0:
            _unit(out[t], mode)
        else:
            _times(excl[t], suf[h], mode)
            s = _rescale(excl[t], mode)
            if not _ok(s, mode):
                return _failure(s, mode)
            s = _mul(msg_total[t], _dot(msg[t], excl[t], mode), mode)
            if not _ok(s, mode):
                return _failure(s, mode)
            pair_total[t] = s
            _times(suf[h], msg[t], mode)
            s = _rescale(suf[h], mode)
            if not _ok(s, mode):
                return _failure(s, mode)
            _send_down(excl[t], pot[rel[t]], out[t], mode)
            s = _rescale(out[t], mode)
            if not _ok(s, mode):
                return _failure(s, mode)
        _copy(suf[t], out[t])
        s = _dot(inn[t], out[t], mode)
        if not _ok(s, mode):
            return _failure(s, mode)
        bel_total[t] = s
    return log_total


@njit(cache=True)
def _forest_write(o, n, heads, pot, rel, vec, tot, weight, marginals, pair_each,
                  pair_sum, root_sum, want_each, mode):
    """Add ``weight`` times the marginals left by a successful ``_forest_pass``.

    Token marginals go into ``marginals``, root ones also into ``root_sum``,
    pair marginals into ``pair_sum`` and, if ``want_each``, ``pair_each``.
    """
    L = marginals.shape[1]
    inn = vec[0]
    excl = vec[2]
    out = vec[4]
    bel_total = tot[1]
    pair_total = tot[2]
    for t in range(o, o + n):
        h = heads[t]
        # P(y_t = j) = in[t, j] out[t, j] / bel_total[t]  (exactly 1 at a fixed token)
        for j in range(L):
            p = _prob(_div(_mul(inn[t, j], out[t, j], mode), bel_total[t], mode),
                      mode)
            marginals[t, j] += weight * p
            if h < 0:
                root_sum[j] += weight * p
        if h < 0:
            continue
        r = rel[t]
        # P(y_t = i, y_h = j) = (in[t, i] / pair_total[t]) pot[r, i, j] excl[t, j]
        for i in range(L):
            a = _div(inn[t, i], pair_total[t], mode)
            for j in range(L):
                p = _prob(_mul(_mul(a, pot[r, i, j], mode), excl[t, j], mode),
                          mode)
                pair_sum[r, i, j] += weight * p
                if want_each:
                    pair_each[t, i, j] += weight * p


@njit(cache=True)
def _forest_scaled(emissions, o, n, heads, order, exp_pair, pair_shift, rel, root, fixed,
                   vec, tot):
    """Scaled sum-product passes for the segment at rows ``o:o+n``.

    Returns log Z, or NaN when scaling failed (nothing is written then).
    """
    L = emissions.shape[1]
    inn = vec[0]
    log_z = 0.0
    # in[t, j] = exp(local(t, j) - m_t), zero where j is not allowed; m_t = max allowed local(t, .);
    # log Z gains every m_t and, on every edge, the shift taken out of exp_pair[rel[t]]
    for t in range(o, o + n):
        m = NEG_INF
        for j in range(L):
            if allowed(fixed, t, j):
                m = max(m, _local(emissions, heads, root, t, j))
        if not (m > NEG_INF and m < np.inf):
            return np.nan
        for j in range(L):
            if allowed(fixed, t, j):
                inn[t, j] = np.exp(_local(emissions, heads, root, t, j) - m)
            else:
                inn[t, j] = 0.0
        log_z += m
        if heads[t] >= 0:
            log_z += pair_shift[rel[t]]
    total = _forest_pass(o, n, heads, order, exp_pair, rel, vec, tot, SCALED, vec[3])
    if not (total > NEG_INF and total < np.inf):
        return np.nan
    return log_z + total


@njit(cache=True)
def _forest_log(emissions, o, n, heads, order, pair_scores, rel, root, fixed, vec, tot):
    """Log-space sum-product passes: the fallback of ``_forest_scaled``, same contract.

    Returns log Z (``-inf`` when no labelling is allowed).
    """
    L = emissions.shape[1]
    inn = vec[0]
    # in[t, j] = local(t, j), -inf where j is not allowed
    for t in range(o, o + n):
        for j in range(L):
            if allowed(fixed, t, j):
                inn[t, j] = _local(emissions, heads, root, t, j)
            else:
                inn[t, j] = NEG_INF
    return _forest_pass(o, n, heads, order, pair_scores, rel, vec, tot, LOG, vec[3])


@njit(cache=True)
def _forest(emissions, o, n, heads, order, pair_scores, exp_pair, pair_shift, rel, root,
            fixed, weight, marginals, pair_each, pair_sum, root_sum, want_each, vec, tot,
            force_log):
    """Sum-product of one segment: scaled first, log space where that fails.

    Adds ``weight`` times its marginals (see ``_forest_write``) once a pass has
    succeeded and returns log Z; writes nothing when log Z is ``-inf`` or NaN.
    """
    if not force_log:
        log_z = _forest_scaled(emissions, o, n, heads, order, exp_pair, pair_shift, rel,
                               root, fixed, vec, tot)
        if log_z == log_z:
            _forest_write(o, n, heads, exp_pair, rel, vec, tot, weight, marginals,
                          pair_each, pair_sum, root_sum, want_each, SCALED)
            return log_z
    log_z = _forest_log(emissions, o, n, heads, order, pair_scores, rel, root, fixed,
                        vec, tot)
    if log_z > NEG_INF and log_z < np.inf:
        _forest_write(o, n, heads, pair_scores, rel, vec, tot, weight, marginals,
                      pair_each, pair_sum, root_sum, want_each, LOG)
    return log_z


@njit(cache=True)
def sum_product(emissions, lengths, heads, order, pair_scores, rel, root, fixed, log_z,
                marginals, pair_each, pair_sum, root_sum, want_each, force_log):
    """Log partition and marginals of every segment in the batch.

    Parameters
    ----------
    emissions : (N, L) float64
    lengths : (S,) int64
    heads : (N,) int64
    order : (N,) int64
        As filled by :func:`check_forest` (which must have returned 0).
    pair_scores : (R, L, L) float64
    rel : (N,) int64
    root : (L,) float64
    fixed : (N,) int64
    log_z : (S,) float64
        Filled with log Z of each segment; ``-inf`` where ``fixed`` allows no
        labelling (nothing is added for that segment then), 0 for an empty one.
    marginals : (N, L) float64
        ``P(y_t = j)`` is added into row ``t``.
    pair_each : (N, L, L) float64
        If ``want_each``, ``P(y_t = c, y_{heads[t]} = h)`` is added into
        ``pair_each[t, c, h]``; rows of roots are left alone. Unused (any
        shape) otherwise.
    pair_sum : (R, L, L) float64
        Expected pair counts, summed over the edges of each relation group, added into.
    root_sum : (L,) float64
        Expected root label counts, added into.
    want_each : bool
    force_log : bool
        Skip the scaled pass and work in log space throughout.
    """
    vec, tot = _workspace(emissions.shape[0], emissions.shape[1])
    exp_pair, pair_shift = _exp_pairs(pair_scores)
    o = ZERO  # typed, not Literal[int](0): callees compile once
    # log_z[s] = log Z of the forest at rows o:o+n
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            log_z[s] = 0.0
            continue
        log_z[s] = _forest(emissions, o, n, heads, order, pair_scores, exp_pair, pair_shift,
                           rel, root, fixed, 1.0, marginals, pair_each, pair_sum, root_sum,
                           want_each, vec, tot, force_log)
        o += n


# --------------------------------------------------------------------------- max-product


@njit(cache=True)
def max_product(emissions, lengths, heads, order, pair_scores, rel, root, fixed, labels,
                scores):
    """MAP labelling of every segment, honouring ``fixed``.

    ``delta[t, j]`` is the best score of t's subtree with ``y_t = j``::

        delta[t, j] = local(t, j) + sum_{c child of t} max_i (delta[c, i] + S[rel[c], i, j])
        back[c, j]  = argmax_i (delta[c, i] + S[rel[c], i, j])

    then each root takes ``argmax_j delta[root, j]`` and every child
    ``back[c, label of its head]``, top-down. Ties go to the lowest label id.
    ``delta`` is ``in`` of the upward pass of :func:`_forest_pass` in ``MAX``.

    Parameters
    ----------
    emissions, lengths, heads, order, pair_scores, rel, root, fixed
        As for :func:`sum_product`.
    labels : (N,) int64
        Filled with the MAP labelling. Where a segment allows no labelling,
        each token takes its ``fixed`` label (label 0 where free), as in
        ``chain.viterbi``.
    scores : (S,) float64
        Filled with the score of the MAP labelling of each segment (``-inf``
        if none is allowed, 0 if empty).
    """
    L = emissions.shape[1]
    vec, tot = _workspace(emissions.shape[0], L)
    back = np.zeros((emissions.shape[0], L), dtype=np.int64)
    inn = vec[0]
    o = ZERO  # typed, not Literal[int](0): callees compile once
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            scores[s] = 0.0
            continue
        # in[t, j] = local(t, j), -inf where j is not allowed; then the upward pass
        # in MAX: back[t, j] = first argmax_i (in[t, i] + S[rel[t], i, j])
        for t in range(o, o + n):
            for j in range(L):
                inn[t, j] = _local(emissions, heads, root, t, j) if allowed(fixed, t, j) else NEG_INF
        total = _forest_pass(o, n, heads, order, pair_scores, rel, vec, tot, MAX, back)
        scores[s] = total
        if not total > NEG_INF:
            # no allowed labelling: honour ``fixed`` token by token, label 0 elsewhere
            scores[s] = NEG_INF
            for t in range(o, o + n):
                labels[t] = max(fixed[t], 0)
            o += n
            continue
        # roots: label = first argmax_j in[t, j]; heads before children: back[t, label of head]
        for t in range(o, o + n):
            if heads[t] < 0:
                b, arg = NEG_INF, 0
                for j in range(L):
                    if inn[t, j] > b:
                        b, arg = inn[t, j], j
                labels[t] = arg
        for k in range(o + n - 1, o - 1, -1):
            t = order[k]
            h = heads[t]
            if h >= 0:
                labels[t] = back[t, labels[h]]
        o += n


# --------------------------------------------------------------------------- likelihood


@njit(cache=True)
def nll_gradient(emissions, lengths, heads, order, pair_scores, rel, root, gold, nll,
                 d_emissions, d_pair, d_root, force_log):
    """Negative log-likelihood of ``gold`` and its gradient, per segment.

    Tokens with ``gold == -1`` are marginalised, so ``nll[s] = log Z - log Z(gold-
    consistent labellings)`` and every gradient is (model expectation) -
    (expectation given the gold labels). With every label of a segment known
    the second term is the gold labelling itself (no second pass).

    Parameters
    ----------
    emissions, lengths, heads, order, pair_scores, rel, root
        As for :func:`sum_product`.
    gold : (N,) int64
        Gold label of each token, ``-1`` where unknown.
    nll : (S,) float64
        Filled (0 for an empty segment; ``inf`` if the gold is impossible).
    d_emissions : (N, L) float64
    d_pair : (R, L, L) float64
    d_root : (L,) float64
        Gradients wrt ``emissions``, ``pair_scores`` and ``root``, added into
        (they are not zeroed first).
    force_log : bool
        Skip the scaled passes and work in log space throughout.
    """
    N = emissions.shape[0]
    vec, tot = _workspace(N, emissions.shape[1])
    exp_pair, pair_shift = _exp_pairs(pair_scores)
    free = np.full(N, -1, dtype=np.int64)
    dummy = np.zeros((1, 1, 1))
    o = ZERO  # typed, not Literal[int](0): callees compile once
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            nll[s] = 0.0
            continue
        complete = all_known(gold, o, n)  # every gold label of the segment is known
        log_z = _forest(emissions, o, n, heads, order, pair_scores, exp_pair, pair_shift, rel,
                        root, free, 1.0, d_emissions, dummy, d_pair, d_root, FALSE, vec, tot,
                        force_log)
        if complete:
            gold_score = 0.0
            # the gold labelling: its score and counts, directly
            for t in range(o, o + n):
                y = gold[t]
                gold_score += _local(emissions, heads, root, t, y)
                d_emissions[t, y] -= 1.0
                h = heads[t]
                if h < 0:
                    d_root[y] -= 1.0
                else:
                    gold_score += pair_scores[rel[t], y, gold[h]]
                    d_pair[rel[t], y, gold[h]] -= 1.0
        else:
            gold_score = _forest(emissions, o, n, heads, order, pair_scores, exp_pair,
                                 pair_shift, rel, root, gold, -1.0, d_emissions, dummy, d_pair,
                                 d_root, FALSE, vec, tot, force_log)
        nll[s] = log_z - gold_score
        o += n
