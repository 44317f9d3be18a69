"""The pruned chain (``spacy-crf.PrunedChain.v1``, issue #51): each token's
best labels (within a margin of its best, in decoding), the exact chain over them. Against brute-force enumeration of the
lattice (log Z, marginals, MAP), the full chain where nothing is pruned, finite
differences, and the component end to end."""

import numpy as np
import pytest
import spacy

from conftest import toy_examples, train
from finite_differences import central_difference
from kernels.oracle import (assert_same_inference, assert_sequence_matches_enumeration,
                            lattice_labellings, logsumexp)
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


def test_candidates_are_the_best_labels_with_the_kept_one():
    emissions = np.array([[0.0, 5.0, 1.0, 4.0], [3.0, 2.0, 1.0, 0.0]])
    cand, counts, scores = best_candidates(emissions, 2, np.array([-1, 3]))
    assert cand.tolist() == [[1, 3], [0, 3]]  # token 1's worst (1) gave way to the kept 3
    assert counts.tolist() == [2, 2]
    assert scores.tolist() == [[5.0, 4.0], [3.0, 0.0]]  # the candidates' emissions
    assert best_candidates(emissions, 4, np.array([-1, -1]))[0].tolist() == [[0, 1, 2, 3]] * 2


def test_a_margin_keeps_the_candidates_within_it_of_the_best():
    emissions = np.array([[0.0, 5.0, 1.0, 4.0], [3.0, 2.0, 1.0, 0.0], [3.0, 2.0, 1.0, 0.0]])
    cand, counts, scores = best_candidates(emissions, 3, np.array([-1, -1, 0]), margin=1.5)
    # token 0: 5 and 4 (1 is 4 below the best); token 1: 3 and 2; token 2: as
    # token 1, with its kept label 0 among them already; the slots after
    # repeat the last
    assert counts.tolist() == [2, 2, 2]
    assert cand.tolist() == [[1, 3, 3], [0, 1, 1], [0, 1, 1]]
    # the slots past the count score -inf: no labelling takes them
    assert scores.tolist() == [[5.0, 4.0, -np.inf], [3.0, 2.0, -np.inf], [3.0, 2.0, -np.inf]]
    cand, counts, _ = best_candidates(emissions, 2, np.array([2, 3, -1]), margin=0.5)
    # a kept label far below the best is added where there is room
    assert counts.tolist() == [2, 2, 1] and cand.tolist() == [[1, 2], [0, 3], [0, 0]]
    cand, counts, _ = best_candidates(emissions, 1, np.array([2, -1, -1]), margin=0.5)
    assert counts.tolist() == [1, 1, 1] and cand.tolist() == [[2], [0], [0]]  # in its place


def random_lattice(rng):
    """A random batch (up to 3 sequences of up to 4 tokens, 3-5 labels), a
    pruned layout keeping fewer candidates than labels, a quarter of the
    tokens fixed, and the candidates."""
    lengths = rng.integers(0, 5, size=rng.integers(1, 4))
    L = int(rng.integers(3, 6))
    scores = random_problem(rng, lengths, L)
    # half the batches with a margin too (decoding keeps the candidates within it)
    margin = float(rng.uniform(0.5, 4.0)) if rng.random() < 0.5 else None
    layout = PrunedChainLayout(np.asarray(lengths), candidates=int(rng.integers(1, L)),
                               margin=margin)
    N = layout.n_tokens
    fixed = np.where(rng.random(N) < 0.25, rng.integers(0, L, N), -1)
    return lengths, scores, layout, fixed, best_candidates(scores.emissions, layout.candidates,
                                                           fixed, margin)[0]


@pytest.mark.parametrize("seed", range(10))
def test_log_z_marginals_and_map_against_enumerating_the_lattice(seed):
    """The MAP over the lattice the margin narrows; log Z and the marginals
    over every candidate (a token narrowed to one label is not sure of it)."""
    lengths, scores, layout, fixed, cand = random_lattice(np.random.default_rng(seed))
    every = best_candidates(scores.emissions, layout.candidates, fixed)[0]
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    start = 0
    for s, n in enumerate(lengths):
        if not n:
            assert log_z[s] == 0.0
            continue
        rows = slice(start, start + n)
        paths, totals = lattice_labellings(scores, rows, every, fixed)
        narrow, narrow_totals = lattice_labellings(scores, rows, cand, fixed)
        assert_sequence_matches_enumeration(paths, totals, probs[rows], log_z[s],
                                            totals.max(), paths[np.argmax(totals)])
        assert best[s] == pytest.approx(narrow_totals.max(), abs=1e-9)
        np.testing.assert_array_equal(labels[rows], narrow[np.argmax(narrow_totals)])
        start += n


