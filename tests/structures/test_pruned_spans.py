"""The pruned chain over a span target (issue #51: thousands of entity types):
``O`` kept in every token's lattice beside its candidates, the scheme's
forbidden moves obeyed. Against brute-force enumeration of the lattice (log Z,
marginals, MAP, n-best), the full constrained chain where nothing is pruned,
finite differences, and the component end to end."""

import warnings

import numpy as np
import pytest
import spacy
from spacy.training import Example
from spacy.training.iob_utils import doc_to_biluo_tags

from finite_differences import central_difference
from kernels.oracle import (assert_same_inference, assert_sequence_matches_enumeration,
                            lattice_labellings)
from spacy_crf import inference, schemes
from spacy_crf.pipeline.learning import unannotated_where_unreachable
from spacy_crf.models.potentials import CRFScores
from spacy_crf.structures import ChainLayout, get_structure
from spacy_crf.structures.pruned_chain import PrunedChainLayout, best_candidates, with_label

BLOCK = {"@structures": "spacy-crf.PrunedChain.v1", "candidates": 2}
TAGS = schemes.tag_set(["A", "B"], "BILUO")  # O first: 9 tags
OUT = TAGS.index("O")


def constrained_problem(rng, lengths, tags=TAGS, scheme="BILUO"):
    """Random scores with the scheme's ``-inf`` moves, first and last tags."""
    L = len(tags)
    allowed, first, last = schemes.allowed_moves(tags, scheme)
    return CRFScores.of(rng.normal(scale=2.0, size=(int(sum(lengths)), L)),
                        transitions=np.where(allowed, rng.normal(size=(L, L)), -np.inf),
                        start=np.where(first, rng.normal(size=L), -np.inf),
                        end=np.where(last, rng.normal(size=L), -np.inf))


def lattice_of(scores, layout, fixed, margin):
    return get_structure("pruned_chain")._candidates(scores.emissions, layout, fixed, margin)


def test_with_label_adds_it_where_missing_in_label_order():
    rng = np.random.default_rng(0)
    emissions = rng.normal(size=(40, 7))
    cand, counts, scores = best_candidates(emissions, 3, np.full(40, -1), margin=1.0)
    out_cand, out_counts, out_scores = with_label(emissions, cand, counts, scores, 2)
    assert out_cand.shape == (40, 4)
    for t in range(40):
        want = sorted(set(cand[t, :counts[t]].tolist()) | {2})
        assert out_counts[t] == len(want)
        assert out_cand[t, :len(want)].tolist() == want
        assert np.all(out_cand[t, len(want):] == want[-1])  # the pad repeats the last
        np.testing.assert_array_equal(out_scores[t, :len(want)], emissions[t, want])
        assert np.all(np.isneginf(out_scores[t, len(want):]))


def random_span_lattice(rng):
    """A batch of up to 3 BILUO sequences of up to 4 tokens, a layout keeping
    fewer candidates than tags (half the time a margin too) and ``O`` always,
    some tokens fixed to whole spans or ``O`` (as keep_existing fixes them)."""
    lengths = rng.integers(0, 5, size=rng.integers(1, 4))
    scores = constrained_problem(rng, lengths)
    margin = float(rng.uniform(0.5, 4.0)) if rng.random() < 0.5 else None
    layout = PrunedChainLayout(np.asarray(lengths), candidates=int(rng.integers(1, 4)),
                               margin=margin, always=OUT)
    fixed = np.full(layout.n_tokens, -1)
    fixed[rng.random(layout.n_tokens) < 0.2] = OUT
    if layout.n_tokens and rng.random() < 0.5:  # a fixed one-token span
        fixed[rng.integers(0, layout.n_tokens)] = TAGS.index("U-B")
    return lengths, scores, layout, fixed


def finite(paths, totals):
    keep = np.isfinite(totals)
    return paths[keep], totals[keep]


