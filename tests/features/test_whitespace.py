"""Whitespace tokens read as a line break or a space (``features/whitespace.py``):
every variant of each reads alike, what the pipeline set on the token is kept,
a model saved before the fold keeps reading them as written."""

import shutil

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc
from spacy.training import Example

from conftest import SMALL_MODEL, TEST_ASSETS, featurize_layer, make_nlp, train
from spacy_crf.features.extract import extract_features
from spacy_crf.features.templates import FeatureTemplates
from spacy_crf.features.whitespace import (AS_WRITTEN, FOLDED, WHITESPACE, has_line_break,
                                           word_columns)
from spacy_crf.models.hmm import hmm

TEMPLATES = FeatureTemplates(["NORM[-1..1]", "SHAPE", "ORTH", "LENGTH", "IS_SPACE",
                              "SUFFIX3", "PREFIX2|NORM[1]", "POS", "TAG[-1]|SHAPE"])
LINE_BREAKS = ["\n", "\n\n", "\r\n", "\n \n", "\n\n\n", "\u2028", "\r"]
SPACES = [" ", "  ", "\t", " \t ", "\u00a0"]


def doc_with(vocab, brk, pos="SPACE"):
    words = ["We", "left", brk, "Then", "rain"]
    return Doc(vocab, words=words, spaces=[True, False, False, True, False],
               pos=["PRON", "VERB", pos, "ADV", "NOUN"])


def features(docs, fold=True, templates=TEMPLATES, lexicon=None):
    return extract_features(docs, templates, lexicon=lexicon, fold_whitespace=fold)


#: templates whose text column is ORTH; LOWER (for the affixes); neither
#: (ORTH read for the fold alone); and IS_SPACE among the templates
READS = {"orth": TEMPLATES, "lower": FeatureTemplates(["SUFFIX3[-1..1]", "SHAPE"]),
         "neither": FeatureTemplates(["SHAPE[-1..1]", "LENGTH", "POS"]),
         "is_space": FeatureTemplates(["IS_SPACE", "NORM[-1]|IS_SPACE", "SHAPE[1]"])}


@pytest.mark.parametrize("templates", READS.values(), ids=list(READS))
@pytest.mark.parametrize("kind", [LINE_BREAKS, SPACES], ids=["line_breaks", "spaces"])
def test_every_variant_of_a_line_break_or_a_space_reads_alike(kind, templates):
    vocab = spacy.blank("en").vocab
    rows = [features([doc_with(vocab, brk)], templates=templates) for brk in kind]
    for brk, row in zip(kind[1:], rows[1:]):
        assert np.array_equal(row, rows[0]), repr(brk)
    # as written, they differ: at the token or in its neighbours' windows
    written = [features([doc_with(vocab, brk)], fold=False, templates=templates)
               for brk in kind]
    assert not np.array_equal(written[0][1:4], written[1][1:4])
    assert rows[0].shape == written[0].shape == (5, len(templates))


def test_a_line_break_and_a_space_stay_apart():
    vocab = spacy.blank("en").vocab
    line, space = (features([doc_with(vocab, brk)]) for brk in ("\n\n", "  "))
    assert not np.array_equal(line[2], space[2])
    assert np.array_equal(line[[0, 4]], space[[0, 4]])  # out of the windows: the same


def test_the_line_break_is_read_as_the_word_a_newline_is():
    vocab = spacy.blank("en").vocab
    assert np.array_equal(features([doc_with(vocab, "\r\n")], fold=True),
                          features([doc_with(vocab, "\n")], fold=False))


def test_what_the_pipeline_set_on_a_whitespace_token_is_kept():
    vocab = spacy.blank("en").vocab
    templates = FeatureTemplates(["POS", "NORM"])
    tagged_space, tagged_x = (features([doc_with(vocab, "\n\n", pos)], templates=templates)
                              for pos in ("SPACE", "X"))
    assert tagged_space[2, 0] != tagged_x[2, 0]  # POS: the token's own
    assert tagged_space[2, 1] == tagged_x[2, 1]  # NORM: the word's, folded
    assert word_columns(["NORM", "POS", "SHAPE"], 5).tolist() == [0, 2, 3, 4]


def test_docs_without_whitespace_tokens_read_as_before():
    nlp = spacy.blank("en")
    docs = [nlp("Hello there, how are you?"), nlp(""), nlp("A b c.")]
    assert np.array_equal(features(docs), features(docs, fold=False))


def test_whitespace_tokens_across_a_batch_of_docs():
    vocab = spacy.blank("en").vocab
    batch = [doc_with(vocab, brk) for brk in ("\n\n", "  ", "\r\n", "\t")]
    alone = np.vstack([features([doc_with(vocab, brk)]) for brk in ("\n", " ", "\n", " ")])
    assert np.array_equal(features(batch), alone)


