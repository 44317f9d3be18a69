"""Independent tests of the tree CRF kernels in ``spacy_crf._kernels.tree``.

The oracle is brute-force enumeration of every labelling of small random
forests (1..7 tokens per segment, 1..4 labels, 1..3 relation groups, several
roots per segment, several segments per batch), central finite differences for
the gradient, and the linear-chain kernels for chain-shaped trees.
"""


import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_crf._kernels import chain
from spacy_crf._kernels.tree import (
    check_forest,
    max_product,
    nll_gradient,
    sum_product,
)
from finite_differences import central_difference
from kernels.oracle import all_labellings, free, labelling_score, logsumexp

NEG_INF = -np.inf
FORCE_LOG = pytest.mark.parametrize("force_log", [False, True], ids=["scaled", "log"])
HYP = settings(max_examples=25, deadline=None, derandomize=True)


# --------------------------------------------------------------------------- problem generators


def random_heads(rng, n, p_root=0.3):
    """Local heads of a random forest on ``n`` tokens (non-projective, any branching)."""
    perm = rng.permutation(n)
    heads = np.full(n, -1, dtype=np.int64)
    for k in range(1, n):
        if rng.random() >= p_root:
            heads[perm[k]] = perm[rng.integers(0, k)]
    return heads


def random_lengths(rng, max_segments=3):
    """Several segments of 1..7 tokens, one of them a single token."""
    lengths = [1] + [int(x) for x in rng.integers(1, 8, size=rng.integers(1, max_segments + 1))]
    rng.shuffle(lengths)
    return lengths


def random_problem(rng, lengths, L, R, scale=1.0, ninf_frac=0.0):
    N = int(sum(lengths))
    heads = np.empty(N, dtype=np.int64)
    o = 0
    for n in lengths:
        local = random_heads(rng, n)
        heads[o:o + n] = np.where(local < 0, -1, local + o)
        o += n
    e = rng.normal(scale=scale, size=(N, L))
    pair = rng.normal(scale=scale, size=(R, L, L))
    root = rng.normal(scale=scale, size=L)
    rel = rng.integers(0, R, size=N).astype(np.int64)
    rel[heads < 0] = -5  # ignored at roots; an out-of-range value catches any use
    if ninf_frac:
        pair[rng.random((R, L, L)) < ninf_frac] = NEG_INF
    return dict(e=e, lengths=np.asarray(lengths, dtype=np.int64), heads=heads, pair=pair,
                rel=rel, root=root)


def random_fixed(rng, N, L, frac):
    fixed = rng.integers(0, L, size=N).astype(np.int64)
    fixed[rng.random(N) >= frac] = -1
    return fixed


def random_gold(rng, lengths, L, partial):
    gold = rng.integers(0, L, size=int(sum(lengths))).astype(np.int64)
    if partial:
        gold[rng.random(len(gold)) < 0.5] = -1
        gold[0] = 0 if L == 1 else 1  # at least one known token
        gold[-1] = -1  # and one unknown
    return gold


# --------------------------------------------------------------------------- oracle


def brute_segment(e, heads, rel, pair, root, fixed=None):
    """Everything about one segment (``heads`` local) by enumerating all labellings."""
    n, L = e.shape
    R = pair.shape[0]
    Y = all_labellings(n, L)
    score = e[np.arange(n), Y].sum(axis=1)
    for t in range(n):
        if heads[t] < 0:
            score = score + root[Y[:, t]]
        else:
            score = score + pair[rel[t], Y[:, t], Y[:, heads[t]]]
    if fixed is not None:
        ok = np.all((fixed < 0) | (Y == fixed), axis=1)
        score = np.where(ok, score, NEG_INF)
    log_z = logsumexp(score)
    marg = np.zeros((n, L))
    each = np.zeros((n, L, L))
    pair_sum = np.zeros((R, L, L))
    root_sum = np.zeros(L)
    if log_z > NEG_INF:
        prob = np.exp(score - log_z)
        for t in range(n):
            marg[t] = np.bincount(Y[:, t], weights=prob, minlength=L)
            if heads[t] < 0:
                root_sum += marg[t]
            else:
                each[t] = np.bincount(Y[:, t] * L + Y[:, heads[t]], weights=prob,
                                      minlength=L * L).reshape(L, L)
                pair_sum[rel[t]] += each[t]
    order = np.argsort(-score, kind="stable")
    best = order[0]
    margin = np.inf
    if len(order) > 1 and score[order[1]] > NEG_INF:
        margin = score[best] - score[order[1]]
    return dict(log_z=log_z, marg=marg, each=each, pair_sum=pair_sum, root_sum=root_sum,
                best=Y[best].copy(), best_score=score[best], margin=margin)