@pytest.mark.parametrize("seed", range(12))
def test_log_z_marginals_map_and_n_best_against_enumerating_the_lattice(seed):
    rng = np.random.default_rng(seed)
    lengths, scores, layout, fixed = random_span_lattice(rng)
    cand, counts, _ = lattice_of(scores, layout, fixed, layout.margin)
    # O is in every token's lattice, so every sequence has a labelling
    assert all(OUT in cand[t, :counts[t]] for t in range(layout.n_tokens))
    every = lattice_of(scores, layout, fixed, None)[0]  # (the marginals': no margin)
    probs, log_z = inference.marginals(scores, layout, fixed)
    labels, best = inference.viterbi(scores, layout, fixed)
    k = int(rng.integers(1, 6))
    k_labels, k_best, k_counts = inference.n_best(scores, layout, k, fixed)
    start = 0
    for s, n in enumerate(lengths):
        rows = slice(start, start + n)
        start += n
        if not n:
            continue
        wide, wide_totals = finite(*lattice_labellings(scores, rows, every, fixed))
        assert_sequence_matches_enumeration(wide, wide_totals, probs[rows], log_z[s],
                                            wide_totals.max(), wide[np.argmax(wide_totals)])
        paths, totals = finite(*lattice_labellings(scores, rows, cand, fixed))
        assert len(paths)
        assert best[s] == pytest.approx(totals.max(), abs=1e-9)
        np.testing.assert_array_equal(labels[rows], paths[np.argmax(totals)])
        order = np.argsort(-totals, kind="stable")
        assert k_counts[s] == min(k, len(paths))
        np.testing.assert_allclose(k_best[s, :k_counts[s]], totals[order[:k_counts[s]]],
                                   atol=1e-9)
        assert np.array_equal(k_labels[0, rows], labels[rows])


@pytest.mark.parametrize("seed", range(6))
def test_with_every_tag_kept_it_is_the_full_constrained_chain(seed):
    rng = np.random.default_rng(40 + seed)
    lengths = rng.integers(0, 6, size=4)
    scores = constrained_problem(rng, lengths)
    L = len(TAGS)
    pruned = PrunedChainLayout(np.asarray(lengths), candidates=L,
                               margin=None if seed % 2 else 1e6, always=OUT)
    chain = ChainLayout(np.asarray(lengths))
    N = pruned.n_tokens
    fixed = np.where(rng.random(N) < 0.2, OUT, -1)
    assert_same_inference((scores, pruned), (scores, chain), fixed)
    # a gold labelling the scheme allows (each sequence's best), some of it unknown
    gold, _ = inference.viterbi(scores, chain)
    gold = np.where(rng.random(N) < 0.3, -1, gold)
    nll, grad = inference.nll_and_gradient(scores, pruned, gold)
    chain_nll, chain_grad = inference.nll_and_gradient(scores, chain, gold)
    np.testing.assert_allclose(nll, chain_nll, atol=1e-9)
    for name in ("emissions", "transitions", "start", "end"):
        np.testing.assert_allclose(getattr(grad, name), getattr(chain_grad, name), atol=1e-9)


@pytest.mark.parametrize("name", ["emissions", "transitions", "start", "end"])
def test_nll_gradient_against_finite_differences(name):
    rng = np.random.default_rng(5)
    lengths = [4, 2, 3]
    scores = constrained_problem(rng, lengths)
    layout = PrunedChainLayout(np.asarray(lengths), candidates=2, always=OUT)
    gold = np.array([TAGS.index(t) for t in
                     ("B-A", "L-A", "O", "U-B", "O", "O", "B-B", "I-B", "L-B")])
    gold[[2, 5]] = -1  # (O, or a one-token span, joins their neighbours: reachable)
    assert not get_structure("pruned_chain").unreachable_gold(scores, layout, gold).any()
    _, grad = inference.nll_and_gradient(scores, layout, gold)
    values = getattr(scores, name)
    finite_entries = np.isfinite(values)
    saved = values.copy()
    values[~finite_entries] = 0.0  # (finite differences of the allowed scores alone)

    def nll():
        values[~finite_entries] = -np.inf
        try:
            return float(inference.nll_and_gradient(scores, layout, gold)[0].sum())
        finally:
            values[~finite_entries] = 0.0

    numeric = central_difference(nll, values)
    values[:] = saved
    np.testing.assert_allclose(getattr(grad, name)[finite_entries], numeric[finite_entries],
                               atol=1e-5)


