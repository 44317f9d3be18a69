"""Saved models store the hashed weight table sparsely (only the rows training
wrote), load back bit-identical, read the older dense files, and reject a
sparse table whose row indices do not fit."""

import numpy as np
import pytest
import spacy
import srsly
from spacy.training import Example

from spacy_crf.models import serialize
from spacy_crf.models.hashed_linear import NAME as TABLE_LAYER
from spacy_crf.models.label_parts import factors
from spacy_crf.models.serialize import (KEY, compact_table, expand_table, model_from_bytes,
                                        model_to_bytes)
from conftest import FROM_INITIALIZE, NO_WORD_TABLES, train

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
    # nor spaCy's lemma tables and word probabilities, which the tag target reads where it can
    nlp.config["initialize"]["components"]["crf_tagger"] = dict(NO_WORD_TABLES)
    data = [("the cat sat on the mat", ["DT", "NN", "VBD", "IN", "DT", "NN"]),
            ("a dog ran home", ["DT", "NN", "VBD", "NN"])]
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in data]
    train(nlp, examples, 5, optimizer=FROM_INITIALIZE)
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



@pytest.mark.parametrize("attr", ["crf_bucketing", "crf_whitespace"])
def test_a_mode_this_version_does_not_know_is_e010_not_read_as_another(trained, attr):
    """A newer release's file could name a bucketing or whitespace mode this
    one lacks: it loaded without a word, read in another mode."""
    pipe = trained.get_pipe("crf_tagger")
    msg = srsly.msgpack_loads(pipe.to_bytes())
    model_msg = srsly.msgpack_loads(msg["model"])
    hits = [attrs for attrs in model_msg["attrs"] if attr in attrs]
    assert hits
    for attrs in hits:
        attrs[attr] = srsly.msgpack_dumps("mode_of_a_newer_version")
    msg["model"] = srsly.msgpack_dumps(model_msg)
    before = table(trained).copy()
    with pytest.raises(ValueError, match=f"E010.*{attr} = 'mode_of_a_newer_version'.*newer"):
        pipe.from_bytes(srsly.msgpack_dumps(msg))
    assert np.array_equal(table(trained), before)


# ------------------------------------------------ tables of mostly-zero rows


def sparse_rows_table(rng, n_rows=3000, n_columns=80, density=0.25):
    """A table whose written rows (a third) hold a quarter of their entries,
    as a table factored over label parts learns them."""
    W = np.zeros((n_rows, n_columns), dtype=np.float32)
    written = rng.random(n_rows) < 0.33
    entries = (rng.random((n_rows, n_columns)) < density) & written[:, None]
    entries[written, rng.integers(0, n_columns, written.sum())] = True  # no written row empty
    W[entries] = rng.normal(size=entries.sum()).astype(np.float32)
    return W


@pytest.mark.parametrize("chunk", [None, 7])
def test_a_table_of_sparse_rows_is_stored_by_entries_and_expands_bit_identically(monkeypatch,
                                                                                  chunk):
    if chunk:  # several chunks, one of them partial
        monkeypatch.setattr(serialize, "CHUNK_ROWS", chunk)
    W = sparse_rows_table(np.random.default_rng(0))
    values, entry = compact_table(W)
    assert "mask" in entry and values.ndim == 1 and values.size == np.count_nonzero(W)
    stored = values.nbytes + entry["mask"].nbytes + entry["rows"].nbytes
    assert stored < 0.5 * np.any(W != 0, axis=1).sum() * W.shape[1] * W.itemsize
    back = expand_table("0", values, entry)
    assert back.dtype == W.dtype and np.array_equal(back, W)


def test_a_table_of_dense_rows_keeps_the_row_form():
    W = np.zeros((500, 17), dtype=np.float32)
    W[::3] = np.random.default_rng(1).normal(size=(167, 17))
    values, entry = compact_table(W)
    assert "mask" not in entry and values.shape == (167, 17)
    assert np.array_equal(expand_table("0", values, entry), W)


@pytest.mark.parametrize("corrupt", ["extra_bit", "missing_value", "empty_row", "width"])
def test_inconsistent_entry_masks_raise(corrupt):
    W = sparse_rows_table(np.random.default_rng(2), n_rows=300)
    values, entry = compact_table(W)
    mask = np.unpackbits(entry["mask"], axis=1, count=entry["n_columns"]).astype(bool)
    if corrupt == "extra_bit":
        mask[0, np.flatnonzero(~mask[0])[0]] = True
    elif corrupt == "missing_value":
        values = values[:-1]
    elif corrupt == "empty_row":
        mask[-1] = False
        values = values[: values.size - int(np.count_nonzero(W[entry["rows"][-1]]))]
    else:
        entry["n_columns"] = 3
    entry["mask"] = np.packbits(mask, axis=1)
    with pytest.raises(ValueError, match="sparse weight table of layer 0 is inconsistent"):
        expand_table("0", values, entry)


def test_a_factored_morph_table_is_saved_by_entries_and_loads_identically(tmp_path):
    nlp = spacy.blank("en")
    # two candidates of five labels: a row learns the parts of the labels kept
    nlp.add_pipe("crf_tagger", config={"target": "morph", "model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": N_BUCKETS,
        "templates": ["NORM[-1..1]", "SUFFIX3", "SHAPE"], "cluster_templates": None},
        "structure": {"@structures": "spacy-crf.PrunedChain.v1", "candidates": 2}})
    words = ["The", "dogs", "ran", "home", "."]
    gold = spacy.tokens.Doc(nlp.vocab, words=words, pos=["DET", "NOUN", "VERB", "ADV", "PUNCT"],
                            morphs=["Definite=Def|PronType=Art", "Number=Plur",
                                    "Mood=Ind|Tense=Past|VerbForm=Fin", "_", "_"])
    examples = [Example(spacy.tokens.Doc(nlp.vocab, words=words), gold)] * 2
    train(nlp, examples, 3, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    pipe.use_prediction_weights()
    msg = srsly.msgpack_loads(model_to_bytes(pipe.model))
    (factored,) = [str(i) for i, node in enumerate(pipe.model.walk())
                   if node.name == TABLE_LAYER and factors(node)]
    assert "mask" in msg[KEY][factored]  # a part per column: each row learns only some parts
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    # the factored table and the whole-label one beside it (whole_label.py)
    saved = [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == TABLE_LAYER]
    back = [n for n in loaded.get_pipe("crf_tagger").model.walk() if n.name == TABLE_LAYER]
    assert len(saved) == len(back) == 2
    for a, b in zip(saved, back):
        assert np.array_equal(a.get_param("W"), b.get_param("W"))
    assert [t.morph.key for t in loaded("The dogs ran home .")] == \
        [t.morph.key for t in nlp("The dogs ran home .")]
