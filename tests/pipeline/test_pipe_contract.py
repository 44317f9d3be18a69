"""crf_tagger keeps the contract of spaCy's own ``tagger`` and ``ner`` (issue 35)
and loads only what it can run (issue 29 item 6).

Written from what spaCy's tests of its pipes expect of a user's view (entities
of an entity_ruler survive the ner, an untrained ner predicts nothing, ...);
where crf_tagger deliberately differs, the table in docs/component.md says so.
"""

import logging
import tracemalloc
import warnings
from typing import List, Tuple

import numpy as np
import pytest
import spacy
import srsly
from spacy.lookups import Lookups
from spacy.tokens import Doc, Span
from spacy.training import Example
from thinc.api import Adam

from spacy_crf.models import hashed_linear
from spacy_crf.models.serialize import KEY, model_from_bytes, model_to_bytes
import conftest
from conftest import SPELLING_ONLY, ner_examples, semi_markov, train

MODEL = {
    "@architectures": "spacy-crf.FeatureCRF.v2",
    "templates": ["NORM[-1..1]", "NORM[-1]|NORM[0]", "SUFFIX2", "PREFIX1", "IS_TITLE[-1..1]"],
    "n_buckets": 4096,
    **SPELLING_ONLY,
}
TOY_TAGS = [("the cat sat", ["DT", "NN", "VBD"]), ("a dog ran home", ["DT", "NN", "VBD", "RB"])]


def make_nlp(target: str = "ents", model=MODEL, **config) -> spacy.Language:
    return conftest.make_nlp(target, model, **config)


def tag_examples(nlp: spacy.Language) -> List[Example]:
    return [Example.from_dict(nlp.make_doc(text), {"tags": tags}) for text, tags in TOY_TAGS]


def trained(target: str = "ents", n_iter: int = 30, **config) -> spacy.Language:
    nlp = make_nlp(target, **config)
    train(nlp, ner_examples(nlp) if target == "ents" else tag_examples(nlp), n_iter)
    return nlp


def ents_of(doc: Doc) -> List[Tuple[str, str]]:
    return [(ent.text, ent.label_) for ent in doc.ents]


def weights(nlp: spacy.Language) -> np.ndarray:
    node = next(n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "crf_hashed_linear")
    return node.get_param("W").copy()


def caught(fn) -> List[str]:
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in found]


# -- 35.1: entities already on the doc ---------------------------------------------


def test_entities_of_a_ruler_before_are_kept_by_default_as_spacys_ner_keeps_them():
    nlp = trained()
    assert nlp.get_pipe("crf_tagger").keep_existing
    assert nlp.config["components"]["crf_tagger"]["keep_existing"] is None
    ruler = nlp.add_pipe("entity_ruler", before="crf_tagger")
    ruler.add_patterns([{"label": "THING", "pattern": "Alice"}])
    doc = nlp("Alice met Bob in Paris .")
    assert ("Alice", "THING") in ents_of(doc)
    assert ("Paris", "LOC") in ents_of(doc)  # the CRF fills in around it


def test_kept_entities_keep_their_kb_id():
    nlp = trained()
    doc = nlp.make_doc("Alice met Bob in Paris .")
    doc.set_ents([Span(doc, 0, 1, label="PER", kb_id="Q1"), Span(doc, 4, 5, label="LOC", kb_id="Q90")])
    doc = nlp.get_pipe("crf_tagger")(doc)
    assert [(e.text, e.label_, e.kb_id_) for e in doc.ents if e.kb_id_] == [
        ("Alice", "PER", "Q1"), ("Paris", "LOC", "Q90")]


def test_blocked_tokens_stay_out_of_every_entity():
    nlp = trained()
    free = nlp("Alice met Bob in Paris .")
    assert ("Paris", "LOC") in ents_of(free)
    doc = nlp.make_doc("Alice met Bob in Paris .")
    doc.set_ents([], blocked=[doc[4:5]], default="unmodified")
    doc = nlp.get_pipe("crf_tagger")(doc)
    assert "Paris" not in [e.text for e in doc.ents]
    assert (doc[4].ent_iob_, doc[4].ent_type_) == ("B", "")  # still blocked, as spaCy's ner leaves it


