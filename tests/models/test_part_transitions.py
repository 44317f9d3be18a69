"""Transitions factored over label parts (issue #51): a label pair scores its
own weight plus a weight per pair of their parts (``models/part_transitions.py``)."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc

from conftest import FROM_INITIALIZE, train
from models.test_label_parts import (WORDS, gold_examples, learn_an_adjective, morph_nlp,
                                     predicted, random_layout, table_of)
from spacy_crf.models.label_parts import PARTS, composition
from spacy_crf.models.part_transitions import (PART_TRANSITIONS, compose, compose_backward,
                                               factors_transitions)
from spacy_crf.models.potentials import find_potentials


def incidence(label_parts, n_parts):
    """C[k, p] = 1 where label k has part p."""
    C = np.zeros((len(label_parts), n_parts))
    for k, parts in enumerate(label_parts):
        C[k, parts] = 1.0
    return C


@pytest.mark.parametrize("seed", range(4))
def test_a_pair_scores_its_own_weight_plus_its_parts_pairs(seed):
    rng = np.random.default_rng(seed)
    n_labels, n_parts = int(rng.integers(1, 12)), int(rng.integers(3, 7))
    label_parts, starts, index = random_layout(rng, n_labels, n_parts)  # some labels: no part
    T = rng.normal(size=(n_labels, n_labels)).astype(np.float32)
    P = rng.normal(size=(n_parts, n_parts)).astype(np.float32)
    got = compose(T, P, starts, index)
    # by enumeration: every pair of parts of every label pair
    want = T.astype(np.float64).copy()
    for a in range(n_labels):
        for b in range(n_labels):
            want[a, b] += sum(P[p, q] for p in label_parts[a] for q in label_parts[b])
    assert got.dtype == np.float32 and np.allclose(got, want, atol=1e-5)
    C = incidence(label_parts, n_parts)
    assert np.allclose(got, T + C @ P @ C.T, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_the_parts_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    n_labels, n_parts = 7, 5
    label_parts, starts, index = random_layout(rng, n_labels, n_parts)
    T = rng.normal(size=(n_labels, n_labels)).astype(np.float32)
    P = rng.normal(size=(n_parts, n_parts))
    upstream = rng.normal(size=(n_labels, n_labels))  # d loss / d composed transitions

    def loss(P):
        return float((compose(T, P.astype(np.float32), starts, index) * upstream).sum())

    grad = compose_backward(upstream, starts, index, n_parts)
    eps = 1e-2
    for p in range(n_parts):
        for q in range(n_parts):
            step = np.zeros_like(P)
            step[p, q] = eps
            numeric = (loss(P + step) - loss(P - step)) / (2 * eps)
            assert grad[p, q] == pytest.approx(numeric, abs=2e-3)


def potentials_of(nlp):
    return find_potentials(nlp.get_pipe("crf_tagger").model)


def test_the_morph_target_factors_its_transitions_and_learns_them():
    nlp = morph_nlp()
    examples = gold_examples(nlp)
    train(nlp, examples, 20, optimizer=FROM_INITIALIZE)
    node = potentials_of(nlp)
    parts = table_of(nlp).attrs[PARTS]
    assert factors_transitions(node) and node.attrs[PARTS] == parts
    weights = node.get_param(PART_TRANSITIONS)
    assert weights.shape == (len(parts), len(parts)) and np.abs(weights).max() > 0
    assert predicted(nlp, examples) == [[t.morph.to_dict() | {"POS": t.pos_}
                                         for t in eg.reference] for eg in examples]


def test_the_structure_scores_with_the_composed_transitions():
    nlp = morph_nlp()
    train(nlp, gold_examples(nlp), 10, optimizer=FROM_INITIALIZE)
    node = potentials_of(nlp)
    scores = nlp.get_pipe("crf_tagger").model.predict([Doc(nlp.vocab, words=WORDS[0])])
    starts, index = composition(table_of(nlp))
    want = compose(node.get_param("transitions"), node.get_param(PART_TRANSITIONS), starts, index)
    assert np.allclose(scores.transitions, want)
    assert not np.allclose(scores.transitions, node.get_param("transitions"))


def test_a_weight_per_label_has_no_part_transitions():
    nlp = morph_nlp(factored=False)
    train(nlp, gold_examples(nlp), 3, optimizer=FROM_INITIALIZE)
    node = potentials_of(nlp)
    assert not factors_transitions(node) and node.attrs.get(PARTS) is None


def test_a_model_saved_and_loaded_predicts_the_same(tmp_path):
    nlp = morph_nlp()
    train(nlp, gold_examples(nlp), 10, optimizer=FROM_INITIALIZE)
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = nlp.get_pipe("crf_tagger").predict(docs)
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m")
    node = potentials_of(loaded)
    assert factors_transitions(node) and np.abs(node.get_param(PART_TRANSITIONS)).max() > 0
    after = loaded.get_pipe("crf_tagger").predict(
        [Doc(loaded.vocab, words=words) for words in WORDS])
    assert np.array_equal(before.label_ids, after.label_ids)
    again = spacy.load(tmp_path / "m")
    assert np.array_equal(potentials_of(again).get_param(PART_TRANSITIONS),
                          node.get_param(PART_TRANSITIONS))


def test_a_model_saved_before_transitions_factored_loads_and_scores_as_it_did():
    nlp = morph_nlp(average_weights=False)  # the iterate is what it saves
    train(nlp, gold_examples(nlp), 10, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    node = potentials_of(nlp)
    # what a model of the stop before held: its transitions alone
    node.attrs[PARTS] = None
    node.attrs["crf_label_parts"] = None
    node.set_param(PART_TRANSITIONS, None)
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = pipe.model.predict(docs)
    assert np.array_equal(before.transitions, node.get_param("transitions"))
    other = morph_nlp(average_weights=False)
    other.get_pipe("crf_tagger").from_bytes(pipe.to_bytes())
    assert not factors_transitions(potentials_of(other))
    after = other.get_pipe("crf_tagger").model.predict(
        [Doc(other.vocab, words=words) for words in WORDS])
    assert np.array_equal(before.transitions, after.transitions)


def test_new_parts_grow_the_part_transitions_and_keep_every_old_weight():
    nlp = morph_nlp(average_weights=False)  # (growth commits averages)
    examples = gold_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer)
    pipe = nlp.get_pipe("crf_tagger")
    node = potentials_of(nlp)
    old = node.get_param(PART_TRANSITIONS).copy()
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = pipe.predict(docs)
    pipe.add_label("Degree=Pos|POS=ADJ")
    grown = node.get_param(PART_TRANSITIONS)
    n = len(old)
    assert grown.shape == (n + 2, n + 2) and node.attrs[PARTS] == table_of(nlp).attrs[PARTS]
    assert np.array_equal(grown[:n, :n], old) and not grown[n:].any() and not grown[:, n:].any()
    assert np.array_equal(pipe.predict(docs).label_ids, before.label_ids)
    doc = learn_an_adjective(nlp, examples, optimizer)  # the moments grow with the parts
    assert node.get_param(PART_TRANSITIONS)[n:, :].any()
    assert doc[1].pos_ == "ADJ"


def test_transitions_that_do_not_fit_the_parts_fail_to_load_and_change_nothing():
    nlp = morph_nlp(average_weights=False)
    train(nlp, gold_examples(nlp), 3, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    node = potentials_of(nlp)
    n = node.get_param(PART_TRANSITIONS).shape[0]
    node.set_param(PART_TRANSITIONS, np.zeros((n + 1, n + 1), dtype=np.float32))
    data = pipe.to_bytes()
    other = morph_nlp()
    target = other.get_pipe("crf_tagger")
    train(other, gold_examples(other), 2, optimizer=FROM_INITIALIZE)
    kept = potentials_of(other).get_param(PART_TRANSITIONS).copy()
    with pytest.raises(ValueError, match="factored transitions"):
        target.from_bytes(data)
    assert np.array_equal(potentials_of(other).get_param(PART_TRANSITIONS), kept)
