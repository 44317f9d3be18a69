"""``ents``: ``doc.ents``, read from the reference and written with
``doc.set_ents``, scored as spaCy's ner is."""

from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
from spacy.attrs import ENT_IOB, ENT_TYPE
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc, Span, Token
from spacy.training import Example

from ..feature_sources.usual_case import USUAL_CASE_TEMPLATES
from .registry import register_target
from .scores import MAIN_SCORE, column_keys, token_accuracy
from .spans import SpanTarget


@register_target
class EntTarget(SpanTarget):
    """``doc.ents``: read from the reference, written with ``doc.set_ents``."""

    name = score_attr = "ents"
    assigns = ("doc.ents", "token.ent_iob", "token.ent_type")
    keeps_existing = True  # as spaCy's ner: entities from an EntityRuler before it stay
    #: how the word is usually written (``feature_sources/usual_case.py``): a
    #: name is a word people capitalize. Universal NER English EWT, plain
    #: loop: ents_f +1.36 on dev, +1.42 on test (docs/features.md)
    optional_templates = USUAL_CASE_TEMPLATES

    @classmethod
    def from_name(cls, target: str, scheme: str) -> Optional["EntTarget"]:
        return cls(scheme) if target == cls.name else None

    def spans_of(self, doc: Doc) -> Optional[List[Span]]:
        if len(doc) and not doc.has_annotation("ENT_IOB"):
            return None
        return list(doc.ents)

    def has_existing(self, doc: Doc) -> bool:
        # a fresh doc (the usual one) has no ENT_IOB at all
        return doc.has_annotation("ENT_IOB")

    def reference_keys(self, doc: Doc) -> np.ndarray:
        keys = super().reference_keys(doc)
        if len(doc):
            keys[doc.to_array(ENT_IOB).reshape(-1) == 0] = 0  # missing, not O
        return keys

    def write(self, doc: Doc, predicted: List[Span], keep: Sequence[Span] = (),
              blocked: Sequence[Span] = ()) -> None:
        doc.set_ents(self._merged(doc, predicted, keep), blocked=list(blocked),
                     default="outside")

    def blocked(self, doc: Doc) -> np.ndarray:
        """(len(doc),) bool: tokens blocked from any entity (``doc.set_ents(...,
        blocked=...)``: ``ent_iob_`` "B" with no type), which spaCy's ner keeps out."""
        if not len(doc):
            return np.zeros(0, dtype=bool)
        arr = doc.to_array([ENT_IOB, ENT_TYPE]).reshape(len(doc), 2)
        return (arr[:, 0] == 3) & (arr[:, 1] == 0)

    def forced(self, doc: Doc) -> np.ndarray:
        if not self.has_existing(doc):
            # a fresh doc (the usual one) has nothing to keep: no reading of its arrays
            return np.full(len(doc), -1, dtype=np.int64)
        # blocked tokens are fixed to O (a token set to "O" stays free, as in spaCy's ner)
        fixed = super().forced(doc)
        fixed[self.blocked(doc)] = self.out_id
        return fixed

    def write_spans(self, doc: Doc, predicted: List[Span], keep_existing: bool) -> None:
        if not keep_existing or not self.has_existing(doc):
            self.write(doc, predicted)
            return
        blocked = np.concatenate([[False], self.blocked(doc), [False]])
        edges = np.flatnonzero(np.diff(blocked.astype(np.int8)))
        runs = [Span(doc, int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]
        self.write(doc, predicted, keep=self.spans_of(doc) or [], blocked=runs)

    def getter(self) -> Callable[[Token, str], object]:
        return lambda token, _: f"{token.ent_iob_}-{token.ent_type_}" if token.ent_type_ else token.ent_iob_

    def score(self, examples: List[Example], **kwargs: Any) -> Dict[str, Any]:
        """spaCy's NER scores (``ents_p``, ``ents_r``, ``ents_f``,
        ``ents_per_type``), ``crf_acc`` the accuracy of the IOB tags."""
        results: Dict[str, Any] = dict(get_ner_prf(examples))
        # (n, 2) IOB code and entity type: equal where the getter's tags are
        acc = token_accuracy(examples, self, "ent_tag", keys_of=column_keys(ENT_IOB, ENT_TYPE),
                             **kwargs)
        results["crf_acc"] = acc["ent_tag_acc"]
        results[MAIN_SCORE] = results["ents_f"]
        return results