def test_tags_are_kept_by_default_as_spacys_tagger_keeps_them():
    """spaCy's tagger keeps a tag already there (``overwrite = false``), and so
    does the tag target by default; ``keep_existing = false`` overwrites."""
    assert spacy.blank("en").add_pipe("tagger").cfg["overwrite"] is False
    nlp = trained("tag")
    assert nlp.get_pipe("crf_tagger").keep_existing
    doc = nlp.make_doc("the cat sat")
    doc[1].tag_ = "XX"
    assert nlp.get_pipe("crf_tagger")(doc)[1].tag_ == "XX"
    nlp.get_pipe("crf_tagger").cfg["keep_existing"] = False
    doc = nlp.make_doc("the cat sat")
    doc[1].tag_ = "XX"
    assert nlp.get_pipe("crf_tagger")(doc)[1].tag_ == "NN"


# -- 35.2: gold aligned as Example.get_aligned_ner does ----------------------------


@pytest.mark.parametrize("pred_words,spaces,ref_words,ents", [
    (["I", "saw", "New", "Yo", "rk", "."], [True, True, True, False, True, False],
     ["I", "saw", "New", "York", "."], [(2, 4, "LOC")]),  # a reference token split in two
    (["I", "saw", "New York", "."], [True, True, True, False],
     ["I", "saw", "New", "York", "."], [(2, 4, "LOC")]),  # two reference tokens merged
    (["I", "saw", "Paris", "."], [True, True, True, False],
     ["I", "saw", "Par", "is", "."], [(2, 4, "LOC")]),
])
def test_gold_entities_are_aligned_as_get_aligned_ner(pred_words, spaces, ref_words, ents):
    nlp = make_nlp()
    nlp.initialize(lambda: ner_examples(nlp))
    pipe = nlp.get_pipe("crf_tagger")
    pred = Doc(nlp.vocab, words=pred_words, spaces=spaces)
    ref = Doc(nlp.vocab, words=ref_words, spaces=_spaces_for(pred, ref_words))
    ref.set_ents([Span(ref, a, b, label=k) for a, b, k in ents], default="outside")
    eg = Example(pred, ref)
    expected = eg.get_aligned_ner()
    got = [pipe.tags[i] if i >= 0 else None for i in pipe.target.gold_ids(eg)]
    assert got == expected
    assert None not in expected and any(tag != "O" for tag in expected)


def test_gold_tags_are_aligned_as_get_aligned():
    """Tags were aligned as Example.get_aligned("TAG") already (a guard): a split
    reference token gives its tag to both halves, a merged pair none."""
    nlp = make_nlp("tag")
    nlp.initialize(lambda: tag_examples(nlp))
    pipe = nlp.get_pipe("crf_tagger")
    for pred_words, spaces in ((["the", "ca", "t", "sat"], [True, False, True, False]),
                               (["the cat", "sat"], [True, False])):
        pred = Doc(nlp.vocab, words=pred_words, spaces=spaces)
        ref = Doc(nlp.vocab, words=["the", "cat", "sat"], tags=["DT", "NN", "VBD"])
        eg = Example(pred, ref)
        got = [pipe.tags[i] if i >= 0 else None for i in pipe.target.gold_ids(eg)]
        assert got == eg.get_aligned("TAG", as_string=True)


def _spaces_for(pred: Doc, words: List[str]) -> List[bool]:
    """Spaces that give ``words`` the text of ``pred``."""
    text, spaces, at = pred.text, [], 0
    for word in words:
        at = text.index(word, at) + len(word)
        spaces.append(at < len(text) and text[at] == " ")
    return spaces


# -- 35.3: an entity type not seen at initialize, negative annotations -------------


