"""Gazetteers: phrase lists as soft features (``GAZETTEER``).

Each list has a name (``CITY``, ``PERSON``, a label of one's own). spaCy's
``PhraseMatcher`` finds the lists' phrases in a batch (case-insensitively by
default); within each list the longest matches that do not overlap are kept;
each token then gets, for every list that matches at it, the list's name and
the token's position in the match: B (first of several), I (inside), L (last)
or U (a one-token match). The feature value is that set (0 where no list
matches), so ``GAZETTEER[-1..1]`` reads it in a window like any attribute,
and the CRF weighs it against the rest of the evidence. ``keep_existing``
instead forces entities already on the doc.

Lists are read at ``initialize`` from a file (see :func:`read_gazetteer`) or
an ``entity_ruler``'s phrase patterns, tokenized with the pipeline's own
tokenizer, and saved with the component.

A gazetteer can also be made of the training data's own gold spans
(:func:`training_phrases`). Used as it is, such a list is a leak: while
training, every gold entity matches it and no unseen one can, so the CRF
learns that a name it does not list is no name, and on new text (where most
names are new) it misses them; UNER English F1 fell from 74 to 56 that way.
Each phrase drawn from the training data therefore records the *folds* of
the documents it came from (a document's fold is a hash of its text, one of
:data:`N_FOLDS`), and while training (``held_out=True``) a match is dropped in
a document of the only fold that phrase came from: each training document
sees the gazetteer that the rest of the corpus would have made, as new text
sees the whole of it (a jackknife, near leave-one-document-out). Phrases from
a file or a ruler hold in every fold.
"""

from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import srsly
from numba import njit
from spacy.matcher import PhraseMatcher
from spacy.strings import hash_string
from spacy.tokens import Doc

from .._kernels.features import mix64
from ..errors import Errors

#: a token's position in a match, as hashed with the list's name
CODE_B, CODE_I, CODE_L, CODE_U = 1, 2, 3, 4
#: how many folds the training documents fall into (one bit each of a uint64 mask)
N_FOLDS = 64
#: the folds of a phrase that holds everywhere (a file's, a ruler's)
EVERY_FOLD = (1 << N_FOLDS) - 1