def brute_batch(p, fixed=None):
    e, lengths, heads = p["e"], p["lengths"], p["heads"]
    N, L = e.shape
    S, R = len(lengths), p["pair"].shape[0]
    out = dict(log_z=np.zeros(S), marg=np.zeros((N, L)), each=np.zeros((N, L, L)),
               pair_sum=np.zeros((R, L, L)), root_sum=np.zeros(L),
               best=np.zeros(N, dtype=np.int64), best_score=np.zeros(S), margin=np.zeros(S))
    o = 0
    for s, n in enumerate(lengths):
        if n == 0:
            continue
        local = np.where(heads[o:o + n] < 0, -1, heads[o:o + n] - o)
        r = brute_segment(e[o:o + n], local, p["rel"][o:o + n], p["pair"], p["root"],
                          None if fixed is None else fixed[o:o + n])
        out["log_z"][s] = r["log_z"]
        out["marg"][o:o + n] = r["marg"]
        out["each"][o:o + n] = r["each"]
        out["pair_sum"] += r["pair_sum"]
        out["root_sum"] += r["root_sum"]
        out["best"][o:o + n] = r["best"]
        out["best_score"][s] = r["best_score"]
        out["margin"][s] = r["margin"]
        o += n
    return out


# --------------------------------------------------------------------------- kernel wrappers


def run_order(p):
    order = np.full(len(p["heads"]), -3, dtype=np.int64)
    assert check_forest(p["heads"], p["lengths"], order) == 0
    return order


def run_sp(p, fixed=None, force_log=False, want_each=True, init=None):
    e = p["e"]
    N, L = e.shape
    S, R = len(p["lengths"]), p["pair"].shape[0]
    if init is None:
        out = dict(log_z=np.full(S, 123.0), marg=np.zeros((N, L)), each=np.zeros((N, L, L)),
                   pair_sum=np.zeros((R, L, L)), root_sum=np.zeros(L))
    else:
        out = {k: v.copy() for k, v in init.items()}
    sum_product(e, p["lengths"], p["heads"], run_order(p), p["pair"], p["rel"], p["root"],
                free(N) if fixed is None else fixed, out["log_z"], out["marg"], out["each"],
                out["pair_sum"], out["root_sum"], want_each, force_log)
    return out


def run_mp(p, fixed=None):
    N = p["e"].shape[0]
    labels = np.full(N, -7, dtype=np.int64)
    scores = np.full(len(p["lengths"]), 123.0)
    max_product(p["e"], p["lengths"], p["heads"], run_order(p), p["pair"], p["rel"], p["root"],
                free(N) if fixed is None else fixed, labels, scores)
    return labels, scores


def run_score(p, labels):
    scores = np.full(len(p["lengths"]), 123.0)
    labelling_score(p["e"], p["lengths"], p["heads"], p["pair"], p["rel"], p["root"],
                    np.asarray(labels, dtype=np.int64), scores)
    return scores


def run_nll(p, gold, force_log=False, order=None):
    e = p["e"]
    N, L = e.shape
    g = dict(e=np.zeros((N, L)), pair=np.zeros_like(p["pair"]), root=np.zeros(L))
    nll = np.full(len(p["lengths"]), 123.0)
    nll_gradient(e, p["lengths"], p["heads"], run_order(p) if order is None else order,
                 p["pair"], p["rel"], p["root"], gold, nll, g["e"], g["pair"], g["root"],
                 force_log)
    return nll, g


def assert_sp_matches(got, ref, rtol=1e-9, atol=1e-10):
    for k in ("log_z", "marg", "each", "pair_sum", "root_sum"):
        np.testing.assert_allclose(got[k], ref[k], rtol=rtol, atol=atol, err_msg=k)


