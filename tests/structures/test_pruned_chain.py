"""The pruned chain (``spacy-crf.PrunedChain.v1``, issue #51): each token's
best labels, the exact chain over them. Against brute-force enumeration of the
lattice (log Z, marginals, MAP), the full chain where nothing is pruned, finite
differences, and the component end to end."""

import numpy as np
import pytest
import spacy

from conftest import toy_examples, train
from finite_differences import central_difference
from kernels.oracle import all_labellings, assert_sequence_matches_enumeration, logsumexp
from spacy_crf import inference
from spacy_crf._kernels import pruning, tree
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout
from spacy_crf.structures.pruned_chain import PrunedChainLayout, best_candidates, slots_of
from spacy_crf.structures.tree_path import path_forest

BLOCK = {"@structures": "spacy-crf.PrunedChain.v1", "candidates": 3}


def random_problem(rng, lengths, L):
    N = int(sum(lengths))
    return CRFScores.of(rng.normal(scale=2.0, size=(N, L)),
                        transitions=rng.normal(size=(L, L)), start=rng.normal(size=L),
                        end=rng.normal(size=L))


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


def test_candidates_are_the_best_labels_with_the_kept_one():
    emissions = np.array([[0.0, 5.0, 1.0, 4.0], [3.0, 2.0, 1.0, 0.0]])
    cand = best_candidates(emissions, 2, np.array([-1, 3]))
    assert cand.tolist() == [[1, 3], [0, 3]]  # token 1's worst (1) gave way to the kept 3
    assert best_candidates(emissions, 4, np.array([-1, -1])).tolist() == [[0, 1, 2, 3]] * 2


def random_lattice(rng):
    """A random batch (up to 3 sequences of up to 4 tokens, 3-5 labels), a
    pruned layout keeping fewer candidates than labels, a quarter of the
    tokens fixed, and the candidates."""
    lengths = rng.integers(0, 5, size=rng.integers(1, 4))
    L = int(rng.integers(3, 6))
    scores = random_problem(rng, lengths, L)
    layout = PrunedChainLayout(np.asarray(lengths), candidates=int(rng.integers(1, L)))
    N = layout.n_tokens
    fixed = np.where(rng.random(N) < 0.25, rng.integers(0, L, N), -1)
    return lengths, scores, layout, fixed, best_candidates(scores.emissions, layout.candidates,
                                                           fixed)


@pytest.mark.parametrize("seed", range(10))
def test_log_z_marginals_and_map_against_enumerating_the_lattice(seed):
    lengths, scores, layout, fixed, cand = random_lattice(np.random.default_rng(seed))
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    start = 0
    for s, n in enumerate(lengths):
        if not n:
            assert log_z[s] == 0.0
            continue
        rows = slice(start, start + n)
        paths, totals = lattice_labellings(scores, rows, cand, fixed)
        assert_sequence_matches_enumeration(paths, totals, probs[rows], log_z[s], best[s],
                                            labels[rows])
        start += n


@pytest.mark.parametrize("seed", range(6))
def test_with_every_label_kept_it_is_the_full_chain(seed):
    rng = np.random.default_rng(50 + seed)
    lengths = rng.integers(0, 7, size=4)
    L = 5
    scores = random_problem(rng, lengths, L)
    pruned = PrunedChainLayout(np.asarray(lengths), candidates=L)
    chain = ChainLayout(np.asarray(lengths))
    N = pruned.n_tokens
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, N), -1)
    for ours, theirs in zip(inference.marginals(scores, pruned, fixed),
                            inference.marginals(scores, chain, fixed)):
        np.testing.assert_allclose(ours, theirs, atol=1e-9)
    for ours, theirs in zip(inference.viterbi(scores, pruned, fixed),
                            inference.viterbi(scores, chain, fixed)):
        np.testing.assert_allclose(ours, theirs, atol=1e-9)
    for ours, theirs in zip(inference.n_best(scores, pruned, 4, fixed),
                            inference.n_best(scores, chain, 4, fixed)):
        np.testing.assert_allclose(ours, theirs, atol=1e-9)
    gold = np.where(rng.random(N) < 0.3, -1, rng.integers(0, L, N))
    nll, grad = inference.nll_and_gradient(scores, pruned, gold)
    chain_nll, chain_grad = inference.nll_and_gradient(scores, chain, gold)
    np.testing.assert_allclose(nll, chain_nll, atol=1e-9)
    for name in ("emissions", "transitions", "start", "end"):
        np.testing.assert_allclose(getattr(grad, name), getattr(chain_grad, name), atol=1e-9)


