"""Values stored on a Doc that follow their tokens (issue #48).

A component stores one value per token (a confidence, a ``_.NAME`` label) or
per predicted span in ``doc.user_data``, one entry per doc: a per-token
assignment would cost a Python call per token on the decoding path. A value
read back by a token's *position* goes wrong as soon as the tokens move:
``doc.retokenize()`` (spaCy's ``merge_entities``) shifts every later token,
a split makes positions past the end, and ``Span.as_doc(copy_user_data=True)``
copies the doc's entry whole into a doc whose first token is the span's.

So every value is stored with the characters it covers, ``[start, end)``
(``token.idx`` to ``token.idx + len(token)``, or a span's ``start_char`` and
``end_char``), and is read back by them: a token reads the value stored for
exactly its characters, else ``None``. A token that merge or split made has
no such value and reads ``None`` (never a neighbour's); every other token
keeps its own. The entry's key has spaCy's shape of a token extension's
value at character 0 (``("._.", NAME, 0, None)``), so ``Span.as_doc``
shifts it by the span's first character, as it shifts spaCy's own
extension values, and the offsets are read shifted by as much.

Characters alone can mislead where values of one doc land on another's:
``Span.as_doc(copy_user_data=True)`` copies the values of the tokens outside
the span too (as it copies spaCy's own extension values), and
``Doc.from_docs`` shifts them onto the characters of the docs beside it, or
overwrites one doc's entry with another's whose key it shifted to the same
character. So each value also keeps a mark of its text (the low 32 bits of
its hash, as a token's ``ORTH``): a value is read only where the text at its
characters has its mark. A doc value (an n-best list) is of the tokens it
was decoded over: its mark is the sum of their ``ORTH`` hashes, which a doc
retokenized to the same token count no longer has.

An entry is ``{owner: [starts, lengths, values, marks]}`` (in characters),
one owner per component (or per ``_.NAME`` attribute), with the starts in
increasing order; lists and a bytes string (``marks``, uint32 each), so
``DocBin(store_user_data=True)`` and ``nlp.pipe(n_process=...)`` (msgpack)
keep it. An entry stored before marks existed has three lists, and its
values are read by their characters alone.
"""

from bisect import bisect_left
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import IDX, LENGTH, ORTH
from spacy.strings import hash_string
from spacy.tokens import Doc, Span, Token

#: an entry's payload: character starts, lengths in characters, values, and
#: (where stored) the marks of the values' text as uint32 bytes
Stored = Sequence[Any]
#: a value's mark: the low 32 bits of its text's hash (a token's ORTH), or of
#: the sum of a doc's tokens' ORTH hashes for a doc value
MARK_BITS = np.uint64(0xFFFFFFFF)
#: a mark read from an entry stored without marks: matches any tokens
NO_MARK = -1


def entry_key(kind: str) -> tuple:
    """The ``doc.user_data`` key of the values of ``kind`` (see the module)."""
    return ("._.", f"spacy_crf:{kind}", 0, None)


def _entries(doc: Doc, kind: str) -> Optional[Dict[str, Stored]]:
    """The owners' values of ``kind`` on ``doc``, their offsets in its characters."""
    found = doc.user_data.get(entry_key(kind))
    if found is None and _merge_shifted(doc, kind):
        found = doc.user_data.get(entry_key(kind))
    return found


def _scanned_key(kind: str) -> tuple:
    """The ``doc.user_data`` key that says how many keys the doc's user data
    had when :func:`_merge_shifted` last looked for shifted entries of
    ``kind`` (shaped as an entry's key, so ``Span.as_doc`` shifts it away and
    ``Doc.from_docs`` adds keys: either way it no longer matches)."""
    return ("._.", f"spacy_crf:{kind}:scanned", 0, None)


