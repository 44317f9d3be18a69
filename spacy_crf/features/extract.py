"""Docs -> hashed feature ids, one per token and template."""

from typing import Sequence

import numpy as np
from spacy.tokens import Doc

from .._kernels import features as kernels
from .doc_arrays import attribute_matrix, batch_sequence_lengths, text_spans
from .templates import FeatureTemplates


def extract_features(docs: Sequence[Doc], templates: FeatureTemplates) -> np.ndarray:
    """Hash every template at every token of the batch.

    Parameters
    ----------
    docs : sequence of Doc
        The batch; its tokens are concatenated in order.
    templates : FeatureTemplates
        What to extract.

    Returns
    -------
    numpy.ndarray
        ``(N, len(templates))`` uint64 feature ids. Windows stop at sentence
        boundaries where the docs have them, else at doc boundaries.
    """
    values = attribute_matrix(docs, templates.attr_ids)
    n_tokens = values.shape[0]
    if templates.uses_affixes:
        chars, char_start, char_len = text_spans(docs)
        affixes = np.empty((n_tokens, 2 * kernels.N_AFFIX), dtype=np.uint64)
        kernels.affix_hashes(chars, char_start, char_len, affixes)
        values = np.ascontiguousarray(np.hstack([values, affixes]))
    lengths = batch_sequence_lengths(docs)
    begin = np.empty(n_tokens, dtype=np.int64)
    end = np.empty(n_tokens, dtype=np.int64)
    kernels.sequence_bounds(lengths, begin, end)
    features = np.empty((n_tokens, len(templates)), dtype=np.uint64)
    kernels.hash_templates(values, begin, end, templates.part_ptr, templates.part_col,
                           templates.part_off, features)
    return features