def test_nll_is_the_lattices_and_keeps_the_gold_label():
    rng = np.random.default_rng(3)
    lengths = [3, 1, 4]
    L = 5
    scores = random_problem(rng, lengths, L)
    layout = PrunedChainLayout(np.asarray(lengths), candidates=2)
    gold = np.array([0, -1, 4, 1, 2, -1, 0, 3])
    nll, grad = inference.nll_and_gradient(scores, layout, gold)
    cand = best_candidates(scores.emissions, 2, gold)
    assert all(g in c for g, c in zip(gold, cand) if g >= 0)
    start = 0
    for s, n in enumerate(lengths):
        rows = slice(start, start + n)
        _, all_totals = lattice_labellings(scores, rows, cand, np.full(8, -1))
        _, gold_totals = lattice_labellings(scores, rows, cand, gold)
        assert nll[s] == pytest.approx(logsumexp(all_totals) - logsumexp(gold_totals), abs=1e-9)
        start += n
    # a pruned label gets no gradient
    pruned = np.ones((8, L), dtype=bool)
    np.put_along_axis(pruned, cand, False, 1)
    assert np.all(grad.emissions[pruned] == 0.0)


@pytest.mark.parametrize("name", ["emissions", "transitions", "start", "end"])
def test_nll_gradient_against_finite_differences(name):
    rng = np.random.default_rng(11)
    scores = random_problem(rng, [3, 1, 4], 5)
    layout = PrunedChainLayout(np.asarray([3, 1, 4]), candidates=3)
    gold = np.array([0, -1, 2, 1, 2, -1, 0, 4])
    _, grad = inference.nll_and_gradient(scores, layout, gold)
    # the lattice is fixed by the emissions' order, which a tiny step keeps
    numeric = central_difference(
        lambda: float(inference.nll_and_gradient(scores, layout, gold)[0].sum()),
        getattr(scores, name))
    np.testing.assert_allclose(getattr(grad, name), numeric, atol=1e-5)


def test_the_component_trains_saves_and_loads_with_it(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"structure": BLOCK, "store_confidence": True})
    examples = toy_examples(nlp, "tag")
    train(nlp, examples, 30, learn_rate=0.05)
    assert nlp.evaluate(examples)["tag_acc"] == 1.0
    doc = nlp("the big dog sat on a box .")
    confidences = [t._.crf_confidence for t in doc]
    assert all(0.0 < c <= 1.0 for c in confidences)
    nlp.to_disk(tmp_path / "p")
    again = spacy.load(tmp_path / "p")
    pipe = again.get_pipe("crf_tagger")
    assert pipe.crf_structure.name == "pruned_chain" and pipe.cfg["candidates"] == 3
    redone = again("the big dog sat on a box .")
    assert [t.tag_ for t in redone] == [t.tag_ for t in doc]
    assert [t._.crf_confidence for t in redone] == confidences


@pytest.mark.parametrize("config, code", [
    ({"target": "ents"}, "E018"),      # a span scheme's moves could leave no labelling
    ({"structure": {**BLOCK, "candidates": 0}}, "E210"),
])
def test_what_it_does_not_do_is_named(config, code):
    with pytest.raises(ValueError, match=code):
        spacy.blank("en").add_pipe("crf_tagger", config={"structure": BLOCK, **config})


def test_a_target_with_labels_by_the_hundred_prunes_by_default():
    """``order = null`` (the factory's chain) picks the pruned chain for the
    morph target, and a chain of order 1 where the config says so."""
    nlp = spacy.blank("en")
    morph = nlp.add_pipe("crf_tagger", name="morph", config={"target": "morph"})
    assert morph.crf_structure.name == "pruned_chain" and morph.cfg["candidates"] == 8
    tags = nlp.add_pipe("crf_tagger", name="tags", config={"target": "tag"})
    assert tags.crf_structure.name == "chain"
    exact = nlp.add_pipe("crf_tagger", name="exact", config={
        "target": "morph", "structure": {"@structures": "spacy-crf.Chain.v1", "order": 1}})
    assert exact.crf_structure.name == "chain"


@pytest.mark.parametrize("seed", range(5))
def test_candidates_do_not_depend_on_the_order_labels_are_read_in(seed):
    """The kernel reads likely labels first; ties (frequent in float32 rows
    made of few distinct scores) still go to the lower label id."""
    from spacy_crf._kernels import pruning

    rng = np.random.default_rng(seed)
    emissions = rng.integers(0, 4, size=(300, 12)).astype(np.float32)  # many ties
    keep = rng.integers(-1, 12, size=300)
    want = np.zeros((300, 3), dtype=np.int64)
    for t in range(300):
        order = sorted(range(12), key=lambda j: (-emissions[t, j], j))[:3]
        if keep[t] >= 0 and keep[t] not in order:
            order[-1] = keep[t]
        want[t] = sorted(order)
    for visit in (np.arange(12), np.arange(12)[::-1].copy(), rng.permutation(12)):
        got = np.zeros((300, 3), dtype=np.int64)
        pruning.best_candidates(emissions, 3, keep.astype(np.int64), visit.astype(np.int64), got)
        assert np.array_equal(got, want)
    assert np.array_equal(best_candidates(emissions, 3, keep), want)