def test_an_entity_type_first_seen_in_an_update_is_added_and_learned_as_spacys_ner():
    nlp = make_nlp()
    nlp.initialize(lambda: ner_examples(nlp))
    pipe = nlp.get_pipe("crf_tagger")
    labels = pipe.tags
    # ORG is a spaCy symbol; DISEASE's hash fills all 64 bits (it was a KeyError, E018)
    ref = Doc(nlp.vocab, words=["Acme", "cured", "flu", "."])
    ref.set_ents([Span(ref, 0, 1, label="ORG"), Span(ref, 2, 3, label="DISEASE")],
                 default="outside")
    eg = Example(Doc(nlp.vocab, words=[t.text for t in ref]), ref)
    optimizer = Adam(0.1)
    losses = {}
    assert not [m for m in caught(lambda: nlp.update([eg], sgd=optimizer, losses=losses))
                if "[CRF-W001]" in m]
    assert np.isfinite(losses["crf_tagger"])
    assert pipe.tags[:len(labels)] == labels  # appended, every old label in place
    assert set(pipe.tags[len(labels):]) == {f"{p}-{t}" for p in "BILU" for t in ("ORG", "DISEASE")}
    assert pipe.cfg["unseen_labels"] == []  # learned from this update on
    for _ in range(20):
        nlp.update([eg] + ner_examples(nlp), sgd=optimizer)
    assert ents_of(nlp("Acme cured flu .")) == [("Acme", "ORG"), ("flu", "DISEASE")]
    assert ("Paris", "LOC") in ents_of(nlp("Alice met Bob in Paris ."))


def test_an_entity_model_initialized_without_examples_learns_its_types_from_updates():
    nlp = make_nlp()
    caught(nlp.initialize)  # (W016: no types yet)
    train(nlp, ner_examples(nlp), 20, initialize=False)
    assert {"U-PER", "B-LOC"} <= set(nlp.get_pipe("crf_tagger").tags)
    assert ("Paris", "LOC") in ents_of(nlp("Alice met Bob in Paris ."))


def test_a_model_that_learns_from_counts_warns_w001_for_a_new_entity_type():
    nlp = make_nlp(model={"@architectures": "spacy-crf.HMM.v1", "n_buckets": 1024})
    nlp.initialize(lambda: ner_examples(nlp))
    labels = nlp.get_pipe("crf_tagger").tags
    ref = Doc(nlp.vocab, words=["Acme", "cured", "flu", "."])
    ref.set_ents([Span(ref, 2, 3, label="DISEASE")], default="outside")
    eg = Example(Doc(nlp.vocab, words=[t.text for t in ref]), ref)
    messages = caught(lambda: nlp.update([eg]))
    assert any("[CRF-W001]" in m and "'DISEASE'" in m for m in messages), messages
    assert nlp.get_pipe("crf_tagger").tags == labels


def test_a_negative_tag_warns_that_it_is_treated_as_unannotated():
    nlp = make_nlp("tag")
    nlp.initialize(lambda: tag_examples(nlp))
    words = ["Alice", "met", "Bob", "."]
    ref = Doc(nlp.vocab, words=words)
    for token, tag in zip(ref, ["!NN", "VBD", "NN", "."]):
        token.tag_ = tag
    messages = caught(lambda: nlp.update([Example(Doc(nlp.vocab, words=words), ref)]))
    assert any("[CRF-W015]" in m and "not " in m and "unannotated" in m for m in messages), messages


@pytest.mark.parametrize("label", ["!PER", "!PERSON"])  # "!PERSON"'s hash fills all 64 bits
def test_a_negative_entity_is_a_value_error_as_in_spacys_ner(label):
    """spaCy's test_train_negative_deprecated: the "!PERSON" notation is refused."""
    nlp = make_nlp()
    nlp.get_pipe("crf_tagger").add_label("PERSON")
    optimizer = nlp.initialize()
    example = Example.from_dict(nlp.make_doc("Who is Shaka Khan?"),
                                {"entities": [(7, 17, label)]})
    for _ in range(2):
        with pytest.raises(ValueError, match=rf"\[CRF-E185\] '{label}' \(target 'ents'\) is a negative"):
            nlp.update([example], sgd=optimizer)


def test_a_negative_entity_label_is_refused_by_add_label_and_initialize():
    nlp = make_nlp()
    pipe = nlp.get_pipe("crf_tagger")
    for label in ("!PERSON", "U-!PERSON"):
        with pytest.raises(ValueError, match=r"\[CRF-E185\] '!PERSON'"):
            pipe.add_label(label)
    assert pipe.labels == ()
    with pytest.raises(ValueError, match=r"\[CRF-E185\] '!PER'"):
        pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, labels=["O", "U-PER", "U-!PER"])
    nlp.initialize(lambda: ner_examples(nlp))  # trained: add_label would grow the model
    labels = pipe.labels
    with pytest.raises(ValueError, match=r"\[CRF-E185\]"):
        pipe.add_label("!PERSON")
    assert pipe.labels == labels


