"""Docs -> flat numpy arrays over a batch (one ``Doc.to_array`` call per doc).

Everything the kernels need is read here: attribute columns and how the
batch's tokens split into sequences.
"""

from typing import List, Sequence

import numpy as np
from spacy.attrs import SENT_START
from spacy.tokens import Doc

def doc_lengths(docs: Sequence[Doc]) -> np.ndarray:
    """Number of tokens of each doc, as int64."""
    return np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))


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
    """Sequence lengths of a batch: sentences where known (if ``by_sentence``), else docs."""
    if not by_sentence:
        return doc_lengths(docs)
    if not docs:
        return np.zeros((0,), dtype=np.int64)
    return np.concatenate([sentence_lengths(doc) for doc in docs])


def attribute_matrix(docs: Sequence[Doc], attr_ids: List[int]) -> np.ndarray:
    """``(N, len(attr_ids))`` uint64: the attributes of every token of the batch."""
    n_cols = len(attr_ids)
    if n_cols == 0:
        return np.zeros((int(doc_lengths(docs).sum()), 0), dtype=np.uint64)
    blocks = [doc.to_array(attr_ids).reshape(len(doc), n_cols) for doc in docs if len(doc)]
    if not blocks:
        return np.zeros((0, n_cols), dtype=np.uint64)
    return np.ascontiguousarray(np.concatenate(blocks).astype(np.uint64, copy=False))
