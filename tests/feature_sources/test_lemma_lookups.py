"""spaCy's lemma tables as a feature source (issue #52): ``LOOKUP_LEMMA`` and
``RULE_LEMMA_POS``, the edit trees from a word to the lemma of spaCy's lookup
table and of its rule lemmatizer under each coarse POS; the lemma target's
default templates that read them, their saving, and what a pipeline without
the tables gets (W041, or E250 where its own templates read them); the
tagging targets' defaults that read them too (``TAGGING_TEMPLATES``)."""

import warnings

import numpy as np
import pytest
import spacy
from spacy.pipeline._edit_tree_internals.edit_trees import EditTrees
from spacy.strings import StringStore
from spacy.tokens import Doc
from spacy.training import Example

from conftest import SMALL_MODEL, featurize_layer, make_nlp, said, train
from spacy_crf.feature_sources import LemmaLookups, source_of
from spacy_crf.feature_sources import lemma_lookups as source_module
from spacy_crf.feature_sources.lemma_lookups import TAGGING_TEMPLATES
from spacy_crf.features import lemma_lookups
from spacy_crf.features.lemma_lookups import LemmaTable, LemmaTables, build_lemma_table
from spacy_crf.features.templates import FeatureTemplates
from spacy_crf.targets import LemmaTarget

pytest.importorskip("spacy_lookups_data")

WORDS = ["The", "dogs", "walked", "home", "and", "is", "walking", "."]
LEMMAS = ["the", "dog", "walk", "home", "and", "be", "walk", "."]
#: the lemma target's defaults that read the tables (the usual case's follow them)
DEFAULTS = [t for t in LemmaTarget.optional_templates if "USUAL_CASE" not in t]


@pytest.fixture(autouse=True)
def no_usual_case(monkeypatch):
    """The templates of the usual case, which the same targets read by default,
    left out: the models here read the lemma tables alone
    (tests/feature_sources/test_usual_case.py tests the usual case)."""
    from spacy_crf.feature_sources import usual_case
    monkeypatch.setattr(usual_case, "lookups_data_usual_case_table", lambda lang: None)


def tree(form, lemma):
    trees = EditTrees(StringStore())
    return trees.tree_to_str(trees.add(form, lemma))


def english():
    return lemma_lookups.lookups_data_lemma_table("en")


def examples(nlp, n=3):
    # three of each: initialize keeps the trees seen 3+ times
    return [Example(Doc(nlp.vocab, words=WORDS), Doc(nlp.vocab, words=WORDS, lemmas=LEMMAS))] * n


# ------------------------------------------------------------------ the values


@pytest.mark.parametrize("word,column,lemma", [
    ("went", "lookup", "go"), ("Went", "lookup", "go"), ("studies", "lookup", "study"),
    ("studies", "rule:NOUN", "study"), ("studies", "rule:VERB", "study"),
    ("cats", "rule:NOUN", "cat"), ("children", "rule:NOUN", "child"),
    ("better", "rule:ADJ", "well"),  # spaCy puts its last exception first: good, well
    ("hoped", "lookup", "hope"), ("hoped", "rule:VERB", "hop"),  # as spaCy's rule order does
    ("bus", "rule:NOUN", "bus"),  # a lemma of the index is its own
    ("Americans", "lookup", "american"),  # a capitalised key, read by its lowercase form
])
def test_a_word_reads_the_edit_to_what_the_tables_say(word, column, lemma):
    assert english().edit_of(word, column, StringStore()) == tree(word.lower(), lemma)


@pytest.mark.parametrize("word,column", [("xyzzyplox", "lookup"), ("xyzzyplox", "rule:NOUN"),
                                         ("mice", "rule:VERB"), ("quickly", "rule:NOUN")])
def test_a_word_the_tables_do_not_know_has_no_value(word, column):
    assert english().edit_of(word, column, StringStore()) is None


def test_the_english_tables_give_the_lookup_and_four_rule_columns():
    table = english()
    assert table.columns == ["lookup", "rule:ADJ", "rule:ADV", "rule:NOUN", "rule:VERB"]
    assert len(table.table) > 200_000 and table.table.n_columns == 1  # packed: one value a word
    assert lemma_lookups.lookups_data_lemma_table("xx") is None


