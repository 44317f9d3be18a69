"""``keep_existing = null`` does what spaCy's own pipe for the target does by
default: the ``tagger``, the ``senter`` and the lemmatizers keep values
already on a doc (``overwrite = false``), the ``morphologizer`` overwrites
(``overwrite = true``), as ``ner`` keeps entities. And what a batch of docs
from two vocabs, and labels that are no strings, get."""

import numpy as np
import pytest
import spacy
from spacy.attrs import SENT_START
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

from conftest import make_nlp, train
from spacy_crf.targets import make_target

WORDS = ["The", "dogs", "ran", "home", "."]
TAGS = ["DT", "NNS", "VBD", "RB", "."]
POS = ["DET", "NOUN", "VERB", "ADV", "PUNCT"]
LEMMAS = ["the", "dog", "run", "home", "."]


def trained(target, **config):
    nlp = make_nlp(target, **config)
    gold = Doc(nlp.vocab, words=WORDS, tags=TAGS, pos=POS, lemmas=LEMMAS,
               sent_starts=[True, False, False, False, False])
    examples = [Example(Doc(nlp.vocab, words=WORDS), gold)] * 4
    train(nlp, examples, 30)
    return nlp


@pytest.mark.parametrize("target,keeps", [("tag", True), ("pos", False), ("lemma", True),
                                          ("sent_starts", True), ("morph", False),
                                          ("ents", True), ("dep", False)])
def test_null_resolves_as_spacys_own_pipe_for_the_target(target, keeps):
    assert make_target(target).keeps_existing is keeps


def test_a_tag_set_before_stays_as_spacys_tagger_keeps_it():
    nlp = trained("tag")
    doc = nlp.make_doc("The dogs ran home .")
    doc[2].tag_ = "VBN"
    assert [t.tag_ for t in nlp(doc)] == ["DT", "NNS", "VBN", "RB", "."]
    assert nlp.get_pipe("crf_tagger").keep_existing is True
    # keep_existing = false overwrites, as before
    nlp = trained("tag", keep_existing=False)
    doc = nlp.make_doc("The dogs ran home .")
    doc[2].tag_ = "VBN"
    assert [t.tag_ for t in nlp(doc)] == TAGS


def test_a_pos_set_before_is_overwritten_as_by_spacys_morphologizer():
    nlp = trained("pos")
    doc = nlp.make_doc("The dogs ran home .")
    doc[2].pos_ = "NOUN"
    assert [t.pos_ for t in nlp(doc)] == POS


def test_a_lemma_set_before_stays_as_spacys_lemmatizers_keep_it():
    nlp = trained("lemma")
    doc = nlp.make_doc("The dogs ran home .")
    doc[1].lemma_ = "hound"
    assert [t.lemma_ for t in nlp(doc)] == ["the", "hound", "run", "home", "."]


def test_a_parsers_sentences_stay_as_spacys_senter_keeps_them():
    """After a parser (here: boundaries at every token) the senter CRF keeps
    them; on a fresh doc it predicts."""
    nlp = trained("sent_starts")
    text = "The dogs ran home . The dogs ran home ."
    fresh = nlp(nlp.make_doc(text))
    assert fresh[5].is_sent_start and not fresh[1].is_sent_start
    cut = nlp.make_doc(text)
    cut.from_array([SENT_START], np.ones(len(cut), dtype=np.uint64))
    assert all(t.is_sent_start for t in nlp(cut))


def test_lemmas_of_a_batch_from_two_vocabs_go_into_each_docs_strings():
    """A batch with a doc of another vocab: each doc's lemmas are keys of its
    own strings (they went into the first doc's, and read back as E018)."""
    nlp = trained("lemma")
    other = spacy.blank("en").vocab
    docs = list(nlp.pipe([nlp.make_doc("The dogs ran home ."), Doc(other, words=WORDS)]))
    assert [t.lemma_ for t in docs[1]] == [t.lemma_ for t in docs[0]] == LEMMAS
    # a form only the other vocab knows
    docs = list(nlp.pipe([nlp.make_doc("The dogs ran ."),
                          Doc(Vocab(), words=["zorbs", "blorped", "."])]))
    assert len([t.lemma_ for t in docs[1]]) == 3


@pytest.mark.parametrize("target", ["lemma", "morph", "pos", "tag"])
def test_labels_given_to_initialize_must_be_strings(target):
    """As add_label checks a label (a lemma's was an AttributeError, a morph's
    None became the label "_")."""
    nlp = make_nlp(target)
    with pytest.raises(ValueError, match="E062"):
        nlp.get_pipe("crf_tagger").initialize(lambda: [], nlp=nlp, labels=["NOUN", None])


@pytest.mark.parametrize("label", ["FOO", ""])
def test_a_pos_label_that_is_no_upos_is_e206(label):
    nlp = make_nlp("pos")
    with pytest.raises(ValueError, match="E206"):
        nlp.get_pipe("crf_tagger").add_label(label)
    with pytest.raises(ValueError, match="E206"):
        make_nlp("pos").get_pipe("crf_tagger").initialize(lambda: [], labels=["NOUN", label])
