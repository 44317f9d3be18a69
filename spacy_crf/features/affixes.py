"""Prefix/suffix hashes per word type, cached across batches.

Affixes depend only on the lower-cased word, so they are computed once per
type: a batch's ``LOWER`` hashes are deduplicated and looked up in a sorted
table (vectorised); only types never seen before go through Python (to fetch
their string) and numba. Reading ``Doc.text`` instead would cost a Python
step per token.
"""

import threading

import numpy as np
from spacy.strings import StringStore

from .._kernels.features import N_AFFIX, affix_hashes

N_COLUMNS = 2 * N_AFFIX
MAX_TYPES = 2_000_000  # the table starts afresh past this many types


class AffixTable:
    """Sorted type hashes and their ``N_COLUMNS`` affix hashes.

    The two arrays are published together as one tuple, replaced whole under
    the lock: a reader takes both from one attribute read, so it never pairs
    new keys with old rows, and never needs the lock.
    """

    def __init__(self) -> None:
        self._table = (np.zeros(0, dtype=np.uint64), np.zeros((0, N_COLUMNS), dtype=np.uint64))
        self._lock = threading.Lock()

    def lookup(self, lower: np.ndarray, strings: StringStore) -> np.ndarray:
        """``(N, N_COLUMNS)`` affix hashes for the ``LOWER`` hashes of N tokens."""
        if not lower.shape[0]:
            return np.zeros((0, N_COLUMNS), dtype=np.uint64)
        types, inverse = np.unique(lower, return_inverse=True)
        keys, rows = self._table
        pos, found = _find(keys, types)
        if not found.all():
            keys, rows = self._add(types, strings)
            pos, _ = _find(keys, types)
        return rows[pos][inverse.reshape(-1)]

    def _add(self, types: np.ndarray, strings: StringStore):
        """Publish a table that holds every one of ``types``, and return it.

        Past MAX_TYPES it starts afresh with the batch's types. All under the
        lock, against the table as it is then: another thread may have added
        some of the types, or started afresh without them, since this one read.
        """
        with self._lock:
            keys, rows = self._table
            _, found = _find(keys, types)
            if keys.shape[0] + int((~found).sum()) > MAX_TYPES:
                keys, rows, found = keys[:0], rows[:0], np.zeros_like(found)
            new = types[~found]
            keys = np.concatenate([keys, new])
            rows = np.concatenate([rows, _affix_rows(new, strings)])
            order = np.argsort(keys, kind="stable")
            self._table = (keys[order], rows[order])
            return self._table


def _affix_rows(types: np.ndarray, strings: StringStore) -> np.ndarray:
    """The affix hashes of word types given by their ``LOWER`` hashes."""
    texts = [strings[int(h)] for h in types]
    chars = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    starts = np.cumsum(lens) - lens
    out = np.empty((len(texts), N_COLUMNS), dtype=np.uint64)
    affix_hashes(chars, starts, lens, out)
    return out


def _find(keys: np.ndarray, values: np.ndarray):
    if not keys.shape[0]:
        return np.zeros(values.shape[0], dtype=np.int64), np.zeros(values.shape[0], dtype=bool)
    pos = np.minimum(np.searchsorted(keys, values), keys.shape[0] - 1)
    return pos, keys[pos] == values


#: one table per process: hashes of strings do not depend on the vocab
AFFIXES = AffixTable()


def affix_columns(lower: np.ndarray, strings: StringStore) -> np.ndarray:
    """Affix hashes for tokens given by their ``LOWER`` hashes."""
    return AFFIXES.lookup(np.ascontiguousarray(lower, dtype=np.uint64), strings)