# -- 35.5: an untrained entity model predicts nothing ------------------------------


def test_an_initialized_untrained_entity_model_predicts_no_entities():
    nlp = make_nlp()
    nlp.initialize(lambda: ner_examples(nlp))
    assert nlp.get_pipe("crf_tagger").tags[0] == "O"
    doc = nlp("Alice met Bob in Paris .")
    assert [t.ent_iob_ for t in doc] == ["O"] * len(doc)


def test_a_label_set_without_o_gets_o():
    nlp = make_nlp()
    nlp.get_pipe("crf_tagger").initialize(lambda: ner_examples(nlp), nlp=nlp,
                                          labels=["B-PER", "I-PER", "L-PER", "U-PER"])
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.tags == ("O", "B-PER", "I-PER", "L-PER", "U-PER")
    assert [t.ent_iob_ for t in nlp("Alice met Bob .")] == ["O"] * 4


# -- 35.6: initialize without examples -------------------------------------------------


def test_an_entity_target_initializes_without_examples_and_predicts_nothing():
    nlp = make_nlp()
    messages = caught(nlp.initialize)
    assert any("[CRF-W016]" in m and "labels" in m for m in messages), messages
    assert nlp.get_pipe("crf_tagger").tags == ("O",)
    assert nlp.get_pipe("crf_tagger").labels == ()  # no type, as spaCy's empty ner
    assert not nlp("Alice met Bob in Paris .").ents
    # a ruler's entities go through
    nlp.add_pipe("entity_ruler", before="crf_tagger").add_patterns([{"label": "PER", "pattern": "Bob"}])
    assert ents_of(nlp("Alice met Bob .")) == [("Bob", "PER")]


def test_an_entity_target_with_labels_initializes_without_examples():
    nlp = make_nlp()
    nlp.get_pipe("crf_tagger").add_label("U-PER")
    nlp.initialize()
    assert nlp.get_pipe("crf_tagger").tags == ("O", "U-PER")


# -- 49.5: a span target's labels are its types (spaCy's tests of ner's labels) ----


def test_pipe_labels():
    """spaCy's test_pipe_labels (pipeline/test_pipe_methods.py), its ner a crf_tagger."""
    nlp = spacy.blank("en")
    input_labels = {"crf_tagger": ["PERSON", "ORG", "GPE"], "textcat": ["POSITIVE", "NEGATIVE"]}
    nlp.add_pipe("crf_tagger", config={"model": dict(MODEL), "target": "ents"})
    nlp.add_pipe("textcat")
    for name, labels in input_labels.items():
        pipe = nlp.get_pipe(name)
        for label in labels:
            pipe.add_label(label)
        assert len(pipe.labels) == len(labels)
    assert len(nlp.pipe_labels) == len(input_labels)
    for name, labels in nlp.pipe_labels.items():
        assert sorted(input_labels[name]) == sorted(labels)


@pytest.mark.parametrize("target", ["ents", "spans:sc"])
def test_pipe_base_class_add_label(target):
    """spaCy's test_pipe_base_class_add_label[ner] (pipeline/test_pipe_methods.py)."""
    pipe = make_nlp(target).get_pipe("crf_tagger")
    pipe.add_label("TEST")
    assert pipe.labels == ("TEST",)


@pytest.mark.parametrize("scheme,n_moves", [("BILUO", 4), ("BIO", 2)])
def test_add_label_get_label(scheme, n_moves):
    """spaCy's test_add_label_get_label[EntityRecognizer] (parser/test_add_label.py):
    the tags (ner's move_names) hold every tag of each type, ``labels`` the types."""
    labels = ["A", "B", "C"]
    pipe = make_nlp(scheme=scheme).get_pipe("crf_tagger")
    for label in labels:
        pipe.add_label(label)
    assert len(pipe.tags) == len(labels) * n_moves
    assert sorted(pipe.labels) == labels