problem_st = dict(seed=st.integers(0, 2**32 - 1), L=st.integers(1, 4), R=st.integers(1, 3))


# --------------------------------------------------------------------------- oracle self-check


def test_oracle_sanity():
    # token 0 is the root, tokens 1 and 2 hang from it (groups 0 and 1); 2 labels
    e = np.array([[0.5, 0.0], [0.0, 1.0], [0.2, -0.3]])
    pair = np.array([[[1.0, 0.0], [0.0, 2.0]], [[0.0, -1.0], [0.5, 0.0]]])
    root = np.array([0.0, 0.7])
    heads, rel = np.array([-1, 0, 0]), np.array([0, 0, 1])
    scores = {}
    for y in itertools.product(range(2), repeat=3):
        scores[y] = (e[0, y[0]] + e[1, y[1]] + e[2, y[2]] + root[y[0]]
                     + pair[0, y[1], y[0]] + pair[1, y[2], y[0]])
    z = sum(np.exp(v) for v in scores.values())
    r = brute_segment(e, heads, rel, pair, root)
    assert r["log_z"] == pytest.approx(np.log(z))
    assert tuple(r["best"]) == max(scores, key=scores.get)
    p_10 = sum(np.exp(v) for y, v in scores.items() if y[2] == 1 and y[0] == 0) / z
    assert r["each"][2, 1, 0] == pytest.approx(p_10)
    assert r["pair_sum"][1, 1, 0] == pytest.approx(p_10)
    assert r["root_sum"][1] == pytest.approx(sum(np.exp(v) for y, v in scores.items()
                                                 if y[0] == 1) / z)


# --------------------------------------------------------------------------- check_forest


def _assert_valid_order(heads, lengths, order):
    o = 0
    for n in lengths:
        seg = order[o:o + n]
        assert sorted(seg) == list(range(o, o + n))
        pos = {t: k for k, t in enumerate(seg)}
        for t in range(o, o + n):
            if heads[t] >= 0:
                assert pos[t] < pos[heads[t]]
        o += n


@HYP
@given(seed=st.integers(0, 2**32 - 1))
def test_check_forest_accepts_forests(seed):
    rng = np.random.default_rng(seed)
    lengths = [0] + random_lengths(rng, 4) + [0]
    p = random_problem(rng, lengths, 2, 1)
    order = np.full(len(p["heads"]), -3, dtype=np.int64)
    assert check_forest(p["heads"], p["lengths"], order) == 0
    _assert_valid_order(p["heads"], lengths, order)


@pytest.mark.parametrize("heads, lengths, code", [
    ([-1, 3, 0], [3], 1),             # out of range (too high)
    ([-1, -2, 0], [3], 1),            # out of range (below -1)
    ([-1, 0, -1, 1], [2, 2], 1),      # head in the previous segment
    ([-1, 0, 3, -1], [3, 1], 1),      # head in the next segment
    ([-1, 1, 0], [3], 1),             # own head
    ([-1, 0, 1], [2, 2], 1),          # lengths do not sum to N
    ([-1, 0], [3, -1], 1),            # negative length
    ([1, 0], [2], 2),                 # 2-cycle
    ([-1, 3, 1, 2, 2], [5], 2),       # 3-cycle with a tail, next to a root
    ([-1, 0, -1, 4, 3], [2, 3], 2),   # cycle in the second segment only
    ([-1, 0, 0, 1, 1, 2], [6], 0),
    ([2, -1, 1, -1, 3], [3, 2], 0),
])
def test_check_forest_codes(heads, lengths, code):
    heads = np.asarray(heads, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.full(len(heads), -3, dtype=np.int64)
    assert check_forest(heads, lengths, order) == code
    if code == 0:
        _assert_valid_order(heads, lengths, order)


def test_bad_heads_reported_before_cycles():
    heads = np.array([1, 0, -1, 5], dtype=np.int64)  # cycle in segment 0, bad head in 1
    order = np.zeros(4, dtype=np.int64)
    assert check_forest(heads, np.array([2, 2], dtype=np.int64), order) == 1


# --------------------------------------------------------------------------- sum-product


@FORCE_LOG
@HYP
@given(**problem_st)
def test_sum_product_matches_brute_force(force_log, seed, L, R):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, random_lengths(rng), L, R)
    got = run_sp(p, force_log=force_log)
    assert_sp_matches(got, brute_batch(p))


