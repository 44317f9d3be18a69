"""Targets: where a component reads gold labels and writes its predictions.

* ``tag``: ``Token.tag_``;  * ``pos``: ``Token.pos_`` (Universal POS);
* ``dep``: ``Token.dep_`` of an existing parse (the heads stay as they are);
* ``morph``: ``Token.morph`` and ``Token.pos`` together, one label per token
  as spaCy's morphologizer makes them (``"Number=Sing|POS=NOUN"``);
* ``lemma``: ``Token.lemma_``, one edit tree per token as spaCy's edit tree
  lemmatizer makes them (``"(m 0 1 () (s 's' ''))"``), each token choosing
  among the trees that apply to its form;
* ``sent_starts``: ``Token.is_sent_start`` (``S`` / ``I``), so ``doc.sents``;
* ``ents``: ``doc.ents``;  * ``spans:KEY``: ``doc.spans[KEY]`` (both as BIO or
  BILUO tags, with the scheme's forbidden transitions enforced);
* ``_.NAME``: a custom token extension, e.g. ``_.chunk``.

Each lives in a module of its own here and registers itself
(:mod:`.registry`: ``spacy.util.registry.crf_targets``, whose entry points are
the group ``spacy_crf_targets``); :func:`make_target` builds the one a config
names. A new target is one more module: a :class:`Target` subclass decorated
with :func:`register_target`; a module here is imported with the package,
one elsewhere through its entry point.
"""

from .base import NEGATIVE_PREFIX, Target, check_label, is_negative, refuse_negative_type
from .registry import assignable_attributes, make_target, register_target, registered_targets

# the package's own targets, registered in the order E006 lists them
from .token_attrs import DepTarget, PosTarget, TagTarget, TokenAttrTarget  # noqa: I100
from .morph import EMPTY_MORPH_KEY, MorphTarget
from .lemma import NULL_TREE, LemmaTarget, parse_edit_tree
from .sent_starts import SentStartsTarget
from .spans import TYPE_BITS, SpanTarget
from .ents import EntTarget
from .span_group import SpanGroupTarget
from .extension import (LABELS, ExtensionTarget, extension_labels, register_extension,
                        set_doc_labels)
from ..registries import import_modules

import_modules(__name__, __path__)

__all__ = [
    "NEGATIVE_PREFIX", "Target", "check_label", "is_negative", "refuse_negative_type",
    "assignable_attributes", "make_target", "register_target", "registered_targets",
    "TokenAttrTarget", "TagTarget", "PosTarget", "DepTarget", "EMPTY_MORPH_KEY", "MorphTarget",
    "NULL_TREE", "LemmaTarget", "parse_edit_tree", "SentStartsTarget", "TYPE_BITS", "SpanTarget",
    "EntTarget", "SpanGroupTarget", "LABELS", "ExtensionTarget", "extension_labels",
    "register_extension", "set_doc_labels",
]