def test_the_rule_column_is_spacys_rule_lemmatizer_where_its_tables_know_the_lemma():
    nlp = spacy.blank("en")
    lemmatizer = nlp.add_pipe("lemmatizer", config={"mode": "rule"})
    nlp.initialize()
    tables = LemmaTables({}, *_raw_tables())
    words = ["cats", "studies", "hoped", "went", "appalled", "leaves", "buses", "better",
             "running", "mice", "wolves", "happier", "quickly", "best", "feet", "lives"]
    checked = 0
    for pos in ("noun", "verb", "adj", "adv"):
        for word in words:
            ours = tables.rule_lemma(pos, word)
            if ours is None:
                continue
            doc = Doc(nlp.vocab, words=[word], pos=[pos.upper()])
            assert lemmatizer.rule_lemmatize(doc[0])[0] == ours, (word, pos)
            checked += 1
    assert checked > 25


def _raw_tables():
    from spacy.lookups import load_language_data
    from spacy.util import registry

    sources = registry.lookups.get("en")
    return [load_language_data(sources[name]) for name in ("lemma_rules", "lemma_index",
                                                           "lemma_exc")]


def test_packed_columns_read_back_and_select_keeps_the_words_of_its_columns():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 3000, size=(50, 7))  # 12 bits a column: 5 a value, 2 values a word
    ids[:10, 2:] = 0  # words with a value in the first two columns only
    keys = np.arange(1, 51, dtype=np.uint64)
    columns = [f"rule:{pos}" for pos in ("A", "B", "C", "D", "E", "F", "G")]
    table = LemmaTable.from_ids(keys, ids, columns, ["e"] * 3000)
    assert table.bits == 12 and table.table.n_columns == 2
    values = table.table.lookup(keys)
    for j, column in enumerate(columns):
        assert table.column_ids(values, column).tolist() == ids[:, j].tolist()
    picked = table.select(["rule:G", "rule:C"])
    assert len(picked.table) == 40 and picked.table.n_columns == 1
    assert picked.column_ids(picked.table.lookup(keys[10:]), "rule:C").tolist() == \
        ids[10:, 2].tolist()
    assert LemmaTable.from_dict(table.to_dict()).to_dict()["columns"] == columns


def test_a_table_is_made_once_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_CRF_CACHE", str(tmp_path))
    small = {"lemma_lookup": {"went": "go", "mice": "mouse"},
             "lemma_rules": {"noun": [["s", ""]]}, "lemma_index": {"noun": ["cat"]},
             "lemma_exc": {"noun": {"mice": ["mouse"]}}}
    monkeypatch.setattr(spacy.lookups, "load_language_data",
                        lambda path: next(v for k, v in small.items() if k in str(path)))
    made = lemma_lookups._make_lemma_table("en")
    assert len(list(tmp_path.glob("en_lemma_tables_*.npz"))) == 1
    monkeypatch.setattr(spacy.lookups, "load_language_data", lambda path: pytest.fail("read"))
    cached = lemma_lookups._make_lemma_table("en")
    assert cached.to_dict().keys() == made.to_dict().keys()
    assert LemmaLookups(cached) == LemmaLookups(made)
    assert cached.edit_of("cats", "rule:NOUN", StringStore()) == tree("cats", "cat")
    assert cached.edit_of("mice", "lookup", StringStore()) == tree("mice", "mouse")


def test_a_language_of_rules_without_an_index_has_no_rule_column():
    tables = LemmaTables({"went": "go"}, {"punct": [["“", '"']]}, {}, {})
    assert tables.columns() == ["lookup"]
    assert build_lemma_table(LemmaTables({}, {"punct": [["“", '"']]}, {}, {})) is None


