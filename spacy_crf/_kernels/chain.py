"""Linear-chain CRF kernels over a ragged batch (numba only, no spaCy).

Conventions shared by every function here:

* ``emissions`` is ``(N, L)`` float64: the concatenated tokens of every
  sequence in the batch; ``lengths`` is ``(S,)`` int64 and sums to ``N``.
* ``transitions[i, j]`` scores label ``i`` followed by label ``j``;
  ``start[j]`` / ``end[j]`` score a sequence starting / ending with ``j``.
* ``fixed`` is ``(N,)`` int64: ``-1`` where a token's label is free, else the
  only label that token may take. It serves partial gold annotation (the
  constrained pass of the likelihood) and forced decoding alike.
* Output arrays are allocated by the caller; functions fill them and return
  nothing, or a scalar status.

Sum-product runs in probability space with one scale factor per position, as
CRFsuite does: it needs ``L**2`` multiply-adds per token instead of ``L**2``
``exp``/``log`` pairs. Where scaling cannot represent a sequence (extreme
weights make a whole column underflow), that sequence alone is recomputed in
log space, so results stay exact and finite. Viterbi is always in log space.
"""

import numpy as np
from numba import njit

from .primitives import (FALSE, LOG, MAX, NEG_INF, SCALED, UNDERFLOW_GUARD, ZERO, all_known,
                         allowed, finite_max, logaddexp, within_guard)



@njit(cache=True)
def scaled_potentials(transitions, start, end):
    """The label-interaction factors of the scaled pass, computed once per batch.

    Returns ``(exp_t, exp_t_by_next, exp_s, exp_e, shifts)``: ``exp(transitions -
    shifts[0])`` and its transpose (contiguous, for the backward pass),
    ``exp(start - shifts[1])``, ``exp(end - shifts[2])``, each shift the finite
    max of its scores. They depend on no sequence, so a batch computes them
    (``L**2`` exps and the underflow guards) once instead of once per sequence
    and pass. ``shifts[0]`` is NaN when a shifted score is below
    UNDERFLOW_GUARD: scaling cannot represent any sequence of the batch then.
    """
    shifts = np.array([finite_max(transitions), finite_max(start), finite_max(end)])
    if not (within_guard(transitions, shifts[0]) and within_guard(start, shifts[1])
            and within_guard(end, shifts[2])):
        shifts[0] = np.nan
    exp_t = np.exp(transitions - shifts[0])
    return (exp_t, np.ascontiguousarray(exp_t.T), np.exp(start - shifts[1]),
            np.exp(end - shifts[2]), shifts)


@njit(cache=True)
def _unused():
    """Placeholders for the arguments a mode does not touch (numba needs writable
    arrays of the right type and rank, not None): the scaled potentials, ``ex``
    and ``scale`` outside ``SCALED``."""
    return ((np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), np.zeros(1), np.zeros(3)),
            np.zeros((1, 1)), np.zeros(1))


