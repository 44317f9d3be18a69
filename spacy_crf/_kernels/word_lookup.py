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


@njit(cache=True, nogil=True)
def build_entries(keys, values, entries):
    """Fill ``entries`` ((n, 1 + C) uint64, n a power of two longer than
    ``keys``, all 0) with every key and its row of ``values`` ((rows, C));
    ``keys`` are unique uint64, none of them :data:`EMPTY_KEY`."""
    mask = np.uint64(entries.shape[0] - 1)
    for row in range(keys.shape[0]):
        slot = keys[row] & mask
        while entries[slot, 0] != EMPTY_KEY:
            slot = (slot + np.uint64(1)) & mask
        entries[slot, 0] = keys[row]
        for c in range(values.shape[1]):
            entries[slot, 1 + c] = values[row, c]


@njit(cache=True, nogil=True)
def lookup_values(entries, words, missing, out):
    """``out[t] = values of words[t]``, or ``missing`` for a word the table
    does not hold (and for the empty string's id); ``out`` is (N, C)."""
    mask = np.uint64(entries.shape[0] - 1)
    for t in range(words.shape[0]):
        word = words[t]
        slot = word & mask
        found = False
        if word != EMPTY_KEY:
            while True:
                key = entries[slot, 0]
                if key == word:
                    found = True
                    break
                if key == EMPTY_KEY:
                    break
                slot = (slot + np.uint64(1)) & mask
        for c in range(out.shape[1]):
            out[t, c] = entries[slot, 1 + c] if found else missing
