"""A crf_tagger sourced under another name (``add_pipe(..., source=nlp1,
name=...)``) stores its confidences and n-best lists under that name at once,
so two components trained under the default name keep their values apart;
after ``nlp.rename_pipe``, setting the component's name does the same."""

import pytest
import spacy
from spacy.tokens import Doc, Token
from spacy.training import Example

from conftest import FROM_INITIALIZE, make_nlp, train

WORDS = ["the", "cat", "sat", "."]


def trained(target, annotations):
    nlp = make_nlp(target, store_confidence=True, n_best=2)  # named crf_tagger
    examples = [Example.from_dict(Doc(nlp.vocab, words=WORDS), annotations)] * 4
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    return nlp


def confidences(doc, name):
    return [token._.get(f"{name}_confidence") for token in doc]


def test_two_components_sourced_under_new_names_keep_their_values_apart(tmp_path):
    tags = trained("tag", {"tags": ["DT", "NN", "VBD", "."]})
    pos = trained("pos", {"pos": ["DET", "NOUN", "VERB", "PUNCT"]})
    alone = {name: confidences(src(Doc(src.vocab, words=WORDS)), "crf_tagger")
             for name, src in (("tags", tags), ("upos", pos))}
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", source=tags, name="tags")
    nlp.add_pipe("crf_tagger", source=pos, name="upos")
    assert nlp.get_pipe("upos").name == "upos"
    doc = nlp(Doc(nlp.vocab, words=WORDS))
    assert Token.has_extension("upos_confidence") and Token.has_extension("tags_confidence")
    assert confidences(doc, "tags") == alone["tags"]
    assert confidences(doc, "upos") == alone["upos"]
    assert len(doc._.upos_nbest[0]) == 2
    with pytest.raises(ValueError, match="E191"):  # two stored: the shared name is ambiguous
        doc[0]._.crf_confidence
    nlp.to_disk(tmp_path / "p")
    again = spacy.load(tmp_path / "p")(Doc(nlp.vocab, words=WORDS))
    assert confidences(again, "upos") == alone["upos"]


def test_after_rename_pipe_setting_the_name_moves_the_values():
    nlp = trained("tag", {"tags": ["DT", "NN", "VBD", "."]})
    before = confidences(nlp(Doc(nlp.vocab, words=WORDS)), "crf_tagger")
    nlp.rename_pipe("crf_tagger", "tagger2")
    nlp.get_pipe("tagger2").name = "tagger2"
    doc = nlp(Doc(nlp.vocab, words=WORDS))
    assert confidences(doc, "tagger2") == before
    assert confidences(doc, "crf_tagger") == [None] * len(WORDS)


def test_a_sourced_component_keeps_its_targets_meta(tmp_path):
    """spaCy gives a sourced component its factory's meta (the tag target's
    score weights, which would weigh in choosing model-best); the component's
    own meta is declared as it is sourced, by add_pipe or by a config."""
    pos = trained("pos", {"pos": ["DET", "NOUN", "VERB", "PUNCT"]})
    pos.to_disk(tmp_path / "pos")
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", source=pos, name="upos")
    nlp.add_pipe("crf_tagger", name="lemmas", config={"target": "lemma"})
    assert nlp.get_pipe_meta("upos").default_score_weights == {"pos_acc": 1.0}
    assert "token.pos" in nlp.get_pipe_meta("upos").assigns
    assert "token.tag" not in nlp.get_pipe_meta("upos").assigns
    assert dict(nlp.config["training"]["score_weights"]) == {"pos_acc": 0.5, "lemma_acc": 0.5}

    config = spacy.util.load_config_from_str(f"""
[nlp]
lang = "en"
pipeline = ["upos"]

[components]

[components.upos]
source = "{tmp_path / 'pos'}"
component = "crf_tagger"
""")
    loaded = spacy.util.load_model_from_config(config, auto_fill=True)
    assert loaded.get_pipe_meta("upos").default_score_weights == {"pos_acc": 1.0}
    assert dict(loaded.config["training"]["score_weights"]) == {"pos_acc": 1.0}
    doc = loaded(Doc(loaded.vocab, words=WORDS))
    assert [t.pos_ for t in doc] == [t.pos_ for t in pos(Doc(pos.vocab, words=WORDS))]


def test_a_component_sourced_under_a_name_that_reads_as_anothers_is_refused():
    tags = trained("tag", {"tags": ["DT", "NN", "VBD", "."]})
    pos = trained("pos", {"pos": ["DET", "NOUN", "VERB", "PUNCT"]})
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", source=tags, name="my-tags")
    with pytest.raises(ValueError, match=r"\[CRF-E190\]"):  # my_tags: one place for both
        nlp.add_pipe("crf_tagger", source=pos, name="my_tags")
    assert pos.get_pipe("crf_tagger").name == "crf_tagger"  # the source's is left as it was


def test_sourcing_under_the_name_of_another_component_of_its_pipeline_warns(tmp_path):
    """spaCy puts the one object in both pipelines: sourced under the name of
    another crf_tagger of the pipeline it comes from, the two store in one
    place there (W050); under any other name, no warning (its values move
    with its name, as the docs say), and a copy keeps the source as it was."""
    import copy
    import warnings

    tags = trained("tag", {"tags": ["DT", "NN", "VBD", "."]})
    tags.add_pipe("crf_tagger", name="upos", source=trained(
        "pos", {"pos": ["DET", "NOUN", "VERB", "PUNCT"]}))
    source = copy.deepcopy(tags)
    before = confidences(source(Doc(source.vocab, words=WORDS)), "upos")
    with pytest.warns(UserWarning, match=r"W050.*'crf_tagger'.*as 'upos'.*crf_tagger 'upos'"):
        spacy.blank("en").add_pipe("crf_tagger", name="upos", source=tags)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spacy.blank("en").add_pipe("crf_tagger", name="tags2", source=copy.deepcopy(source))
    assert confidences(source(Doc(source.vocab, words=WORDS)), "upos") == before
    # a config that sources it: spaCy loads the pipeline it comes from itself and
    # drops it, so no one uses that pipeline after: no warning
    from thinc.api import Config

    source.to_disk(tmp_path / "source")
    config = Config({"nlp": {"lang": "en", "pipeline": ["upos"]},
                     "components": {"upos": {"source": str(tmp_path / "source"),
                                             "component": "crf_tagger"}}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        built = spacy.util.load_model_from_config(config, auto_fill=True)
    assert built.get_pipe("upos").name == "upos"