def test_labels_from_BILUO():
    """spaCy's test_labels_from_BILUO (parser/test_ner.py): a type with a "-"."""
    nlp = make_nlp()
    ner = nlp.get_pipe("crf_tagger")
    ner.add_label("LARGE-ANIMAL")
    nlp.initialize()
    assert ner.tags == ("O", "B-LARGE-ANIMAL", "I-LARGE-ANIMAL", "L-LARGE-ANIMAL",
                        "U-LARGE-ANIMAL")
    assert set(ner.labels) == {"LARGE-ANIMAL"}


def test_a_trained_entity_model_gives_types_to_labels_meta_and_pipe_labels():
    nlp = trained()
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.labels == ("LOC", "PER") and pipe.label_data == ["LOC", "PER"]
    assert pipe.tags[0] == "O" and len(pipe.tags) == 9
    assert nlp.pipe_labels == {"crf_tagger": ["LOC", "PER"]}
    assert nlp.meta["labels"]["crf_tagger"] == ["LOC", "PER"]


# -- 35.7: serialization honours exclude; an uninitialized component round-trips ----


def test_to_bytes_and_from_bytes_honour_exclude():
    nlp = trained()
    pipe = nlp.get_pipe("crf_tagger")
    assert srsly.msgpack_loads(pipe.to_bytes(exclude=["cfg", "model"])) == {}
    assert set(srsly.msgpack_loads(pipe.to_bytes(exclude=["model"]))) == {"cfg"}
    fresh = make_nlp().get_pipe("crf_tagger")
    fresh.from_bytes(pipe.to_bytes(), exclude=["model", "cfg"])
    assert fresh.labels == ()  # nothing read
    fresh.from_bytes(pipe.to_bytes())
    before = fresh.to_bytes()
    fresh.from_bytes(make_nlp().get_pipe("crf_tagger").to_bytes(), exclude=["cfg", "model"])
    assert fresh.to_bytes() == before


@pytest.mark.parametrize("how", ["bytes", "disk"])
def test_weights_saved_without_cfg_load_into_a_component_whose_cfg_fits(how, tmp_path):
    """spaCy's test_serialize_pipe_exclude: data saved with exclude=["cfg"] loads
    into a component whose own cfg its weights fit (E186 where they do not)."""
    nlp = trained()
    pipe = nlp.get_pipe("crf_tagger")
    text = "Alice met Bob in Paris ."
    expected = pipe.predict([nlp.make_doc(text)])
    other = trained(n_iter=1)  # the same labels, other weights
    twin = other.get_pipe("crf_tagger")
    assert not np.array_equal(weights(other), weights(nlp))

    def load(into):
        if how == "bytes":
            return into.from_bytes(pipe.to_bytes(exclude=["cfg"]))
        pipe.to_disk(tmp_path / "c", exclude=["cfg"])
        return into.from_disk(tmp_path / "c")

    load(twin)
    assert np.array_equal(weights(other), weights(nlp))
    assert np.array_equal(twin.predict([other.make_doc(text)]).label_ids, expected.label_ids)
    fresh = make_nlp().get_pipe("crf_tagger")  # no labels: the weights do not fit
    with pytest.raises(ValueError, match=r"\[CRF-E186\].*without a cfg.*0 labels.*hold 9 labels"):
        load(fresh)
    assert fresh.labels == ()


def test_to_disk_and_from_disk_honour_exclude(tmp_path):
    pipe = trained().get_pipe("crf_tagger")
    pipe.to_disk(tmp_path / "c", exclude=["model"])
    assert (tmp_path / "c" / "cfg").exists() and not (tmp_path / "c" / "model").exists()
    pipe.to_disk(tmp_path / "d")
    fresh = make_nlp().get_pipe("crf_tagger")
    fresh.from_disk(tmp_path / "d", exclude=["cfg", "model"])
    assert fresh.labels == ()


def test_an_uninitialized_component_round_trips_byte_identically(tmp_path):
    nlp = make_nlp()
    data = nlp.get_pipe("crf_tagger").to_bytes()
    other = make_nlp().get_pipe("crf_tagger")
    other.from_bytes(data)
    assert other.to_bytes() == data
    nlp.to_disk(tmp_path / "p")
    assert spacy.load(tmp_path / "p").get_pipe("crf_tagger").to_bytes() == data


