"""Tests of the k-best Viterbi kernel in ``spacy_crf._kernels.kbest``.

The oracle is brute-force enumeration of every labelling of small chains
(lengths 0..6, 1..5 labels), sorted by score and, among exact ties, by the
documented rule (the lower label at the last position where two labellings
differ comes first). ``chain.viterbi``, the oracle's ``path_score`` and
``chain.forward_backward`` serve as references for the 1-best, the scores of
the returned labellings and log Z.
"""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_crf._kernels.chain import forward_backward
from spacy_crf._kernels.kbest import kbest_viterbi
from kernels.oracle import all_labellings, free, logsumexp, run_path_score, run_viterbi

NEG_INF = -np.inf
HYP = settings(max_examples=30, deadline=None, derandomize=True)
MARGIN = 1e-9  # scores closer than this may come in either order


# --------------------------------------------------------------------------- oracle


def brute_ranked(e, T, s, en, fixed=None):
    """Every allowed labelling of one sequence, best first.

    Returns (paths (M, n), scores (M,)): labellings with a ``-inf`` score or
    violating ``fixed`` are dropped; ties are ordered by the last token's label,
    then the one before, and so on.
    """
    n, L = e.shape
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64), np.zeros(1)
    P = all_labellings(n, L)
    with np.errstate(invalid="ignore"):
        score = (s[P[:, 0]] + en[P[:, -1]] + e[np.arange(n), P].sum(axis=1)
                 + T[P[:, :-1], P[:, 1:]].sum(axis=1))
    ok = score > NEG_INF
    if fixed is not None:
        ok &= np.all((fixed < 0) | (P == fixed), axis=1)
    P, score = P[ok], score[ok]
    order = np.lexsort(tuple(P[:, t] for t in range(n)) + (-score,))
    return P[order], score[order]


# --------------------------------------------------------------------------- kernel wrappers


def run_kbest(e, lengths, T, s, en, k, fixed=None):
    N = e.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    labels = np.full((k, N), -7, dtype=np.int64)  # garbage: everything must be filled
    scores = np.full((len(lengths), k), 123.0)
    counts = np.full(len(lengths), 99, dtype=np.int64)
    kbest_viterbi(e, lengths, T, s, en, free(N) if fixed is None else fixed, k,
                  labels, scores, counts)
    return labels, scores, counts


