"""Saved models store the hashed weight table sparsely (only the rows training
wrote), load back bit-identical, read the older dense files, and reject a
sparse table whose row indices do not fit."""

import numpy as np
import pytest
import spacy
import srsly
from spacy.training import Example

from spacy_crf.models.serialize import KEY, model_from_bytes, model_to_bytes

N_BUCKETS = 2**16


def table(nlp):
    nodes = [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "crf_hashed_linear"]
    assert len(nodes) == 1
    return nodes[0].get_param("W")


@pytest.fixture(scope="module")
def trained():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": N_BUCKETS,
        "templates": ["NORM[-1..1]", "SUFFIX3", "SHAPE"],
        # no word tables: the file then holds the weights alone
        "cluster_templates": None}})
    data = [("the cat sat on the mat", ["DT", "NN", "VBD", "IN", "DT", "NN"]),
            ("a dog ran home", ["DT", "NN", "VBD", "NN"])]
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in data]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    return nlp


def test_saved_file_holds_only_the_written_rows_and_loads_identically(trained, tmp_path):
    trained.get_pipe("crf_tagger").use_prediction_weights()  # the (averaged) weights it saves
    W = table(trained)
    written = int(np.any(W != 0, axis=1).sum())
    assert 0 < written < N_BUCKETS // 100  # a toy corpus touches few buckets
    trained.to_disk(tmp_path / "model")
    saved = (tmp_path / "model" / "crf_tagger" / "model").stat().st_size
    dense = len(trained.get_pipe("crf_tagger").model.to_bytes())
    assert dense > W.nbytes  # thinc's own bytes carry every row
    assert saved < dense / 20
    loaded = spacy.load(tmp_path / "model")
    assert np.array_equal(table(loaded), W) and table(loaded).dtype == W.dtype
    doc_a, doc_b = trained("the dog sat on a mat"), loaded("the dog sat on a mat")
    assert [t.tag_ for t in doc_a] == [t.tag_ for t in doc_b]
    # and through bytes (nlp.to_bytes / pickling of a pipeline)
    again = spacy.blank("en")
    again.add_pipe("crf_tagger", config={"model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": N_BUCKETS,
        "templates": ["NORM[-1..1]", "SUFFIX3", "SHAPE"], "cluster_templates": None}})
    again.get_pipe("crf_tagger").from_bytes(trained.get_pipe("crf_tagger").to_bytes())
    assert np.array_equal(table(again), W)


def test_an_untrained_table_round_trips(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": 1024, "templates": ["NORM"]}})
    nlp.get_pipe("crf_tagger").add_label("X")
    nlp.initialize()
    model = nlp.get_pipe("crf_tagger").model
    msg = srsly.msgpack_loads(model_to_bytes(model))
    (entry,) = msg[KEY].values()
    assert len(entry["rows"]) == 0 and entry["n_rows"] == 1024
    W = table(nlp)
    model_from_bytes(model, model_to_bytes(model))
    assert np.array_equal(table(nlp), W)


def test_dense_files_of_earlier_versions_still_load(trained, tmp_path):
    trained.to_disk(tmp_path / "model")
    dense = trained.get_pipe("crf_tagger").model.to_bytes()  # the 0.1.0 format
    (tmp_path / "model" / "crf_tagger" / "model").write_bytes(dense)
    loaded = spacy.load(tmp_path / "model")
    assert np.array_equal(table(loaded), table(trained))


@pytest.mark.parametrize("corrupt", ["out_of_range", "unsorted", "count"])
def test_inconsistent_sparse_rows_raise_e010_and_change_nothing(trained, tmp_path, corrupt):
    pipe = trained.get_pipe("crf_tagger")
    msg = srsly.msgpack_loads(pipe.to_bytes())
    model_msg = srsly.msgpack_loads(msg["model"])
    (entry,) = model_msg[KEY].values()
    rows = np.array(entry["rows"])
    if corrupt == "out_of_range":
        rows[-1] = entry["n_rows"]
    elif corrupt == "unsorted":
        rows[[0, 1]] = rows[[1, 0]]
    else:
        rows = rows[:-1]
    entry["rows"] = rows
    msg["model"] = srsly.msgpack_dumps(model_msg)
    before = table(trained).copy()
    with pytest.raises(ValueError, match="E010.*sparse weight table"):
        pipe.from_bytes(srsly.msgpack_dumps(msg))
    assert np.array_equal(table(trained), before)
    assert trained("the cat sat")[1].tag_ == "NN"
