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

An entry is ``{owner: [starts, lengths, values]}`` (in characters), one owner
per component (or per ``_.NAME`` attribute), with the starts in increasing
order; lists, so
``DocBin(store_user_data=True)`` and ``nlp.pipe(n_process=...)`` (msgpack)
keep it.
"""

from bisect import bisect_left
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc, Span, Token

#: an entry's payload: character starts, lengths in characters, values
Stored = Tuple[Sequence[int], Sequence[int], Sequence[Any]]


def entry_key(kind: str) -> tuple:
    """The ``doc.user_data`` key of the values of ``kind`` (see the module)."""
    return ("._.", f"spacy_crf:{kind}", 0, None)


def _entries(doc: Doc, kind: str) -> Optional[Dict[str, Stored]]:
    """The owners' values of ``kind`` on ``doc``, their offsets in its characters."""
    found = doc.user_data.get(entry_key(kind))
    if found is None and _merge_shifted(doc, kind):
        found = doc.user_data.get(entry_key(kind))
    return found


def _merge_shifted(doc: Doc, kind: str) -> bool:
    """Move the entries whose key ``Span.as_doc`` (by minus the span's first
    character) or ``Doc.from_docs`` (by plus each doc's first character)
    shifted back into the entry at character 0, their offsets shifted by as
    much; whether there were any. Done once: later reads are one look-up."""
    user_data = doc.user_data
    key = entry_key(kind)
    shifted = [k for k in user_data if isinstance(k, tuple) and len(k) == 4
               and k[0] == "._." and k[1] == key[1] and k[3] is None and k[2] != 0]
    if not shifted:
        return False
    ranges: Dict[str, List[Tuple[int, int, Any]]] = {}
    for owner, (starts, lengths, values) in (user_data.get(key) or {}).items():
        ranges[owner] = list(zip(starts, lengths, values))
    for old in shifted:
        offset = old[2]
        for owner, (starts, lengths, values) in user_data.pop(old).items():
            ranges.setdefault(owner, []).extend(
                (s + offset, n, v) for s, n, v in zip(starts, lengths, values))
    user_data[key] = {owner: [list(column) for column in zip(*sorted(found, key=lambda r: r[:2]))]
                      for owner, found in ranges.items() if found}
    return True


def token_offsets(doc: Doc) -> np.ndarray:
    """(2, n): each token's first character, and its length in characters."""
    return doc.to_array([IDX, LENGTH]).reshape(-1, 2).T  # (uint64: Python ints in tolist)


def store(doc: Doc, kind: str, owner: str, starts: List[int], lengths: List[int],
          values: List[Any]) -> None:
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
    """
    _merge_shifted(doc, kind)  # so no older value of the owner's is merged in later
    entries = dict(doc.user_data.get(entry_key(kind)) or {})  # a copy: as_doc shares it
    entries[owner] = [starts, lengths, values]
    doc.user_data[entry_key(kind)] = entries


def store_per_token(doc: Doc, kind: str, owner: str, values: Sequence[Any]) -> None:
    """Store one value per token of ``doc`` (see :func:`store`)."""
    starts, lengths = token_offsets(doc).tolist()
    store(doc, kind, owner, starts, lengths, list(values))


def _lookup(doc: Doc, kind: str, owner: Optional[str], start: int, end: int,
            hint: int = -1) -> Optional[Any]:
    stored = owned(doc, kind, owner)
    found = None if stored is None else _find(stored, start, end, hint)
    if found is None and _merge_shifted(doc, kind):
        # a doc Doc.from_docs put together: the values of the docs after the first
        return _lookup(doc, kind, owner, start, end, hint)
    return found


def _find(stored: Stored, start: int, end: int, hint: int = -1) -> Optional[Any]:
    starts, lengths, values = stored
    j = hint if 0 <= hint < len(starts) and starts[hint] == start else bisect_left(starts, start)
    if j < len(starts) and starts[j] == start and lengths[j] == end - start:
        return values[j]
    return None


def token_value(token: Token, kind: str, owner: Optional[str] = None) -> Optional[Any]:
    """The value ``owner`` stored for exactly ``token``'s characters, else ``None``.

    ``owner=None`` reads the only owner's; a ValueError where several stored
    values of ``kind`` on the doc."""
    return _lookup(token.doc, kind, owner, token.idx, token.idx + len(token), token.i)


def span_value(span: Span, kind: str, owner: Optional[str] = None) -> Optional[Any]:
    """The value ``owner`` stored for exactly ``span``'s characters, else ``None``."""
    return _lookup(span.doc, kind, owner, span.start_char, span.end_char) if len(span) else None


def doc_values(doc: Doc, kind: str, owner: str) -> Optional[List[Any]]:
    """Per token of ``doc``, the value ``owner`` stored for its characters
    (``None`` for a token without one); ``None`` where ``owner`` stored nothing."""
    _merge_shifted(doc, kind)
    stored = owned(doc, kind, owner)
    if stored is None:
        return None
    starts, lengths, values = stored
    offsets = token_offsets(doc)
    if len(starts) == len(doc) and np.array_equal(offsets, [starts, lengths]):
        return list(values)  # the tokens as they were stored (the usual case)
    by_range = dict(zip(zip(starts, lengths), values))
    return [by_range.get(key) for key in zip(*offsets.tolist())]


def doc_value(doc: Doc, kind: str, owner: Optional[str] = None) -> Optional[Any]:
    """The value ``owner`` stored for the whole of ``doc`` (:func:`store_doc_value`),
    else ``None`` (also on a doc made of a part of it)."""
    return _lookup(doc, kind, owner, 0, _doc_end(doc))


def store_doc_value(doc: Doc, kind: str, owner: str, value: Any) -> None:
    """Store one value for the whole of ``doc``: its characters, first to last token."""
    store(doc, kind, owner, [0], [_doc_end(doc)], [value])  # (from character 0)


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