def run_log_z(e, lengths, T, s, en, fixed=None):
    N, L = e.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    log_z = np.zeros(len(lengths))
    forward_backward(e, lengths, T, s, en, free(N) if fixed is None else fixed, log_z,
                     np.zeros((N, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L),
                     np.zeros((1, 1, 1)), False, False)
    return log_z


def _spans(lengths):
    o = 0
    for n in lengths:
        yield o, n
        o += n


# --------------------------------------------------------------------------- problem generators


def random_problem(rng, lengths, L, ninf_frac=0.0, integer=False):
    N = int(sum(lengths))
    if integer:  # small integers: sums are exact, so ties are exact
        draw = lambda *shape: rng.integers(-1, 2, size=shape).astype(float)  # noqa: E731
    else:
        draw = lambda *shape: rng.normal(size=shape)  # noqa: E731
    e, T, s, en = draw(N, L), draw(L, L), draw(L), draw(L)
    if ninf_frac:
        T[rng.random((L, L)) < ninf_frac] = NEG_INF
        s[rng.random(L) < ninf_frac / 2] = NEG_INF
        en[rng.random(L) < ninf_frac / 2] = NEG_INF
    return e, T, s, en


def random_fixed(rng, N, L, frac):
    fixed = rng.integers(0, L, size=N).astype(np.int64)
    fixed[rng.random(N) >= frac] = -1
    return fixed


def _padding(fixed, o, n):
    return np.maximum(fixed[o:o + n], 0)


def check_against_brute(e, lengths, T, s, en, k, fixed, exact_order):
    """Every documented property of the output, against enumeration."""
    N = e.shape[0]
    fixed = free(N) if fixed is None else fixed
    labels, scores, counts = run_kbest(e, lengths, T, s, en, k, fixed)
    for q, (o, n) in enumerate(_spans(lengths)):
        P, ref = brute_ranked(e[o:o + n], T, s, en, fixed[o:o + n])
        c = min(k, len(ref))
        assert counts[q] == c
        np.testing.assert_allclose(scores[q, :c], ref[:c], rtol=1e-12, atol=1e-12)
        assert np.all(scores[q, c:] == NEG_INF)
        for r in range(c, k):  # padding rows
            np.testing.assert_array_equal(labels[r, o:o + n], _padding(fixed, o, n))
        got = labels[:c, o:o + n]
        assert len({tuple(p) for p in got}) == c  # distinct
        if exact_order:
            np.testing.assert_array_equal(got, P[:c])
        else:
            gap = np.diff(ref[:min(k + 1, len(ref))])
            for r in range(c):
                sep_before = r == 0 or -gap[r - 1] > MARGIN
                sep_after = r + 1 >= len(ref) or -gap[r] > MARGIN
                if sep_before and sep_after:
                    np.testing.assert_array_equal(got[r], P[r])
    # each found labelling has the reported score and honours ``fixed``
    for r in range(k):
        ps = run_path_score(e, lengths, T, s, en, labels[r])
        found = r < counts
        np.testing.assert_allclose(ps[found], scores[found, r], rtol=1e-12, atol=1e-12)
        assert np.all((fixed < 0) | (labels[r] == fixed))
    return labels, scores, counts


lengths_st = st.lists(st.integers(0, 6), min_size=1, max_size=4)


# --------------------------------------------------------------------------- tests


def test_hand_worked_example():
    # scores: (0,0) 0.1+1+0+0.5+0 = 1.6, (0,1) 0.1+1+2-1+0.3 = 2.4,
    #         (1,0) 0+0+0+0+0 = 0,        (1,1) 0+0+2+0.25+0.3 = 2.55
    e = np.array([[1.0, 0.0], [0.0, 2.0]])
    T = np.array([[0.5, -1.0], [0.0, 0.25]])
    s = np.array([0.1, 0.0])
    en = np.array([0.0, 0.3])
    labels, scores, counts = run_kbest(e, [2], T, s, en, 6)
    assert counts[0] == 4
    assert [tuple(labels[r]) for r in range(4)] == [(1, 1), (0, 1), (0, 0), (1, 0)]
    np.testing.assert_allclose(scores[0, :4], [2.55, 2.4, 1.6, 0.0], atol=1e-12)
    assert np.all(scores[0, 4:] == NEG_INF)
    assert np.all(labels[4:] == 0)
    P, ref = brute_ranked(e, T, s, en)  # the oracle agrees with the hand count
    np.testing.assert_array_equal(P, labels[:4])
    np.testing.assert_allclose(ref, [2.55, 2.4, 1.6, 0.0], atol=1e-12)


@HYP
@given(lengths=lengths_st, L=st.integers(1, 4), k=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1), frac=st.sampled_from([0.0, 0.3, 1.0]),
       ninf=st.sampled_from([0.0, 0.3]))
def test_matches_brute_force(lengths, L, k, seed, frac, ninf):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L, ninf_frac=ninf)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    check_against_brute(e, lengths, T, s, en, k, fixed, exact_order=False)


@HYP
@given(lengths=lengths_st, L=st.integers(1, 4), k=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1), frac=st.sampled_from([0.0, 0.3]),
       ninf=st.sampled_from([0.0, 0.3]))
def test_exact_order_with_ties(lengths, L, k, seed, frac, ninf):
    # integer weights: many exact ties, whose order is documented
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L, ninf_frac=ninf, integer=True)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    check_against_brute(e, lengths, T, s, en, k, fixed, exact_order=True)


@pytest.mark.parametrize("L,n", [(1, 4), (2, 3), (3, 2), (4, 1)])
def test_all_ties_returns_every_labelling_once(L, n):
    # every labelling scores 0: the k = L**n + 3 rows must be all of them, once each
    k = L ** n + 3
    e = np.zeros((n, L))
    T, s, en = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    labels, scores, counts = run_kbest(e, [n], T, s, en, k)
    assert counts[0] == L ** n
    assert sorted(map(tuple, labels[:L ** n])) == sorted(map(tuple, all_labellings(n, L)))
    assert np.all(scores[0, :L ** n] == 0.0) and np.all(scores[0, L ** n:] == NEG_INF)
    assert tuple(labels[0]) == (0,) * n  # lowest labels first, as chain.viterbi


