"""Scores for the ``spacy train`` table and ``nlp.evaluate``.

Each component's main score is keyed by what it sets, as spaCy's own pipes
key theirs (the tagger's ``tag_acc``, ``ner``'s ``ents_f``), so two
``crf_tagger`` components with different targets never share one; it is the
factory's default score weight, so a config made by ``spacy init fill-config``
picks model-best by it (:func:`main_score_key`):

* ``tag``, ``pos``, ``dep``: token accuracy (``tag_acc``, ``pos_acc``, ``dep_acc``);
* ``morph``: ``morph_acc``, the accuracy of ``Token.morph`` (FEATS), with
  ``pos_acc`` and ``morph_per_feat`` beside it, as spaCy's morphologizer
  scores them;
* ``sent_starts``: sentence F1 (``sents_f``, with ``sents_p`` and
  ``sents_r``), as spaCy's senter scores it;
* ``lemma``: ``lemma_acc``, the accuracy of ``Token.lemma_`` (spaCy's lemmatizers');
* ``ents``: entity F1 (``ents_f``);
* ``spans:KEY``: span F1 (``spans_KEY_f``);
* ``_.NAME``: ``NAME_score``, the chunk F1 (``NAME_f``) where the gold labels are
  IOB tags (``B-X``, ``I-X``, ``O``; CoNLL-2000 chunkers are judged by it), else
  the token accuracy (``NAME_acc``).

``crf_score`` repeats the main score, and ``crf_acc`` is the token accuracy
of the target's labels (for ``ents``, of the IOB tags; ``None`` for
``spans:KEY``): names configs written before main scores were keyed by target
still weigh (they are the same for every target, so in a pipeline of two
components the later one's overwrite the earlier's). ``ents`` gets spaCy's NER
scores (``ents_p``, ``ents_r``, ``ents_f``, ``ents_per_type``) and
``spans:KEY`` its span scores (``spans_KEY_p/_r/_f``). For ``_.NAME`` targets
with IOB labels, chunk precision, recall and F1 follow, counted as conlleval
does (``NAME_p``, ``NAME_r``, ``NAME_f``, ``NAME_per_type``), over character
offsets so that they hold across tokenisations.
"""

import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

import numpy as np
from spacy.attrs import ENT_IOB, ENT_TYPE, IS_SPACE, LEMMA, MORPH, POS
from spacy.pipeline.senter import senter_score
from spacy.scorer import MISSING_VALUES, PRFScore, Scorer, get_ner_prf
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from .targets import Target, make_target
from .util import same_tokens

_IOB = re.compile(r"^(?:O|[BI]-.+)$")

#: the main score under the one name every target shares (configs written
#: before main scores were keyed by target weigh it)
MAIN_SCORE = "crf_score"


def main_score_key(target: str) -> str:
    """The key of a component's main score, named after its target as spaCy's
    own pipes name theirs: ``tag_acc``, ``pos_acc``, ``dep_acc``, ``ents_f``,
    ``spans_KEY_f``, or ``NAME_score`` for a ``_.NAME`` target (chunk F1 for
    IOB labels, else token accuracy: which, the labels tell only later)."""
    if target == "ents":
        return "ents_f"
    if target == "sent_starts":
        return "sents_f"
    if target.startswith("spans:"):
        return f"spans_{target[len('spans:'):]}_f"
    if target.startswith("_."):
        return f"{make_target(target).score_attr}_score"
    return f"{make_target(target).score_attr}_acc"


def default_score_weights(target: str) -> Dict[str, Optional[float]]:
    """The score weights of a component with this target: all on its main
    score (:func:`main_score_key`), with the scores worth seeing beside it in
    the ``spacy train`` table at 0, all keyed by the target (``morph``: also
    ``morph_per_feat`` at ``None``, reported but not in the table, as spaCy's
    morphologizer has it)."""
    weights: Dict[str, Optional[float]] = {main_score_key(target): 1.0}
    if target in ("ents", "sent_starts"):
        attr = "ents" if target == "ents" else "sents"
        weights.update({f"{attr}_p": 0.0, f"{attr}_r": 0.0})
    elif target.startswith("spans:"):
        key = target[len("spans:"):]
        weights.update({f"spans_{key}_p": 0.0, f"spans_{key}_r": 0.0})
    elif target == "morph":
        # spaCy's morphologizer weighs pos_acc and morph_acc 0.5 each; here
        # morph_acc alone picks model-best, as every component has one main
        # score (crf_score repeats it), and pos_acc is shown beside it
        weights.update({"pos_acc": 0.0, "morph_per_feat": None})
    elif target.startswith("_."):
        # token accuracy beside the chunk F1 (the same number for non-IOB labels)
        weights[f"{make_target(target).score_attr}_acc"] = 0.0
    return weights


@registry.scorers("spacy-crf.crf_scorer.v1")
def make_crf_scorer() -> Callable[..., Dict[str, Any]]:
    """The default scorer of ``crf_tagger``."""
    return score_crf


