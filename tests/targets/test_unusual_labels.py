"""Labels as real corpora have them: entity types named like tags, negative
tags, the empty string, ``_.NAME`` values that are not strings, and
extensions the component cannot take over (each a probe's find)."""

import warnings

import pytest
import spacy
from spacy.tokens import Doc, Span, Token
from spacy.training import Example

from conftest import make_nlp, train


def _typed_examples(nlp, types):
    words = ["Bob", "saw", "it", "Anna", "ran"]
    examples = []
    for _ in range(2):
        gold = Doc(nlp.vocab, words=words)
        gold.ents = [Span(gold, 0, 1, types[0]), Span(gold, 3, 4, types[1])]
        examples.append(Example(Doc(nlp.vocab, words=words), gold))
    return examples


def test_an_update_grows_a_type_named_like_a_tag_once(tmp_path):
    """A span type read as a tag ("U-BOAT", "O") was grown as that tag on
    every update: the tags repeated, and the saved pipeline failed to load."""
    nlp = make_nlp("ents")
    examples = _typed_examples(nlp, ["U-BOAT", "O"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (W016: initialized without examples)
        nlp.initialize()
    pipe = nlp.get_pipe("crf_tagger")
    for _ in range(3):
        nlp.update(examples)
    assert len(set(pipe.tags)) == len(pipe.tags) == 9
    assert {"B-U-BOAT", "U-U-BOAT", "U-O", "B-O"} <= set(pipe.tags)
    nlp.to_disk(tmp_path / "p")
    assert spacy.load(tmp_path / "p").get_pipe("crf_tagger").tags == pipe.tags


def test_label_data_of_types_named_like_tags_reads_back_the_same_tags():
    nlp = make_nlp("ents")
    examples = _typed_examples(nlp, ["U-BOAT", "O"]) + _typed_examples(nlp, ["PER", "B-PER"])
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    again = make_nlp("ents")
    again.get_pipe("crf_tagger").initialize(lambda: examples, nlp=again, labels=pipe.label_data)
    assert again.get_pipe("crf_tagger").tags == pipe.tags
    assert "PER" in pipe.label_data  # a plain type stays a type


def test_a_negative_tag_is_no_label_and_warns():
    nlp = make_nlp("tag")
    words = ["the", "dog", "ran"]
    examples = [Example(Doc(nlp.vocab, words=words),
                        Doc(nlp.vocab, words=words, tags=["DT", "NN", tag]))
                for tag in ("!NN", "VBD")]
    with pytest.warns(UserWarning, match="W015.*'!NN'"):
        train(nlp, examples, n_iter=2)
    assert nlp.get_pipe("crf_tagger").tags == ("DT", "NN", "VBD")


@pytest.mark.parametrize("target", ["tag", "ents", "_.q_label", "morph"])
def test_the_empty_label_is_e263(target):
    pipe = make_nlp(target).get_pipe("crf_tagger")
    with pytest.raises(ValueError, match="E263"):
        pipe.add_label("")
    nlp = make_nlp(target)
    with pytest.raises(ValueError, match="E263"):
        nlp.get_pipe("crf_tagger").initialize(lambda: [], nlp=nlp, labels=[""])


@pytest.mark.parametrize("values", [[1, 2, 1], [True, False, True], [1.5, 2.0, 1.5],
                                    [1, "1", None]])
def test_extension_gold_that_is_not_strings_is_e264(values):
    attr = "q_values"
    nlp = make_nlp(f"_.{attr}")
    words = ["a", "b", "c"]
    gold = Doc(nlp.vocab, words=words)
    for token, value in zip(gold, values):
        gold.user_data[("._.", attr, token.idx, None)] = value
    with pytest.raises(ValueError, match=r"E264.*token\._\.q_values.*str\(value\)"):
        nlp.initialize(lambda: [Example(Doc(nlp.vocab, words=words), gold)])


def test_a_getter_extension_is_no_target_e265():
    Token.set_extension("q_computed", getter=lambda token: token.shape_, force=True)
    try:
        with pytest.raises(ValueError, match=r"E265.*token\._\.q_computed.*getter"):
            make_nlp("_.q_computed")
        # left as it was
        assert Doc(spacy.blank("en").vocab, words=["Ab"])[0]._.q_computed == "Xx"
    finally:
        Token.remove_extension("q_computed")


def test_an_extension_default_survives_the_target():
    Token.set_extension("q_default", default="O", force=True)
    try:
        nlp = make_nlp("_.q_default")
        doc = Doc(nlp.vocab, words=["a", "b"])
        assert [t._.q_default for t in doc] == ["O", "O"]
        doc[0]._.q_default = "B-X"
        assert [t._.q_default for t in doc] == ["B-X", "O"]
    finally:
        Token.remove_extension("q_default")


def test_a_chunk_over_tokens_without_gold_is_neither_right_nor_wrong():
    """Chunk scores read a missing gold label as missing, as spaCy's ner
    scores do, not as "O" (a predicted chunk there was counted wrong)."""
    from spacy_crf import set_doc_labels
    from spacy_crf.scoring import score_crf

    nlp = spacy.blank("en")
    words = ["the", "cat", "sat", "a", "dog", "."]
    gold, pred = Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words)
    set_doc_labels(gold, "q_chunk", ["B-NP", "I-NP", "O", None, None, "O"])
    set_doc_labels(pred, "q_chunk", ["B-NP", "I-NP", "O", "B-NP", "I-NP", "O"])
    scores = score_crf([Example(pred, gold)], target="_.q_chunk")
    assert scores["q_chunk_p"] == scores["q_chunk_f"] == scores["q_chunk_acc"] == 1.0
    set_doc_labels(pred, "q_chunk", ["B-NP", "B-NP", "O", "B-NP", "I-NP", "O"])
    assert score_crf([Example(pred, gold)], target="_.q_chunk")["q_chunk_p"] == 0.0


def test_a_dev_corpus_without_the_annotation_warns_once():
    nlp = make_nlp("pos")
    words = ["the", "dog", "ran"]
    train(nlp, [Example(Doc(nlp.vocab, words=words),
                        Doc(nlp.vocab, words=words, pos=["DET", "NOUN", "VERB"]))], n_iter=2)
    bare = [Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words))]
    with pytest.warns(UserWarning, match=r"W053.*'crf_tagger' \(target 'pos'\).*1 example"):
        assert nlp.evaluate(bare)["pos_acc"] is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nlp.evaluate(bare)  # said once