# -- 35.8: bad get_examples ------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    lambda nlp: (lambda: []),
    lambda nlp: (lambda: ner_examples(nlp)[0]),
    lambda nlp: (lambda: [("Alice met Bob", {"entities": []})]),
    lambda nlp: ner_examples(nlp),
    lambda nlp: None,
], ids=["empty", "bare_example", "tuples", "a_list", "none"])
def test_bad_get_examples_is_a_type_error_naming_the_component(bad):
    nlp = make_nlp()
    pipe = nlp.get_pipe("crf_tagger")
    with pytest.raises(TypeError, match=r"\[CRF-E160\] 'crf_tagger'\.initialize\(\) needs get_examples"):
        pipe.initialize(bad(nlp), nlp=nlp)


# -- 35.4: rehearse ----------------------------------------------------------------------


def test_rehearse_without_resume_training_changes_nothing():
    nlp = trained()
    before = weights(nlp)
    losses = nlp.get_pipe("crf_tagger").rehearse(ner_examples(nlp), sgd=Adam(0.1))
    assert losses == {"crf_tagger": 0.0}
    assert np.array_equal(weights(nlp), before)


@pytest.mark.parametrize("through_nlp", [False, True])
def test_rehearse_trains_toward_the_models_own_earlier_predictions(through_nlp):
    nlp = make_nlp()
    examples = ner_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.1)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    texts = ["Alice met Bob in Paris .", "Carol Smith visited New York City yesterday ."]
    expected = [ents_of(nlp(text)) for text in texts]
    nlp.resume_training(sgd=optimizer)  # the teacher: a copy of the model as it is
    raw = [Example(nlp.make_doc(text), nlp.make_doc(text)) for text in texts]
    before = weights(nlp)
    for _ in range(3):
        if through_nlp:  # nlp.rehearse hands the component a gradient collector
            losses = nlp.rehearse(raw, sgd=optimizer)
        else:
            losses = nlp.get_pipe("crf_tagger").rehearse(raw, sgd=optimizer)
        assert losses["crf_tagger"] > 0 and np.isfinite(losses["crf_tagger"])
    assert not np.array_equal(weights(nlp), before)
    assert [ents_of(nlp(text)) for text in texts] == expected  # toward its own labels
    # rehearsal and ordinary updates share the optimizer without a clash
    losses = {}
    nlp.update(examples, sgd=optimizer, losses=losses)
    assert np.isfinite(losses["crf_tagger"])


def test_nlp_rehearse_steps_the_averages_the_model_predicts_with():
    """With the component's own averages (average_weights, an optimizer
    without use_averages, as spaCy's default), nlp.rehearse's collector steps
    the weights after the component returns: the averages that predict and
    are saved take that step as one of their moving average, as an update's
    step. They never moved: predictions and saved weights stayed as they were."""
    nlp = make_nlp(model={**MODEL, "average_weights": True})
    examples = ner_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.1, use_averages=False)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    nlp.resume_training(sgd=optimizer)
    raw = [Example(nlp.make_doc(t), nlp.make_doc(t)) for t in ["Alice met Bob in Paris ."]]
    pipe = nlp.get_pipe("crf_tagger")

    def params():
        return {(node.id, name): node.get_param(name).copy() for node in pipe.model.walk()
                for name in node.param_names if node.has_param(name)}

    pipe.use_prediction_weights()
    averages = params()
    nlp.rehearse(raw, sgd=optimizer)
    rehearsed = params()  # the iterate, stepped by the collector (updates train the iterate)
    pipe.use_prediction_weights()
    decay = (1.0 + 6) / (10.0 + 6)  # thinc's, at the sixth step of the average
    moved = 0
    for key, after in params().items():
        expected = averages[key] + (1.0 - decay) * (rehearsed[key] - averages[key])
        np.testing.assert_allclose(after, expected, rtol=1e-5, atol=1e-6)
        moved += not np.array_equal(after, averages[key])
    assert moved >= 2  # the hashed table and the transitions


