"""A factored table's scores composed where the pruned chain reads them
(``spacy_crf.models.composed_emissions``): the candidates searched block by
block against those of the composed array, decoding against decoding the
array, and the component, which defers composing only for a structure that
reads it and only in prediction."""

import numpy as np
import pytest
import spacy
from spacy.training import Example

from conftest import ewt_sample_docs, train_epochs
from kernels.oracle import assert_same_inference
from spacy_crf._kernels.label_parts import BLOCK
from spacy_crf.models.composed_emissions import (ComposedEmissions, composition_deferred,
                                                 deferred_composition)
from spacy_crf.models.potentials import CRFScores
from spacy_crf.pipeline.prediction import model_scores
from spacy_crf.structures.pruned_chain import PrunedChainLayout, best_candidates
from spacy_crf.unseen_labels import mask_labels

PRUNED = {"@structures": "spacy-crf.PrunedChain.v1", "candidates": 8, "margin": 6.0}


def random_composed(rng, n_tokens, n_labels=40, n_parts=9, ties=False):
    """Labels of 0-4 random parts (some alike: equal scores), part scores and
    biases; rounded to halves with ``ties`` (many equal scores)."""
    parts = [sorted(rng.choice(n_parts, size=rng.integers(0, 5), replace=False).tolist())
             for _ in range(n_labels)]
    starts = np.cumsum([0] + [len(p) for p in parts]).astype(np.int64)
    index = np.asarray([p for label in parts for p in label], dtype=np.int64)
    part_scores = rng.normal(scale=2.0, size=(n_tokens, n_parts)).astype(np.float32)
    bias = rng.normal(size=n_labels).astype(np.float32)
    if ties:
        part_scores, bias = np.round(part_scores * 2) / 2, np.round(bias * 2) / 2
    return ComposedEmissions(part_scores, starts, index, bias)


@pytest.mark.parametrize("seed", range(8))
def test_candidates_searched_block_by_block_are_those_of_the_composed_array(seed):
    rng = np.random.default_rng(seed)
    n_tokens = 2 * BLOCK + int(rng.integers(0, BLOCK))  # whole blocks and a part of one
    composed = random_composed(rng, n_tokens, ties=seed % 2 == 1)
    array = np.asarray(composed)
    for n in (1, 3, 8):
        keep = np.where(rng.random(n_tokens) < 0.3, rng.integers(0, 40, n_tokens), -1)
        for margin in (0.5, 3.0, 1e6):  # 1e6: the n best, whatever their scores
            got = composed.candidates(n, keep, margin)
            want = best_candidates(array, n, keep, margin)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            np.testing.assert_array_equal(got[2], want[2])  # the same adds, the same floats
            assert got[2].dtype == np.float32
            # and best_candidates hands a ComposedEmissions with a margin to the fused search
            again = best_candidates(composed, n, keep, margin)
            assert all(np.array_equal(a, b) for a, b in zip(again, got))


@pytest.mark.parametrize("seed", range(6))
def test_decoding_composed_emissions_is_decoding_the_array(seed):
    rng = np.random.default_rng(40 + seed)
    lengths = rng.integers(0, 40, size=5)
    composed = random_composed(rng, int(lengths.sum()), ties=seed % 2 == 1)
    L = composed.shape[1]
    params = dict(transitions=rng.normal(size=(L, L)), start=rng.normal(size=L),
                  end=rng.normal(size=L))
    lazy = CRFScores.of(composed, **params)
    full = CRFScores.of(np.asarray(composed).copy(), **params)
    layout = PrunedChainLayout(np.asarray(lengths), candidates=4, margin=3.0)
    N = layout.n_tokens
    fixed = np.where(rng.random(N) < 0.2, rng.integers(0, L, N), -1) if seed % 3 else None
    # the same candidates and scores: the very same labels and floats
    assert_same_inference((lazy, layout), (full, layout), fixed, k=3, atol=0.0)


def test_any_other_reader_gets_the_array_composed_once():
    composed = random_composed(np.random.default_rng(5), 70)
    array = np.asarray(composed)
    assert composed.shape == array.shape == (70, 40) and len(composed) == 70
    assert np.asarray(composed) is array  # composed once
    assert np.asarray(composed, dtype=np.float64).dtype == np.float64
    assert np.array(composed, copy=True) is not array
    masked = mask_labels(CRFScores.of(composed), [3], 40)
    assert isinstance(masked.emissions, np.ndarray) and np.isneginf(masked.emissions[:, 3]).all()


def test_deferring_holds_within_the_block_only():
    assert not composition_deferred()
    with deferred_composition():
        assert composition_deferred()
        with deferred_composition(False):
            assert not composition_deferred()
        assert composition_deferred()
    assert not composition_deferred()


@pytest.fixture(scope="module")
def morph_pipelines():
    """Two morphologizers trained on the shipped EWT sample: one over the
    pruned chain (with a margin), one over the full chain."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="pruned",
                 config={"target": "morph", "structure": PRUNED, "store_confidence": True,
                         "n_best": 2})
    nlp.add_pipe("crf_tagger", name="chain",
                 config={"target": "morph", "structure": {"@structures": "spacy-crf.Chain.v1",
                                                                "order": 1}})
    docs = ewt_sample_docs("train")[:120]
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in docs]
    train_epochs(nlp, examples, 2, 16)
    return nlp


def test_only_a_structure_that_reads_them_gets_the_parts_and_only_in_prediction(
        morph_pipelines):
    nlp = morph_pipelines
    docs = [nlp.make_doc("The dogs ran home ."), nlp.make_doc("She sings .")]
    pruned, chain = nlp.get_pipe("pruned"), nlp.get_pipe("chain")
    batch = pruned.read_batch(docs)
    assert isinstance(model_scores(pruned._state, batch).emissions, ComposedEmissions)
    assert isinstance(model_scores(chain._state, chain.read_batch(docs)).emissions, np.ndarray)
    assert isinstance(pruned.model.predict(batch).emissions, np.ndarray)  # not asked: composed
    with deferred_composition():  # asked, but training: composed
        scores, _ = pruned.model.begin_update(batch)
    assert isinstance(scores.emissions, np.ndarray)


def test_the_component_decodes_as_it_does_from_the_composed_array(morph_pipelines, monkeypatch):
    nlp = morph_pipelines
    texts = [doc.text for doc in ewt_sample_docs("dev")[:40]]
    fast = list(nlp.pipe(texts))
    from spacy_crf.structures.pruned_chain import PrunedChainStructure

    monkeypatch.setattr(PrunedChainStructure, "reads_composed_emissions", False)
    slow = list(nlp.pipe(texts))
    for a, b in zip(fast, slow):
        assert [t.morph.key for t in a] == [t.morph.key for t in b]
        assert [t.pos for t in a] == [t.pos for t in b]
        np.testing.assert_allclose([t._.pruned_confidence for t in a],
                                   [t._.pruned_confidence for t in b], atol=1e-6)
        assert a._.pruned_nbest == b._.pruned_nbest
    assert sum(len(doc) for doc in fast) > 500