@pytest.mark.parametrize("setting,value", [("max_length", 50), ("gold_preproc", True)])
def test_a_corpus_that_drops_user_data_gold_warns_w054(setting, value):
    """spaCy's reader rebuilds docs it cuts or re-tokenizes without
    doc.user_data and doc.spans: a _.NAME target's gold would be gone."""
    nlp = make_nlp("_.q_cut")
    nlp.config["corpora"]["train"][setting] = value
    words = ["a", "b"]
    gold = Doc(nlp.vocab, words=words)
    from spacy_crf import set_doc_labels

    set_doc_labels(gold, "q_cut", ["X", "Y"])
    said = rf"W054.*'_.q_cut'.*doc\.user_data.*{setting} = {str(value).lower()}"
    with pytest.warns(UserWarning, match=said):
        nlp.initialize(lambda: [Example(Doc(nlp.vocab, words=words), gold)])
    quiet = make_nlp("tag")
    quiet.config["corpora"]["train"][setting] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.initialize(lambda: [Example(Doc(quiet.vocab, words=words),
                                          Doc(quiet.vocab, words=words, tags=["X", "Y"]))])


def test_sentence_sequences_without_boundaries_warn_w005():
    nlp = make_nlp("tag", sequence="sentence")
    words = ["the", "dog", "ran"]
    example = Example(Doc(nlp.vocab, words=words),
                      Doc(nlp.vocab, words=words, tags=["DT", "NN", "VBD"]))
    nlp.initialize(lambda: [example])
    with pytest.warns(UserWarning, match=r"W005.*reads SENT_START \(its sequence = \"sentence\"\)"):
        nlp.update([example])
    assert nlp.get_pipe("crf_tagger").input_attrs() == [("SENT_START", 'sequence = "sentence"')]


def test_an_extension_named_in_any_script_is_a_target(tmp_path):
    """spaCy names extensions by Python identifiers, ``tür`` and ``類`` too."""
    from spacy_crf.targets import make_target

    assert make_target("_.類").attr == "類"
    for bad in ("_.1x", "_.a-b", "_.a\n", "_.", "_.a b"):
        with pytest.raises(ValueError, match="CRF-E006"):
            make_target(bad)
    nlp = make_nlp("_.tür")
    words = ["ev", "büyük", "ev"]
    examples = []
    for _ in range(3):
        gold = Doc(nlp.vocab, words=words)
        for token, label in zip(gold, ["NOUN", "ADJ", "NOUN"]):
            token._.tür = label
        examples.append(Example(Doc(nlp.vocab, words=words), gold))
    train(nlp, examples, 10)
    assert "tür_acc" in nlp.evaluate(examples)
    nlp.to_disk(tmp_path / "m")
    doc = spacy.load(tmp_path / "m")("ev büyük")
    assert [t._.tür for t in doc] == ["NOUN", "ADJ"]


def test_an_extension_target_reads_labels_to_keep_only_where_a_doc_has_some():
    """keep_existing on a fresh doc: no token is read one by one (three times
    a token, before), and labels stored, of a corpus or set per token are."""
    from spacy_crf.targets import make_target, set_doc_labels

    Token.set_extension("q_keep", default=None, force=True)
    try:
        nlp = spacy.blank("en")
        target = make_target("_.q_keep")
        assert not target.has_existing(Doc(nlp.vocab, words=["a", "b"]))
        stored = Doc(nlp.vocab, words=["a", "b"])
        set_doc_labels(stored, "q_keep", ["X", None])
        assert target.has_existing(stored)
        other = Doc(nlp.vocab, words=["a", "b"])
        other.user_data[("._.", "note", 0, None)] = 1  # another extension's value
        assert not target.has_existing(other)
        other.user_data[("._.", "q_keep", 2, None)] = "Y"  # as a plain extension sets it
        assert target.has_existing(other)
    finally:
        Token.remove_extension("q_keep")