@pytest.mark.parametrize("seed", range(8))
def test_n_best_against_enumerating_the_lattice(seed):
    rng = np.random.default_rng(70 + seed)
    lengths, scores, layout, fixed, cand = random_lattice(rng)
    k = int(rng.integers(1, 6))
    labels, best, counts = inference.n_best(scores, layout, k, fixed)
    map_labels, _ = inference.viterbi(scores, layout, fixed)
    start = 0
    for s, n in enumerate(lengths):
        rows = slice(start, start + n)
        start += n
        if not n:
            assert counts[s] == 1 and best[s, 0] == 0.0
            continue
        paths, totals = lattice_labellings(scores, rows, cand, fixed)
        order = np.argsort(-totals, kind="stable")
        assert counts[s] == min(k, len(paths))
        np.testing.assert_allclose(best[s, :counts[s]], totals[order[:counts[s]]], atol=1e-9)
        for r in range(counts[s]):  # each listed labelling has the score listed
            path = labels[r, rows]
            hit = np.flatnonzero((paths == path).all(axis=1))
            assert hit.size == 1 and totals[hit[0]] == pytest.approx(best[s, r], abs=1e-9)
        assert np.array_equal(labels[0, rows], map_labels[rows])


def test_the_component_gives_n_best_lists_over_its_lattice():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"structure": BLOCK, "n_best": 3})
    examples = toy_examples(nlp, "tag")
    train(nlp, examples, 20, learn_rate=0.05)
    doc = nlp("the big dog sat on a box .")
    nbest = doc._.crf_nbest[0]  # the sentence's (probability, tags), most probable first
    assert 1 <= len(nbest) <= 3
    assert [t.tag_ for t in doc] == list(nbest[0][1])
    assert all(len(tags) == len(doc) for _, tags in nbest)
    probabilities = [p for p, _ in nbest]
    assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 1 + 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_the_lattice_viterbi_is_the_tree_kernels_over_the_written_lattice(seed):
    """Decoding reads the lattice's scores in place (pruning.lattice_viterbi);
    the tree kernel over the lattice written out (pruning.lattice_scores) gives
    the same labelling and scores, ties, -inf emissions and sequences that
    allow no labelling included."""
    rng = np.random.default_rng(300 + seed)
    lengths, scores, layout, fixed, cand = random_lattice(rng)
    emissions = np.array(scores.emissions)
    emissions[rng.random(emissions.shape) < 0.2] = -np.inf  # masked labels
    if seed % 2:
        emissions = np.round(emissions)  # ties
    cand = best_candidates(emissions, layout.candidates, fixed)
    start, end, trans = (np.ascontiguousarray(a, dtype=np.float64)
                         for a in (scores.start, scores.end, scores.transitions))
    n_tokens, n_cand = cand.shape
    local, pair = np.empty((n_tokens, n_cand)), np.empty((n_tokens, n_cand, n_cand))
    pruning.lattice_scores(emissions, cand, layout.lengths, start, end, trans, local, pair)
    heads, order = path_forest(layout.lengths)
    fixed_slot = slots_of(cand, fixed)
    want_slots, want_best = np.zeros(n_tokens, np.int64), np.zeros(len(lengths))
    tree.max_product(local, layout.lengths, heads, order, pair, np.arange(n_tokens),
                     np.zeros(n_cand), fixed_slot, want_slots, want_best)
    slots, got_best = np.zeros(n_tokens, np.int64), np.zeros(len(lengths))
    pruning.lattice_viterbi(emissions, cand, layout.lengths, start, end, trans, fixed_slot,
                            slots, got_best)
    np.testing.assert_allclose(got_best, want_best)
    if seed % 2 == 0:  # no ties: the very same labelling
        assert np.array_equal(slots, want_slots)
    o = 0
    for s, n in enumerate(layout.lengths):  # ties: a labelling of the best score
        rows = np.arange(o, o + n)
        if n and np.isfinite(want_best[s]):
            score = local[rows, slots[rows]].sum() + sum(
                pair[t, slots[t], slots[t - 1]] for t in rows[1:])
            np.testing.assert_allclose(score, want_best[s])
        elif n:  # no labelling allowed: the fixed slots, 0 where free
            assert np.array_equal(slots[rows], want_slots[rows])
        o += n
