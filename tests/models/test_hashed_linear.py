"""The hashed linear layer: how feature ids map to rows (unsigned for new tables,
numba's signed modulo kept for tables saved before the flag) and feature dropout."""


import numpy as np
import pytest
import spacy
import srsly
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

from spacy_crf._kernels.emissions import feature_rows
from spacy_crf.models.hashed_linear import (BUCKETING, DROPOUT_DRAWS, DROPOUT_STREAM, MIN_ROWS,
                                            SIGNED, TABLE_WEIGHTS, UNSIGNED, hashed_linear,
                                            seed_dropout, table_rows)
from spacy_crf.models.serialize import KEY, model_from_bytes
from spacy_crf.models.sparse_table import ATTR

from conftest import TEST_ASSETS as ASSETS
#: written by spacy-crf at commit 4f22749 (signed mapping): a tagger with a
#: 1000-row table, the feature ids of three texts, their emissions and tags
LEGACY = ASSETS / "legacy_signed_buckets.msgpack"
LEGACY_MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": 1000,
                "templates": ["NORM[-1..1]", "NORM[-1]|NORM[0]", "SUFFIX3", "SHAPE"]}
TOP = 2**63


def unsigned_row(f, n):
    return int(f) % n


def signed_row(f, n):
    """What numba's ``uint64 % int64`` gave: the id read as int64, floored."""
    f = int(f)
    return (f - 2**64 if f >= TOP else f) % n


def big_ids(rng, shape):
    """uint64 ids, half of them >= 2**63, and the extremes."""
    ids = rng.integers(0, 2**63, size=shape, dtype=np.uint64)
    ids[..., ::2] += np.uint64(TOP)
    ids.flat[0] = np.uint64(2**64 - 1)
    ids.flat[-1] = np.uint64(TOP)
    return ids


def layer_with_rows(n_buckets, n_labels=2, seed=0, bucketing=UNSIGNED):
    layer = hashed_linear(n_buckets, nO=n_labels)
    layer.initialize()
    layer.attrs[BUCKETING] = bucketing
    rng = np.random.default_rng(seed)
    layer.set_param("W", rng.normal(size=(n_buckets, n_labels)).astype("float32"))
    layer.set_param("b", rng.normal(size=n_labels).astype("float32"))
    return layer


def reference_emissions(layer, rows, scale=1.0):
    """bias + the rows' weights, added one at a time in float32 as the kernel does."""
    W, b = layer.get_param("W"), layer.get_param("b")
    out = np.tile(b, (rows.shape[0], 1))
    for k in range(rows.shape[1]):
        kept = rows[:, k] >= 0
        out[kept] += np.float32(scale) * W[rows[kept, k]]
    return out


# ---------------------------------------------------------------- bucketing


@pytest.mark.parametrize("n_buckets", [1000, 48, 12345, 2**18 - 1])
def test_new_tables_read_row_id_mod_n_buckets(n_buckets):
    """id 2**64-1 of a 1000-row table is row 615 (it was 999), and the gradient
    lands on the row the forward pass read."""
    layer = layer_with_rows(n_buckets)
    assert layer.attrs[BUCKETING] == UNSIGNED
    ids = big_ids(np.random.default_rng(1), (40, 3))
    rows = np.vectorize(unsigned_row, otypes=[np.int64])(ids, n_buckets)
    if n_buckets == 1000:
        assert rows.flat[0] == 615
    scores, backprop = layer(ids, is_train=True)
    assert np.array_equal(scores, reference_emissions(layer, rows))
    backprop(np.ones_like(scores))
    table = layer.attrs[ATTR]
    assert set(table.rows[:table.n_rows].tolist()) == set(rows.ravel().tolist())


