"""Word hash -> row of a word table, for a whole batch (numba only, no spaCy).

A word table (Brown clusters, vector clusters) holds up to a few hundred
thousand words, keyed by spaCy's 64-bit string hashes. A binary search over
the sorted keys misses the cache at most of its ~18 steps; an open-addressing
table of slots, at most half full, finds a word in one or two probes. spaCy's
string hashes are murmurhash values, so their low bits are already uniform
and serve as the slot index as they are (a symbol id, a small integer, lands
in a slot of its own too).

``slots[i]`` is the row of the key stored there, or -1 where the slot is
empty; a key is looked for from slot ``key & mask`` onwards (linear probing)
until it or an empty slot is met.
"""

import numpy as np
from numba import njit

EMPTY = -1


@njit(cache=True, nogil=True)
def build_slots(keys, slots):
    """Fill ``slots`` (int32, a power of two longer than ``keys``, all -1)
    with the row of every key; ``keys`` are unique uint64."""
    mask = np.uint64(slots.shape[0] - 1)
    for row in range(keys.shape[0]):
        slot = keys[row] & mask
        while slots[slot] != EMPTY:
            slot = (slot + np.uint64(1)) & mask
        slots[slot] = row


@njit(cache=True, nogil=True)
def lookup_values(slots, keys, values, words, missing, out):
    """``out[t] = values[row of words[t]]``, or ``missing`` for a word the
    table does not hold; ``values`` and ``out`` are (rows, C) and (N, C)."""
    mask = np.uint64(slots.shape[0] - 1)
    for t in range(words.shape[0]):
        word = words[t]
        slot = word & mask
        row = EMPTY
        while True:
            candidate = slots[slot]
            if candidate == EMPTY:
                break
            if keys[candidate] == word:
                row = candidate
                break
            slot = (slot + np.uint64(1)) & mask
        for c in range(out.shape[1]):
            out[t, c] = missing if row == EMPTY else values[row, c]
