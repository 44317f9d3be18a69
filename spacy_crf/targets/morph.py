"""``morph``: morphology with the POS joined in, ``Token.morph`` and
``Token.pos`` together, one label per token as spaCy's morphologizer makes
them (``"Number=Sing|POS=NOUN"``), scored as it scores them."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import MORPH, POS
from spacy.morphology import Morphology
from spacy.parts_of_speech import IDS as POS_IDS
from spacy.parts_of_speech import NAMES as POS_NAMES
from spacy.scorer import Scorer
from spacy.symbols import IDS as SYMBOL_IDS
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors
from ..models.potentials import CRFScores, allow_only
from .base import Target
from .registry import register_target
from .scores import MAIN_SCORE, token_accuracy
from .token_attrs import TAGGING_DEFAULTS

#: the key of empty FEATS, ``"_"`` (a spaCy symbol: the same in every vocab)
EMPTY_MORPH_KEY = SYMBOL_IDS[Morphology.EMPTY_MORPH]


def feats_of(label: str) -> Dict[str, str]:
    """The fields of a morph label (``Morphology.feats_to_dict``); E201 for a
    string that is not FEATS (spaCy's own message there is an unpacking error)."""
    try:
        return Morphology.feats_to_dict(label)
    except (ValueError, TypeError, AttributeError):
        raise ValueError(Errors.E201.format(label=label)) from None


def check_feats(label: str) -> None:
    """E201 where ``label`` is not FEATS as a label must be written: each
    field ``Field=Value`` with both parts, no field twice (spaCy's reader
    keeps the last value of a field given twice, and an empty field or
    value, which no gold could ever have); ``"_"`` for neither."""
    feats_of(label)
    if label in ("", Morphology.EMPTY_MORPH):
        return
    fields = [part.partition("=") for part in label.split(Morphology.FEATURE_SEP)]
    names = [field for field, _, _ in fields]
    if (not all(field and sep and value for field, sep, value in fields)
            or len(set(names)) < len(names)):
        raise ValueError(Errors.E201.format(label=label))


@register_target
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
    optional_templates = TAGGING_DEFAULTS
    #: the word itself, and the lemmas spaCy's rules give it as a noun, a verb
    #: and an adjective (where spacy-lookups-data has the tables), score each
    #: label as a whole, beside the parts' scores of every feature
    #: (``models/whole_label.py``): UD English EWT UFeats dev 95.57 -> 95.75
    whole_label_templates = ("NORM", "RULE_LEMMA_ADJ|RULE_LEMMA_NOUN|RULE_LEMMA_VERB")
    #: the field the POS takes in a label (spaCy's ``Morphologizer.POS_FEAT``)
    POS_FEAT = "POS"
    #: an odd multiplier: ``morph * MIX`` is one-to-one modulo 2**64, so a
    #: token with a morph hash never gets the missing key 0 from it
    MIX = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self) -> None:
        super().__init__()
        self._label_morph = np.zeros((0,), dtype=np.uint64)
        self._label_pos = np.zeros((0,), dtype=np.uint64)
        self._label_feats: List[str] = []  # each label's FEATS without the POS, as a string
        self._no_pos_field: set = set()  # morph hashes known to hold no POS field

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
        return Morphology.dict_to_feats(feats_of(label)) or Morphology.EMPTY_MORPH

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
        feats = feats_of(label)
        group = self.label_group(label)
        return ([group] if group else []) + [f"{field}{Morphology.FIELD_SEP}{value}"
                                             for field, value in sorted(feats.items())
                                             if field != self.POS_FEAT]

    def label_group(self, label: str) -> str:
        """The POS part of a label (``"POS=NOUN"``), ``""`` for a label without one."""
        pos = feats_of(label).get(self.POS_FEAT)
        return f"{self.POS_FEAT}{Morphology.FIELD_SEP}{pos}" if pos else ""

    def _split(self, label: str, vocab: Vocab) -> Tuple[int, int]:
        """The morph hash of a label's FEATS without the POS (added to
        ``vocab.morphology``, so ``Doc.from_array`` can write it) and its POS id."""
        feats = feats_of(label)
        pos = feats.pop(self.POS_FEAT, "")
        if pos and pos not in POS_IDS:
            raise ValueError(Errors.E200.format(label=label, pos=pos))
        return int(vocab.morphology.add(feats)), (POS_IDS[pos] if pos else 0)

    def key_of(self, label: str, vocab: Vocab) -> int:
        morph, pos = self._split(label, vocab)
        return int(self.mix(np.asarray([morph]), np.asarray([pos]))[0])

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        for label in labels:  # E201 before anything changes
            check_feats(label)
        super().set_labels(labels, vocab)
        parts = [self._split(label, vocab) for label in self._labels]
        self._label_morph = np.asarray([m for m, _ in parts], dtype=np.uint64).reshape(-1)
        self._label_pos = np.asarray([p for _, p in parts], dtype=np.uint64).reshape(-1)
        self._label_feats = [vocab.strings[m] for m, _ in parts]

    def labels_for(self, label: str) -> List[str]:
        """The labels ``add_label(label)`` adds: ``label`` in normal form."""
        check_feats(label)
        return [self.normalize(label)]

    def _arrays(self, doc: Doc) -> np.ndarray:
        """(n, 2) morph hash and POS id of every token; a POS written into the
        FEATS (``"Definite=Def|POS=DET"``, as ``Example.from_dict``'s
        ``morphs`` may give the labels) moved to the POS column, where the
        token has no POS of its own (as :meth:`label_of` reads it)."""
        arr = doc.to_array([MORPH, POS]).astype(np.uint64).reshape(len(doc), 2)
        if not len(doc):
            return arr
        morphs, inverse = np.unique(arr[:, 0], return_inverse=True)
        folded = [self._pos_in_feats(doc.vocab, morph) for morph in morphs.tolist()]
        if all(fold is None for fold in folded):
            return arr
        new_morph = np.asarray([m if f is None else f[0] for m, f in zip(morphs.tolist(), folded)],
                               dtype=np.uint64)[inverse.reshape(-1)]
        new_pos = np.asarray([0 if f is None else f[1] for f in folded],
                             dtype=np.uint64)[inverse.reshape(-1)]
        arr[:, 1] = np.where(arr[:, 1] == 0, new_pos, arr[:, 1])
        arr[:, 0] = new_morph
        return arr

    def _pos_in_feats(self, vocab: Vocab, morph: int) -> Optional[Tuple[int, int]]:
        """``(morph hash of the FEATS without the POS field, its POS id)`` for a
        morph that holds a POS field, None for one that does not (kept)."""
        if morph in self._no_pos_field:
            return None
        text = vocab.strings[morph] if morph else ""
        if f"{self.POS_FEAT}{Morphology.FIELD_SEP}" not in text:
            if len(self._no_pos_field) < 100_000:
                self._no_pos_field.add(morph)
            return None
        return self._split(text, vocab)

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

    def has_existing(self, doc: Doc) -> bool:
        # a fresh doc (the usual one) has neither: no reading of its arrays
        return doc.has_annotation("MORPH") or doc.has_annotation("POS")

    def _preset(self, docs: Sequence[Doc]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (non-empty) docs' own morph hashes and POS ids (POS fields of the
        FEATS moved, :meth:`_arrays`), and which tokens have both set."""
        arr = np.concatenate([self._arrays(doc) for doc in docs])
        return arr[:, 0], arr[:, 1], (arr[:, 0] != 0) & (arr[:, 1] != 0)

    def fixed_labels(self, docs: Sequence[Doc], scores: CRFScores
                     ) -> Tuple[np.ndarray, CRFScores]:
        """A token with FEATS and a POS already is fixed to that label. A token
        with one of them (a POS from a tagger or rule, no FEATS) is free, but
        only among the labels that have it, so its FEATS are decoded for that
        POS; a value no label has constrains nothing (as spaCy's morphologizer
        with ``overwrite = false``, :meth:`write_batch` keeps it)."""
        morph, pos, both = self._preset(docs)
        fixed = np.where(both, self.ids_of_keys(self.mix(morph, pos)), -1)
        partial = np.flatnonzero((morph != 0) ^ (pos != 0))
        if not len(partial):
            return fixed, scores
        has_pos = (pos[partial] != 0)[:, None]
        allowed = np.where(has_pos, self._label_pos[None, :] == pos[partial, None],
                           self._label_morph[None, :] == morph[partial, None])
        allowed |= ~allowed.any(axis=1, keepdims=True)
        return fixed, allow_only(scores, allowed, rows=partial)

    def kept_values(self, docs: Sequence[Doc], fixed: np.ndarray, name: str) -> np.ndarray:
        """Tokens whose FEATS and POS are both given (confidence 1.0); one of
        the two is kept too (:meth:`write_batch`), but the other is predicted."""
        morph, pos, both = self._preset(docs)
        # a POS or FEATS alone that no label has constrains nothing (fixed_labels)
        unknown_part = np.where(pos != 0, ~np.isin(pos, self._label_pos),
                                (morph != 0) & ~np.isin(morph, self._label_morph))
        self.warn_unconditioned(docs, self.mix(morph, pos),
                                (both & (fixed < 0)) | (~both & unknown_part), name)
        return both

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        self.write_batch([doc], ids, np.asarray([len(doc)]), False)

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        """``Token.morph`` and ``Token.pos``; with ``keep_existing`` each of
        the two that a token has already stays (as spaCy's morphologizer with
        ``overwrite = false``), also where it is no label (W044)."""
        # one gather for the batch, then a slice per doc (as TokenAttrTarget)
        values = np.stack([self._label_morph[label_ids], self._label_pos[label_ids]], axis=1)
        for vocab in {id(doc.vocab): doc.vocab for doc in docs}.values():
            self._add_feats(vocab)
        end = 0
        for doc, n in zip(docs, doc_lengths.tolist()):
            end += n
            if n:
                mine = values[end - n:end]
                if keep_existing:
                    there = doc.to_array([MORPH, POS]).astype(np.uint64).reshape(n, 2)
                    mine = np.where(there != 0, there, mine)
                doc.from_array([MORPH, POS], mine)

    def _add_feats(self, vocab: Vocab) -> None:
        """The labels' FEATS in ``vocab``'s strings, which ``Doc.from_array``
        reads a morph from: a doc made on a vocab of its own (``Doc(Vocab(),
        ...)``) lacks those of the vocab the labels were set in."""
        strings = vocab.strings
        for key, feats in zip(self._label_morph.tolist(), self._label_feats):
            if key not in strings:
                strings.add(feats)

    def getter(self) -> Callable[[Token, str], object]:
        """``pos`` and ``morph`` as spaCy's morphologizer scores them (POS id,
        morph hash; 0 is missing), a POS field of the FEATS read as the POS
        (as the component learns and writes it, :meth:`_arrays`), else the
        label (``None`` where missing)."""
        def get(token: Token, attr: str) -> object:
            morph, pos = token.morph.key, token.pos
            if attr not in ("pos", "morph"):
                return self.label_of(token.vocab, morph, pos)
            folded = self._pos_in_feats(token.vocab, morph) if morph else None
            if folded is not None:
                morph, pos = folded[0], pos or folded[1]
            return pos if attr == "pos" else morph
        return get

    def _column(self, column: int) -> Callable[[Doc], np.ndarray]:
        """``keys_of`` for :func:`token_accuracy`: the morph hashes (0) or POS
        ids (1) of :meth:`_arrays`, as :meth:`getter` reads them."""
        return lambda doc: self._arrays(doc)[:, column]

    def score_weights(self) -> Dict[str, Optional[float]]:
        # spaCy's morphologizer weighs pos_acc and morph_acc 0.5 each; here
        # morph_acc alone picks model-best, as every component has one main
        # score (crf_score repeats it), and pos_acc is shown beside it;
        # morph_per_feat is reported but not in the table, as spaCy has it
        return {**super().score_weights(), "pos_acc": 0.0, "morph_per_feat": None}

    def score(self, examples: List[Example], **kwargs: Any) -> Dict[str, Any]:
        """spaCy's morphologizer scores (``pos_acc``, ``morph_acc``, ``morph_per_feat``
        and ``morph_micro_p/r/f``), ``crf_acc`` the accuracy of the joined labels."""
        results: Dict[str, Any] = {}
        results.update(token_accuracy(examples, self, "pos", keys_of=self._column(1), **kwargs))
        results.update(token_accuracy(examples, self, "morph", keys_of=self._column(0),
                                      **kwargs))
        # spaCy reads a predicted morph's string from the gold doc's vocab: a
        # reference corpus read into a vocab of its own may lack a morph the
        # model predicts (one seen in training only), so give it the predicted ones
        for vocab in {id(ex.reference.vocab): ex.reference.vocab for ex in examples}.values():
            for ex in examples:
                if ex.predicted.vocab is not vocab:
                    for key in np.unique(ex.predicted.to_array(MORPH)):
                        if key and key not in vocab.strings:
                            vocab.strings.add(ex.predicted.vocab.strings[key])
        results.update(Scorer.score_token_attr_per_feat(examples, "morph", getter=self.getter(),
                                                        **kwargs))
        results["crf_acc"] = token_accuracy(examples, self, "label", **kwargs)["label_acc"]
        results[MAIN_SCORE] = results["morph_acc"]
        return results
