"""Docs -> flat numpy arrays over a batch (one ``Doc.to_array`` call per doc).

Everything the kernels need is read here: attribute columns and how the
batch's tokens split into sequences.

A component reads a batch's sequences (sentence boundaries) and heads twice:
its structure builds the CRF's graph from them (the batch's layout) and its
model's features stop their windows at the sequences and read the heads. The
component hands both the same :class:`DocBatch`, which keeps what was read
from it, so both are computed once per batch and cannot disagree. The two
experts of a ``chain_tree`` model share their features the same way
(``extract.py``).
"""

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import HEAD, IS_SPACE, SENT_START
from spacy.tokens import Doc


class DocBatch(list):
    """A batch of Docs that keeps the arrays read from it.

    A list of the Docs (every layer that reads Docs reads it as it reads a
    list), with ``memo``: the sentence lengths, heads and hashed features read
    from these Docs so far, by what they are; and ``layout``: the batch's
    layout, which the component's structure builds first and the layers that
    score it read (the longest segment of a semi-Markov CRF). The Docs must
    not change while the batch lives (a component reads, then writes after).
    """

    def __init__(self, docs: Iterable[Doc] = ()) -> None:
        super().__init__(docs)
        self.memo: Dict[str, Any] = {}
        self.layout: Optional[Any] = None


def _shared(name: str, docs: Sequence[Doc], compute: Callable[[], object]):
    """``compute()``, kept in ``docs.memo`` where ``docs`` is a :class:`DocBatch`."""
    memo = getattr(docs, "memo", None)
    if memo is None:
        return compute()
    if name not in memo:
        memo[name] = compute()
    return memo[name]


def space_rows(docs: Sequence[Doc],
               compute: Optional[Callable[[], np.ndarray]] = None) -> np.ndarray:
    """The rows of the batch's whitespace tokens (``IS_SPACE``), over the
    tokens of its docs in order; read once per :class:`DocBatch` (the
    features read them first where they fold whitespace, ``compute``)."""
    def read() -> np.ndarray:
        arrays = [doc.to_array(IS_SPACE).reshape(-1) for doc in docs if len(doc)]
        return np.flatnonzero(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)

    return _shared("space_rows", docs, compute or read)


def batch_memo(docs: Sequence[Doc], name: str) -> Dict:
    """A dict kept in a :class:`DocBatch` under ``name`` (a fresh one, thrown
    away, for a plain list), for values computed once per batch."""
    return _shared(name, docs, dict)


class BatchStrings:
    """The strings of a batch whose docs come from several vocabs (examples
    made before ``spacy.load`` beside the loaded pipeline's): a hash looked up
    in each vocab's ``StringStore`` in turn, as one store would."""

    def __init__(self, stores: Sequence[Any]) -> None:
        self.stores = list(stores)

    def __contains__(self, key: Any) -> bool:
        return any(key in store for store in self.stores)

    def __getitem__(self, key: Any) -> str:
        for store in self.stores:
            if key in store:
                return store[key]
        return self.stores[0][key]  # spaCy's own KeyError (E018)


def batch_strings(docs: Sequence[Doc]) -> Any:
    """The ``StringStore`` the batch's hashes are read from: its docs' (a
    :class:`BatchStrings` over each where they come from several vocabs);
    looked for once per :class:`DocBatch`."""
    def find() -> Any:
        stores = list({id(doc.vocab.strings): doc.vocab.strings for doc in docs}.values())
        return stores[0] if len(stores) == 1 else BatchStrings(stores)

    return _shared("strings", docs, find)


#: the component's ``sequence`` setting: what one CRF sequence is (chain-like structures)
SEQUENCE_SENTENCE, SEQUENCE_DOC = "sentence", "doc"
SEQUENCES = (SEQUENCE_SENTENCE, SEQUENCE_DOC)


def doc_lengths(docs: Sequence[Doc]) -> np.ndarray:
    """Number of tokens of each doc, as int64 (read once per :class:`DocBatch`:
    callers must not write to the array)."""
    return _shared("doc_lengths", docs, lambda: np.fromiter((len(doc) for doc in docs),
                                                             dtype=np.int64, count=len(docs)))