@FORCE_LOG
@HYP
@given(frac=st.floats(0.1, 0.9), **problem_st)
def test_fixed_constraints_match_brute_force(force_log, seed, L, R, frac):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, random_lengths(rng), L, R)
    fixed = random_fixed(rng, len(p["heads"]), L, frac)
    got = run_sp(p, fixed=fixed, force_log=force_log)
    ref = brute_batch(p, fixed=fixed)
    assert_sp_matches(got, ref)
    rows = fixed >= 0
    np.testing.assert_array_equal(got["marg"][rows], np.eye(L)[fixed[rows]])


@FORCE_LOG
@HYP
@given(ninf=st.floats(0.1, 0.6), frac=st.sampled_from([0.0, 0.3]), seed=st.integers(0, 2**32 - 1),
       L=st.integers(2, 4), R=st.integers(1, 3))
def test_minus_inf_pair_scores_match_brute_force(force_log, seed, L, R, ninf, frac):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, random_lengths(rng), L, R, ninf_frac=ninf)
    fixed = random_fixed(rng, len(p["heads"]), L, frac)
    got = run_sp(p, fixed=fixed, force_log=force_log)
    ref = brute_batch(p, fixed=fixed)
    assert_sp_matches(got, ref)
    labels, scores = run_mp(p, fixed=fixed)
    np.testing.assert_allclose(scores, ref["best_score"], rtol=1e-12)


@FORCE_LOG
def test_outputs_are_added_into_and_empty_segments(force_log):
    rng = np.random.default_rng(3)
    p = random_problem(rng, [3, 0, 1, 5], 3, 2)
    init = dict(log_z=np.full(4, 9.0), marg=rng.random((9, 3)), each=rng.random((9, 3, 3)),
                pair_sum=rng.random((2, 3, 3)), root_sum=rng.random(3))
    got = run_sp(p, force_log=force_log, init=init)
    ref = brute_batch(p)
    assert got["log_z"][1] == 0.0
    np.testing.assert_allclose(got["log_z"], ref["log_z"], rtol=1e-12)
    for k in ("marg", "each", "pair_sum", "root_sum"):
        np.testing.assert_allclose(got[k], init[k] + ref[k], rtol=1e-9, atol=1e-12, err_msg=k)
    roots = p["heads"] < 0
    np.testing.assert_array_equal(got["each"][roots], init["each"][roots])


@FORCE_LOG
def test_pair_each_untouched_without_want_each(force_log):
    rng = np.random.default_rng(4)
    p = random_problem(rng, [4, 3], 3, 2)
    got = run_sp(p, force_log=force_log, want_each=False)
    assert not got["each"].any()
    assert_sp_matches({**got, "each": brute_batch(p)["each"]}, brute_batch(p))


# --------------------------------------------------------------------------- max-product


@HYP
@given(frac=st.sampled_from([0.0, 0.4]), **problem_st)
def test_max_product_matches_brute_force(seed, L, R, frac):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, random_lengths(rng), L, R)
    fixed = random_fixed(rng, len(p["heads"]), L, frac)
    ref = brute_batch(p, fixed=fixed)
    labels, scores = run_mp(p, fixed=fixed)
    np.testing.assert_allclose(scores, ref["best_score"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run_score(p, labels), scores, rtol=1e-12, atol=1e-12)
    rows = fixed >= 0
    np.testing.assert_array_equal(labels[rows], fixed[rows])
    o = 0
    for s, n in enumerate(p["lengths"]):
        if ref["margin"][s] > 1e-6:
            np.testing.assert_array_equal(labels[o:o + n], ref["best"][o:o + n])
        o += n


def test_max_product_ties_go_to_lowest_label():
    rng = np.random.default_rng(5)
    p = random_problem(rng, [4, 1, 3], 3, 2)
    for k in ("e", "pair", "root"):
        p[k] = np.zeros_like(p[k])
    labels, scores = run_mp(p)
    assert not labels.any()
    np.testing.assert_array_equal(scores, 0.0)
    # a tie between labels 1 and 2 at every token, label 0 worse
    p["e"][:, 0] = -1.0
    labels, _ = run_mp(p)
    np.testing.assert_array_equal(labels, 1)


@HYP
@given(**problem_st)
def test_labelling_score_matches_enumeration(seed, L, R):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, random_lengths(rng), L, R)
    labels = rng.integers(0, L, size=len(p["heads"])).astype(np.int64)
    # the only labelling consistent with fixed = labels has score log Z
    ref = brute_batch(p, fixed=labels)
    np.testing.assert_allclose(run_score(p, labels), ref["log_z"], rtol=1e-12, atol=1e-12)


