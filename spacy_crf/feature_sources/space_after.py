"""Whether whitespace follows a token in the text, as a feature source:
``SPACE_AFTER``, 1 where it does, 0 where the next token is attached (spaCy's
``SPACY`` attribute, ``Token.whitespace_``).

The text's spacing tells what the words alone do not: a quote with a space
before it and none after opens a quotation (``"The``), one attached to the
word before closes it (``city."``), and it may begin a sentence or end one
accordingly; a full stop attached to the next word is no boundary
(``Animals R Us.Net``). On UD English EWT (test, factory defaults of a
plain loop) the sentence target's ``sents_f`` rose from 89.06 to 89.89 with
its spacing templates, and the ``tag`` target's accuracy (Penn tags, which
tell an opening quote from a closing one) from 95.17 to 95.35.

Only docs made from text have spacing to read. ``Doc(vocab, words)`` given
no ``spaces``, and every corpus read into such docs (column formats without
``SpaceAfter``), put a space after every token, the last one included. So
the source is built only where the training docs have the spacing of text
(:func:`spacing_known`); where they do not, the targets' spacing templates
are left out quietly, and the model reads what it read before.
A model trained on text and then given docs spaced throughout reads each
token as followed by a space, as written (the sentence model above scored
88.34 there, against 89.06 without the source).
``[initialize.components.NAME] space_after = false`` leaves the source out.
"""

from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np
from spacy.attrs import IS_SPACE, ORTH, SPACY
from spacy.tokens import Doc

from ..errors import Errors
from .base import BuildContext, FeatureSource
from .registry import register_feature_source

SPACE_AFTER = "SPACE_AFTER"
#: the token attribute read for it, in the same ``Doc.to_array`` call as the
#: templates' own attributes
KEY_ATTR = "SPACY"
#: the punctuation that text attaches to the word before it, and a corpus of
#: words alone spaces from it
CLOSING_PUNCT = (",", ".", "!", "?", ";", ":")
#: how many of those :func:`spacing_known` reads at most (a corpus made from
#: text shows it in its first docs: EWT's first 25 sentences hold 60)
PUNCT_TO_READ = 10_000
#: the share of them attached to the word before, above which the docs have spacing
ATTACHED_SHARE = 0.5


def spacing_known(docs: Iterable[Doc]) -> bool:
    """Whether ``docs`` have the spacing of text: most of the commas, full
    stops, question and exclamation marks, colons and semicolons that follow
    a word are attached to it.

    Text attaches them (``word,``); ``Doc(vocab, words)`` given no
    ``spaces``, and a corpus read into such docs, spaces them all. Such a
    corpus may still hold a few attached tokens, none of which says it has
    spacing: a multiword token's parts (``do`` ``n't`` from CoNLL-U), a line
    break spaCy's whitespace augmenter inserts, a word spaCy's tokenizer
    splits again where a corpus cuts long docs (``non - stop``). So a share
    of the punctuation decides, not one attached token; docs whose spaces
    spaCy marks unknown (``Doc.has_unknown_spaces``) are not read. At most
    :data:`PUNCT_TO_READ` marks are read; docs without any are skipped.
    """
    n_read = n_attached = 0
    keys = None
    for doc in docs:
        if len(doc) < 2 or doc.has_unknown_spaces:
            continue
        if keys is None:
            keys = np.asarray([doc.vocab.strings[mark] for mark in CLOSING_PUNCT],
                              dtype=np.uint64)
        values = doc.to_array([ORTH, SPACY, IS_SPACE]).astype(np.uint64)
        after_word = np.isin(values[1:, 0], keys) & (values[:-1, 2] == 0)
        n_read += int(after_word.sum())
        n_attached += int((after_word & (values[:-1, 1] == 0)).sum())
        if n_read >= PUNCT_TO_READ:
            break
    return n_read > 0 and n_attached > ATTACHED_SHARE * n_read


@register_feature_source
class SpaceAfter(FeatureSource):
    """Whether whitespace follows each token (one column, 0 or 1).

    Holds nothing: it is built where the training docs have spacing, and the
    values are each batch's own.
    """

    name = "space_after"
    attrs_hint = SPACE_AFTER
    saved_keys = ("space_after",)

    @classmethod
    def provides(cls, attr: str) -> bool:
        return attr == SPACE_AFTER

    @classmethod
    def build(cls, context: BuildContext, attrs: Sequence[str], *,
              space_after: bool = True) -> Optional["SpaceAfter"]:
        """The source, where the training docs have spacing to learn from
        (always where the model's own templates read it; E262 where they do and
        ``space_after = false``)."""
        if not attrs:
            return None
        required = SPACE_AFTER in context.required
        if not space_after:
            if required:
                raise ValueError(Errors.E262.format(name=context.name))
            return None
        docs = (eg.predicted for eg in context.get_examples())
        return cls() if required or spacing_known(docs) else None

    def key_attrs(self, attrs: Sequence[str]) -> List[str]:
        return [KEY_ATTR]

    def columns(self, docs: Sequence[Doc], attrs: Sequence[str], keys: Dict[str, np.ndarray],
                held_out: bool) -> np.ndarray:
        return keys[KEY_ATTR].reshape(-1, 1)

    def to_msg(self) -> Dict[str, Any]:
        return {"space_after": True}

    @classmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["SpaceAfter"]:
        return cls() if msg.get("space_after") else None