def test_forms_and_index_lemmas_written_with_capitals_are_read_by_their_lowercase_form():
    # Greek's lemma_exc["propn"] keys its forms as written ("Αγρινίου"), and
    # French's index has lemmas with capitals: a word is looked up lowercase
    tables = LemmaTables({}, {"noun": [["s", ""]]}, {"noun": ["Museum"]},
                         {"propn": {"Αγρινίου": ["Αγρίνιο"], "Kept": ["As"], "kept": ["Kept"]}})
    assert tables.rule_lemma("propn", "αγρινίου") == "αγρίνιο"
    assert tables.rule_lemma("propn", "kept") == "Kept"  # the lowercase entry, as written
    assert tables.rule_lemma("noun", "museums") == "museum"
    table = build_lemma_table(tables)
    # the edit from the form as written to its lemma as written: the lemma target's label
    assert table.edit_of("Αγρινίου", "rule:PROPN", StringStore()) == tree("Αγρινίου", "Αγρίνιο")
    assert table.edit_of("Museums", "rule:NOUN", StringStore()) == tree("museums", "museum")


def test_greek_proper_noun_exceptions_have_a_value():
    from spacy.lookups import load_language_data
    from spacy.util import registry

    exceptions = load_language_data(registry.lookups.get("el")["lemma_exc"])["propn"]
    table = lemma_lookups.lookups_data_lemma_table("el")
    found = [form for form in exceptions
             if table.edit_of(form, "rule:PROPN", StringStore()) is not None]
    assert len(found) == len(exceptions) > 90


# ------------------------------------------------------------------ templates


def test_the_attributes_are_the_sources_and_a_pos_is_checked():
    assert source_of("LOOKUP_LEMMA") is LemmaLookups and source_of("RULE_LEMMA_NOUN") is LemmaLookups
    assert FeatureTemplates(["RULE_LEMMA_VERB|SUFFIX3"]).lexicon_attrs == ["RULE_LEMMA_VERB"]
    with pytest.raises(ValueError, match=r"\[CRF-E002\].*RULE_LEMMA_NOUNS"):
        FeatureTemplates(["RULE_LEMMA_NOUNS"])


def test_a_tokens_columns_are_looked_up_by_its_lowercase_form():
    nlp = make_nlp("lemma")
    train(nlp, examples(nlp), n_iter=1)
    lexicon = featurize_layer(nlp).attrs["crf_lexicon"]
    doc = nlp.make_doc("Went went xyzzyplox studies")
    keys = {"LOWER": doc.to_array("LOWER").astype(np.uint64)}
    values = lexicon.columns([doc], ["LOOKUP_LEMMA", "RULE_LEMMA_NOUN"], keys)
    assert values[0].tolist() == values[1].tolist() and values[0, 0] != 0
    assert values[2].tolist() == [0, 0] and values[3, 1] != 0
    table = lexicon["lemma_lookups"].lemma_table
    assert table.edits[int(values[3, 1]) - 1] == tree("studies", "study")


# ------------------------------------------------------ the lemma target's defaults


def test_the_lemma_target_reads_the_tables_by_default():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "lemma"})
    layer = featurize_layer(nlp)
    optional = layer.attrs["cluster_templates"]
    assert [t for t in optional if "LEMMA" in t] == DEFAULTS
    train(nlp, examples(nlp), n_iter=2)
    # English's rules cover no DET or PROPN: those defaults are left out (quietly)
    english_defaults = [t for t in DEFAULTS if "DET" not in t and "PROPN" not in t]
    assert layer.attrs["templates"].source[-len(english_defaults):] == english_defaults
    assert layer.attrs["crf_lexicon"]["lemma_lookups"].lemma_table.columns == \
        english().columns
    assert [t.lemma_ for t in nlp("The dogs walked")] == ["the", "dog", "walk"]


def test_the_tagging_targets_read_the_tables_and_others_do_not():
    for target in ("pos", "tag", "morph"):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        optional = featurize_layer(nlp).attrs["cluster_templates"]
        assert [t for t in optional if "LEMMA" in t] == list(TAGGING_TEMPLATES), target
    for target in ("dep", "ents", "_.chunk"):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        assert not any("LEMMA" in t for t in featurize_layer(nlp).attrs["cluster_templates"])


def pos_examples(nlp, n=3):
    pos = ["DET", "NOUN", "VERB", "NOUN", "CCONJ", "AUX", "VERB", "PUNCT"]
    return [Example(Doc(nlp.vocab, words=WORDS), Doc(nlp.vocab, words=WORDS, pos=pos))] * n


GREEK_RULE_POS = ("adj", "adv", "det", "noun", "propn", "verb")


