"""Layer: Docs -> hashed feature ids (no parameters)."""

from typing import Callable, List, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_SENTENCE
from ..features.extract import extract_features
from ..features.templates import FeatureTemplates

InT = List[Doc]
OutT = np.ndarray  # (N, n_templates) uint64
#: attrs key of the templates a tree-structured component adds
TREE_TEMPLATES = "tree_templates"
#: attrs key of what a CRF sequence is ("sentence" or "doc"), set by the component
SEQUENCE = "crf_sequence"


def featurize(templates: Sequence[str], tree_templates: Sequence[str] = ()) -> Model[InT, OutT]:
    """Hash the feature templates at every token of a batch of Docs.

    Parameters
    ----------
    templates : sequence of str
        Template strings (see ``spacy_crf.features.templates``); validated here,
        so a typo fails when the pipeline is built, not during training.
    tree_templates : sequence of str
        Templates added by :func:`use_tree_templates` when the component's
        structure is a tree (the docs then have a parse); validated here too.
    """
    parsed = FeatureTemplates(templates)
    tree = list(tree_templates)
    if tree:
        FeatureTemplates(tree)
    return Model("crf_featurize", forward, attrs={"templates": parsed, TREE_TEMPLATES: tree,
                                                  SEQUENCE: SEQUENCE_SENTENCE})


def set_sequence(model: Model, sequence: str) -> None:
    """Make every layer of ``model`` that reads sequences (feature windows,
    segments) read ``sequence`` ("sentence" or "doc"), as its component does."""
    for node in model.walk():
        if SEQUENCE in node.attrs:
            node.attrs[SEQUENCE] = sequence


def by_sentence(model: Model) -> bool:
    """Whether ``model``'s sequences are sentences (the default) rather than docs."""
    return model.attrs.get(SEQUENCE, SEQUENCE_SENTENCE) == SEQUENCE_SENTENCE


def use_tree_templates(model: Model, allow_dep: bool = True) -> None:
    """Add each featurize layer's tree templates to its templates (those not
    there already); with ``allow_dep`` false, leave out those that read DEP
    (a ``dep`` target predicts it)."""
    for node in model.walk():
        extra = node.attrs.get(TREE_TEMPLATES)
        if not extra:
            continue
        current: FeatureTemplates = node.attrs["templates"]
        have = set(current.names)
        added = [text for text in extra
                 if not set(FeatureTemplates([text]).names) <= have
                 and (allow_dep or not FeatureTemplates([text]).reads("DEP"))]
        if added:
            node.attrs["templates"] = FeatureTemplates(current.source + added)


def drop_tree_templates(model: Model) -> None:
    """Remove, from each featurize layer of ``model``, the templates that read
    the parse (``head:X``, DEP, the tree's structure attributes) and its
    ``tree_templates``: the model then reads the words alone."""
    for node in model.walk():
        if "templates" not in node.attrs or TREE_TEMPLATES not in node.attrs:
            continue
        current: FeatureTemplates = node.attrs["templates"]
        kept = [text for text in current.source if not _reads_parse(FeatureTemplates([text]))]
        if not kept:
            raise ValueError(Errors.E114)
        node.attrs["templates"] = FeatureTemplates(kept)
        node.attrs[TREE_TEMPLATES] = []


def _reads_parse(templates: FeatureTemplates) -> bool:
    return templates.uses_tree or templates.reads("DEP")


def forward(model: Model[InT, OutT], docs: InT, is_train: bool) -> Tuple[OutT, Callable]:
    features = extract_features(docs, model.attrs["templates"], by_sentence(model))

    def backprop(d_features: OutT) -> InT:
        return []

    return features, backprop
