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


def docs(vocab, parsed=False):
    """The batch; ``parsed``: each doc with a parse (every token under its
    first), whose relations the dep target labels."""
    if parsed:
        return [Doc(vocab, words=w, heads=[0] * len(w), deps=["dep"] * len(w)) if w
                else Doc(vocab, words=w) for w in WORDS]
    return [Doc(vocab, words=w) for w in WORDS]


@pytest.mark.parametrize("name", sorted(LABELS))
def test_the_batch_write_is_the_per_doc_write(name):
    nlp = spacy.blank("en")
    target = make_target(name)
    target.set_labels(LABELS[name], nlp.vocab)
    lengths = np.asarray([len(w) for w in WORDS], dtype=np.int64)
    ids = np.random.default_rng(0).integers(0, len(LABELS[name]), int(lengths.sum()))
    batch, alone = docs(nlp.vocab, name == "dep"), docs(nlp.vocab, name == "dep")
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


def test_dep_labels_only_a_doc_with_a_parse():
    """E251, before any doc of the batch is written: spaCy would make every
    token of an unparsed doc its own head (a broken parse: doc.sents E030).
    A one-token doc needs no parse: its token is the root."""
    nlp = spacy.blank("en")
    target = make_target("dep")
    target.set_labels(LABELS["dep"], nlp.vocab)
    batch = docs(nlp.vocab, parsed=True)
    batch[2] = Doc(nlp.vocab, words=["a", "cat"])  # no parse
    lengths = np.asarray([len(d) for d in batch], dtype=np.int64)
    ids = np.zeros(int(lengths.sum()), dtype=np.int64)
    with pytest.raises(ValueError, match=r"\[CRF-E251\].*2 tokens.*parser.*copy_attrs"):
        target.write_batch(batch, ids, lengths, keep_existing=False)
    assert [t.dep_ for t in batch[0]] == ["dep"] * 4 and not batch[2].has_annotation("DEP")
    one = [Doc(nlp.vocab, words=["hi"])]
    target.write_batch(one, np.asarray([0]), np.asarray([1]), keep_existing=False)
    assert one[0][0].dep_ == "ROOT" and len(list(one[0].sents)) == 1