@pytest.mark.parametrize("rehearse_first", [False, True])
def test_rehearse_after_add_label_with_the_pipelines_optimizer(rehearse_first):
    """spaCy's test_rehearse: labels added to a trained model, then
    nlp.resume_training(), which keeps the optimizer of nlp.initialize() (its
    moments of the layers before they grew), and nlp.rehearse."""
    nlp = make_nlp()
    examples = ner_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    pipe = nlp.get_pipe("crf_tagger")
    text = "Alice met Bob in Paris ."
    raw = [Example(nlp.make_doc(text), nlp.make_doc(text))]
    if rehearse_first:  # moments under the rehearsal's own keys too
        nlp.resume_training()
        nlp.rehearse(raw)
    n_labels = len(pipe.tags)
    pipe.add_label("UTENSIL")
    assert len(pipe.tags) == n_labels + 4
    assert nlp.resume_training() is optimizer
    for _ in range(3):
        losses = nlp.rehearse(raw)
        assert np.isfinite(losses["crf_tagger"])
    losses = {}
    nlp.update(examples, sgd=optimizer, losses=losses)
    assert np.isfinite(losses["crf_tagger"])


# -- 35.9: no lexeme_norm table -------------------------------------------------------


def test_missing_lexeme_norms_are_logged_as_spacys_w033(caplog):
    nlp = make_nlp()
    nlp.vocab.lookups = Lookups()
    with caplog.at_level(logging.DEBUG):
        nlp.initialize(lambda: ner_examples(nlp))
    assert "W017" in caplog.text and "lexeme_norm" in caplog.text
    caplog.clear()
    nlp.vocab.lookups.add_table("lexeme_norm", {"a": "a"})
    with caplog.at_level(logging.DEBUG):
        nlp.initialize(lambda: ner_examples(nlp))
    assert "W017" not in caplog.text


# -- 35.10: the table size bound -------------------------------------------------------


def test_a_table_above_the_bound_is_refused_before_allocating(monkeypatch):
    monkeypatch.setenv("SPACY_CRF_MAX_TABLE_BYTES", str(2 ** 20))
    nlp = make_nlp(model={**MODEL, "n_buckets": 2 ** 20})
    with pytest.raises(ValueError, match=r"\[CRF-E161\].*n_buckets = 16384"):
        nlp.initialize(lambda: ner_examples(nlp))  # 2^20 x 13 labels x 4 bytes
    assert hashed_linear.MAX_TABLE_BYTES == 4 * 1024 ** 3
    monkeypatch.delenv("SPACY_CRF_MAX_TABLE_BYTES")
    nlp.initialize(lambda: ner_examples(nlp))


def test_a_segment_length_above_the_bound_is_refused_by_the_factory():
    with pytest.raises(ValueError, match=r"\[CRF-E166\].*up to 100"):
        make_nlp(structure=semi_markov(10 ** 6))
    make_nlp(structure=semi_markov(100))


# -- 29.6: loading ---------------------------------------------------------------------


@pytest.mark.parametrize("setting,value", [
    ("store_confidence", False), ("n_best", 0), ("keep_existing", False), ("sequence", "sentence"),
    ("loss", "perceptron")])
def test_runtime_overrides_given_to_spacy_load_are_honoured(tmp_path, setting, value):
    nlp = trained(store_confidence=True, n_best=2, keep_existing=True, sequence="doc")
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components": {"crf_tagger": {setting: value}}})
    pipe = loaded.get_pipe("crf_tagger")
    assert loaded.config["components"]["crf_tagger"][setting] == value
    assert pipe.cfg[setting] == value
    doc = loaded.make_doc("Alice met Bob in Paris .")
    doc.set_ents([Span(doc, 0, 1, label="LOC")])
    doc = loaded(doc)
    if setting == "store_confidence":
        assert doc[0]._.crf_confidence is None
    elif setting == "n_best":
        assert doc._.crf_nbest is None
    elif setting == "keep_existing":
        assert ("Alice", "LOC") not in ents_of(doc)
    elif setting == "loss":  # training goes on with it (the weights mean the same)
        losses = loaded.update(ner_examples(loaded))
        assert losses["crf_tagger"] >= 0.0


@pytest.mark.parametrize("setting,value", [("target", "_.chunk"), ("scheme", "BIO")])
def test_an_override_of_what_the_weights_mean_is_named_and_changes_nothing(tmp_path, setting,
                                                                            value):
    """E252 names the setting, the saved value and the config's, not a damaged
    directory (E010): the target and a span target's scheme are the weights'."""
    nlp = trained()
    nlp.to_disk(tmp_path / "p")
    with pytest.raises(ValueError, match=rf"\[CRF-E252\].*{setting}.*{value}"):
        spacy.load(tmp_path / "p", config={"components": {"crf_tagger": {setting: value}}})
    pipe = make_nlp(**{setting: value}).get_pipe("crf_tagger")
    cfg = dict(pipe.cfg)
    with pytest.raises(ValueError, match=r"\[CRF-E252\]"):
        pipe.from_disk(tmp_path / "p" / "crf_tagger")
    assert pipe.cfg == cfg


