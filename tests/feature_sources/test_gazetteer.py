"""Gazetteers as a feature source: phrases with whitespace tokens match the
text they are written as (as spaCy's ``PhraseMatcher`` does), and a file that
is not UTF-8 or a ``gazetteer_ruler`` that is no ruler get E125, not a
traceback of Python's."""

import pytest
import spacy
from spacy.matcher import PhraseMatcher
from spacy.training import Example

from conftest import featurize_layer
from spacy_crf.feature_sources.gazetteer import phrase_tokens

TEMPLATES = {"@architectures": "spacy-crf.FeatureCRF.v2",
             "templates": ["NORM[-1..1]", "GAZETTEER[-1..1]"]}
TEXT = "I live in São\u00a0Paulo and New  York ."


def ents_nlp(init, before=()):
    nlp = spacy.blank("en")
    for name in before:
        nlp.add_pipe(name)
    nlp.add_pipe("crf_tagger", config={"target": "ents", "model": TEMPLATES})
    nlp.config["initialize"]["components"]["crf_tagger"] = init
    return nlp


def initialize(nlp):
    doc = nlp.make_doc("Paris is nice")
    nlp.initialize(lambda: [Example.from_dict(doc, {"entities": ["U-GPE", "O", "O"]})])


def matched(nlp, text):
    """The tokens of ``text`` at which some list matches."""
    doc = nlp.make_doc(text)
    source = featurize_layer(nlp).attrs["crf_lexicon"]["gazetteer"]
    return [t.text for t, value in zip(doc, source.gazetteer.column([doc])) if value]


def test_phrases_with_a_no_break_space_or_two_spaces_match_as_the_phrase_matcher_does(tmp_path):
    phrases = ["São\u00a0Paulo", "New  York"]
    path = tmp_path / "gaz.tsv"
    path.write_text("".join(f"CITY\t{p}\n" for p in phrases), encoding="utf8")
    nlp = ents_nlp({"gazetteer": str(path)})
    initialize(nlp)
    reference = PhraseMatcher(nlp.vocab, attr="LOWER")
    reference.add("CITY", [nlp.make_doc(p) for p in phrases])
    doc = nlp.make_doc(TEXT)
    want = [t.text for _, a, b in reference(doc) for t in doc[a:b]]
    assert matched(nlp, TEXT) == want == ["São", "\u00a0", "Paulo", "New", " ", "York"]


def test_whitespace_at_a_phrases_edges_is_left_out():
    make_doc = spacy.blank("en").make_doc
    assert phrase_tokens([("X", " New  York "), ("Y", "  "), ("Z", "Paris")], make_doc) == [
        ("X", ("New", " ", "York")), ("Z", ("Paris",))]


def test_a_gazetteer_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("CITY\tParis\nCITY\tcafé\n".encode("latin-1"))
    nlp = ents_nlp({"gazetteer": str(path)})
    with pytest.raises(ValueError, match=r"^\[CRF-E125\].*latin1.tsv, line 2 is not UTF-8"):
        initialize(nlp)


def test_a_gazetteer_ruler_that_is_no_ruler_is_named():
    nlp = ents_nlp({"gazetteer_ruler": "ner"}, before=["ner"])
    with pytest.raises(ValueError, match=r"^\[CRF-E125\].*gazetteer_ruler = 'ner' names a "
                                         r"component of factory 'ner'.*entity_ruler"):
        initialize(nlp)


def test_a_span_ruler_gives_its_phrases():
    nlp = ents_nlp({"gazetteer_ruler": "span_ruler"}, before=["span_ruler"])
    # (a ruler's initialize sets its patterns anew: those of its own initialize block)
    nlp.config["initialize"]["components"]["span_ruler"] = {
        "patterns": [{"label": "CITY", "pattern": "New York"}]}
    initialize(nlp)
    assert matched(nlp, "to New York now") == ["New", "York"]
