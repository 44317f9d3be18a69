"""A span target's labels are its types, its model's columns the tags (issue #49 item 5).

``labels``, ``label_data`` (``spacy init labels``) and ``nlp.pipe_labels`` give
entity types (``PER``), as spaCy's ``ner`` and ``spancat`` do; ``tags`` gives
the scheme's tags the model scores (``O``, ``B-PER``, ...). Types or tags are
taken wherever labels come in: ``initialize(labels=...)``, ``add_label``, the
file ``spacy init labels`` writes, ``spacy-crf.add_labels.v1``. A pipeline
saved when ``labels`` gave tags (``tests/assets/saved_before_span_types``)
loads and predicts as it did.
"""

import json
import logging
import shutil

import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.training.iob_utils import doc_to_biluo_tags

from spacy_crf.annotation import doc_record
from spacy_crf.training.add_labels import create_add_labels
from conftest import (FROM_INITIALIZE, TEST_ASSETS, TOY_NER, make_nlp, ner_examples, run_python,
                      train)

SAVED_BEFORE = TEST_ASSETS / "saved_before_span_types"
BILUO_PER = ("B-PER", "I-PER", "L-PER", "U-PER")


def trained(n_iter: int = 10) -> spacy.Language:
    nlp = make_nlp("ents")
    train(nlp, ner_examples(nlp), n_iter, optimizer=FROM_INITIALIZE)
    return nlp


def ents(nlp, texts):
    return [[(e.start, e.end, e.label_) for e in nlp(text).ents] for text in texts]


# ------------------------------------------------------------- initialize(labels=...)


@pytest.mark.parametrize("labels", [["PER", "LOC"], ["LOC", "B-PER", "I-PER", "L-PER", "U-PER"],
                                    ["O", "PER", "LOC"]])
def test_initialize_takes_types_tags_or_both(labels):
    nlp = make_nlp("ents")
    pipe = nlp.get_pipe("crf_tagger")
    pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, labels=labels)  # was E061 for a type
    assert pipe.tags == ("O", "B-LOC", "B-PER", "I-LOC", "I-PER", "L-LOC", "L-PER", "U-LOC",
                         "U-PER")
    assert pipe.labels == ("LOC", "PER")


def test_initialize_with_types_of_the_bio_scheme_gives_its_tags():
    nlp = make_nlp("spans:sc", scheme="BIO")
    pipe = nlp.get_pipe("crf_tagger")
    pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, labels=["PER"])
    assert pipe.tags == ("O", "B-PER", "I-PER") and pipe.labels == ("PER",)


def test_a_token_target_keeps_its_labels_as_they_are():
    nlp = make_nlp("tag")
    pipe = nlp.get_pipe("crf_tagger")
    examples = [Example.from_dict(nlp.make_doc("the cat sat"), {"tags": ["DT", "NN", "VBD"]})]
    pipe.initialize(lambda: examples, nlp=nlp, labels=["VBD", "B-X", "PER"])
    assert pipe.labels == pipe.tags == ("B-X", "PER", "VBD")
    assert pipe.label_data == ["B-X", "PER", "VBD"]


def test_a_span_target_given_no_type_starts_with_o_alone():
    """``label_data`` of a span target without types is ``[]``, which reads back."""
    nlp = make_nlp("ents")
    pipe = nlp.get_pipe("crf_tagger")
    with pytest.warns(UserWarning, match="W016"):
        pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, labels=[])
    assert pipe.tags == ("O",) and pipe.labels == () and pipe.label_data == []


# ------------------------------------------------------------------------- label_data


def test_label_data_reads_back_into_the_same_tags():
    nlp = trained()
    pipe = nlp.get_pipe("crf_tagger")
    pipe.add_label("B-MISC")  # a type with one of its tags only
    pipe.add_label("ORG")
    assert pipe.labels == ("LOC", "MISC", "ORG", "PER")
    assert pipe.label_data == ["LOC", "B-MISC", "ORG", "PER"]
    fresh = make_nlp("ents")
    other = fresh.get_pipe("crf_tagger")
    other.initialize(lambda: ner_examples(fresh), nlp=fresh, labels=pipe.label_data)
    assert set(other.tags) == set(pipe.tags) and other.tags[0] == "O"


def test_spacy_init_labels_writes_types_that_initialize_reads(tmp_path):
    nlp = make_nlp("ents")
    DocBin(docs=[eg.reference for eg in ner_examples(nlp)]).to_disk(tmp_path / "train.spacy")
    config = nlp.config.copy()
    config["paths"]["train"] = config["paths"]["dev"] = str(tmp_path / "train.spacy")
    config.to_disk(tmp_path / "config.cfg")
    run_python(["-m", "spacy", "init", "labels", tmp_path / "config.cfg", tmp_path / "labels"],
               cwd=tmp_path)
    written = srsly.read_json(tmp_path / "labels" / "crf_tagger.json")
    assert written == ["LOC", "PER"]
    config["initialize"]["components"] = {"crf_tagger": {"labels": {
        "@readers": "spacy.read_labels.v1", "path": str(tmp_path / "labels" / "crf_tagger.json")}}}
    from spacy.training.initialize import init_nlp

    loaded = init_nlp(spacy.util.load_model_from_config(config, auto_fill=True).config)
    assert loaded.get_pipe("crf_tagger").tags == (
        "O", "B-LOC", "B-PER", "I-LOC", "I-PER", "L-LOC", "L-PER", "U-LOC", "U-PER")