@pytest.mark.parametrize("n_buckets", [1, 2, 1024, 2**18, 2**20])
def test_both_mappings_agree_for_powers_of_two(n_buckets):
    ids = big_ids(np.random.default_rng(2), (50, 4))
    signed, unsigned = (np.empty(ids.shape, dtype=np.int64) for _ in range(2))
    feature_rows(ids, n_buckets, False, signed)
    feature_rows(ids, n_buckets, True, unsigned)
    assert np.array_equal(signed, unsigned)
    # (both take the low bits there: the unsigned modulo, as numpy computes it)
    assert np.array_equal(unsigned, (ids % np.uint64(n_buckets)).astype(np.int64))


@pytest.mark.parametrize("n_buckets", [3, 1000, 12345])
def test_the_legacy_mapping_is_the_signed_modulo(n_buckets):
    ids = big_ids(np.random.default_rng(3), (50, 4))
    out = np.empty(ids.shape, dtype=np.int64)
    feature_rows(ids, n_buckets, False, out)
    expected = np.vectorize(signed_row, otypes=[np.int64])(ids, n_buckets)
    assert np.array_equal(out, expected)
    feature_rows(ids, n_buckets, True, out)
    assert not np.array_equal(out, expected)  # the two differ above 2**63


def legacy_pipeline():
    saved = srsly.read_msgpack(LEGACY)
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"model": LEGACY_MODEL})
    pipe.from_bytes(saved["component"])
    ids = np.frombuffer(saved["ids"], dtype="<u8").reshape(saved["ids_shape"])
    emissions = np.frombuffer(saved["emissions"], dtype="<f4").reshape(ids.shape[0], -1)
    return nlp, saved, ids, emissions


def table_layer(nlp):
    (node,) = [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "crf_hashed_linear"]
    return node


def predicted_tags(nlp, texts):
    return [[t.tag_ for t in doc] for doc in nlp.pipe(texts)]


def test_a_model_saved_before_the_flag_predicts_as_it_did():
    nlp, saved, ids, emissions = legacy_pipeline()
    layer = table_layer(nlp)
    assert layer.attrs[BUCKETING] == SIGNED
    assert (ids >= np.uint64(TOP)).sum() > 10
    assert np.array_equal(layer.predict(ids), emissions)
    assert predicted_tags(nlp, saved["texts"]) == saved["tags"]
    # not vacuous: read unsigned, the same weights predict otherwise
    layer.attrs[BUCKETING] = UNSIGNED
    assert not np.array_equal(layer.predict(ids), emissions)
    assert predicted_tags(nlp, saved["texts"]) != saved["tags"]


def test_a_dense_0_1_0_file_keeps_the_signed_mapping_too(tmp_path):
    nlp, saved, ids, emissions = legacy_pipeline()
    nlp.to_disk(tmp_path / "model")
    # thinc's own (dense) bytes, as 0.1.0 saved them: no sparse rows, no flag
    msg = srsly.msgpack_loads(nlp.get_pipe("crf_tagger").model.to_bytes())
    assert KEY not in msg
    for attrs in msg["attrs"]:
        attrs.pop(BUCKETING, None)
    (tmp_path / "model" / "crf_tagger" / "model").write_bytes(srsly.msgpack_dumps(msg))
    loaded = spacy.load(tmp_path / "model")
    assert table_layer(loaded).attrs[BUCKETING] == SIGNED
    assert np.array_equal(table_layer(loaded).predict(ids), emissions)
    assert predicted_tags(loaded, saved["texts"]) == saved["tags"]


