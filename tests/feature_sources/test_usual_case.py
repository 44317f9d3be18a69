"""How a word is usually written, as a feature source: ``USUAL_CASE``, read from
spaCy's word probabilities (``lexeme_prob``); the targets whose defaults read
it, its saving, and a pipeline without the table (left out quietly, or E230
where the model's own templates read it)."""

import warnings

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import SMALL_MODEL, featurize_layer, make_nlp, said, train
from spacy_crf.feature_sources import UsualCase, source_of
from spacy_crf.feature_sources import usual_case as source_module
from spacy_crf.feature_sources.usual_case import USUAL_CASE_TEMPLATES
from spacy_crf.features import usual_case
from spacy_crf.features.templates import FeatureTemplates
from spacy_crf.features.usual_case import MIN_LOGPROB, case_value, usual_case_table
from spacy_crf.features.word_table import word_keys

pytest.importorskip("spacy_lookups_data")

LOWERCASE, CAPITALIZED = 1, 9  # the first and last bins, the capitals' form not the most frequent
CAPITALS = 1  # added where it is


def value_of(table, word):
    return int(table.lookup(word_keys([word.lower()]))[0, 0])


# ------------------------------------------------------------------ the values


@pytest.mark.parametrize("lower,capitalized,capitals,value", [
    (-9.6, -12.3, -15.0, LOWERCASE),  # military / Military
    (-13.0, -10.4, -16.0, CAPITALIZED),  # texas / Texas
    (-10.0, -10.2, -15.0, 5),  # as often one way as the other: the middle bin
    (-10.0, -11.0, -15.0, 3),  # somewhat more often lowercase
    (-11.0, -10.0, -15.0, 7),  # somewhat more often capitalized
    (-14.0, -11.9, -9.0, 7 + CAPITALS),  # usd / Usd / USD
])
def test_a_words_value_bins_its_capitalized_against_its_lowercase_form(lower, capitalized,
                                                                       capitals, value):
    assert case_value(lower, capitalized, capitals) == value


def test_the_table_keys_each_word_by_its_lowercase_form_and_leaves_out_what_says_nothing():
    table = usual_case_table({"military": -9.6, "Military": -12.3, "texas": -13.0,
                              "Texas": -10.4, "USD": -11.9, "usd": -14.0,
                              "iPhone": -10.0,  # another spelling: says nothing of "iphone"
                              "rare": MIN_LOGPROB - 1,  # too rare to say
                              "e-mail": -9.0, "E-mail": -12.0,  # not letters alone
                              "Solo": -12.0})  # its lowercase form unseen: capitalized
    assert value_of(table, "military") == value_of(table, "MILITARY") == LOWERCASE
    assert value_of(table, "Texas") == CAPITALIZED
    assert value_of(table, "usd") == case_value(-14.0, -21.0, -11.9) and \
        value_of(table, "usd") % 2 == 0  # the capitals' form is the most frequent
    assert value_of(table, "solo") == CAPITALIZED
    for word in ("iphone", "rare", "e-mail", "unseen"):
        assert value_of(table, word) == 0, word
    assert len(table) == 4
    assert usual_case_table({"rare": MIN_LOGPROB - 1}) is None


def english():
    return usual_case.lookups_data_usual_case_table("en")


@pytest.mark.parametrize("word,value", [("Texas", CAPITALIZED), ("texas", CAPITALIZED),
                                        ("Military", LOWERCASE), ("saturday", 7), ("london", CAPITALIZED),
                                        ("table", LOWERCASE), ("xyzzyplox", 0)])
def test_spacys_english_word_probabilities_say_how_words_are_written(word, value):
    assert value_of(english(), word) == value


def test_a_table_is_made_once_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_CRF_CACHE", str(tmp_path))
    monkeypatch.setattr(spacy.lookups, "load_language_data",
                        lambda path: {"texas": -13.0, "Texas": -10.4, "table": -9.0})
    made = usual_case._make_table("en")
    assert len(list(tmp_path.glob("en_usual_case_*.npz"))) == 1
    monkeypatch.setattr(spacy.lookups, "load_language_data", lambda path: pytest.fail("read"))
    cached = usual_case._make_table("en")
    assert UsualCase(cached) == UsualCase(made)
    assert value_of(cached, "Texas") == CAPITALIZED and value_of(cached, "table") == LOWERCASE


def test_a_language_without_word_probabilities_has_no_table():
    from spacy_crf.features.lookups_data import table_source
    assert table_source("xx", "lexeme_prob") is None
    assert usual_case.lookups_data_usual_case_table("xx") is None
    for lang in ("en", "de", "es", "el"):  # what the module's docstring promises
        assert table_source(lang, "lexeme_prob") is not None, lang


# ------------------------------------------------------------------ templates


def test_the_attribute_is_the_sources():
    assert source_of("USUAL_CASE") is UsualCase
    assert FeatureTemplates(["USUAL_CASE|IS_TITLE"]).lexicon_attrs == ["USUAL_CASE"]


