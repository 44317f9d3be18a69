"""Targets: where a component reads gold labels and writes its predictions.

* ``tag``: ``Token.tag_``;  * ``pos``: ``Token.pos_`` (Universal POS);
* ``dep``: ``Token.dep_`` of an existing parse (the heads stay as they are);
* ``morph``: ``Token.morph`` and ``Token.pos`` together, one label per token
  as spaCy's morphologizer makes them (``"Number=Sing|POS=NOUN"``);
* ``sent_starts``: ``Token.is_sent_start`` (``S`` / ``I``), so ``doc.sents``;
* ``lemma``: ``Token.lemma_``, one edit tree per token as spaCy's edit tree
  lemmatizer makes them (``"(m 0 1 () (s 's' ''))"``), each token choosing
  among the trees that apply to its form;
* ``ents``: ``doc.ents``;  * ``spans:KEY``: ``doc.spans[KEY]`` (both as BIO or
  BILUO tags, with the scheme's forbidden transitions enforced);
* ``_.NAME``: a custom token extension, e.g. ``_.chunk``.

Labels of a ``_.NAME`` target live in one entry per doc, aligned to the
tokens' characters (:mod:`spacy_crf.token_values`, so they follow their
tokens through ``doc.retokenize()`` and ``Span.as_doc``): one assignment per
doc when the component writes, and ``DocBin(store_user_data=True)`` saves
them. ``token._.NAME`` reads and writes that entry (and falls back to the
plain per-doc list of ``doc.user_data[("spacy_crf", NAME)]`` that corpora
written before kept, and to values stored the usual way, by an extension
registered elsewhere before this one).
"""

import re
import warnings
from collections import Counter
from functools import partial
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from spacy.attrs import DEP, ENT_IOB, ENT_TYPE, IS_SPACE, LEMMA, MORPH, ORTH, POS, SENT_START, TAG
from spacy.morphology import Morphology
from spacy.parts_of_speech import IDS as POS_IDS
from spacy.parts_of_speech import NAMES as POS_NAMES
from spacy.symbols import IDS as SYMBOL_IDS
from spacy.pipeline._edit_tree_internals.edit_trees import EditTrees
from spacy.strings import StringStore, hash_string
from spacy.tokens import Doc, Span, Token
from spacy.training import Example
from spacy.util import filter_spans
from spacy.vocab import Vocab

from . import inference, schemes, token_values
from .errors import Errors, Warnings, warn
from .models.potentials import CRFScores
from .span_probabilities import span_probabilities
from .structures import BatchLayout
from .ragged import sequence_ends
from .util import same_tokens

_EXTENSION = re.compile(r"^_\.([A-Za-z_][A-Za-z0-9_]*)$")
#: spaCy's prefix of a negative annotation: "!N" = "not N" (the tagger's neg_prefix,
#: the deprecated "!PERSON" entities)
NEGATIVE_PREFIX = "!"
#: the bits of a span type's hash that a packed tag key keeps (``SpanTarget.key_of``)
TYPE_BITS = (1 << 61) - 1
#: the key of empty FEATS, ``"_"`` (a spaCy symbol: the same in every vocab)
EMPTY_MORPH_KEY = SYMBOL_IDS[Morphology.EMPTY_MORPH]


def is_negative(label: str) -> bool:
    """Whether ``label`` is a negative annotation, ``"!N"`` ("not N")."""
    return label.startswith(NEGATIVE_PREFIX) and len(label) > len(NEGATIVE_PREFIX)


def refuse_negative_type(span_type: str, target: str) -> None:
    """E185 for a negative span type (``"!PERSON"``): span targets, as spaCy's
    ner, cannot learn "not a PERSON" (see :meth:`Target._warn_unknown`)."""
    if is_negative(span_type):
        raise ValueError(Errors.E185.format(label=span_type, name=target,
                                            positive=span_type[len(NEGATIVE_PREFIX):]))