def test_every_template_attribute_is_the_words_or_the_tokens():
    # a new attribute must be placed: the word's is folded, the token's kept
    from spacy_crf.features.templates import TOKEN_ATTRS
    from spacy_crf.features.whitespace import TOKEN_LEVEL_ATTRS

    words = {"ORTH", "LOWER", "NORM", "SHAPE", "PREFIX", "SUFFIX", "LENGTH", "IS_ALPHA",
             "IS_ASCII", "IS_DIGIT", "IS_LOWER", "IS_UPPER", "IS_TITLE", "IS_PUNCT", "IS_SPACE",
             "IS_STOP", "IS_BRACKET", "IS_QUOTE", "IS_LEFT_PUNCT", "IS_RIGHT_PUNCT",
             "IS_CURRENCY", "LIKE_NUM", "LIKE_URL", "LIKE_EMAIL"}
    assert set(TOKEN_ATTRS) == words | TOKEN_LEVEL_ATTRS
    assert not words & TOKEN_LEVEL_ATTRS


def test_line_break_characters():
    assert all(has_line_break(text) for text in LINE_BREAKS)
    assert not any(has_line_break(text) for text in SPACES)


# ------------------------------------------------------------ the component


def sents_examples(nlp, brk):
    words = ["we", "went", "home", brk, "then", "we", "ate", brk, "it", "was", "late"]
    starts = [True, False, False, False, True, False, False, False, True, False, False]
    gold = Doc(nlp.vocab, words=words, sent_starts=starts)
    return [Example(Doc(nlp.vocab, words=words), gold)] * 8


def senter(templates=("NORM", "NORM[-1]", "SHAPE[-1]|SHAPE")):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts",
                                       "model": {**SMALL_MODEL, "templates": list(templates)}})
    train(nlp, sents_examples(nlp, "\n"), n_iter=20)
    return nlp


def marginals(nlp, brk):
    doc = Doc(nlp.vocab, words=["so", "we", "left", brk, "now", "we", "rest"])
    return nlp.get_pipe("crf_tagger").model.predict([doc]).emissions


def test_a_trained_component_reads_every_line_break_as_the_one_it_learned():
    # the senter's default optional templates read the word tables too (usual
    # case), so the folded columns of the tables are checked with the rest
    nlp = senter()
    assert featurize_layer(nlp).attrs[WHITESPACE] == FOLDED
    learned = marginals(nlp, "\n")
    for brk in ("\n\n", "\r\n", "\n \n"):
        assert np.array_equal(marginals(nlp, brk), learned), repr(brk)
    assert not np.array_equal(marginals(nlp, "  "), learned)


def test_the_fold_is_saved_and_a_model_saved_before_it_reads_as_written(tmp_path):
    nlp = senter()
    nlp.to_disk(tmp_path / "new")
    assert featurize_layer(spacy.load(tmp_path / "new")).attrs[WHITESPACE] == FOLDED
    # a save of before the fold: its featurize layer had no such attr
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    path = tmp_path / "old" / "crf_tagger" / "model"
    msg = srsly.msgpack_loads(path.read_bytes())
    for attrs in msg["attrs"]:
        attrs.pop(WHITESPACE, None)
    path.write_bytes(srsly.msgpack_dumps(msg))
    old = spacy.load(tmp_path / "old")
    assert featurize_layer(old).attrs[WHITESPACE] == AS_WRITTEN
    # it predicts as it did where all was as written; a blank line is a new word to it
    assert np.array_equal(marginals(old, "\n"), marginals(nlp, "\n"))
    assert not np.array_equal(marginals(old, "\n\n"), marginals(nlp, "\n\n"))
    # and saved again, it keeps reading as written
    old.to_disk(tmp_path / "again")
    assert featurize_layer(spacy.load(tmp_path / "again")).attrs[WHITESPACE] == AS_WRITTEN


def test_the_shipped_pipelines_of_earlier_releases_read_whitespace_as_written(tmp_path):
    path = tmp_path / "saved"
    shutil.copytree(TEST_ASSETS / "saved_before_feature_sources" / "ents_every_source", path)
    assert featurize_layer(spacy.load(path)).attrs[WHITESPACE] == AS_WRITTEN


def test_a_new_component_folds_and_so_does_the_hmm():
    nlp = make_nlp("tag")
    assert featurize_layer(nlp).attrs[WHITESPACE] == FOLDED
    assert hmm().attrs[WHITESPACE] == FOLDED