def test_counts_when_k_exceeds_labellings():
    rng = np.random.default_rng(5)
    L, k = 2, 8
    e, T, s, en = random_problem(rng, [2], L)
    unfixed = free(2)
    cases = [
        ("free", e, T, s, en, unfixed, 4),
        ("one fixed", e, T, s, en, np.array([-1, 1]), 2),
        ("all fixed", e, T, s, en, np.array([0, 1]), 1),
        ("forbidden 0->1", e, np.where([[False, True], [False, False]], NEG_INF, T), s, en,
         unfixed, 3),
        ("forbidden start", e, T, np.array([NEG_INF, s[1]]), en, unfixed, 2),
        ("forbidden end", e, T, s, np.array([en[0], NEG_INF]), unfixed, 2),
        ("forbidden emission", np.array([[e[0, 0], NEG_INF], e[1]]), T, s, en, unfixed, 2),
        ("nothing allowed", e, np.full((L, L), NEG_INF), s, en, np.array([-1, 1]), 0),
    ]
    for name, e_, T_, s_, en_, fx, expected in cases:
        labels, scores, counts = run_kbest(e_, [2], T_, s_, en_, k, fx)
        assert counts[0] == expected, name
        assert np.all(np.isfinite(scores[0, :expected])), name
        assert np.all(scores[0, expected:] == NEG_INF), name
        assert np.all(labels[expected:] == np.maximum(fx, 0)), name
        assert len({tuple(p) for p in labels[:expected]}) == expected, name
    # several sequences, zero-length ones included: each gets its own count
    lengths = [0, 3, 0, 1, 2]
    e, T, s, en = random_problem(rng, lengths, 3)
    labels, scores, counts = run_kbest(e, lengths, T, s, en, 8)
    np.testing.assert_array_equal(counts, [1, 8, 1, 3, 8])
    assert scores[0, 0] == 0.0 and scores[2, 0] == 0.0
    assert np.all(scores[[0, 2, 3], 3:] == NEG_INF) and np.all(scores[[0, 2], 1:] == NEG_INF)
    assert np.all(np.isfinite(scores[[1, 4]]))


def test_empty_batch_and_k_one():
    L = 3
    T, s, en = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    labels, scores, counts = run_kbest(np.zeros((0, L)), [0, 0], T, s, en, 4)
    assert labels.shape == (4, 0)
    np.testing.assert_array_equal(counts, [1, 1])
    np.testing.assert_array_equal(scores, [[0.0] + [NEG_INF] * 3] * 2)
    rng = np.random.default_rng(6)
    lengths = [3, 0, 2]
    e, T, s, en = random_problem(rng, lengths, L)
    labels, scores, counts = run_kbest(e, lengths, T, s, en, 1)
    np.testing.assert_array_equal(counts, [1, 1, 1])
    v_labels, v_scores = run_viterbi(e, lengths, T, s, en)
    np.testing.assert_array_equal(labels[0], v_labels)
    np.testing.assert_array_equal(scores[:, 0], v_scores)


@HYP
@given(lengths=lengths_st, L=st.integers(1, 4), k=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1), frac=st.sampled_from([0.3, 0.6, 1.0]))
def test_fixed_constraints_honoured(lengths, L, k, seed, frac):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    labels, scores, counts = run_kbest(e, lengths, T, s, en, k, fixed)
    assert np.all((fixed < 0) | (labels == fixed[None, :]))  # every row, padding included
    for q, (o, n) in enumerate(_spans(lengths)):
        _, ref = brute_ranked(e[o:o + n], T, s, en, fixed[o:o + n])
        assert counts[q] == min(k, len(ref))
        np.testing.assert_allclose(scores[q, :counts[q]], ref[:counts[q]], rtol=1e-12)
    # constraining can only lower the r-th best score
    _, free_scores, _ = run_kbest(e, lengths, T, s, en, k)
    assert np.all(scores <= free_scores + 1e-12)


def bio_problem(rng, lengths, n_types, ninf_frac):
    """Labels O, B-1, I-1, B-2, I-2, ...: I-x only after B-x or I-x, never first."""
    L = 1 + 2 * n_types
    e, T, s, en = random_problem(rng, lengths, L)
    for x in range(n_types):
        inside = 2 + 2 * x
        for i in range(L):
            if i not in (inside - 1, inside):
                T[i, inside] = NEG_INF
        s[inside] = NEG_INF
    T[rng.random((L, L)) < ninf_frac] = NEG_INF
    en[rng.random(L) < ninf_frac] = NEG_INF
    return e, T, s, en


@HYP
@given(lengths=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       n_types=st.integers(1, 2), k=st.integers(1, 8), seed=st.integers(0, 2**32 - 1),
       ninf=st.sampled_from([0.0, 0.2]), frac=st.sampled_from([0.0, 0.3]))
