"""Whole-label weights beside a factored table (``models/whole_label.py``): where
the component adds them, what they score, their gradient, the deferred
composition that carries them, their rows, and a pipeline saved before them."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc

from conftest import FROM_INITIALIZE, SMALL_MODEL, train
from finite_differences import central_difference
from spacy_crf.models.composed_emissions import ComposedEmissions
from spacy_crf.models.hashed_linear import NAME as TABLE_LAYER
from spacy_crf.models.hashed_linear import table_rows
from spacy_crf.models.label_parts import compose_labels, factors
from spacy_crf.models.sparse_table import ATTR as SPARSE_TABLE
from spacy_crf.models.whole_label import NAME, ROWS, TEMPLATES, fit_saved_layout
from spacy_crf.structures.pruned_chain import best_candidates
from models.test_label_parts import WORDS, gold_examples, morph_nlp


def whole_label_layer(nlp):
    layers = [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == NAME]
    return layers[0] if layers else None


def test_the_morph_target_gets_them_and_other_settings_do_not():
    layer = whole_label_layer(morph_nlp())
    assert layer is not None and layer.attrs[TEMPLATES][0] == "NORM[0]"
    features, table, label_table = layer.layers
    assert features.name == "crf_featurize" and layer.get_ref("features") is features
    assert table.name == label_table.name == TABLE_LAYER
    assert whole_label_layer(morph_nlp(factored=False)) is None  # every feature has labels
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": SMALL_MODEL})
    assert whole_label_layer(nlp) is None  # an atomic target has no parts to add to
    no_word = morph_nlp(templates=["SUFFIX2", "PREFIX1"])
    assert whole_label_layer(no_word) is None  # no template of its own: nothing to add


def test_a_token_scores_its_parts_plus_its_words_weight_for_the_whole_label():
    nlp = morph_nlp()
    train(nlp, gold_examples(nlp), 10, optimizer=FROM_INITIALIZE)
    layer = whole_label_layer(nlp)
    features_layer, table, label_table = layer.layers
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    features, _ = features_layer(docs, is_train=False)
    scores, _ = layer(features, is_train=False)
    names = features_layer.attrs["templates"].names
    columns = [i for i, name in enumerate(names) if name in layer.attrs[TEMPLATES]]
    assert names.index("NORM[0]") in columns  # and the optional ones the model reads
    V, c = label_table.get_param("W"), label_table.get_param("b")
    assert np.abs(V).max() > 0  # it learned
    parts, _ = table(features, is_train=False)
    for t in range(len(features)):
        want = parts[t] + sum(V[int(features[t, i]) % ROWS] for i in columns) + c
        np.testing.assert_allclose(scores[t], want, rtol=1e-5, atol=1e-5)


def test_its_gradient_matches_finite_differences():
    nlp = morph_nlp(average_weights=False)
    train(nlp, gold_examples(nlp), 3, optimizer=FROM_INITIALIZE)
    layer = whole_label_layer(nlp)
    features_layer, table, label_table = layer.layers
    features, _ = features_layer([Doc(nlp.vocab, words=WORDS[0])], is_train=False)
    upstream = np.random.default_rng(0).normal(size=(len(features), len(nlp.get_pipe(
        "crf_tagger").tags)))
    label_table.attrs.pop(SPARSE_TABLE, None)
    _, backprop = layer(features, is_train=True)
    backprop(upstream.astype(np.float32))
    sparse = label_table.attrs[SPARSE_TABLE]
    analytic = np.zeros(label_table.get_param("W").shape)
    for i in range(sparse.n_rows):
        analytic[sparse.rows[i]] += sparse.grads[i]
    rows = sorted({int(r) for r in sparse.rows[:sparse.n_rows]})
    V = label_table.get_param("W").astype(np.float64)

    def loss():
        label_table.set_param("W", V.astype(np.float32))
        out, _ = layer(features, is_train=False)
        return float((np.asarray(out, dtype=np.float64) * upstream).sum())

    assert rows
    for r in rows:  # float32 weights: a coarse step (the scores are linear in them)
        np.testing.assert_allclose(analytic[r], central_difference(loss, V[r], eps=1e-2),
                                   rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_structures_search_adds_them_to_what_it_composes(seed):
    rng = np.random.default_rng(seed)
    n_tokens, n_parts, n_labels = 150, 5, 9  # three blocks of 64, the last short
    starts = np.asarray([0, 1, 3, 3, 5, 6, 8, 9, 11, 12])
    index = rng.integers(0, n_parts, size=starts[-1])
    part_scores = rng.normal(size=(n_tokens, n_parts)).astype(np.float32)
    bias = rng.normal(size=n_labels).astype(np.float32)
    label_scores = rng.normal(size=(n_tokens, n_labels)).astype(np.float32)
    composed = ComposedEmissions(part_scores, starts, index, bias).with_label_scores(label_scores)
    want = compose_labels(part_scores, starts, index, bias) + label_scores
    np.testing.assert_allclose(np.asarray(composed), want, rtol=1e-5, atol=1e-5)
    again = composed.with_label_scores(label_scores)  # a second layer's scores add up
    np.testing.assert_allclose(np.asarray(again), want + label_scores, rtol=1e-5, atol=1e-5)
    keep = np.full(n_tokens, -1)
    keep[2] = 4
    for n, margin in ((3, 2.0), (2, 50.0), (n_labels, 1.0)):
        got = composed.candidates(n, keep, margin)
        brute = best_candidates(want, n, keep, margin)  # over the composed array
        for a, b in zip(got[:2], brute[:2]):
            assert np.array_equal(a, b)
        np.testing.assert_allclose(got[2], brute[2], rtol=1e-5, atol=1e-5)


def test_the_factored_table_beside_them_is_sized_with_the_labels_columns():
    nlp = morph_nlp(n_buckets=None)
    nlp.initialize(lambda: gold_examples(nlp))
    _, table, label_table = whole_label_layer(nlp).layers
    n_labels = len(nlp.get_pipe("crf_tagger").tags)
    assert factors(table)
    assert table.get_param("W").shape[0] == table_rows(len(table.attrs["crf_parts"]) + n_labels)
    assert label_table.get_param("W").shape == (ROWS, n_labels)


def test_a_pipeline_saved_before_them_loads_without_them_and_predicts_as_it_did(tmp_path):
    nlp = morph_nlp()
    train(nlp, gold_examples(nlp), 10, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    fit_saved_layout(pipe.model, [])  # the model of a stop before: its factored table alone
    assert whole_label_layer(nlp) is None
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = pipe.predict(docs)
    nlp.to_disk(tmp_path / "old")
    loaded = spacy.load(tmp_path / "old")
    assert whole_label_layer(loaded) is None
    after = loaded.get_pipe("crf_tagger").predict(
        [Doc(loaded.vocab, words=words) for words in WORDS])
    assert np.array_equal(before.label_ids, after.label_ids)
    # and one saved with them keeps them
    fresh = morph_nlp()
    train(fresh, gold_examples(fresh), 10, optimizer=FROM_INITIALIZE)
    fresh.to_disk(tmp_path / "new")
    again = spacy.load(tmp_path / "new")
    assert whole_label_layer(again) is not None
    np.testing.assert_array_equal(whole_label_layer(again).layers[2].get_param("W"),
                                  whole_label_layer(fresh).layers[2].get_param("W"))


@pytest.mark.parametrize("structure", ["pruned_chain", "chain"])
def test_a_morph_pipeline_learns_its_corpus_with_them(structure):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "morph", "structure": structure,
                                       "model": SMALL_MODEL})
    examples = gold_examples(nlp)
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE)
    assert whole_label_layer(nlp) is not None
    for eg in examples:
        doc = nlp(Doc(nlp.vocab, words=[t.text for t in eg.reference]))
        assert [str(t.morph) for t in doc] == [str(t.morph) for t in eg.reference]
        assert [t.pos for t in doc] == [t.pos for t in eg.reference]
