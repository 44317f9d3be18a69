"""Emissions factored over label parts (numba only, no spaCy).

A label's score is the sum of its parts' scores and its own bias: the
morphology's ``"Number=Sing|POS=NOUN"`` scores ``POS=NOUN`` plus
``Number=Sing``. The parts of label ``k`` are ``index[starts[k]:starts[k + 1]]``
(a CSR row), so the cost per token is the number of (label, part) pairs,
linear in the labels.

The forward kernels add the parts along a trie of the labels' part lists
(``models/label_parts.py:composition_trie``): labels that share parts share
the partial sums, so a token costs one add per trie node and one per label,
not one per (label, part) pair: on UD Greek GDT's morphology 730 nodes and
391 labels against 2,168 pairs. Node ``i``'s sum is its ``parent[i]``'s plus
part ``part[i]``; node 0 is the root (no part, a sum of 0); label ``k``'s
score is node ``label_node[k]``'s sum plus ``bias[k]``. Every node's sum of a
block of tokens is kept (a row each), not a stack of the current path: a
stack row written and read again at once measured 3x slower.
"""

import numpy as np
from numba import njit


#: tokens composed at a time: a block's part, node and label scores are held
#: transposed (a row per part, node or label), so the adds run over contiguous
#: tokens (SIMD) instead of gathering each label's few parts one token at a time
#: (3.4 ns a label a token on EWT's 321 labels of 80 parts, scalar). 64: the
#: candidate search over a block (``pruning.compose_candidates``) holds which
#: of its tokens keep a label as the bits of one word
BLOCK = 64


@njit(cache=True, inline="always")
def load_block(part_scores, t0, parts):
    """Tokens ``t0 .. t0 + BLOCK`` of ``part_scores`` into ``parts`` (n_parts,
    BLOCK), transposed; the number of tokens there. The columns past the
    last token keep what they held (the caller reads those tokens' scores
    nowhere)."""
    m = min(BLOCK, part_scores.shape[0] - t0)
    for u in range(m):
        for p in range(part_scores.shape[1]):
            parts[p, u] = part_scores[t0 + u, p]
    return m


@njit(cache=True, inline="always")
def compose_block(parts, parent, part, label_node, bias, nodes, labels):
    """``labels[k, u]`` = bias[k] + the sum of ``parts[p, u]`` over label k's
    parts, for a block of BLOCK tokens, through the trie's ``nodes`` (see
    the module)."""
    for i in range(1, parent.shape[0]):
        above = nodes[parent[i]]
        column = parts[part[i]]
        row = nodes[i]
        for u in range(BLOCK):
            row[u] = above[u] + column[u]
    for k in range(bias.shape[0]):
        node = nodes[label_node[k]]
        row = labels[k]
        b = bias[k]
        for u in range(BLOCK):
            row[u] = node[u] + b


@njit(cache=True, inline="always")
def add_label_scores(label_scores, t0, m, labels):
    """``labels[k, u] += label_scores[t0 + u, k]`` for the block's ``m``
    tokens: what a token scores for each whole label beside its parts
    (``models/whole_label.py``); nothing where ``label_scores`` has no column."""
    for u in range(m):
        for k in range(label_scores.shape[1]):
            labels[k, u] += label_scores[t0 + u, k]


@njit(cache=True)
def compose_parts(part_scores, parent, part, label_node, bias, out):
    """out[t, k] = bias[k] + sum of part_scores[t, p] over the parts p of label k
    (the labels' trie ``parent``, ``part``, ``label_node``: see the module)."""
    n_tokens, n_parts = part_scores.shape
    n_labels = bias.shape[0]
    parts = np.zeros((n_parts, BLOCK), dtype=part_scores.dtype)
    nodes = np.zeros((parent.shape[0], BLOCK), dtype=part_scores.dtype)
    labels = np.empty((n_labels, BLOCK), dtype=out.dtype)
    for t0 in range(0, n_tokens, BLOCK):
        m = load_block(part_scores, t0, parts)
        compose_block(parts, parent, part, label_node, bias, nodes, labels)
        for u in range(m):
            for k in range(n_labels):
                out[t0 + u, k] = labels[k, u]


@njit(cache=True)
def compose_parts_backward(d_out, starts, index, d_parts):
    """d_parts[t, p] = sum of d_out[t, k] over the labels k that have part p
    (the gradient of :func:`compose_parts` with respect to ``part_scores``)."""
    n_labels = d_out.shape[1]
    for t in range(d_out.shape[0]):
        for p in range(d_parts.shape[1]):
            d_parts[t, p] = 0.0
        for k in range(n_labels):
            grad = d_out[t, k]
            if grad == 0.0:
                continue  # a pruned label's score has no gradient
            for j in range(starts[k], starts[k + 1]):
                d_parts[t, index[j]] += grad
