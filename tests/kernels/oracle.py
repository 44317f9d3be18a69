"""Helpers shared by the kernel tests: brute-force enumeration and thin runners."""

import functools
import itertools

import numpy as np

from spacy_crf._kernels.chain import NEG_INF, viterbi


@functools.lru_cache(maxsize=None)
def all_labellings(n, L):
    """Every labelling of n tokens with L labels, as rows of an (L**n, n) array."""
    return np.array(list(itertools.product(range(L), repeat=n)), dtype=np.int64).reshape(-1, n)


def logsumexp(x):
    """log(sum(exp(x))) of a sequence of scores; -inf when empty or all -inf."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x) if x.size else NEG_INF
    if m == NEG_INF:
        return NEG_INF
    return m + np.log(np.sum(np.exp(x - m)))


def moves_through_kept_pairs(ys, kept) -> bool:
    """Whether every move of the labelling ``ys`` (START first, as -1) is a
    pair of ``kept``, a set of ``(previous, label)`` tuples."""
    return all(((ys[t - 1] if t else -1), ys[t]) in kept for t in range(len(ys)))


def labellings(n, L, pairs):
    """Every labelling of ``n`` tokens whose pairs (START first) are all kept."""
    kept = {tuple(p) for p in pairs.tolist()}
    for ys in itertools.product(range(L), repeat=n):
        if moves_through_kept_pairs(ys, kept):
            yield ys


def enumerate_sequences(lengths, L, score, fixed=None, candidates=None):
    """Per sequence of ``lengths``, by enumeration: (log Z, token marginals
    (n, L), best score, best labelling) over its labellings that agree with
    ``fixed`` (-1: free). ``score(o, ys)`` scores the labelling ``ys`` of the
    sequence whose first token is row ``o``; ``candidates(n)`` gives the
    labellings to consider (default: all L**n). A sequence with none:
    (-inf, zeros, -inf, None)."""
    out, o = [], 0
    for n in lengths:
        n = int(n)
        every = candidates(n) if candidates else itertools.product(range(L), repeat=n)
        seqs = [ys for ys in every
                if fixed is None or all(f < 0 or f == y for f, y in zip(fixed[o:o + n], ys))]
        sc = np.asarray([score(o, ys) for ys in seqs])
        marg = np.zeros((n, L))
        if len(seqs):
            for ys, w in zip(seqs, np.exp(sc - logsumexp(sc))):
                marg[np.arange(n), ys] += w
        out.append((logsumexp(sc), marg, sc.max() if len(sc) else -np.inf,
                    seqs[int(np.argmax(sc))] if len(seqs) else None))
        o += n
    return out


def free(N):
    """A ``fixed`` array that fixes nothing."""
    return np.full(N, -1, dtype=np.int64)


def run_viterbi(e, lengths, T, s, en, fixed=None):
    N = e.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    labels = np.full(N, -7, dtype=np.int64)
    scores = np.full(len(lengths), 123.0)
    viterbi(e, lengths, T, s, en, free(N) if fixed is None else fixed, labels, scores)
    return labels, scores


def path_score(emissions, lengths, transitions, start, end, labels, scores):
    """Fill ``scores[s]`` with the score of the labelling ``labels`` of chain ``s``:
    start(y_0) + sum_t e(t, y_t) + sum_{t>0} T(y_{t-1}, y_t) + end(y_{n-1})."""
    o = 0
    for s, n in enumerate(lengths):
        total = 0.0
        if n > 0:
            ys = labels[o:o + n]
            total = start[ys[0]] + end[ys[-1]] + sum(emissions[o + t, ys[t]] for t in range(n))
            total += sum(transitions[ys[t - 1], ys[t]] for t in range(1, n))
        scores[s] = total
        o += n


def labelling_score(emissions, lengths, heads, pair_scores, rel, root, labels, scores):
    """Fill ``scores[s]`` with the score of the labelling ``labels`` of forest ``s``:
    sum_t e(t, y_t) + sum_{t not root} S[rel[t], y_t, y_{heads[t]}] + sum_{t root} root(y_t)."""
    o = 0
    for s, n in enumerate(lengths):
        total = 0.0
        for t in range(o, o + n):
            y, h = labels[t], heads[t]
            total += emissions[t, y] + (root[y] if h < 0 else pair_scores[rel[t], y, labels[h]])
        scores[s] = total
        o += n


def run_path_score(e, lengths, T, s, en, labels):
    lengths = np.asarray(lengths, dtype=np.int64)
    scores = np.full(len(lengths), 123.0)
    path_score(e, lengths, T, s, en, np.asarray(labels, dtype=np.int64), scores)
    return scores


def assert_sequence_matches_enumeration(paths, totals, probs, log_z, best, labels):
    """One sequence's log Z, token marginals (``probs``, its rows), best score
    and MAP labelling (``labels``, its rows) against its enumerated
    labellings ``paths`` with their scores ``totals``."""
    import pytest

    assert log_z == pytest.approx(logsumexp(totals), abs=1e-9)
    weights = np.exp(totals - logsumexp(totals))
    for t in range(paths.shape[1]):
        expected = np.bincount(paths[:, t], weights=weights, minlength=probs.shape[1])
        np.testing.assert_allclose(probs[t], expected, atol=1e-9)
    assert best == pytest.approx(totals.max(), abs=1e-9)
    np.testing.assert_array_equal(labels, paths[np.argmax(totals)])


def assert_same_inference(ours, theirs, fixed=None, k=4, atol=1e-9):
    """Viterbi, marginals and ``k``-best lists of two (scores, layout) pairs
    agree (labels exactly where ``atol`` is 0, scores within ``atol``)."""
    from spacy_crf import inference

    for name, args in (("viterbi", ()), ("marginals", ()), ("n_best", (k,))):
        run = getattr(inference, name)
        for a, b in zip(run(*ours, *args, fixed), run(*theirs, *args, fixed)):
            np.testing.assert_allclose(a, b, atol=atol)


def lattice_labellings(scores, rows, cand, keep):
    """Every labelling of the tokens ``rows`` whose labels are their candidates
    (and ``keep`` where set), with its score."""
    e = scores.emissions[rows]
    n, L = e.shape
    paths = all_labellings(n, L)
    ok = np.ones(len(paths), dtype=bool)
    for t in range(n):
        ok &= np.isin(paths[:, t], cand[rows][t])
        if keep[rows][t] >= 0:
            ok &= paths[:, t] == keep[rows][t]
    paths = paths[ok]
    totals = (e[np.arange(n), paths].sum(axis=1) + scores.start[paths[:, 0]]
              + scores.end[paths[:, -1]])
    for t in range(1, n):
        totals += scores.transitions[paths[:, t - 1], paths[:, t]]
    return paths, totals
