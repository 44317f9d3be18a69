"""Whether whitespace follows a token, as a feature source: ``SPACE_AFTER``;
built only where the training docs have spacing, the targets whose defaults
read it, its values, its saving, and E262."""

import warnings

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import SMALL_MODEL, featurize_layer, make_nlp, train
from spacy_crf.feature_sources import SpaceAfter, source_of
from spacy_crf.feature_sources.space_after import spacing_known
from spacy_crf.features.extract import _value_columns
from spacy_crf.features.lexicon import Lexicon
from spacy_crf.features.templates import FeatureTemplates
from spacy_crf.targets.sent_starts import SPACING_TEMPLATES

#: the spacing templates of the tag target's defaults
TAG_SPACING = ["SPACE_AFTER[-1]|IS_PUNCT", "SPACE_AFTER|IS_PUNCT"]


def test_the_attribute_is_the_sources():
    assert source_of("SPACE_AFTER") is SpaceAfter
    assert FeatureTemplates(["SPACE_AFTER[-1]|IS_PUNCT"]).lexicon_attrs == ["SPACE_AFTER"]


def test_docs_from_text_have_spacing_and_docs_of_words_alone_do_not():
    nlp = spacy.blank("en")
    assert spacing_known([nlp("He said \"go.\" Then he left.")])
    # Doc(words) puts a space after every token (spaCy marks its spaces unknown)
    assert not spacing_known([Doc(nlp.vocab, words=["He", "said", "\"", "go", "."])])
    # docs without punctuation after a word show nothing, however many
    assert not spacing_known([nlp("hello world"), nlp("hi")])
    assert spacing_known([nlp("hello world")] * 2000 + [nlp("Hi!")])
    assert not spacing_known([Doc(nlp.vocab, words=["a", "b"], spaces=[False, False])])
    assert not spacing_known([])


def test_a_few_attached_tokens_in_a_corpus_of_spaced_words_do_not_make_it_spaced():
    vocab = spacy.blank("en").vocab
    # CoNLL-U without SpaceAfter: a multiword token's parts stay attached
    conllu = Doc(vocab, words=["I", "do", "n't", "know", ",", "right", "."],
                 spaces=[True, False, True, True, True, True, False])
    assert not spacing_known([conllu])
    # a line break spaCy's augmenter inserts is attached to the word before it
    augmented = Doc(vocab, words=["Stop", "\n", ".", "Go", "."],
                    spaces=[False, True, True, True, False])
    assert not spacing_known([augmented])
    # a word split again by the tokenizer (a corpus cutting long docs): one
    # attached mark among many spaced ones
    resplit = Doc(vocab, words=["non", ".", "stop", ",", "a", ",", "b", "."],
                  spaces=[False, True, True, True, True, True, True, False])
    assert not spacing_known([resplit])
    text = Doc(vocab, words=["a", ",", "b", ",", "c", "."],
               spaces=[False, True, True, True, False, False])
    assert spacing_known([text])


def test_its_values_are_the_texts_spacing():
    nlp = make_nlp("tag", model={**SMALL_MODEL, "templates": ["SPACE_AFTER"]})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False,
                                                            "usual_case": False}
    doc = nlp.make_doc("He said \"go.\" Then")
    train(nlp, [Example.from_dict(doc, {"tags": ["X"] * len(doc)})], n_iter=1)
    layer = featurize_layer(nlp)
    templates = layer.attrs["templates"]
    column = len(templates.token_attrs) + templates.lexicon_attrs.index("SPACE_AFTER")
    values = _value_columns([doc], templates, layer.attrs["crf_lexicon"])
    assert values[:, column].tolist() == [1, 1, 0, 0, 0, 1, 0]


def text_examples(nlp, texts, spacing=True):
    """Examples of ``texts`` as tokenized, with their spacing (``spacing``) or
    as ``Doc(words)`` makes them, spaced throughout."""
    docs = [nlp.make_doc(text) for text in texts]
    if not spacing:
        docs = [Doc(nlp.vocab, words=[t.text for t in doc]) for doc in docs]
    return [Example.from_dict(doc, {"tags": ["PUNCT" if t.is_punct else "W" for t in doc]})
            for doc in docs]


def words_examples(nlp, texts):
    return text_examples(nlp, texts, spacing=False)


