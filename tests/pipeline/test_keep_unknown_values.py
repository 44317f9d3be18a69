"""keep_existing = true and values already on a doc that are not among the
component's labels (a rule's NNP, a lemma no tree gives): they stay as they
are, their confidence is 1.0 (given, not predicted), W044 says once that the
CRF could not condition on them, and the other tokens are still predicted."""

import warnings

import pytest
from spacy.tokens import Doc
from spacy.training import Example

from conftest import FROM_INITIALIZE, make_nlp, train

WORDS = ["the", "cat", "sat"]
#: target -> (gold annotations of WORDS, a setter of a value that is no label
#: on a token, a reader of a token's value, that value)
CASES = {
    "tag": ({"tags": ["DT", "NN", "VBD"]}, lambda t: setattr(t, "tag_", "NNP"),
            lambda t: t.tag_, "NNP"),
    "pos": ({"pos": ["DET", "NOUN", "VERB"]}, lambda t: setattr(t, "pos_", "PROPN"),
            lambda t: t.pos_, "PROPN"),
    "morph": ({"morphs": ["Definite=Def", "Number=Sing", "Tense=Past"],
               "pos": ["DET", "NOUN", "VERB"]},
              lambda t: (t.set_morph("Number=Plur"), setattr(t, "pos_", "PROPN")),
              lambda t: f"{t.pos_} {t.morph}", "PROPN Number=Plur"),
    "lemma": ({"lemmas": ["the", "cat", "sit"]}, lambda t: setattr(t, "lemma_", "feline"),
              lambda t: t.lemma_, "feline"),
}


def trained(target):
    nlp = make_nlp(target, keep_existing=True, store_confidence=True, n_best=2)
    gold, *_ = CASES[target]
    examples = [Example.from_dict(Doc(nlp.vocab, words=WORDS), gold)] * 4
    train(nlp, examples, 20, optimizer=FROM_INITIALIZE)
    return nlp


@pytest.mark.parametrize("target", list(CASES))
def test_a_value_that_is_no_label_is_kept_with_confidence_one_and_a_warning(target):
    nlp = trained(target)
    _, put, read, value = CASES[target]
    free = nlp(Doc(nlp.vocab, words=WORDS))
    predicted = [read(t) for t in free]
    doc = Doc(nlp.vocab, words=WORDS)
    put(doc[1])
    with pytest.warns(UserWarning, match=r"W044.*keeps the .* 1 token.*" + value.split()[0]):
        doc = nlp(doc)
    assert read(doc[1]) == value
    assert [read(doc[0]), read(doc[2])] == [predicted[0], predicted[2]]
    assert doc[1]._.crf_confidence == 1.0
    again = Doc(nlp.vocab, words=WORDS)
    put(again[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per component
        assert read(nlp(again)[1]) == value


def test_an_extension_value_that_is_no_label_is_kept():
    nlp = make_nlp("_.chunk", keep_existing=True, store_confidence=True)
    gold = Doc(nlp.vocab, words=WORDS)
    for token, chunk in zip(gold, ["B-NP", "I-NP", "B-VP"]):
        token._.chunk = chunk
    train(nlp, [Example(Doc(nlp.vocab, words=WORDS), gold)] * 4, 20, optimizer=FROM_INITIALIZE)
    doc = Doc(nlp.vocab, words=WORDS)
    doc[2]._.chunk = "B-PP"
    with pytest.warns(UserWarning, match="W044"):
        doc = nlp(doc)
    assert [t._.chunk for t in doc] == ["B-NP", "I-NP", "B-PP"]
    assert doc[2]._.crf_confidence == 1.0


def test_a_known_label_kept_has_confidence_one_and_no_warning():
    nlp = trained("tag")
    doc = Doc(nlp.vocab, words=WORDS)
    doc[1].tag_ = "VBD"  # a label, kept: the CRF decodes the rest with it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = nlp(doc)
    assert doc[1].tag_ == "VBD" and doc[1]._.crf_confidence == pytest.approx(1.0)
    assert all(labels[1] == "VBD" for _, labels in doc._.crf_nbest[0])