@pytest.mark.parametrize("seed", range(6))
def test_with_every_label_kept_it_is_the_full_chain(seed):
    rng = np.random.default_rng(50 + seed)
    lengths = rng.integers(0, 7, size=4)
    L = 5
    scores = random_problem(rng, lengths, L)
    # every label, with no margin or one wider than the scores' spread
    pruned = PrunedChainLayout(np.asarray(lengths), candidates=L,
                               margin=None if seed % 2 else 1e6)
    chain = ChainLayout(np.asarray(lengths))
    N = pruned.n_tokens
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, N), -1)
    assert_same_inference((scores, pruned), (scores, chain), fixed)
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
    cand = best_candidates(scores.emissions, 2, gold)[0]
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


def test_one_candidate_trains_over_two_not_over_the_gold_alone():
    """candidates = 1: a lattice of the gold alone has log Z = the gold's score,
    nll 0 and no gradient (morph_acc 0 after training). Training takes two a
    token, decoding one."""
    rng = np.random.default_rng(5)
    lengths = np.asarray([3, 4])
    scores = random_problem(rng, lengths, 5)
    gold = np.array([0, 4, 2, 1, 2, 3, 0])
    one = inference.nll_and_gradient(scores, PrunedChainLayout(lengths, candidates=1), gold)
    two = inference.nll_and_gradient(scores, PrunedChainLayout(lengths, candidates=2), gold)
    assert (one[0] > 0).all()
    np.testing.assert_allclose(one[0], two[0])
    np.testing.assert_allclose(one[1].emissions, two[1].emissions)
    labels, _ = inference.viterbi(scores, PrunedChainLayout(lengths, candidates=1))
    np.testing.assert_array_equal(labels, scores.emissions.argmax(axis=1))


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
    assert morph.cfg["margin"] == 6.0  # the factory's; the block's own default is none
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
        got, counts = np.zeros((300, 3), dtype=np.int64), np.zeros(300, dtype=np.int64)
        pruning.best_candidates(emissions, 3, keep.astype(np.int64), visit.astype(np.int64),
                                np.inf, got, counts, np.zeros((300, 3), dtype=np.float32))
        assert np.array_equal(got, want) and (counts == 3).all()
    assert np.array_equal(best_candidates(emissions, 3, keep)[0], want)


@pytest.mark.parametrize("seed", range(5))
def test_a_margins_candidates_against_sorting_each_row(seed):
    from spacy_crf._kernels import pruning

    rng = np.random.default_rng(20 + seed)
    emissions = rng.integers(0, 6, size=(300, 12)).astype(np.float32)  # many ties
    emissions[rng.random(emissions.shape) < 0.1] = -np.inf
    keep = rng.integers(-1, 12, size=300)
    margin, n = float(rng.uniform(0.5, 3.0)), 4
    want, want_counts = np.zeros((300, n), dtype=np.int64), np.zeros(300, dtype=np.int64)
    for t in range(300):
        row = emissions[t]
        order = [j for j in sorted(range(12), key=lambda j: (-row[j], j))
                 if row[j] >= row.max() - margin][:n]
        if keep[t] >= 0 and keep[t] not in order:
            order = order + [keep[t]] if len(order) < n else order[:-1] + [keep[t]]
        order = sorted(order)
        want_counts[t] = len(order)
        want[t] = order + [order[-1]] * (n - len(order))
    for visit in (np.arange(12), rng.permutation(12)):  # (not read with a margin)
        got, counts = np.zeros((300, n), dtype=np.int64), np.zeros(300, dtype=np.int64)
        pruning.best_candidates(emissions, n, keep.astype(np.int64), visit.astype(np.int64),
                                margin, got, counts, np.zeros((300, n), dtype=np.float32))
        assert np.array_equal(got, want) and np.array_equal(counts, want_counts)
    cand, counts, _ = best_candidates(emissions, n, keep, margin)
    assert np.array_equal(cand, want) and np.array_equal(counts, want_counts)
    assert want_counts.min() >= 1 and want_counts.mean() < n  # the margin narrowed some


@pytest.mark.parametrize("margin", [0, -1.0])
def test_a_margin_that_is_no_positive_number_is_named(margin):
    with pytest.raises(ValueError, match="E231"):
        spacy.blank("en").add_pipe("crf_tagger", config={"structure": {**BLOCK,
                                                                      "margin": margin}})


