"""Chains that run on the tree kernels: a path is a tree whose heads are the previous tokens.

A chain whose moves carry pair matrices of their own (one per token: the
input-dependent transitions of ``input_chain.py``; one per kind of move: the
doc chain's moves across sentence boundaries) is a forest of paths whose
relation groups say which matrix an edge reads, and belief propagation along a
path is forward-backward (max-product is Viterbi). A structure mixes
:class:`TreeKernelPath` in and gives its :meth:`~TreeKernelPath._path`; the
max and sum passes and the likelihood come from here (``_kernels/tree.py``).
"""

from typing import Tuple

import numpy as np

from .._kernels import tree
from ..ragged import sequence_ends
from .base import NO_EDGES, as_f64


def path_forest(lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each token's head (the previous token of its sequence, -1 for the
    first) and the tokens leaves to roots, as the tree kernels read a forest."""
    n = int(np.sum(lengths))
    first, _ = sequence_ends(lengths)
    heads = np.arange(n, dtype=np.int64) - 1
    heads[first] = -1
    order = np.zeros(n, dtype=np.int64)
    tree.check_forest(heads, np.ascontiguousarray(lengths, dtype=np.int64), order)
    return heads, order


def with_end(emissions: np.ndarray, lengths: np.ndarray, end) -> np.ndarray:
    """The emissions with ``end`` added at each sequence's last token (a tree
    has no end scores: the chain's go on its last token's labels)."""
    _, last = sequence_ends(lengths)
    out = emissions.copy()
    out[last] += as_f64(end)
    return out


class TreeKernelPath:
    """The passes and the likelihood of a chain given as a forest of paths."""

    def _path(self, emissions: np.ndarray, scores, layout) -> tuple:
        """Tree-kernel arguments: emissions (with ``end``), lengths, heads,
        order, pair scores ``[group, child label, head label]``, each token's
        group, and the root scores (``start``)."""
        raise NotImplementedError

    def _max_pass(self, emissions, scores, layout, fixed, labels, best):
        tree.max_product(*self._path(emissions, scores, layout), fixed, labels, best)

    def _sum_pass(self, emissions, scores, layout, fixed, log_z, marginals):
        args = self._path(emissions, scores, layout)
        tree.sum_product(*args, fixed, log_z, marginals, NO_EDGES, np.zeros(args[4].shape),
                         np.zeros(emissions.shape[1]), False, False)

    def _path_nll(self, scores, layout, gold) -> Tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray]:
        """(S,) nll of ``gold`` and the gradients of the path's emissions (with
        ``end``), pair scores and root scores."""
        emissions = self.check(scores, layout)
        args = self._path(emissions, scores, layout)
        nll = np.zeros(layout.n_sequences)
        d_emissions = np.zeros_like(emissions)
        d_pair = np.zeros(args[4].shape)
        d_start = np.zeros(emissions.shape[1])
        tree.nll_gradient(*args, np.ascontiguousarray(gold, dtype=np.int64), nll, d_emissions,
                          d_pair, d_start, False)
        return nll, d_emissions, d_pair, d_start