# -------------------------------------------------------------- growing: keep_weights, add_labels


def test_keep_weights_takes_the_label_data_and_new_types():
    nlp = trained()
    pipe = nlp.get_pipe("crf_tagger")
    texts = [text for text, _ in TOY_NER]
    before, tags = ents(nlp, texts), pipe.tags
    pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, labels=pipe.label_data + ["ORG"],
                    keep_weights=True)
    assert pipe.tags[:len(tags)] == tags and pipe.labels == ("LOC", "ORG", "PER")
    assert ents(nlp, texts) == before  # ORG is not predicted before an update has it


def test_keep_weights_names_the_missing_tags_and_the_types_to_pass():
    nlp = trained()
    pipe = nlp.get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"\[CRF-E167\].*lacks \['B-LOC'.*every trained label "
                                         r"\(\['LOC', 'PER'\]\)"):
        pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, labels=["PER"], keep_weights=True)


def test_the_add_labels_callback_adds_the_corpus_types_once_each(tmp_path, caplog):
    nlp = trained()
    data = TOY_NER + [("Acme hired Alice .", [(0, 1, "ORG"), (2, 3, "PER")])]
    DocBin(docs=[eg.reference for eg in ner_examples(nlp, data)]).to_disk(tmp_path / "t.spacy")
    nlp.config["corpora"] = {"train": {"@readers": "spacy.Corpus.v1", "gold_preproc": False,
                                       "path": str(tmp_path / "t.spacy"), "max_length": 0,
                                       "limit": 0, "augmenter": None}}
    nlp.config["training"]["train_corpus"] = "corpora.train"
    pipe = nlp.get_pipe("crf_tagger")
    n_tags = len(pipe.tags)
    with caplog.at_level(logging.INFO, logger="spacy"):
        create_add_labels("crf_tagger", labels=["B-MISC"])(nlp)
    assert pipe.labels == ("LOC", "MISC", "ORG", "PER")
    assert pipe.tags[n_tags:] == ("B-MISC", "B-ORG", "I-ORG", "L-ORG", "U-ORG")
    assert "added labels ['B-MISC', 'ORG']" in caplog.text  # types, not each of their tags


# ------------------------------------------------------- what reads the model's columns


def test_annotate_writes_the_tags_of_the_tokens():
    nlp = trained()
    doc = nlp("Alice met Bob in Paris .")
    record = doc_record(nlp.get_pipe("crf_tagger"), doc, 0)
    assert [t["label"] for t in record["tokens"]] == doc_to_biluo_tags(doc)
    assert "U-PER" in doc_to_biluo_tags(doc)


def test_n_best_lists_hold_tags():
    nlp = make_nlp("ents", n_best=2)
    examples = ner_examples(nlp)
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    doc = nlp("Alice met Bob .")
    (probability, tags), _ = doc._.crf_nbest[0]
    assert tags[0] == "U-PER" and set(tags) <= set(nlp.get_pipe("crf_tagger").tags)


# --------------------------------------------------- saved when labels gave the tags


def test_a_pipeline_saved_when_labels_were_tags_loads_and_predicts_as_it_did(tmp_path):
    """Saved at 7e9e1b1 by ``make.py`` beside it: cfg["labels"] holds the tags,
    as now; ``labels`` now gives the types, and every prediction, confidence
    and n-best list is what it was, saved again too."""
    namespace = {"__name__": "make"}
    exec((SAVED_BEFORE / "make.py").read_text(), namespace)
    expected = json.loads((SAVED_BEFORE / "pipeline" / "expected.json").read_text())
    shutil.copytree(SAVED_BEFORE / "pipeline", tmp_path / "old")
    for where in (tmp_path / "old", tmp_path / "again"):
        nlp = spacy.load(where)
        ner, spans = nlp.get_pipe("ner"), nlp.get_pipe("spans")
        assert ner.tags == tuple(expected["labels"]["ner"])
        assert spans.tags == tuple(expected["labels"]["spans"])
        assert ner.labels == ("LOC", "PER") and ner.label_data == ["LOC", "PER"]
        assert spans.labels == ("LOC", "MISC", "PER")
        assert spans.label_data == ["LOC", "B-MISC", "PER"]
        assert spans.cfg["unseen_labels"] == ["B-MISC"]
        assert namespace["expected_of"](nlp) == expected
        if where.name == "old":
            nlp.to_disk(tmp_path / "again")
    # and it goes on learning: the waiting B-MISC tag is learned from gold
    gold = Doc(nlp.vocab, words=["Acme", "rose", "."])
    gold.spans["sc"] = [Span(gold, 0, 1, label="MISC")]
    nlp.update([Example(Doc(nlp.vocab, words=["Acme", "rose", "."]), gold)],
               sgd=nlp.resume_training())
    assert spans.cfg["unseen_labels"] == []
