"""Layer: Docs -> hashed feature ids (no parameters)."""

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from spacy.tokens import Doc
from thinc.api import Model, deserialize_attr, serialize_attr

from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_SENTENCE
from ..features.extract import extract_features
from ..features.lexicon import Lexicon
from ..features.templates import FeatureTemplates
from ..features.whitespace import FOLDED, WHITESPACE, folds

InT = List[Doc]
OutT = np.ndarray  # (N, n_templates) uint64
#: attrs key of the templates a tree-structured component adds
TREE_TEMPLATES = "tree_templates"
#: attrs key of what a CRF sequence is ("sentence" or "doc"), set by the component
SEQUENCE = "crf_sequence"
#: attrs key of the optional templates, each added where the component's word
#: tables hold what it reads: the model's ``cluster_templates``, then its target's
CLUSTER_TEMPLATES = "cluster_templates"
#: attrs key of those added so far (a re-initialize without a table takes them out)
CLUSTER_TEMPLATES_ADDED = "cluster_templates_added"
#: attrs key of the component's word tables (a Lexicon; thinc does not save it:
#: the component saves it once, beside the weights, however many layers read it)
LEXICON = "crf_lexicon"
#: attrs key of the name of the component that owns the layer (for messages)
OWNER = "crf_owner"
#: attrs key of the templates as the layer was built with them (saved with its
#: weights: "templates" itself, the parsed object, is not)
TEMPLATE_TEXTS = "template_texts"


def featurize(templates: Sequence[str], cluster_templates: Sequence[str] = ()) -> Model[InT, OutT]:
    """Hash the feature templates at every token of a batch of Docs.

    Parameters
    ----------
    templates : sequence of str
        Template strings (see ``spacy_crf.features.templates``); validated here,
        so a typo fails when the pipeline is built, not during training.
    cluster_templates : sequence of str
        Templates added by :func:`set_lexicon` when the component has a Brown
        cluster table (they read ``CLUSTER`` / ``CLUSTERk``); validated here too.
    """
    parsed = FeatureTemplates(templates)
    optional = list(cluster_templates)
    if optional:
        FeatureTemplates(optional)
    # the tree templates are a tree structure's (set_tree_templates), none until then
    # WHITESPACE: a layer built now reads whitespace tokens folded; one saved
    # before the attr existed loads without it, as written (serialize.py)
    return Model("crf_featurize", forward, attrs={"templates": parsed,
                                                  TEMPLATE_TEXTS: parsed.source,
                                                  TREE_TEMPLATES: [],
                                                  CLUSTER_TEMPLATES: optional,
                                                  CLUSTER_TEMPLATES_ADDED: [],
                                                  SEQUENCE: SEQUENCE_SENTENCE, LEXICON: None,
                                                  WHITESPACE: FOLDED})


def add_optional_templates(model: Model, templates: Sequence[str]) -> None:
    """Add ``templates`` to the optional templates of ``model``'s emission
    features (the featurize layers a tree structure's templates would go to,
    not those of input-dependent transitions): :func:`set_lexicon` reads each
    where the component's word tables hold what it reads, as the model's own
    ``cluster_templates``. A target's defaults (``Target.optional_templates``)."""
    templates = list(templates)
    if not templates or model is None:
        return
    FeatureTemplates(templates)
    for node in model.walk():
        if CLUSTER_TEMPLATES in node.attrs and TREE_TEMPLATES in node.attrs:
            have = list(node.attrs[CLUSTER_TEMPLATES] or [])
            node.attrs[CLUSTER_TEMPLATES] = have + [text for text in templates
                                                    if text not in have]


def set_owner(model: Model, name: str) -> None:
    """Name the component that owns ``model``'s featurize layers (for messages)."""
    for node in model.walk():
        if LEXICON in node.attrs:
            node.attrs[OWNER] = name


def set_sequence(model: Model, sequence: str) -> None:
    """Make every layer of ``model`` that reads sequences (feature windows,
    segments) read ``sequence`` ("sentence" or "doc"), as its component does."""
    for node in model.walk():
        if SEQUENCE in node.attrs:
            node.attrs[SEQUENCE] = sequence


