"""What a crf_tagger learns from a batch: its gold labels, its loss, its new labels.

The component's ``update``, ``get_loss`` and ``rehearse`` and the batch trainer
(``spacy_crf.training.fit``, through ``CRFTagger.gold_label_ids``) share these steps,
each given the component's :class:`~.state.ComponentState`:

* the gold label ids of a batch (-1 where unknown; span tags that break the
  scheme are unannotated, W003, and so are the sequences whose gold leaves the
  labellings the structure keeps, W045 or W049);
* the configured loss of those labels and its gradient (``spacy_crf.losses``;
  E009 if it is not finite);
* labels that ``add_label`` gave a trained model, which are never predicted
  until some gold has them (``spacy_crf.unseen_labels``): the batch that has
  them trains them and, in an update, makes them predicted from then on;
* the span types an update's gold has first, which grow the component (as
  spaCy's ner adds them), and the counts a model that learns from them fits.
"""

from typing import Callable, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from thinc.api import set_dropout_rate

from ..errors import Errors, Warnings, warn
from ..features.doc_arrays import doc_lengths
from ..losses import each_expert, get_loss
from ..models.hooks import fit_counts, learns_from_counts
from ..models.potentials import CRFScores, allow_only
from ..structures import BatchLayout
from ..targets import is_negative
from ..targets.scores import MAIN_SCORE
from ..unseen_labels import mask_labels
from .state import ComponentState


def training_docs(state: ComponentState, examples: List[Example], caller: str,
                  drop: float) -> Optional[List[Doc]]:
    """The predicted docs of a training step's examples (``update``,
    ``rehearse``), the model set to train on them: its dropout, and the
    weights it trains rather than their average. None for a batch without
    a token; E007 before ``initialize``."""
    validate_examples(examples, caller)
    docs = [eg.predicted for eg in examples]
    if not int(doc_lengths(docs).sum()):
        return None
    state.require_labels()
    set_dropout_rate(state.model, drop)
    state.averages.show_iterate(state.model)
    return docs


def gold_label_ids(state: ComponentState, examples: List[Example], scores: CRFScores,
                   layout: BatchLayout) -> np.ndarray:
    """Gold label ids of the batch's tokens (see ``CRFTagger.gold_label_ids``)."""
    gold = (np.concatenate([state.target.gold_ids(eg) for eg in examples]) if examples
            else np.zeros(0, dtype=np.int64))
    gold, n_bad = state.target.repair_gold(scores, gold, layout)
    if n_bad:
        warn(Warnings.W003.format(n=n_bad, name=state.name, scheme=state.cfg["scheme"]))
    return unannotated_where_unreachable(state, scores, layout, gold)


def unannotated_where_unreachable(state: ComponentState, scores: CRFScores,
                                  layout: BatchLayout, gold: np.ndarray) -> np.ndarray:
    """``gold`` with ``-1`` in every sequence whose gold labels no labelling
    the structure keeps agrees with (``CRFStructure.unreachable_gold``: a
    second-order chain's label pair that initialize did not see), so every
    loss trains on it as unannotated; W045 (W049) says so, once per component."""
    lost = layout.structure.unreachable_gold(scores, layout, gold)
    if lost is None or not lost.any():
        return gold
    code = layout.structure.unreachable_gold_warning
    if state.target.first_time(code):
        warn(getattr(Warnings, code).format(name=state.name, n=int(lost.sum()),
                                            total=int(layout.n_sequences)))
    return np.where(np.repeat(lost, layout.lengths), -1, gold)


def batch_loss(state: ComponentState, examples: List[Example], scores: CRFScores,
               layout: BatchLayout, learn: bool = False) -> Tuple[float, CRFScores]:
    """The loss of the examples' gold labels under ``scores`` (constrained by
    the target) and its gradient; with ``learn``, the new labels the gold has
    are predicted from now on."""
    if not isinstance(scores, CRFScores):  # (pipe.predict's CRFPrediction, most often)
        raise ValueError(Errors.E260.format(name=state.name, got=type(scores).__name__))
    state.check_width(scores)
    gold = gold_label_ids(state, examples, scores, layout)
    seen = state.new_labels_in(gold)
    if learn and not learns_from_counts(state.model):
        # (a model that learns from counts, the HMM, learns its new labels
        # when initialize refits them)
        state.learn_new_labels(gold)
    return labelling_loss(state, mask_unseen(state, scores, but=seen), layout, gold)


