"""The process-global affix table under concurrent readers and writers.

Threads featurize docs whose words the table has never seen, so batches grow
it (and, past MAX_TYPES, start it afresh) while other threads look words up.
Every thread must get the features one thread alone gets: a reader must never
pair new sorted keys with old rows, and a writer must not lose the types an
overflow in another thread dropped.
"""

import sys
import threading
import time

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc

import spacy_crf.features.affixes as affixes
from spacy_crf.features.extract import extract_features
from spacy_crf.features.templates import FeatureTemplates

TEMPLATES = FeatureTemplates(["SUFFIX3", "PREFIX2", "SUFFIX1", "PREFIX4"])
N_THREADS = 4
N_BATCHES = 60


def _batches(vocab, seed):
    """Per thread: batches of words new to the table (writers), each followed by
    one of words it already holds (readers that never take the lock)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    seen = ["the", "walking", "talked", "quickly"]
    out = []
    for b in range(N_BATCHES // 2):
        fresh = ["".join(rng.choice(letters, size=rng.integers(1, 9))) + f"{seed}x{b}x{i}"
                 for i in range(int(rng.integers(3, 30)))]
        out.append([Doc(vocab, words=fresh + seen[:2])])
        seen += fresh
        out.append([Doc(vocab, words=[seen[i] for i in rng.integers(0, len(seen), size=40)])])
    return out


class YieldingTable(affixes.AffixTable):
    """Hands the other threads a turn after every read and write of its state.

    Under the GIL a thread switch between two attribute stores is rare; a
    free-threaded interpreter needs no switch at all. This makes every gap
    between the table's reads and writes one where other threads run.
    """

    def __getattribute__(self, name):
        value = super().__getattribute__(name)
        if not name.startswith("__") and not callable(value):
            time.sleep(1e-4)
        return value

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        time.sleep(1e-4)


@pytest.mark.parametrize("table", [affixes.AffixTable, YieldingTable])
@pytest.mark.parametrize("max_types", [affixes.MAX_TYPES, 300])
def test_threads_growing_the_table_get_the_single_threaded_features(monkeypatch, table, max_types):
    vocab = spacy.blank("en").vocab
    # all docs built here: the test is about the affix table, not the StringStore
    work = [_batches(vocab, seed) for seed in range(N_THREADS)]
    monkeypatch.setattr(affixes, "AFFIXES", affixes.AffixTable())
    expected = [[extract_features(batch, TEMPLATES) for batch in batches] for batches in work]
    # a fresh, empty table, so that the threads' lookups grow it as they go; a
    # small max_types makes it also start afresh (overflow) while others read
    monkeypatch.setattr(affixes, "AFFIXES", table())
    monkeypatch.setattr(affixes, "MAX_TYPES", max_types)
    results = [[None] * N_BATCHES for _ in range(N_THREADS)]
    errors = []
    start = threading.Barrier(N_THREADS)

    def run(t):
        try:
            start.wait()
            for b, batch in enumerate(work[t]):
                results[t][b] = extract_features(batch, TEMPLATES)
        except Exception as err:  # reported below, with the thread's index
            errors.append((t, repr(err)))

    # switch threads as often as possible, so that a reader lands between the
    # writer's updates if there is any gap between them
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in range(N_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    for t in range(N_THREADS):
        for b in range(N_BATCHES):
            assert np.array_equal(results[t][b], expected[t][b]), (t, b)
