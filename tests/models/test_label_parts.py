"""Emissions factored over label parts (``spacy_crf.models.label_parts``): the
kernels against explicit sums and finite differences, the layer against a
table with a weight per label, and the component's life cycle (initialize,
save and load, add_label with new parts, re-initialize, fit's refusal)."""

import copy

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Adam

from conftest import FROM_INITIALIZE, SMALL_MODEL, train
from spacy_crf._kernels.label_parts import BLOCK, compose_parts, compose_parts_backward
from spacy_crf.models.architectures import FeatureCRF, grow_n_labels, label_sized
from spacy_crf.models.hashed_linear import hashed_linear
from spacy_crf.models.label_parts import (LABEL_PARTS, PARTS, check_label_parts, compose_labels,
                                          composition, composition_trie, factors,
                                          set_label_parts)
from spacy_crf.models.sparse_table import ATTR as SPARSE_TABLE
from spacy_crf.targets import MorphTarget

WORDS = [["The", "dogs", "ran", "home", "."], ["A", "dog", "runs", "home", "."],
         ["The", "cat", "sleeps", "."], ["Cats", "ran", "."]]
POS = [["DET", "NOUN", "VERB", "ADV", "PUNCT"], ["DET", "NOUN", "VERB", "ADV", "PUNCT"],
       ["DET", "NOUN", "VERB", "PUNCT"], ["NOUN", "VERB", "PUNCT"]]
FEATS = [["Definite=Def|PronType=Art", "Number=Plur", "Tense=Past|VerbForm=Fin", "_", "_"],
         ["Definite=Ind|PronType=Art", "Number=Sing", "Number=Sing|Tense=Pres|VerbForm=Fin",
          "_", "_"],
         ["Definite=Def|PronType=Art", "Number=Sing", "Number=Sing|Tense=Pres|VerbForm=Fin", "_"],
         ["Number=Plur", "Tense=Past|VerbForm=Fin", "_"]]


def random_layout(rng, n_labels, n_parts):
    label_parts = [sorted(rng.choice(n_parts, size=rng.integers(0, 4), replace=False).tolist())
                   for _ in range(n_labels)]
    starts = np.cumsum([0] + [len(parts) for parts in label_parts]).astype(np.int64)
    index = np.asarray([p for parts in label_parts for p in parts], dtype=np.int64)
    return label_parts, starts, index


# ------------------------------------------------------------------- kernels


@pytest.mark.parametrize("seed", range(4))
def test_a_label_scores_its_bias_plus_the_sum_of_its_parts(seed):
    rng = np.random.default_rng(seed)
    label_parts, starts, index = random_layout(rng, 30, 6)
    n_tokens = 2 * BLOCK + 3  # whole blocks of tokens and a part of one
    part_scores = rng.normal(size=(n_tokens, 6)).astype(np.float32)
    bias = rng.normal(size=30).astype(np.float32)
    out = compose_labels(part_scores, starts, index, bias)
    assert out.dtype == np.float32 and out.shape == (n_tokens, 30)
    for k, parts in enumerate(label_parts):
        want = bias[k] + part_scores[:, parts].sum(axis=1)
        assert np.allclose(out[:, k], want, atol=1e-5)
    # the kernel itself, on the labels' trie
    again = np.full((n_tokens, 30), np.nan, dtype=np.float32)
    compose_parts(part_scores, *composition_trie(starts, index), bias, again)
    assert np.array_equal(again, out)


def test_the_labels_trie_shares_their_most_frequent_parts():
    """Labels are paths from the root; a prefix two labels share is one node
    (its sum added once a token), and a label with no parts is the root."""
    label_parts = [[0, 2], [0, 2, 3], [0, 1], [], [1, 3], [0, 2]]
    starts = np.cumsum([0] + [len(p) for p in label_parts]).astype(np.int64)
    index = np.asarray([p for parts in label_parts for p in parts], dtype=np.int64)
    parent, part, label_node = composition_trie(starts, index)

    def path(node):
        parts = []
        while node > 0:
            parts.append(int(part[node]))
            node = parent[node]
        return parts[::-1]

    # part 0 (4 labels) first, then 2 (3) or 3 and 1 (2 each; lower id first)
    assert [path(node) for node in label_node] == [[0, 2], [0, 2, 3], [0, 1], [], [1, 3],
                                                   [0, 2]]
    assert label_node[0] == label_node[5] and label_node[3] == 0
    assert len(parent) == 1 + 6  # root, 0, 0-2, 0-2-3, 0-1, 1, 1-3: not 11 (label, part) pairs
    assert all(parent[i] < i for i in range(1, len(parent)))  # a parent before its children
    assert composition_trie(starts, index)[0] is parent  # worked out once


