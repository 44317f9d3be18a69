"""Thin wrappers over the numba kernels: fix dtypes, allocate, check shapes.

Every function takes the model's :class:`~spacy_crf.models.CRFScores` and the
batch's sequence lengths; kernels see float64, C-contiguous arrays.
"""

from typing import Optional, Tuple

import numpy as np

from ._kernels import chain
from .models.potentials import CRFScores

_NO_EDGES = np.zeros((1, 1, 1))


def _f64(array) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float64)


def _free(n_tokens: int, fixed: Optional[np.ndarray]) -> np.ndarray:
    if fixed is None:
        return np.full(n_tokens, -1, dtype=np.int64)
    return np.ascontiguousarray(fixed, dtype=np.int64)


def _check(scores: CRFScores, lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    emissions = _f64(scores.emissions)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if int(lengths.sum()) != emissions.shape[0]:
        raise ValueError(
            f"Sequence lengths sum to {int(lengths.sum())} but there are "
            f"{emissions.shape[0]} rows of emission scores."
        )
    return emissions, lengths


def viterbi(scores: CRFScores, lengths: np.ndarray,
            fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Best labelling of every sequence.

    Returns
    -------
    labels : numpy.ndarray
        (N,) int64 label ids.
    path_scores : numpy.ndarray
        (S,) float64 score of each sequence's best labelling.
    """
    emissions, lengths = _check(scores, lengths)
    labels = np.zeros(emissions.shape[0], dtype=np.int64)
    best = np.zeros(lengths.shape[0])
    chain.viterbi(emissions, lengths, _f64(scores.transitions), _f64(scores.start),
                  _f64(scores.end), _free(emissions.shape[0], fixed), labels, best)
    return labels, best


def marginals(scores: CRFScores, lengths: np.ndarray,
              fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Token marginals ``P(y_t = j)`` and the log partition of every sequence.

    Returns
    -------
    token_marginals : numpy.ndarray
        (N, L) float64, rows sum to one.
    log_z : numpy.ndarray
        (S,) float64.
    """
    emissions, lengths = _check(scores, lengths)
    L = emissions.shape[1]
    log_z = np.zeros(lengths.shape[0])
    out = np.zeros_like(emissions)
    chain.forward_backward(emissions, lengths, _f64(scores.transitions), _f64(scores.start),
                           _f64(scores.end), _free(emissions.shape[0], fixed), log_z, out,
                           np.zeros((L, L)), np.zeros(L), np.zeros(L), _NO_EDGES, False, False)
    return out, log_z


def nll_and_gradient(scores: CRFScores, lengths: np.ndarray,
                     gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
    """Negative log-likelihood of ``gold`` (-1 = unannotated) and its gradient.

    Returns
    -------
    nll : numpy.ndarray
        (S,) float64 per sequence.
    gradient : CRFScores
        Gradients of the summed nll, in the dtype of ``scores``.
    """
    emissions, lengths = _check(scores, lengths)
    L = emissions.shape[1]
    nll = np.zeros(lengths.shape[0])
    d_emissions = np.zeros_like(emissions)
    d_transitions = np.zeros((L, L))
    d_start = np.zeros(L)
    d_end = np.zeros(L)
    chain.nll_gradient(emissions, lengths, _f64(scores.transitions), _f64(scores.start),
                       _f64(scores.end), np.ascontiguousarray(gold, dtype=np.int64), nll,
                       d_emissions, d_transitions, d_start, d_end, False)
    dtype = scores.emissions.dtype
    gradient = CRFScores(
        emissions=d_emissions.astype(dtype),
        transitions=d_transitions.astype(dtype),
        start=d_start.astype(dtype),
        end=d_end.astype(dtype),
        pair=None,
        root=None,
    )
    return nll, gradient
