"""Prefix/suffix hashes per word type, cached across batches.

Affixes depend only on the lower-cased word, so they are computed once per
type and kept in an open-addressing table keyed by the ``LOWER`` hash
(``_kernels/word_lookup.py``): a batch's tokens are looked up in one numba
pass, and only types never seen before go through Python (to fetch their
string) and numba. Reading ``Doc.text`` instead would cost a Python step per
token. (A sorted table needed the batch's types sorted first: ``np.unique``
cost ~60 ns a token on EWT, more than the lookups.)
"""

import threading
from typing import Tuple

import numpy as np
from spacy.strings import StringStore

from .._kernels.features import N_AFFIX, affix_hashes
from .._kernels.word_lookup import insert_missing, lookup_or_miss, rehash

N_COLUMNS = 2 * N_AFFIX
MAX_TYPES = 2_000_000  # the table starts afresh past this many types
_FIRST_ENTRIES = 1 << 12
_EMPTY_ROW = None  # (the empty string's affixes: _empty_string_row)


class AffixTable:
    """Word types (``LOWER`` hashes) and their ``N_COLUMNS`` affix hashes.

    The table is ``(entries, n_types)``, published as one tuple. Writers (a
    batch with new types) take the lock and add entries in place, the key of
    an entry last; past half full they move to a table twice the size, past
    MAX_TYPES to a fresh one, and publish it. A reader takes the tuple in one
    attribute read and never needs the lock: entries are only ever added, a
    type's affixes never change, and its lookup kernel and a writer's insert
    hold the GIL, so one runs before the other. A reader that kept an older
    table misses what was added since and looks again after the writer's turn.
    """

    def __init__(self) -> None:
        self._table: Tuple[np.ndarray, int] = (_empty_entries(_FIRST_ENTRIES), 0)
        self._lock = threading.Lock()

    def lookup(self, lower: np.ndarray, strings: StringStore) -> np.ndarray:
        """``(N, N_COLUMNS)`` affix hashes for the ``LOWER`` hashes of N tokens."""
        out = np.empty((lower.shape[0], N_COLUMNS), dtype=np.uint64)
        if not lower.shape[0]:
            return out
        missed = np.empty(lower.shape[0], dtype=np.bool_)
        entries, _ = self._table
        empty_row = _empty_string_row(strings)
        while lookup_or_miss(entries, lower, empty_row, out, missed):
            entries = self._add(lower, missed, strings)
        return out

    def _add(self, lower: np.ndarray, missed: np.ndarray, strings: StringStore) -> np.ndarray:
        """Add the types of a batch's tokens that ``missed`` (their ``LOWER``
        hashes) and return entries that hold every type of the batch.

        Under the lock, against the table as it is then (another thread may
        have added some of them, or started afresh without them). Past
        MAX_TYPES the table starts afresh with all the batch's types (the
        ones it had found too, or its next lookup would miss those).
        """
        with self._lock:
            entries, n_types = self._table
            types = np.unique(lower[missed])
            held = np.empty((types.shape[0], N_COLUMNS), dtype=np.uint64)
            still = np.empty(types.shape[0], dtype=np.bool_)
            lookup_or_miss(entries, types, _empty_string_row(strings), held, still)
            new = types[still]
            if n_types + new.shape[0] > MAX_TYPES:
                new = np.unique(lower)
                entries, n_types, new = _empty_entries(_FIRST_ENTRIES), 0, new[new != 0]
            size = entries.shape[0]
            while 2 * (n_types + new.shape[0]) > size:
                size *= 2
            if size != entries.shape[0]:
                larger = _empty_entries(size)
                rehash(entries, larger)
                entries = larger
            n_types += insert_missing(entries, new, _affix_rows(new, strings))
            self._table = (entries, n_types)
            return entries


def _empty_entries(n: int) -> np.ndarray:
    return np.zeros((n, 1 + N_COLUMNS), dtype=np.uint64)


def _affix_rows(types: np.ndarray, strings: StringStore) -> np.ndarray:
    """The affix hashes of word types given by their ``LOWER`` hashes."""
    texts = [strings[int(h)] for h in types]
    chars = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    starts = np.cumsum(lens) - lens
    out = np.empty((len(texts), N_COLUMNS), dtype=np.uint64)
    affix_hashes(chars, starts, lens, out)
    return out


def _empty_string_row(strings: StringStore) -> np.ndarray:
    """The affix hashes of the empty string (id 0, which no table entry can
    hold; spaCy makes no token of it), computed on first use, not at import."""
    global _EMPTY_ROW
    if _EMPTY_ROW is None:
        _EMPTY_ROW = _affix_rows(np.zeros(1, dtype=np.uint64), strings)[0]
    return _EMPTY_ROW


#: one table per process: hashes of strings do not depend on the vocab
AFFIXES = AffixTable()


def affix_columns(lower: np.ndarray, strings: StringStore) -> np.ndarray:
    """Affix hashes for tokens given by their ``LOWER`` hashes."""
    return AFFIXES.lookup(np.ascontiguousarray(lower, dtype=np.uint64), strings)