def test_the_mapping_is_saved_with_the_table(tmp_path):
    nlp, saved, ids, emissions = legacy_pipeline()
    nlp.to_disk(tmp_path / "legacy")
    assert table_layer(spacy.load(tmp_path / "legacy")).attrs[BUCKETING] == SIGNED
    # a table trained now reads unsigned, and says so in its file, even when
    # loaded into a component whose layer was marked signed
    fresh = spacy.blank("en")
    fresh.add_pipe("crf_tagger", config={"model": LEGACY_MODEL})
    # the legacy model's six tags, so the two models fit each other
    examples = [Example.from_dict(fresh.make_doc("the big cat sat on a mat quickly"),
                                  {"tags": ["DT", "JJ", "NN", "VBD", "IN", "DT", "NN", "RB"]})]
    fresh.initialize(lambda: examples)
    assert table_layer(fresh).attrs[BUCKETING] == UNSIGNED
    data = fresh.get_pipe("crf_tagger").model.to_bytes()
    msg = srsly.msgpack_loads(data)
    (i,) = [i for i, node in enumerate(msg["nodes"]) if node["name"] == "crf_hashed_linear"]
    assert srsly.msgpack_loads(msg["attrs"][i][BUCKETING]) == UNSIGNED
    model = nlp.get_pipe("crf_tagger").model
    model_from_bytes(model, data)
    assert table_layer(nlp).attrs[BUCKETING] == UNSIGNED
    # re-initializing a legacy model allocates a fresh table: the new mapping
    nlp, _, _, _ = legacy_pipeline()
    nlp.initialize(lambda: examples)
    assert table_layer(nlp).attrs[BUCKETING] == UNSIGNED


# ---------------------------------------------------------------- dropout


def distinct_row_ids(n_tokens, n_templates, n_buckets, seed=4):
    """Ids of distinct rows (>= 2**63), so a touched row names one (token, template)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(n_buckets, size=n_tokens * n_templates, replace=False).reshape(n_tokens, n_templates)
    return rows, (rows.astype(np.uint64) + np.uint64(n_buckets) * np.uint64(2**60 // n_buckets * 9))


def test_unsigned_ids_of_the_dropout_fixture_hit_their_rows():
    rows, ids = distinct_row_ids(10, 3, 5000)
    assert (ids >= np.uint64(TOP)).all()
    out = np.empty(ids.shape, dtype=np.int64)
    feature_rows(ids, 5000, True, out)
    assert np.array_equal(out, rows)


def test_zero_dropout_is_bit_identical_to_no_dropout():
    layer = layer_with_rows(5000, n_labels=3)
    rows, ids = distinct_row_ids(200, 4, 5000)
    rows[5, 1] = rows[9, 2]  # and a row shared by two features
    ids[5, 1] = ids[9, 2]
    d_scores = np.random.default_rng(5).normal(size=(200, 3)).astype("float32")
    expected = reference_emissions(layer, rows)
    assert np.array_equal(layer.predict(ids), expected)
    layer.attrs["dropout_rate"] = 0.0
    scores, backprop = layer(ids, is_train=True)
    assert np.array_equal(scores, expected)
    backprop(d_scores)
    table = layer.attrs[ATTR]
    dense = np.zeros((5000, 3), dtype="float32")
    for k in range(rows.shape[1]):
        for t in range(rows.shape[0]):
            dense[rows[t, k]] += d_scores[t]
    got = np.zeros_like(dense)
    got[table.rows[:table.n_rows]] = table.grads[:table.n_rows]
    assert np.array_equal(got, dense)


@pytest.mark.parametrize("seeded", [True, False])
@pytest.mark.parametrize("rate", [0.3, 0.7])
def test_dropout_drops_features_in_training_and_scales_the_rest(rate, seeded):
    n_tokens, n_templates = 300, 5
    layer = layer_with_rows(10000, n_labels=2)
    if seeded:  # a component's table: a stream of its own (else numpy's global one)
        seed_dropout(layer, [3, 1])
    rows, ids = distinct_row_ids(n_tokens, n_templates, 10000)
    layer.attrs["dropout_rate"] = rate
    predicted = layer.predict(ids)
    assert np.array_equal(predicted, reference_emissions(layer, rows))  # prediction never drops
    fix_random_seed(6)
    scores, backprop = layer(ids, is_train=True)
    assert not np.allclose(scores, predicted)
    d_scores = np.random.default_rng(7).normal(size=scores.shape).astype("float32")
    backprop(d_scores)
    table = layer.attrs[ATTR]
    touched = set(table.rows[:table.n_rows].tolist())
    kept = np.vectorize(lambda r: r in touched)(rows)
    # about `rate` of the features dropped (binomial, 1500 draws: 6 sigma bounds)
    n = kept.size
    sigma = np.sqrt(n * rate * (1 - rate))
    assert abs((~kept).sum() - n * rate) < 6 * sigma
    # the emissions are the bias plus the kept rows scaled by 1/(1-rate) ...
    scale = np.float32(1.0 / (1.0 - rate))
    np.testing.assert_allclose(scores, reference_emissions(layer, np.where(kept, rows, -1), scale),
                               rtol=1e-6, atol=1e-6)
    # ... and only the kept rows get a gradient, scaled alike
    token_of = {int(rows[t, k]): t for t in range(n_tokens) for k in range(n_templates)}
    for i in range(table.n_rows):
        r = int(table.rows[i])
        np.testing.assert_allclose(table.grads[i], scale * d_scores[token_of[r]], rtol=1e-6)
    # the bias is never dropped
    assert np.array_equal(layer.get_grad("b"), d_scores.sum(axis=0))


@pytest.mark.parametrize("seeded", [True, False])
def test_dropout_keeps_the_expected_emissions(seeded):
    """Inverted dropout: averaged over draws, training emissions are prediction's."""
    layer = layer_with_rows(4000, n_labels=2)
    if seeded:
        seed_dropout(layer, [3, 1])
    rows, ids = distinct_row_ids(20, 8, 4000)
    layer.attrs["dropout_rate"] = 0.5
    predicted = layer.predict(ids)
    fix_random_seed(8)
    draws = np.stack([layer(ids, is_train=True)[0] for _ in range(2000)])
    W = layer.get_param("W")
    # per token: sd of one draw = sqrt(sum_k w_k^2 * rate/(1-rate)); the mean of 2000 is 1/sqrt(2000) of it
    sd = np.sqrt((W[rows] ** 2).sum(axis=1) * 1.0) / np.sqrt(len(draws))
    assert (np.abs(draws.mean(axis=0) - predicted) < 6 * sd + 1e-6).all()