def labelling_loss(state: ComponentState, scores: CRFScores, layout: BatchLayout,
              gold: np.ndarray) -> Tuple[float, CRFScores]:
    """The configured loss of ``gold`` label ids (-1: unknown) and its gradient;
    ``scores`` must be constrained. E009 if it is not finite."""
    per_sequence, gradient = each_expert(get_loss(state.cfg.get("loss", "nll")),
                                         scores, layout, gold)
    loss = float(per_sequence.sum())
    if not np.isfinite(loss):
        raise ValueError(Errors.E009.format(name=state.name, value=loss))
    return loss, gradient


def constrained(state: ComponentState, scores: CRFScores,
                docs: Optional[Sequence[Doc]] = None) -> CRFScores:
    """``scores`` as the CRF decodes and trains on them: with the target's
    constraints (``Target.constrain``, :func:`mask_candidates`) and ``-inf``
    for the labels not learned yet (:func:`mask_unseen`)."""
    return mask_unseen(state, mask_candidates(state, state.target.constrain(scores), docs))


def mask_unseen(state: ComponentState, scores: CRFScores,
                but: Sequence[str] = ()) -> CRFScores:
    """``scores`` with ``-inf`` for the labels not learned yet, but ``but``."""
    return mask_labels(scores, state.unseen_ids(but), len(state.tags))


def mask_candidates(state: ComponentState, scores: CRFScores,
                    docs: Optional[Sequence[Doc]]) -> CRFScores:
    """``scores`` with ``-inf`` emissions for the labels the target does not
    allow a token (``Target.allowed_labels``: the lemma trees that do not apply
    to its form), the experts' too; ``scores`` itself where it allows every
    label or ``docs`` is None. Every block of ``L`` emission columns is
    masked: the ``chain_tree`` structure's two experts each have one, side by
    side (``(N, 2L)``), as :func:`~spacy_crf.unseen_labels.mask_labels` reads them.

    A token left no allowed label that is learned (no tree applies to its
    form, or only trees ``add_label`` gave a trained model) keeps every label:
    a row all ``-inf`` has no labelling, and the target writes such a token
    as it says (the lemma target: its form, spaCy's ``backoff = "orth"``).
    """
    allowed = None if docs is None else state.target.allowed_labels(docs)
    if allowed is None:
        return scores
    usable = allowed
    unseen = state.unseen_ids()
    if unseen:
        usable = allowed.copy()
        usable[:, unseen] = False
    return allow_only(scores, allowed | ~usable.any(axis=1, keepdims=True))


def add_gold_types(state: ComponentState, examples: List[Example]) -> None:
    """Grow a span target's component by the span types the examples' gold
    has and its labels lack (every tag of each), as spaCy's ner adds an
    entity type it first sees in an update; the update then learns them.

    Left alone (W001: unannotated, when the gold is read): token targets, as
    spaCy's tagger adds no label either, and a model that learns from counts
    (the HMM), which learns new labels when ``initialize`` refits it. A
    negative type (``!PERSON``) is E185 when the gold is read.
    """
    if not state.target.is_span_target or learns_from_counts(state.model):
        return
    known = {state.target.kind_of(tag) for tag in state.tags}
    types = {span.label_ for eg in examples for span in state.target.spans_of(eg.reference) or []}
    new = sorted(t for t in types - known if not is_negative(t))
    if new:  # (one growth for the batch: each commits the averaged weights)
        state.grow([tag for span_type in new for tag in state.target.tags_of_type(span_type)])


def fit_from_counts(state: ComponentState,
                    get_examples: Callable[[], Iterable[Example]]) -> None:
    """A model that learns from counts (the HMM) sets them from the examples."""
    if learns_from_counts(state.model):
        examples = [eg for eg in get_examples() if len(eg.predicted)]
        docs = [eg.predicted for eg in examples]
        gold = (np.concatenate([state.target.gold_ids(eg) for eg in examples]) if examples
                else np.zeros(0, dtype=np.int64))  # (docs of no tokens alone)
        if not (gold >= 0).any():  # its tables stay uniform, and updates change nothing
            warn(Warnings.W052.format(name=state.name, target=state.cfg["target"]))
        lengths = (state.read_batch(docs).layout.lengths if docs
                   else np.zeros(0, dtype=np.int64))
        fit_counts(state.model, docs, gold, lengths)
        state.learn_new_labels(gold)


def checked_scores(state: ComponentState, examples: List[Example], scores: dict) -> dict:
    """``scores``, with W053 (once per component) where ``examples`` were
    scored and none had gold for the target (its main score None): a dev
    corpus without the annotation scores 0.00 in the ``spacy train`` table,
    with no other word."""
    if examples and scores.get(MAIN_SCORE, 0) is None and state.target.first_time("W053"):
        warn(Warnings.W053.format(name=state.name, target=state.cfg["target"], n=len(examples)))
    return scores
