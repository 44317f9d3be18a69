"""spacy_crf.util's tokens_only, and the copy_attrs augmenter that uses it
where spaCy's tokenizer split the gold text otherwise, and that it refuses to
copy what a component of the pipeline keeps (E239)."""

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.augmenters import create_copy_attrs
from spacy_crf.util import same_tokens, tokens_only


def test_tokens_only_keeps_words_and_spaces_and_nothing_else():
    nlp = spacy.blank("en")
    ref = Doc(nlp.vocab, words=["wheel-chair", "***", "ok", "."], spaces=[True, False, False, True],
              pos=["NOUN", "PUNCT", "INTJ", "PUNCT"], lemmas=["wheelchair", "***", "ok", "."])
    doc = tokens_only(ref)
    assert doc is not ref and doc.vocab is ref.vocab
    assert same_tokens(doc, ref) and doc.text == ref.text == "wheel-chair ***ok. "
    assert not doc.has_annotation("POS") and not doc.has_annotation("LEMMA")
    other = spacy.blank("en").vocab
    tagged = tokens_only(ref, other, pos=[t.pos_ for t in ref])
    assert tagged.vocab is other and [t.pos_ for t in tagged] == [t.pos_ for t in ref]
    assert len(tokens_only(Doc(nlp.vocab, words=[]))) == 0


def test_copy_attrs_gives_gold_tokens_where_the_tokenizer_split_otherwise():
    nlp = spacy.blank("en")
    ref = Doc(nlp.vocab, words=["a", "wheel-chair", "***"], spaces=[True, True, False],
              pos=["DET", "NOUN", "PUNCT"])
    predicted = nlp.make_doc(ref.text)
    assert not same_tokens(predicted, ref)  # spaCy splits "wheel-chair" and "***"
    (out,) = list(create_copy_attrs(["POS"])(nlp, Example(predicted, ref)))
    assert same_tokens(out.predicted, ref)
    assert [t.pos_ for t in out.predicted] == ["DET", "NOUN", "PUNCT"]
    assert out.reference is ref


@pytest.mark.parametrize("target,attr", [("sent_starts", "SENT_START"), ("tag", "TAG"),
                                         ("lemma", "LEMMA")])
def test_copying_what_a_component_keeps_is_e239(target, attr):
    """A crf_tagger that keeps values already on a doc (as spaCy's senter,
    tagger and lemmatizers) would keep the copied gold, and be scored on it."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="mine", config={"target": target})
    ref = Doc(nlp.vocab, words=["A", "b", "."], sent_starts=[True, False, False],
              tags=["DT", "NN", "."], lemmas=["a", "b", "."])
    augmenter = create_copy_attrs(["POS", attr])
    with pytest.raises(ValueError, match=rf"E239.*{attr}.*'mine'"):
        list(augmenter(nlp, Example(nlp.make_doc("A b."), ref)))
    # overwriting it, the component replaces the copy: nothing to refuse
    nlp.get_pipe("mine").cfg["keep_existing"] = False
    (out,) = list(augmenter(nlp, Example(nlp.make_doc("A b."), ref)))
    assert len(out.predicted) == 3


@pytest.mark.parametrize("factory,attr", [("tagger", "TAG"), ("senter", "SENT_START"),
                                          ("trainable_lemmatizer", "LEMMA")])
def test_copying_what_one_of_spacys_pipes_keeps_is_e239(factory, attr):
    """spaCy's tagger, senter and lemmatizers keep the values a doc has
    (overwrite = false): beside a crf_tagger they would keep the copy too."""
    nlp = spacy.blank("en")
    nlp.add_pipe(factory, name="theirs")
    nlp.add_pipe("crf_tagger", config={"target": "pos"})
    ref = Doc(nlp.vocab, words=["A", "b", "."], sent_starts=[True, False, False],
              tags=["DT", "NN", "."], lemmas=["a", "b", "."])
    with pytest.raises(ValueError, match=rf"E239.*{attr}.*'theirs'"):
        list(create_copy_attrs([attr])(nlp, Example(nlp.make_doc("A b."), ref)))
    # spaCy's morphologizer overwrites: nothing to refuse
    other = spacy.blank("en")
    other.add_pipe("morphologizer")
    (out,) = list(create_copy_attrs(["MORPH"])(other, Example(other.make_doc("A b."), ref)))
    assert len(out.predicted) == 3


def test_copying_a_parse_for_a_component_that_keeps_sentence_starts_is_e239():
    """A parse copied onto a doc sets its sentence starts (Doc.from_array
    derives them from HEAD): a keeping sent_starts component would be scored
    on the gold boundaries (sents_f 1.0 from step 0)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="senter", config={"target": "sent_starts"})
    ref = Doc(nlp.vocab, words=["A", "b", "."], heads=[1, 1, 1], deps=["det", "ROOT", "punct"])
    with pytest.raises(ValueError, match=r"E239.*HEAD.*'senter'"):
        list(create_copy_attrs(["HEAD", "DEP"])(nlp, Example(nlp.make_doc("A b."), ref)))