def _impossible_problem():
    # child must share its head's label (R = 1), but fixed says otherwise in the first
    # tree of segment 1; its second tree (token 5, alone) would rather be label 1
    pair = np.array([[[0.0, NEG_INF], [NEG_INF, 0.0]]])
    e = np.zeros((6, 2))
    e[5, 1] = 5.0
    p = dict(e=e, lengths=np.array([2, 4], dtype=np.int64),
             heads=np.array([-1, 0, -1, 2, 3, -1], dtype=np.int64), pair=pair,
             rel=np.zeros(6, dtype=np.int64), root=np.zeros(2))
    fixed = np.array([-1, -1, 0, -1, 1, -1], dtype=np.int64)
    return p, fixed


@FORCE_LOG
def test_impossible_constraints_give_minus_inf_and_write_nothing(force_log):
    p, fixed = _impossible_problem()
    got = run_sp(p, fixed=fixed, force_log=force_log)
    assert got["log_z"][0] == pytest.approx(np.log(2.0))
    assert got["log_z"][1] == NEG_INF
    assert not got["marg"][2:].any() and not got["each"][2:].any()
    np.testing.assert_allclose(got["marg"][:2], 0.5)
    np.testing.assert_allclose(got["pair_sum"][0], [[0.5, 0.0], [0.0, 0.5]])
    np.testing.assert_allclose(got["root_sum"], [0.5, 0.5])


def test_max_product_impossible_segment_honours_fixed():
    p, fixed = _impossible_problem()
    labels, scores = run_mp(p, fixed=fixed)
    assert scores[0] == 0.0 and scores[1] == NEG_INF
    assert labels[0] == labels[1]
    np.testing.assert_array_equal(labels[2:], [0, 0, 1, 0])  # fixed labels, 0 where free


# --------------------------------------------------------------------------- nll and gradient


@FORCE_LOG
@pytest.mark.parametrize("partial", [False, True], ids=["complete", "partial"])
def test_nll_matches_brute_force(force_log, partial):
    rng = np.random.default_rng(11 + partial)
    for _ in range(8):
        L, R = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        p = random_problem(rng, random_lengths(rng), L, R)
        gold = random_gold(rng, p["lengths"], L, partial)
        nll, g = run_nll(p, gold, force_log=force_log)
        full, cond = brute_batch(p), brute_batch(p, fixed=gold)
        np.testing.assert_allclose(nll, full["log_z"] - cond["log_z"], rtol=1e-9, atol=1e-10)
        if not partial:
            np.testing.assert_allclose(nll, full["log_z"] - run_score(p, gold), rtol=1e-9,
                                       atol=1e-10)
        np.testing.assert_allclose(g["e"], full["marg"] - cond["marg"], atol=1e-10)
        np.testing.assert_allclose(g["pair"], full["pair_sum"] - cond["pair_sum"], atol=1e-10)
        np.testing.assert_allclose(g["root"], full["root_sum"] - cond["root_sum"], atol=1e-10)


def _numeric_gradient(f, x, eps=1e-5):
    return central_difference(f, x, eps)