@njit(cache=True)
def _inside(emissions, o, n, transitions, start, scaled, fixed, mode, alpha, ex, scale):
    """The forward recurrence of the sequence at rows ``o:o+n``, in ``mode``:

        alpha[0, j] = start(j) (x) e(0, j)
        alpha[t, j] = e(t, j) (x) (+)_i alpha[t-1, i] (x) T(i, j)

    * ``SCALED``: (+) is a sum, (x) a product, over ``ex = exp(e - m_t)`` and the
      batch's ``scaled`` potentials; each row is divided by its sum ``scale[t]``.
      Returns the log of what was factored out (``sum_t m_t + log scale[t]`` and
      the shifts), or NaN where scaling cannot represent the sequence.
    * ``LOG``: (+) is log-sum-exp, (x) a sum. Returns 0.

    ``MAX`` (Viterbi) has a recurrence of its own, :func:`_max_forward`.

    Labels that ``fixed`` forbids get ``-inf`` (zero in ``SCALED``).
    """
    L = emissions.shape[1]
    if mode == SCALED:
        exp_t, exp_t_by_next, exp_s, exp_e, shifts = scaled
        if shifts[0] != shifts[0]:
            return np.nan
        log_z = shifts[1] + shifts[2] + (n - 1) * shifts[0]
        # ex[t, j] = exp(emissions[o+t, j] - m_t), zero where label j is not allowed
        for t in range(n):
            m = NEG_INF
            for j in range(L):
                if allowed(fixed, o + t, j) and emissions[o + t, j] > m:
                    m = emissions[o + t, j]
            if m == NEG_INF or m == np.inf or m != m:
                return np.nan
            for j in range(L):
                if allowed(fixed, o + t, j):
                    shifted = emissions[o + t, j] - m
                    if shifted < UNDERFLOW_GUARD and shifted != NEG_INF:
                        return np.nan
                    ex[t, j] = np.exp(shifted)
                else:
                    ex[t, j] = 0.0
            log_z += m
        # The sums run over i in the outer loop, every j at once: each sum adds the
        # same terms in the same order as a loop over i would (so the results are
        # identical), but the inner loop is contiguous and its sums independent
        # (vectorised).
        for t in range(n):
            if t == 0:
                for j in range(L):
                    alpha[0, j] = exp_s[j]
            else:
                for j in range(L):
                    alpha[t, j] = 0.0
                for i in range(L):
                    a = alpha[t - 1, i]
                    for j in range(L):
                        alpha[t, j] += a * exp_t[i, j]
            total = 0.0
            for j in range(L):
                alpha[t, j] = alpha[t, j] * ex[t, j]
                total += alpha[t, j]
            if not (total > 0.0 and total < np.inf):
                return np.nan
            scale[t] = total
            for j in range(L):
                alpha[t, j] /= total
            log_z += np.log(total)
        return log_z
    for t in range(n):
        for j in range(L):
            if not allowed(fixed, o + t, j):
                alpha[t, j] = NEG_INF
                continue
            acc = start[j] if t == 0 else NEG_INF
            if t > 0:
                for i in range(L):
                    acc = logaddexp(acc, alpha[t - 1, i] + transitions[i, j])
            alpha[t, j] = acc + emissions[o + t, j]
    return 0.0


@njit(cache=True)
def _max_forward(emissions, o, n, transitions, start, fixed, delta, back, best, best_i):
    """The max-product forward recurrence (Viterbi's) of the sequence at rows ``o:o+n``:

        delta[0, j] = start(j) + e(0, j)
        delta[t, j] = e(t, j) + max_i (delta[t-1, i] + T(i, j)),  back[t, j] = argmax_i

    ties to the lowest ``i``; labels that ``fixed`` forbids get ``-inf``.
    ``best`` (L,) float64 and ``best_i`` (L,) int64 are work rows.

    The running maxima of every ``j`` are taken at once, over ``i`` in the
    outer loop: the inner loop is contiguous and its maxima independent, so it
    vectorises (a loop over ``i`` per ``j`` is a chain of dependent compares);
    the sums and comparisons are the same, in the same order, so are the
    results (EWT UPOS, 17 labels: about 150 -> 125 ns a token).
    """
    L = emissions.shape[1]
    for t in range(n):
        if t > 0:
            for j in range(L):
                best[j] = NEG_INF
                best_i[j] = 0
            for i in range(L):
                a = delta[t - 1, i]
                for j in range(L):
                    v = a + transitions[i, j]
                    better = v > best[j]
                    best[j] = v if better else best[j]
                    best_i[j] = i if better else best_i[j]
        for j in range(L):
            if not allowed(fixed, o + t, j):
                delta[t, j] = NEG_INF
                back[t, j] = 0
            elif t == 0:
                delta[t, j] = (start[j] + 0.0) + emissions[o, j]  # (in float64)
                back[t, j] = 0
            else:
                delta[t, j] = best[j] + emissions[o + t, j]
                back[t, j] = best_i[j]


@njit(cache=True)
def _closing(alpha, n, end, scaled, mode):
    """(+)_j alpha[n-1, j] (x) end(j), and the best ``j`` in ``MAX``."""
    L = alpha.shape[1]
    if mode == SCALED:
        exp_e = scaled[3]
        closing = 0.0
        for j in range(L):
            closing += alpha[n - 1, j] * exp_e[j]
        return closing, 0
    acc, arg = NEG_INF, 0
    for j in range(L):
        v = alpha[n - 1, j] + end[j]
        if mode == MAX:
            if v > acc:
                acc, arg = v, j
        else:
            acc = logaddexp(acc, v)
    return acc, arg