TEXTS = ["He said \"go.\" Then he left.", "\"Why?\" she asked."]


@pytest.mark.parametrize("target,spacing", [("tag", TAG_SPACING),
                                            ("sent_starts", list(SPACING_TEMPLATES))])
def test_a_target_reads_it_where_the_training_docs_have_spacing_and_not_where_they_do_not(
        target, spacing):
    read = {}
    for name, examples in (("text", text_examples), ("words", words_examples)):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False}
        egs = examples(nlp, TEXTS)
        if target == "sent_starts":
            for eg in egs:
                eg.reference[0].is_sent_start = True
                for token in eg.reference[1:]:
                    token.is_sent_start = token.i in (4, 5) and token.text in ("Then", "she")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nlp.initialize(lambda: egs)
        read[name] = [t for t in featurize_layer(nlp).attrs["templates"].source
                      if "SPACE_AFTER" in t]
    assert read["text"] == spacing
    assert read["words"] == []


def test_targets_that_tell_no_quote_from_another_do_not_read_it():
    for target in ("pos", "morph", "lemma", "ents", "dep"):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        assert not any("SPACE_AFTER" in t
                       for t in featurize_layer(nlp).attrs["cluster_templates"]), target


def test_a_model_reads_its_own_spacing_templates_after_a_save_and_a_load(tmp_path):
    nlp = make_nlp("tag", model={**SMALL_MODEL, "templates": ["NORM"]})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False,
                                                            "usual_case": False}
    train(nlp, text_examples(nlp, TEXTS) * 3, n_iter=10)
    assert featurize_layer(nlp).attrs["templates"].source == ["NORM", *TAG_SPACING]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert featurize_layer(loaded).attrs["templates"].source == ["NORM", *TAG_SPACING]
    assert isinstance(featurize_layer(loaded).attrs["crf_lexicon"].get("space_after"),
                      SpaceAfter)
    docs = [loaded.make_doc(text) for text in ("\"Go!\" he said.", "he said \"go\"")]
    assert np.array_equal(loaded.get_pipe("crf_tagger").model.predict(docs).emissions,
                          nlp.get_pipe("crf_tagger").model.predict(docs).emissions)


def test_the_spacing_changes_what_the_model_scores():
    # the same words, spaced otherwise: a model that reads the spacing scores them apart
    nlp = make_nlp("tag", model={**SMALL_MODEL, "templates": ["NORM"]})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False,
                                                            "usual_case": False}
    train(nlp, text_examples(nlp, TEXTS) * 3, n_iter=10)
    attached = nlp.make_doc("go.\"")
    spaced = Doc(nlp.vocab, words=["go", ".", "\""])
    model = nlp.get_pipe("crf_tagger").model
    assert not np.allclose(model.predict([attached]).emissions, model.predict([spaced]).emissions)


def test_a_lexicon_saves_and_reads_the_source():
    lexicon = Lexicon({"space_after": SpaceAfter()})
    assert Lexicon.from_bytes(lexicon.to_bytes()).get("space_after") == SpaceAfter()
    assert Lexicon.from_bytes(Lexicon({}).to_bytes()).get("space_after") is None


def test_turned_off_the_defaults_leave_it_out_and_the_models_own_templates_are_an_error():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag"})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"lemma_lookups": False,
                                                            "space_after": False}
    train(nlp, text_examples(nlp, TEXTS), n_iter=1)
    assert not any("SPACE_AFTER" in t for t in featurize_layer(nlp).attrs["templates"].source)
    nlp = make_nlp("tag", model={**SMALL_MODEL, "templates": ["NORM", "SPACE_AFTER"]})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"space_after": False}
    with pytest.raises(ValueError, match=r"\[CRF-E262\]") as err:
        train(nlp, text_examples(nlp, TEXTS), n_iter=1)
    assert "space_after = false" in str(err.value)


def test_the_models_own_templates_read_it_even_from_docs_without_spacing():
    nlp = make_nlp("tag", model={**SMALL_MODEL, "templates": ["NORM", "SPACE_AFTER"]})
    train(nlp, words_examples(nlp, TEXTS), n_iter=1)
    assert "SPACE_AFTER" in featurize_layer(nlp).attrs["templates"].source