@FORCE_LOG
@pytest.mark.parametrize("partial", [False, True], ids=["complete", "partial"])
@pytest.mark.parametrize("seed", [0, 1])
def test_nll_gradient_finite_differences(force_log, partial, seed):
    rng = np.random.default_rng(100 + seed)
    L, R = 3, 2
    p = random_problem(rng, random_lengths(rng), L, R)
    gold = random_gold(rng, p["lengths"], L, partial)
    order = run_order(p)
    _, g = run_nll(p, gold, force_log=force_log, order=order)

    def total():
        return run_nll(p, gold, force_log=force_log, order=order)[0].sum()

    for key in ("e", "pair", "root"):
        num = _numeric_gradient(total, p[key])
        np.testing.assert_allclose(g[key], num, atol=1e-6, err_msg=key)


@FORCE_LOG
def test_nll_with_all_free_gold_is_zero(force_log):
    rng = np.random.default_rng(6)
    p = random_problem(rng, [3, 1, 4], 3, 2)
    nll, g = run_nll(p, free(8), force_log=force_log)
    np.testing.assert_allclose(nll, 0.0, atol=1e-12)
    for v in g.values():
        np.testing.assert_allclose(v, 0.0, atol=1e-12)


# --------------------------------------------------------------------------- chain-shaped trees


