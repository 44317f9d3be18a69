"""Word hash -> values of a word table, for a whole batch (numba only, no spaCy).

A word table (Brown clusters, vector clusters) holds up to a few hundred
thousand words, keyed by spaCy's 64-bit string hashes. A binary search over
the sorted keys misses the cache at most of its ~18 steps; an open-addressing
table, at most half full, finds a word in one or two probes. Each entry holds
the key and its values side by side (``entries[slot] = [key, value, ...]``),
so a lookup reads one place in memory, where separate slot, key and value
arrays cost three cache misses a token (44 -> 25 ns a token on EWT). spaCy's
string hashes are murmurhash values, so their low bits are already uniform
and serve as the slot index as they are (a symbol id, a small integer, lands
in an entry of its own too).

An entry whose key is :data:`EMPTY_KEY` (0) is empty: 0 is spaCy's id of the
empty string, which no token has, so no table needs it as a key. A key is
looked for from entry ``key & mask`` onwards (linear probing) until it or an
empty entry is met.
"""

import numpy as np
from numba import njit

EMPTY_KEY = np.uint64(0)


@njit(cache=True, inline="always")
def _slot(entries, key, mask):
    """The entry that holds ``key``, or the empty entry where it would go
    (linear probing from ``key & mask``; the table is never full)."""
    slot = key & mask
    while entries[slot, 0] != key and entries[slot, 0] != EMPTY_KEY:
        slot = (slot + np.uint64(1)) & mask
    return slot


@njit(cache=True, nogil=True)
def lookup_values(entries, words, missing, out):
    """``out[t] = values of words[t]``, or ``missing`` for a word the table
    does not hold (and for the empty string's id); ``out`` is (N, C)."""
    mask = np.uint64(entries.shape[0] - 1)
    for t in range(words.shape[0]):
        word = words[t]
        slot = _slot(entries, word, mask)
        found = word != EMPTY_KEY and entries[slot, 0] == word
        for c in range(out.shape[1]):
            out[t, c] = entries[slot, 1 + c] if found else missing


@njit(cache=True)
def lookup_or_miss(entries, words, empty_row, out, missed):
    """As :func:`lookup_values` for a table that grows: ``out[t]`` gets the
    values of ``words[t]`` and ``missed[t]`` whether the table lacks it (``out[t]``
    is left as it was then); the empty string's id (no entry can hold it) gets
    ``empty_row``. Returns the number of misses.

    Holds the GIL (no ``nogil``): a writer's :func:`insert_missing` in another
    thread then runs before or after it, never during it.
    """
    mask = np.uint64(entries.shape[0] - 1)
    n_missed = 0
    for t in range(words.shape[0]):
        word = words[t]
        missed[t] = False
        if word == EMPTY_KEY:
            for c in range(out.shape[1]):
                out[t, c] = empty_row[c]
            continue
        slot = _slot(entries, word, mask)
        if entries[slot, 0] == word:
            for c in range(out.shape[1]):
                out[t, c] = entries[slot, 1 + c]
        else:
            missed[t] = True
            n_missed += 1
    return n_missed


@njit(cache=True)
def insert_missing(entries, keys, values):
    """Add every one of ``keys`` (unique, none :data:`EMPTY_KEY`) that ``entries``
    lacks, with its row of ``values``; returns how many were added. The caller
    keeps the table at most half full (:func:`rehash` into a larger one). Builds
    a word table too (every key is new to its all-zero entries). Holds the GIL,
    as :func:`lookup_or_miss` does."""
    mask = np.uint64(entries.shape[0] - 1)
    added = 0
    for row in range(keys.shape[0]):
        slot = _slot(entries, keys[row], mask)
        if entries[slot, 0] == EMPTY_KEY:
            for c in range(values.shape[1]):
                entries[slot, 1 + c] = values[row, c]
            entries[slot, 0] = keys[row]  # the key last: the entry exists once it is whole
            added += 1
    return added


def rehash(entries, larger):
    """Every entry of ``entries`` put into ``larger`` (all 0, a longer power of
    two), by :func:`insert_missing` (a table grows rarely: the copy of its
    entries costs nothing that matters)."""
    held = entries[entries[:, 0] != EMPTY_KEY]
    insert_missing(larger, np.ascontiguousarray(held[:, 0]), np.ascontiguousarray(held[:, 1:]))
