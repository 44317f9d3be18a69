"""Pipelines saved before feature sources became a registry
(``tests/assets/saved_before_feature_sources``, written by its ``make.py``):
their word tables (Brown clusters, vector clusters, a gazetteer of a file, a
ruler and the training data) load, predict bit-identically, and save again
to a pipeline that does the same."""

import json
import shutil

import numpy as np
import pytest
import spacy

from conftest import TEST_ASSETS

SAVED_BEFORE = TEST_ASSETS / "saved_before_feature_sources"


@pytest.mark.parametrize("name", ["ents_every_source", "ents_gazetteer_file"])
def test_pipelines_saved_before_feature_sources_predict_as_they_did(name, tmp_path):
    path = tmp_path / name
    shutil.copytree(SAVED_BEFORE / name, path)
    expected = json.loads((path / "expected.json").read_text())
    nlp = spacy.load(path)
    pipe = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text in expected["texts"]]
    assert np.array_equal(pipe.model.predict(docs).emissions, np.load(path / "emissions.npy"))
    docs = [pipe(doc) for doc in docs]
    assert [[t.ent_iob_ + "-" + t.ent_type_ for t in d] for d in docs] == expected["labels"]
    assert [[t._.crf_confidence for t in d] for d in docs] == expected["token_confidence"]
    # saved again (a table of mostly-zero rows may now be stored by its
    # entries, serialize.py) and loaded: the same weights and word tables
    nlp.to_disk(tmp_path / "again")
    again = spacy.load(tmp_path / "again")
    docs = [again.make_doc(text) for text in expected["texts"]]
    assert np.array_equal(again.get_pipe("crf_tagger").model.predict(docs).emissions,
                          np.load(path / "emissions.npy"))
    docs = [again.get_pipe("crf_tagger")(doc) for doc in docs]
    assert [[t.ent_iob_ + "-" + t.ent_type_ for t in d] for d in docs] == expected["labels"]
