"""The component's ``sequence`` setting: a CRF sequence per doc (default) or per sentence.

With ``"sentence"`` a parser's or senter's boundaries cut the chains and stop
the feature windows; with ``"doc"`` neither happens, so a wrong boundary (a
weak parser's) costs nothing, and an entity may cross a boundary.
"""

import srsly

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from conftest import chain, train

WORDS = ["I", "flew", "to", "New", "York", "and", "Los", "Angeles", "."]
ENTS = ["O", "O", "O", "B-GPE", "L-GPE", "O", "B-GPE", "L-GPE", "O"]
# a boundary inside each name, as a weak sentence splitter may set
CUT = [i in (0, 4, 7) for i in range(len(WORDS))]


def make_nlp(sequence, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "sequence": sequence, **config})
    return nlp


def trained(sequence, **config):
    nlp = make_nlp(sequence, **config)
    gold = Doc(nlp.vocab, words=WORDS, ents=[e.replace("L-", "I-") for e in ENTS])
    examples = [Example(Doc(nlp.vocab, words=WORDS), gold)]
    train(nlp, examples, 30)
    return nlp


def cut_doc(nlp):
    return Doc(nlp.vocab, words=WORDS, sent_starts=CUT)


@pytest.mark.parametrize("structure", ["chain", "semi_markov"])
def test_a_doc_sequence_keeps_names_a_wrong_boundary_cuts(structure):
    by_doc = trained("doc", structure=structure)
    doc = by_doc(cut_doc(by_doc))
    assert [(e.text, e.label_) for e in doc.ents] == [("New York", "GPE"), ("Los Angeles", "GPE")]
    by_sentence = trained("sentence", structure=structure)
    doc = by_sentence(cut_doc(by_sentence))
    # each sentence its own chain: no entity crosses the boundaries
    assert all(e.sent == doc[e.start].sent for e in doc.ents)
    assert ("New York", "GPE") not in [(e.text, e.label_) for e in doc.ents]


@pytest.mark.parametrize("structure", ["chain", chain(2), "semi_markov"])
def test_the_layout_follows_the_setting(structure):
    for sequence, expected in (("sentence", [4, 3, 2]), ("doc", [len(WORDS)])):
        nlp = trained(sequence, structure=structure)
        pipe = nlp.get_pipe("crf_tagger")
        assert pipe.batch_layout([cut_doc(nlp)]).lengths.tolist() == expected


def test_feature_windows_cross_boundaries_only_per_doc():
    for sequence in ("sentence", "doc"):
        nlp = trained(sequence)
        featurize = next(node for node in nlp.get_pipe("crf_tagger").model.walk()
                         if node.name == "crf_featurize")
        cut = featurize.predict([cut_doc(nlp)])
        whole = featurize.predict([Doc(nlp.vocab, words=WORDS)])
        assert np.array_equal(cut, whole) == (sequence == "doc")


def test_n_best_lists_one_per_sequence():
    for sequence, n_lists in (("sentence", 3), ("doc", 1)):
        nlp = trained(sequence, n_best=2)
        doc = nlp(cut_doc(nlp))
        assert len(doc._.crf_nbest) == n_lists


def test_the_setting_is_saved_and_loaded(tmp_path):
    nlp = trained("doc")
    expected = [(e.text, e.label_) for e in nlp(cut_doc(nlp)).ents]
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    pipe = loaded.get_pipe("crf_tagger")
    assert pipe.cfg["sequence"] == "doc"
    assert [(e.text, e.label_) for e in loaded(cut_doc(loaded)).ents] == expected
    # into a component built with sequence = "sentence", from bytes: sequence
    # does not change the weights, so the component keeps its own setting, the
    # one its nlp.config reports (issue 29 item 6), and reads sentences
    fresh = make_nlp("sentence")
    fresh.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    assert fresh.get_pipe("crf_tagger").cfg["sequence"] == "sentence"
    assert fresh.config["components"]["crf_tagger"]["sequence"] == "sentence"
    assert fresh.get_pipe("crf_tagger").batch_layout([cut_doc(fresh)]).lengths.tolist() != [len(cut_doc(fresh))]
    # and a config override given to spacy.load is honoured
    override = spacy.load(tmp_path / "model", config={"components": {"crf_tagger": {"sequence": "sentence"}}})
    assert override.get_pipe("crf_tagger").cfg["sequence"] == "sentence"


def test_the_default_is_one_sequence_per_doc():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "ents"})
    assert pipe.cfg["sequence"] == "doc"
    assert nlp.config["components"]["crf_tagger"]["sequence"] == "doc"


def test_a_component_saved_before_the_setting_reads_sentences(tmp_path):
    nlp = trained("sentence")
    path = tmp_path / "old"
    nlp.get_pipe("crf_tagger").to_disk(path)
    cfg = srsly.read_json(path / "cfg")
    del cfg["sequence"]  # as spacy-crf wrote it before the setting existed
    srsly.write_json(path / "cfg", cfg)
    fresh = make_nlp("doc")
    pipe = fresh.get_pipe("crf_tagger").from_disk(path)
    assert pipe.cfg["sequence"] == "sentence"
    assert pipe.batch_layout([cut_doc(fresh)]).lengths.tolist() == [4, 3, 2]


@pytest.mark.parametrize("value", ["sentences", "Doc", ""])
def test_a_bad_value_names_the_choices(value):
    with pytest.raises(ValueError, match=r'E112.*"sentence".*"doc"'):
        make_nlp(value)


def test_a_value_of_the_wrong_type_is_a_config_error():
    # spaCy's config validation names the setting before the component runs
    with pytest.raises(Exception, match=r"crf_tagger -> sequence"):
        make_nlp(1)
