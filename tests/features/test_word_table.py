"""WordTable.lookup: the open-addressing slots against a dict, on keys that
collide in their low bits (long probe runs), symbol-sized keys, absent words,
several columns, an empty table, and a pickled copy."""

import pickle

import numpy as np
import pytest

from spacy_crf.features.word_table import MISSING, WordTable


def _reference(keys, values, words):
    table = {int(k): row for k, row in zip(keys, np.asarray(values).reshape(len(keys), -1))}
    n_cols = np.asarray(values).reshape(len(keys), -1).shape[1] if len(keys) else 1
    return np.asarray([table.get(int(w), [MISSING] * n_cols) for w in words],
                      dtype=np.uint64).reshape(len(words), n_cols)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_cols", [1, 3])
def test_lookup_equals_a_dict(seed, n_cols):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    random_keys = rng.integers(0, 2**63, size=n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    # keys equal in their low 20 bits all start at one slot: the probes walk on
    colliding = (np.arange(1, 200, dtype=np.uint64) << np.uint64(20)) + np.uint64(7)
    symbols = np.arange(2, 60, dtype=np.uint64)  # spaCy's symbol ids are small integers
    keys = np.unique(np.concatenate([random_keys, colliding, symbols]))
    values = rng.integers(1, 2**40, size=(len(keys), n_cols))
    table = WordTable(keys, values if n_cols > 1 else values[:, 0])
    absent = rng.integers(0, 2**63, size=500, dtype=np.uint64) * np.uint64(2)  # even: not keys
    words = rng.permutation(np.concatenate([keys, keys[: len(keys) // 2], absent,
                                            colliding + np.uint64(1 << 40)]))
    got = table.lookup(words)
    np.testing.assert_array_equal(got, _reference(keys, values, words))
    assert got.dtype == np.uint64 and got.shape == (len(words), n_cols)
    # at most half the entries are used, so an absent word's probe run ends soon
    assert len(table.entries) >= 2 * len(keys)
    # a pickled copy (nlp.pipe(n_process=...)) rebuilds its entries and agrees
    copy = pickle.loads(pickle.dumps(table))
    assert copy._entries is None
    np.testing.assert_array_equal(copy.lookup(words), got)


def test_key_zero_is_the_empty_string_and_never_found():
    # 0 marks an empty entry: a table given key 0 (spaCy's id of "") leaves it
    # out, and looking up 0 finds nothing, with or without it
    table = WordTable(np.asarray([0, 4, 16], dtype=np.uint64), np.asarray([7, 8, 9]))
    assert len(table) == 2
    np.testing.assert_array_equal(table.lookup(np.asarray([0, 4, 16, 32], dtype=np.uint64)),
                                  [[MISSING], [8], [9], [MISSING]])


def test_empty_table_and_empty_batch():
    empty = WordTable(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64))
    np.testing.assert_array_equal(empty.lookup(np.asarray([1, 2, 3], dtype=np.uint64)),
                                  np.full((3, 1), MISSING, dtype=np.uint64))
    table = WordTable(np.asarray([5, 9], dtype=np.uint64), np.asarray([1, 2]))
    assert table.lookup(np.zeros(0, dtype=np.uint64)).shape == (0, 1)


def test_the_growing_table_kernels_against_a_dict():
    """lookup_or_miss / insert_missing / rehash (the affix table's) agree with a
    dict, across growth, with repeated and absent keys and the empty string's id."""
    from spacy_crf._kernels.word_lookup import insert_missing, lookup_or_miss, rehash

    rng = np.random.default_rng(0)
    entries = np.zeros((8, 3), dtype=np.uint64)
    truth = {}
    empty_row = np.asarray([7, 9], dtype=np.uint64)
    for _ in range(6):
        keys = np.unique(rng.integers(1, 2**63, size=int(rng.integers(1, 40)), dtype=np.uint64))
        keys = np.concatenate([keys, keys[:2]]) if len(truth) else keys
        keys = np.unique(keys)
        values = rng.integers(0, 2**62, size=(keys.shape[0], 2), dtype=np.uint64)
        size = entries.shape[0]
        new = [k for k in keys.tolist() if k not in truth]
        while 2 * (len(truth) + len(new)) > size:
            size *= 2
        if size != entries.shape[0]:
            larger = np.zeros((size, 3), dtype=np.uint64)
            rehash(entries, larger)
            entries = larger
        added = insert_missing(entries, keys, values)
        assert added == len(new)
        for k, row in zip(keys.tolist(), values.tolist()):
            truth.setdefault(k, row)
        probe = np.concatenate([np.asarray(list(truth), dtype=np.uint64),
                                rng.integers(1, 2**63, size=5, dtype=np.uint64),
                                np.zeros(1, dtype=np.uint64)])
        out = np.full((probe.shape[0], 2), 123, dtype=np.uint64)
        missed = np.empty(probe.shape[0], dtype=np.bool_)
        n_missed = lookup_or_miss(entries, probe, empty_row, out, missed)
        assert n_missed == 5 and missed[len(truth):-1].all() and not missed[:len(truth)].any()
        assert out[:len(truth)].tolist() == list(truth.values())
        assert out[-1].tolist() == [7, 9] and not missed[-1]
        assert (out[len(truth):-1] == 123).all()  # a miss leaves its row alone
