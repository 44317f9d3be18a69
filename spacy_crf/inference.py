"""Thin wrappers over the numba kernels: fix dtypes, allocate, check shapes.

Every function takes the model's :class:`~spacy_crf.models.CRFScores` and a
:class:`Structure` saying how the batch's tokens are connected: a chain per
sequence, or a forest given by head indices. Kernels see float64,
C-contiguous arrays.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ._kernels import chain, kbest, span_marginals as spans, tree
from .errors import Errors
from .models.potentials import CRFScores

_NO_EDGES = np.zeros((1, 1, 1))


@dataclass
class Structure:
    """How the tokens of a batch are linked.

    Attributes
    ----------
    lengths : numpy.ndarray
        (S,) int64 sequences (chain) or segments (tree) summing to N.
    heads : numpy.ndarray, optional
        (N,) int64 absolute head row, -1 at roots (tree only).
    order : numpy.ndarray, optional
        (N,) int64 children-before-heads order (tree only).
    relations : numpy.ndarray, optional
        (N,) int64 relation group of each token's edge to its head (tree only).
    """

    lengths: np.ndarray
    heads: Optional[np.ndarray] = None
    order: Optional[np.ndarray] = None
    relations: Optional[np.ndarray] = None

    @property
    def is_tree(self) -> bool:
        return self.heads is not None

    @classmethod
    def chain(cls, lengths: np.ndarray) -> "Structure":
        return cls(np.ascontiguousarray(lengths, dtype=np.int64))

    @classmethod
    def forest(cls, lengths: np.ndarray, heads: np.ndarray, order: np.ndarray,
               relations: Optional[np.ndarray] = None) -> "Structure":
        heads = np.ascontiguousarray(heads, dtype=np.int64)
        if relations is None:
            relations = np.zeros(heads.shape[0], dtype=np.int64)
        return cls(np.ascontiguousarray(lengths, dtype=np.int64), heads,
                   np.ascontiguousarray(order, dtype=np.int64),
                   np.ascontiguousarray(relations, dtype=np.int64))


def _f64(array) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float64)


def _labels_or_free(n_tokens: int, fixed: Optional[np.ndarray]) -> np.ndarray:
    if fixed is None:
        return np.full(n_tokens, -1, dtype=np.int64)
    return np.ascontiguousarray(fixed, dtype=np.int64)


def _emissions(scores: CRFScores, structure: Structure) -> np.ndarray:
    emissions = _f64(scores.emissions)
    if int(structure.lengths.sum()) != emissions.shape[0]:
        raise ValueError(Errors.E063.format(n_tokens=int(structure.lengths.sum()),
                                            n_rows=emissions.shape[0]))
    if structure.is_tree and structure.relations.size and (
            structure.relations.max() >= scores.pair.shape[0] or structure.relations.min() < 0):
        raise ValueError(Errors.E064.format(n_groups=scores.pair.shape[0],
                                            low=int(structure.relations.min()),
                                            high=int(structure.relations.max())))
    return emissions


def viterbi(scores: CRFScores, structure: Structure,
            fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Best labelling (Viterbi, or max-product on trees), honouring ``fixed``.

    Returns
    -------
    labels : numpy.ndarray
        (N,) int64 label ids.
    best_scores : numpy.ndarray
        (S,) float64 score of each sequence's best labelling.
    """
    emissions = _emissions(scores, structure)
    labels = np.zeros(emissions.shape[0], dtype=np.int64)
    best = np.zeros(structure.lengths.shape[0])
    fixed = _labels_or_free(emissions.shape[0], fixed)
    if structure.is_tree:
        tree.max_product(emissions, structure.lengths, structure.heads, structure.order,
                         _f64(scores.pair), structure.relations, _f64(scores.root), fixed,
                         labels, best)
    else:
        chain.viterbi(emissions, structure.lengths, _f64(scores.transitions), _f64(scores.start),
                      _f64(scores.end), fixed, labels, best)
    return labels, best