def by_sentence(model: Model) -> bool:
    """Whether ``model``'s sequences are sentences (the default) rather than docs."""
    return model.attrs.get(SEQUENCE, SEQUENCE_SENTENCE) == SEQUENCE_SENTENCE


def set_tree_templates(model: Model, templates: Sequence[str]) -> None:
    """Make ``templates`` the tree templates of every featurize layer of
    ``model`` (those :func:`use_tree_templates` adds; a tree structure's
    ``tree_templates``), validated."""
    templates = list(templates)
    if templates:
        FeatureTemplates(templates)
    for node in model.walk():
        if TREE_TEMPLATES in node.attrs:
            node.attrs[TREE_TEMPLATES] = templates


def use_tree_templates(model: Model, allow_dep: bool = True) -> None:
    """Add each featurize layer's tree templates to its templates (those not
    there already); with ``allow_dep`` false, leave out those that read DEP
    (a ``dep`` target predicts it)."""
    for node in model.walk():
        extra = node.attrs.get(TREE_TEMPLATES)
        if not extra:
            continue
        current: FeatureTemplates = node.attrs["templates"]
        added = [text for text in _not_in(extra, current.source)
                 if allow_dep or not FeatureTemplates([text]).reads("DEP")]
        if added:
            node.attrs["templates"] = FeatureTemplates(current.source + added)


def _not_in(extra: Sequence[str], source: Sequence[str]) -> List[str]:
    """The templates of ``extra`` that add a feature ``source`` does not have
    (``NORM[-1..1]`` is there already where ``source`` has its three offsets)."""
    have = set(FeatureTemplates(source).names) if source else set()
    return [text for text in extra if not set(FeatureTemplates([text]).names) <= have]


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


def lexicon_attrs(model: Model, with_cluster_templates: bool = True) -> List[str]:
    """The word-representation attributes every featurize layer of ``model``
    reads (with its ``cluster_templates``, unless told otherwise), sorted."""
    found = set()
    for node in model.walk():
        templates = node.attrs.get("templates")
        if not isinstance(templates, FeatureTemplates):
            continue
        own = _own_templates(node)
        if own:
            found.update(FeatureTemplates(own).lexicon_attrs)
        extra = node.attrs.get(CLUSTER_TEMPLATES) if with_cluster_templates else None
        if extra:
            found.update(FeatureTemplates(extra).lexicon_attrs)
    return sorted(found)


def _own_templates(node: Model) -> List[str]:
    """The layer's templates less the cluster templates :func:`set_lexicon` added:
    those it was built with and the tree templates its structure added. After
    a load the saved record of what was added meets the config's templates,
    which do not hold them: nothing is taken out then."""
    source = list(node.attrs["templates"].source)
    added = list(node.attrs.get(CLUSTER_TEMPLATES_ADDED) or [])
    for start in range(len(source) - len(added) + 1):
        if added and source[start:start + len(added)] == added:
            return source[:start] + source[start + len(added):]
    return source


def _cluster_position(node: Model, own: List[str]) -> int:
    """Where the cluster templates go in ``own``: before the tree templates the
    structure appended, so that a chain expert's list (words and clusters)
    begins a tree expert's (words, clusters, tree) and ``chain_tree`` hashes
    the shared columns once (``extract_features``)."""
    tree = set(node.attrs.get(TREE_TEMPLATES) or [])
    k = len(own)
    while k > 0 and own[k - 1] in tree:
        k -= 1
    return k


