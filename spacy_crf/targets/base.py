"""The base of every target: a mapping between Docs and label ids.

A target reads a component's gold labels from reference docs, writes its
predictions, and says what follows from them elsewhere: what it assigns
(spaCy's pipe meta), how its predictions are scored and which of those scores
weigh. Each kind of target lives in a module of its own in this package and
registers itself (:mod:`.registry`); :func:`~spacy_crf.targets.make_target`
builds the one a config names.
"""

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors, Warnings, warn
from ..models.potentials import CRFScores
from ..structures import BatchLayout
from ..util import same_tokens
from .scores import MAIN_SCORE, token_accuracy

#: spaCy's prefix of a negative annotation: "!N" = "not N" (the tagger's neg_prefix,
#: the deprecated "!PERSON" entities)
NEGATIVE_PREFIX = "!"


def is_negative(label: str) -> bool:
    """Whether ``label`` is a negative annotation, ``"!N"`` ("not N")."""
    return label.startswith(NEGATIVE_PREFIX) and len(label) > len(NEGATIVE_PREFIX)


def check_label(label: Any) -> None:
    """E062 for a label that is not a string, E263 for the empty string: the
    label of an unannotated token (``add_label``, ``initialize(labels=...)``)."""
    if not isinstance(label, str):
        raise ValueError(Errors.E062.format(label=label))
    if not label:
        raise ValueError(Errors.E263)


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
    doc, ``missing_key`` where it has none) and ``write``, and register
    themselves (:func:`~spacy_crf.targets.registry.register_target`) under
    their :attr:`name`.

    What the rest of the package would otherwise ask of a target's name is
    asked of the target: what it assigns (:attr:`assigns`), whether a
    component keeps its existing labels by default (:attr:`keeps_existing`),
    the model it refuses (:meth:`check_model`) and its scores
    (:meth:`main_score_key`, :meth:`score_weights`, :meth:`score`).
    """

    #: the config string it answers to (:meth:`from_name`); a target whose
    #: name is a pattern is registered under the pattern as the docs write it
    #: (``"spans:KEY"``) and each instance names itself (``"spans:sc"``)
    name: str = ""
    #: what the list of targets (E006) says beside the name, if anything
    name_hint: str = ""
    #: the prefix of its score keys (``tag`` gives ``tag_acc``)
    score_attr: str = ""
    missing_key = 0
    is_span_target = False
    #: its labels come by the hundred (morphology): a chain whose order the
    #: config leaves null prunes each token's labels (``spacy-crf.PrunedChain.v1``)
    many_labels = False
    #: templates whose features get a weight per whole label beside a table
    #: factored over the labels' parts (``models/whole_label.py``); none here
    whole_label_templates: Tuple[str, ...] = ()
    #: templates its component adds to the model's optional ones
    #: (``cluster_templates``), each read where the pipeline has the tables it
    #: reads and left out where it has not (with W041 if
    #: :attr:`warns_without_optional_sources`); one that reads no table (the
    #: sentence target's boundary shapes) is read in every pipeline
    optional_templates: Tuple[str, ...] = ()
    #: whether a pipeline without the tables its optional templates read is
    #: told so (W041): the lemma target's are most of what it knows of an
    #: unseen word; a tagger's (``TAGGING_TEMPLATES``) are a bonus that many
    #: languages have no tables for
    warns_without_optional_sources = False
    #: where its gold lives on a doc where that is not the token arrays
    #: (``doc.user_data``, ``doc.spans``), which spaCy's corpus reader leaves
    #: out of the docs it cuts or re-tokenizes (W054); None: the arrays
    gold_kept_in: Optional[str] = None
    #: its sequences are whole docs whatever the ``sequence`` setting (E212):
    #: it predicts the sentence boundaries that would cut them
    whole_docs = False
    #: what ``write`` sets, as spaCy's pipe meta names it (``nlp.analyze_pipes()``)
    assigns: Sequence[str] = ()
    #: whether a component keeps labels already on a doc when its
    #: ``keep_existing`` is left null: as spaCy's own pipe for the target does
    #: by default (``ner``, ``tagger``, ``senter`` and the lemmatizers keep,
    #: with ``overwrite = false``; the ``morphologizer`` and ``spancat`` overwrite)
    keeps_existing = False
    #: the ``doc.spans`` key it writes, if it writes one
    spans_key: Optional[str] = None

    @classmethod
    def from_name(cls, target: str, scheme: str) -> Optional["Target"]:
        """The target the config string ``target`` names, if it is one of this
        class (None otherwise): here the class's own :attr:`name`.

        Parameters
        ----------
        target : str
            The component's ``target`` setting.
        scheme : str
            Its ``scheme`` setting (``BIO`` or ``BILUO``), for span targets.
        """
        return cls() if target == cls.name else None

    def __init__(self) -> None:
        self._labels: List[str] = []
        self._label_keys = np.zeros((0,), dtype=np.uint64)
        self._label_array = np.zeros((0,), dtype=object)
        self._keys = np.zeros((0,), dtype=np.uint64)
        self._order = np.zeros((0,), dtype=np.int64)
        self._warned: Set[str] = set()
        self._vocab_id = 0  # id() of the vocab the labels' strings were added to

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        """Fix the label set; label ``i`` of ``labels`` is id ``i``.

        The label strings are added to ``vocab.strings`` so that docs can
        show them.
        """
        # the keys of labels this target had with this vocab are kept: add_label
        # before initialize sets the grown set each time (1,000 entity types
        # were 4 million key_of calls, 15 s)
        known = (dict(zip(self._labels, self._label_keys.tolist()))
                 if self._vocab_id == id(vocab) else {})
        self._labels, self._vocab_id = list(labels), id(vocab)
        for label in self._labels:
            if label not in known:
                vocab.strings.add(label)
        self._label_keys = np.asarray([known[label] if label in known
                                       else self.key_of(label, vocab) for label in labels],
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

    def label_names(self, labels: Sequence[str]) -> List[str]:
        """How figures and pages (``crf-plots``) name ``labels``: the labels
        themselves here."""
        return list(labels)

    def label_strings(self, doc: Doc) -> List[str]:
        """The labels present in a reference doc (to collect the label set);
        not a negative one (``!NN``: its tokens are unannotated, W015)."""
        keys = self.reference_keys(doc)
        keys = np.unique(keys[keys != self.missing_key])
        found = (self.string_of(doc, int(key)) for key in keys)
        return [label for label in found if not is_negative(label)]

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
            if not self.first_time(f"W001 {label}"):
                continue
            if is_negative(label):
                warn(Warnings.W015.format(label=label, name=self.name,
                                          positive=label[len(NEGATIVE_PREFIX):]))
            else:
                warn(Warnings.W001.format(label=label, name=self.name))

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

    def check_corpus(self, name: str, references: Iterable[Doc]) -> None:
        """Warn where the training docs (the first of the corpus,
        ``references``) cannot teach this target what it predicts (nothing
        here; ``name``: the component's)."""

    def kept_labels(self, counts: Dict[str, int]) -> Set[str]:
        """Which of the labels a corpus has, ``counts`` of each, ``initialize``
        makes labels of (``crf-debug-data`` says so): all of them, here."""
        return set(counts)

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

    def kept_values(self, docs: Sequence[Doc], fixed: np.ndarray, name: str) -> np.ndarray:
        """Which tokens of the (non-empty) docs have a value that keep_existing
        keeps, (N,) bool: those that :meth:`fixed_labels` fixed (``fixed``) and
        those whose value is no label (-1 there), which ``write_batch`` keeps
        too but which cannot constrain the decoding (W044, once; ``name``: the
        component's)."""
        keys = np.concatenate([self.reference_keys(doc) for doc in docs])
        kept = keys != np.uint64(self.missing_key)
        self.warn_unconditioned(docs, keys, kept & (fixed < 0), name)
        return kept

    def first_time(self, what: str) -> bool:
        """True the first time the component asks about ``what`` (a warning's
        code or subject), False after: its warnings said once per component."""
        if what in self._warned:
            return False
        self._warned.add(what)
        return True

    def warn_unconditioned(self, docs: Sequence[Doc], keys: np.ndarray, which: np.ndarray,
                           name: str) -> None:
        """W044, once: the tokens ``which`` (bool over the docs' tokens, whose
        label keys are ``keys``) keep a value that is no label, so it cannot
        condition the decoding (``name``: the component's)."""
        unknown = np.flatnonzero(which)
        if len(unknown) and self.first_time("W044"):
            doc = docs[int(np.searchsorted(np.cumsum([len(d) for d in docs]), unknown[0],
                                           side="right"))]
            warn(Warnings.W044.format(name=name, target=self.name, n=len(unknown),
                                      value=self.string_of(doc, int(keys[unknown[0]]))))

    #: what ``crf-annotate`` writes of each token beside its label (:meth:`record_values`)
    record_fields: Tuple[str, ...] = ()

    def record_values(self, doc: Doc) -> Dict[str, List[Any]]:
        """Per field of :attr:`record_fields`, a value per token of a predicted
        ``doc``: what the label does not say itself (none here)."""
        return {}

    def forced_labels(self, docs: Sequence[Doc]) -> Optional[np.ndarray]:
        """Labels the (non-empty) docs' tokens must take whatever the model
        says, as ids over their tokens (-1 where free), or None (here): decoding,
        the confidences and the n-best lists are conditioned on them, so they
        describe what is written."""
        return None

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

    def check_model(self, model: Any, n_relation_groups: int) -> None:
        """Refuse a component's model that could not learn this target (none
        here; ``dep``'s features must not read the relations it predicts).

        Parameters
        ----------
        model : Model
            The component's model, prepared for its structure.
        n_relation_groups : int
            Relation groups of its label-interaction scores.
        """

    # -- scores -----------------------------------------------------------------

    def main_score_key(self) -> str:
        """The key of the component's main score, named after the target as
        spaCy's own pipes name theirs: token accuracy, ``{score_attr}_acc``."""
        return f"{self.score_attr}_acc"

    def score_weights(self) -> Dict[str, Optional[float]]:
        """The component's default score weights: all on its main score, with
        the scores worth seeing beside it in the ``spacy train`` table at 0
        (and those reported but not shown at None)."""
        return {self.main_score_key(): 1.0}

    def score_keys(self, doc: Doc) -> np.ndarray:
        """What token accuracy compares (``scores.token_accuracy``'s
        ``keys_of``): one key per token, equal between two docs exactly where
        :meth:`getter`'s values are (the reference keys here)."""
        return self.reference_keys(doc)

    def scorer_args(self) -> Dict[str, Any]:
        """What the component passes its scorer beside its target, as spaCy's
        pipe for the target passes it: a span group's ``spans_key``, so that
        spaCy's ``spacy.spancat_scorer.v1`` serves as its scorer too."""
        return {} if self.spans_key is None else {"spans_key": self.spans_key}

    def score(self, examples: List[Example], **kwargs: Any) -> Dict[str, Any]:
        """Score a component's predictions of this target.

        Parameters
        ----------
        examples : list of Example
            Predicted and reference docs.
        **kwargs
            What spaCy's scorers take (e.g. ``missing_values``).

        Returns
        -------
        dict
            The main score under :meth:`main_score_key` and as ``crf_score``,
            and ``crf_acc``, the token accuracy of the target's labels; here
            all three are the token accuracy.
        """
        results = token_accuracy(examples, self, self.score_attr, keys_of=self.score_keys,
                                 **kwargs)
        results["crf_acc"] = results.get(f"{self.score_attr}_acc")
        results[MAIN_SCORE] = results["crf_acc"]
        return results