def test_other_feature_templates_at_load_are_named_not_read_in_silence(tmp_path):
    """The templates decide what each weight means: a config (an override, an
    edited config.cfg) that gives others read the weights as other features
    (dev POS 0.77 -> 0.20). E267; the same templates spelled otherwise load."""
    nlp = trained("tag")
    nlp.to_disk(tmp_path / "p")
    templates = list(nlp.config["components"]["crf_tagger"]["model"]["templates"])
    model = {"templates": templates[::-1]}
    with pytest.raises(ValueError, match=r"\[CRF-E267\].*trained with the feature templates"):
        spacy.load(tmp_path / "p", config={"components": {"crf_tagger": {"model": model}}})
    model = {"templates": templates[:1]}
    with pytest.raises(ValueError, match=r"\[CRF-E267\]"):
        spacy.load(tmp_path / "p", config={"components": {"crf_tagger": {"model": model}}})
    model = {"templates": [f" {text.lower()}" for text in templates]}
    loaded = spacy.load(tmp_path / "p", config={"components": {"crf_tagger": {"model": model}}})
    text = "Alice met Bob in Paris ."
    assert [t.tag_ for t in loaded(text)] == [t.tag_ for t in nlp(text)]


def _saved(tmp_path, **cfg_changes):
    nlp = trained()
    nlp.to_disk(tmp_path / "p")
    path = tmp_path / "p" / "crf_tagger" / "cfg"
    srsly.write_json(path, {**srsly.read_json(path), **cfg_changes})
    return nlp, tmp_path / "p" / "crf_tagger"


@pytest.mark.parametrize("change,code", [
    ({"structure": "bogus"}, "E012"), ({"structure": "chain", "order": 7}, "E094"), ({"n_best": -5}, "E019"),
    ({"structure": "semi_markov", "max_segment_length": -3}, "E109"), ({"scheme": "IOB"}, "E060"),
    ({"structure": "semi_markov", "max_segment_length": 10 ** 6}, "E166"),
    ({"labels": [1, 2, 3]}, "E162"), ({"labels": ["O", "BOGUS", "U-PER"]}, "E162"),
    ({"keep_existing": "yes"}, "E163"),
])
def test_bad_saved_values_fail_at_load_and_change_nothing(tmp_path, change, code):
    nlp, path = _saved(tmp_path, **change)
    pipe = nlp.get_pipe("crf_tagger")
    expected = ents_of(nlp("Alice met Bob in Paris ."))
    cfg, model = dict(pipe.cfg), pipe.model
    with pytest.raises(ValueError, match=rf"\[CRF-{code}\]"):
        pipe.from_disk(path)
    assert pipe.cfg == cfg and pipe.model is model
    assert ents_of(nlp("Alice met Bob in Paris .")) == expected


def test_non_finite_weights_are_rejected_at_load():
    pipe = trained().get_pipe("crf_tagger")
    node = next(n for n in pipe.model.walk() if n.name == "crf_potentials")
    transitions = node.get_param("transitions").copy()
    transitions[0, 0] = np.nan
    node.set_param("transitions", transitions)
    data = pipe.to_bytes()
    fresh = make_nlp().get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"\[CRF-E165\].*transitions.*non-finite.*retrain"):
        fresh.from_bytes(data)
    assert fresh.labels == ()


def test_a_sparse_table_taller_than_n_buckets_is_refused_before_allocating():
    pipe = trained().get_pipe("crf_tagger")
    msg = srsly.msgpack_loads(model_to_bytes(pipe.model))
    (entry,) = msg[KEY].values()
    entry["n_rows"] = 2 ** 27  # 6.5 GB of float32 x 13 labels, were it allocated
    data = srsly.msgpack_dumps(msg)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"134217728 rows.*n_buckets is 4096"):
            model_from_bytes(pipe.model, data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 ** 2
