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


@pytest.mark.parametrize("label,code", [("FOO", "E206"), ("", "E263")])
def test_a_pos_label_that_is_no_upos_is_e206(label, code):
    nlp = make_nlp("pos")
    with pytest.raises(ValueError, match=code):
        nlp.get_pipe("crf_tagger").add_label(label)
    with pytest.raises(ValueError, match=code):
        make_nlp("pos").get_pipe("crf_tagger").initialize(lambda: [], labels=["NOUN", label])


def test_crf_annotate_rows_hold_a_kept_value_that_is_no_label():
    """A rule's tag that no label has is kept on the doc, and the annotate row
    says it (it wrote a null label: the value was lost from the output)."""
    from spacy_crf.annotation import doc_record

    nlp = trained("tag", store_confidence=True)
    doc = nlp.make_doc("The dogs ran home .")
    doc[4].tag_ = "PUNCT_X"
    with pytest.warns(UserWarning, match="W044"):
        doc = nlp(doc)
    record = doc_record(nlp.get_pipe("crf_tagger"), doc, "d1")
    assert [t["label"] for t in record["tokens"]] == ["DT", "NNS", "VBD", "RB", "PUNCT_X"]
    assert record["tokens"][4]["confidence"] == 1.0


def test_kept_labels_no_labelling_holds_free_their_sequence_with_w046():
    """An order-2 chain keeps the label pairs initialize saw: a kept first tag
    that never started a sentence leaves no labelling. The sequence is decoded
    as if nothing were kept, and the kept tag still written (every other tag
    came out garbled, at confidence 0, without a word)."""
    nlp = trained("tag", store_confidence=True, n_best=3,
                  structure={"@structures": "spacy-crf.Chain.v1", "order": 2})
    free = [t.tag_ for t in nlp("The dogs ran home .")]
    assert free == TAGS
    doc = nlp.make_doc("The dogs ran home .")
    doc[0].tag_ = "NNS"  # (START, NNS): a pair training never showed
    with pytest.warns(UserWarning, match="W046"):
        doc = nlp(doc)
    assert [t.tag_ for t in doc] == ["NNS"] + TAGS[1:]
    assert doc[0]._.crf_confidence == 1.0 and min(t._.crf_confidence for t in doc) > 0.5
    # no labelling of the model holds what is written, so it has no n-best list
    # (it listed the free decoding, "DT" first, beside the written "NNS")
    assert doc._.crf_nbest == [[]]
    kept = nlp.make_doc("The dogs ran home .")
    kept[1].tag_ = "NNS"  # a kept tag a labelling holds: its list holds it
    kept = nlp(kept)
    assert kept._.crf_nbest[0] and all(tags[1] == "NNS" for _, tags in kept._.crf_nbest[0])


def test_an_entity_kept_across_a_sentence_boundary_leaves_the_others_predicted():
    """sequence = "sentence": a kept entity that a boundary cuts has no BILUO
    labelling in either sentence; the sentences are decoded freely (the other
    entities were all lost) and the kept entity stays."""
    from spacy.tokens import Span

    nlp = make_nlp("ents", sequence="sentence")
    words = ["John", "Smith", "saw", "New", "York", ".", "Mary", "left", "."]
    gold = Doc(nlp.vocab, words=words, ents=["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O",
                                             "B-PER", "O", "O"])
    examples = [Example(Doc(nlp.vocab, words=words), gold)] * 4
    train(nlp, examples, 30)
    doc = Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * 3 + [True] + [False] * 4)
    doc.set_ents([Span(doc, 3, 5, label="LOC")])  # "New | York": cut by the boundary
    with pytest.warns(UserWarning, match="W046"):
        doc = nlp(doc)
    assert [(e.text, e.label_) for e in doc.ents] == [("John Smith", "PER"), ("New York", "LOC"),
                                                      ("Mary", "PER")]


def test_a_span_group_keeps_its_overlapping_spans():
    """keep_existing = true on spans:KEY: a span ruler's overlapping spans all
    stay in the group (the shorter was dropped), the CRF decoding around the
    longest."""
    from spacy.tokens import Span

    nlp = make_nlp("spans:sc", keep_existing=True)
    words = ["I", "saw", "Bank", "of", "America", "and", "Paris", "."]
    gold = Doc(nlp.vocab, words=words)
    gold.spans["sc"] = [Span(gold, 6, 7, label="LOC")]
    train(nlp, [Example(Doc(nlp.vocab, words=words), gold)] * 4, 30)
    doc = Doc(nlp.vocab, words=words)
    doc.spans["sc"] = [Span(doc, 2, 5, label="ORG"), Span(doc, 4, 5, label="LOC")]
    with pytest.warns(UserWarning, match="W002"):
        doc = nlp(doc)
    assert sorted((s.text, s.label_) for s in doc.spans["sc"]) == \
        [("America", "LOC"), ("Bank of America", "ORG"), ("Paris", "LOC")]