def set_lexicon(model: Model, lexicon: Optional[Lexicon]) -> None:
    """Give every featurize layer of ``model`` the component's word tables, and
    add each of its optional templates (``cluster_templates``, and those of its
    component's target: :func:`add_optional_templates`) where the tables hold
    what it reads (take it out where an earlier call added it and these tables
    have none).

    The templates go after the layer's own and before the tree templates its
    structure added (the same place at ``initialize`` and at a load of what
    it saved, so their feature ids agree).
    """
    for node in model.walk():
        if LEXICON not in node.attrs:
            continue
        node.attrs[LEXICON] = lexicon
        current: FeatureTemplates = node.attrs["templates"]
        source = _own_templates(node)
        optional = node.attrs.get(CLUSTER_TEMPLATES) or []
        # each template where its tables are there: the clusters' and the
        # target's (the lemma tables) come from sources a pipeline may have apart
        added = [text for text in _not_in(optional, source) if _readable(text, lexicon)]
        k = _cluster_position(node, source)
        templates = source[:k] + added + source[k:]
        if templates != list(current.source):
            node.attrs["templates"] = FeatureTemplates(templates)
        node.attrs[CLUSTER_TEMPLATES_ADDED] = added


def _readable(template: str, lexicon: Optional[Lexicon]) -> bool:
    """Whether ``lexicon`` holds the tables ``template`` reads (one that reads
    none, as the sentence target's boundary shapes, is always readable)."""
    attrs = FeatureTemplates([template]).lexicon_attrs
    return not attrs or (lexicon is not None and not lexicon.missing(attrs))


@serialize_attr.register(Lexicon)
def _lexicon_to_bytes(_: Lexicon, value: Lexicon, name: str, model: Model) -> bytes:
    return value.to_bytes()


@deserialize_attr.register(Lexicon)
def _lexicon_from_bytes(_: Lexicon, value: bytes, name: str, model: Model) -> Optional[Lexicon]:
    msg = srsly.msgpack_loads(value)
    return None if msg is None else Lexicon.from_msg(msg)


def built_templates(model: Model) -> List[List[str]]:
    """The templates each featurize layer of ``model`` was built with (its
    config's, less what initialize and its structure added), in walk order."""
    return [list(node.attrs[TEMPLATE_TEXTS]) for node in model.walk()
            if TEMPLATE_TEXTS in node.attrs]


def other_templates(model: Model, config_templates: List[List[str]], name: str
                    ) -> Optional[str]:
    """After ``model.from_bytes`` into a model whose featurize layers were built
    with ``config_templates`` (:func:`built_templates` before the load): E267
    where a layer's weights were trained with other templates (the saved
    ``TEMPLATE_TEXTS``), else None. Other templates would read the weights as
    other features, in silence. A layer saved before the texts were saved
    keeps the config's, and is not checked."""
    for given, saved in zip(config_templates, built_templates(model)):
        if (saved != given
                and FeatureTemplates(saved).templates != FeatureTemplates(given).templates):
            return Errors.E267.format(name=name, saved=saved, given=given)
    return None


def restore_lexicon(model: Model) -> None:
    """After ``model.from_bytes`` into a model built from its config: turn each
    featurize layer's loaded word tables into a :class:`Lexicon` (thinc loads
    an attr it had no value for as the plain message) and add the cluster
    templates they call for, as at ``initialize``.

    Raises
    ------
    ValueError
        If saved word tables cannot be read.
    """
    restored: List[Lexicon] = []
    for node in model.walk():
        if LEXICON not in node.attrs:
            continue
        value = node.attrs[LEXICON]
        if value is not None and not isinstance(value, Lexicon):
            value = Lexicon.from_msg(value)
        # layers that shared one lexicon (chain_tree's experts) share it again, so
        # they share their hashed columns too (features are memoised per lexicon)
        value = next((seen for seen in restored if seen == value), value)
        if value is not None and all(seen is not value for seen in restored):
            restored.append(value)
        set_lexicon(node, value)


def forward(model: Model[InT, OutT], docs: InT, is_train: bool) -> Tuple[OutT, Callable]:
    if model.attrs.get(LEXICON) is not None and not isinstance(model.attrs[LEXICON], Lexicon):
        restore_lexicon(model)  # loaded by thinc alone (the component restores at load)
    features = extract_features(docs, model.attrs["templates"], by_sentence(model),
                                model.attrs.get(LEXICON),
                                model.attrs.get(OWNER) or "the feature templates",
                                held_out=is_train, fold_whitespace=folds(model.attrs))

    def backprop(d_features: OutT) -> InT:
        return []

    return features, backprop
