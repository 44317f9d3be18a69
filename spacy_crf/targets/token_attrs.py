"""Targets whose labels are one spaCy token attribute: ``tag`` (``Token.tag_``),
``pos`` (``Token.pos_``, Universal POS) and ``dep`` (``Token.dep_`` of an
existing parse: the heads stay as they are)."""

from typing import Any, Sequence

import numpy as np
from spacy.attrs import DEP, POS, TAG
from spacy.parts_of_speech import IDS as POS_IDS
from spacy.parts_of_speech import NAMES as POS_NAMES
from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..errors import Errors
from ..feature_sources.lemma_lookups import TAGGING_TEMPLATES
from ..feature_sources.usual_case import USUAL_CASE_TEMPLATES
from ..features.doc_arrays import has_parse
from ..features.templates import templates_of
from .base import Target
from .registry import register_target


class TokenAttrTarget(Target):
    """A target whose labels are one spaCy token attribute (``token_attr``),
    written with ``Doc.from_array``.

    (The module registers ``tag``, ``pos`` and ``dep`` in that order: the
    order the list of targets, E006, names them.)
    """

    token_attr: int = TAG

    def reference_keys(self, doc: Doc) -> np.ndarray:
        return doc.to_array(self.token_attr).astype(np.uint64).reshape(-1)

    def has_existing(self, doc: Doc) -> bool:
        # a fresh doc (the usual one) has none at all: no reading of its arrays
        return doc.has_annotation(self.token_attr)

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        doc.from_array([self.token_attr], self._label_keys[ids])

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        # the keys of the whole batch in one gather, then a slice per doc: a
        # gather per doc cost ~30 ns a token on sentences
        keys = self._label_keys[label_ids]
        attrs = [self.token_attr]
        end = 0
        for doc, n in zip(docs, doc_lengths.tolist()):
            end += n
            if n:
                mine = keys[end - n:end]
                if keep_existing:  # a value that is no label stays too (W044)
                    there = self.reference_keys(doc)
                    mine = np.where(there != 0, there, mine)
                doc.from_array(attrs, mine)


#: what the tagging targets (``tag``, ``pos``, ``morph``) read beside the model's
#: templates, where the pipeline's language has the tables: what spaCy's lemma
#: tables say of the word, and how it is usually written
TAGGING_DEFAULTS = TAGGING_TEMPLATES + USUAL_CASE_TEMPLATES


@register_target
class TagTarget(TokenAttrTarget):
    """Fine-grained tags: ``Token.tag_``."""

    name = score_attr = "tag"
    assigns = ("token.tag",)
    token_attr = TAG
    #: and whether whitespace follows the punctuation and the word before it
    #: (``feature_sources/space_after.py``), where the training docs have
    #: spacing: Penn tags tell an opening quote (``) from a closing one (''),
    #: which the spacing shows. UD English EWT XPOS in docs of 10 sentences,
    #: plain loop, dev / test: 94.67 / 95.17 -> 94.80 / 95.35; UPOS and UFeats,
    #: which do not tell them apart, +0.02 and +0.03 on test, so only here
    optional_templates = TAGGING_DEFAULTS + ("SPACE_AFTER[-1]|IS_PUNCT", "SPACE_AFTER|IS_PUNCT")
    keeps_existing = True  # as spaCy's tagger (overwrite = false): a rule's tags stay

    def key_of(self, label: str, vocab: Vocab) -> int:
        # the StringStore's key: strings that are also spaCy symbols ("X",
        # "NOUN", ...) map to the symbol id, not to their hash
        return vocab.strings.add(label)


@register_target
class PosTarget(TokenAttrTarget):
    """Universal POS tags: ``Token.pos_``."""

    name = score_attr = "pos"
    assigns = ("token.pos",)
    token_attr = POS
    optional_templates = TAGGING_DEFAULTS
    # keeps_existing: False, as spaCy's pipe that predicts Token.pos, the
    # morphologizer (overwrite = true)

    def key_of(self, label: str, vocab: Vocab) -> int:
        if not label or label not in POS_IDS:  # ("" is spaCy's id 0: no POS)
            raise ValueError(Errors.E206.format(label=label, tags=", ".join(sorted(
                name for name in POS_IDS if name and name != "EOL"))))
        return POS_IDS[label]

    def string_of(self, doc: Doc, key: int) -> str:
        return POS_NAMES[key]


@register_target
class DepTarget(TagTarget):
    """Dependency relation labels of an existing parse: reads gold ``Token.dep_``,
    writes ``Token.dep_`` and leaves the heads alone."""

    name = score_attr = "dep"
    assigns = ("token.dep",)
    token_attr = DEP
    keeps_existing = False  # its docs have a parse: their labels are what it replaces
    optional_templates = ()  # (not measured for relation labels)

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        """``Token.dep_`` of each doc's own parse; E251, before any doc is
        written, for a doc of two tokens or more without one (spaCy would
        make every token its own head: a broken parse, ``doc.sents`` E030)."""
        for doc in docs:
            if not has_parse(doc):
                raise ValueError(Errors.E251.format(n=len(doc), text=doc[:8].text))
        super().write_batch(docs, label_ids, doc_lengths, keep_existing)

    def check_model(self, model: Any, n_relation_groups: int) -> None:
        """E017: the features must not read the relations the target predicts,
        and its labels are the relation groups' own (one group)."""
        reading = [t.names for t in templates_of(model) if t.reads("DEP")]
        if reading or n_relation_groups != 1:
            raise ValueError(Errors.E017.format(templates=reading))
