"""``_.NAME``: labels in a custom token extension, e.g. ``_.chunk``.

Labels of a ``_.NAME`` target live in one entry per doc, aligned to the
tokens' characters (:mod:`spacy_crf.token_values`, so they follow their
tokens through ``doc.retokenize()`` and ``Span.as_doc``): one assignment per
doc when the component writes, and ``DocBin(store_user_data=True)`` saves
them. ``token._.NAME`` reads and writes that entry (and falls back to the
plain per-doc list of ``doc.user_data[("spacy_crf", NAME)]`` that corpora
written before kept, and to values stored the usual way, by an extension
registered elsewhere before this one).

Its score is ``NAME_score``: the chunk F1 (``NAME_f``, with ``NAME_p``,
``NAME_r`` and ``NAME_per_type``) where the gold labels are IOB tags (``B-X``,
``I-X``, ``O``; CoNLL-2000 chunkers are judged by it), else the token accuracy
(``NAME_acc``, beside it either way).
"""

import re
from functools import partial
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
from spacy.strings import hash_string
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from .. import token_values
from ..errors import Errors
from .base import Target
from .registry import register_target
from .scores import MAIN_SCORE, score_iob

#: ``_.NAME``, NAME a Python identifier, as spaCy's extensions are named (``_.tür`` too)
_EXTENSION = re.compile(r"^_\.(\w+)$")


@register_target
class ExtensionTarget(Target):
    """Labels in a custom token extension ``token._.NAME``."""

    name = "_.NAME"
    name_hint = "a custom token extension, e.g. '_.chunk'"
    gold_kept_in = "doc.user_data"
    missing_key = np.uint64(0)

    @classmethod
    def from_name(cls, target: str, scheme: str) -> Optional["ExtensionTarget"]:
        """The target of ``"_.NAME"``, NAME an identifier (None otherwise)."""
        match = _EXTENSION.fullmatch(target)
        return cls(match.group(1)) if match and match.group(1).isidentifier() else None

    def __init__(self, attr: str) -> None:
        super().__init__()
        self.attr = attr
        self.name = f"_.{attr}"
        self.score_attr = attr
        self.assigns = (f"token._.{attr}",)
        register_extension(attr)

    def key_of(self, label: str, vocab: Optional[Vocab] = None) -> int:
        return hash_string(label)

    def labels_of(self, doc: Doc) -> List[Optional[str]]:
        return extension_labels(doc, self.attr)

    def reference_keys(self, doc: Doc) -> np.ndarray:
        labels = self.labels_of(doc)
        if not labels:
            return np.zeros((len(doc),), dtype=np.uint64)
        arr = np.asarray(["" if s is None else s for s in labels], dtype=object)
        try:
            uniq, inverse = np.unique(arr, return_inverse=True)
        except TypeError:  # values of types that do not sort together
            uniq = arr
        if not all(isinstance(value, str) for value in uniq):  # (checked once a value)
            value = next(v for v in uniq if not isinstance(v, str))
            raise ValueError(Errors.E264.format(
                attr=f"token._.{self.attr}", target=self.name, kind=type(value).__name__,
                value=value, text=doc[:8].text))
        table = np.asarray([hash_string(s) if s else 0 for s in uniq], dtype=np.uint64)
        return table[inverse].reshape(-1)

    def has_existing(self, doc: Doc) -> bool:
        """Whether ``doc`` may carry ``_.NAME`` labels to keep: stored ones, a
        corpus's older list, or values set through a plain extension (False
        for a fresh doc, whose tokens are then not read one by one)."""
        user_data = doc.user_data
        if not user_data:
            return False
        if (token_values.owned(doc, LABELS, self.attr) is not None
                or ("spacy_crf", self.attr) in user_data):
            return True
        return any(isinstance(key, tuple) and len(key) == 4 and key[0] == "._."
                   and key[1] == self.attr for key in user_data)

    def string_of(self, doc: Doc, key: int) -> str:
        for label in self.labels_of(doc):
            if label is not None and self.key_of(label) == key:
                return label
        raise KeyError(key)

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        token_values.store_per_token(doc, LABELS, self.attr, self._label_array[ids].tolist())

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        end = 0
        for doc, n in zip(docs, doc_lengths.tolist()):
            end += n
            if not n:
                continue
            labels = self._label_array[label_ids[end - n:end]].tolist()
            if keep_existing:  # a value that is no label stays too (W044)
                there = self.labels_of(doc)
                labels = [old if old is not None else new
                          for old, new in zip(there or [None] * n, labels)]
            token_values.store_per_token(doc, LABELS, self.attr, labels)

    def getter(self) -> Callable[[Token, str], object]:
        attr = self.attr
        return lambda token, _: token._.get(attr)

    def main_score_key(self) -> str:
        """``NAME_score``: chunk F1 for IOB labels, else token accuracy (which,
        the labels tell only later)."""
        return f"{self.score_attr}_score"

    def score_weights(self) -> Dict[str, Optional[float]]:
        # token accuracy beside the chunk F1 (the same number for non-IOB labels)
        return {**super().score_weights(), f"{self.score_attr}_acc": 0.0}

    def score(self, examples: List[Example], **kwargs: Any) -> Dict[str, Any]:
        """Token accuracy (``NAME_acc``), and for IOB labels the chunk scores,
        whose F1 is then the main score (``NAME_score``, ``crf_score``)."""
        results = super().score(examples, **kwargs)
        chunks = score_iob(examples, self.score_attr, self.labels_of)
        results.update(chunks)
        if chunks:
            results[MAIN_SCORE] = chunks[f"{self.score_attr}_f"]
        results[self.main_score_key()] = results[MAIN_SCORE]
        return results