def score_crf(examples: Iterable[Example], *, target: str, **kwargs: Any) -> Dict[str, Any]:
    """Score a ``crf_tagger``'s predictions.

    Parameters
    ----------
    examples : iterable of Example
        Predicted and reference docs.
    target : str
        The component's target (``tag``, ``pos``, ``dep``, ``morph``,
        ``ents``, ``spans:KEY``, ``_.NAME``).

    Returns
    -------
    dict
        The main score under its target's key (:func:`main_score_key`: F1
        for spans, entities and IOB chunks, else token accuracy) and as
        ``crf_score``, ``crf_acc`` and the target's own keys (see the module
        docstring). A score is ``None`` where the examples have nothing
        to score (e.g. no gold or predicted entity at all).
    """
    examples = list(examples)
    tgt = make_target(target)
    if target == "ents":
        results: Dict[str, Any] = dict(get_ner_prf(examples))
        acc = token_accuracy(examples, tgt, "ent_tag", keys_of=_ent_tag_keys, **kwargs)
        results["crf_acc"] = acc["ent_tag_acc"]
        results[MAIN_SCORE] = results["ents_f"]
        return results
    if target.startswith("spans:"):
        key = target[len("spans:"):]
        results = dict(Scorer.score_spans(
            examples, f"spans_{key}", getter=lambda doc, attr: doc.spans.get(key, []),
            has_annotation=lambda doc: key in doc.spans, **kwargs))
        results["crf_acc"] = None
        results[MAIN_SCORE] = results[f"spans_{key}_f"]
        return results
    if target == "morph":
        return _score_morph(examples, tgt, **kwargs)
    if target == "sent_starts":
        return _score_sents(examples, tgt, **kwargs)
    if target == "lemma":
        # Token.lemma_ compared as spaCy's lemmatizers score it, not the trees (two
        # trees may give a form one lemma)
        results = token_accuracy(examples, tgt, "lemma", keys_of=_column(LEMMA), **kwargs)
        results["crf_acc"] = results[MAIN_SCORE] = results["lemma_acc"]
        return results
    results = token_accuracy(examples, tgt, tgt.score_attr, **kwargs)
    results["crf_acc"] = results.get(f"{tgt.score_attr}_acc")
    results[MAIN_SCORE] = results["crf_acc"]
    if target.startswith("_."):
        chunks = _score_iob(examples, tgt.score_attr, tgt.labels_of)
        results.update(chunks)
        if chunks:
            results[MAIN_SCORE] = chunks[f"{tgt.score_attr}_f"]
        results[main_score_key(target)] = results[MAIN_SCORE]
    return results


def token_accuracy(examples: List[Example], tgt: Target, attr: str,
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


def _score_morph(examples: List[Example], tgt: Target, **kwargs: Any) -> Dict[str, Any]:
    """spaCy's morphologizer scores (``pos_acc``, ``morph_acc``, ``morph_per_feat``
    and ``morph_micro_p/r/f``), ``crf_acc`` the accuracy of the joined labels."""
    results: Dict[str, Any] = {}
    results.update(token_accuracy(examples, tgt, "pos", keys_of=_column(POS), **kwargs))
    results.update(token_accuracy(examples, tgt, "morph", keys_of=_column(MORPH), **kwargs))
    # spaCy reads a predicted morph's string from the gold doc's vocab: a
    # reference corpus read into a vocab of its own may lack a morph the
    # model predicts (one seen in training only), so give it the predicted ones
    for vocab in {id(ex.reference.vocab): ex.reference.vocab for ex in examples}.values():
        for ex in examples:
            if ex.predicted.vocab is not vocab:
                for key in np.unique(ex.predicted.to_array(MORPH)):
                    if key and key not in vocab.strings:
                        vocab.strings.add(ex.predicted.vocab.strings[key])
    results.update(Scorer.score_token_attr_per_feat(examples, "morph", getter=tgt.getter(),
                                                    **kwargs))
    results["crf_acc"] = token_accuracy(examples, tgt, "label", **kwargs)["label_acc"]
    results[MAIN_SCORE] = results["morph_acc"]
    return results


def _score_sents(examples: List[Example], tgt: Target, **kwargs: Any) -> Dict[str, Any]:
    """spaCy's senter scores (``sents_p``, ``sents_r``, ``sents_f``: the
    sentences as spans, docs without boundary annotation left out), and
    ``crf_acc`` the accuracy of the S / I labels."""
    results = senter_score(examples, **kwargs)
    results["crf_acc"] = token_accuracy(examples, tgt, "sent_start", **kwargs)["sent_start_acc"]
    results[MAIN_SCORE] = results["sents_f"]
    return results


def _column(attr: int) -> Callable[[Doc], np.ndarray]:
    """``keys_of`` for :func:`token_accuracy`: one attribute's ids (0 missing)."""
    return lambda doc: doc.to_array([attr]).astype(np.uint64).reshape(len(doc), 1)


def _ent_tag_keys(doc: Doc) -> np.ndarray:
    """(n, 2) IOB code and entity type: equal where ``EntTarget``'s getter
    (``B-PER``, ``O``, ...) is; the IOB code is 0 where the doc says nothing."""
    return doc.to_array([ENT_IOB, ENT_TYPE]).astype(np.uint64).reshape(len(doc), 2)


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


def _char_chunks(doc, tags) -> Set[Tuple[int, int, str]]:
    return {(doc[s].idx, doc[e - 1].idx + len(doc[e - 1]), k) for s, e, k in iob_chunks(tags)}


def _score_iob(examples: List[Example], attr: str,
               labels_of: Callable[[Doc], List[Optional[str]]]) -> Dict[str, Any]:
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
        cand = _char_chunks(eg.predicted, pred_tags)
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
