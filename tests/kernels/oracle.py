"""Helpers shared by the kernel tests: brute-force enumeration and thin runners."""

import functools
import itertools

import numpy as np

from spacy_crf._kernels.chain import NEG_INF, path_score, viterbi


@functools.lru_cache(maxsize=None)
def all_labellings(n, L):
    """Every labelling of n tokens with L labels, as rows of an (L**n, n) array."""
    return np.array(list(itertools.product(range(L), repeat=n)), dtype=np.int64).reshape(-1, n)


def logsumexp(x):
    """log(sum(exp(x))) of a sequence of scores; -inf when empty or all -inf."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x) if x.size else NEG_INF
    if m == NEG_INF:
        return NEG_INF
    return m + np.log(np.sum(np.exp(x - m)))


def free(N):
    """A ``fixed`` array that fixes nothing."""
    return np.full(N, -1, dtype=np.int64)


def run_viterbi(e, lengths, T, s, en, fixed=None):
    N = e.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    labels = np.full(N, -7, dtype=np.int64)
    scores = np.full(len(lengths), 123.0)
    viterbi(e, lengths, T, s, en, free(N) if fixed is None else fixed, labels, scores)
    return labels, scores


def run_path_score(e, lengths, T, s, en, labels):
    lengths = np.asarray(lengths, dtype=np.int64)
    scores = np.full(len(lengths), 123.0)
    path_score(e, lengths, T, s, en, np.asarray(labels, dtype=np.int64), scores)
    return scores