def test_the_tagging_lemma_entity_and_sentence_targets_read_it_and_others_do_not():
    for target in ("pos", "tag", "morph", "lemma", "ents", "sent_starts"):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        optional = featurize_layer(nlp).attrs["cluster_templates"]
        read = [t for t in optional if "USUAL_CASE" in t]
        assert read[:len(USUAL_CASE_TEMPLATES)] == list(USUAL_CASE_TEMPLATES), target
    for target in ("dep", "_.chunk", "spans:sc"):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        assert not any("USUAL_CASE" in t for t in featurize_layer(nlp).attrs["cluster_templates"])


WORDS = ["Paris", "Table", "Berlin", "Window", "Madrid", "Garden"]
LEMMAS = ["Paris", "table", "Berlin", "window", "Madrid", "garden"]


def case_examples(nlp):
    # a doc per word: a chain's moves say nothing of any word
    return [Example(Doc(nlp.vocab, words=[word]), Doc(nlp.vocab, words=[word], lemmas=[lemma]))
            for word, lemma in zip(WORDS, LEMMAS)] * 3


UNSEEN = ["London", "Chair", "Rome", "Kitchen"]


def lemmas_of(nlp, words):
    return [doc[0].lemma_ for doc in nlp.pipe(words)]


def case_only_lemmatizer(usual_case_on=True):
    """A lemmatizer whose templates read nothing of a word but its case and how
    it is usually written (spaCy's lemma tables off: they know common nouns)."""
    nlp = make_nlp("lemma", model={**SMALL_MODEL, "templates": ["IS_TITLE"]})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False,
                                                            "usual_case": usual_case_on}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # W041: the lemma tables are off
        train(nlp, case_examples(nlp), n_iter=30)
    return nlp


def test_a_lemmatizer_learns_which_capitalized_words_keep_their_capital():
    # unseen words, capitalized alike: the names keep their capital, the common
    # nouns lose it, as in the training words; only the table tells them apart
    nlp = case_only_lemmatizer()
    assert featurize_layer(nlp).attrs["templates"].source == ["IS_TITLE",
                                                              *USUAL_CASE_TEMPLATES]
    assert lemmas_of(nlp, UNSEEN) == ["London", "chair", "Rome", "kitchen"]
    # without it, the same capitalized words get the same lemma edit
    lemmas = lemmas_of(case_only_lemmatizer(usual_case_on=False), UNSEEN)
    assert len({lemma.istitle() for lemma in lemmas}) == 1


def test_saved_and_loaded_the_pipeline_reads_its_own_table(tmp_path, monkeypatch):
    nlp = case_only_lemmatizer()
    nlp.to_disk(tmp_path / "p")
    monkeypatch.setattr(source_module, "lookups_data_usual_case_table",
                        lambda lang: pytest.fail("read the package's table"))
    loaded = spacy.load(tmp_path / "p")
    docs = [loaded.make_doc(word) for word in UNSEEN]
    assert np.array_equal(loaded.get_pipe("crf_tagger").model.predict(docs).emissions,
                          nlp.get_pipe("crf_tagger").model.predict(docs).emissions)


def pos_examples(nlp):
    words = ["The", "dogs", "walked", "home"]
    pos = ["DET", "NOUN", "VERB", "NOUN"]
    return [Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, pos=pos))] * 3


@pytest.mark.parametrize("reason", ["no table", "turned off"])
def test_without_the_table_the_defaults_are_left_out_quietly(reason, monkeypatch):
    nlp = make_nlp("pos")
    settings = {"lemma_lookups": False}
    if reason == "no table":
        monkeypatch.setattr(source_module, "lookups_data_usual_case_table", lambda lang: None)
    else:
        settings["usual_case"] = False
    nlp.config["initialize"]["components"]["crf_tagger"] = settings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, pos_examples(nlp), n_iter=3)
    assert [str(w.message) for w in caught if "[CRF-" in str(w.message)] == []
    assert featurize_layer(nlp).attrs["templates"].source == SMALL_MODEL["templates"]
    assert [t.pos_ for t in nlp("The dogs walked home")] == ["DET", "NOUN", "VERB", "NOUN"]


@pytest.mark.parametrize("reason,named", [("no table", "no word probabilities"),
                                          ("turned off", "usual_case = false")])
def test_templates_of_the_models_own_that_read_a_missing_table_are_an_error(reason, named,
                                                                           monkeypatch):
    nlp = make_nlp("pos", model={**SMALL_MODEL, "templates": ["NORM", "USUAL_CASE"]})
    if reason == "no table":
        monkeypatch.setattr(source_module, "lookups_data_usual_case_table", lambda lang: None)
    else:
        nlp.config["initialize"]["components"]["crf_tagger"] = {"usual_case": False}
    with pytest.raises(ValueError, match=r"\[CRF-E230\]") as err:
        train(nlp, pos_examples(nlp), n_iter=1)
    assert named in str(err.value) and "USUAL_CASE" in str(err.value)