def test_forbidden_transitions_never_used(lengths, n_types, k, seed, ninf, frac):
    rng = np.random.default_rng(seed)
    e, T, s, en = bio_problem(rng, lengths, n_types, ninf)
    L = T.shape[0]
    fixed = random_fixed(rng, sum(lengths), L, frac)
    labels, scores, counts = check_against_brute(e, lengths, T, s, en, k, fixed,
                                                 exact_order=False)
    for q, (o, n) in enumerate(_spans(lengths)):
        for r in range(counts[q]):
            y = labels[r, o:o + n]
            assert np.isfinite(scores[q, r])
            if n:
                assert s[y[0]] > NEG_INF and en[y[-1]] > NEG_INF
                assert np.all(T[y[:-1], y[1:]] > NEG_INF)


@HYP
@given(lengths=lengths_st, L=st.integers(1, 4), k=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1), frac=st.sampled_from([0.0, 0.3, 1.0]),
       ninf=st.sampled_from([0.0, 0.4]), integer=st.booleans())
def test_one_best_equals_viterbi(lengths, L, k, seed, frac, ninf, integer):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L, ninf_frac=ninf, integer=integer)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    labels, scores, _ = run_kbest(e, lengths, T, s, en, k, fixed)
    v_labels, v_scores = run_viterbi(e, lengths, T, s, en, fixed)
    # bit for bit, including -inf and the fallback labels when nothing is allowed
    np.testing.assert_array_equal(labels[0], v_labels)
    np.testing.assert_array_equal(scores[:, 0], v_scores)


@HYP
@given(lengths=lengths_st, L=st.integers(1, 4), k=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1), frac=st.sampled_from([0.0, 0.3]))
def test_probabilities_match_brute_force(lengths, L, k, seed, frac):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L, ninf_frac=0.2)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    labels, scores, counts = run_kbest(e, lengths, T, s, en, k, fixed)
    log_z = run_log_z(e, lengths, T, s, en, fixed)
    with np.errstate(invalid="ignore"):
        prob = np.exp(scores - log_z[:, None])
    for q, (o, n) in enumerate(_spans(lengths)):
        c = counts[q]
        _, ref = brute_ranked(e[o:o + n], T, s, en, fixed[o:o + n])
        ref_prob = np.exp(ref - logsumexp(ref)) if len(ref) else ref
        np.testing.assert_allclose(prob[q, :c], ref_prob[:c], rtol=1e-9, atol=1e-12)
        assert np.all(np.diff(prob[q, :c]) <= 1e-15)
        if c == len(ref) and c:  # every labelling found: the mass is all there
            assert prob[q, :c].sum() == pytest.approx(1.0, rel=1e-9)
        else:
            assert prob[q, :c].sum() <= 1.0 + 1e-9


def test_longer_sequences_are_consistent():
    # too long to enumerate: check the returned list against cheap necessary conditions
    rng = np.random.default_rng(11)
    lengths = [300, 0, 40]
    L, k = 6, 12
    e, T, s, en = random_problem(rng, lengths, L, ninf_frac=0.2)
    T[:, 0] = 0.0  # keep some labelling allowed
    s[0] = en[0] = 0.0
    labels, scores, counts = run_kbest(e, lengths, T, s, en, k)
    np.testing.assert_array_equal(counts, [k, 1, k])
    v_labels, v_scores = run_viterbi(e, lengths, T, s, en)
    np.testing.assert_array_equal(labels[0], v_labels)
    np.testing.assert_array_equal(scores[:, 0], v_scores)
    assert np.all(np.diff(scores[[0, 2]], axis=1) <= 0)
    for r in range(k):
        ps = run_path_score(e, lengths, T, s, en, labels[r])
        np.testing.assert_allclose(ps[[0, 2]], scores[[0, 2], r], rtol=1e-12)
    for q, (o, n) in [(0, (0, 300)), (2, (300, 40))]:
        assert len({tuple(labels[r, o:o + n]) for r in range(k)}) == k
        # the second best is at least every single-token change of the best
        best = labels[0].copy()
        alt = NEG_INF
        for t in range(o, o + n):
            for j in range(L):
                if j != best[t]:
                    y = best.copy()
                    y[t] = j
                    alt = max(alt, run_path_score(e, lengths, T, s, en, y)[q])
        assert scores[q, 1] >= alt - 1e-9