@njit(cache=True)
def _outside(emissions, o, n, transitions, end, scaled, fixed, mode, beta, ex, scale, closing):
    """The backward recurrence (``SCALED`` or ``LOG``), the mirror of :func:`_inside`:

        beta[n-1, i] = end(i)
        beta[t, i]   = (+)_j T(i, j) (x) e(t+1, j) (x) beta[t+1, j]

    ``SCALED`` divides by ``closing`` at the end and by ``scale[t+1]`` at each
    step (so alpha * beta are the marginals), summing over j in the outer loop.
    """
    L = beta.shape[1]
    if mode == SCALED:
        exp_t_by_next, exp_e = scaled[1], scaled[3]
        for i in range(L):
            beta[n - 1, i] = exp_e[i] / closing
        for t in range(n - 2, -1, -1):
            for i in range(L):
                beta[t, i] = 0.0
            for j in range(L):
                eb = ex[t + 1, j] * beta[t + 1, j]
                for i in range(L):
                    beta[t, i] += exp_t_by_next[j, i] * eb
            for i in range(L):
                beta[t, i] = beta[t, i] / scale[t + 1]
        return
    for i in range(L):
        beta[n - 1, i] = end[i]
    for t in range(n - 2, -1, -1):
        for i in range(L):
            acc = NEG_INF
            for j in range(L):
                if allowed(fixed, o + t + 1, j):
                    acc = logaddexp(acc, transitions[i, j] + emissions[o + t + 1, j] + beta[t + 1, j])
            beta[t, i] = acc


@njit(cache=True)
def sequence_scaled(emissions, o, n, scaled, fixed, weight,
                    marginals, edge_sum, start_sum, end_sum, edge_each, want_each,
                    alpha, beta, ex, scale):
    """Scaled forward-backward for the sequence at rows ``o:o+n``.

    ``scaled`` is the batch's ``scaled_potentials``. Adds ``weight * P(y_t = j)``
    into ``marginals``, the expected transition, start and end counts into
    ``edge_sum``, ``start_sum``, ``end_sum`` and, if ``want_each``,
    ``P(y_{t-1}=i, y_t=j)`` into ``edge_each[o+t]``.
    Returns log Z, or NaN when scaling failed (nothing is written then).
    """
    L = emissions.shape[1]
    exp_t = scaled[0]
    log_z = _inside(emissions, o, n, exp_t, scaled[2], scaled, fixed, SCALED, alpha, ex, scale)
    if log_z != log_z:
        return np.nan
    closing, _ = _closing(alpha, n, scaled[3], scaled, SCALED)
    if not (closing > 0.0 and closing < np.inf):
        return np.nan
    log_z += np.log(closing)
    _outside(emissions, o, n, exp_t, scaled[3], scaled, fixed, SCALED, beta, ex, scale, closing)
    # P(y_t = j) = alpha[t, j] beta[t, j]
    for t in range(n):
        for j in range(L):
            marginals[o + t, j] += weight * alpha[t, j] * beta[t, j]
    for j in range(L):
        start_sum[j] += weight * alpha[0, j] * beta[0, j]
        end_sum[j] += weight * alpha[n - 1, j] * beta[n - 1, j]
    # P(y_{t-1} = i, y_t = j) = alpha[t-1, i] T(i, j) ex[t, j] beta[t, j] / scale[t]
    if want_each:
        for t in range(1, n):
            for i in range(L):
                a = alpha[t - 1, i] / scale[t]
                for j in range(L):
                    p = a * exp_t[i, j] * ex[t, j] * beta[t, j]
                    edge_sum[i, j] += weight * p
                    edge_each[o + t, i, j] += weight * p
        return log_z
    # only the sum over t: T(i, j) does not depend on t, so the rest is summed
    # first as rank-one updates (one multiply-add per entry, vectorised) and
    # multiplied by T once per sequence; the likelihood's gradient spends most
    # of its forward-backward time here
    acc = np.zeros((L, L))
    eb = np.empty(L)
    for t in range(1, n):
        inv = 1.0 / scale[t]
        for j in range(L):
            eb[j] = ex[t, j] * beta[t, j] * inv
        for i in range(L):
            a = alpha[t - 1, i]
            for j in range(L):
                acc[i, j] += a * eb[j]
    for i in range(L):
        for j in range(L):
            edge_sum[i, j] += weight * exp_t[i, j] * acc[i, j]
    return log_z