class Gazetteer:
    """Named phrase lists, each phrase a tuple of token texts.

    Parameters
    ----------
    phrases : iterable of (str, sequence of str)
        (list name, the phrase's tokens) pairs.
    case_sensitive : bool
        Match the tokens' text as it is (``ORTH``) rather than lower-cased (``LOWER``).
    folds : sequence of int, optional
        For each phrase, the bit mask of the training folds it was seen in
        (:func:`training_phrases`); None: every phrase holds in every fold.
        A phrase given twice holds in the union of its folds.
    """

    def __init__(self, phrases: Iterable[Tuple[str, Sequence[str]]],
                 case_sensitive: bool = False, folds: Optional[Sequence[int]] = None) -> None:
        phrases = list(phrases)
        if folds is not None and len(folds) != len(phrases):
            raise ValueError(f"a gazetteer of {len(phrases)} phrases was given {len(folds)} "
                             f"fold masks")
        names: Dict[str, int] = {}
        entries: List[Tuple[int, Tuple[str, ...]]] = []
        masks: List[int] = []
        position: Dict[Tuple[int, Tuple[str, ...]], int] = {}
        for k, (name, tokens) in enumerate(phrases):
            tokens = tuple(tokens)
            if not isinstance(name, str) or not name or not tokens or not all(
                    isinstance(t, str) and t for t in tokens):
                raise ValueError(Errors.E125.format(
                    why=f"({name!r}, {tokens!r}) is not a list name with a non-empty phrase"))
            index = names.setdefault(name, len(names))
            mask = EVERY_FOLD if folds is None else int(folds[k])
            if not 0 < mask <= EVERY_FOLD:
                raise ValueError(f"the fold mask of {tokens!r} is {mask}, not 1 to 2**64 - 1")
            if (index, tokens) in position:
                masks[position[index, tokens]] |= mask
            else:
                position[index, tokens] = len(entries)
                entries.append((index, tokens))
                masks.append(mask)
        self.names = list(names)
        self.entries = entries
        self.folds = masks
        #: whether some phrase came from the training data (and so is held out
        #: from the documents of its fold while training)
        self.from_training = any(mask != EVERY_FOLD for mask in masks)
        self.case_sensitive = bool(case_sensitive)
        self._matcher: Optional[PhraseMatcher] = None
        self._vocab = None
        self._folds_by_key: Optional[Dict[Tuple[int, Tuple[str, ...]], int]] = None
        self.name_hashes = np.asarray([hash_string(n) for n in self.names], dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.entries)

    def __getstate__(self) -> Dict[str, Any]:
        # the matcher is rebuilt from the entries where it is needed (a worker of
        # nlp.pipe(n_process=...) has a vocab of its own)
        return {**self.__dict__, "_matcher": None, "_vocab": None, "_folds_by_key": None}

    def matcher(self, vocab) -> PhraseMatcher:
        """The PhraseMatcher of the lists over ``vocab`` (built once per vocab)."""
        if self._matcher is None or self._vocab is not vocab:
            matcher = PhraseMatcher(vocab, attr="ORTH" if self.case_sensitive else "LOWER")
            by_name: Dict[int, List[Doc]] = {}
            for index, tokens in self.entries:
                by_name.setdefault(index, []).append(Doc(vocab, words=list(tokens)))
            for index, docs in by_name.items():
                matcher.add(self.names[index], docs)
            self._matcher, self._vocab = matcher, vocab
        return self._matcher

    def column(self, docs: Sequence[Doc], held_out: bool = False) -> np.ndarray:
        """``(N,)`` uint64: the lists and positions matching at each token of the batch.

        With ``held_out`` (training), a phrase drawn from the training data
        does not match in a document of the only fold it came from.
        """
        n_tokens = sum(len(doc) for doc in docs)
        out = np.zeros(n_tokens, dtype=np.uint64)
        if not self.entries or not n_tokens:
            return out
        vocab = docs[0].vocab
        matcher = self.matcher(vocab)
        # the matcher's ids are the vocab's: a symbol's own id for names such as
        # "ORG" or "LOC", not the hash of the string
        index_of = {vocab.strings.add(n): i for i, n in enumerate(self.names)}
        folds_of = self._fold_lookup() if held_out and self.from_training else None
        starts, ends, lists = [], [], []
        offset = 0
        for doc in docs:
            matches = matcher(doc)
            if folds_of is not None and matches:
                own = 1 << document_fold(doc)
                matches = [(m, a, b) for m, a, b in matches
                           if folds_of.get((index_of[m], self._key([t.text for t in doc[a:b]])),
                                           EVERY_FOLD) != own]
            for match_id, start, end in matches:
                starts.append(offset + start)
                ends.append(offset + end)
                lists.append(index_of[match_id])
            offset += len(doc)
        if not starts:
            return out
        starts_a = np.asarray(starts, dtype=np.int64)
        ends_a = np.asarray(ends, dtype=np.int64)
        lists_a = np.asarray(lists, dtype=np.int64)
        # longest first, then leftmost: the greedy choice spacy.util.filter_spans makes
        order = np.lexsort((starts_a, -(ends_a - starts_a)))
        mark_matches(starts_a[order], ends_a[order], lists_a[order], self.name_hashes,
                     len(self.names), out)
        return out

    def _key(self, texts: Sequence[str]) -> Tuple[str, ...]:
        """A phrase's (or a matched span's) token texts as the matcher compares them."""
        return tuple(texts) if self.case_sensitive else tuple(t.lower() for t in texts)

    def _fold_lookup(self) -> Dict[Tuple[int, Tuple[str, ...]], int]:
        """(list, matched tokens) -> the folds of every phrase that matches them
        (phrases that differ in case match alike where case is ignored)."""
        if self._folds_by_key is None:
            lookup: Dict[Tuple[int, Tuple[str, ...]], int] = {}
            for (index, tokens), mask in zip(self.entries, self.folds):
                key = (index, self._key(tokens))
                lookup[key] = lookup.get(key, 0) | mask
            self._folds_by_key = lookup
        return self._folds_by_key

    def to_dict(self) -> Dict[str, Any]:
        msg = {"names": self.names, "case_sensitive": self.case_sensitive,
               "entries": [[index, list(tokens)] for index, tokens in self.entries]}
        if self.from_training:  # saved only where they say something (and so as before)
            msg["folds"] = list(self.folds)
        return msg

    @classmethod
    def from_dict(cls, msg: Dict[str, Any]) -> "Gazetteer":
        try:
            names = list(msg["names"])
            phrases = [(names[int(index)], tuple(tokens)) for index, tokens in msg["entries"]]
            folds = msg.get("folds")
            return cls(phrases, case_sensitive=bool(msg["case_sensitive"]),
                       folds=None if folds is None else [int(f) for f in folds])
        except (KeyError, TypeError, IndexError, ValueError) as err:
            raise ValueError(f"a saved gazetteer is incomplete or inconsistent: {err!r}") from err

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Gazetteer) and self.to_dict() == other.to_dict()