TOY = [("the cat sat on the mat", ["DT", "NN", "VBD", "IN", "DT", "NN"]),
       ("a dog ran home", ["DT", "NN", "VBD", "NN"])]


def trained_weights(drop, n_steps=3):
    fix_random_seed(9)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": dict(LEGACY_MODEL, n_buckets=4096)})
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TOY]
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.1)
    for _ in range(n_steps):
        nlp.update(examples, sgd=optimizer, drop=drop)
    assert table_layer(nlp).attrs["dropout_rate"] == drop
    return table_layer(nlp).get_param("W").copy()


def test_nlp_update_drop_reaches_the_features():
    assert np.array_equal(trained_weights(0.0), trained_weights(0.0))
    assert not np.array_equal(trained_weights(0.0), trained_weights(0.4))


def training_pass(layer, ids):
    return layer(ids, is_train=True)[0]


def test_a_seeded_tables_masks_are_its_own_and_go_on_after_a_save():
    _, ids = distinct_row_ids(50, 4, 3000)
    first, second = layer_with_rows(3000), layer_with_rows(3000)
    for layer in (first, second):
        layer.attrs["dropout_rate"] = 0.5
        seed_dropout(layer, [11, 2])
    np.random.seed(1)
    a = [training_pass(first, ids) for _ in range(3)]
    np.random.seed(2)  # numpy's global generator elsewhere: the masks do not follow it
    np.random.random(1000)
    b = [training_pass(second, ids) for _ in range(3)]
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    assert not np.array_equal(a[0], a[1])  # each pass draws anew
    assert first.attrs[DROPOUT_DRAWS] == 3
    # saved and loaded, the stream goes on where it was
    loaded = hashed_linear(3000, nO=2).from_bytes(first.to_bytes())
    assert np.array_equal(training_pass(loaded, ids), training_pass(second, ids))
    # another seed, or another table of the same model, is another stream
    other = layer_with_rows(3000)
    other.attrs["dropout_rate"] = 0.5
    seed_dropout(other, [12, 2])
    assert not np.array_equal(training_pass(other, ids), a[0])


