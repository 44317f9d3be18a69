"""Prefix/suffix hashes per word type, cached across batches.

Affixes depend only on the lower-cased word, so they are computed once per
type: a batch's ``LOWER`` hashes are deduplicated and looked up in a sorted
table (vectorised); only types never seen before go through Python (to fetch
their string) and numba. Reading ``Doc.text`` instead would cost a Python
step per token.
"""

import threading
from typing import Sequence

import numpy as np
from spacy.strings import StringStore

from .._kernels.features import N_AFFIX, affix_hashes

N_COLUMNS = 2 * N_AFFIX
MAX_TYPES = 2_000_000  # the table starts afresh past this many types


class AffixTable:
    """Sorted type hashes and their ``N_COLUMNS`` affix hashes."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.uint64)
        self.rows = np.zeros((0, N_COLUMNS), dtype=np.uint64)
        self._lock = threading.Lock()

    def lookup(self, lower: np.ndarray, strings: StringStore) -> np.ndarray:
        """``(N, N_COLUMNS)`` affix hashes for the ``LOWER`` hashes of N tokens."""
        if not lower.shape[0]:
            return np.zeros((0, N_COLUMNS), dtype=np.uint64)
        types, inverse = np.unique(lower, return_inverse=True)
        keys, rows = self.keys, self.rows
        pos, found = _find(keys, types)
        if not found.all():
            keys, rows = self._add(types, found, strings)
            pos, found = _find(keys, types)
        return rows[pos][inverse.reshape(-1)]

    def _add(self, types: np.ndarray, found: np.ndarray, strings: StringStore):
        """Add the batch's unknown types; past MAX_TYPES start afresh with all of
        the batch's types, so every one of them is in the returned table."""
        with self._lock:
            overflow = self.keys.shape[0] + int((~found).sum()) > MAX_TYPES
        new = types if overflow else types[~found]
        texts = [strings[int(h)] for h in new]
        chars = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        starts = np.cumsum(lens) - lens
        new_rows = np.empty((len(texts), N_COLUMNS), dtype=np.uint64)
        affix_hashes(chars, starts, lens, new_rows)
        with self._lock:
            keys, rows = self.keys, self.rows
            if overflow:
                keys, rows = keys[:0], rows[:0]
            _, present = _find(keys, new)
            keys = np.concatenate([keys, new[~present]])
            rows = np.concatenate([rows, new_rows[~present]])
            order = np.argsort(keys, kind="stable")
            self.keys, self.rows = keys[order], rows[order]
            return self.keys, self.rows


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
