"""Independent tests of the linear-chain CRF kernels in ``spacy_crf._kernels.chain``.

The oracle is brute-force enumeration of every labelling of small chains
(lengths 0..6, 1..5 labels), plus central finite differences for gradients and
python-crfsuite for an external reference model.
"""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_crf._kernels.chain import forward_backward, nll_gradient
from kernels.oracle import all_labellings, free, logsumexp, run_path_score, run_viterbi

NEG_INF = -np.inf
FORCE_LOG = pytest.mark.parametrize("force_log", [False, True], ids=["scaled", "log"])
HYP = settings(max_examples=40, deadline=None, derandomize=True)


# --------------------------------------------------------------------------- oracle


def brute_sequence(e, T, s, en, fixed=None):
    """Everything about one sequence (rows ``e``) by enumerating all labellings."""
    n, L = e.shape
    P = all_labellings(n, L)
    score = (s[P[:, 0]] + en[P[:, -1]] + e[np.arange(n), P].sum(axis=1)
             + T[P[:, :-1], P[:, 1:]].sum(axis=1))
    if fixed is not None:
        ok = np.all((fixed < 0) | (P == fixed), axis=1)
        score = np.where(ok, score, NEG_INF)
    log_z = logsumexp(score)
    marg = np.zeros((n, L))
    pair = np.zeros((n, L, L))
    if log_z > NEG_INF:
        prob = np.exp(score - log_z)
        for t in range(n):
            marg[t] = np.bincount(P[:, t], weights=prob, minlength=L)
            if t > 0:
                pair[t] = np.bincount(P[:, t - 1] * L + P[:, t], weights=prob,
                                      minlength=L * L).reshape(L, L)
    best = int(np.argmax(score))
    return dict(log_z=log_z, marg=marg, pair=pair, best_path=P[best].copy(),
                best_score=score[best], paths=P, scores=score)


def brute_batch(e, lengths, T, s, en, fixed=None):
    N, L = e.shape
    out = dict(log_z=np.zeros(len(lengths)), marg=np.zeros((N, L)), pair=np.zeros((N, L, L)),
               edge_sum=np.zeros((L, L)), start_sum=np.zeros(L), end_sum=np.zeros(L),
               best_path=np.zeros(N, dtype=np.int64), best_score=np.zeros(len(lengths)))
    o = 0
    for k, n in enumerate(lengths):
        if n == 0:
            continue
        r = brute_sequence(e[o:o + n], T, s, en, None if fixed is None else fixed[o:o + n])
        out["log_z"][k] = r["log_z"]
        out["marg"][o:o + n] = r["marg"]
        out["pair"][o:o + n] = r["pair"]
        out["edge_sum"] += r["pair"].sum(axis=0)
        out["start_sum"] += r["marg"][0]
        out["end_sum"] += r["marg"][-1]
        out["best_path"][o:o + n] = r["best_path"]
        out["best_score"][k] = r["best_score"]
        o += n
    return out


# --------------------------------------------------------------------------- kernel wrappers


def run_fb(e, lengths, T, s, en, fixed=None, force_log=False, want_each=True, init=None):
    N, L = e.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    if init is None:
        out = dict(log_z=np.full(len(lengths), 123.0), marg=np.zeros((N, L)),
                   edge_sum=np.zeros((L, L)), start_sum=np.zeros(L), end_sum=np.zeros(L),
                   pair=np.zeros((N, L, L)))
    else:
        out = {k: v.copy() for k, v in init.items()}
    forward_backward(e, lengths, T, s, en, free(N) if fixed is None else fixed,
                     out["log_z"], out["marg"], out["edge_sum"], out["start_sum"],
                     out["end_sum"], out["pair"], want_each, force_log)
    return out


def run_nll(e, lengths, T, s, en, gold, force_log=False, init=None):
    N, L = e.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    if init is None:
        g = dict(e=np.zeros((N, L)), T=np.zeros((L, L)), s=np.zeros(L), en=np.zeros(L))
    else:
        g = {k: v.copy() for k, v in init.items()}
    nll = np.full(len(lengths), 123.0)
    nll_gradient(e, lengths, T, s, en, np.asarray(gold, dtype=np.int64), nll,
                 g["e"], g["T"], g["s"], g["en"], force_log)
    return nll, g


# --------------------------------------------------------------------------- problem generators


def random_problem(rng, lengths, L, scale=1.0, ninf_frac=0.0):
    N = int(sum(lengths))
    e = rng.normal(scale=scale, size=(N, L))
    T = rng.normal(scale=scale, size=(L, L))
    s = rng.normal(scale=scale, size=L)
    en = rng.normal(scale=scale, size=L)
    if ninf_frac:
        T[rng.random((L, L)) < ninf_frac] = NEG_INF
    return e, T, s, en


def random_fixed(rng, N, L, frac):
    fixed = rng.integers(0, L, size=N).astype(np.int64)
    fixed[rng.random(N) >= frac] = -1
    return fixed


