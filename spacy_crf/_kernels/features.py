"""Feature hashing kernels (numba only, no spaCy).

A *template* is a conjunction of (attribute column, window offset) parts. For
every token and template the kernel hashes the template id with the values
the parts pick out into one uint64 feature id; the emission layer maps ids to
weight rows by ``id % n_buckets``. Offsets that fall outside the token's
sequence pick a padding value that depends on the offset, so ``w[-1]`` at a
sentence start and ``w[-2]`` there are different features. (CRFsuite instead
drops such features and adds ``__BOS__``/``__EOS__`` ones: our feature sets
differ by that, about 1% more distinct features on CoNLL-2000.)
"""

import numpy as np
from numba import njit

PAD = np.uint64(0x9E3779B97F4A7C15)
SEED = np.uint64(0x2545F4914F6CDD1D)
MUL1 = np.uint64(0xBF58476D1CE4E5B9)
MUL2 = np.uint64(0x94D049BB133111EB)
N_AFFIX = 4


@njit(cache=True)
def mix64(h, v):
    """Combine a value into a running hash (splitmix64 finaliser over h ^ v)."""
    z = (h ^ v) + PAD
    z = (z ^ (z >> np.uint64(30))) * MUL1
    z = (z ^ (z >> np.uint64(27))) * MUL2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def sequence_bounds(lengths, begin, end):
    """For every token, the first and one-past-last row of its sequence."""
    o = 0
    for s in range(lengths.shape[0]):
        n = lengths[s]
        for t in range(o, o + n):
            begin[t] = o
            end[t] = o + n
        o += n


@njit(cache=True)
def hash_templates(values, begin, end, part_ptr, part_col, part_off, first, features):
    """Fill ``features`` (N, K) with one hashed id per token and template.

    Template ``k`` has parts ``part_ptr[k]:part_ptr[k+1]``; part ``p`` reads
    column ``part_col[p]`` of the token at offset ``part_off[p]``:

        features[t, k] = mix(... mix(mix(SEED, first + k), v_p1) ..., v_pm)
        v_p = values[t + off_p, col_p]   if t + off_p lies in t's sequence
            = PAD + off_p + 1024        otherwise (a padding value per offset)

    ``first`` is the templates' position in a longer list (0 for a whole
    list): hashing a list's last templates alone gives that list's last columns.
    """
    n_tokens = values.shape[0]
    n_templates = part_ptr.shape[0] - 1
    # each template's start of the hash is the same at every token: mixed once
    starts = np.empty(n_templates, dtype=np.uint64)
    for k in range(n_templates):
        starts[k] = mix64(SEED, np.uint64(first + k))
    for t in range(n_tokens):
        for k in range(n_templates):
            h = starts[k]
            for p in range(part_ptr[k], part_ptr[k + 1]):
                u = t + part_off[p]
                if u >= begin[t] and u < end[t]:
                    v = values[u, part_col[p]]
                else:
                    v = PAD + np.uint64(part_off[p] + 1024)
                h = mix64(h, v)
            features[t, k] = h


@njit(cache=True)
def affix_hashes(chars, char_start, char_len, out):
    """Hash the prefixes and suffixes of 1..N_AFFIX characters of every token.

    ``chars`` holds the code points of the batch's texts; token ``t`` is
    ``chars[char_start[t]:char_start[t] + char_len[t]]``. Column ``k - 1`` of
    ``out`` gets the prefix of ``k`` characters, column ``N_AFFIX + k - 1`` the
    suffix (the whole token where it is shorter than ``k``).
    """
    for t in range(char_start.shape[0]):
        a = char_start[t]
        n = char_len[t]
        h = SEED
        for k in range(1, N_AFFIX + 1):
            if k <= n:
                h = mix64(h, np.uint64(chars[a + k - 1]))
            out[t, k - 1] = h
        h = mix64(SEED, np.uint64(1))
        for k in range(1, N_AFFIX + 1):
            if k <= n:
                h = mix64(h, np.uint64(chars[a + n - k]))
            out[t, N_AFFIX + k - 1] = h
