"""Span confidence: the probability of every predicted span under the CRF.

P(span) is the mass of the labellings that contain exactly that span: its
tags, and (in BIO) at the next token no tag that would continue it. Every span
of a sequence comes from the same forward-backward pass (alpha at the span's
start, beta at its end, the potentials in between), so the cost is linear in
tokens however dense the spans are.
"""

from typing import Optional, Tuple

import numpy as np

from . import inference, schemes
from .models.potentials import CRFScores
from .structures import BatchLayout


def span_probabilities(scores: CRFScores, layout: BatchLayout, label_ids: np.ndarray,
                       prefix: np.ndarray, scheme: str, continuations: np.ndarray,
                       fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Probability of every span of ``label_ids``, at its first token.

    Parameters
    ----------
    scores : CRFScores
        Potentials with the scheme's constraints applied (``-inf`` where a
        move is forbidden).
    layout : BatchLayout
        Chains of the batch; each sequence's labels must be well formed.
    label_ids : numpy.ndarray
        (N,) int64 labelling, usually the Viterbi one.
    prefix : numpy.ndarray
        (L,) the scheme's prefix code of each label (``schemes.parse_tags``).
    scheme : str
        ``BIO`` or ``BILUO``.
    continuations : numpy.ndarray
        (L, L) bool: tag ``j`` after a span ending in tag ``i`` would continue it.
    fixed : numpy.ndarray, optional
        (N,) int64 forced labels (-1 where free): every labelling, and so
        both a span's mass and the normaliser, must agree with them.

    Returns
    -------
    probs : numpy.ndarray
        (N,) float32 P(span) at each span's first token, NaN elsewhere.
    span_end : numpy.ndarray
        (N,) int64 one-past-the-end row of the span starting at a token, -1 elsewhere.
    """
    probs = np.full(label_ids.shape[0], np.nan, dtype=np.float32)
    span_end = np.full(label_ids.shape[0], -1, dtype=np.int64)
    starts, ends = schemes.codes_to_spans(prefix[label_ids], scheme)
    if not len(starts):
        return probs, span_end
    log_p, _ = inference.span_log_probabilities(scores, layout, label_ids, starts, ends,
                                                continuations, fixed)
    span_end[starts] = ends
    # a sure span's log-probability can round a few ulps above 0: a probability
    # stays at most 1, as the token confidences are clipped
    probs[starts] = np.exp(np.minimum(log_p, 0.0))
    return probs, span_end