def sentence_lengths(doc: Doc) -> np.ndarray:
    """Lengths of the doc's sentences, or ``[len(doc)]`` where it has no boundaries.

    A doc without sentence boundaries (no parser or senter ran) is one sequence;
    an empty doc is one empty sequence, which every kernel skips.
    """
    n = len(doc)
    if n == 0 or not doc.has_annotation("SENT_START"):
        return np.asarray([n], dtype=np.int64)
    starts = doc.to_array(SENT_START).astype(np.int64) == 1
    starts[0] = True
    bounds = np.flatnonzero(starts)
    return np.diff(np.append(bounds, n)).astype(np.int64)


def batch_sequence_lengths(docs: Sequence[Doc], by_sentence: bool = True) -> np.ndarray:
    """Sequence lengths of a batch: sentences where known (if ``by_sentence``), else docs.

    A :class:`DocBatch` reads its sentences once; callers must not write to
    the array.
    """
    if not by_sentence:
        return doc_lengths(docs)
    if not docs:
        return np.zeros((0,), dtype=np.int64)
    return _shared("sentences", docs,
                   lambda: np.concatenate([sentence_lengths(doc) for doc in docs]))


def attribute_matrix(docs: Sequence[Doc], attr_ids: List[int]) -> np.ndarray:
    """``(N, len(attr_ids))`` uint64: the attributes of every token of the batch."""
    n_cols = len(attr_ids)
    if n_cols == 0:
        return np.zeros((int(doc_lengths(docs).sum()), 0), dtype=np.uint64)
    attr_ids = list(attr_ids)
    if n_cols == 1:  # (to_array gives one attribute as a 1-d array)
        blocks = [doc.to_array(attr_ids).reshape(-1, 1) for doc in docs if len(doc)]
    else:  # (N, n_cols) as it comes: a reshape per doc costs ~15 ns a token on sentences
        blocks = [doc.to_array(attr_ids) for doc in docs if len(doc)]
    if not blocks:
        return np.zeros((0, n_cols), dtype=np.uint64)
    return np.ascontiguousarray(np.concatenate(blocks).astype(np.uint64, copy=False))


def has_parse(doc: Doc) -> bool:
    """Whether the doc has a dependency parse on every token (a one-token doc
    trivially has one).

    spaCy keeps no unset state for HEAD (an unparsed token is its own head),
    so a token's parse is known from its DEP. A doc parsed only in part (a
    parsed doc joined with an unparsed one by ``Doc.from_docs``) would turn
    each unparsed token into a tree of its own, read as if it were parsed."""
    return len(doc) <= 1 or doc.has_annotation("DEP", require_complete=True)


def batch_heads(docs: Sequence[Doc]) -> Tuple[np.ndarray, np.ndarray]:
    """Heads of every token of the batch, and a children-before-heads order.

    Returns
    -------
    heads : numpy.ndarray
        (N,) int64 absolute row of each token's head in the batch, -1 at roots.
    order : numpy.ndarray
        (N,) int64 rows ordered leaves to roots.

    Raises
    ------
    ValueError
        If a non-trivial doc has no parse (callers word the fix) or the heads
        do not form a forest.

    Notes
    -----
    A :class:`DocBatch` reads its heads once (a failure is raised again at
    every reading); callers must not write to the arrays.
    """
    return _shared("heads", docs, lambda: _read_heads(docs))


def _read_heads(docs: Sequence[Doc]) -> Tuple[np.ndarray, np.ndarray]:
    from .._kernels.tree import check_forest

    blocks, offset = [], 0
    for doc in docs:
        n = len(doc)
        if not n:
            continue
        if not has_parse(doc):
            raise ValueError("no parse")
        rel = doc.to_array(HEAD).astype(np.int64).reshape(-1)
        rows = np.arange(n, dtype=np.int64)
        heads = rows + rel + offset
        heads[rel == 0] = -1
        blocks.append(heads)
        offset += n
    heads = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
    order = np.empty_like(heads)
    lengths = doc_lengths(docs)
    status = check_forest(heads, lengths, order)
    if status:
        raise ValueError("a head outside its doc" if status == 1 else "a cycle")
    return heads, order
