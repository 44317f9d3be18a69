"""A crf_tagger's decoded batch, and how it is written onto the Docs.

``CRFTagger.predict`` decodes the scores into a :class:`CRFPrediction`;
``set_annotations`` hands it to :func:`write_prediction`, which writes labels
through the target and the stored confidences and n-best lists into
``doc.user_data`` under the component's name, aligned to the tokens' characters
(:mod:`spacy_crf.token_values`), where the extensions of :mod:`.extensions` read them.
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc

from .. import inference
from ..errors import Warnings, warn
from ..features.doc_arrays import DocBatch
from ..models.composed_emissions import deferred_composition
from ..models.potentials import CRFScores, rows_from
from ..models.token_transitions import FEATURE_CRF
from ..structures import BatchLayout
from ..structures.base import sequence_lengths
from .. import token_values
from .extensions import CONFIDENCE, NBEST, SPAN_CONFIDENCE, stem, store_n_best
from .state import ComponentState

#: per sequence, its best labellings as (probability, label strings)
NBestLists = List[List[Tuple[float, List[str]]]]


@dataclass
class CRFPrediction:
    """Decoded label ids of a batch, concatenated, with per-doc lengths."""

    label_ids: np.ndarray  # (N,) int64
    doc_lengths: np.ndarray  # (D,) int64
    confidence: Optional[np.ndarray] = None  # (N,) float32 P(predicted label)
    # (N,) P(the predicted span starting here) and (N,) its end row; NaN / -1 elsewhere
    span_confidence: Optional[Tuple[np.ndarray, np.ndarray]] = None
    n_best: Optional[NBestLists] = None  # per sequence
    # whether any doc had labels to keep when decoded (keep_existing; None: not asked)
    had_existing: Optional[bool] = None


def model_scores(state: ComponentState, batch: DocBatch) -> CRFScores:
    """The model's scores of ``batch`` for decoding. Where the structure reads a
    factored table's part scores (``CRFStructure.reads_composed_emissions``)
    and the model hands the table's scores on as they are (a
    ``spacy-crf.FeatureCRF``), the table leaves composing the labels' scores
    to the structure (``models/composed_emissions.py``)."""
    defer = state.structure.reads_composed_emissions and state.model.name == FEATURE_CRF
    with deferred_composition(defer):
        return state.model.predict(batch)


def decode(state: ComponentState, docs: Sequence[Doc], scores: CRFScores, layout: BatchLayout,
           lengths: np.ndarray) -> CRFPrediction:
    """Viterbi labels of constrained ``scores`` of ``docs``, with the confidences
    and n-best lists the component's settings ask for (``store_confidence``,
    ``n_best``); labels already on the docs are kept where ``keep_existing``."""
    fixed = had_existing = None
    free_scores = scores  # (a target keeping labels may mask a copy of them)
    live = [doc for doc in docs if len(doc)]
    if state.keep_existing:
        # a batch of fresh docs (the usual one) has nothing to keep: asked once
        # per doc here, not again as each doc is read and written
        had_existing = any(state.target.has_existing(doc) for doc in live)
    kept = None
    if had_existing:
        fixed, scores = state.target.fixed_labels(live, scores)
        if not state.target.is_span_target:
            kept = state.target.kept_values(live, fixed, state.name)
    forced = state.target.forced_labels(live)
    if forced is not None:
        fixed = forced if fixed is None else np.where(forced >= 0, forced, fixed)
    if fixed is not None and not (fixed >= 0).any():
        fixed = None  # nothing on the docs to keep: decode freely (the same, faster)
    label_ids, best = inference.viterbi(scores, layout, fixed)
    stuck = None  # sequences whose kept labels no labelling holds (W046)
    if (fixed is not None or scores is not free_scores) and np.isneginf(best).any():
        stuck = np.isneginf(best)
        fixed, scores = free_where_stuck(state, layout, fixed, forced, best, scores, free_scores)
        label_ids, _ = inference.viterbi(scores, layout, fixed)
    confidence = spans = nbest = None
    if state.cfg["store_confidence"] or state.cfg["n_best"]:
        probs, log_z = inference.marginals(scores, layout, fixed)
    if state.cfg["n_best"]:
        nbest = n_best_lists(scores, layout, fixed, log_z, state.cfg["n_best"], state.tags,
                             empty=stuck)
    if state.cfg["store_confidence"]:
        # marginals are float32: a sure label can round a few ulps above 1
        confidence = np.clip(probs[np.arange(len(label_ids)), label_ids], 0.0, 1.0
                             ).astype(np.float32)
        if kept is not None:  # a value kept is given, not predicted
            confidence[kept] = 1.0
        spans = state.target.span_confidence(scores, layout, label_ids, fixed)
    return CRFPrediction(label_ids, lengths, confidence, spans, nbest, had_existing)


def free_where_stuck(state: ComponentState, layout: BatchLayout, fixed: Optional[np.ndarray],
                     forced: Optional[np.ndarray], best: np.ndarray, scores: CRFScores,
                     free_scores: CRFScores) -> Tuple[Optional[np.ndarray], CRFScores]:
    """``fixed`` and ``scores`` with what the docs' kept values constrain freed
    in each sequence that no labelling agrees with (``best`` -inf): the labels
    kept (an entity kept across a sentence boundary, ``sequence =
    "sentence"``; a pair of kept tags an order-2 chain never saw), and the
    labels a kept part rules out (``scores`` masked, e.g. the ``morph``
    labels of another POS than a kept one, which can leave an order-2 chain no
    pair: ``free_scores`` unmasked). Those sequences are decoded as if nothing
    were kept (the target's forced labels stay), and the values kept are
    still written (``write_batch``), so the rest is not lost to one impossible
    constraint; W046 says so, once per component."""
    stuck = np.repeat(np.isneginf(best), layout.lengths)
    if state.target.first_time("W046"):
        warn(Warnings.W046.format(name=state.name, n=int(np.isneginf(best).sum()),
                                  total=len(best)))
    if fixed is not None:
        fixed = np.where(stuck, forced if forced is not None else -1, fixed)
    if scores is not free_scores:
        scores = rows_from(scores, free_scores, stuck)
    return fixed, scores


def n_best_lists(scores: CRFScores, layout: BatchLayout, fixed: Optional[np.ndarray],
                 log_z: np.ndarray, n: int, label_names: Sequence[str],
                 empty: Optional[np.ndarray] = None) -> NBestLists:
    """Per sequence, its ``n`` best labellings as (probability, label strings);
    none for the sequences ``empty`` marks: those W046 decodes freely, whose
    written labels (the kept ones over the decoded ones) no labelling of the
    model holds, so a list would contradict them."""
    labels, best, counts = inference.n_best(scores, layout, n, fixed)
    names = np.asarray(list(label_names) + [None], dtype=object)[:-1]
    out, start = [], 0
    for s, length in enumerate(layout.lengths):
        if length and empty is not None and empty[s]:
            out.append([])
        elif length:
            # (at most 1: exp(0) of a lone labelling came out 1.0000000000000002)
            out.append([(min(float(np.exp(best[s, r] - log_z[s])), 1.0),
                         names[labels[r, start:start + length]].tolist())
                        for r in range(counts[s])])
        start += length
    return out


def drop_stale_values(docs: Sequence[Doc], owner: str, prediction: CRFPrediction,
                      n_best: int) -> None:
    """Drop the confidences, span confidences and n-best lists that an earlier
    run of a component of this name stored on ``docs`` and this one does not
    store again (its settings off): they would read beside labels they are not
    of (docs annotated again, by ``spacy apply`` or from a DocBin)."""
    for kind, stored in ((CONFIDENCE, prediction.confidence is not None),
                         (SPAN_CONFIDENCE, prediction.span_confidence is not None),
                         (NBEST, prediction.n_best is not None or bool(n_best))):
        if not stored:
            for doc in docs:
                token_values.discard(doc, kind, owner)


def sequences_per_doc(docs: Sequence[Doc], state: ComponentState) -> List[int]:
    """How many of the batch's sequences each doc holds (0 for an empty doc):
    one read of the batch, not one per doc."""
    live = [doc for doc in docs if len(doc)]
    seq_ends = np.cumsum(sequence_lengths(live, state.view)) if live else np.zeros(0)
    doc_ends = np.cumsum([len(doc) for doc in docs])
    return np.diff(np.searchsorted(seq_ends, doc_ends, side="right"), prepend=0).tolist()


def write_prediction(state: ComponentState, docs: Sequence[Doc],
                     prediction: CRFPrediction) -> None:
    """Write the predicted labels (and confidences, n-best lists) onto ``docs``."""
    ends = np.cumsum(prediction.doc_lengths)
    owner = stem(state.name)  # where the component's own extensions read
    drop_stale_values(docs, owner, prediction, state.cfg["n_best"])
    if prediction.n_best is not None or state.cfg["n_best"]:
        # every doc gets a list, [] for an empty doc (alone in its batch too, where
        # predict skips decoding), and each entry is [probability, labels]: a
        # list, as it comes back from nlp.pipe(n_process=2) (user data goes
        # through msgpack, which turns tuples into lists)
        per_seq = iter(prediction.n_best or [])
        for doc, n_seqs in zip(docs, sequences_per_doc(docs, state)):
            store_n_best(doc, owner, [[[p, labels] for p, labels in next(per_seq)]
                                      for _ in range(n_seqs)])
    # (labels to keep only where the docs had some when they were decoded)
    keep = bool(state.keep_existing) and prediction.had_existing is not False
    state.target.write_batch(docs, prediction.label_ids, prediction.doc_lengths, keep)
    if prediction.confidence is None and prediction.span_confidence is None:
        return
    for doc, end, n in zip(docs, ends, prediction.doc_lengths):
        if not n:
            continue
        offsets, marks = token_values.token_offsets_and_marks(doc)
        if prediction.confidence is not None:
            token_values.store(doc, CONFIDENCE, owner, *offsets.tolist(),
                               prediction.confidence[end - n:end].tolist(), marks)
        if prediction.span_confidence is not None:
            # each predicted span: its first token's start, to its last token's end
            probs, span_ends = prediction.span_confidence
            first = np.flatnonzero(span_ends[end - n:end] >= 0)
            last = span_ends[end - n:end][first] - (end - n) - 1
            starts, ends_at = offsets[0][first].tolist(), (offsets[0] + offsets[1])[last].tolist()
            token_values.store(doc, SPAN_CONFIDENCE, owner, starts,
                               [e - s for s, e in zip(starts, ends_at)],
                               probs[end - n:end][first].tolist(),
                               token_values.text_marks(doc, starts, ends_at))
