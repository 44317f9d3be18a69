"""Entity-level outcomes of a span target (``ents``, ``spans:KEY``): what the
BILUO token views cannot show.

A predicted span is *correct* when a gold span has exactly its boundaries and
its type (spaCy's ``ents_p/r/f`` convention). Boundaries are compared as
character offsets, so the gold and predicted docs may be tokenised differently.
No matplotlib here: the counting is testable (and usable) without the extra.
"""

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Span

from .. import token_values
from ..pipeline.extensions import SHARED_CONFIDENCE, SPAN_CONFIDENCE, stem

#: the extra row (a predicted span with no gold span at its boundaries) and the
#: extra column (a gold span with no predicted span at its boundaries)
SPURIOUS = "spurious"
MISSED = "missed"

Bounds = Tuple[int, int]


def _by_bounds(spans: Iterable[Span]) -> Dict[Bounds, str]:
    return {(sp.start_char, sp.end_char): sp.label_ for sp in spans}


def span_confusion(gold: Sequence[Optional[Sequence[Span]]],
                   pred: Sequence[Sequence[Span]]) -> Tuple[List[str], np.ndarray]:
    """The span types and the entity-level confusion counts, by exact span matching.

    Parameters
    ----------
    gold : sequence of (sequence of Span or None)
        The gold spans of each doc; None for a doc without span annotation
        (skipped, with its predictions: nothing is known about it).
    pred : sequence of sequence of Span
        The predicted spans of the same docs.

    Returns
    -------
    types : list of str
        The span types seen in gold or predictions, sorted.
    counts : np.ndarray
        ``(T + 1, T + 1)`` int64. ``counts[i, j]`` for ``i, j < T``: gold spans
        of type ``i`` predicted with the same boundaries as type ``j``;
        ``counts[i, T]``: gold spans of type ``i`` with no predicted span at
        their boundaries (missed); ``counts[T, j]``: predicted spans of type
        ``j`` with no gold span at their boundaries (spurious); ``counts[T, T]``
        is 0. A boundary error is one missed and one spurious span.
    """
    pairs: List[Tuple[Optional[str], Optional[str]]] = []
    for gold_spans, pred_spans in zip(gold, pred):
        if gold_spans is None:
            continue
        g, p = _by_bounds(gold_spans), _by_bounds(pred_spans)
        pairs.extend((label, p.get(bounds)) for bounds, label in g.items())
        pairs.extend((None, label) for bounds, label in p.items() if bounds not in g)
    types = sorted({t for pair in pairs for t in pair if t is not None})
    index = {t: i for i, t in enumerate(types)}
    T = len(types)
    counts = np.zeros((T + 1, T + 1), dtype=np.int64)
    for g_type, p_type in pairs:
        counts[index.get(g_type, T), index.get(p_type, T)] += 1
    return types, counts


def span_scores(counts: np.ndarray) -> Tuple[float, float, float]:
    """Exact-match precision, recall and F1 of a :func:`span_confusion` matrix
    (NaN where undefined)."""
    T = counts.shape[0] - 1
    correct = float(np.trace(counts[:T, :T]))
    n_pred = float(counts[:, :T].sum())
    n_gold = float(counts[:T, :].sum())
    p = correct / n_pred if n_pred else float("nan")
    r = correct / n_gold if n_gold else float("nan")
    f = 2 * p * r / (p + r) if n_pred and n_gold and (p + r) else float("nan")
    return p, r, f


def span_confidence(span: Span, component: Optional[str] = None) -> Optional[float]:
    """The confidence stored for ``span``: that of the crf_tagger named
    ``component`` (``span._.{stem}_confidence``), or with ``component`` None
    ``span._.crf_confidence`` (the values of the one component that stored any);
    None where none is stored.

    A pipeline of several crf_taggers may hold several components' values on
    one doc (any of them with ``store_confidence``): read the one plotted by
    name, as ``crf-plots`` does, not the shared extension (E191 there, or the
    values of a component named ``crf``).
    """
    if component is not None:
        return token_values.span_value(span, SPAN_CONFIDENCE, stem(component))
    return span._.get(SHARED_CONFIDENCE) if span.has_extension(SHARED_CONFIDENCE) else None


def span_confidences(gold: Sequence[Optional[Sequence[Span]]], pred: Sequence[Sequence[Span]],
                     component: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
    """The stored confidence of each predicted span of an annotated doc
    (:func:`span_confidence`: the crf_tagger ``component``'s, or with None
    ``span._.crf_confidence``), and whether the span is correct (same
    boundaries and type as a gold span). Spans without a stored confidence
    are left out."""
    conf: List[float] = []
    correct: List[bool] = []
    for gold_spans, pred_spans in zip(gold, pred):
        if gold_spans is None:
            continue
        g = _by_bounds(gold_spans)
        for sp in pred_spans:
            c = span_confidence(sp, component)
            if c is None:
                continue
            conf.append(float(c))
            correct.append(g.get((sp.start_char, sp.end_char)) == sp.label_)
    return np.asarray(conf, dtype=float), np.asarray(correct, dtype=bool)


def reliability_bins(conf: np.ndarray, correct: np.ndarray, n_bins: int = 10
                     ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per equal-width confidence bin on [0, 1]: the mean confidence, the share
    correct (NaN for an empty bin) and the number of spans.

    A confidence of exactly 1 falls in the last bin.
    """
    which = np.minimum((np.asarray(conf) * n_bins).astype(np.int64), n_bins - 1)
    n = np.bincount(which, minlength=n_bins).astype(np.int64)
    sum_conf = np.bincount(which, weights=conf, minlength=n_bins)
    sum_correct = np.bincount(which, weights=np.asarray(correct, dtype=float), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, sum_conf / n, np.nan), np.where(n > 0, sum_correct / n, np.nan), n


def expected_calibration_error(conf: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> float:
    """The count-weighted mean gap between confidence and accuracy over the bins
    of :func:`reliability_bins` (NaN without spans)."""
    mean_conf, acc, n = reliability_bins(conf, correct, n_bins)
    if not n.sum():
        return float("nan")
    used = n > 0
    return float((n[used] * np.abs(mean_conf[used] - acc[used])).sum() / n.sum())
