"""Docs -> hashed feature ids, one per token and template."""

from typing import Dict, List, Optional, Sequence

import numpy as np
from spacy.attrs import IDS, IS_SPACE, LOWER, ORTH
from spacy.tokens import Doc

from .._kernels import features as kernels
from .._kernels import tree_features as tree
from ..errors import Errors
from . import whitespace
from .affixes import N_COLUMNS as N_AFFIX_COLUMNS, affix_columns
from .doc_arrays import (attribute_matrix, batch_heads, batch_memo, batch_sequence_lengths,
                         batch_strings, space_rows as batch_space_rows)
from .lexicon import Lexicon
from .templates import FeatureTemplates


def extract_features(docs: Sequence[Doc], templates: FeatureTemplates,
                     by_sentence: bool = True, lexicon: Optional[Lexicon] = None,
                     owner: str = "the feature templates", held_out: bool = False,
                     fold_whitespace: bool = False) -> np.ndarray:
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
    lexicon : Lexicon, optional
        The word tables that ``CLUSTER``, ``VECTOR_CLUSTERk`` and
        ``GAZETTEER`` read (the component's, set at ``initialize``).
    owner : str
        Who reads them, for messages (the component's name).
    held_out : bool
        Training: a gazetteer drawn from the training data holds out what
        each document gave it (``gazetteer.py``); no other feature changes.
    fold_whitespace : bool
        Read every whitespace token as a line break or a space, whatever its
        variant (``whitespace.py``; a featurize layer's ``WHITESPACE`` attr).

    Returns
    -------
    numpy.ndarray
        ``(N, len(templates))`` uint64 feature ids. Windows stop at sentence
        boundaries where the docs have them (if ``by_sentence``), else at doc
        boundaries. For a :class:`~spacy_crf.features.doc_arrays.DocBatch`
        it may be shared with other readers of the batch: do not write to it.

    Notes
    -----
    A :class:`~spacy_crf.features.doc_arrays.DocBatch` has its features
    hashed once per template list. A list that begins with
    another one already hashed for the batch (the tree expert of
    ``chain_tree`` reads its chain's templates and then the tree's) reuses
    those columns and hashes only the templates that follow, and a list that
    begins another one is its first columns: a feature id depends on the
    template's position in its list, not on the list.
    """
    missing = (templates.lexicon_attrs if lexicon is None
               else lexicon.missing(templates.lexicon_attrs))
    if missing:
        raise ValueError(Errors.E126.format(attrs=", ".join(missing)))
    source = tuple(templates.source)
    hashed = batch_memo(docs, "features")
    held_out = bool(held_out and lexicon is not None and lexicon.holds_out)
    tables = _tables(templates, lexicon, held_out)
    key = (by_sentence, tables, source, fold_whitespace)
    if key not in hashed:
        hashed[key] = _from_hashed(docs, templates, by_sentence, lexicon, owner, hashed, held_out,
                                   fold_whitespace)
    return hashed[key]


def _tables(templates: FeatureTemplates, lexicon: Optional[Lexicon], held_out: bool) -> object:
    """What the columns of ``templates`` read beyond the docs: two feature layers
    share hashed columns only if they read the same word tables, alike held out."""
    return (id(lexicon), held_out) if templates.lexicon_attrs else None


def _from_hashed(docs: Sequence[Doc], templates: FeatureTemplates, by_sentence: bool,
                 lexicon: Optional[Lexicon], owner: str, hashed: dict,
                 held_out: bool = False, fold: bool = False) -> np.ndarray:
    """The features of ``templates``, from the batch's ``hashed`` lists where one
    begins with them or they begin with the longest of those that can serve."""
    source = tuple(templates.source)
    tables = _tables(templates, lexicon, held_out)
    done, done_source = None, ()
    for (sequence, other_tables, other, other_fold), features in hashed.items():
        if (sequence != by_sentence or other_fold != fold
                or (other_tables is not None and other_tables != tables)):
            continue
        if other[:len(source)] == source:  # a longer list, hashed already
            return np.ascontiguousarray(features[:, :len(templates)])
        if source[:len(other)] == other and len(other) > len(done_source):
            done, done_source = features, other
    if done is None:
        return _hash(docs, templates, by_sentence, 0, lexicon, owner, held_out, fold)
    rest = FeatureTemplates(source[len(done_source):])
    return np.hstack([done, _hash(docs, rest, by_sentence, done.shape[1], lexicon, owner,
                                  held_out, fold)])


def _hash(docs: Sequence[Doc], templates: FeatureTemplates, by_sentence: bool,
          first: int, lexicon: Optional[Lexicon], owner: str,
          held_out: bool = False, fold: bool = False) -> np.ndarray:
    """The features of ``templates``, placed at ``first`` in their list."""
    values = _value_columns(docs, templates, lexicon, held_out, fold)
    n_tokens = values.shape[0]
    if templates.uses_tree:
        values = np.ascontiguousarray(np.hstack([values, tree_columns(docs, templates, values,
                                                                      owner)]))
    lengths = batch_sequence_lengths(docs, by_sentence)
    begin = np.empty(n_tokens, dtype=np.int64)
    end = np.empty(n_tokens, dtype=np.int64)
    kernels.sequence_bounds(lengths, begin, end)
    if templates.part_col.size and values.shape[1] <= int(templates.part_col.max()):
        # the kernel does not check its reads: a missing column would be read past the array
        raise RuntimeError(f"the templates read column {int(templates.part_col.max())} of "
                           f"{values.shape[1]} value columns ({templates.source})")
    features = np.empty((n_tokens, len(templates)), dtype=np.uint64)
    kernels.hash_templates(values, begin, end, templates.part_ptr, templates.part_col,
                           templates.part_off, first, features)
    return features


def _value_columns(docs: Sequence[Doc], templates: FeatureTemplates,
                   lexicon: Optional[Lexicon], held_out: bool = False,
                   fold: bool = False) -> np.ndarray:
    """The spaCy attribute columns of the batch, then the affix and word-table columns.

    The affixes and tables are looked up by word hashes (``LOWER``, ``ORTH``)
    read in the same ``Doc.to_array`` call as the attributes, after them.
    With ``fold``, whitespace tokens then take the word columns of the line
    break or space they are (``whitespace.py``); ``IS_SPACE`` and the text
    (``ORTH`` or ``LOWER``), which tell them, are read in that call too.
    """
    keys: List[str] = []
    if templates.uses_affixes:
        keys.append("LOWER")
    if templates.lexicon_attrs:
        keys += [k for k in lexicon.key_attrs(templates.lexicon_attrs) if k not in keys]
    attr_ids = list(templates.attr_ids)
    n_attrs = len(attr_ids)
    # a key the templates read already (ORTH for the cluster table when "ORTH"
    # is a template) comes from their column, not from a second read
    columns = attr_ids + [IDS[k] for k in keys if IDS[k] not in attr_ids]
    n_read = len(columns)
    if fold:
        # the text tells a line break from a space: LOWER (read for the
        # affixes) serves as well as ORTH, since lowercasing keeps whitespace
        text_attr = next((attr for attr in (ORTH, LOWER) if attr in columns), ORTH)
        columns += [attr for attr in (IS_SPACE, text_attr) if attr not in columns]
    values = attribute_matrix(docs, columns)
    space_rows = (batch_space_rows(docs, lambda: np.flatnonzero(
        values[:, columns.index(IS_SPACE)])) if fold else np.zeros(0, dtype=np.int64))
    texts = values[space_rows, columns.index(text_attr)] if space_rows.size else space_rows
    if not templates.uses_affixes and not templates.lexicon_attrs:
        result = values if n_read == len(columns) else np.ascontiguousarray(values[:, :n_read])
    else:
        key_columns: Dict[str, np.ndarray] = {
            k: np.ascontiguousarray(values[:, columns.index(IDS[k])]) for k in keys}
        blocks = [values[:, :n_attrs]]
        if templates.uses_affixes:
            blocks.append(affix_columns(key_columns["LOWER"], batch_strings(docs))
                          if docs else np.zeros((0, N_AFFIX_COLUMNS), dtype=np.uint64))
        if templates.lexicon_attrs:
            blocks.append(lexicon.columns(docs, templates.lexicon_attrs, key_columns, held_out))
        result = np.ascontiguousarray(np.hstack(blocks))
    if space_rows.size:
        vocab = docs[0].vocab
        whitespace.fold_rows(
            result, space_rows, texts, batch_strings(docs),
            whitespace.word_columns(templates.token_attrs, result.shape[1]),
            lambda: _value_columns([whitespace.canonical_doc(vocab)], templates, lexicon))
    return result


def tree_columns(docs: Sequence[Doc], templates: FeatureTemplates, values: np.ndarray,
                 owner: str = "the feature templates") -> np.ndarray:
    """The ``head:ATTR`` and structure columns of a batch (needs a parse)."""
    try:
        heads, order = batch_heads(docs)
    except ValueError as err:
        if str(err) == "no parse":
            raise ValueError(Errors.E015.format(name=owner,
                                                why="its feature templates read the dependency "
                                                    "tree")) from err
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
