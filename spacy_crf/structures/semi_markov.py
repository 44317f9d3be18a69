"""The semi-Markov CRF (``structure = "semi_markov"``), for span targets.

A labelling is a segmentation of each sentence into segments of at most ``D``
tokens (``max_segment_length``), each an entity (span) type or a one-token
``O``. A segment scores

* the token emissions of the tags the scheme gives it (BILUO ``U-X`` or
  ``B-X I-X .. L-X``; BIO ``B-X I-X ..``), i.e. the token features summed over
  the segment, label by label, and the transitions between those tags;
* its segment features (``models/segment_scores.py``: length, first and last
  word, the whole segment, its shape, the words around it), conjoined with its
  type, read from ``CRFScores.segments``;

and consecutive segments the transition from one's last tag to the next one's
first. The structure keeps the component's tags, so targets, constraints,
forced decoding, confidences and scoring are those of the chain; with zero
segment scores and ``D`` at least the longest span it *is* the constrained
chain. ``_kernels/semi_markov.py`` runs forward-backward and Viterbi over
segments; a span's confidence is its segment's marginal.

``D`` comes from the training data at initialize (the longest gold span,
capped at :data:`DEFAULT_CAP`) unless the component sets
``max_segment_length``; longer gold spans get W006 and their sentences are
left out of training.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .._kernels import semi_markov as kernels
from ..errors import Errors, Warnings, warn
from ..models.potentials import CRFScores
from ..models.pooled_experts import is_pooled
from ..models.segment_scores import is_wrapped, with_segment_scores
from ..schemes import BEGIN, INSIDE, LAST, OUT, UNIT, parse_tags
from ..util import is_count
from .base import (BatchLayout, CRFStructure, ComponentView, as_f64, check_spans, get_structure,
                   gradient_in_dtype, labels_or_free, positions_in_sequence, register_structure,
                   sequence_lengths)
from .config import StructureSpec, register_spec

#: the longest segment when the training data's longest span is longer
DEFAULT_CAP = 10
#: the longest max_segment_length accepted: the semi-Markov CRF's cost grows with it
#: at every token, and spans longer than this are not what it is for
MAX_SEGMENT_LENGTH = 100
#: cfg key of the segment length in use (the setting, or what the data gave)
LENGTH_KEY = "segment_length"


@register_spec("spacy-crf.SemiMarkov.v1", "semi_markov")
def semi_markov_structure(max_segment_length: int = 0) -> StructureSpec:
    """A semi-Markov CRF over segments of a span target (``ents``, ``spans:KEY``).

    Parameters
    ----------
    max_segment_length : int
        The longest segment (span) it labels; ``0`` takes the longest gold
        span of the training data, capped at :data:`DEFAULT_CAP`. E109 unless
        an integer >= 0, E166 above :data:`MAX_SEGMENT_LENGTH`.
    """
    if not is_count(max_segment_length, 0):
        raise ValueError(Errors.E109.format(value=max_segment_length, cap=DEFAULT_CAP,
                                            structure="spacy-crf.SemiMarkov.v1"))
    if max_segment_length > MAX_SEGMENT_LENGTH:
        raise ValueError(Errors.E166.format(value=max_segment_length, most=MAX_SEGMENT_LENGTH,
                                            cap=DEFAULT_CAP))
    return StructureSpec("semi_markov", {"max_segment_length": max_segment_length})


def segment_length(setting: int, longest: int) -> int:
    """The longest segment: ``max_segment_length`` where set, else the longest
    gold span, capped at :data:`DEFAULT_CAP` (``initialize`` and ``spacy debug
    data`` say the same)."""
    return setting or max(1, min(longest, DEFAULT_CAP))


@dataclass
class SemiMarkovLayout(BatchLayout):
    """Chains of a batch, the longest segment and how tags make segments.

    Attributes
    ----------
    max_length : int
        ``D``, the longest segment.
    unit, begin, inside, last : numpy.ndarray
        (K,) int64 per segment type (the span types, then ``O``): the tag of a
        one-token segment, and the first, middle and last tags of a longer
        one; ``-1`` where the labels have no such tag.
    type_length : numpy.ndarray
        (K,) int64 longest segment of each type (``1`` for ``O``).
    opens : numpy.ndarray
        (L,) bool: a token with this tag starts a segment.
    """

    max_length: int = 1
    unit: np.ndarray = None
    begin: np.ndarray = None
    inside: np.ndarray = None
    last: np.ndarray = None
    type_length: np.ndarray = None
    opens: np.ndarray = None
    structure_name = "semi_markov"

    def __post_init__(self) -> None:
        self.lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)

    def tables(self) -> Tuple[np.ndarray, ...]:
        return self.unit, self.begin, self.inside, self.last, self.type_length

    def segments(self, labels: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """First rows and lengths of the segments of a labelling (tags)."""
        first = self.opens[labels] | (positions_in_sequence(self.lengths) == 0)
        starts = np.flatnonzero(first)
        return starts, np.diff(np.append(starts, labels.shape[0]))


def segment_tables(labels: Sequence[str], scheme: str, max_length: int) -> Dict[str, np.ndarray]:
    """The per-type tag tables of :class:`SemiMarkovLayout` for a tag set."""
    prefix, kind, types = parse_tags(labels)
    K = len(types) + 1  # the span types, then O
    tables = {name: np.full(K, -1, dtype=np.int64) for name in ("unit", "begin", "inside", "last")}
    # BIO has no U- or L- tags: a one-token span is B-X, a longer one ends in I-X
    one, end = (UNIT, LAST) if scheme == "BILUO" else (BEGIN, INSIDE)
    for tag, (code, k) in enumerate(zip(prefix, kind)):
        if code == OUT:
            tables["unit"][K - 1] = tag
            continue
        for name, wanted in (("unit", one), ("begin", BEGIN), ("inside", INSIDE), ("last", end)):
            if code == wanted:
                tables[name][k] = tag
    type_length = np.full(K, max_length, dtype=np.int64)
    type_length[K - 1] = 1
    opens = np.isin(prefix, (OUT, BEGIN, UNIT) if scheme == "BILUO" else (OUT, BEGIN))
    return dict(tables, type_length=type_length, opens=opens)


@register_structure
class SemiMarkovStructure(CRFStructure):
    """Forward-backward and Viterbi over segments (see the module docstring)."""

    name = "semi_markov"
    params = ("transitions", "start", "end")
    layout_class = SemiMarkovLayout
    supports_spans = True
    supports_n_best = True
    supports_span_probabilities = True
    needs_span_target = True
    batch_trainer_error = Errors.E110

    # -- building ------------------------------------------------------------

    def prepare_model(self, model, target: Any, settings: Optional[Mapping[str, Any]] = None):
        """The component's model with segment features (once)."""
        if is_pooled(model):
            raise ValueError(Errors.E121.format(
                structure=self.name, why="its segment features would score the pool, while "
                                         "each expert trains as a CRF of its own"))
        model = super().prepare_model(model, target, settings)
        return model if model is None or is_wrapped(model) else with_segment_scores(model)

    def span_length_report(self, cfg: Mapping[str, Any],
                           span_lengths: Mapping[int, int]) -> List[Tuple[str, str, str]]:
        """Spans longer than the segments (W006 in training), as
        :meth:`initialize_cfg` will cap them."""
        if not span_lengths:
            return []
        setting = int(cfg.get("max_segment_length") or 0)
        length = segment_length(setting, max(span_lengths))
        n_long = sum(n for size, n in span_lengths.items() if size > length)
        where = ("max_segment_length" if setting
                 else f"max_segment_length = 0: capped at {DEFAULT_CAP}")
        if n_long:
            return [("warn", f"{n_long} train spans are longer than {length} tokens ({where}): "
                             f"their sentences are left out of training (W006)",
                     "Raise max_segment_length in the component's structure block.")]
        return [("good", f"Every train span fits max_segment_length ({length})", "")]

    def initialize_cfg(self, component: ComponentView, get_examples: Callable) -> Dict[str, Any]:
        """``segment_length``: ``max_segment_length``, or the longest gold span
        (at most :data:`DEFAULT_CAP`); W006 for longer gold spans."""
        opens = segment_tables(component.labels, component.cfg["scheme"], 1)["opens"]
        outside = np.asarray([label == "O" for label in component.labels])
        span_lengths = [np.zeros(0, dtype=np.int64)]
        for eg in get_examples():
            if not len(eg.predicted):
                continue
            gold = component.target.gold_ids(eg)
            lengths = sequence_lengths([eg.predicted], component)
            span_lengths.append(_gold_span_lengths(gold, lengths, opens, outside))
        found = np.concatenate(span_lengths)
        setting = int(component.cfg.get("max_segment_length", 0))
        longest = int(found.max()) if found.size else 1
        length = segment_length(setting, longest)
        too_long = int((found > length).sum())
        if too_long:
            warn(Warnings.W006.format(n=too_long, name=component.name, length=length,
                                      longest=longest))
        return {"relations": [], LENGTH_KEY: length}

    def settings_run(self, settings: Mapping[str, Any], cfg: Mapping[str, Any]
                     ) -> Dict[str, Any]:
        """``max_segment_length = 0`` runs as the length ``initialize`` found
        (``segment_length``): an override naming that length runs the same."""
        length = int(settings.get("max_segment_length") or cfg.get(LENGTH_KEY) or 0)
        return {**settings, "max_segment_length": length}

    def layout(self, docs: Sequence, component: ComponentView) -> SemiMarkovLayout:
        # the model's segment layer scores segments of this length, read from
        # the layout that travels with the batch (models/segment_scores.py)
        length = int(component.cfg.get(LENGTH_KEY) or component.cfg.get("max_segment_length")
                     or DEFAULT_CAP)
        return SemiMarkovLayout(sequence_lengths(docs, component), length,
                                **segment_tables(component.labels, component.cfg["scheme"], length))

    # -- inference -----------------------------------------------------------

    def check(self, scores: CRFScores, layout: SemiMarkovLayout) -> np.ndarray:
        emissions = super().check(scores, layout)
        expected = (emissions.shape[0], layout.max_length, emissions.shape[1])
        if scores.segments is None or np.shape(scores.segments) != expected:
            raise ValueError(Errors.E111.format(
                expected=expected, got=None if scores.segments is None else np.shape(scores.segments)))
        return emissions

    @staticmethod
    def _args(emissions, scores, layout, fixed):
        """Kernel arguments: the emissions with ``-inf`` on tags ``fixed`` excludes."""
        fixed = np.asarray(fixed)
        if (fixed >= 0).any():
            bad = (fixed[:, None] >= 0) & (np.arange(emissions.shape[1])[None, :] != fixed[:, None])
            emissions = np.where(bad, -np.inf, emissions)
        return (emissions, layout.lengths, as_f64(scores.transitions), as_f64(scores.start),
                as_f64(scores.end), as_f64(scores.segments), *layout.tables())

    def _max_pass(self, emissions, scores, layout, fixed, labels, best):
        kernels.viterbi(*self._args(emissions, scores, layout, fixed), labels, best)

    def n_best(self, scores, layout, k, fixed=None):
        """The ``k`` best segmentations (as tags) of every sequence, honouring ``fixed``."""
        if k < 1:
            raise ValueError(Errors.E065.format(k=k, structure=self.name))
        emissions = self.check(scores, layout)
        labels = np.zeros((k, emissions.shape[0]), dtype=np.int64)
        best = np.zeros((layout.n_sequences, k))
        counts = np.zeros(layout.n_sequences, dtype=np.int64)
        kernels.k_best(*self._args(emissions, scores, layout,
                                   labels_or_free(emissions.shape[0], fixed)),
                       k, labels, best, counts)
        return labels, best, counts

    def _sum(self, scores: CRFScores, layout: SemiMarkovLayout,
             fixed: Optional[np.ndarray]) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
        """log Z (S,) and the expected counts of every score (``segments``: the
        segment marginals), honouring ``fixed``."""
        emissions = self.check(scores, layout)
        L = emissions.shape[1]
        log_z = np.zeros(layout.n_sequences)
        counts = {"emissions": np.zeros_like(emissions), "transitions": np.zeros((L, L)),
                  "start": np.zeros(L), "end": np.zeros(L),
                  "segments": np.zeros(np.shape(scores.segments))}
        kernels.sum_pass(*self._args(emissions, scores, layout,
                                     labels_or_free(emissions.shape[0], fixed)),
                         log_z, counts["emissions"], counts["transitions"], counts["start"],
                         counts["end"], counts["segments"])
        return log_z, counts

    def marginals(self, scores, layout, fixed=None):
        log_z, counts = self._sum(scores, layout, fixed)
        return counts["emissions"], log_z

    def nll_and_gradient(self, scores, layout, gold):
        gold = np.ascontiguousarray(gold, dtype=np.int64)
        free_z, free = self._sum(scores, layout, None)
        gold_z, clamped = self._sum(scores, layout, gold)
        lost = ~np.isfinite(gold_z) & np.isfinite(free_z)
        if lost.any():  # a gold span longer than D: those sequences count as unannotated
            gold = np.where(np.repeat(lost, layout.lengths), -1, gold)
            gold_z, clamped = self._sum(scores, layout, gold)
        with np.errstate(invalid="ignore"):
            nll = free_z - gold_z
        # no labelling at all (log Z = -inf) costs nothing; a NaN or +inf log Z is
        # divergence and stays in the loss, for E009 / E034 to stop the training
        nll[np.isneginf(free_z)] = 0.0
        return nll, gradient_in_dtype(scores, {k: free[k] - clamped[k] for k in free})

    def span_log_probabilities(self, scores, layout, labels, starts, ends, blocked_after,
                               fixed=None, force_log=False):
        """Each span's segment marginal: the mass of the segmentations that have
        exactly that segment (``blocked_after`` holds by construction: the next
        segment never continues it)."""
        emissions = self.check(scores, layout)
        starts, ends, labels = (np.ascontiguousarray(a, dtype=np.int64)
                                for a in (starts, ends, labels))
        check_spans(labels, starts, ends, np.asarray(blocked_after, dtype=bool), layout.lengths,
                    emissions.shape[0], emissions.shape[1])
        log_z, counts = self._sum(scores, layout, fixed)
        width = ends - starts
        fits = width <= layout.max_length
        probability = np.zeros(starts.shape[0])
        probability[fits] = counts["segments"][starts[fits], width[fits] - 1, labels[starts[fits]]]
        with np.errstate(divide="ignore"):
            return np.log(np.minimum(probability, 1.0)), log_z

    def labelling_counts(self, layout, labels, weights, out):
        get_structure("chain").labelling_counts(layout, labels, weights, out)
        starts, widths = layout.segments(labels)
        seq_of = np.repeat(np.arange(layout.n_sequences), layout.lengths)
        fits = widths <= layout.max_length
        # d segments[first row, length - 1, first tag] = w for every segment
        np.add.at(out.segments, (starts[fits], widths[fits] - 1, labels[starts[fits]]),
                  weights[seq_of[starts[fits]]])


def _gold_span_lengths(gold: np.ndarray, lengths: np.ndarray, opens: np.ndarray,
                       outside: np.ndarray) -> np.ndarray:
    """Lengths of the fully annotated gold spans (not ``O``) of a doc."""
    known = gold >= 0
    first = (known & opens[np.maximum(gold, 0)]) | ~known | (positions_in_sequence(lengths) == 0)
    starts = np.flatnonzero(first)
    widths = np.diff(np.append(starts, gold.shape[0]))
    keep = known[starts] & ~outside[np.maximum(gold[starts], 0)]
    return widths[keep]
