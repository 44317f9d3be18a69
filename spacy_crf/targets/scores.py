"""How targets count their scores: token accuracy exactly as spaCy's
``Scorer.score_token_attr`` counts it, and chunks of IOB labels as conlleval
reads them.

Each target's ``score`` (:meth:`~spacy_crf.targets.base.Target.score`) is
made of these; :mod:`spacy_crf.scoring` is the scorer a component registers,
which hands its examples to the component's target.
"""

import re
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

import numpy as np
from spacy.attrs import IS_SPACE
from spacy.scorer import MISSING_VALUES, PRFScore, Scorer
from spacy.tokens import Doc
from spacy.training import Example

from ..util import same_tokens

if TYPE_CHECKING:  # (base.py imports this module: no import of it at run time)
    from .base import Target

#: the main score under the one name every target shares (configs written
#: before main scores were keyed by target weigh it)
MAIN_SCORE = "crf_score"

_IOB = re.compile(r"^(?:O|[BI]-.+)$")


def prf_weights(prefix: str) -> Dict[str, Optional[float]]:
    """Score weights all on the F-score ``{prefix}_f``, with its precision
    and recall shown beside it at 0 (entities, spans, sentences)."""
    return {f"{prefix}_f": 1.0, f"{prefix}_p": 0.0, f"{prefix}_r": 0.0}


def token_accuracy(examples: List[Example], tgt: "Target", attr: str,
                   keys_of: Optional[Callable[[Doc], np.ndarray]] = None,
                   **kwargs: Any) -> Dict[str, Optional[float]]:
    """``{attr}_acc`` exactly as spaCy's ``Scorer.score_token_attr`` counts it
    with ``tgt.getter()``.

    Where the predicted doc has the reference's tokens (what ``nlp.evaluate``
    and ``spacy train`` give), both sides come as arrays of label keys and are
    compared at once: a per-token getter costs more than the whole CRF decode
    there. ``keys_of(doc)`` gives them, (n,) or (n, k) with row ``i`` equal
    between two docs exactly where the getter's values are, and a first
    column of 0 where the label is missing (default ``tgt.reference_keys``).
    Other examples go through spaCy's alignment, one at a time.
    """
    if kwargs.get("missing_values", MISSING_VALUES) != MISSING_VALUES:
        return Scorer.score_token_attr(examples, attr, getter=tgt.getter(), **kwargs)
    keys_of = keys_of or tgt.reference_keys
    score = PRFScore()
    getter = tgt.getter()
    for eg in examples:
        pred, gold = eg.predicted, eg.reference
        if not same_tokens(pred, gold):
            _add_aligned(score, eg, attr, getter)
            continue
        if not len(gold):  # no token to count (and no row length to reshape to)
            continue
        gold_keys = keys_of(gold).reshape(len(gold), -1)
        pred_keys = keys_of(pred).reshape(len(pred), -1)
        # spaCy scores the gold tokens with a label, and the predicted
        # non-space tokens at those positions
        annotated = gold_keys[:, 0] != 0
        scored = annotated & (pred.to_array(IS_SPACE).reshape(-1) == 0)
        tp = int(np.count_nonzero(scored & (pred_keys == gold_keys).all(axis=1)))
        score.tp += tp
        score.fp += int(np.count_nonzero(scored)) - tp
        score.fn += int(np.count_nonzero(annotated)) - tp
    return {f"{attr}_acc": None if len(score) == 0 else score.fscore}


def column_keys(*attrs: int) -> Callable[[Doc], np.ndarray]:
    """``keys_of`` for :func:`token_accuracy`: the ids of token attributes
    ``attrs``, (n, len(attrs)) (0 in the first column where it is missing)."""
    return lambda doc: doc.to_array(list(attrs)).astype(np.uint64).reshape(len(doc), len(attrs))


def _add_aligned(score: PRFScore, eg: Example, attr: str, getter: Callable) -> None:
    """Add one example's counts through spaCy's alignment (``score_token_attr``'s loop)."""
    gold_tags, missing = set(), set()
    for i, token in enumerate(eg.reference):
        value = getter(token, attr)
        if value in MISSING_VALUES:
            missing.add(i)
        else:
            gold_tags.add((i, value))
    pred_tags = set()
    for token in eg.predicted:
        if not token.orth_.isspace() and eg.alignment.x2y.lengths[token.i] == 1:
            gold_i = eg.alignment.x2y[token.i][0]
            if gold_i not in missing:
                pred_tags.add((gold_i, getter(token, attr)))
    score.score_set(pred_tags, gold_tags)


def iob_chunks(tags: List[Optional[str]]) -> List[Tuple[int, int, str]]:
    """Chunks ``(first, last + 1, type)`` of an IOB tag sequence, as conlleval reads it.

    A chunk starts at ``B-X``, or at ``I-X`` after ``O`` or after a chunk of
    another type; it ends before ``O``, ``B-*`` or a change of type.
    """
    chunks = []
    start, kind = -1, ""
    for i, tag in enumerate(list(tags) + ["O"]):
        tag = tag or "O"
        prefix, _, label = tag.partition("-")
        begins = prefix == "B" or (prefix == "I" and label != kind)
        if start >= 0 and (prefix == "O" or begins):
            chunks.append((start, i, kind))
            start, kind = -1, ""
        if begins:
            start, kind = i, label
    return chunks


def _char_chunks(doc: Doc, tags: Iterable[Optional[str]]) -> Set[Tuple[int, int, str]]:
    return {(doc[s].idx, doc[e - 1].idx + len(doc[e - 1]), k) for s, e, k in iob_chunks(tags)}


def score_iob(examples: List[Example], attr: str,
              labels_of: Callable[[Doc], List[Optional[str]]]) -> Dict[str, Any]:
    """Chunk precision, recall and F1 (``{attr}_p/_r/_f``, ``{attr}_per_type``)
    of labels that are all IOB tags (``B-X``, ``I-X``, ``O``), counted as
    conlleval does over character offsets, so that they hold across
    tokenisations; ``{}`` where the gold labels are no IOB tags."""
    # a doc's labels as one list ([] where it has none): no per-token getter
    gold_tags = [labels_of(eg.reference) or [None] * len(eg.reference) for eg in examples]
    seen = {tag for tags in gold_tags for tag in tags if tag}
    if not seen or not all(_IOB.match(tag) for tag in seen):
        return {}
    total = PRFScore()
    per_type: Dict[str, PRFScore] = {}
    for eg, gold in zip(examples, gold_tags):
        if all(tag is None for tag in gold):
            continue
        pred_tags = labels_of(eg.predicted) or [None] * len(eg.predicted)
        # a predicted chunk over a token without gold is neither right nor
        # wrong, as spaCy's ner scores read a missing entity tag
        unknown = [(t.idx, t.idx + len(t)) for t, tag in zip(eg.reference, gold) if tag is None]
        cand = {c for c in _char_chunks(eg.predicted, pred_tags)
                if not any(s < c[1] and c[0] < e for s, e in unknown)}
        ref = _char_chunks(eg.reference, gold)
        total.score_set(cand, ref)
        for kind in {k for *_, k in cand | ref}:
            per_type.setdefault(kind, PRFScore()).score_set(
                {c for c in cand if c[2] == kind}, {c for c in ref if c[2] == kind}
            )
    return {
        f"{attr}_p": total.precision,
        f"{attr}_r": total.recall,
        f"{attr}_f": total.fscore,
        f"{attr}_per_type": {k: v.to_dict() for k, v in sorted(per_type.items())},
    }
