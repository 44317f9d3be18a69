"""Docs -> hashed feature ids, one per token and template."""

from typing import Sequence

import numpy as np
from spacy.attrs import LOWER
from spacy.tokens import Doc

from .._kernels import features as kernels
from .._kernels import tree_features as tree
from ..errors import Errors
from .affixes import affix_columns
from .doc_arrays import attribute_matrix, batch_heads, batch_memo, batch_sequence_lengths
from .templates import FeatureTemplates


def extract_features(docs: Sequence[Doc], templates: FeatureTemplates,
                     by_sentence: bool = True) -> np.ndarray:
    """Hash every template at every token of the batch.

    Parameters
    ----------
    docs : sequence of Doc
        The batch; its tokens are concatenated in order.
    templates : FeatureTemplates
        What to extract.
    by_sentence : bool
        Whether windows stop at sentence boundaries (the component's
        ``sequence = "sentence"``) or only at doc boundaries (``"doc"``).

    Returns
    -------
    numpy.ndarray
        ``(N, len(templates))`` uint64 feature ids. Windows stop at sentence
        boundaries where the docs have them (if ``by_sentence``), else at doc
        boundaries. Inside ``read_once`` it may be shared with other
        readers of the batch: do not write to it.

    Notes
    -----
    Inside :func:`~spacy_crf.features.doc_arrays.read_once`, a batch's
    features are hashed once per template list. A list that begins with
    another one already hashed for the batch (the tree expert of
    ``chain_tree`` reads its chain's templates and then the tree's) reuses
    those columns and hashes only the templates that follow, and a list that
    begins another one is its first columns: a feature id depends on the
    template's position in its list, not on the list.
    """
    source = tuple(templates.source)
    hashed = batch_memo(docs, "features")
    key = (by_sentence, source)
    if key not in hashed:
        hashed[key] = _from_hashed(docs, templates, by_sentence, hashed)
    return hashed[key]


def _from_hashed(docs: Sequence[Doc], templates: FeatureTemplates, by_sentence: bool,
                 hashed: dict) -> np.ndarray:
    """The features of ``templates``, from the batch's ``hashed`` lists where one
    begins with them or they begin with the longest of those that can serve."""
    source = tuple(templates.source)
    done, done_source = None, ()
    for (sequence, other), features in hashed.items():
        if sequence != by_sentence:
            continue
        if other[:len(source)] == source:  # a longer list, hashed already
            return np.ascontiguousarray(features[:, :len(templates)])
        if source[:len(other)] == other and len(other) > len(done_source):
            done, done_source = features, other
    if done is None:
        return _hash(docs, templates, by_sentence, 0)
    rest = FeatureTemplates(source[len(done_source):])
    return np.hstack([done, _hash(docs, rest, by_sentence, done.shape[1])])


def _hash(docs: Sequence[Doc], templates: FeatureTemplates, by_sentence: bool,
          first: int) -> np.ndarray:
    """The features of ``templates``, placed at ``first`` in their list."""
    attr_ids = list(templates.attr_ids)
    if templates.uses_affixes:
        attr_ids.append(LOWER)
    values = attribute_matrix(docs, attr_ids)
    n_tokens = values.shape[0]
    if templates.uses_affixes and docs:
        affixes = affix_columns(values[:, -1], docs[0].vocab.strings)
        values = np.ascontiguousarray(np.hstack([values[:, :-1], affixes]))
    if templates.uses_tree:
        values = np.ascontiguousarray(np.hstack([values, tree_columns(docs, templates, values)]))
    lengths = batch_sequence_lengths(docs, by_sentence)
    begin = np.empty(n_tokens, dtype=np.int64)
    end = np.empty(n_tokens, dtype=np.int64)
    kernels.sequence_bounds(lengths, begin, end)
    features = np.empty((n_tokens, len(templates)), dtype=np.uint64)
    kernels.hash_templates(values, begin, end, templates.part_ptr, templates.part_col,
                           templates.part_off, first, features)
    return features


def tree_columns(docs: Sequence[Doc], templates: FeatureTemplates, values: np.ndarray) -> np.ndarray:
    """The ``head:ATTR`` and structure columns of a batch (needs a parse)."""
    try:
        heads, order = batch_heads(docs)
    except ValueError as err:
        if str(err) == "no parse":
            raise ValueError(Errors.E015.format(name="feature templates",
                                                why="they read the dependency tree")) from err
        raise ValueError(Errors.E016.format(why=err)) from err
    n_tokens = values.shape[0]
    head_cols = np.asarray([templates.token_attrs.index(a) for a in templates.head_attrs],
                           dtype=np.int64)
    at_head = np.empty((n_tokens, head_cols.shape[0]), dtype=np.uint64)
    tree.head_columns(values, heads, head_cols, at_head)
    if not templates.uses_structure:
        return at_head
    deps = np.ascontiguousarray(values[:, templates.token_attrs.index("DEP")])
    structure = np.empty((n_tokens, tree.N_STRUCTURE), dtype=np.uint64)
    tree.structure_columns(heads, order, deps, structure)
    return np.hstack([at_head, structure])
