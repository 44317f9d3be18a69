"""Span targets: spans as one tag per token in a scheme (BIO or BILUO), with
the scheme's forbidden transitions enforced in training and decoding. The
base of ``ents`` (:mod:`.ents`) and ``spans:KEY`` (:mod:`.span_group`)."""

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import IS_SPACE
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.vocab import Vocab

from .. import inference, schemes
from ..models.potentials import CRFScores
from ..features.doc_arrays import doc_lengths, space_rows
from ..ragged import sequence_ends
from ..span_probabilities import span_probabilities
from ..structures import BatchLayout, ChainLayout
from ..util import same_tokens
from .base import Target, refuse_negative_type
from .scores import prf_weights

#: the bits of a span type's hash that a packed tag key keeps (``SpanTarget.key_of``)
TYPE_BITS = (1 << 61) - 1


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
        if _reads_as_tag(label):
            _, _, types = schemes.parse_tags([label])
            tags = [label]
        else:  # not a tag: a type
            types, tags = [label], self.tags_of_type(label)
        for span_type in types:
            refuse_negative_type(span_type, self.name)
        return tags

    def tags_of_type(self, span_type: str) -> List[str]:
        """Every tag of the span type ``span_type`` in the scheme (``B-LOC``,
        ``I-LOC``, ...), whatever the type's name: ``U-BOAT`` or ``O`` too."""
        return schemes.tag_set([span_type], self.scheme)[1:]

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
            # (a type named as a tag reads, or is, one: "U-BOAT", "O" as its tags)
            if {int(p) for p in prefix[own]} == scheme_prefixes and not _reads_as_tag(span_type):
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

    def allowed_labels(self, docs: Sequence[Doc]) -> Optional[np.ndarray]:
        """No span starts on a whitespace token (``"\\n\\n"``, a second space),
        as spaCy's ner allows no entity to start there: its B and U tags are not
        allowed on one. None (every label) for a batch without such a token, the
        usual one. A doc of whitespace alone came out as one entity."""
        rows = space_rows(docs)  # (the features' own, where they read them)
        if not rows.size:
            return None
        starts = np.flatnonzero(np.isin(self._parsed[0], (schemes.BEGIN, schemes.UNIT)))
        allowed = np.ones((int(doc_lengths(docs).sum()), len(self._labels)), dtype=bool)
        allowed[np.ix_(rows, starts)] = False
        return allowed

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
        # a tag the token may not take (a span that starts on whitespace)
        bad = known & np.isneginf(scores.emissions[np.arange(gold.shape[0]), safe])
        bad[first] |= known[first] & ~allowed_start[safe[first]]
        bad[last] |= known[last] & ~allowed_end[safe[last]]
        pairs = known[:-1] & known[1:]
        pairs[last[last < gold.shape[0] - 1]] = False  # no move across sequences
        moves = pairs & ~allowed_t[safe[:-1], safe[1:]]
        bad[:-1] |= moves
        bad[1:] |= moves
        gold = np.where(bad, -1, gold)
        # with every tag known and every move allowed a labelling exists, so the
        # (costly) feasibility pass is only needed where tokens are unannotated;
        # over the scheme's moves alone (a chain of the tags), not the structure's
        # own limits: a semi-Markov CRF's span too long, a pruned lattice, each
        # with a warning of its own, are no tags that break the scheme
        chain_of_tags = ChainLayout(lengths) if scores.transitions is not None else layout
        for attempt in range(2 if (gold < 0).any() else 0):
            _, best = inference.viterbi(scores.replace(emissions=np.asarray(scores.emissions)),
                                        chain_of_tags, gold)
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

    def main_score_key(self) -> str:
        """Span F1, ``{score_attr}_f`` (``ents_f``, ``spans_KEY_f``)."""
        return f"{self.score_attr}_f"

    def score_weights(self) -> Dict[str, Optional[float]]:
        return prf_weights(self.score_attr)


def _reads_as_tag(label: str) -> bool:
    """Whether ``label`` reads as a tag of the schemes (``O``, ``B-PER``, ``U-BOAT``)."""
    try:
        schemes.parse_tags([label])
    except ValueError:
        return False
    return True