def test_unknown_tokens_whose_candidates_cannot_join_the_known_tags_are_found():
    """``B-A ? L-A``: the unknown token needs ``I-A``. Where its candidates
    lack it, the sequence is unreachable (trained as unannotated); where they
    hold it, it is not; and a wholly known sequence never is."""
    L = len(TAGS)
    emissions = np.zeros((6, L))
    emissions[1, TAGS.index("I-A")] = -50.0  # far from the unknown token's best
    emissions[4, TAGS.index("I-A")] = 50.0
    scores = constrained_problem(np.random.default_rng(1), [3, 3]).replace(emissions=emissions)
    layout = PrunedChainLayout(np.asarray([3, 3]), candidates=2, always=OUT)
    gold = np.array([TAGS.index(t) for t in ("B-A", "O", "L-A", "B-A", "O", "L-A")])
    gold[[1, 4]] = -1
    lost = get_structure("pruned_chain").unreachable_gold(scores, layout, gold)
    assert lost.tolist() == [True, False]
    known = np.array([TAGS.index(t) for t in ("B-A", "I-A", "L-A", "O", "U-B", "O")])
    assert get_structure("pruned_chain").unreachable_gold(scores, layout, known) is None


ENTITIES = [("Alice lives in Paris now", [(0, 5, "PER"), (15, 20, "LOC")]),
            ("Bob met Carol Smith in New York City", [(0, 3, "PER"), (8, 19, "PER"),
                                                      (23, 36, "LOC")]),
            ("IBM hired Dave in Rome", [(0, 3, "ORG"), (10, 14, "PER"), (18, 22, "LOC")]),
            ("the cat sat on the mat", [])]


def trained_ents(config, epochs=30):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "structure": BLOCK, **config})
    examples = [Example.from_dict(nlp.make_doc(text), {"entities": ents})
                for text, ents in ENTITIES]
    nlp.initialize(lambda: examples)
    for _ in range(epochs):
        nlp.update(examples)
    return nlp, examples


def test_the_component_trains_ents_saves_loads_and_keeps_existing_spans(tmp_path):
    nlp, examples = trained_ents({"n_best": 3})
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.crf_structure.name == "pruned_chain"
    assert nlp.evaluate(examples)["ents_f"] == 1.0
    doc = nlp("Bob met Carol Smith in New York City")
    assert [(e.text, e.label_) for e in doc.ents] == [
        ("Bob", "PER"), ("Carol Smith", "PER"), ("New York City", "LOC")]
    nbest = doc._.crf_nbest[0]
    assert 1 <= len(nbest) <= 3 and list(nbest[0][1]) == doc_to_biluo_tags(doc)
    nlp.to_disk(tmp_path / "p")
    again = spacy.load(tmp_path / "p")
    assert again.get_pipe("crf_tagger").crf_structure.name == "pruned_chain"
    assert [(e.text, e.label_) for e in again("Bob met Carol Smith in New York City").ents] \
        == [(e.text, e.label_) for e in doc.ents]
    # keep_existing: a span already on the doc stays, the CRF labels around it
    again.get_pipe("crf_tagger").cfg["keep_existing"] = True
    pre = again.make_doc("IBM hired Dave in Rome")
    pre.ents = [pre.char_span(0, 3, label="LOC")]
    out = again.get_pipe("crf_tagger")(pre)
    assert ("IBM", "LOC") in [(e.text, e.label_) for e in out.ents]