@njit(cache=True)
def sequence_log(emissions, o, n, transitions, start, end, fixed, weight,
                 marginals, edge_sum, start_sum, end_sum, edge_each, want_each,
                 alpha, beta):
    """Log-space forward-backward: the fallback of ``sequence_scaled``, same contract.

    Returns log Z (``-inf`` when no labelling is allowed; nothing is written then).
    """
    L = emissions.shape[1]
    no_scaled, no_ex, no_scale = _unused()
    _inside(emissions, o, n, transitions, start, no_scaled, fixed, LOG, alpha, no_ex, no_scale)
    log_z, _ = _closing(alpha, n, end, no_scaled, LOG)
    if log_z == NEG_INF:
        return log_z
    _outside(emissions, o, n, transitions, end, no_scaled, fixed, LOG, beta, no_ex, no_scale,
             0.0)
    for t in range(n):
        for j in range(L):
            marginals[o + t, j] += weight * np.exp(alpha[t, j] + beta[t, j] - log_z)
    for j in range(L):
        start_sum[j] += weight * np.exp(alpha[0, j] + beta[0, j] - log_z)
        end_sum[j] += weight * np.exp(alpha[n - 1, j] + beta[n - 1, j] - log_z)
    for t in range(1, n):
        for i in range(L):
            for j in range(L):
                if not allowed(fixed, o + t, j):
                    continue
                p = np.exp(alpha[t - 1, i] + transitions[i, j] + emissions[o + t, j]
                           + beta[t, j] - log_z)
                edge_sum[i, j] += weight * p
                if want_each:
                    edge_each[o + t, i, j] += weight * p
    return log_z


@njit(cache=True)
def _sequence(emissions, o, n, transitions, start, end, scaled, fixed, weight, marginals,
              edge_sum, start_sum, end_sum, edge_each, want_each, alpha, beta, ex, scale,
              force_log):
    """Forward-backward of one sequence: scaled first, log space where that fails.

    ``scaled`` is ``scaled_potentials(transitions, start, end)`` of the batch.
    """
    if not force_log:
        log_z = sequence_scaled(emissions, o, n, scaled, fixed, weight,
                                marginals, edge_sum, start_sum, end_sum, edge_each,
                                want_each, alpha, beta, ex, scale)
        if log_z == log_z:
            return log_z
    return sequence_log(emissions, o, n, transitions, start, end, fixed, weight,
                        marginals, edge_sum, start_sum, end_sum, edge_each, want_each,
                        alpha, beta)


@njit(cache=True)
def max_length(lengths):
    """The longest sequence of a batch (at least 1, to size workspaces)."""
    longest = 1
    for n in lengths:
        longest = max(longest, n)
    return longest


@njit(cache=True)
def _workspace(lengths, n_labels):
    """alpha, beta, ex (max_len, L) and scale (max_len,): allocated once per batch."""
    max_len = max_length(lengths)
    return (np.empty((max_len, n_labels)), np.empty((max_len, n_labels)),
            np.empty((max_len, n_labels)), np.empty(max_len))


@njit(cache=True)
def forward_backward(emissions, lengths, transitions, start, end, fixed, log_z,
                     marginals, edge_sum, start_sum, end_sum, edge_each, want_each,
                     force_log):
    """Log partition and marginals of every sequence in the batch.

    Fills ``log_z`` (S,), adds token marginals into ``marginals`` (N, L), the
    expected transition / start / end counts summed over the batch into
    ``edge_sum`` (L, L), ``start_sum`` and ``end_sum`` (L,), and, if
    ``want_each``, per-position pair marginals into ``edge_each`` (N, L, L),
    row ``t`` holding ``P(y_{t-1}=i, y_t=j)`` (the first row of each sequence
    stays zero). ``log_z[s]`` is ``-inf`` where ``fixed`` allows no labelling.
    """
    alpha, beta, ex, scale = _workspace(lengths, emissions.shape[1])
    scaled = scaled_potentials(transitions, start, end)
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            log_z[s] = 0.0
            continue
        log_z[s] = _sequence(emissions, o, n, transitions, start, end, scaled, fixed, 1.0,
                             marginals, edge_sum, start_sum, end_sum, edge_each,
                             want_each, alpha, beta, ex, scale, force_log)
        o += n


