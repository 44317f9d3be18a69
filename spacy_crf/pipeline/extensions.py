"""The extensions a crf_tagger reads its stored confidences through.

``token._.crf_confidence``, ``span._.crf_confidence`` and ``doc._.crf_nbest``
are getters over ``doc.user_data`` (so ``DocBin(store_user_data=True)`` and
``nlp.pipe(n_process=...)`` keep them), registered once per process.
"""

from typing import List, Optional, Tuple

from spacy.tokens import Doc, Span, Token

CONFIDENCE_KEY = ("spacy_crf", "confidence")
SPAN_CONFIDENCE_KEY = ("spacy_crf", "span_confidence")
NBEST_KEY = ("spacy_crf", "n_best")


def _token_confidence(token: Token) -> Optional[float]:
    stored = token.doc.user_data.get(CONFIDENCE_KEY)
    return None if stored is None else stored[token.i]


def _span_confidence(span: Span) -> Optional[float]:
    stored = span.doc.user_data.get(SPAN_CONFIDENCE_KEY)
    if stored is None or not len(span):
        return None
    probs, ends = stored
    if ends[span.start] != span.end:
        return None  # not a span the CRF predicted
    return probs[span.start]


def _doc_n_best(doc: Doc) -> Optional[List[List[Tuple[float, List[str]]]]]:
    return doc.user_data.get(NBEST_KEY)


def register_confidence_extension() -> None:
    """``token._.crf_confidence``: P(predicted label); ``span._.crf_confidence``:
    P(predicted span), where stored (``store_confidence = true``)."""
    if not Token.has_extension("crf_confidence"):
        Token.set_extension("crf_confidence", getter=_token_confidence)
    if not Span.has_extension("crf_confidence"):
        Span.set_extension("crf_confidence", getter=_span_confidence)
    if not Doc.has_extension("crf_nbest"):
        Doc.set_extension("crf_nbest", getter=_doc_n_best)