def test_unreachable_partial_gold_trains_as_unannotated_with_w049():
    """A batch whose partly known gold its lattice cannot join (a tag of a span
    known, its neighbour not, the inside tag far from the unknown token's
    candidates): the sequence trains as unannotated, W049 names it once.
    (Gold spans a corpus gives are whole, with unknown tokens outside them, so
    ``O`` joins them; this is the guard for what is left.)"""
    nlp, _ = trained_ents({}, epochs=1)
    pipe = nlp.get_pipe("crf_tagger")
    state = pipe._state
    docs = [nlp.make_doc("Bob met Carol Smith"), nlp.make_doc("Dave left")]
    layout = pipe.crf_structure.layout(docs, state.view)
    assert layout.always == pipe.target.out_id
    tags = pipe.cfg["labels"]
    scores = state.target.constrain(pipe.model.predict(docs))
    scores.emissions[2, tags.index("I-PER")] = -1e3
    # "met Carol Smith" a span, Carol's tag unknown (it needs I-PER); "left" unknown (O joins)
    gold = np.array([tags.index(t) for t in ("O", "B-PER", "O", "L-PER", "U-PER", "O")])
    gold[[2, 5]] = -1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = unannotated_where_unreachable(state, scores, layout, gold)
        unannotated_where_unreachable(state, scores, layout, gold)
    assert np.all(kept[:4] == -1) and kept[4] == gold[4]
    said = [str(w.message) for w in caught if "W049" in str(w.message)]
    assert len(said) == 1 and "1 of the 2 sequence(s)" in said[0]


@pytest.mark.parametrize("seed", range(4))
def test_span_probabilities_are_the_full_chains(seed):
    """Span confidences count every labelling, the pruned ones too: the full
    chain's of the same parameters, with fixed tags as well."""
    rng = np.random.default_rng(90 + seed)
    lengths = np.asarray([5, 3, 6])
    scores = constrained_problem(rng, lengths)
    pruned = PrunedChainLayout(lengths, candidates=2, margin=3.0, always=OUT)
    chain = ChainLayout(lengths)
    labels, _ = inference.viterbi(scores, pruned)
    starts, ends = schemes.codes_to_spans(schemes.parse_tags(TAGS)[0][labels], "BILUO",
                                          np.cumsum(lengths))
    blocked = schemes.continuations(TAGS, "BILUO")
    fixed = np.full(int(lengths.sum()), -1)
    fixed[0] = OUT
    for given in (None, fixed):
        ours = inference.span_log_probabilities(scores, pruned, labels, starts, ends, blocked,
                                                given)
        theirs = inference.span_log_probabilities(scores, chain, labels, starts, ends, blocked,
                                                  given)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-12)


def test_a_saved_pruned_model_gives_span_confidences_on_load(tmp_path):
    """store_confidence set when loading a model trained without it (the
    structure comes from the saved cfg): each entity gets the full chain's
    probability."""
    nlp, _ = trained_ents({})
    nlp.to_disk(tmp_path / "p")
    sure = spacy.load(tmp_path / "p",
                      config={"components": {"crf_tagger": {"store_confidence": True}}})
    assert sure.get_pipe("crf_tagger").crf_structure.name == "pruned_chain"
    doc = sure("Bob met Carol Smith in New York City")
    assert doc.ents and all(0.0 < e._.crf_confidence <= 1.0 for e in doc.ents)


def test_the_batch_trainer_refuses_the_pruned_chain_order_null_picks_for_many_tags(tmp_path):
    """fit checks the structure again once initialize has chosen it by the
    tags: E211, and no output folder (it had fit the changing lattice for 0
    iterations and saved an untrained model)."""
    import io

    from spacy.tokens import Doc, DocBin

    from conftest import filled_config
    from spacy_crf.training.fit import fit

    config = filled_config(tmp_path, "ner", "ents")
    config.to_disk(tmp_path / "ents.cfg")
    vocab = spacy.blank("en").vocab
    words = "Ann met Bob in Paris today".split()
    for split, n in (("train", 60), ("dev", 10)):
        bin_ = DocBin()
        for i in range(n):  # 60 types (241 tags), each in the data
            bin_.add(Doc(vocab, words=words, ents=[f"B-T{i % 60}", "O", f"B-T{(i + 1) % 60}",
                                                   "O", f"B-T{(i + 2) % 60}", "O"]))
        bin_.to_disk(tmp_path / f"{split}.spacy")
    with pytest.raises(ValueError, match=r"\[CRF-E211\].*over 200 entity tags"):
        fit(tmp_path / "ents.cfg", tmp_path / "out", max_iterations=2, stdout=io.StringIO(),
            overrides={"paths.train": str(tmp_path / "train.spacy"),
                       "paths.dev": str(tmp_path / "dev.spacy"),
                       "components.ner.model.n_buckets": 4096})
    assert not (tmp_path / "out").exists()
