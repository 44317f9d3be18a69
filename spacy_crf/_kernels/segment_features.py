"""Hashed features of candidate segments, for the semi-Markov CRF (numba only).

Every token ``t`` and length ``d <= D`` within its sequence is a candidate
segment ``t .. t + d - 1``; it gets ``N_SEGMENT_FEATURES`` hashed ids, in this
order: its length; its first word; its last word; the whole segment (every
word, in order); its shape (every word's shape); the word before it; the word
after it. (The segment's tokens' own features are summed in by the semi-Markov
kernel, through the token emissions of its tags.) Words are NORM values,
shapes SHAPE values; a neighbour outside the sequence is a padding value.
Candidates that run past their sequence get id 0: no segment reads them.
"""

import numpy as np
from numba import njit

from .features import PAD, SEED, mix64

N_SEGMENT_FEATURES = 7


@njit(cache=True)
def segment_ids(words, shapes, lengths, max_length, out):
    """Fill ``out`` (N * max_length, N_SEGMENT_FEATURES) uint64: row
    ``t * max_length + d - 1`` holds the ids of the segment of length ``d``
    starting at row ``t``."""
    o = 0
    for s in range(lengths.shape[0]):
        n = lengths[s]
        for i in range(n):
            t = o + i
            before = words[t - 1] if i > 0 else PAD
            whole = mix64(SEED, np.uint64(3))
            shape = mix64(SEED, np.uint64(4))
            for d in range(1, max_length + 1):
                row = t * max_length + d - 1
                if i + d > n:
                    for f in range(N_SEGMENT_FEATURES):
                        out[row, f] = 0
                    continue
                last = t + d - 1
                whole = mix64(whole, words[last])
                shape = mix64(shape, shapes[last])
                after = words[last + 1] if i + d < n else PAD + np.uint64(1)
                out[row, 0] = mix64(mix64(SEED, np.uint64(0)), np.uint64(d))
                out[row, 1] = mix64(mix64(SEED, np.uint64(1)), words[t])
                out[row, 2] = mix64(mix64(SEED, np.uint64(2)), words[last])
                out[row, 3] = whole
                out[row, 4] = shape
                out[row, 5] = mix64(mix64(SEED, np.uint64(5)), before)
                out[row, 6] = mix64(mix64(SEED, np.uint64(6)), after)
        o += n