class Target:
    """Base class: a mapping between Docs and label ids.

    ``is_span_target`` targets also give ``constraints()`` (allowed
    transitions, first and last labels) and ``forced(doc)``, and own what
    follows from their scheme: the constrained scores, the repair of gold
    tags that break it, forced decoding around existing spans and span
    probabilities.

    Subclasses give ``reference_keys`` (one value per token of a reference
    doc, ``missing_key`` where it has none) and ``write``.
    """

    name: str = ""
    score_attr: str = ""
    missing_key = 0
    is_span_target = False
    #: its labels come by the hundred (morphology): a chain whose order the
    #: config leaves null prunes each token's labels (``spacy-crf.PrunedChain.v1``)
    many_labels = False
    #: its sequences are whole docs whatever the ``sequence`` setting (E212):
    #: it predicts the sentence boundaries that would cut them
    whole_docs = False
    #: what ``write`` sets, as spaCy's pipe meta names it (``nlp.analyze_pipes()``)
    assigns: Sequence[str] = ()

    def __init__(self) -> None:
        self._labels: List[str] = []
        self._label_keys = np.zeros((0,), dtype=np.uint64)
        self._label_array = np.zeros((0,), dtype=object)
        self._keys = np.zeros((0,), dtype=np.uint64)
        self._order = np.zeros((0,), dtype=np.int64)
        self._warned: Set[str] = set()

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        """Fix the label set; label ``i`` of ``labels`` is id ``i``.

        The label strings are added to ``vocab.strings`` so that docs can
        show them.
        """
        self._labels = list(labels)
        for label in self._labels:
            vocab.strings.add(label)
        self._label_keys = np.asarray([self.key_of(label, vocab) for label in labels],
                                      dtype=np.uint64)
        self._label_array = np.asarray(self._labels + [None], dtype=object)[:-1]
        self._order = np.argsort(self._label_keys, kind="stable")
        self._keys = self._label_keys[self._order]

    def label_parts(self, label: str) -> List[str]:
        """The parts a label's emission score is the sum of, where the model
        factors its emissions over them (``spacy-crf.FactoredCRF.v1``): here
        the label itself, so a factored model of this target is a plain one.
        A target whose labels are made of parts (the morphology's POS and
        features) gives them, and labels that share a part share its weights.
        """
        return [label]

    def key_of(self, label: str, vocab: Vocab) -> int:
        """The value ``reference_keys`` gives for a token with this label."""
        raise NotImplementedError

    def reference_keys(self, doc: Doc) -> np.ndarray:
        """One uint64 key per token of ``doc`` (``missing_key`` where unannotated)."""
        raise NotImplementedError

    def label_strings(self, doc: Doc) -> List[str]:
        """The labels present in a reference doc (to collect the label set)."""
        keys = self.reference_keys(doc)
        keys = np.unique(keys[keys != self.missing_key])
        return [self.string_of(doc, int(key)) for key in keys]

    def string_of(self, doc: Doc, key: int) -> str:
        return doc.vocab.strings[key]

    def ids_of_keys(self, keys: np.ndarray) -> np.ndarray:
        """Map keys to label ids; -1 for missing or unknown labels."""
        if not len(self._keys):
            return np.full(keys.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self._keys, keys)
        pos = np.minimum(pos, len(self._keys) - 1)
        found = self._keys[pos] == keys
        return np.where(found, self._order[pos], -1).astype(np.int64)

    def gold_ids(self, example: Example) -> np.ndarray:
        """Gold label id of every token of ``example.predicted``; -1 where unknown.

        Where tokenisations differ, a predicted token takes the label of the one
        reference token it aligns to, and none if it aligns to zero or several
        (as ``Example.get_aligned`` does).
        """
        return self._token_gold_ids(example, same_tokens(example.predicted, example.reference))

    def _token_gold_ids(self, example: Example, same: bool) -> np.ndarray:
        """:meth:`gold_ids`, told whether the two docs have the same tokens."""
        predicted, reference = example.predicted, example.reference
        keys = self.reference_keys(reference)
        ids = self.ids_of_keys(keys)
        self._warn_unknown(reference, keys, ids)
        if same:
            return ids
        x2y = example.alignment.x2y
        lengths = np.asarray(x2y.lengths, dtype=np.int64)
        data = np.asarray(x2y.data, dtype=np.int64)
        first = np.cumsum(lengths) - lengths
        gold = np.full(len(predicted), -1, dtype=np.int64)
        single = lengths == 1
        gold[single] = ids[data[first[single]]]
        return gold

    def _warn_unknown(self, reference: Doc, keys: np.ndarray, ids: np.ndarray) -> None:
        """W001 (W015 for a negative ``!LABEL``), once per label, for gold labels
        outside the label set: their tokens are unannotated. A span target
        refuses a negative type (E185), as spaCy's ner does: a tag's "not N"
        leaves the token's other labels open, an entity's would also be
        read as a span boundary of its own."""
        unknown = keys[(keys != self.missing_key) & (ids < 0)]
        if not unknown.size:  # (the usual case: np.unique costs microseconds a doc)
            return
        for key in np.unique(unknown):
            label = self.unknown_label(reference, int(key))
            if self.is_span_target:
                refuse_negative_type(label, self.name)
            if label in self._warned:
                continue
            self._warned.add(label)
            if is_negative(label):
                warnings.warn(Warnings.W015.format(label=label, name=self.name,
                                                   positive=label[len(NEGATIVE_PREFIX):]))
            else:
                warnings.warn(Warnings.W001.format(label=label, name=self.name))

    def unknown_label(self, doc: Doc, key: int) -> str:
        """How W001 names the gold label of ``key`` (the label itself here)."""
        return self.string_of(doc, key)

    def labels_for(self, label: str) -> List[str]:
        """The labels ``add_label(label)`` adds: ``label``."""
        return [label]

    def public_labels(self, tags: Sequence[str]) -> Tuple[str, ...]:
        """The component's ``labels`` given its model's columns ``tags``: the tags."""
        return tuple(tags)

    def label_data(self, tags: Sequence[str]) -> List[str]:
        """What ``spacy init labels`` writes for the columns ``tags``: labels that
        ``initialize(labels=...)`` reads back into the same columns (the tags)."""
        return list(tags)

    def kind_of(self, label: str) -> str:
        """What a label is learned with: every label of a kind is learned as
        soon as gold has one of them (span targets: the tags of a type)."""
        return label

    def order_labels(self, labels: Iterable[str]) -> List[str]:
        """The label set in column order: sorted."""
        return sorted(set(labels))

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        """Set the predicted labels (label ids, one per token) on ``doc``."""
        raise NotImplementedError

    def constrain(self, scores: CRFScores) -> CRFScores:
        """``scores`` with the target's forbidden moves at ``-inf`` (none here)."""
        return scores

    def allowed_labels(self, docs: Sequence[Doc]) -> Optional[np.ndarray]:
        """(N, L) bool over the non-empty docs' tokens, the labels each token may
        take (the component puts the others' emissions at ``-inf``), or None:
        every label (here)."""
        return None

    def repair_gold(self, scores: CRFScores, gold: np.ndarray,
                    layout: BatchLayout) -> Tuple[np.ndarray, int]:
        """Gold ids with those no labelling of the target can have unannotated,
        and how many were (none here)."""
        return gold, 0

    def has_existing(self, doc: Doc) -> bool:
        """Whether ``doc`` may carry labels of this target to keep
        (``keep_existing``); False only where it surely has none."""
        return True

    def fixed_labels(self, docs: Sequence[Doc], scores: CRFScores
                     ) -> Tuple[np.ndarray, CRFScores]:
        """Labels already on the (non-empty) docs, fixed for decoding (-1 where
        free), and ``scores`` to decode them with: a copy masked where a fixed
        label constrains a free one, else ``scores`` (never written to)."""
        return (np.concatenate([self.ids_of_keys(self.reference_keys(doc)) for doc in docs]),
                scores)

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        """Write a batch's decoded labels (``label_ids`` concatenated over ``docs``;
        decoded with the existing labels kept if ``keep_existing``, so every
        label is written as it is)."""
        ends = np.cumsum(doc_lengths)
        for doc, end, n in zip(docs, ends, doc_lengths):
            if n:
                self.write(doc, label_ids[end - n:end])

    def span_confidence(self, scores: CRFScores, layout: BatchLayout, label_ids: np.ndarray,
                        fixed: Optional[np.ndarray]) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """P(span) of every predicted span, where the target has spans (None here)."""
        return None

    def getter(self) -> Callable[[Token, str], object]:
        """``getter(token, attr)`` for spaCy's ``Scorer.score_token_attr``."""
        return getattr


class TokenAttrTarget(Target):
    """A target whose labels are one spaCy token attribute (``token_attr``),
    written with ``Doc.from_array``."""

    token_attr: int = TAG

    def reference_keys(self, doc: Doc) -> np.ndarray:
        return doc.to_array(self.token_attr).astype(np.uint64).reshape(-1)

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
                doc.from_array(attrs, keys[end - n:end])


class TagTarget(TokenAttrTarget):
    name = score_attr = "tag"
    assigns = ("token.tag",)
    token_attr = TAG

    def key_of(self, label: str, vocab: Vocab) -> int:
        # the StringStore's key: strings that are also spaCy symbols ("X",
        # "NOUN", ...) map to the symbol id, not to their hash
        return vocab.strings.add(label)


class DepTarget(TagTarget):
    """Dependency relation labels of an existing parse: reads gold ``Token.dep_``,
    writes ``Token.dep_`` and leaves the heads alone."""

    name = score_attr = "dep"
    assigns = ("token.dep",)
    token_attr = DEP


class PosTarget(TokenAttrTarget):
    name = score_attr = "pos"
    assigns = ("token.pos",)
    token_attr = POS

    def key_of(self, label: str, vocab: Vocab) -> int:
        if label not in POS_IDS:
            raise ValueError(f"'{label}' is not a Universal POS tag: target 'pos' needs UPOS labels.")
        return POS_IDS[label]

    def string_of(self, doc: Doc, key: int) -> str:
        from spacy.parts_of_speech import NAMES

        return NAMES[key]


