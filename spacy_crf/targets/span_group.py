"""``spans:KEY``: the spans of ``doc.spans[KEY]``, scored as spaCy's spancat is."""

from typing import Any, Dict, List, Optional, Sequence

from spacy.scorer import Scorer
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import filter_spans

from ..errors import Warnings, warn
from .registry import register_target
from .scores import MAIN_SCORE
from .spans import SpanTarget

#: what the name of a ``spans:KEY`` target starts with
PREFIX = "spans:"


@register_target
class SpanGroupTarget(SpanTarget):
    """``doc.spans[KEY]``; overlapping gold spans are resolved (W002)."""

    name = f"{PREFIX}KEY"
    assigns = ("doc.spans",)
    gold_kept_in = "doc.spans"

    def __init__(self, key: str, scheme: str) -> None:
        super().__init__(scheme)
        self.key = self.spans_key = key
        self.name = f"{PREFIX}{key}"
        self.score_attr = f"spans_{key}"

    @classmethod
    def from_name(cls, target: str, scheme: str) -> Optional["SpanGroupTarget"]:
        """The target of ``"spans:KEY"``, KEY not empty (None otherwise)."""
        if target.startswith(PREFIX) and len(target) > len(PREFIX):
            return cls(target[len(PREFIX):], scheme)
        return None

    def spans_of(self, doc: Doc) -> Optional[List[Span]]:
        if self.key not in doc.spans:
            return None
        spans = list(doc.spans[self.key])
        kept = filter_spans(spans)
        if len(kept) < len(spans) and self.first_time("W002"):
            warn(Warnings.W002.format(key=self.key, n=len(spans) - len(kept)))
        return sorted(kept, key=lambda sp: sp.start)

    def write(self, doc: Doc, predicted: List[Span], keep: Sequence[Span] = ()) -> None:
        doc.spans[self.key] = self._merged(doc, predicted, keep)

    def write_spans(self, doc: Doc, predicted: List[Span], keep_existing: bool) -> None:
        """As :meth:`SpanTarget.write_spans`, but with ``keep_existing`` every
        span already in the group goes back, overlapping ones too: a group
        holds overlaps (a span ruler's "Bank of America" and "America"), and
        only the decoding needs them resolved (:meth:`spans_of`)."""
        kept = list(doc.spans[self.key]) if keep_existing and self.key in doc.spans else []
        self.write(doc, predicted, keep=kept)

    def score(self, examples: List[Example], **kwargs: Any) -> Dict[str, Any]:
        """spaCy's span scores (``spans_KEY_p/_r/_f``, ``spans_KEY_per_type``)
        of the docs with the key; no token accuracy (``crf_acc`` None)."""
        key = self.key
        results = dict(Scorer.score_spans(
            examples, self.score_attr, getter=lambda doc, attr: doc.spans.get(key, []),
            has_annotation=lambda doc: key in doc.spans, **kwargs))
        results["crf_acc"] = None
        results[MAIN_SCORE] = results[f"{self.score_attr}_f"]
        return results