@njit(cache=True)
def viterbi(emissions, lengths, transitions, start, end, fixed, labels, scores):
    """MAP labelling of every sequence, honouring ``fixed`` (:func:`_max_forward`):

    delta[0, j] = start(j) + e(0, j)
    delta[t, j] = e(t, j) + max_i (delta[t-1, i] + T(i, j)),  back[t, j] = argmax_i
    best        = max_j (delta[n-1, j] + end(j)), then follow ``back``.
    Fills ``labels`` (N,) and ``scores`` (S,); ties go to the lowest label id.
    A sequence with no allowed labelling gets score ``-inf`` and, token by
    token, its fixed label (0 where free).
    """
    L = emissions.shape[1]
    max_len = max_length(lengths)
    delta = np.empty((max_len, L))
    back = np.zeros((max_len, L), dtype=np.int64)
    best_row, best_i = np.empty(L), np.empty(L, dtype=np.int64)
    no_scaled = _unused()[0]
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            scores[s] = 0.0
            continue
        _max_forward(emissions, o, n, transitions, start, fixed, delta, back, best_row, best_i)
        best, arg = _closing(delta, n, end, no_scaled, MAX)
        scores[s] = best
        if best == NEG_INF:
            # no allowed labelling: honour ``fixed`` token by token, label 0 elsewhere
            for t in range(n):
                labels[o + t] = max(fixed[o + t], 0)
            o += n
            continue
        labels[o + n - 1] = arg
        for t in range(n - 1, 0, -1):
            arg = back[t, arg]
            labels[o + t - 1] = arg
        o += n


@njit(cache=True)
def nll_gradient(emissions, lengths, transitions, start, end, gold, nll,
                 d_emissions, d_transitions, d_start, d_end, force_log):
    """Negative log-likelihood of ``gold`` and its gradient, per sequence.

    ``gold`` is (N,) int64 with ``-1`` for tokens whose label is unknown: those
    are marginalised, so nll[s] = log Z - log Z(gold-consistent labellings) and
    every gradient is (model expectation) - (expectation given the gold labels).
    With every label known the second term is the gold path itself.
    ``d_*`` are added into (they are not zeroed first).
    """
    alpha, beta, ex, scale = _workspace(lengths, emissions.shape[1])
    # both passes of every sequence share the batch's exponentiated interactions
    scaled = scaled_potentials(transitions, start, end)
    free = np.full(emissions.shape[0], -1, dtype=np.int64)
    dummy = np.zeros((1, 1, 1))
    o = ZERO
    for s in range(lengths.shape[0]):
        n = lengths[s]
        if n == 0:
            nll[s] = 0.0
            continue
        complete = all_known(gold, o, n)
        log_z = _sequence(emissions, o, n, transitions, start, end, scaled, free, 1.0,
                          d_emissions, d_transitions, d_start, d_end, dummy, FALSE,
                          alpha, beta, ex, scale, force_log)
        if complete:
            # the gold path: score and counts directly
            y0 = gold[o]
            gold_score = start[y0] + end[gold[o + n - 1]]
            d_start[y0] -= 1.0
            d_end[gold[o + n - 1]] -= 1.0
            for t in range(n):
                y = gold[o + t]
                gold_score += emissions[o + t, y]
                d_emissions[o + t, y] -= 1.0
                if t > 0:
                    gold_score += transitions[gold[o + t - 1], y]
                    d_transitions[gold[o + t - 1], y] -= 1.0
        else:
            gold_score = _sequence(emissions, o, n, transitions, start, end, scaled, gold, -1.0,
                                   d_emissions, d_transitions, d_start, d_end, dummy,
                                   FALSE, alpha, beta, ex, scale, force_log)
        nll[s] = log_z - gold_score
        o += n