def test_the_backward_kernel_is_the_gradient_of_the_forward_one():
    rng = np.random.default_rng(1)
    _, starts, index = random_layout(rng, 7, 4)
    part_scores = rng.normal(size=(3, 4))
    bias = rng.normal(size=7)
    upstream = rng.normal(size=(3, 7))
    upstream[0, 2] = 0.0  # a pruned label: no gradient

    def loss(scores):
        return float((compose_labels(scores, starts, index, bias) * upstream).sum())

    d_parts = np.full((3, 4), np.nan)  # every entry written, stale values or not
    compose_parts_backward(upstream, starts, index, d_parts)
    eps = 1e-6
    for t in range(3):
        for p in range(4):
            step = np.zeros_like(part_scores)
            step[t, p] = eps
            numeric = (loss(part_scores + step) - loss(part_scores - step)) / (2 * eps)
            assert d_parts[t, p] == pytest.approx(numeric, abs=1e-6)


# --------------------------------------------------------------------- layer


def factored_table(label_parts, n_buckets=64, seed=0):
    table = hashed_linear(n_buckets, nO=len(label_parts), factored=True)
    label_sized(table)  # (as the architectures make it)
    set_label_parts(table, label_parts)
    table.initialize()
    rng = np.random.default_rng(seed)
    table.set_param("W", rng.normal(size=table.get_param("W").shape).astype(np.float32))
    table.set_param("b", rng.normal(size=len(label_parts)).astype(np.float32))
    return table


PARTS_OF = [["POS=NOUN", "Number=Sing"], ["POS=NOUN", "Number=Plur"], ["POS=VERB"],
               ["POS=VERB", "Number=Sing", "Tense=Pres"], []]


def test_the_table_holds_a_column_per_part_and_scores_each_label_by_its_parts():
    table = factored_table(PARTS_OF)
    assert factors(table) and table.attrs[PARTS] == ["POS=NOUN", "Number=Sing", "Number=Plur",
                                                     "POS=VERB", "Tense=Pres"]
    W, b = table.get_param("W"), table.get_param("b")
    assert W.shape == (64, 5)
    features = np.asarray([[3, 70], [5, 9]], dtype=np.uint64)
    scores, _ = table(features, is_train=False)
    column = {name: i for i, name in enumerate(table.attrs[PARTS])}
    for t in range(2):
        rows = [int(f) % 64 for f in features[t]]
        for k, parts in enumerate(PARTS_OF):
            want = b[k] + sum(W[r, column[p]] for r in rows for p in parts)
            assert scores[t, k] == pytest.approx(want, abs=1e-5)


def test_the_layers_gradient_matches_finite_differences():
    table = factored_table(PARTS_OF, n_buckets=16, seed=2)
    features = np.asarray([[1, 4, 20], [4, 7, 7]], dtype=np.uint64)
    upstream = np.random.default_rng(3).normal(size=(2, 5)).astype(np.float32)
    _, backprop = table(features, is_train=True)
    backprop(upstream)
    sparse = table.attrs[SPARSE_TABLE]
    dense = np.zeros_like(table.get_param("W"))
    for i in range(sparse.n_rows):
        dense[sparse.rows[i]] += sparse.grads[i]
    W = table.get_param("W").astype(np.float64)
    eps = 1e-2
    for r in {int(f) % 16 for f in features.ravel()}:
        for p in range(W.shape[1]):
            plus, minus = W.copy(), W.copy()
            plus[r, p] += eps
            minus[r, p] -= eps
            table.set_param("W", plus.astype(np.float32))
            up = float((table(features, is_train=False)[0] * upstream).sum())
            table.set_param("W", minus.astype(np.float32))
            down = float((table(features, is_train=False)[0] * upstream).sum())
            assert dense[r, p] == pytest.approx((up - down) / (2 * eps), rel=1e-3, abs=1e-3)
    table.set_param("W", W.astype(np.float32))
    assert np.allclose(table.get_grad("b"), upstream.sum(axis=0))


def test_labels_that_are_their_own_parts_score_as_a_table_with_a_weight_per_label():
    labels = [["A"], ["B"], ["C"]]
    factored = factored_table(labels, seed=4)
    plain = hashed_linear(64, nO=3)
    plain.initialize()
    plain.set_param("W", factored.get_param("W").copy())
    plain.set_param("b", factored.get_param("b").copy())
    features = np.random.default_rng(5).integers(0, 2**63, size=(7, 4), dtype=np.uint64)
    assert np.allclose(factored(features, False)[0], plain(features, False)[0], atol=1e-5)