#: the kind of value (:mod:`spacy_crf.token_values`) of ``_.NAME`` labels
LABELS = "labels"


def extension_labels(doc: Doc, attr: str) -> List[Optional[str]]:
    """The per-token labels of ``_.attr`` on ``doc`` (empty list if it has none)."""
    found = token_values.doc_values(doc, LABELS, attr)
    if found is not None:
        return found
    legacy = _legacy_labels(doc, attr)
    if legacy is not None:
        return legacy
    # values set through an extension registered the usual way (per token)
    found = [doc.user_data.get(("._.", attr, token.idx, None)) for token in doc]
    return found if any(v is not None for v in found) else []


def _legacy_labels(doc: Doc, attr: str) -> Optional[List[Optional[str]]]:
    """The plain per-doc list of labels that corpora written before labels
    followed their tokens hold; read by position, so only where it has one
    label per token."""
    stored = doc.user_data.get(("spacy_crf", attr))
    return list(stored) if stored is not None and len(stored) == len(doc) else None


def _get_label(attr: str, token: Token, default: Any = None) -> Optional[str]:
    doc = token.doc
    if token_values.owned(doc, LABELS, attr) is not None:
        found = token_values.token_value(token, LABELS, attr)
    else:
        legacy = _legacy_labels(doc, attr)
        found = (legacy[token.i] if legacy is not None
                 else doc.user_data.get(("._.", attr, token.idx, None)))
    return default if found is None else found


def _set_label(attr: str, token: Token, value: Optional[str]) -> None:
    if token_values.set_token_value(token, LABELS, attr, value):
        return
    doc = token.doc
    stored = extension_labels(doc, attr) or [None] * len(doc)
    stored[token.i] = value
    token_values.store_per_token(doc, LABELS, attr, stored)


def register_extension(attr: str) -> None:
    """Register ``token._.attr`` backed by the doc-level label list (idempotent).

    The getter and setter are partials of module-level functions, so the
    extension pickles (spaCy sends extensions to spawned worker processes).
    A plain extension registered elsewhere is replaced: its values stay
    readable (:func:`extension_labels`), and a token without one still reads
    its ``default`` (gold reads it as unannotated).

    Raises
    ------
    ValueError
        E202 where ``token._.attr`` is a crf_tagger's confidence extension: as a
        crf_tagger refuses to take over this one (E192), whichever comes first;
        E265 where it has a getter of its own (its values are computed, not stored).
    """
    existing = Token.get_extension(attr)
    if existing is not None and isinstance(existing[2], partial) and existing[2].func is _get_label:
        return
    # (imported here: the pipeline package imports the targets)
    from ..pipeline.extensions import SHARED_STEM, confidence_owner

    owner = confidence_owner(existing)
    if owner is not None:  # the labels would replace the getter its component reads through
        whose = ("the confidence extension every crf_tagger shares" if owner == SHARED_STEM
                 else f"the confidence extension of a crf_tagger named '{owner}'")
        raise ValueError(Errors.E202.format(attr=attr, whose=whose))
    if existing is not None and existing[2] is not None:
        raise ValueError(Errors.E265.format(attr=f"token._.{attr}", what=(
            "" if existing[3] is None else " and a setter")))
    default = existing[0] if existing is not None else None
    Token.set_extension(attr, getter=partial(_get_label, attr, default=default),
                        setter=partial(_set_label, attr), force=True)



def set_doc_labels(doc: Doc, attr: str, labels: Iterable[Optional[str]]) -> None:
    """Store gold labels of an ``_.attr`` target on a doc (for converters and tests)."""
    labels = list(labels)
    if len(labels) != len(doc):
        raise ValueError(f"Got {len(labels)} labels for a doc of {len(doc)} tokens.")
    register_extension(attr)
    token_values.store_per_token(doc, LABELS, attr, labels)