def greek_like_tables():
    """Tables shaped as spacy-lookups-data's Greek ones: rules and an index
    for six coarse POS, no lookup table (built here: the real ones take 10 s
    to build into an empty cache)."""
    return build_lemma_table(LemmaTables({}, {pos: [["s", ""]] for pos in GREEK_RULE_POS},
                                         {pos: ["dog"] for pos in GREEK_RULE_POS}, {}))


def german_like_tables():
    """A lookup table alone, as spacy-lookups-data has for German."""
    return build_lemma_table(LemmaTables({"dogs": "dog"}, {}, {}, {}))


@pytest.mark.parametrize("lang,tables,read", [
    ("en", None, ["LOOKUP_LEMMA[-1..1]", "RULE_LEMMA_ADJ", "RULE_LEMMA_ADV", "RULE_LEMMA_NOUN",
                  "RULE_LEMMA_VERB", "RULE_LEMMA_ADJ|RULE_LEMMA_NOUN|RULE_LEMMA_VERB"]),
    ("el", greek_like_tables, ["RULE_LEMMA_ADJ", "RULE_LEMMA_ADV", "RULE_LEMMA_DET",
                               "RULE_LEMMA_NOUN", "RULE_LEMMA_PROPN", "RULE_LEMMA_VERB",
                               "RULE_LEMMA_ADJ|RULE_LEMMA_NOUN|RULE_LEMMA_VERB"]),
    ("de", german_like_tables, ["LOOKUP_LEMMA[-1..1]"]),
    ("xx", None, []),  # no tables at all
])
def test_a_tagger_reads_what_its_language_has_and_says_nothing_of_the_rest(
        lang, tables, read, monkeypatch):
    if tables is not None:
        made = tables()
        monkeypatch.setattr(source_module, "lookups_data_lemma_table", lambda _: made)
    nlp = spacy.blank(lang)
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": SMALL_MODEL})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, pos_examples(nlp), n_iter=3)
    assert said(caught, "W041") == []  # a tagger's tables are a bonus, not news
    templates = featurize_layer(nlp).attrs["templates"].source
    assert templates == SMALL_MODEL["templates"] + read
    assert [t.pos_ for t in nlp("The dogs walked home")] == ["DET", "NOUN", "VERB", "NOUN"]


def test_the_tables_language_columns_are_those_spacy_lookups_data_ships():
    """What the cases above stand for (read from the package's file list, not built)."""
    from spacy_crf.features.lookups_data import table_source
    assert table_source("el", "lemma_lookup") is None
    assert table_source("el", "lemma_rules") is not None
    assert table_source("de", "lemma_lookup") is not None
    assert table_source("de", "lemma_rules") is None


def test_the_tables_change_what_a_tagger_scores():
    # the same model without the tables (turned off) scores an unseen word otherwise
    scores = []
    for lookups in (True, False):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": "pos", "model": SMALL_MODEL})
        nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": lookups}
        train(nlp, pos_examples(nlp), n_iter=3)
        doc = nlp.make_doc("The cats jumped")
        scores.append(nlp.get_pipe("crf_tagger").model.predict([doc]).emissions)
    assert not np.allclose(scores[0], scores[1])


def test_saved_and_loaded_without_the_tables_the_pipeline_predicts_the_same(tmp_path,
                                                                             monkeypatch):
    nlp = make_nlp("lemma")
    train(nlp, examples(nlp), n_iter=10)
    texts = ["The dogs walked home", "Cats went and studies is walking ."]
    want = [[t.lemma_ for t in doc] for doc in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "p")
    # a loaded component reads its saved table: nothing is read from the package
    monkeypatch.setattr(source_module, "lookups_data_lemma_table", lambda lang: pytest.fail())
    loaded = spacy.load(tmp_path / "p")
    assert featurize_layer(loaded).attrs["templates"].source == \
        featurize_layer(nlp).attrs["templates"].source
    docs = [loaded.make_doc(text) for text in texts]
    assert np.array_equal(loaded.get_pipe("crf_tagger").model.predict(docs).emissions,
                          nlp.get_pipe("crf_tagger").model.predict(docs).emissions)
    assert [[t.lemma_ for t in doc] for doc in loaded.pipe(texts)] == want