def marginals(scores: CRFScores, structure: Structure,
              fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Token marginals ``P(y_t = j)`` and the log partition of every sequence.

    Returns
    -------
    token_marginals : numpy.ndarray
        (N, L) float64, rows sum to one.
    log_z : numpy.ndarray
        (S,) float64.
    """
    emissions = _emissions(scores, structure)
    L = emissions.shape[1]
    log_z = np.zeros(structure.lengths.shape[0])
    out = np.zeros_like(emissions)
    fixed = _labels_or_free(emissions.shape[0], fixed)
    if structure.is_tree:
        tree.sum_product(emissions, structure.lengths, structure.heads, structure.order,
                         _f64(scores.pair), structure.relations, _f64(scores.root), fixed,
                         log_z, out, _NO_EDGES, np.zeros(scores.pair.shape), np.zeros(L),
                         False, False)
    else:
        chain.forward_backward(emissions, structure.lengths, _f64(scores.transitions),
                               _f64(scores.start), _f64(scores.end), fixed, log_z, out,
                               np.zeros((L, L)), np.zeros(L), np.zeros(L), _NO_EDGES, False,
                               False)
    return out, log_z


def nll_and_gradient(scores: CRFScores, structure: Structure,
                     gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
    """Negative log-likelihood of ``gold`` (-1 = unannotated) and its gradient.

    Returns
    -------
    nll : numpy.ndarray
        (S,) float64 per sequence.
    gradient : CRFScores
        Gradients of the summed nll, in the dtype of ``scores``; the
        parameters the structure does not use get ``None``.
    """
    emissions = _emissions(scores, structure)
    L = emissions.shape[1]
    nll = np.zeros(structure.lengths.shape[0])
    d_emissions = np.zeros_like(emissions)
    gold = np.ascontiguousarray(gold, dtype=np.int64)
    dtype = scores.emissions.dtype
    if structure.is_tree:
        d_pair = np.zeros(scores.pair.shape)
        d_root = np.zeros(L)
        tree.nll_gradient(emissions, structure.lengths, structure.heads, structure.order,
                          _f64(scores.pair), structure.relations, _f64(scores.root), gold, nll,
                          d_emissions, d_pair, d_root, False)
        gradient = CRFScores(d_emissions.astype(dtype), None, None, None,
                             d_pair.astype(dtype), d_root.astype(dtype))
    else:
        d_transitions = np.zeros((L, L))
        d_start = np.zeros(L)
        d_end = np.zeros(L)
        chain.nll_gradient(emissions, structure.lengths, _f64(scores.transitions),
                           _f64(scores.start), _f64(scores.end), gold, nll, d_emissions,
                           d_transitions, d_start, d_end, False)
        gradient = CRFScores(d_emissions.astype(dtype), d_transitions.astype(dtype),
                             d_start.astype(dtype), d_end.astype(dtype), None, None)
    return nll, gradient


def n_best(scores: CRFScores, structure: Structure, k: int,
           fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` best labellings of every sequence (exact list Viterbi; chain only).

    Returns
    -------
    labels : numpy.ndarray
        (k, N) int64: row ``r`` holds every sequence's ``r``-th best labelling.
    best_scores : numpy.ndarray
        (S, k) float64, descending; ``-inf`` past ``counts``.
    counts : numpy.ndarray
        (S,) int64 number of labellings found (fewer than ``k`` where fewer exist).
    """
    if structure.is_tree or k < 1:
        raise ValueError(Errors.E065.format(k=k, structure="tree" if structure.is_tree else "chain"))
    emissions = _emissions(scores, structure)
    n_seq = structure.lengths.shape[0]
    labels = np.zeros((k, emissions.shape[0]), dtype=np.int64)
    best = np.zeros((n_seq, k))
    counts = np.zeros(n_seq, dtype=np.int64)
    kbest.kbest_viterbi(emissions, structure.lengths, _f64(scores.transitions), _f64(scores.start),
                        _f64(scores.end), _labels_or_free(emissions.shape[0], fixed), k, labels,
                        best, counts)
    return labels, best, counts


def span_log_probabilities(scores: CRFScores, structure: Structure, labels: np.ndarray,
                           starts: np.ndarray, ends: np.ndarray, blocked_after: np.ndarray,
                           fixed: Optional[np.ndarray] = None,
                           force_log: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Log probability of each span ``[starts[k], ends[k])`` of ``labels`` (chain only).

    One forward-backward per sequence serves all its spans (see
    ``_kernels/span_marginals.py``). ``blocked_after`` is (L, L) bool: tag
    ``j`` may not follow a span ending in tag ``i`` (it would continue it).

    Returns
    -------
    log_p : numpy.ndarray
        (M,) float64; NaN for spans of a sequence ``fixed`` leaves no labelling.
    log_z : numpy.ndarray
        (S,) float64.
    """
    if structure.is_tree:
        raise ValueError(Errors.E051)
    emissions = _emissions(scores, structure)
    L = emissions.shape[1]
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    blocked_after = np.ascontiguousarray(blocked_after, dtype=np.bool_)
    _check_spans(labels, starts, ends, blocked_after, structure.lengths, emissions.shape[0], L)
    log_p = np.zeros(starts.shape[0])
    log_z = np.zeros(structure.lengths.shape[0])
    spans.span_marginals(emissions, structure.lengths, _f64(scores.transitions), _f64(scores.start),
                         _f64(scores.end), _labels_or_free(emissions.shape[0], fixed), labels,
                         starts, ends, blocked_after, log_z,
                         log_p, force_log)
    return log_p, log_z


def _check_spans(labels: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 blocked_after: np.ndarray, lengths: np.ndarray, n_tokens: int,
                 n_labels: int) -> None:
    """E050 unless the spans are non-empty, sorted, each inside one sequence, and
    the labels are label ids: the kernel trusts all that (a span past the end of
    its sequence would read the next one's rows, or past the arrays)."""
    ok = (labels.shape == (n_tokens,) and starts.shape == ends.shape
          and blocked_after.shape == (n_labels, n_labels)
          and bool(np.all(starts < ends)) and bool(np.all(np.diff(starts) >= 0)))
    if ok and starts.size:
        seq_end = np.cumsum(lengths)
        seq = np.searchsorted(seq_end, starts, side="right")  # the sequence holding each start
        ok = starts[0] >= 0 and seq[-1] < len(seq_end) and bool(np.all(ends <= seq_end[seq]))
    if ok and labels.size:
        ok = 0 <= labels.min() and labels.max() < n_labels
    if not ok:
        raise ValueError(Errors.E050.format(n_labels=n_labels))
