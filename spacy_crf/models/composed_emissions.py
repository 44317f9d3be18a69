"""A batch's emission scores held as their label parts' scores, composed where read.

A factored table (``label_parts.py``) scores a token's parts (``POS=NOUN``,
``Number=Sing``), and a label's score is its parts' summed. Written out, that
is an ``(N, K)`` array the structure then reads again, though a pruned chain
(``structures/pruned_chain.py``) reads each token's few candidates alone: on
UD Greek GDT's morphology (391 labels) composing and writing the array, then
searching it, took more time than everything else in decoding but the
features. So in prediction a factored table may hand the structure its part
scores (:class:`ComposedEmissions`), and the structure composes a block of
tokens at a time, searching it while it is in cache
(``_kernels/pruning.py:compose_candidates``).

Only where the component asks, around its model's prediction
(:func:`deferred_composition`): where its structure reads emissions that way
(``CRFStructure.reads_composed_emissions``) and its model hands the table's
scores to the structure as they are (``spacy-crf.FeatureCRF``). Training
always composes. Any other reader gets the full array
(:meth:`ComposedEmissions.__array__`: ``numpy.asarray`` composes it, once),
so a masked or constrained batch decodes as before, only without the saving.
"""

import contextlib
import contextvars
from typing import Iterator, Optional, Tuple

import numpy as np

from .._kernels.pruning import compose_candidates
from .label_parts import compose_labels, composition_trie

#: whether the factored tables of the model being run hand over their part scores
_DEFERRED = contextvars.ContextVar("spacy_crf_deferred_composition", default=False)


@contextlib.contextmanager
def deferred_composition(active: bool = True) -> Iterator[None]:
    """While in the block (this thread or task only), factored tables run for
    prediction return :class:`ComposedEmissions`, where ``active``."""
    token = _DEFERRED.set(bool(active))
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def composition_deferred() -> bool:
    """Whether a factored table should return :class:`ComposedEmissions` now."""
    return _DEFERRED.get()


class ComposedEmissions:
    """The ``(N, K)`` emission scores of a batch, as a factored table's part
    scores (``(N, P)``), the labels' parts (``starts``, ``index``: label ``k``
    has parts ``index[starts[k]:starts[k + 1]]``) and the labels' ``bias``.

    ``shape``, ``dtype`` and ``len`` are the composed array's; ``numpy.asarray``
    composes it (once). :meth:`candidates` searches each token's best labels
    without it.
    """

    def __init__(self, part_scores: np.ndarray, starts: np.ndarray, index: np.ndarray,
                 bias: np.ndarray, label_scores: Optional[np.ndarray] = None) -> None:
        self.part_scores = np.ascontiguousarray(part_scores)
        self.starts = starts
        self.index = index
        self.bias = np.ascontiguousarray(bias, dtype=self.part_scores.dtype)
        # (N, K) scores of whole labels added to the composed ones; (N, 0): none
        self.label_scores = np.ascontiguousarray(
            np.zeros((len(self.part_scores), 0)) if label_scores is None else label_scores,
            dtype=self.part_scores.dtype)
        self.shape = (self.part_scores.shape[0], len(self.bias))
        self.dtype = self.part_scores.dtype
        self.ndim = 2
        self._composed: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if self._composed is None:
            self._composed = compose_labels(self.part_scores, self.starts, self.index, self.bias)
            if self.label_scores.shape[1]:  # added after the bias, as the kernels add them
                self._composed += self.label_scores
        out = self._composed
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        return out.copy() if copy else out

    def with_label_scores(self, label_scores: np.ndarray) -> "ComposedEmissions":
        """These emissions plus ``label_scores`` (``(N, K)``: a score per token
        and whole label, ``whole_label.py``), still held as parts; the
        structure's search adds them to each block it composes."""
        if self.label_scores.shape[1]:
            label_scores = self.label_scores + label_scores
        return ComposedEmissions(self.part_scores, self.starts, self.index, self.bias,
                                 label_scores)

    def candidates(self, n: int, keep: np.ndarray, margin: float
                   ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each token's ``n`` best labels within ``margin`` of its best (finite),
        with ``keep[t]`` (-1: none) among them, as
        ``structures/pruned_chain.py:best_candidates`` finds them in the
        composed array: ``(cand, counts, scores)``."""
        n_tokens = self.shape[0]
        cand = np.zeros((n_tokens, n), dtype=np.int64)
        counts = np.zeros(n_tokens, dtype=np.int64)
        scores = np.zeros((n_tokens, n), dtype=self.dtype)
        compose_candidates(self.part_scores, *composition_trie(self.starts, self.index),
                           self.bias, self.label_scores, n,
                           np.ascontiguousarray(keep, dtype=np.int64), float(margin),
                           cand, counts, scores)
        return cand, counts, scores