@FORCE_LOG
def test_chain_shaped_tree_equals_chain_kernels(force_log):
    rng = np.random.default_rng(7)
    L = 4
    lengths = np.array([5, 1, 9, 3], dtype=np.int64)
    N = int(lengths.sum())
    e = rng.normal(size=(N, L))
    T = rng.normal(size=(L, L))
    start = rng.normal(size=L)
    heads = np.arange(-1, N - 1, dtype=np.int64)
    heads[np.cumsum(lengths) - lengths] = -1
    p = dict(e=e, lengths=lengths, heads=heads, pair=T.T.copy()[None], rel=np.zeros(N, np.int64),
             root=start)
    got = run_sp(p, force_log=force_log)
    c = dict(log_z=np.zeros(4), marg=np.zeros((N, L)), edge=np.zeros((L, L)), start=np.zeros(L),
             end=np.zeros(L), each=np.zeros((N, L, L)))
    chain.forward_backward(e, lengths, T, start, np.zeros(L), free(N), c["log_z"], c["marg"],
                           c["edge"], c["start"], c["end"], c["each"], True, force_log)
    np.testing.assert_allclose(got["log_z"], c["log_z"], rtol=1e-13)
    np.testing.assert_allclose(got["marg"], c["marg"], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(got["each"], c["each"].transpose(0, 2, 1), rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(got["pair_sum"][0], c["edge"].T, rtol=1e-11)
    np.testing.assert_allclose(got["root_sum"], c["start"], rtol=1e-11)
    labels, scores = run_mp(p)
    c_labels, c_scores = np.zeros(N, np.int64), np.zeros(4)
    chain.viterbi(e, lengths, T, start, np.zeros(L), free(N), c_labels, c_scores)
    np.testing.assert_array_equal(labels, c_labels)
    np.testing.assert_allclose(scores, c_scores, rtol=1e-13)


# --------------------------------------------------------------------------- large forests


@pytest.mark.parametrize("shape", ["deep_chain", "star"])
def test_large_forest_without_recursion(shape):
    rng = np.random.default_rng(8)
    N, L, R = 100_000, 3, 2
    if shape == "deep_chain":
        heads = np.arange(-1, N - 1, dtype=np.int64)
    else:
        heads = np.zeros(N, dtype=np.int64)
    heads[0] = -1
    p = dict(e=rng.normal(size=(N, L)), lengths=np.array([N], dtype=np.int64), heads=heads,
             pair=rng.normal(size=(R, L, L)), rel=rng.integers(0, R, size=N).astype(np.int64),
             root=rng.normal(size=L))
    order = np.zeros(N, dtype=np.int64)
    assert check_forest(heads, p["lengths"], order) == 0
    if shape == "deep_chain":
        np.testing.assert_array_equal(order, np.arange(N - 1, -1, -1))
    else:
        assert order[-1] == 0
    sc = run_sp(p, force_log=False, want_each=False)
    lg = run_sp(p, force_log=True, want_each=False)
    assert np.isfinite(sc["log_z"]).all()
    np.testing.assert_allclose(sc["log_z"], lg["log_z"], rtol=1e-10)
    np.testing.assert_allclose(sc["marg"], lg["marg"], atol=1e-9)
    np.testing.assert_allclose(sc["marg"].sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(sc["pair_sum"].sum(), N - 1, rtol=1e-9)
    labels, scores = run_mp(p)
    np.testing.assert_allclose(run_score(p, labels), scores, rtol=1e-12)
    assert scores[0] < sc["log_z"][0]


# --------------------------------------------------------------------------- extreme weights


def _assert_no_nan(d):
    for k, v in d.items():
        assert not np.isnan(v).any(), k


@pytest.mark.parametrize("scale", [1e3, 1e4])
@pytest.mark.parametrize("ninf", [0.0, 0.3])
def test_extreme_weights_scaled_equals_log(scale, ninf):
    rng = np.random.default_rng(int(scale) + int(ninf * 10))
    for _ in range(12):
        L, R = int(rng.integers(2, 5)), int(rng.integers(1, 4))
        p = random_problem(rng, random_lengths(rng), L, R, scale=scale, ninf_frac=ninf)
        fixed = random_fixed(rng, len(p["heads"]), L, 0.2)
        for fx in (None, fixed):
            sc = run_sp(p, fixed=fx, force_log=False)
            lg = run_sp(p, fixed=fx, force_log=True)
            ref = brute_batch(p, fixed=fx)
            _assert_no_nan(sc)
            _assert_no_nan(lg)
            ok = ref["log_z"] > NEG_INF
            assert np.isfinite(sc["log_z"][ok]).all()
            rows = np.repeat(ok, p["lengths"])
            np.testing.assert_allclose(sc["marg"][rows].sum(axis=1), 1.0, atol=1e-9)
            for k in sc:
                np.testing.assert_allclose(sc[k], lg[k], rtol=1e-12, atol=1e-9, err_msg=k)
            np.testing.assert_allclose(lg["log_z"], ref["log_z"], rtol=1e-12)
            np.testing.assert_allclose(lg["marg"], ref["marg"], atol=1e-9)
            np.testing.assert_allclose(lg["each"], ref["each"], atol=1e-9)
            _, scores = run_mp(p, fixed=fx)
            np.testing.assert_allclose(scores, ref["best_score"], rtol=1e-12)


@pytest.mark.parametrize("variant", ["root", "edge", "siblings"])
def test_scaled_path_is_exact_near_underflow(variant):
    """Factors that exp() leaves subnormal must not survive into the result."""
    if variant == "root":
        # one token, scores -746 (label 0) and -744 (label 1) split between e and root
        p = dict(e=np.array([[-746.0, 0.0]]), heads=np.array([-1]), pair=np.zeros((1, 2, 2)),
                 root=np.array([0.0, -744.0]))
    elif variant == "edge":
        # root is label 1 (label 0 is e^-800 less likely); the child can only attach
        # through pair scores -744 / -745, subnormal after exp()
        p = dict(e=np.array([[-800.0, 0.0], [0.0, 0.0]]), heads=np.array([-1, 0]),
                 pair=np.array([[[0.0, -744.0], [0.0, -745.0]]]), root=np.zeros(2))
    else:
        # two children pull their head to opposite labels, by 740 and 742
        p = dict(e=np.zeros((3, 2)), heads=np.array([-1, 0, 0]),
                 pair=np.array([[[0.0, -740.0], [0.0, -740.0]], [[-742.0, 0.0], [-742.0, 0.0]]]),
                 root=np.zeros(2))
        p["rel"] = np.array([0, 0, 1])
    N = len(p["heads"])
    p.setdefault("rel", np.zeros(N, dtype=np.int64))
    p["lengths"] = np.array([N], dtype=np.int64)
    p["heads"] = p["heads"].astype(np.int64)
    p["rel"] = p["rel"].astype(np.int64)
    ref = brute_batch(p)
    sc = run_sp(p, force_log=False)
    np.testing.assert_allclose(sc["log_z"], ref["log_z"], rtol=1e-12)
    np.testing.assert_allclose(sc["marg"], ref["marg"], atol=1e-9)
    np.testing.assert_allclose(sc["each"], ref["each"], atol=1e-9)
