"""Token-attribute targets (tag, pos, dep, morph) write a whole batch's labels with one
gather of label keys and a slice per doc; the result must be what writing each
doc alone gives, empty docs included."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc

from spacy_crf.targets import make_target

LABELS = {"tag": ["DT", "NN", "VBD", "."], "pos": ["DET", "NOUN", "PUNCT", "VERB"],
          "dep": ["ROOT", "det", "nsubj", "punct"],
          "morph": ["Definite=Def|POS=DET|PronType=Art", "Number=Sing|POS=NOUN", "POS=PUNCT",
                    "POS=VERB|Tense=Past|VerbForm=Fin", "_"]}
WORDS = [["the", "dog", "ran", "."], [], ["a", "cat"], [], [], ["it", "sat", "down", "."]]


def docs(vocab):
    return [Doc(vocab, words=w) for w in WORDS]


@pytest.mark.parametrize("name", sorted(LABELS))
def test_the_batch_write_is_the_per_doc_write(name):
    nlp = spacy.blank("en")
    target = make_target(name)
    target.set_labels(LABELS[name], nlp.vocab)
    lengths = np.asarray([len(w) for w in WORDS], dtype=np.int64)
    ids = np.random.default_rng(0).integers(0, len(LABELS[name]), int(lengths.sum()))
    batch, alone = docs(nlp.vocab), docs(nlp.vocab)
    target.write_batch(batch, ids, lengths, keep_existing=False)
    start = 0
    for doc, n in zip(alone, lengths):
        if n:
            target.write(doc, ids[start:start + n])
        start += n
    # (the morph target's getter gives a token's label for any other attribute name)
    attr, get = {"tag": "tag_", "pos": "pos_", "dep": "dep_"}.get(name, "label"), target.getter()
    got = [[get(t, attr) for t in doc] for doc in batch]
    assert got == [[get(t, attr) for t in doc] for doc in alone]
    # and they are the labels the ids name, in order
    assert [label for doc in got for label in doc] == [LABELS[name][i] for i in ids]