class MorphTarget(Target):
    """Morphology with the POS joined in, as spaCy's morphologizer labels it:
    ``Token.morph`` (FEATS) and ``Token.pos``.

    A label is the token's FEATS with a ``POS=...`` field added, in spaCy's
    normalised form (fields sorted): ``"Number=Sing|POS=NOUN"``; a token
    with a POS and empty FEATS is ``"POS=X"``. A token with neither is
    unannotated, as spaCy treats missing annotation.

    Gold is read from ``Doc.to_array([MORPH, POS])`` and predictions written
    with ``Doc.from_array`` (no Python loop of ours per token; spaCy's
    ``from_array`` looks each morph up in its morphology table): a token's key mixes
    its morph hash and POS id (:meth:`mix`), and each label keeps the morph
    hash of its FEATS without the POS (in ``vocab.morphology``) and its POS id.
    """

    name = score_attr = "morph"
    assigns = ("token.morph", "token.pos")
    many_labels = True  # 321 on UD English EWT, 500-1,500 in German or Czech treebanks
    #: the field the POS takes in a label (spaCy's ``Morphologizer.POS_FEAT``)
    POS_FEAT = "POS"
    #: an odd multiplier: ``morph * MIX`` is one-to-one modulo 2**64, so a
    #: token with a morph hash never gets the missing key 0 from it
    MIX = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self) -> None:
        super().__init__()
        self._label_morph = np.zeros((0,), dtype=np.uint64)
        self._label_pos = np.zeros((0,), dtype=np.uint64)

    @classmethod
    def mix(cls, morph: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """The key of tokens with morph hashes ``morph`` and POS ids ``pos``.

        A POS without FEATS reads as empty FEATS (``"_"``), whether the morph
        is unset (0) or set to ``"_"``: both are the label ``"POS=X"``. Only
        a token with neither gets 0, the missing key, and two labels share a
        key only where 64-bit hashes collide.
        """
        morph = np.asarray(morph, dtype=np.uint64)
        pos = np.asarray(pos, dtype=np.uint64)
        morph = np.where((morph == 0) & (pos != 0), np.uint64(EMPTY_MORPH_KEY), morph)
        return morph * cls.MIX + pos  # (uint64 arrays wrap around, as a hash should)

    @staticmethod
    def normalize(label: str) -> str:
        """``label`` in spaCy's normal form: fields sorted, and the values of a
        field (``PronType=Int,Rel``); ``"_"`` for no feature at all."""
        return Morphology.dict_to_feats(Morphology.feats_to_dict(label)) or Morphology.EMPTY_MORPH

    def label_parts(self, label: str) -> List[str]:
        """The parts of a label: its POS part first, then each feature.

        Parameters
        ----------
        label : str
            A label of this target, e.g. ``"Number=Sing|POS=NOUN"``.

        Returns
        -------
        list of str
            E.g. ``["POS=NOUN", "Number=Sing"]``; ``[]`` for ``"_"`` (no POS,
            no FEATS). A field with several values stays one part
            (``"PronType=Int,Rel"``).
        """
        feats = Morphology.feats_to_dict(label)
        group = self.label_group(label)
        return ([group] if group else []) + [f"{field}{Morphology.FIELD_SEP}{value}"
                                             for field, value in sorted(feats.items())
                                             if field != self.POS_FEAT]

    def label_group(self, label: str) -> str:
        """The POS part of a label (``"POS=NOUN"``), ``""`` for a label without one."""
        pos = Morphology.feats_to_dict(label).get(self.POS_FEAT)
        return f"{self.POS_FEAT}{Morphology.FIELD_SEP}{pos}" if pos else ""

    def _split(self, label: str, vocab: Vocab) -> Tuple[int, int]:
        """The morph hash of a label's FEATS without the POS (added to
        ``vocab.morphology``, so ``Doc.from_array`` can write it) and its POS id."""
        feats = Morphology.feats_to_dict(label)
        pos = feats.pop(self.POS_FEAT, "")
        if pos and pos not in POS_IDS:
            raise ValueError(Errors.E200.format(label=label, pos=pos))
        return int(vocab.morphology.add(feats)), (POS_IDS[pos] if pos else 0)

    def key_of(self, label: str, vocab: Vocab) -> int:
        morph, pos = self._split(label, vocab)
        return int(self.mix(np.asarray([morph]), np.asarray([pos]))[0])

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        super().set_labels(labels, vocab)
        parts = [self._split(label, vocab) for label in self._labels]
        self._label_morph = np.asarray([m for m, _ in parts], dtype=np.uint64).reshape(-1)
        self._label_pos = np.asarray([p for _, p in parts], dtype=np.uint64).reshape(-1)

    def labels_for(self, label: str) -> List[str]:
        """The labels ``add_label(label)`` adds: ``label`` in normal form."""
        return [self.normalize(label)]

    def _arrays(self, doc: Doc) -> np.ndarray:
        """(n, 2) morph hash and POS id of every token."""
        return doc.to_array([MORPH, POS]).astype(np.uint64).reshape(len(doc), 2)

    def reference_keys(self, doc: Doc) -> np.ndarray:
        arr = self._arrays(doc)
        return self.mix(arr[:, 0], arr[:, 1])

    def label_strings(self, doc: Doc) -> List[str]:
        # the doc's arrays once, not once per label as string_of would read them
        arr = self._arrays(doc)
        keys, first = np.unique(self.mix(arr[:, 0], arr[:, 1]), return_index=True)
        return [self.label_of(doc.vocab, int(arr[i, 0]), int(arr[i, 1]))
                for key, i in zip(keys.tolist(), first.tolist()) if key != self.missing_key]

    def string_of(self, doc: Doc, key: int) -> str:
        """The label of the first token of ``doc`` whose key is ``key``."""
        arr = self._arrays(doc)
        at = np.flatnonzero(self.mix(arr[:, 0], arr[:, 1]) == np.uint64(key))
        if not len(at):
            raise KeyError(key)
        return self.label_of(doc.vocab, *(int(v) for v in arr[at[0]]))

    def label_of(self, vocab: Vocab, morph: int, pos: int) -> Optional[str]:
        """The label of a token with morph hash ``morph`` and POS id ``pos``
        (``None`` for neither: unannotated)."""
        if not morph and not pos:
            return None
        feats = Morphology.feats_to_dict(vocab.strings[morph]) if morph else {}
        if pos:
            feats[self.POS_FEAT] = POS_NAMES[pos]
        return Morphology.dict_to_feats(feats) or Morphology.EMPTY_MORPH

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        doc.from_array([MORPH, POS], np.stack([self._label_morph[ids],
                                               self._label_pos[ids]], axis=1))

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        # one gather for the batch, then a slice per doc (as TokenAttrTarget)
        values = np.stack([self._label_morph[label_ids], self._label_pos[label_ids]], axis=1)
        end = 0
        for doc, n in zip(docs, doc_lengths.tolist()):
            end += n
            if n:
                doc.from_array([MORPH, POS], values[end - n:end])

    def getter(self) -> Callable[[Token, str], object]:
        """``pos`` and ``morph`` as spaCy's morphologizer scores them (POS id,
        morph hash; 0 is missing), else the label (``None`` where missing)."""
        def get(token: Token, attr: str) -> object:
            if attr == "pos":
                return token.pos
            if attr == "morph":
                return token.morph.key
            return self.label_of(token.vocab, token.morph.key, token.pos)
        return get


class SentStartsTarget(TokenAttrTarget):
    """Sentence boundaries: ``Token.is_sent_start``, one label per token, ``S``
    (the token starts a sentence) or ``I`` (it does not), as spaCy's senter
    predicts them; components after it see ``doc.sents``.

    Gold is read with ``Doc.to_array(SENT_START)`` (1 a start, -1 not a start,
    0 unannotated) and predictions written with ``Doc.from_array``. A doc
    whose boundaries are not annotated at all (``doc.has_annotation("SENT_START")``
    is False: a fresh Doc marks its first token and nothing else) has no gold.
    The first token of a doc is always a start, in gold and in what is written,
    as ``doc.sents`` reads it.

    Its CRF sequence is the whole doc (:attr:`whole_docs`): the boundaries are
    what it predicts, so those a doc already has must not cut its sequences
    or its feature windows.
    """

    name = "sent_starts"
    score_attr = "sents"
    assigns = ("token.is_sent_start",)
    token_attr = SENT_START
    whole_docs = True
    START, INSIDE = "S", "I"
    #: the values ``Doc.to_array(SENT_START)`` gives, as uint64 (-1 wraps around)
    KEYS = {START: 1, INSIDE: 2 ** 64 - 1}

    def key_of(self, label: str, vocab: Vocab) -> int:
        if label not in self.KEYS:
            raise ValueError(Errors.E213.format(label=label))
        return self.KEYS[label]

    def labels_for(self, label: str) -> List[str]:
        self.key_of(label, None)  # E213 for a label that is neither S nor I
        return [label]

    def order_labels(self, labels: Iterable[str]) -> List[str]:
        """Both labels, always (``I`` first: an untrained model's ties decode as
        no boundary), whatever the examples or ``labels`` showed."""
        return [self.INSIDE, self.START]

    def reference_keys(self, doc: Doc) -> np.ndarray:
        if not len(doc) or not doc.has_annotation("SENT_START"):
            return np.zeros(len(doc), dtype=np.uint64)
        keys = super().reference_keys(doc)
        keys[0] = self.KEYS[self.START]  # (a doc built with sent_starts=[None, ...] leaves it 0)
        return keys

    def label_strings(self, doc: Doc) -> List[str]:
        # both labels for any annotated doc: a one-sentence doc still tells
        # that its other tokens are no starts, and the first is one
        return [self.INSIDE, self.START] if doc.has_annotation("SENT_START") else []

    def string_of(self, doc: Doc, key: int) -> str:
        return {v: k for k, v in self.KEYS.items()}[int(key)]

    def has_existing(self, doc: Doc) -> bool:
        return doc.has_annotation("SENT_START")

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        self.write_batch([doc], ids, np.asarray([len(doc)], dtype=np.int64), False)

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        keys = self._label_keys[label_ids]
        firsts = (np.cumsum(doc_lengths) - doc_lengths)[doc_lengths > 0]
        # whatever the CRF decoded there: doc.sents starts every doc with a sentence
        keys[firsts] = self.KEYS[self.START]
        attrs = [SENT_START]
        end = 0
        for doc, n in zip(docs, doc_lengths.tolist()):
            end += n
            if n:
                doc.from_array(attrs, keys[end - n:end])

    def getter(self) -> Callable[[Token, str], object]:
        return lambda token, _: token.is_sent_start
#: the id spaCy's EditTrees gives "no subtree" (``edit_trees.NULL_TREE_ID``)
NULL_TREE = 2**32 - 1


def parse_edit_tree(label: str) -> tuple:
    """An edit tree from the string spaCy's ``EditTrees.tree_to_str`` writes.

    ``(m PREFIX_LEN SUFFIX_LEN PREFIX_TREE SUFFIX_TREE)`` is a match node
    (``()`` for no subtree), ``(s 'ORIG' 'SUBST')`` a substitution node.
    The strings are not escaped, so a parse is searched for (a quote inside
    them cannot be told from the end of the node by reading on): the first
    that reads the whole label is taken.

    Returns
    -------
    tuple
        ``("m", prefix_len, suffix_len, prefix, suffix)`` (subtrees as tuples,
        ``None`` for none) or ``("s", orig, subst)``.

    Raises
    ------
    ValueError
        E220 if ``label`` is no edit tree.
    """
    if isinstance(label, str):
        for node, end in _parse_node(label, 0):
            if end == len(label):
                return node
    raise ValueError(Errors.E220.format(label=label))


_MATCH_HEAD = re.compile(r"\(m (\d+) (\d+) ")


def _parse_node(text: str, at: int):
    """Every (node, end) that ``text[at:]`` starts with (a generator)."""
    if text.startswith("(m ", at):
        head = _MATCH_HEAD.match(text, at)
        if head is None:
            return
        for prefix, after_prefix in _parse_subtree(text, head.end()):
            if text.startswith(" ", after_prefix):
                for suffix, end in _parse_subtree(text, after_prefix + 1):
                    if text.startswith(")", end):
                        yield ("m", int(head.group(1)), int(head.group(2)), prefix, suffix), end + 1
    elif text.startswith("(s '", at):
        start = at + 4
        middle = text.find("' '", start)
        while middle >= 0:
            end = text.find("')", middle + 3)
            while end >= 0:
                yield ("s", text[start:middle], text[middle + 3:end]), end + 2
                end = text.find("')", end + 1)
            middle = text.find("' '", middle + 1)


def _parse_subtree(text: str, at: int):
    if text.startswith("()", at):
        yield None, at + 2
    else:
        yield from _parse_node(text, at)


def _tree_index_key(node: tuple) -> Tuple[str, str]:
    """A test every form a tree applies to passes, for :class:`LemmaTarget`'s
    index of its trees: ``("form", s)`` the form is ``s``, ``("suffix", s)``
    it ends with ``s``, ``("prefix", s)`` it starts with ``s``, ``("any", "")``.

    A match node's suffix subtree applies to the form's end, and so on down its
    suffix subtrees: a substitution node found there must be the form's last
    characters (the prefix side likewise).
    """
    if node[0] == "s":
        return ("form", node[1])
    for side, child in (("suffix", 4), ("prefix", 3)):
        sub = node[child]
        while sub is not None and sub[0] == "m":
            sub = sub[child]
        if sub is not None:
            return (side, sub[1])
    return ("any", "")


class LemmaTarget(Target):
    """Lemmas as edit trees, as spaCy's ``edit_tree_lemmatizer`` learns them.

    A label is the edit tree that rewrites a token's form into its lemma
    (spaCy's ``EditTrees``), named as ``EditTrees.tree_to_str`` writes it:
    ``"(m 0 1 () (s 's' ''))"`` strips a final ``s``. The labels describe
    their trees, so the trees are saved with the component's cfg and come
    back with it, and ``add_label`` takes a tree string.

    * Gold: the tree of each token's (form, lemma); a token without a lemma
      is unannotated. Trees seen fewer than :attr:`MIN_TREE_FREQ` times in the
      corpus ``initialize`` reads are left out of the labels, as spaCy's
      lemmatizer prunes them (``min_tree_freq = 3``); their tokens, and gold
      whose tree is no label, are unannotated (W035).
    * Candidates: a token may only take a tree that applies to its form
      (:meth:`allowed_labels`, the component puts the others at ``-inf``).
      Which trees apply to a form is worked out once per distinct form and
      kept (an index of the trees by the suffix, prefix or whole form they
      need gives the few worth trying).
    * Writing: ``Token.lemma_``, the tree applied to the form; where no tree
      applies to a form (its candidates are then left open), the lemma backs
      off to the form itself, as spaCy's lemmatizer's ``backoff = "orth"``.
    """

    name = score_attr = "lemma"
    assigns = ("token.lemma",)
    many_labels = True  # 531 trees seen 3+ times in UD English EWT's training split
    #: trees seen fewer times in the corpus ``initialize`` reads are no label
    #: (spaCy's ``edit_tree_lemmatizer``'s ``min_tree_freq``), unless that
    #: leaves none
    MIN_TREE_FREQ = 3
    #: distinct forms whose candidate trees are kept
    CACHE_SIZE = 500_000

    def __init__(self) -> None:
        super().__init__()
        # trees of gold (form, lemma) pairs, only to name them: strings of their own
        self._gold_trees = EditTrees(StringStore())
        self._pair_keys: Dict[Tuple[int, int], int] = {}
        self._tree_names: Dict[int, Tuple[str, str, str]] = {}  # key -> (tree, form, lemma)
        self._counts: Counter = Counter()  # of each tree, while initialize reads the corpus
        self._reset_trees()

    def _reset_trees(self) -> None:
        self._tree_strings = StringStore()
        self._trees = EditTrees(self._tree_strings)  # the labels' trees
        self._tree_ids: List[int] = []
        self._index: Dict[Tuple[str, str], List[int]] = {}
        self._suffix_lengths: List[int] = []
        self._prefix_lengths: List[int] = []
        # form -> (label ids whose trees apply, sorted; the lemma of each)
        self._candidates: Dict[str, Tuple[np.ndarray, List[str]]] = {}

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        nodes = [parse_edit_tree(label) for label in labels]  # E220 before anything changes
        self._reset_trees()
        flat: List[dict] = []
        seen: Dict[tuple, int] = {}
        self._tree_ids = [self._flatten(node, flat, seen) for node in nodes]
        self._trees.from_json(flat)
        for label, tree in zip(labels, self._tree_ids):
            if self._trees.tree_to_str(tree) != label:  # e.g. "(m 1 0 () ())" written "(m 01 0 ...)"
                raise ValueError(Errors.E220.format(label=label))
        for i, node in enumerate(nodes):
            self._index.setdefault(_tree_index_key(node), []).append(i)
        self._suffix_lengths = sorted({len(s) for kind, s in self._index if kind == "suffix"})
        self._prefix_lengths = sorted({len(s) for kind, s in self._index if kind == "prefix"})
        self._counts = Counter()  # the labels are chosen: a new initialize counts afresh
        super().set_labels(labels, vocab)

    def _flatten(self, node: Optional[tuple], flat: List[dict], seen: Dict[tuple, int]) -> int:
        """Add ``node`` and its subtrees to ``flat`` (``EditTrees.from_json``'s
        list, subtrees by position) once each; its position."""
        if node is None:
            return NULL_TREE
        if node[0] == "m":
            entry = {"prefix_len": node[1], "suffix_len": node[2],
                     "prefix_tree": self._flatten(node[3], flat, seen),
                     "suffix_tree": self._flatten(node[4], flat, seen)}
        else:
            entry = {"orig": self._tree_strings.add(node[1]),
                     "subst": self._tree_strings.add(node[2])}
        key = tuple(entry.items())
        if key not in seen:
            seen[key] = len(flat)
            flat.append(entry)
        return seen[key]

    def key_of(self, label: str, vocab: Vocab) -> int:
        return hash_string(label)

    def labels_for(self, label: str) -> List[str]:
        """The labels ``add_label(label)`` adds: ``label``, an edit tree string (E220)."""
        parse_edit_tree(label)
        return [label]

    def _pair_key(self, strings, orth: int, lemma: int) -> int:
        """The key of the tree of a (form, lemma) pair (0 for no lemma)."""
        if not lemma:
            return 0
        key = self._pair_keys.get((orth, lemma))
        if key is None:
            form, lem = strings[orth], strings[lemma]
            tree = self._gold_trees.tree_to_str(self._gold_trees.add(form, lem))
            key = hash_string(tree)
            self._tree_names.setdefault(key, (tree, form, lem))
            if len(self._pair_keys) < self.CACHE_SIZE:
                self._pair_keys[(orth, lemma)] = key
        return key

    def reference_keys(self, doc: Doc) -> np.ndarray:
        if not len(doc):
            return np.zeros(0, dtype=np.uint64)
        pairs = doc.to_array([ORTH, LEMMA]).astype(np.uint64).reshape(len(doc), 2)
        if not pairs[:, 1].any():  # no lemma at all: nothing to name
            return np.zeros(len(doc), dtype=np.uint64)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        keys = np.asarray([self._pair_key(doc.vocab.strings, orth, lemma)
                           for orth, lemma in unique.tolist()], dtype=np.uint64)
        return keys[inverse.reshape(-1)]

    def label_strings(self, doc: Doc) -> List[str]:
        keys = self.reference_keys(doc)
        keys = keys[keys != 0]
        unique, counts = np.unique(keys, return_counts=True)
        names = [self._tree_names[key][0] for key in unique.tolist()]
        # counted for order_labels, which leaves the rare trees out
        self._counts.update(dict(zip(names, counts.tolist())))
        return names

    def order_labels(self, labels: Iterable[str]) -> List[str]:
        """The trees sorted, less those the corpus read since the labels were
        last set has fewer than :attr:`MIN_TREE_FREQ` times (trees it has not
        had, given or added, stay), unless no tree is that frequent."""
        labels = set(labels)
        frequent = {label for label in labels
                    if self._counts.get(label, self.MIN_TREE_FREQ) >= self.MIN_TREE_FREQ}
        return sorted(frequent if frequent else labels)

    def string_of(self, doc: Doc, key: int) -> str:
        return self._tree_names[key][0]

    def _warn_unknown(self, reference: Doc, keys: np.ndarray, ids: np.ndarray) -> None:
        """W035, once per component, for gold lemmas whose tree is no label
        (rare trees, left out at initialize, come up in every batch: one
        warning says it, not one per tree)."""
        unknown = keys[(keys != 0) & (ids < 0)]
        if unknown.size and "unknown" not in self._warned:
            self._warned.add("unknown")
            tree, form, lemma = self._tree_names[int(unknown[0])]
            warn(Warnings.W035.format(n=int(unknown.size), form=form, lemma=lemma, tree=tree,
                                      min_freq=self.MIN_TREE_FREQ))

    def gold_ids(self, example: Example) -> np.ndarray:
        """Gold tree ids (see :meth:`Target.gold_ids`), -1 also where the tree
        does not apply to the predicted token's form (W036): the token could
        not take it."""
        gold = super().gold_ids(example)
        known = np.flatnonzero(gold >= 0)
        if not len(known):
            return gold
        allowed = self.allowed_labels([example.predicted])
        bad = known[~allowed[known, gold[known]]]
        if len(bad):
            if "inapplicable" not in self._warned:
                self._warned.add("inapplicable")
                warn(Warnings.W036.format(n=len(bad), form=example.predicted[int(bad[0])].text,
                                          tree=self._labels[int(gold[bad[0]])]))
            gold[bad] = -1
        return gold

    def candidates(self, form: str) -> Tuple[np.ndarray, List[str]]:
        """The label ids whose trees apply to ``form`` (sorted) and the lemma
        each gives it; worked out once per form."""
        found = self._candidates.get(form)
        if found is not None:
            return found
        index = self._index
        tried = list(index.get(("form", form), ()))
        tried.extend(index.get(("any", ""), ()))
        for n in self._suffix_lengths:
            if n <= len(form):
                tried.extend(index.get(("suffix", form[len(form) - n:]), ()))
        for n in self._prefix_lengths:
            if n <= len(form):
                tried.extend(index.get(("prefix", form[:n]), ()))
        ids, lemmas = [], []
        apply, tree_ids = self._trees.apply, self._tree_ids
        for i in sorted(set(tried)):
            lemma = apply(tree_ids[i], form)  # spaCy's own test: None where it does not apply
            if lemma is not None:
                ids.append(i)
                lemmas.append(lemma)
        found = (np.asarray(ids, dtype=np.int64), lemmas)
        if len(self._candidates) < self.CACHE_SIZE:
            self._candidates[form] = found
        return found

    def allowed_labels(self, docs: Sequence[Doc]) -> Optional[np.ndarray]:
        """(N, L) bool over the docs' tokens: the trees that apply to each
        token's form (a row of False where none does). Each distinct form of
        the batch is looked up once."""
        docs = [doc for doc in docs if len(doc)]
        n_labels = len(self._labels)
        if not docs:
            return np.zeros((0, n_labels), dtype=bool)
        orths = np.concatenate([doc.to_array(ORTH).astype(np.uint64).reshape(-1) for doc in docs])
        unique, inverse = np.unique(orths, return_inverse=True)
        strings = docs[0].vocab.strings
        rows = np.zeros((len(unique), n_labels), dtype=bool)
        for row, orth in enumerate(unique.tolist()):
            rows[row, self.candidates(strings[orth])[0]] = True
        return rows[inverse.reshape(-1)]

    def has_existing(self, doc: Doc) -> bool:
        return doc.has_annotation("LEMMA")

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        self.write_batch([doc], ids, np.asarray([len(doc)]), False)

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        """``Token.lemma_``: each token's tree applied to its form, the form
        itself where the tree does not apply (no tree applies to the form:
        ``backoff = "orth"``); with ``keep_existing``, a lemma already there stays."""
        live = [doc for doc in docs if len(doc)]
        if not live:
            return
        strings = live[0].vocab.strings
        orths = np.concatenate([doc.to_array(ORTH).astype(np.uint64).reshape(-1) for doc in live])
        pairs = np.stack([orths, np.asarray(label_ids, dtype=np.uint64)], axis=1)
        # each distinct (form, tree) of the batch once
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        keys = np.asarray([strings.add(self._lemma_of(strings[orth], label))
                           for orth, label in unique.tolist()], dtype=np.uint64)
        values = keys[inverse.reshape(-1)]
        end = 0
        for doc in live:
            n = len(doc)
            end += n
            mine = values[end - n:end]
            if keep_existing:
                there = doc.to_array(LEMMA).astype(np.uint64).reshape(-1)
                mine = np.where(there != 0, there, mine)
            doc.from_array([LEMMA], mine)

    def _lemma_of(self, form: str, label: int) -> str:
        """The lemma tree ``label`` gives ``form``; the form where it does not apply."""
        ids, lemmas = self.candidates(form)
        at = int(np.searchsorted(ids, label))
        return lemmas[at] if at < len(ids) and ids[at] == label else form

    def getter(self) -> Callable[[Token, str], object]:
        return lambda token, _: token.lemma_


class ExtensionTarget(Target):
    """Labels in a custom token extension ``token._.NAME``."""

    missing_key = np.uint64(0)

    def __init__(self, attr: str) -> None:
        super().__init__()
        self.attr = attr
        self.name = f"_.{attr}"
        self.score_attr = attr
        self.assigns = (f"token._.{attr}",)
        register_extension(attr)

    def key_of(self, label: str, vocab: Optional[Vocab] = None) -> int:
        return hash_string(label)

    def labels_of(self, doc: Doc) -> List[Optional[str]]:
        return extension_labels(doc, self.attr)

    def reference_keys(self, doc: Doc) -> np.ndarray:
        labels = self.labels_of(doc)
        if not labels:
            return np.zeros((len(doc),), dtype=np.uint64)
        arr = np.asarray(["" if s is None else s for s in labels], dtype=object)
        uniq, inverse = np.unique(arr, return_inverse=True)
        table = np.asarray([hash_string(s) if s else 0 for s in uniq], dtype=np.uint64)
        return table[inverse].reshape(-1)

    def string_of(self, doc: Doc, key: int) -> str:
        for label in self.labels_of(doc):
            if label is not None and self.key_of(label) == key:
                return label
        raise KeyError(key)

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        token_values.store_per_token(doc, LABELS, self.attr, self._label_array[ids].tolist())

    def getter(self) -> Callable[[Token, str], object]:
        attr = self.attr
        return lambda token, _: token._.get(attr)


#: the kind of value (:mod:`spacy_crf.token_values`) of ``_.NAME`` labels
LABELS = "labels"


def extension_labels(doc: Doc, attr: str) -> List[Optional[str]]:
    """The per-token labels of ``_.attr`` on ``doc`` (empty list if it has none)."""
    found = token_values.doc_values(doc, LABELS, attr)
    if found is not None:
        return found
    legacy = _legacy_labels(doc, attr)
    if legacy is not None:
        return legacy
    # values set through an extension registered the usual way (per token)
    found = [doc.user_data.get(("._.", attr, token.idx, None)) for token in doc]
    return found if any(v is not None for v in found) else []


def _legacy_labels(doc: Doc, attr: str) -> Optional[List[Optional[str]]]:
    """The plain per-doc list of labels that corpora written before labels
    followed their tokens hold; read by position, so only where it has one
    label per token."""
    stored = doc.user_data.get(("spacy_crf", attr))
    return list(stored) if stored is not None and len(stored) == len(doc) else None


def _get_label(attr: str, token: Token) -> Optional[str]:
    doc = token.doc
    if token_values.owned(doc, LABELS, attr) is not None:
        return token_values.token_value(token, LABELS, attr)
    legacy = _legacy_labels(doc, attr)
    if legacy is not None:
        return legacy[token.i]
    return doc.user_data.get(("._.", attr, token.idx, None))


def _set_label(attr: str, token: Token, value: Optional[str]) -> None:
    doc = token.doc
    stored = extension_labels(doc, attr) or [None] * len(doc)
    stored[token.i] = value
    token_values.store_per_token(doc, LABELS, attr, stored)


def register_extension(attr: str) -> None:
    """Register ``token._.attr`` backed by the doc-level label list (idempotent).

    The getter and setter are partials of module-level functions, so the
    extension pickles (spaCy sends extensions to spawned worker processes).
    """
    existing = Token.get_extension(attr)
    if existing is not None and isinstance(existing[2], partial) and existing[2].func is _get_label:
        return
    Token.set_extension(attr, getter=partial(_get_label, attr), setter=partial(_set_label, attr),
                        force=True)


class SpanTarget(Target):
    """Spans as one tag per token in a scheme (BIO or BILUO): base of ``ents``
    and ``spans:KEY``. A label key packs the tag's prefix and type:
    ``(type_key << 3) + prefix + 1``, so 0 stays "unannotated"."""

    is_span_target = True

    def __init__(self, scheme: str) -> None:
        super().__init__()
        self.scheme = schemes.check_scheme(scheme)

    def key_of(self, label: str, vocab: Vocab) -> int:
        prefix, kind, types = schemes.parse_tags([label])
        if types:  # a label set with "B-!PER" would learn "not PER" as a type
            refuse_negative_type(types[0], self.name)
        type_key = vocab.strings.add(types[0]) if types else 0
        return int((np.uint64(type_key) << np.uint64(3)) + np.uint64(prefix[0] + 1))

    def spans_of(self, doc: Doc) -> Optional[List[Span]]:
        """The doc's gold spans (None where the doc is unannotated)."""
        raise NotImplementedError

    def reference_keys(self, doc: Doc) -> np.ndarray:
        spans = self.spans_of(doc)
        if spans is None:
            return np.zeros(len(doc), dtype=np.uint64)
        return self._keys_of_spans(len(doc), spans)

    def _keys_of_spans(self, n_tokens: int, spans: Sequence[Span]) -> np.ndarray:
        """(n_tokens,) packed tag keys of non-overlapping spans, ``O`` elsewhere."""
        starts = np.asarray([sp.start for sp in spans], dtype=np.int64)
        ends = np.asarray([sp.end for sp in spans], dtype=np.int64)
        codes = schemes.spans_to_codes(n_tokens, starts, ends, self.scheme)
        types = np.zeros(n_tokens, dtype=np.uint64)
        for sp in spans:
            types[sp.start:sp.end] = sp.label
        return (types << np.uint64(3)) + (codes + 1).astype(np.uint64)

    def string_of(self, doc: Doc, key: int) -> str:
        """The tag a packed key of ``doc``'s gold stands for (``B-PER``, ``O``)."""
        code = (key & 7) - 1
        return "O" if code == schemes.OUT else f"{schemes.NAMES[code]}-{self._type_of(doc, key)}"

    def unknown_label(self, doc: Doc, key: int) -> str:
        # the span type, as the corpus and spaCy's ner name it (W001 once per type)
        return self._type_of(doc, key) if key >> 3 else self.string_of(doc, key)

    def _type_of(self, doc: Doc, key: int) -> str:
        """The span type of a packed key of ``doc``'s gold, read from its spans:
        the key keeps the low 61 bits of the type's hash only, which the
        StringStore cannot look up."""
        for span in self.spans_of(doc) or []:
            if span.label & TYPE_BITS == key >> 3:
                return span.label_
        raise KeyError(key)

    def labels_for(self, label: str) -> List[str]:
        """The labels ``add_label(label)`` adds: a tag (``B-LOC``) itself, a
        span type (``LOC``) every tag of the type in the scheme."""
        try:
            _, _, types = schemes.parse_tags([label])
            tags = [label]
        except ValueError:  # not a tag: a type
            types, tags = [label], schemes.tag_set([label], self.scheme)[1:]
        for span_type in types:
            refuse_negative_type(span_type, self.name)
        return tags

    def public_labels(self, tags: Sequence[str]) -> Tuple[str, ...]:
        """The span types of ``tags``, sorted (as spaCy's ``ner.labels``; no ``O``)."""
        return tuple(sorted(set(schemes.parse_tags(tags)[2])))

    def label_data(self, tags: Sequence[str]) -> List[str]:
        """The span types of ``tags``, sorted; a type with only some of the
        scheme's tags (``add_label("B-MISC")``) as those tags, so that
        ``initialize(labels=...)`` reads back the same columns."""
        prefix, kind, types = schemes.parse_tags(tags)
        scheme_prefixes = set(schemes.SCHEMES[self.scheme])
        data = []
        for i, span_type in sorted(enumerate(types), key=lambda item: item[1]):
            own = np.flatnonzero(kind == i)
            if {int(p) for p in prefix[own]} == scheme_prefixes:
                data.append(span_type)
            else:
                data.extend(tags[j] for j in own)
        return data

    def kind_of(self, label: str) -> str:
        """The span type of a tag (``""`` for ``O``)."""
        return label.split("-", 1)[1] if "-" in label else ""

    def order_labels(self, labels: Iterable[str]) -> List[str]:
        """``O`` first (added if missing: a span target always has "outside"), then
        the tags sorted. An untrained model's scores all tie, and ties decode as
        the first label: O, no span (as spaCy's untrained ner predicts none)."""
        return ["O"] + sorted(set(labels) - {"O"})

    def gold_ids(self, example: Example) -> np.ndarray:
        """Gold tag ids of ``example.predicted``, -1 where unknown.

        Where tokenisations differ, the gold spans are projected onto the
        predicted tokens and tagged there, as ``Example.get_aligned_ner`` does:
        a reference token split in two gives ``B-X L-X``, two reference tokens
        merged into one ``U-X``. Outside the projected spans a token is ``O``
        where it aligns to exactly one reference token that is ``O`` (or is
        whitespace), and unannotated elsewhere.
        """
        predicted, reference = example.predicted, example.reference
        if same_tokens(predicted, reference):
            return self._token_gold_ids(example, True)
        keys = self.reference_keys(reference)
        self._warn_unknown(reference, keys, self.ids_of_keys(keys))
        spans = self.spans_of(reference)
        if spans is None:
            return np.full(len(predicted), -1, dtype=np.int64)
        projected = example.get_aligned_spans_y2x(spans, allow_overlap=False)
        gold = self.ids_of_keys(self._keys_of_spans(len(predicted), projected))
        covered = np.zeros(len(predicted) + 1, dtype=np.int64)
        np.add.at(covered, [sp.start for sp in projected], 1)
        np.add.at(covered, [sp.end for sp in projected], -1)
        in_span = np.cumsum(covered)[:-1] > 0
        x2y = example.alignment.x2y
        lengths = np.asarray(x2y.lengths, dtype=np.int64)
        data = np.asarray(x2y.data, dtype=np.int64)
        single = lengths == 1
        outside = np.zeros(len(predicted), dtype=bool)
        reference_out = keys == np.uint64(schemes.OUT + 1)  # the packed key of "O"
        outside[single] = reference_out[data[(np.cumsum(lengths) - lengths)[single]]]
        outside |= predicted.to_array(IS_SPACE).astype(bool).reshape(-1)
        gold[~in_span & ~outside] = -1
        return gold

    def label_strings(self, doc: Doc) -> List[str]:
        # no span type, no label: a corpus without spans gets E008, not an O-only CRF
        types = {sp.label_ for sp in self.spans_of(doc) or []}
        return schemes.tag_set(types, self.scheme) if types else []

    def constraints(self):
        return schemes.allowed_moves(self._labels, self.scheme)

    def continuations(self) -> np.ndarray:
        """(L, L) bool: tag ``j`` after a span ending in tag ``i`` would continue it."""
        return schemes.continuations(self._labels, self.scheme)

    def batch_spans(self, docs: Sequence[Doc], label_ids: np.ndarray,
                    doc_lengths: np.ndarray) -> List[List[Span]]:
        """The spans a batch's decoded tags spell, per doc.

        The tags of the whole batch are read at once: per doc, numpy's cost per
        call outweighed the work (UNER test, 12 tokens a doc). Each doc's tags
        are well-formed (decoding obeys the scheme), so no span crosses a doc.
        """
        prefix, kind, types = self._parsed
        doc_ends = np.cumsum(doc_lengths)
        doc_starts = doc_ends - doc_lengths
        starts, ends = schemes.codes_to_spans(prefix[label_ids], self.scheme, doc_ends)
        first = np.searchsorted(starts, doc_starts).tolist()
        last = np.searchsorted(starts, doc_ends).tolist()
        labels = [types[k] for k in kind[label_ids[starts]].tolist()]
        starts, ends = starts.tolist(), ends.tolist()
        return [[Span(doc, starts[i] - offset, ends[i] - offset, label=labels[i])
                 for i in range(a, b)]
                for doc, offset, a, b in zip(docs, doc_starts.tolist(), first, last)]

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        for doc, spans in zip(docs, self.batch_spans(docs, label_ids, doc_lengths)):
            if len(doc):
                self.write_spans(doc, spans, keep_existing)

    def write_spans(self, doc: Doc, predicted: List[Span], keep_existing: bool) -> None:
        """Write a doc's predicted spans; with ``keep_existing``, the existing
        spans go back as they were (forced decoding kept their tokens, as O
        where the CRF does not know their type)."""
        self.write(doc, predicted, keep=(self.spans_of(doc) or []) if keep_existing else ())

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        super().set_labels(labels, vocab)
        self._parsed = schemes.parse_tags(self._labels)

    def forced(self, doc: Doc) -> np.ndarray:
        """Label ids fixed by spans already on a predicted doc (-1 elsewhere).

        Spans of a type the CRF does not know fix their tokens to ``O``:
        ``write_spans`` puts every existing span back as it was.
        """
        spans = self.spans_of(doc)
        fixed = np.full(len(doc), -1, dtype=np.int64)
        if not spans:
            return fixed
        ids = self.ids_of_keys(self.reference_keys(doc))
        inside = np.zeros(len(doc), dtype=bool)
        for sp in spans:
            inside[sp.start:sp.end] = True
        fixed[inside] = ids[inside]
        fixed[inside & (ids < 0)] = self.out_id
        return fixed

    @property
    def out_id(self) -> int:
        """The id of ``O``."""
        return self._labels.index("O")

    @staticmethod
    def _merged(doc: Doc, predicted: List[Span], keep: Sequence[Span]) -> List[Span]:
        """The predicted spans, less those overlapping a kept one, and the kept
        spans themselves (their kb_id and id with them), sorted by start."""
        if keep:
            taken = np.zeros(len(doc) + 1, dtype=np.int64)
            np.add.at(taken, [sp.start for sp in keep], 1)
            np.add.at(taken, [sp.end for sp in keep], -1)
            taken = np.cumsum(taken)[:-1] > 0
            predicted = [sp for sp in predicted if not taken[sp.start:sp.end].any()]
        return sorted(predicted + list(keep), key=lambda sp: sp.start)

    def constrain(self, scores: CRFScores) -> CRFScores:
        """Add the scheme's -inf scores for forbidden moves."""
        allowed_t, allowed_start, allowed_end = self.constraints()
        penalty = lambda ok, x: np.where(ok, x, -np.inf).astype(x.dtype)  # noqa: E731
        return scores.replace(transitions=penalty(allowed_t, scores.transitions),
                              start=penalty(allowed_start, scores.start),
                              end=penalty(allowed_end, scores.end),
                              # a pool's experts are trained as CRFs of their own: each obeys
                              # the scheme
                              experts=(None if scores.experts is None else
                                       tuple(self.constrain(expert) for expert in scores.experts)))

    def repair_gold(self, scores: CRFScores, gold: np.ndarray,
                    layout: BatchLayout) -> Tuple[np.ndarray, int]:
        """Unannotate gold tags that break the scheme, so the constrained
        likelihood stays finite; ``scores`` must be constrained.

        First every known tag that no well-formed neighbour allows (a forbidden
        move between known tags, a forbidden first or last tag); then, in a
        sequence whose remaining tags still admit no well-formed labelling
        (e.g. ``B-PER ? L-LOC``), the known tags next to unknown ones, and if
        that is not enough the whole sequence.
        """
        allowed_t, allowed_start, allowed_end = self.constraints()
        lengths = layout.lengths
        first, last = sequence_ends(lengths)
        known = gold >= 0
        safe = np.maximum(gold, 0)
        bad = np.zeros(gold.shape[0], dtype=bool)
        bad[first] |= known[first] & ~allowed_start[safe[first]]
        bad[last] |= known[last] & ~allowed_end[safe[last]]
        pairs = known[:-1] & known[1:]
        pairs[last[last < gold.shape[0] - 1]] = False  # no move across sequences
        moves = pairs & ~allowed_t[safe[:-1], safe[1:]]
        bad[:-1] |= moves
        bad[1:] |= moves
        gold = np.where(bad, -1, gold)
        # with every tag known and every move allowed a labelling exists, so the
        # (costly) feasibility pass is only needed where tokens are unannotated
        for attempt in range(2 if (gold < 0).any() else 0):
            _, best = inference.viterbi(scores, layout, gold)
            stuck = np.flatnonzero(best == -np.inf)
            if not len(stuck):
                break
            seq_of = np.repeat(np.arange(lengths.shape[0]), lengths)
            in_stuck = np.isin(seq_of, stuck)
            if attempt == 0:
                unknown = gold < 0
                near_gap = np.zeros_like(unknown)
                near_gap[:-1] |= unknown[1:]
                near_gap[1:] |= unknown[:-1]
                drop = in_stuck & near_gap & (gold >= 0)
            else:
                drop = in_stuck & (gold >= 0)
            bad |= drop
            gold = np.where(drop, -1, gold)
        return gold, int(bad.sum())

    def fixed_labels(self, docs: Sequence[Doc], scores: CRFScores
                     ) -> Tuple[np.ndarray, CRFScores]:
        """The tokens of existing spans; in BIO the token after a span may then
        not continue it: its I- tag is masked out of a copy of ``scores``."""
        fixed = np.concatenate([self.forced(doc) for doc in docs])
        after = np.flatnonzero((fixed[:-1] >= 0) & (fixed[1:] < 0))
        continues = self.continuations()
        blocked = [(t + 1, label) for t in after for label in np.flatnonzero(continues[fixed[t]])]
        if not blocked:
            return fixed, scores
        emissions = np.array(scores.emissions, copy=True)
        rows, labels = zip(*blocked)
        emissions[list(rows), list(labels)] = -np.inf
        return fixed, scores.replace(emissions=emissions)

    def span_confidence(self, scores: CRFScores, layout: BatchLayout, label_ids: np.ndarray,
                        fixed: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        return span_probabilities(scores, layout, label_ids, self._parsed[0], self.scheme,
                                  self.continuations(), fixed)


class EntTarget(SpanTarget):
    """``doc.ents``: read from the reference, written with ``doc.set_ents``."""

    name = score_attr = "ents"
    assigns = ("doc.ents", "token.ent_iob", "token.ent_type")

    def spans_of(self, doc: Doc) -> Optional[List[Span]]:
        if len(doc) and not doc.has_annotation("ENT_IOB"):
            return None
        return list(doc.ents)

    def has_existing(self, doc: Doc) -> bool:
        # a fresh doc (the usual one) has no ENT_IOB at all
        return doc.has_annotation("ENT_IOB")

    def reference_keys(self, doc: Doc) -> np.ndarray:
        keys = super().reference_keys(doc)
        if len(doc):
            keys[doc.to_array(ENT_IOB).reshape(-1) == 0] = 0  # missing, not O
        return keys

    def write(self, doc: Doc, predicted: List[Span], keep: Sequence[Span] = (),
              blocked: Sequence[Span] = ()) -> None:
        doc.set_ents(self._merged(doc, predicted, keep), blocked=list(blocked),
                     default="outside")

    def blocked(self, doc: Doc) -> np.ndarray:
        """(len(doc),) bool: tokens blocked from any entity (``doc.set_ents(...,
        blocked=...)``: ``ent_iob_`` "B" with no type), which spaCy's ner keeps out."""
        if not len(doc):
            return np.zeros(0, dtype=bool)
        arr = doc.to_array([ENT_IOB, ENT_TYPE]).reshape(len(doc), 2)
        return (arr[:, 0] == 3) & (arr[:, 1] == 0)

    def forced(self, doc: Doc) -> np.ndarray:
        if not self.has_existing(doc):
            # a fresh doc (the usual one) has nothing to keep: no reading of its arrays
            return np.full(len(doc), -1, dtype=np.int64)
        # blocked tokens are fixed to O (a token set to "O" stays free, as in spaCy's ner)
        fixed = super().forced(doc)
        fixed[self.blocked(doc)] = self.out_id
        return fixed

    def write_spans(self, doc: Doc, predicted: List[Span], keep_existing: bool) -> None:
        if not keep_existing or not self.has_existing(doc):
            self.write(doc, predicted)
            return
        blocked = np.concatenate([[False], self.blocked(doc), [False]])
        edges = np.flatnonzero(np.diff(blocked.astype(np.int8)))
        runs = [Span(doc, int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]
        self.write(doc, predicted, keep=self.spans_of(doc) or [], blocked=runs)

    def getter(self) -> Callable[[Token, str], object]:
        return lambda token, _: f"{token.ent_iob_}-{token.ent_type_}" if token.ent_type_ else token.ent_iob_


class SpanGroupTarget(SpanTarget):
    """``doc.spans[KEY]``; overlapping gold spans are resolved (W002)."""

    def __init__(self, key: str, scheme: str) -> None:
        super().__init__(scheme)
        self.key = key
        self.name = f"spans:{key}"
        self.score_attr = f"spans_{key}"
        self.assigns = ("doc.spans",)

    def spans_of(self, doc: Doc) -> Optional[List[Span]]:
        if self.key not in doc.spans:
            return None
        spans = list(doc.spans[self.key])
        kept = filter_spans(spans)
        if len(kept) < len(spans) and not self._warned_overlap:
            self._warned_overlap = True
            warnings.warn(Warnings.W002.format(key=self.key, n=len(spans) - len(kept)))
        return sorted(kept, key=lambda sp: sp.start)

    _warned_overlap = False

    def write(self, doc: Doc, predicted: List[Span], keep: Sequence[Span] = ()) -> None:
        doc.spans[self.key] = self._merged(doc, predicted, keep)


def make_target(target: str, scheme: str = "BILUO") -> Target:
    """Build the target named in the config (``tag``, ``pos``, ``dep``, ``morph``,
    ``lemma``, ``sent_starts``, ``ents``, ``spans:KEY`` or ``_.NAME``)."""
    if target == "tag":
        return TagTarget()
    if target == "pos":
        return PosTarget()
    if target == "dep":
        return DepTarget()
    if target == "morph":
        return MorphTarget()
    if target == SentStartsTarget.name:
        return SentStartsTarget()
    if target == "lemma":
        return LemmaTarget()
    if target == "ents":
        return EntTarget(scheme)
    if isinstance(target, str) and target.startswith("spans:") and len(target) > 6:
        return SpanGroupTarget(target[6:], scheme)
    m = _EXTENSION.match(target) if isinstance(target, str) else None
    if m:
        return ExtensionTarget(m.group(1))
    raise ValueError(Errors.E006.format(target=target))


def set_doc_labels(doc: Doc, attr: str, labels: Iterable[Optional[str]]) -> None:
    """Store gold labels of an ``_.attr`` target on a doc (for converters and tests)."""
    labels = list(labels)
    if len(labels) != len(doc):
        raise ValueError(f"Got {len(labels)} labels for a doc of {len(doc)} tokens.")
    register_extension(attr)
    token_values.store_per_token(doc, LABELS, attr, labels)
