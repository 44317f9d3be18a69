"""Re-initializing a trained component starts from the new label set and
resizes every label-sized parameter (it used to raise a broadcast error)."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import FROM_INITIALIZE, SMALL_MODEL, train

WORDS = [["the", "cat", "sat"], ["a", "dog", "ran", "home"], ["big", "birds", "sang"]]
FIRST = [["DT", "NN", "VBD"], ["DT", "NN", "VBD", "RB"], ["JJ", "NN", "VBD"]]
# a different, larger label set that shares only some labels with FIRST
SECOND = [["D", "N", "V"], ["D", "N", "V", "ADV"], ["ADJ", "NNS", "V"]]


def examples(nlp, tags):
    return [Example.from_dict(Doc(nlp.vocab, words=w), {"tags": t}) for w, t in zip(WORDS, tags)]


def fit(nlp, egs, n_iter=15):
    train(nlp, egs, n_iter, optimizer=FROM_INITIALIZE)


def shapes(pipe):
    return {(node.name, name): node.get_param(name).shape for node in pipe.model.walk()
            for name in node.param_names if node.has_param(name)}


def test_reinitialize_with_another_label_set():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    fit(nlp, examples(nlp, FIRST))
    assert pipe.labels == ("DT", "JJ", "NN", "RB", "VBD")
    fit(nlp, examples(nlp, SECOND))
    # the new set only: nothing of the first initialize is merged in
    assert pipe.labels == ("ADJ", "ADV", "D", "N", "NNS", "V")
    for (layer, name), shape in shapes(pipe).items():
        if name in ("W", "b", "start", "end", "root"):
            assert shape[-1] == 6, (layer, name, shape)
        if name == "transitions":
            assert shape == (6, 6)
    doc = nlp(Doc(nlp.vocab, words=["a", "dog", "ran", "home"]))
    assert [t.tag_ for t in doc] == ["D", "N", "V", "ADV"]


def test_reinitialize_with_explicit_labels_and_fewer_of_them():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    fit(nlp, examples(nlp, SECOND))
    egs = examples(nlp, FIRST)
    pipe.initialize(lambda: egs, nlp=nlp, labels=["DT", "NN", "VBD", "RB", "JJ"])
    assert pipe.labels == ("DT", "JJ", "NN", "RB", "VBD")
    assert shapes(pipe)[("crf_potentials", "transitions")] == (5, 5)


def test_add_label_before_initialize_is_kept():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    pipe.add_label("EXTRA")
    fit(nlp, examples(nlp, FIRST), n_iter=1)
    assert "EXTRA" in pipe.labels


def test_load_weights_with_another_label_count_into_a_trained_component():
    source = spacy.blank("en")
    source.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    fit(source, examples(source, FIRST))
    data = source.get_pipe("crf_tagger").to_bytes()
    expected = [t.tag_ for t in source(Doc(source.vocab, words=["a", "dog", "ran", "home"]))]

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL})
    fit(nlp, examples(nlp, SECOND))  # 6 labels
    pipe.from_bytes(data)  # 5 labels
    assert pipe.labels == source.get_pipe("crf_tagger").labels
    assert [t.tag_ for t in nlp(Doc(nlp.vocab, words=["a", "dog", "ran", "home"]))] == expected