def _merge_shifted(doc: Doc, kind: str) -> bool:
    """Move the entries whose key ``Span.as_doc`` (by minus the span's first
    character) or ``Doc.from_docs`` (by plus each doc's first character)
    shifted back into the entry at character 0, their offsets shifted by as
    much; whether there were any. Done once: later reads are one look-up, and
    the search is not made again until the user data has other keys (a read
    that finds no value asks for it: over the keys of every per-token
    extension value a doc holds, each such read would cost O(keys))."""
    user_data = doc.user_data
    scanned = _scanned_key(kind)
    if user_data.get(scanned) == len(user_data):
        return False
    key = entry_key(kind)
    shifted, stale = [], []
    for k in user_data:
        if (isinstance(k, tuple) and len(k) == 4 and k[0] == "._." and k[3] is None
                and k[2] != 0):
            if k[1] == key[1]:
                shifted.append(k)
            elif k[1] == scanned[1]:
                stale.append(k)  # a shifted mark of another doc's
    for k in stale:
        del user_data[k]
    if not shifted:
        _mark_scanned(user_data, scanned)
        return False
    ranges: Dict[str, List[Tuple[int, int, Any, int]]] = {}
    for offset, entry in [(0, user_data.get(key) or {})] + [(k[2], user_data.pop(k))
                                                            for k in shifted]:
        for owner, stored in entry.items():
            ranges.setdefault(owner, []).extend(
                (s + offset, n, v, m) for s, n, v, m in zip(*stored[:3], _marks(stored)))
    merged = {}
    for owner, found in ranges.items():
        if found:  # (a stable sort: at one start, the doc's own values first)
            starts, lengths, values, marks = zip(*sorted(found, key=lambda r: r[:2]))
            merged[owner] = [list(starts), list(lengths), list(values), _pack(marks)]
    user_data[key] = merged
    _mark_scanned(user_data, scanned)
    return True


def _mark_scanned(user_data: Dict[Any, Any], scanned: tuple) -> None:
    user_data[scanned] = -1  # (the key itself counted)
    user_data[scanned] = len(user_data)


def _marks(stored: Stored) -> np.ndarray:
    """The marks of an entry's values (int64; NO_MARK for an entry without)."""
    if len(stored) > 3:
        marks = np.frombuffer(stored[3], dtype="<u4").astype(np.int64)
        return np.where(marks == int(MARK_BITS), NO_MARK, marks)
    return np.full(len(stored[0]), NO_MARK, dtype=np.int64)


def _pack(marks: Sequence[int]) -> bytes:
    """Marks as an entry keeps them (NO_MARK as 0xFFFFFFFF: 1 in 4 billion real
    marks read as unmarked then, which only lets characters decide)."""
    return np.asarray(marks, dtype=np.int64).astype("<u4").tobytes()


def token_marks(doc: Doc) -> np.ndarray:
    """(n,) int64: each token's mark (the low 32 bits of its ORTH hash)."""
    return (doc.to_array(ORTH).astype(np.uint64) & MARK_BITS).astype(np.int64)


def token_offsets(doc: Doc) -> np.ndarray:
    """(2, n): each token's first character, and its length in characters."""
    return doc.to_array([IDX, LENGTH]).reshape(-1, 2).T  # (uint64: Python ints in tolist)