@njit(cache=True)
def mark_matches(starts, ends, lists, name_hashes, n_lists, out):
    """XOR into ``out`` the (list, position) hash of every kept match.

    Matches come longest first; one that overlaps a match of the same list
    already kept is dropped, so each list gives a token at most one position.
    """
    n_tokens = out.shape[0]
    taken = np.zeros((n_lists, n_tokens), dtype=np.bool_)
    for m in range(starts.shape[0]):
        a, b, g = starts[m], ends[m], lists[m]
        free = True
        for t in range(a, b):
            if taken[g, t]:
                free = False
                break
        if not free:
            continue
        for t in range(a, b):
            taken[g, t] = True
            if b - a == 1:
                code = CODE_U
            elif t == a:
                code = CODE_B
            elif t == b - 1:
                code = CODE_L
            else:
                code = CODE_I
            out[t] ^= mix64(name_hashes[g], np.uint64(code))


def read_gazetteer(path: Union[str, Path]) -> List[Tuple[str, str]]:
    """(list name, phrase) pairs of a gazetteer file.

    Two formats: JSON lines as an ``entity_ruler`` reads phrase patterns,
    ``{"label": "CITY", "pattern": "New York"}`` (``.jsonl``), or one
    ``NAME<TAB>phrase`` per line (any other name). Empty lines are skipped.

    Raises
    ------
    ValueError
        E125 naming the file and line of a row that is neither.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(Errors.E125.format(why=f"there is no file {path}"))
    out: List[Tuple[str, str]] = []
    is_jsonl = path.suffix.lower() == ".jsonl"
    with path.open(encoding="utf8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            where = f"{path}, line {number}"
            if is_jsonl:
                try:
                    row = srsly.json_loads(line)
                except ValueError as err:
                    raise ValueError(Errors.E125.format(why=f"{where} is not JSON ({err})")) from err
                if (not isinstance(row, dict) or not isinstance(row.get("label"), str)
                        or not isinstance(row.get("pattern"), str)):
                    raise ValueError(Errors.E125.format(
                        why=f"{where} is not {{\"label\": NAME, \"pattern\": PHRASE}} with two "
                            f"strings (token patterns, lists of dicts, are not phrases)"))
                out.append((row["label"], row["pattern"]))
            else:
                name, tab, phrase = line.rstrip("\n").partition("\t")
                if not tab or not name.strip() or not phrase.strip():
                    raise ValueError(Errors.E125.format(why=f"{where} is not NAME<TAB>phrase"))
                out.append((name.strip(), phrase.strip()))
    return out


def ruler_phrases(ruler: Any) -> List[Tuple[str, str]]:
    """(label, phrase) of an ``entity_ruler``'s phrase patterns (token patterns,
    which match by rule rather than by text, are left out)."""
    return [(p["label"], p["pattern"]) for p in ruler.patterns if isinstance(p.get("pattern"), str)]


def phrase_of(texts: Sequence[str]) -> Tuple[str, ...]:
    """A phrase's token texts as the gazetteer matches them: the whitespace
    tokens inside kept (a doc keeps them, the tokenizer making a token of a
    no-break space or of a second space, and spaCy's ``PhraseMatcher`` matches
    them), those at its edges left out (a match starts and ends at a word);
    empty for whitespace alone."""
    words = [i for i, text in enumerate(texts) if not text.isspace()]
    return tuple(texts[words[0]:words[-1] + 1]) if words else ()


def document_fold(doc: Doc) -> int:
    """The training fold of ``doc``: a hash of its text, so the same document
    falls in the same fold in every epoch and every reading of the corpus."""
    return int(hash_string(doc.text) % N_FOLDS)


def training_phrases(docs_and_spans: Iterable[Tuple[Doc, Iterable[Any]]]
                     ) -> Tuple[List[Tuple[str, Tuple[str, ...]]], List[int]]:
    """The gold spans of training documents as gazetteer phrases, with their folds.

    Parameters
    ----------
    docs_and_spans : iterable of (Doc, iterable of Span)
        Each training document (the reference) and its gold spans.

    Returns
    -------
    phrases : list of (str, tuple of str)
        (the span's label, its tokens' texts), one per span.
    folds : list of int
        The bit of the span's document's fold (:func:`document_fold`), one per phrase.
    """
    phrases: List[Tuple[str, Tuple[str, ...]]] = []
    folds: List[int] = []
    for doc, spans in docs_and_spans:
        bit = 1 << document_fold(doc)
        for span in spans:
            tokens = phrase_of([t.text for t in span])
            if span.label_ and tokens:
                phrases.append((span.label_, tokens))
                folds.append(bit)
    return phrases, folds
