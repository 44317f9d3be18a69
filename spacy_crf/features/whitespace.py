"""Whitespace tokens read as one of two words: a line break or a space.

spaCy's tokenizer keeps the whitespace of raw text beyond a single space as
tokens of their own, and each variant is a word of its own: ``"\\n"``,
``"\\n\\n"``, ``"\\r\\n"``, ``"\\n \\n"``, ``"  "``, ``"\\t"``. Each has its own
``ORTH``, ``NORM``, ``SHAPE``, ``LENGTH``, affixes and table entries, so a model
that learned its boundaries after ``"\\n"`` (what ``crf-convert conllu
--line-breaks`` writes) reads nothing it knows at a blank line (``"\\n\\n"``, the
usual break between the paragraphs of raw text). A sentence model trained on
EWT with ``"\\n"`` breaks scored 90.00 sents_f on test text with ``"\\n"``
breaks, but 77.76 where they were ``"\\n\\n"``; folded, as below, 90.00 on
both (``benchmarks/line_breaks.py``).

So the features read every whitespace token as one of two canonical words:
:data:`LINE_BREAK` where it holds a line break, :data:`SPACE` where it does
not. Only what the word itself gives changes (spaCy's lexical attributes,
the affixes, the word tables); what the pipeline set on the token (tag, POS,
morphology, dependency, lemma, entity) is read as it is.

A featurize layer says whether it folds whitespace in its
:data:`WHITESPACE` attr. Layers built since this module fold it
(:data:`FOLDED`); a model saved before has no such attr and loads reading
whitespace as written (:data:`AS_WRITTEN`, ``models/serialize.py``), so it
predicts what it predicted when it was saved.
"""

from typing import Callable, Sequence

import numpy as np
from spacy.strings import StringStore
from spacy.tokens import Doc
from spacy.vocab import Vocab

#: the attr of a layer that reads features, and its two values
WHITESPACE = "crf_whitespace"
FOLDED, AS_WRITTEN = "folded", "as_written"
#: the canonical words, in the row order of :func:`canonical_doc`
LINE_BREAK, SPACE = "\n", " "
#: the characters ``str.splitlines`` breaks a line at
LINE_BREAK_CHARS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
#: template attributes the pipeline sets on a token, not read from its word
TOKEN_LEVEL_ATTRS = frozenset({"LEMMA", "TAG", "POS", "MORPH", "DEP", "ENT_TYPE", "ENT_IOB"})


def folds(attrs: dict) -> bool:
    """Whether a layer with ``attrs`` folds whitespace (a layer without the
    attr was built before it existed: as written)."""
    return attrs.get(WHITESPACE, AS_WRITTEN) == FOLDED


def has_line_break(text: str) -> bool:
    """Whether the whitespace ``text`` breaks a line."""
    return any(char in LINE_BREAK_CHARS for char in text)


def canonical_doc(vocab: Vocab) -> Doc:
    """A doc of the two canonical words: row 0 a line break, row 1 a space."""
    return Doc(vocab, words=[LINE_BREAK, SPACE], spaces=[False, False])


def fold_rows(values: np.ndarray, space_rows: np.ndarray, texts: np.ndarray,
              strings: StringStore, word_columns: np.ndarray,
              canonical: Callable[[], np.ndarray]) -> None:
    """Write the canonical words' values over the whitespace tokens' word columns.

    Parameters
    ----------
    values : numpy.ndarray
        ``(N, C)`` uint64 value columns of a batch, changed in place.
    space_rows : numpy.ndarray
        The rows of its whitespace tokens.
    texts : numpy.ndarray
        Their ``ORTH`` (or ``LOWER``) hashes, to tell a line break from a space.
    strings : StringStore
        The batch's strings (the texts of those hashes).
    word_columns : numpy.ndarray
        The columns the word gives (the others are the token's own).
    canonical : callable
        Returns the ``(2, C)`` value columns of :func:`canonical_doc`,
        computed only where there are whitespace tokens.
    """
    if not space_rows.size or not word_columns.size:
        return
    unique, inverse = np.unique(texts, return_inverse=True)
    # one test per distinct whitespace word, not per token
    kind = np.asarray([0 if has_line_break(strings[int(text)]) else 1 for text in unique],
                      dtype=np.int64)[inverse]
    words = canonical()
    values[space_rows[:, None], word_columns[None, :]] = words[kind][:, word_columns]


def word_columns(token_attrs: Sequence[str], n_columns: int) -> np.ndarray:
    """The columns the word gives, of value columns whose first
    ``len(token_attrs)`` are those attributes and whose others (affixes, word
    tables) all come from the word."""
    own = [i for i, attr in enumerate(token_attrs) if attr not in TOKEN_LEVEL_ATTRS]
    return np.asarray(own + list(range(len(token_attrs), n_columns)), dtype=np.int64)