def token_offsets_and_marks(doc: Doc) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`token_offsets` and :func:`token_marks` in one read of the doc (a
    value per token is stored and read with both)."""
    columns = doc.to_array([IDX, LENGTH, ORTH]).astype(np.uint64).reshape(-1, 3)
    return columns[:, :2].T, (columns[:, 2] & MARK_BITS).astype(np.int64)


def text_marks(doc: Doc, starts: Sequence[int], ends: Sequence[int]) -> np.ndarray:
    """(k,) int64: the marks of the text ``doc.text[start:end]`` of each span
    (its hash's low 32 bits, as a token's ``ORTH``): a span keeps its value
    through a merge of its tokens (``merge_entities``), as it covers the same text."""
    # each span's text from its own tokens (doc.text would make every token's)
    return np.fromiter((hash_string(doc.char_span(s, e).text) & int(MARK_BITS)
                        for s, e in zip(starts, ends)), dtype=np.int64, count=len(starts))


def _doc_mark(doc: Doc) -> int:
    """A doc value's mark: the sum of its tokens' ORTH hashes (low 32 bits), so
    that it is read over the tokens it was stored for, retokenized or not."""
    return int(token_marks(doc).astype(np.uint64).sum() & MARK_BITS)


def store(doc: Doc, kind: str, owner: str, starts: List[int], lengths: List[int],
          values: List[Any], marks: Optional[np.ndarray] = None) -> None:
    """Store ``values`` of ``owner`` for the characters ``[start, start + length)``
    of each (increasing starts) on ``doc``, replacing what ``owner`` stored before.

    Parameters
    ----------
    doc : Doc
        The doc.
    kind : str
        What the values are (``"confidence"``, ``"label:chunk"``, ...).
    owner : str
        Who stored them (a component's name, an attribute).
    starts, lengths : list of int
        Each value's first character, and how many it covers.
    values : list
        The values (msgpack-serializable). The three lists are kept as they
        are given, not copied (this runs once per doc when decoding).
    marks : numpy.ndarray, optional
        Each value's mark: :func:`token_marks` for a value per token,
        :func:`text_marks` for a value per span; none given, the values are
        read by their characters alone.
    """
    _merge_shifted(doc, kind)  # so no older value of the owner's is merged in later
    entries = dict(doc.user_data.get(entry_key(kind)) or {})  # a copy: as_doc shares it
    entries[owner] = [starts, lengths, values] + ([] if marks is None else [_pack(marks)])
    doc.user_data[entry_key(kind)] = entries


def set_token_value(token: Token, kind: str, owner: str, value: Any) -> bool:
    """Replace the value ``owner`` stored for exactly ``token``'s characters and
    text, where its entry holds one at the token's own position (the usual
    case: a value set per token, ``token._.NAME = ...``, costs a copy of the
    entry's list, not a read of the whole doc, which made setting every
    token's O(n^2)); False where it holds none there (the caller stores the
    doc's values anew)."""
    doc = token.doc
    _merge_shifted(doc, kind)  # (the values of docs put together after the first)
    stored = owned(doc, kind, owner)
    i = token.i
    if (stored is None or len(stored) < 4 or len(stored[0]) != len(doc)
            or stored[0][i] != token.idx or stored[1][i] != len(token)
            or _mark_at(stored[3], i) != token.orth & int(MARK_BITS)):
        return False
    values = list(stored[2])  # a copy: Span.as_doc's doc shares the lists
    values[i] = value
    entries = dict(doc.user_data[entry_key(kind)])
    entries[owner] = [stored[0], stored[1], values, stored[3]]
    doc.user_data[entry_key(kind)] = entries
    return True


def discard(doc: Doc, kind: str, owner: str) -> None:
    """Drop what ``owner`` stored of ``kind`` on ``doc``: a new prediction that
    stores none must not leave the values of an earlier one beside its labels."""
    if not doc.user_data:  # (the usual case: nothing stored at all)
        return
    _merge_shifted(doc, kind)
    key = entry_key(kind)
    entries = doc.user_data.get(key)
    if entries and owner in entries:
        rest = {name: stored for name, stored in entries.items() if name != owner}
        if rest:
            doc.user_data[key] = rest
        else:
            del doc.user_data[key]


def store_per_token(doc: Doc, kind: str, owner: str, values: Sequence[Any]) -> None:
    """Store one value per token of ``doc`` (see :func:`store`)."""
    offsets, marks = token_offsets_and_marks(doc)
    starts, lengths = offsets.tolist()
    store(doc, kind, owner, starts, lengths, list(values), marks)


def _lookup(doc: Doc, kind: str, owner: Optional[str], start: int, end: int,
            mark: int, hint: int = -1) -> Optional[Any]:
    stored = owned(doc, kind, owner)
    found = None if stored is None else _find(stored, start, end, mark, hint)
    if found is None and _merge_shifted(doc, kind):
        # a doc Doc.from_docs put together: the values of the docs after the first
        return _lookup(doc, kind, owner, start, end, mark, hint)
    return found


def _find(stored: Stored, start: int, end: int, mark: int, hint: int = -1) -> Optional[Any]:
    """The value stored for ``[start, end)`` with ``mark`` (the first, where a
    merge put several there)."""
    starts, lengths, values = stored[:3]
    # (the hint, a token's position, where it holds the first value at start)
    first = (0 <= hint < len(starts) and starts[hint] == start
             and (hint == 0 or starts[hint - 1] != start))
    j = hint if first else bisect_left(starts, start)
    marks = stored[3] if len(stored) > 3 else None
    while j < len(starts) and starts[j] == start:
        if lengths[j] == end - start and (marks is None or _mark_at(marks, j) in (mark, NO_MARK)):
            return values[j]
        j += 1
    return None


def _mark_at(marks: bytes, j: int) -> int:
    found = int.from_bytes(marks[4 * j:4 * j + 4], "little")
    return NO_MARK if found == int(MARK_BITS) else found


def token_value(token: Token, kind: str, owner: Optional[str] = None) -> Optional[Any]:
    """The value ``owner`` stored for exactly ``token``'s characters and text,
    else ``None``.

    ``owner=None`` reads the only owner's; a ValueError where several stored
    values of ``kind`` on the doc."""
    return _lookup(token.doc, kind, owner, token.idx, token.idx + len(token),
                   token.orth & int(MARK_BITS), token.i)


def span_value(span: Span, kind: str, owner: Optional[str] = None) -> Optional[Any]:
    """The value ``owner`` stored for exactly ``span``'s characters and text,
    else ``None``."""
    if not len(span):
        return None
    return _lookup(span.doc, kind, owner, span.start_char, span.end_char,
                   hash_string(span.text) & int(MARK_BITS))


def doc_values(doc: Doc, kind: str, owner: str) -> Optional[List[Any]]:
    """Per token of ``doc``, the value ``owner`` stored for its characters and
    text (``None`` for a token without one); ``None`` where ``owner`` stored nothing."""
    _merge_shifted(doc, kind)
    stored = owned(doc, kind, owner)
    if stored is None:
        return None
    starts, lengths, values = stored[:3]
    offsets, marks = token_offsets_and_marks(doc)
    stored_marks = _marks(stored)
    if (len(starts) == len(doc) and np.array_equal(offsets, [starts, lengths])
            and ((stored_marks == marks) | (stored_marks == NO_MARK)).all()):
        return list(values)  # the tokens as they were stored (the usual case)
    by_range: Dict[Tuple[int, int], List[Tuple[int, Any]]] = {}
    for key, value, mark in zip(zip(starts, lengths), values, stored_marks.tolist()):
        by_range.setdefault(key, []).append((mark, value))
    return [next((v for m, v in by_range.get(key, ()) if m in (mark, NO_MARK)), None)
            for key, mark in zip(zip(*offsets.tolist()), marks.tolist())]


def doc_value(doc: Doc, kind: str, owner: Optional[str] = None) -> Optional[Any]:
    """The value ``owner`` stored for the whole of ``doc`` (:func:`store_doc_value`),
    else ``None`` (also on a doc made of a part of it, or retokenized)."""
    return _lookup(doc, kind, owner, 0, _doc_end(doc), _doc_mark(doc))


def store_doc_value(doc: Doc, kind: str, owner: str, value: Any) -> None:
    """Store one value for the whole of ``doc``: its characters, first to last token."""
    store(doc, kind, owner, [0], [_doc_end(doc)], [value],  # (from character 0)
          np.asarray([_doc_mark(doc)], dtype=np.int64))


def _doc_end(doc: Doc) -> int:
    return doc[-1].idx + len(doc[-1]) if len(doc) else 0


class AmbiguousValues(ValueError):
    """Several owners stored values of one kind on a doc, and none was named."""

    def __init__(self, kind: str, owners: Sequence[str]) -> None:
        super().__init__(f"{len(owners)} owners stored {kind} values on this doc: "
                         f"{', '.join(owners)}")
        self.owners = list(owners)


def owned(doc: Doc, kind: str, owner: Optional[str]) -> Optional[Stored]:
    """What ``owner`` stored of ``kind`` on ``doc``; ``owner=None``: the only
    owner's (AmbiguousValues where there are several)."""
    entries = _entries(doc, kind)
    if not entries:
        return None
    if owner is not None:
        return entries.get(owner)
    if len(entries) > 1:
        raise AmbiguousValues(kind, sorted(entries))
    return next(iter(entries.values()))