def test_a_table_of_another_setting_keeps_a_column_per_label():
    plain = hashed_linear(64, nO=len(PARTS_OF), factored=False)
    label_sized(plain)
    set_label_parts(plain, PARTS_OF)
    plain.initialize()
    assert not factors(plain) and plain.get_param("W").shape == (64, len(PARTS_OF))
    auto = hashed_linear(64, nO=3, factored=None)
    label_sized(auto)
    set_label_parts(auto, [["A"], ["B"], ["C"]])  # atomic labels: nothing to factor
    assert not factors(auto)
    set_label_parts(auto, PARTS_OF)
    assert factors(auto)


def test_new_parts_grow_the_table_and_leave_every_old_score_unchanged():
    table = factored_table(PARTS_OF)
    features = np.asarray([[3, 70], [5, 9]], dtype=np.uint64)
    before = table(features, False)[0]
    grown = PARTS_OF + [["POS=ADJ", "Degree=Pos"], ["POS=NOUN"]]
    grow_n_labels(table, len(PARTS_OF), len(grown))
    set_label_parts(table, grown, grow=True)
    assert table.attrs[PARTS][-2:] == ["POS=ADJ", "Degree=Pos"]
    assert table.get_param("W").shape == (64, 7) and not table.get_param("W")[:, 5:].any()
    after = table(features, False)[0]
    assert np.array_equal(after[:, :5], before)


def test_loaded_parts_that_do_not_fit_the_labels_are_refused():
    table = factored_table(PARTS_OF)
    check_label_parts(table, PARTS_OF)
    with pytest.raises(ValueError, match="parts"):
        check_label_parts(table, PARTS_OF[:-1] + [["POS=ADJ"]])
    with pytest.raises(ValueError, match="parts"):
        check_label_parts(table, list(reversed(PARTS_OF)))


# ----------------------------------------------------------------- component


def gold_examples(nlp):
    out = []
    for words, pos, feats in zip(WORDS, POS, FEATS):
        gold = Doc(nlp.vocab, words=words, pos=pos, morphs=feats)
        out.append(Example(Doc(nlp.vocab, words=words), gold))
    return out


def morph_nlp(**model):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "morph", "model": {**SMALL_MODEL, **model}})
    return nlp


def table_of(nlp):
    return next(node for node in nlp.get_pipe("crf_tagger").model.walk()
                if node.name == "crf_hashed_linear")


def predicted(nlp, examples):
    return [[t.morph.to_dict() | {"POS": t.pos_} for t in nlp(Doc(nlp.vocab, words=[
        t.text for t in eg.reference]))] for eg in examples]


def gold(examples):
    return [[t.morph.to_dict() | {"POS": t.pos_} for t in eg.reference] for eg in examples]


def test_the_morph_target_factors_by_default_and_learns_its_corpus():
    nlp = morph_nlp()
    examples = gold_examples(nlp)
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE)
    table = table_of(nlp)
    pipe = nlp.get_pipe("crf_tagger")
    target = MorphTarget()
    parts = {part for label in pipe.tags for part in target.label_parts(label)}
    assert factors(table) and set(table.attrs[PARTS]) == parts
    assert table.get_param("W").shape == (SMALL_MODEL["n_buckets"], len(parts))
    assert predicted(nlp, examples) == gold(examples)


def test_a_factored_model_saved_and_loaded_predicts_the_same(tmp_path):
    nlp = morph_nlp()
    examples = gold_examples(nlp)
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = nlp.get_pipe("crf_tagger").predict(docs)
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m")
    pipe = loaded.get_pipe("crf_tagger")
    assert factors(table_of(loaded))
    after = pipe.predict([Doc(loaded.vocab, words=words) for words in WORDS])
    assert np.array_equal(before.label_ids, after.label_ids)


def test_a_model_saved_with_a_weight_per_label_loads_as_it_was_saved(tmp_path):
    """factored = null in the config, a file saved with factored = false (or
    before tables could factor): the file decides, so it predicts as before."""
    nlp = morph_nlp(factored=False)
    examples = gold_examples(nlp)
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = nlp.get_pipe("crf_tagger").predict(docs)
    data = nlp.get_pipe("crf_tagger").to_bytes()
    other = morph_nlp()  # factored = null
    other.get_pipe("crf_tagger").from_bytes(data)
    assert not factors(table_of(other))
    after = other.get_pipe("crf_tagger").predict([Doc(other.vocab, words=w) for w in WORDS])
    assert np.array_equal(before.label_ids, after.label_ids)