def test_without_the_tables_the_defaults_are_left_out_with_a_warning(monkeypatch):
    monkeypatch.setattr(source_module, "lookups_data_lemma_table", lambda lang: None)
    nlp = make_nlp("lemma")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, examples(nlp), n_iter=3)
    (message,) = said(caught, "W041")
    assert "spacy-lookups-data" in message and "RULE_LEMMA_NOUN" in message
    assert featurize_layer(nlp).attrs["templates"].source == SMALL_MODEL["templates"]
    assert [t.lemma_ for t in nlp("The dogs walked")] == ["the", "dog", "walk"]


def test_a_language_without_tables_trains_without_them():
    nlp = spacy.blank("xx")
    nlp.add_pipe("crf_tagger", config={"target": "lemma", "model": SMALL_MODEL})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, examples(nlp), n_iter=3)
    (message,) = said(caught, "W041")
    assert "language 'xx'" in message
    assert featurize_layer(nlp).attrs["crf_lexicon"] is None


def test_a_language_with_a_lookup_table_alone_reads_it_and_leaves_the_rules_out():
    """Quietly: W041 is for a language with no lemma table at all (its fix,
    spacy-lookups-data, does nothing for columns a language's tables lack)."""
    nlp = spacy.blank("de")  # spacy-lookups-data: de_lemma_lookup, no rule tables
    nlp.add_pipe("crf_tagger", config={"target": "lemma", "model": SMALL_MODEL})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, examples(nlp), n_iter=1)
    assert said(caught, "W041") == []
    templates = featurize_layer(nlp).attrs["templates"].source
    assert "LOOKUP_LEMMA[-1..1]" in templates and not any("RULE" in t for t in templates)


def test_turned_off_the_defaults_are_left_out_quietly():
    nlp = make_nlp("lemma")
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, examples(nlp), n_iter=1)
    assert said(caught, "W041") == []
    assert featurize_layer(nlp).attrs["templates"].source == SMALL_MODEL["templates"]


def own_templates(nlp, *extra):
    nlp.add_pipe("crf_tagger", config={"target": "lemma", "model": {
        **SMALL_MODEL, "templates": [*SMALL_MODEL["templates"], *extra]}})
    return nlp


def test_templates_of_the_models_own_that_read_a_missing_table_are_an_error(monkeypatch):
    monkeypatch.setattr(source_module, "lookups_data_lemma_table", lambda lang: None)
    nlp = own_templates(spacy.blank("en"), "RULE_LEMMA_NOUN")
    with pytest.raises(ValueError, match=r"\[CRF-E250\].*RULE_LEMMA_NOUN, but "
                                         r"spacy-lookups-data is not installed"):
        train(nlp, examples(nlp), n_iter=1)


def test_a_rule_column_the_language_has_not_is_an_error_naming_what_it_has():
    nlp = own_templates(spacy.blank("de"), "RULE_LEMMA_NOUN")
    with pytest.raises(ValueError, match=r"\[CRF-E250\].*RULE_LEMMA_NOUN.*give LOOKUP_LEMMA "
                                         r"only"):
        train(nlp, examples(nlp), n_iter=1)


def test_own_templates_turned_off_are_an_error_naming_the_setting():
    nlp = own_templates(spacy.blank("en"), "LOOKUP_LEMMA")
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False}
    with pytest.raises(ValueError, match=r"\[CRF-E250\].*lemma_lookups = false"):
        train(nlp, examples(nlp), n_iter=1)


def test_greek_reads_its_rules_for_det_and_propn_and_no_lookup_quietly():
    """Greek's tables: rules (DET and PROPN among them), no lookup table."""
    nlp = spacy.blank("el")
    nlp.add_pipe("crf_tagger", config={"target": "lemma", "model": SMALL_MODEL})
    words, lemmas = ["οι", "σκύλοι", "έτρεξαν"], ["ο", "σκύλος", "τρέχω"]
    from spacy.tokens import Doc
    from spacy.training import Example

    eg = Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, lemmas=lemmas))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, [eg] * 3, n_iter=1)
    assert said(caught, "W041") == []
    templates = featurize_layer(nlp).attrs["templates"].source
    assert {"RULE_LEMMA_DET", "RULE_LEMMA_PROPN"} <= set(templates)
    assert not any("LOOKUP" in t for t in templates)
