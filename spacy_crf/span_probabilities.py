"""Span confidence: the probability of every predicted span under the CRF.

P(span) is the mass of the labellings that contain exactly that span: its
tags, and (in BIO) at the next token no tag that would continue it. Every span
of a sequence comes from the same forward-backward pass (alpha at the span's
start, beta at its end, the potentials in between), so the cost is linear in
tokens however dense the spans are.
"""

from typing import TYPE_CHECKING, Optional, Tuple

import numpy as np

from . import inference, schemes
from .models.potentials import CRFScores
from .structures import BatchLayout

if TYPE_CHECKING:  # targets use this module
    from .targets import SpanTarget


def span_probabilities(scores: CRFScores, structure: BatchLayout,
                       label_ids: np.ndarray, target: "SpanTarget",
                       fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Probability of every span of ``label_ids``, at its first token.

    Parameters
    ----------
    scores : CRFScores
        Potentials with the scheme's constraints applied (``-inf`` where a
        move is forbidden).
    structure : BatchLayout
        Chains of the batch; each sequence's labels must be well formed.
    label_ids : numpy.ndarray
        (N,) int64 labelling, usually the Viterbi one.
    target : SpanTarget
        Gives the scheme and its tags.
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
    prefix, _, _ = target._parsed
    probs = np.full(label_ids.shape[0], np.nan, dtype=np.float32)
    span_end = np.full(label_ids.shape[0], -1, dtype=np.int64)
    starts, ends = schemes.codes_to_spans(prefix[label_ids], target.scheme)
    if not len(starts):
        return probs, span_end
    log_p, _ = inference.span_log_probabilities(scores, structure, label_ids, starts, ends,
                                                target.continuations(), fixed)
    span_end[starts] = ends
    probs[starts] = np.exp(log_p)
    return probs, span_end