def test_weights_whose_parts_do_not_fit_the_labels_fail_to_load_and_change_nothing():
    nlp = morph_nlp()
    train(nlp, gold_examples(nlp), 5, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    model_bytes = pipe.model.to_bytes()
    other = morph_nlp()
    target = other.get_pipe("crf_tagger")
    train(other, gold_examples(other)[:1], 2, optimizer=FROM_INITIALIZE)
    before = copy.deepcopy(target.cfg)
    cfg = dict(pipe.cfg)
    cfg["labels"] = list(reversed(cfg["labels"]))  # the same labels, in another order
    with pytest.raises(ValueError, match=r"\[CRF-E010\].*parts"):
        target.from_bytes(srsly.msgpack_dumps({"cfg": cfg, "model": model_bytes}))
    assert target.cfg == before


def test_add_label_with_new_parts_predicts_as_before_then_learns_them():
    nlp = morph_nlp()
    examples = gold_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer)
    pipe = nlp.get_pipe("crf_tagger")
    docs = [Doc(nlp.vocab, words=words) for words in WORDS]
    before = pipe.predict(docs)
    n_parts = len(table_of(nlp).attrs[PARTS])
    assert pipe.add_label("Degree=Pos|POS=ADJ") == 1
    table = table_of(nlp)
    assert table.attrs[PARTS][n_parts:] == ["POS=ADJ", "Degree=Pos"]
    assert np.array_equal(pipe.predict(docs).label_ids, before.label_ids)
    doc = learn_an_adjective(nlp, examples, optimizer)
    assert doc[1].pos_ == "ADJ" and doc[1].morph.to_dict() == {"Degree": "Pos"}


def learn_an_adjective(nlp, examples, optimizer):
    """15 updates with a sentence whose adjective is ``Degree=Pos|POS=ADJ`` added
    to ``examples`` (the kept optimizer's moments grow with the table); the
    sentence as the pipeline then tags it."""
    words = ["The", "big", "dog", "ran", "."]
    new = Doc(nlp.vocab, words=words, pos=["DET", "ADJ", "NOUN", "VERB", "PUNCT"],
              morphs=["Definite=Def|PronType=Art", "Degree=Pos", "Number=Sing",
                      "Tense=Past|VerbForm=Fin", "_"])
    more = examples + [Example(Doc(nlp.vocab, words=words), new)] * 2
    for _ in range(15):
        nlp.update(more, sgd=optimizer)
    return nlp(Doc(nlp.vocab, words=words))


def test_initialize_again_with_other_labels_sizes_the_table_anew():
    nlp = morph_nlp()
    examples = gold_examples(nlp)
    nlp.initialize(lambda: examples)
    first = table_of(nlp).get_param("W").shape[1]
    nlp.initialize(lambda: examples[2:])
    table = table_of(nlp)
    assert table.get_param("W").shape[1] == len(table.attrs[PARTS]) < first
    starts, index = composition(table)
    assert len(starts) == len(nlp.get_pipe("crf_tagger").tags) + 1
    assert table.attrs[LABEL_PARTS]["index"] == index.tolist()


def test_a_bad_setting_is_named():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="factored"):  # spaCy's config check names it
        nlp.add_pipe("crf_tagger", config={"target": "morph",
                                           "model": {**SMALL_MODEL, "factored": "yes"}})
    with pytest.raises(ValueError, match=r"\[CRF-E240\]"):  # called from Python
        FeatureCRF(["NORM"], factored="yes")


def test_the_batch_trainer_refuses_a_factored_model_with_the_fix():
    from spacy_crf.training.corpus import feature_layers
    nlp = morph_nlp()
    nlp.initialize(lambda: gold_examples(nlp))
    with pytest.raises(ValueError, match=r"\[CRF-E241\].*factored = false"):
        feature_layers(nlp.get_pipe("crf_tagger").model)
    plain = morph_nlp(factored=False)
    plain.initialize(lambda: gold_examples(plain))
    assert len(feature_layers(plain.get_pipe("crf_tagger").model)) == 3


def test_a_factored_model_trains_with_a_plain_optimizer_too():
    nlp = morph_nlp()
    examples = gold_examples(nlp)
    losses = train(nlp, examples, 30, optimizer=Adam(0.05))
    assert losses[-1] < losses[0] / 5
