"""Inference over a batch, whatever its structure.

Every function takes the model's :class:`~spacy_crf.models.CRFScores` and the
batch layout of a structure (``spacy_crf.structures``: a
:class:`~spacy_crf.structures.ChainLayout`, a
:class:`~spacy_crf.structures.TreeLayout`, ...) and hands them to that
structure, which checks shapes, fixes dtypes and runs its numba kernels.
"""

from typing import Optional, Tuple

import numpy as np

from .models.potentials import CRFScores
from .structures import BatchLayout


def viterbi(scores: CRFScores, layout: BatchLayout,
            fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Best labelling (Viterbi, or max-product on trees), honouring ``fixed``.

    Returns
    -------
    labels : numpy.ndarray
        (N,) int64 label ids.
    best_scores : numpy.ndarray
        (S,) float64 score of each sequence's best labelling.
    """
    return layout.structure.viterbi(scores, layout, fixed)


def marginals(scores: CRFScores, layout: BatchLayout,
              fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Token marginals ``P(y_t = j)`` and the log partition of every sequence.

    Returns
    -------
    token_marginals : numpy.ndarray
        (N, L) float64, rows sum to one.
    log_z : numpy.ndarray
        (S,) float64.
    """
    return layout.structure.marginals(scores, layout, fixed)


def nll_and_gradient(scores: CRFScores, layout: BatchLayout,
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
    return layout.structure.nll_and_gradient(scores, layout, gold)


def n_best(scores: CRFScores, layout: BatchLayout, k: int,
           fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` best labellings of every sequence (exact list Viterbi, where the
    structure defines it).

    Returns
    -------
    labels : numpy.ndarray
        (k, N) int64: row ``r`` holds every sequence's ``r``-th best labelling.
    best_scores : numpy.ndarray
        (S, k) float64, descending; ``-inf`` past ``counts``.
    counts : numpy.ndarray
        (S,) int64 number of labellings found (fewer than ``k`` where fewer exist).
    """
    return layout.structure.n_best(scores, layout, k, fixed)


def span_log_probabilities(scores: CRFScores, layout: BatchLayout, labels: np.ndarray,
                           starts: np.ndarray, ends: np.ndarray, blocked_after: np.ndarray,
                           fixed: Optional[np.ndarray] = None,
                           force_log: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Log probability of each span ``[starts[k], ends[k])`` of ``labels``.

    One forward-backward per sequence serves all its spans (see
    ``_kernels/span_probabilities.py``). ``blocked_after`` is (L, L) bool: tag
    ``j`` may not follow a span ending in tag ``i`` (it would continue it).

    Returns
    -------
    log_p : numpy.ndarray
        (M,) float64; NaN for spans of a sequence ``fixed`` leaves no labelling.
    log_z : numpy.ndarray
        (S,) float64.
    """
    return layout.structure.span_log_probabilities(scores, layout, labels, starts, ends,
                                                   blocked_after, fixed, force_log)
