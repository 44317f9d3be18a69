"""Each ``crf_tagger`` declares what its target writes: ``nlp.analyze_pipes()``,
``nlp.get_pipe_meta`` and the default score weights are per component."""

import pickle

import pytest
import spacy
from spacy.language import Language


SMALL_MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM[-1..1]"],
               "n_buckets": 1024}


def _add(nlp, name, target, **config):
    return nlp.add_pipe("crf_tagger", name=name,
                        config={"model": SMALL_MODEL, "target": target, **config})


def test_analyze_pipes_reports_what_each_target_writes():
    nlp = spacy.blank("en")
    _add(nlp, "upos", "pos")
    _add(nlp, "ner", "ents")
    _add(nlp, "np", "spans:np")
    _add(nlp, "chunker", "_.chunk")
    summary = nlp.analyze_pipes()["summary"]
    assert summary["upos"]["assigns"] == ["token.pos"]
    assert summary["ner"]["assigns"] == ["doc.ents", "token.ent_iob", "token.ent_type"]
    assert summary["np"]["assigns"] == ["doc.spans"]
    assert summary["chunker"]["assigns"] == ["token._.chunk"]
    # a component after them that needs entities and POS tags has no problem ...
    Language.component("needs_ents_and_pos", requires=["doc.ents", "token.pos"],
                       func=lambda doc: doc)
    nlp.add_pipe("needs_ents_and_pos")
    assert nlp.analyze_pipes()["problems"]["needs_ents_and_pos"] == []
    # ... one that needs dependency labels has, as no crf_tagger here writes them
    Language.component("needs_dep", requires=["token.dep"], func=lambda doc: doc)
    nlp.add_pipe("needs_dep")
    assert nlp.analyze_pipes()["problems"]["needs_dep"] == ["token.dep"]
    assert nlp.analyze_pipes()["attrs"]["token.pos"]["assigns"] == ["upos"]


def test_confidence_extensions_are_declared_when_they_are_written():
    nlp = spacy.blank("en")
    _add(nlp, "tagger", "tag", store_confidence=True, n_best=2)
    _add(nlp, "ner", "ents", store_confidence=True)
    # each component's own extensions (issue #49): two never name one place
    assert nlp.get_pipe_meta("tagger").assigns == [
        "token.tag", "token._.tagger_confidence", "doc._.tagger_nbest"]
    assert nlp.get_pipe_meta("ner").assigns[-2:] == [
        "token._.ner_confidence", "span._.ner_confidence"]
    assert nlp.get_pipe("ner").assigns == nlp.get_pipe_meta("ner").assigns


def test_the_factory_meta_is_left_alone():
    before = Language.get_factory_meta("crf_tagger")
    nlp = spacy.blank("en")
    _add(nlp, "ner", "ents")
    after = Language.get_factory_meta("crf_tagger")
    assert after is before and "token.pos" in after.assigns and "doc.spans" in after.assigns
    assert after.default_score_weights == {"tag_acc": 1.0}
    assert nlp.get_pipe_meta("ner") is not after
    assert nlp.get_pipe_meta("ner").factory == "crf_tagger"


def test_rename_replace_remove_and_other_factories_under_the_same_name():
    nlp = spacy.blank("en")
    _add(nlp, "a", "pos")
    nlp.rename_pipe("a", "b")
    assert nlp.get_pipe_meta("b").assigns == ["token.pos"]
    nlp.replace_pipe("b", "crf_tagger", config={"model": SMALL_MODEL, "target": "dep"})
    assert nlp.get_pipe_meta("b").assigns == ["token.dep"]
    nlp.remove_pipe("b")
    # a component made but never added leaves nothing behind for another factory's
    nlp.create_pipe("crf_tagger", name="c", config={"model": SMALL_MODEL, "target": "ents"})
    nlp.add_pipe("sentencizer", name="c")
    assert nlp.get_pipe_meta("c").assigns == Language.get_factory_meta("sentencizer").assigns


@pytest.mark.parametrize("target, weights", [
    ("pos", {"pos_acc": 1.0}),
    ("ents", {"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0}),
])
def test_config_and_load_keep_the_components_meta(tmp_path, target, weights):
    nlp = spacy.blank("en")
    crf = _add(nlp, "crf", target)
    assert nlp.config["training"]["score_weights"] == weights
    for label in (["NOUN", "VERB"] if target == "pos" else ["O", "B-PER", "I-PER", "L-PER", "U-PER"]):
        crf.add_label(label)
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe")
    assert loaded.get_pipe_meta("crf").assigns == nlp.get_pipe_meta("crf").assigns
    assert loaded.config["training"]["score_weights"] == weights
    # a pickled pipeline carries the metas as spaCy's plain dict
    again = pickle.loads(pickle.dumps(loaded))
    assert type(again._pipe_meta) is dict
    assert again.get_pipe_meta("crf").assigns == nlp.get_pipe_meta("crf").assigns