def test_the_component_seeds_its_tables_from_the_configs_training_seed():
    nlp = spacy.blank("en")
    # input-dependent transitions: a second hashed table
    nlp.add_pipe("crf_tagger", config={"model": dict(LEGACY_MODEL, n_buckets=4096),
                                       "structure": {"@structures": "spacy-crf.Chain.v1",
                                                     "transition_templates": ["NORM[0]"]}})
    nlp.config["system"]["seed"] = 5  # as spacy train --system.seed 5
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TOY]
    nlp.initialize(lambda: examples)
    tables = [n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == "crf_hashed_linear"]
    streams = [table.attrs[DROPOUT_STREAM] for table in tables]
    assert len(streams) == 2 and streams[0][0] == 5 and streams[0][:2] == streams[1][:2]
    assert streams[0] != streams[1]  # one stream per table


def test_trained_weights_do_not_depend_on_what_else_draws_from_numpy():
    def train(disturb):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"model": dict(LEGACY_MODEL, n_buckets=4096)})
        examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TOY]
        nlp.initialize(lambda: examples)
        optimizer = Adam(0.1)
        for step in range(3):
            np.random.seed(step + disturb)  # another component's draws, say
            nlp.update(examples, sgd=optimizer, drop=0.4)
        return table_layer(nlp).get_param("W").copy()

    assert np.array_equal(train(0), train(100))


@pytest.mark.parametrize("rate", [1.0, 1.5, -0.1])
def test_dropout_outside_0_1_is_a_clear_error(rate):
    layer = layer_with_rows(100)
    layer.attrs["dropout_rate"] = rate
    with pytest.raises(ValueError, match=r"\[CRF-E052\]"):
        layer(np.arange(6, dtype=np.uint64).reshape(3, 2), is_train=True)


# ---------------------------------------------- n_buckets = null: rows by width


@pytest.mark.parametrize("columns,rows", [(1, 2**20), (17, 2**20), (64, 2**20), (65, 2**19),
                                          (80, 2**19), (128, 2**19), (129, 2**18),
                                          (531, 2**18)])
def test_a_null_table_gets_its_rows_from_its_width(columns, rows):
    assert table_rows(columns) == rows
    assert table_rows(columns) * columns <= max(TABLE_WEIGHTS, MIN_ROWS * columns)


def test_null_rows_are_resolved_at_each_initialize_and_saved(tmp_path):
    def tagger(n_labels):
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe("crf_tagger", config={"model": {
            "@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": None,
            "templates": ["NORM", "SUFFIX3"]}})
        for i in range(n_labels):
            pipe.add_label(f"T{i}")
        return nlp, pipe

    nlp, pipe = tagger(70)
    nlp.initialize()
    table = next(n for n in pipe.model.walk() if n.name == "crf_hashed_linear")
    assert table.get_dim("nV") == 2**19 and table.get_param("W").shape == (2**19, 70)
    eg = Example.from_dict(nlp.make_doc("a b"), {"tags": ["T1", "T2"]})
    nlp.update([eg])
    nlp.to_disk(tmp_path / "wide")
    loaded = spacy.load(tmp_path / "wide")
    loaded_table = next(n for n in loaded.get_pipe("crf_tagger").model.walk()
                        if n.name == "crf_hashed_linear")
    assert loaded_table.get_param("W").shape == (2**19, 70)
    assert np.array_equal(loaded_table.get_param("W"), table.get_param("W"))
    # a re-initialize with fewer labels sizes the table anew
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc("a"), {"tags": ["T1"]})])
    assert table.get_dim("nV") == 2**20