def test_the_margin_is_saved_and_a_block_without_it_keeps_every_candidate(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="narrow", config={"structure": {**BLOCK, "margin": 2.5}})
    nlp.add_pipe("crf_tagger", name="wide", config={"structure": BLOCK})
    assert nlp.get_pipe("narrow").cfg["margin"] == 2.5
    # (a cfg without it, as models saved before it have: no margin)
    assert "margin" not in nlp.get_pipe("wide").cfg
    train(nlp, toy_examples(nlp, "tag"), 10, learn_rate=0.05, component=None)
    nlp.to_disk(tmp_path / "p")
    again = spacy.load(tmp_path / "p")
    assert again.get_pipe("narrow").cfg["margin"] == 2.5
    assert "margin" not in again.get_pipe("wide").cfg
    layout = again.get_pipe("narrow").crf_structure.layout([again.make_doc("a b")],
                                                            again.get_pipe("narrow"))
    assert layout.margin == 2.5


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
    cand, counts, cand_scores = best_candidates(emissions, layout.candidates, fixed,
                                                layout.margin)
    start, end, trans = (np.ascontiguousarray(a, dtype=np.float64)
                         for a in (scores.start, scores.end, scores.transitions))
    n_tokens, n_cand = cand.shape
    local, pair = np.empty((n_tokens, n_cand)), np.empty((n_tokens, n_cand, n_cand))
    pruning.lattice_scores(cand_scores, cand, counts, layout.lengths, start, end, trans, local,
                           pair)
    heads, order = path_forest(layout.lengths)
    fixed_slot = slots_of(cand, fixed)
    want_slots, want_best = np.zeros(n_tokens, np.int64), np.zeros(len(lengths))
    tree.max_product(local, layout.lengths, heads, order, pair, np.arange(n_tokens),
                     np.zeros(n_cand), fixed_slot, want_slots, want_best)
    slots, got_best = np.zeros(n_tokens, np.int64), np.zeros(len(lengths))
    pruning.lattice_viterbi(cand_scores, cand, counts, layout.lengths, start, end, trans,
                            fixed_slot, slots, got_best)
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


@pytest.mark.parametrize("target", ["lemma", "tag"])
def test_the_batch_trainer_refuses_the_pruned_chain_with_the_fix(tmp_path, target):
    """E211: fit's L-BFGS needs one objective, and the pruned lattice changes
    with the weights. The factory's chain picks it for the lemma target (a
    config filled from the target alone); order = 1 is the fix, and fits."""
    import io

    from conftest import ewt_sample_corpus, filled_config
    from spacy_crf.training.fit import fit

    config = filled_config(tmp_path, "lemmatizer", target)
    if target == "tag":
        config["components"]["lemmatizer"]["structure"] = dict(BLOCK)
    path = tmp_path / "pruned.cfg"
    config.to_disk(path)
    paths = ewt_sample_corpus(tmp_path, train=60, dev=30)
    overrides = {"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]),
                 "components.lemmatizer.model.n_buckets": 4096}
    with pytest.raises(ValueError, match=r"\[CRF-E211\].*order = 1"):
        fit(path, tmp_path / "refused", max_iterations=2, stdout=io.StringIO(),
            overrides=overrides)
    assert not (tmp_path / "refused" / "model-last").exists()
    if target == "lemma":
        fit(path, tmp_path / "exact", max_iterations=2, stdout=io.StringIO(),
            overrides={**overrides, "components.lemmatizer.structure.order": 1})
        nlp = spacy.load(tmp_path / "exact" / "model-last")
        assert nlp.get_pipe("lemmatizer").crf_structure.name == "chain"
        # a warm start takes the trained component as it is, its pruned chain too:
        # E253 says so, the config's order = 1 notwithstanding
        from spacy.tokens import DocBin
        from spacy.training import Example
        from spacy.util import load_model_from_config

        pruned = load_model_from_config(config, auto_fill=True)
        docs = list(DocBin().from_disk(paths["train"]).get_docs(pruned.vocab))
        pruned.initialize(lambda: [Example(d.copy(), d) for d in docs])
        assert pruned.get_pipe("lemmatizer").crf_structure.name == "pruned_chain"
        pruned.to_disk(tmp_path / "pruned_model")
        with pytest.raises(ValueError, match=r"\[CRF-E253\].*init-from.*\[CRF-E211\]"):
            fit(path, tmp_path / "warm", max_iterations=2, stdout=io.StringIO(),
                init_from=tmp_path / "pruned_model",
                overrides={**overrides, "components.lemmatizer.structure.order": 1})