def assert_fb_matches(got, ref, rtol=1e-9, atol=1e-10, check_each=True):
    np.testing.assert_allclose(got["log_z"], ref["log_z"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(got["marg"], ref["marg"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(got["edge_sum"], ref["edge_sum"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(got["start_sum"], ref["start_sum"], rtol=rtol, atol=atol)
    np.testing.assert_allclose(got["end_sum"], ref["end_sum"], rtol=rtol, atol=atol)
    if check_each:
        np.testing.assert_allclose(got["pair"], ref["pair"], rtol=rtol, atol=atol)


def assert_no_nan(d):
    for k, v in d.items():
        assert not np.isnan(v).any(), k


lengths_st = st.lists(st.integers(0, 6), min_size=1, max_size=4)


# --------------------------------------------------------------------------- oracle self-check


def test_oracle_sanity():
    # a 2-token, 2-label chain worked by hand
    e = np.array([[1.0, 0.0], [0.0, 2.0]])
    T = np.array([[0.5, -1.0], [0.0, 0.25]])
    s = np.array([0.1, 0.0])
    en = np.array([0.0, 0.3])
    scores = {(0, 0): 0.1 + 1 + 0 + 0.5, (0, 1): 0.1 + 1 + 2 - 1 + 0.3,
              (1, 0): 0 + 0 + 0 + 0 + 0, (1, 1): 0 + 0 + 2 + 0.25 + 0.3}
    r = brute_sequence(e, T, s, en)
    assert r["log_z"] == pytest.approx(np.log(sum(np.exp(v) for v in scores.values())))
    assert tuple(r["best_path"]) == max(scores, key=scores.get)
    z = sum(np.exp(v) for v in scores.values())
    assert r["pair"][1, 0, 1] == pytest.approx(np.exp(scores[(0, 1)]) / z)
    assert r["marg"][0, 1] == pytest.approx((np.exp(scores[(1, 0)]) + np.exp(scores[(1, 1)])) / z)


# --------------------------------------------------------------------------- forward-backward


@FORCE_LOG
@HYP
@given(lengths=lengths_st, L=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_forward_backward_matches_brute_force(force_log, lengths, L, seed):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L)
    got = run_fb(e, lengths, T, s, en, force_log=force_log)
    ref = brute_batch(e, lengths, T, s, en)
    assert_fb_matches(got, ref)
    # zero-length sequences: log Z of the empty sum-product is 0
    for k, n in enumerate(lengths):
        if n == 0:
            assert got["log_z"][k] == 0.0


@FORCE_LOG
def test_forward_backward_seeded_batch_with_empty_sequence(force_log):
    rng = np.random.default_rng(0)
    for L in range(1, 6):
        lengths = [3, 0, 1, 6, 2, 0, 5]
        e, T, s, en = random_problem(rng, lengths, L, scale=2.0)
        got = run_fb(e, lengths, T, s, en, force_log=force_log)
        ref = brute_batch(e, lengths, T, s, en)
        assert_fb_matches(got, ref)
        assert got["log_z"][1] == 0.0 and got["log_z"][5] == 0.0
        # structural identities
        np.testing.assert_allclose(got["marg"].sum(axis=1), 1.0, atol=1e-12)
        # sum_i P(y_{t-1}=i, y_t=j) = P(y_t=j), sum_j ... = P(y_{t-1}=i); row 0 stays zero
        first = _first_rows(lengths)
        np.testing.assert_allclose(got["pair"].sum(axis=1),
                                   np.where(first[:, None], 0.0, got["marg"]), atol=1e-12)
        inner = np.flatnonzero(~first)
        np.testing.assert_allclose(got["pair"][inner].sum(axis=2), got["marg"][inner - 1],
                                   atol=1e-12)
        assert got["edge_sum"].sum() == pytest.approx(sum(max(n - 1, 0) for n in lengths))
        assert got["start_sum"].sum() == pytest.approx(sum(n > 0 for n in lengths))


def _first_rows(lengths):
    first = np.zeros(int(sum(lengths)), dtype=bool)
    o = 0
    for n in lengths:
        if n:
            first[o] = True
        o += n
    return first


@FORCE_LOG
def test_outputs_are_added_into_not_overwritten(force_log):
    rng = np.random.default_rng(1)
    lengths = [4, 2, 3]
    L = 3
    e, T, s, en = random_problem(rng, lengths, L)
    N = sum(lengths)
    init = dict(log_z=np.full(3, 55.0), marg=rng.normal(size=(N, L)),
                edge_sum=rng.normal(size=(L, L)), start_sum=rng.normal(size=L),
                end_sum=rng.normal(size=L), pair=rng.normal(size=(N, L, L)))
    got = run_fb(e, lengths, T, s, en, force_log=force_log, init=init)
    ref = brute_batch(e, lengths, T, s, en)
    np.testing.assert_allclose(got["log_z"], ref["log_z"], rtol=1e-10)  # log_z is filled
    for k in ("marg", "edge_sum", "start_sum", "end_sum", "pair"):
        np.testing.assert_allclose(got[k], init[k] + ref[k], rtol=1e-9, atol=1e-10, err_msg=k)


@FORCE_LOG
def test_edge_each_untouched_without_want_each(force_log):
    rng = np.random.default_rng(2)
    lengths = [3, 4]
    e, T, s, en = random_problem(rng, lengths, 3)
    N = sum(lengths)
    init = dict(log_z=np.zeros(2), marg=np.zeros((N, 3)), edge_sum=np.zeros((3, 3)),
                start_sum=np.zeros(3), end_sum=np.zeros(3), pair=np.full((N, 3, 3), 7.0))
    got = run_fb(e, lengths, T, s, en, force_log=force_log, want_each=False, init=init)
    assert np.all(got["pair"] == 7.0)
    assert_fb_matches(got, brute_batch(e, lengths, T, s, en), check_each=False)


def test_all_empty_batch():
    L = 3
    e = np.zeros((0, L))
    T, s, en = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    for force_log in (False, True):
        got = run_fb(e, [0, 0], T, s, en, force_log=force_log)
        assert np.all(got["log_z"] == 0.0)
        assert np.all(got["edge_sum"] == 0.0)
    labels, scores = run_viterbi(e, [0, 0], T, s, en)
    assert np.all(scores == 0.0)
    nll, _ = run_nll(e, [0, 0], T, s, en, np.zeros(0, dtype=np.int64))
    assert np.all(nll == 0.0)


@FORCE_LOG
def test_marginals_are_gradient_of_log_z(force_log):
    rng = np.random.default_rng(3)
    lengths = [4, 1, 3]
    L = 4
    e, T, s, en = random_problem(rng, lengths, L)
    got = run_fb(e, lengths, T, s, en, force_log=force_log)
    eps = 1e-5

    def total_log_z(e_, T_, s_, en_):
        return run_fb(e_, lengths, T_, s_, en_, force_log=force_log)["log_z"].sum()

    def fd(arr_index):
        params = [e, T, s, en]
        grad = np.zeros_like(params[arr_index])
        for idx in np.ndindex(grad.shape):
            plus = [p.copy() for p in params]
            minus = [p.copy() for p in params]
            plus[arr_index][idx] += eps
            minus[arr_index][idx] -= eps
            grad[idx] = (total_log_z(*plus) - total_log_z(*minus)) / (2 * eps)
        return grad

    np.testing.assert_allclose(got["marg"], fd(0), atol=1e-7)
    np.testing.assert_allclose(got["edge_sum"], fd(1), atol=1e-7)
    np.testing.assert_allclose(got["start_sum"], fd(2), atol=1e-7)
    np.testing.assert_allclose(got["end_sum"], fd(3), atol=1e-7)


# --------------------------------------------------------------------------- fixed constraints


@FORCE_LOG
@HYP
@given(lengths=lengths_st, L=st.integers(1, 5), seed=st.integers(0, 2**32 - 1),
       frac=st.sampled_from([0.2, 0.5, 1.0]))
def test_fixed_constraints_match_brute_force(force_log, lengths, L, seed, frac):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    got = run_fb(e, lengths, T, s, en, fixed=fixed, force_log=force_log)
    ref = brute_batch(e, lengths, T, s, en, fixed=fixed)
    assert_fb_matches(got, ref)
    # fixed tokens are one-hot
    for t in np.flatnonzero(fixed >= 0):
        onehot = np.zeros(L)
        onehot[fixed[t]] = 1.0
        np.testing.assert_allclose(got["marg"][t], onehot, atol=1e-12)
    # constraining can only lose mass
    free = run_fb(e, lengths, T, s, en, force_log=force_log)
    assert np.all(got["log_z"] <= free["log_z"] + 1e-12)


@HYP
@given(lengths=lengths_st, L=st.integers(1, 5), seed=st.integers(0, 2**32 - 1),
       frac=st.sampled_from([0.0, 0.3, 1.0]))
def test_viterbi_matches_brute_force(lengths, L, seed, frac):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    labels, scores = run_viterbi(e, lengths, T, s, en, fixed=fixed)
    ref = brute_batch(e, lengths, T, s, en, fixed=fixed)
    np.testing.assert_array_equal(labels, ref["best_path"])
    np.testing.assert_allclose(scores, ref["best_score"], rtol=1e-12, atol=1e-12)
    assert np.all((fixed < 0) | (labels == fixed))
    # the reported score is the score of the returned path
    np.testing.assert_allclose(run_path_score(e, lengths, T, s, en, labels), scores,
                               rtol=1e-12, atol=1e-12)


def test_viterbi_forced_decoding_changes_path():
    # free decoding picks 0,0,0; fixing the middle token to 1 must route through it
    e = np.array([[2.0, 0.0], [2.0, 0.0], [2.0, 0.0]])
    T = np.array([[0.0, -1.0], [-1.0, 0.0]])
    s = en = np.zeros(2)
    labels, scores = run_viterbi(e, [3], T, s, en)
    assert list(labels) == [0, 0, 0]
    assert scores[0] == pytest.approx(6.0)
    labels, scores = run_viterbi(e, [3], T, s, en, fixed=np.array([-1, 1, -1]))
    assert list(labels) == [0, 1, 0]
    assert scores[0] == pytest.approx(2.0 - 1.0 + 0.0 - 1.0 + 2.0)


def test_viterbi_ties_go_to_lowest_label():
    L = 3
    e = np.zeros((4, L))
    T, s, en = np.zeros((L, L)), np.zeros(L), np.zeros(L)
    labels, scores = run_viterbi(e, [4], T, s, en)
    assert list(labels) == [0, 0, 0, 0]
    assert scores[0] == 0.0
    e[:, 1:] = 1.0  # labels 1 and 2 tie everywhere
    labels, _ = run_viterbi(e, [4], T, s, en)
    assert list(labels) == [1, 1, 1, 1]


@HYP
@given(lengths=lengths_st, L=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_path_score_matches_enumeration(lengths, L, seed):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L)
    labels = rng.integers(0, L, size=sum(lengths)).astype(np.int64)
    got = run_path_score(e, lengths, T, s, en, labels)
    o = 0
    for k, n in enumerate(lengths):
        if n == 0:
            assert got[k] == 0.0
            continue
        y = labels[o:o + n]
        ref = s[y[0]] + en[y[-1]] + sum(e[o + t, y[t]] for t in range(n)) \
            + sum(T[y[t - 1], y[t]] for t in range(1, n))
        assert got[k] == pytest.approx(ref, rel=1e-12, abs=1e-12)
        # and agrees with the brute-force score table
        r = brute_sequence(e[o:o + n], T, s, en)
        idx = int(np.ravel_multi_index(tuple(y), (L,) * n))
        assert got[k] == pytest.approx(r["scores"][idx], rel=1e-12, abs=1e-12)
        o += n


@FORCE_LOG
@HYP
@given(lengths=lengths_st, L=st.integers(2, 5), seed=st.integers(0, 2**32 - 1),
       frac=st.sampled_from([0.0, 0.4]), ninf=st.sampled_from([0.3, 0.6]))
def test_minus_inf_transitions_match_brute_force(force_log, lengths, L, seed, frac, ninf):
    rng = np.random.default_rng(seed)
    e, T, s, en = random_problem(rng, lengths, L, ninf_frac=ninf)
    fixed = random_fixed(rng, sum(lengths), L, frac)
    got = run_fb(e, lengths, T, s, en, fixed=fixed, force_log=force_log)
    assert_no_nan(got)
    ref = brute_batch(e, lengths, T, s, en, fixed=fixed)
    assert_fb_matches(got, ref)
    labels, scores = run_viterbi(e, lengths, T, s, en, fixed=fixed)
    np.testing.assert_allclose(scores, ref["best_score"], rtol=1e-12, atol=1e-12)
    possible = ref["log_z"] > NEG_INF
    o = 0
    for k, n in enumerate(lengths):
        if n and possible[k]:
            np.testing.assert_array_equal(labels[o:o + n], ref["best_path"][o:o + n])
        o += n
    assert np.all((labels >= 0) & (labels < L))


def _impossible_cases():
    L = 3
    rng = np.random.default_rng(4)
    cases = []
    # 1. every transition forbidden: only length-1 sequences survive
    lengths = [1, 3, 0, 2]
    e, T, s, en = random_problem(rng, lengths, L)
    T[:] = NEG_INF
    cases.append(("all-transitions", e, lengths, T, s, en, free(sum(lengths))))
    # 2. two fixed labels joined by a forbidden transition
    lengths = [2, 4]
    e, T, s, en = random_problem(rng, lengths, L)
    T[0, 1] = NEG_INF
    fixed = np.array([0, 1, -1, 0, 1, -1])
    cases.append(("fixed-vs-transition", e, lengths, T, s, en, fixed))
    # 3. no allowed start label
    lengths = [3, 2]
    e, T, s, en = random_problem(rng, lengths, L)
    s[:] = NEG_INF
    cases.append(("start", e, lengths, T, s, en, free(5)))
    # 4. no allowed end label for the fixed last token
    lengths = [2, 3]
    e, T, s, en = random_problem(rng, lengths, L)
    en[2] = NEG_INF
    fixed = np.array([-1, 1, -1, -1, 2])
    cases.append(("end", e, lengths, T, s, en, fixed))
    # 5. a fixed token whose only allowed label has emission -inf
    lengths = [3]
    e, T, s, en = random_problem(rng, lengths, L)
    e[1, 2] = NEG_INF
    fixed = np.array([-1, 2, -1])
    cases.append(("emission", e, lengths, T, s, en, fixed))
    # 6. forbidden transitions leave no path although each position has some label
    lengths = [4]
    e, T, s, en = random_problem(rng, lengths, L)
    T[:, :] = NEG_INF
    T[0, 1] = T[1, 2] = 0.0  # 0 -> 1 -> 2 -> (nothing)
    cases.append(("dead-end", e, lengths, T, s, en, free(4)))
    return cases


@FORCE_LOG
@pytest.mark.parametrize("case", _impossible_cases(), ids=lambda c: c[0])
def test_impossible_constraints_give_minus_inf(force_log, case):
    _, e, lengths, T, s, en, fixed = case
    ref = brute_batch(e, lengths, T, s, en, fixed=fixed)
    assert np.any(ref["log_z"] == NEG_INF)  # the case is what it claims
    got = run_fb(e, lengths, T, s, en, fixed=fixed, force_log=force_log)
    assert_no_nan(got)
    assert_fb_matches(got, ref)
    # nothing is contributed by an impossible sequence
    o = 0
    for k, n in enumerate(lengths):
        if n and ref["log_z"][k] == NEG_INF:
            assert got["log_z"][k] == NEG_INF
            assert np.all(got["marg"][o:o + n] == 0.0)
            assert np.all(got["pair"][o:o + n] == 0.0)
        o += n
    labels, scores = run_viterbi(e, lengths, T, s, en, fixed=fixed)
    assert not np.isnan(scores).any()
    np.testing.assert_array_equal(scores == NEG_INF, ref["log_z"] == NEG_INF)
    assert np.all((labels >= 0) & (labels < e.shape[1]))
    o = 0
    for k, n in enumerate(lengths):
        if n:
            # the documented fallback: the last token honours ``fixed``
            assert fixed[o + n - 1] < 0 or labels[o + n - 1] == fixed[o + n - 1]
        o += n


def test_viterbi_impossible_sequence_still_honours_fixed_everywhere():
    e = np.zeros((2, 2))
    T = np.array([[0.0, 0.0], [0.0, NEG_INF]])
    s = en = np.zeros(2)
    fixed = np.array([1, 1])
    labels, scores = run_viterbi(e, [2], T, s, en, fixed=fixed)
    assert scores[0] == NEG_INF
    assert list(labels) == [1, 1]


# --------------------------------------------------------------------------- nll and gradient


def _gold(rng, lengths, L, partial):
    gold = rng.integers(0, L, size=sum(lengths)).astype(np.int64)
    if partial:
        gold[rng.random(len(gold)) < 0.5] = -1
        # make sure at least one sequence is really partial and one token is known
        if len(gold):
            gold[0] = -1
            gold[-1] = rng.integers(0, L)
    return gold


@FORCE_LOG
@pytest.mark.parametrize("partial", [False, True], ids=["complete", "partial"])
def test_nll_matches_brute_force(force_log, partial):
    rng = np.random.default_rng(5 + partial)
    for L in range(1, 6):
        lengths = [3, 0, 1, 5, 2]
        e, T, s, en = random_problem(rng, lengths, L, scale=1.5)
        gold = _gold(rng, lengths, L, partial)
        nll, grads = run_nll(e, lengths, T, s, en, gold, force_log=force_log)
        free = brute_batch(e, lengths, T, s, en)
        cons = brute_batch(e, lengths, T, s, en, fixed=gold)
        np.testing.assert_allclose(nll, free["log_z"] - cons["log_z"], rtol=1e-9, atol=1e-10)
        assert nll[1] == 0.0
        assert np.all(nll >= -1e-12)
        # gradient = model expectations - gold-conditioned expectations
        np.testing.assert_allclose(grads["e"], free["marg"] - cons["marg"], atol=1e-10)
        np.testing.assert_allclose(grads["T"], free["edge_sum"] - cons["edge_sum"], atol=1e-10)
        np.testing.assert_allclose(grads["s"], free["start_sum"] - cons["start_sum"], atol=1e-10)
        np.testing.assert_allclose(grads["en"], free["end_sum"] - cons["end_sum"], atol=1e-10)
        if not partial:
            # complete gold: nll = log Z - path score
            ps = run_path_score(e, lengths, T, s, en, gold)
            np.testing.assert_allclose(nll, free["log_z"] - ps, rtol=1e-9, atol=1e-10)


@FORCE_LOG
@pytest.mark.parametrize("partial", [False, True], ids=["complete", "partial"])
@pytest.mark.parametrize("seed", [0, 1])
def test_nll_gradient_finite_differences(force_log, partial, seed):
    rng = np.random.default_rng(100 + seed)
    lengths = [3, 1, 0, 4]
    L = 3
    e, T, s, en = random_problem(rng, lengths, L)
    gold = _gold(rng, lengths, L, partial)
    _, grads = run_nll(e, lengths, T, s, en, gold, force_log=force_log)
    eps = 1e-5
    params = [e, T, s, en]
    for which, key in enumerate(["e", "T", "s", "en"]):
        fd = np.zeros_like(params[which])
        for idx in np.ndindex(fd.shape):
            plus = [p.copy() for p in params]
            minus = [p.copy() for p in params]
            plus[which][idx] += eps
            minus[which][idx] -= eps
            fd[idx] = (run_nll(*plus[:1], lengths, *plus[1:], gold, force_log=force_log)[0].sum()
                       - run_nll(*minus[:1], lengths, *minus[1:], gold,
                                 force_log=force_log)[0].sum()) / (2 * eps)
        np.testing.assert_allclose(grads[key], fd, atol=1e-6, err_msg=key)
        assert np.abs(fd).max() > 1e-3  # the check is not vacuous


@FORCE_LOG
def test_nll_gradient_added_into(force_log):
    rng = np.random.default_rng(7)
    lengths = [3, 2]
    L = 3
    e, T, s, en = random_problem(rng, lengths, L)
    gold = np.array([0, -1, 2, 1, -1])
    _, g0 = run_nll(e, lengths, T, s, en, gold, force_log=force_log)
    init = dict(e=rng.normal(size=(5, L)), T=rng.normal(size=(L, L)), s=rng.normal(size=L),
                en=rng.normal(size=L))
    _, g1 = run_nll(e, lengths, T, s, en, gold, force_log=force_log, init=init)
    for k in g0:
        np.testing.assert_allclose(g1[k], init[k] + g0[k], rtol=1e-12, atol=1e-12, err_msg=k)


@FORCE_LOG
def test_nll_with_all_free_gold_is_zero(force_log):
    rng = np.random.default_rng(8)
    lengths = [3, 4]
    e, T, s, en = random_problem(rng, lengths, 4)
    nll, g = run_nll(e, lengths, T, s, en, free(7), force_log=force_log)
    np.testing.assert_allclose(nll, 0.0, atol=1e-10)
    for k, v in g.items():
        np.testing.assert_allclose(v, 0.0, atol=1e-10, err_msg=k)


@FORCE_LOG
def test_nll_of_impossible_gold_is_inf_not_nan(force_log):
    e = np.zeros((3, 2))
    T = np.array([[0.0, NEG_INF], [0.0, 0.0]])
    s = en = np.zeros(2)
    for gold in ([0, 1, 1], [0, 1, -1]):
        nll, g = run_nll(e, [3], T, s, en, np.array(gold), force_log=force_log)
        assert nll[0] == np.inf
        if -1 in gold:  # the constrained pass found nothing: nothing NaN was added
            for k, v in g.items():
                assert not np.isnan(v).any(), k


# --------------------------------------------------------------------------- extreme weights

# Regression: the scaled path once missed partial underflow (a state whose
# product alpha*exp(T)*exp(e) dropped below ~1e-308 and later dominated),
# subnormal totals and division by a subnormal scale. It now falls back to
# log space whenever a shifted log-weight is below UNDERFLOW_GUARD.


def _extreme_batches(scale, ninf):
    rng = np.random.default_rng(int(scale) + int(ninf * 10))
    for L in (2, 3, 5):
        for _ in range(6):
            lengths = [int(x) for x in rng.integers(1, 6, size=3)]
            e, T, s, en = random_problem(rng, lengths, L, scale=scale, ninf_frac=ninf)
            fixed = random_fixed(rng, sum(lengths), L, 0.2)
            for fx in (None, fixed):
                yield e, lengths, T, s, en, fx


def _check_extreme(got, ref, lengths):
    assert_no_nan(got)
    ok = ref["log_z"] > NEG_INF
    assert np.all(np.isfinite(got["log_z"][ok]))
    np.testing.assert_array_equal(got["log_z"][~ok], NEG_INF)
    rows = np.repeat(ok, lengths)
    np.testing.assert_allclose(got["marg"][rows].sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(got["log_z"], ref["log_z"], rtol=1e-12)
    np.testing.assert_allclose(got["marg"], ref["marg"], atol=1e-9)
    np.testing.assert_allclose(got["pair"], ref["pair"], atol=1e-9)
    np.testing.assert_allclose(got["edge_sum"], ref["edge_sum"], atol=1e-8)


@pytest.mark.parametrize("scale", [3e2, 1e3, 3e3, 1e4])
@pytest.mark.parametrize("ninf", [0.0, 0.3])
def test_extreme_weights_log_path(scale, ninf):
    for e, lengths, T, s, en, fx in _extreme_batches(scale, ninf):
        ref = brute_batch(e, lengths, T, s, en, fixed=fx)
        got = run_fb(e, lengths, T, s, en, fixed=fx, force_log=True)
        _check_extreme(got, ref, lengths)
        _, scores = run_viterbi(e, lengths, T, s, en, fixed=fx)
        np.testing.assert_allclose(scores, ref["best_score"], rtol=1e-12)


@pytest.mark.parametrize("scale,ninf", [
    (3e2, 0.0), (3e2, 0.3), (1e3, 0.0), (1e3, 0.3),
    (3e3, 0.0), (3e3, 0.3), (1e4, 0.0), (1e4, 0.3)])
def test_extreme_weights_scaled_path_equals_log_path(scale, ninf):
    for e, lengths, T, s, en, fx in _extreme_batches(scale, ninf):
        ref = brute_batch(e, lengths, T, s, en, fixed=fx)
        sc = run_fb(e, lengths, T, s, en, fixed=fx, force_log=False)
        lg = run_fb(e, lengths, T, s, en, fixed=fx, force_log=True)
        _check_extreme(sc, ref, lengths)
        for k in sc:
            np.testing.assert_allclose(sc[k], lg[k], rtol=1e-12, atol=1e-9, err_msg=k)


def _underflow_cases():
    z2 = np.zeros(2)
    return {
        # one token: scores -746 (label 0) and -744 (label 1); exp() of both is
        # subnormal/0 after the start shift, total > 0 so no fallback
        "subnormal-start": (np.array([[-746.0, 0.0]]), np.zeros((2, 2)),
                            np.array([0.0, -744.0]), z2),
        # token 0 is label 1 with odds e^-800; the ways on, T[1, 0] = -744 and
        # T[1, 1] = -745, are both subnormal after exp()
        "subnormal-transition": (np.array([[-800.0, 0.0], [0.0, 0.0]]),
                                 np.array([[0.0, 0.0], [-744.0, -745.0]]), z2, z2),
        # true log Z = -900 via path 0,1,0; at t=1 label 1's product
        # exp(-500) * exp(-400) underflows (its true odds are only e^-400), the
        # scaled pass keeps going and reports log Z = -1000 + log 2
        "lost-state": (np.array([[0.0, -1000.0], [0.0, -400.0], [0.0, 0.0]]),
                       np.array([[-500.0, -500.0], [0.0, -2000.0]]), z2, z2),
        # scale[1] = 2 e^-720 is subnormal: beta[0] = 2 / scale[1] = inf,
        # marginal[0, 1] = 0 * inf = NaN, edge_sum = inf
        "nan": (np.array([[0.0, -1000.0], [0.0, 0.0]]),
                np.array([[-720.0, -720.0], [0.0, 0.0]]), z2, z2),
    }


@pytest.mark.parametrize("variant", list(_underflow_cases()))
def test_scaled_path_is_exact_near_underflow(variant):
    e, T, s, en = _underflow_cases()[variant]
    lengths = [e.shape[0]]
    ref = brute_batch(e, lengths, T, s, en)
    lg = run_fb(e, lengths, T, s, en, force_log=True)
    _check_extreme(lg, ref, lengths)  # the log path is right: the case is well posed
    sc = run_fb(e, lengths, T, s, en, force_log=False)
    _check_extreme(sc, ref, lengths)


@pytest.mark.parametrize("variant", ["lost-state", "nan"])
def test_nll_gradient_near_underflow(variant):
    e, T, s, en = _underflow_cases()[variant]
    lengths = [e.shape[0]]
    gold = np.zeros(e.shape[0], dtype=np.int64)
    free = brute_batch(e, lengths, T, s, en)
    cons = brute_batch(e, lengths, T, s, en, fixed=gold)
    ref_l, ref_g = run_nll(e, lengths, T, s, en, gold, force_log=True)
    np.testing.assert_allclose(ref_l, free["log_z"] - cons["log_z"], rtol=1e-12)
    nll, g = run_nll(e, lengths, T, s, en, gold, force_log=False)
    for k, v in g.items():
        assert np.all(np.isfinite(v)), k
        np.testing.assert_allclose(v, ref_g[k], atol=1e-9, err_msg=k)
    np.testing.assert_allclose(nll, ref_l, rtol=1e-12)


# --------------------------------------------------------------------------- long sequence


def test_long_sequence():
    rng = np.random.default_rng(9)
    n, L = 100_000, 5
    lengths = [n, 0, 3]
    e, T, s, en = random_problem(rng, lengths, L, scale=3.0)
    T[0, 4] = NEG_INF
    results = []
    # The log-space pass carries alpha/beta of magnitude |log Z| ~ 5e5 along the
    # whole chain, so rounding accumulates: its marginals drift by ~2e-7 over
    # 1e5 tokens (the scaled pass stays at ~1e-13). Tolerances reflect that.
    for force_log, tol in ((False, 1e-10), (True, 1e-6)):
        got = run_fb(e, lengths, T, s, en, force_log=force_log)
        assert np.all(np.isfinite(got["log_z"]))
        assert_no_nan(got)
        np.testing.assert_allclose(got["marg"].sum(axis=1), 1.0, atol=tol)
        assert got["edge_sum"].sum() == pytest.approx(n - 1 + 2, rel=tol)
        assert got["edge_sum"][0, 4] == 0.0
        results.append(got)
    np.testing.assert_allclose(results[0]["log_z"], results[1]["log_z"], rtol=1e-12)
    np.testing.assert_allclose(results[0]["marg"], results[1]["marg"], atol=1e-6)
    # log Z is at least the best path score and at most best + n log L
    labels, scores = run_viterbi(e, lengths, T, s, en)
    assert scores[0] <= results[1]["log_z"][0] <= scores[0] + n * np.log(L)
    np.testing.assert_allclose(run_path_score(e, lengths, T, s, en, labels), scores, rtol=1e-10)
    # the short trailing sequence is unaffected by the long one
    ref = brute_sequence(e[n:], T, s, en)
    assert results[0]["log_z"][2] == pytest.approx(ref["log_z"], rel=1e-10)
    np.testing.assert_array_equal(labels[n:], ref["best_path"])
    # and the nll kernel copes too
    gold = labels.copy()
    gold[::3] = -1
    nll, _ = run_nll(e, lengths, T, s, en, gold)
    assert np.all(np.isfinite(nll)) and np.all(nll >= -1e-6)


# --------------------------------------------------------------------------- python-crfsuite oracle


TOY = [
    ("the dog runs".split(), "DET NOUN VERB".split()),
    ("a cat sleeps".split(), "DET NOUN VERB".split()),
    ("the big dog barks".split(), "DET ADJ NOUN VERB".split()),
    ("dogs run".split(), "NOUN VERB".split()),
    ("a small cat runs fast".split(), "DET ADJ NOUN VERB ADV".split()),
    ("cats sleep quietly".split(), "NOUN VERB ADV".split()),
    ("the cat sees a dog".split(), "DET NOUN VERB DET NOUN".split()),
    ("run".split(), "VERB".split()),
]


def _token_features(words, t):
    w = words[t].lower()
    feats = ["bias", "w=" + w, "suf2=" + w[-2:], "len=%d" % min(len(w), 5)]
    feats.append("prev=" + (words[t - 1].lower() if t else "<s>"))
    feats.append("next=" + (words[t + 1].lower() if t + 1 < len(words) else "</s>"))
    return feats


def _xseq(words):
    return [_token_features(words, t) for t in range(len(words))]


def test_against_python_crfsuite(tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    for words, tags in TOY:
        trainer.append(_xseq(words), tags)
    trainer.set_params({"c1": 0.0, "c2": 0.05, "max_iterations": 60,
                        "feature.possible_transitions": True,
                        "feature.possible_states": True})
    model = str(tmp_path / "toy.crfsuite")
    trainer.train(model)
    tagger = pycrfsuite.Tagger()
    tagger.open(model)
    info = tagger.info()
    labels = list(tagger.labels())
    index = {y: k for k, y in enumerate(labels)}
    L = len(labels)
    T = np.zeros((L, L))
    for (a, b), w in info.transitions.items():
        T[index[a], index[b]] = w
    state = {}
    for (attr, y), w in info.state_features.items():
        state.setdefault(attr, np.zeros(L))[index[y]] += w
    assert np.abs(T).max() > 0.1 and len(state) > 10  # the model learned something
    zero = np.zeros(L)

    test_sents = [words for words, _ in TOY] + [
        "the cat runs quietly".split(), "a dog sleeps".split(), "zebra".split(),
        "the small big dog sees the cat fast".split(), "unknown words everywhere".split()]
    xseqs = [_xseq(w) for w in test_sents]
    lengths = [len(x) for x in xseqs]
    e = np.array([sum((state.get(a, zero) for a in feats), np.zeros(L))
                  for x in xseqs for feats in x])
    ours_labels, ours_scores = run_viterbi(e, lengths, T, zero, zero)
    fbs = [run_fb(e, lengths, T, zero, zero, force_log=fl) for fl in (False, True)]
    # an independent check of the reconstruction itself, by enumeration, on short sentences
    ref = brute_batch(e, lengths, T, zero, zero)
    np.testing.assert_allclose(fbs[0]["log_z"], ref["log_z"], rtol=1e-10)
    # Tagger.info() parses CRFsuite's text dump, which prints weights with "%f":
    # each weight we read is off by <= 5e-7. A path score then is off by at most
    # delta = 5e-7 * (weights touched), so log-probabilities by <= 2 delta.
    n_active = np.array([sum(a in state for a in feats) for x in xseqs for feats in x])
    o = 0
    n_diff_from_gold = 0
    for k, (x, n) in enumerate(zip(xseqs, lengths)):
        tol = 2 * 5e-7 * (n_active[o:o + n].sum() + n) * 1.01 + 1e-9
        crf_tags = tagger.tag(x)
        assert [labels[j] for j in ours_labels[o:o + n]] == crf_tags
        # Tagger.tag(x) also set x for marginal/probability
        for fb in fbs:
            for t in range(n):
                for y in labels:
                    assert fb["marg"][o + t, index[y]] == pytest.approx(
                        tagger.marginal(y, t), abs=tol)
            # probability of the decoded path and of some other labelling
            other = [labels[(index[y] + 1) % L] for y in crf_tags]
            for tags in (crf_tags, other):
                ids = np.array([index[y] for y in tags], dtype=np.int64)
                score = run_path_score(e[o:o + n], [n], T, zero, zero, ids)[0]
                assert np.exp(score - fb["log_z"][k]) == pytest.approx(
                    tagger.probability(tags), rel=tol, abs=1e-12)
        assert np.exp(ours_scores[k] - fbs[1]["log_z"][k]) == pytest.approx(
            tagger.probability(crf_tags), rel=tol)
        if k < len(TOY):
            n_diff_from_gold += crf_tags != TOY[k][1]
        o += n
    assert n_diff_from_gold <= 1  # the toy model fits its training data
    tagger.close()
