"""A first-order chain over each token's few best labels: a pruned CRF for large label sets.

A chain costs L^2 a token (every label pair of every move): 7k tokens/s at
245 labels, against 1M at 17. Most of those labels are out of the question
for a token long before the transitions are read: its emission scores (the
zero-order model, a softmax per token) put almost all of its mass on a few.
So, as MarMoT does (Mueller, Schmid and Schuetze, EMNLP 2013, "Efficient
Higher-Order CRFs for Morphological Tagging"), each token keeps its
``candidates`` best labels by emission score, and the exact chain runs over
that lattice: ``candidates^2`` a move, whatever the label count.

* Training keeps the gold label of every token in its lattice (in place of
  its worst candidate), and the likelihood is the lattice's: log Z over the
  labellings of the candidates, minus the gold labelling's score. A label
  out of a token's lattice gets no gradient there. Its lattice holds at
  least two labels a token (``candidates = 1`` too: one would be the gold
  alone, and the likelihood would learn nothing).
* Decoding keeps labels fixed by ``keep_existing`` in the lattice the same
  way. Token marginals (``store_confidence``) are the lattice's: a pruned
  label's probability is 0, and the kept ones' sum to 1.
* With ``candidates`` at least the label count (and no ``margin``) nothing
  is pruned, and every result is the full chain's (a test checks it against
  ``chain``).
* ``margin`` (decoding only): a token keeps, of its ``candidates`` best
  labels, those whose emission is within ``margin`` of its best (a label
  ``e^margin`` times less likely than the best in the zero-order model is
  left out), as MarMoT prunes by the zero-order posterior. Where the
  emissions are sure of a label, the lattice is narrow: on UD Greek GDT's
  morphology 4.5 labels a token at ``margin = 6`` where ``candidates = 8``,
  and on EWT 3.3, with the same labels decoded on both test splits as
  without a margin. Training keeps the ``candidates`` best (the gold among
  them), so the gradient reaches as many labels as before. Viterbi and
  n-best lists are over the narrowed lattice; confidences (and the log Z
  n-best probabilities divide by) over every candidate, as a token the margin
  narrows to one label would otherwise be sure of it. The factory's
  default for a target with labels by the hundred sets ``margin = 6``; the
  block's own default (null) keeps every candidate, as models saved before
  it did.

* A span target (``ents``, ``spans:KEY``, thousands of entity types) keeps
  ``O`` in every token's lattice beside its candidates, so the scheme's
  forbidden moves (``-inf`` transitions, as the chain has them) always leave
  a labelling: ``O`` everywhere, or the spans ``keep_existing`` fixes with
  ``O`` around them. In training the gold is kept where it is known; a
  sequence whose unknown tokens' candidates cannot join its known tags
  (``B-PER ? L-PER`` with no ``I-PER`` among the unknown token's) trains as
  unannotated, with W049. Span confidences (``store_confidence``) are the
  full chain's, of the same parameters: exact over every labelling, at the
  chain's cost (``L^2`` a token), where the spans come from the lattice.

The lattice is a path whose every move has a pair matrix of its own (the
transitions between the two tokens' candidates), so it runs on the tree
kernels as the input-dependent chain does (``tree_path.py``): ``start`` and
``end`` go on the first and last tokens' candidate scores. The parameters are
the chain's (``transitions``, ``start``, ``end``), so a model trained with
one structure loads in the other. N-best
lists (``n_best``) are the lattice's k best labellings, exact over it (the
chain's k-best kernel with a move matrix per token): a labelling that uses a
pruned label is not among them, so the list is the full chain's wherever
its labellings keep to each token's candidates.

Config block::

    [components.crf_tagger.structure]
    @structures = "spacy-crf.PrunedChain.v1"
    candidates = 8
    margin = 6.0
"""

from dataclasses import dataclass, replace
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .._kernels import kbest, pruning, tree
from ..errors import Errors
from ..models.composed_emissions import ComposedEmissions
from ..models.potentials import CRFScores
from ..ragged import sequence_ends
from ..util import is_count, is_number
from .base import (NO_EDGES, BatchLayout, CRFStructure, ComponentView, as_f64, get_structure,
                   gradient_in_dtype, labels_or_free, register_structure, sequence_lengths)
from .chain import ChainLayout
from .config import StructureSpec, register_spec
from .tree_path import path_forest

#: labels each token keeps by default: on UD English EWT's 321 UPOS+FEATS
#: labels the gold label is among a trained model's 8 best for all but a few
#: tokens in a thousand, and a move then costs 64 label pairs, not 103,041
DEFAULT_CANDIDATES = 8


@register_spec("spacy-crf.PrunedChain.v1", "pruned_chain")
def pruned_chain_structure(candidates: int = DEFAULT_CANDIDATES,
                           margin: Optional[float] = None) -> StructureSpec:
    """A first-order chain over each token's ``candidates`` best labels.

    Parameters
    ----------
    candidates : int
        Labels each token keeps, by emission score (the gold label and a
        label fixed by ``keep_existing`` are always kept). At least the
        label count: no pruning, the exact chain.
    margin : float, optional
        In decoding, a token keeps only the candidates whose emission is
        within ``margin`` of its best (a fixed label too); null keeps them
        all. The factory's default for a target with labels by the hundred
        is ``chain.PRUNED_MARGIN`` (6).
    """
    if not is_count(candidates):
        raise ValueError(Errors.E210.format(value=candidates))
    if margin is not None and not (is_number(margin) and margin > 0):
        raise ValueError(Errors.E231.format(value=margin))
    settings: Dict[str, Any] = {"candidates": int(candidates)}
    if margin is not None:  # (a cfg without it: a model saved before it, no margin)
        settings["margin"] = float(margin)
    return StructureSpec("pruned_chain", settings)


@dataclass
class PrunedChainLayout(ChainLayout):
    """Sequence lengths of a batch of chains, and the labels each token keeps."""

    candidates: int = DEFAULT_CANDIDATES
    #: decoding keeps the candidates within this of a token's best (None: all)
    margin: Optional[float] = None
    #: a label every token's lattice holds beside its candidates (-1: none): a
    #: span target's ``O``, which the scheme lets follow and precede anything
    always: int = -1
    structure_name = "pruned_chain"


#: the fewest labels a token's training lattice holds: with one, the gold
#: label takes the best one's place and is the lattice alone, so log Z is the
#: gold labelling's score and the likelihood learns nothing (``candidates =
#: 1`` still decodes over one label a token)
MIN_TRAINING_CANDIDATES = 2


def training_layout(layout: PrunedChainLayout) -> PrunedChainLayout:
    """``layout`` with at least :data:`MIN_TRAINING_CANDIDATES` a token."""
    if layout.candidates >= MIN_TRAINING_CANDIDATES:
        return layout
    return replace(layout, candidates=MIN_TRAINING_CANDIDATES)


#: rows whose mean scores order the labels the candidate search reads first
VISIT_SAMPLE = 256


def best_candidates(emissions, n: int, keep: np.ndarray, margin: Optional[float] = None
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each token's ``n`` best labels by emission score, of those within
    ``margin`` of its best (None: all), in label order, with ``keep[t]`` (a
    label id, -1 for none) among them (in place of the worst where there are
    ``n``) (``_kernels/pruning.py``).

    ``emissions`` is an (N, L) array, or a factored table's
    :class:`~spacy_crf.models.composed_emissions.ComposedEmissions`, composed
    as it is searched where there is a margin (and in full where not).

    Returns
    -------
    cand : numpy.ndarray
        (N, min(n, L)) int64 label ids; the slots past a token's count
        repeat its last candidate.
    counts : numpy.ndarray
        (N,) int64: how many of each token's are its candidates.
    scores : numpy.ndarray
        (N, min(n, L)) their emission scores (``-inf`` past the count), in
        the emissions' dtype.
    """
    n_tokens, n_labels = emissions.shape
    n = min(n, n_labels)
    keep = np.ascontiguousarray(keep, dtype=np.int64)
    if isinstance(emissions, ComposedEmissions) and margin is not None:
        return emissions.candidates(n, keep, margin)
    emissions = np.ascontiguousarray(emissions)
    if n == n_labels and margin is None or not n_tokens:  # (no mean of no rows below)
        return (np.broadcast_to(np.arange(n_labels, dtype=np.int64), (n_tokens, n_labels)).copy(),
                np.full(n_tokens, n_labels, dtype=np.int64), emissions)
    cand = np.zeros((n_tokens, n), dtype=np.int64)
    counts = np.zeros(n_tokens, dtype=np.int64)
    scores = np.zeros((n_tokens, n), dtype=emissions.dtype)
    if margin is None:
        # labels likely to be kept first: those of high mean score over the first
        # rows (the kernel's speed depends on the order, its result does not)
        visit = np.argsort(-emissions[:VISIT_SAMPLE].mean(axis=0), kind="stable").astype(np.int64)
    else:  # (a margin's threshold comes from each row's best: no order is read)
        visit = np.arange(n_labels, dtype=np.int64)
    pruning.best_candidates(emissions, n, keep, visit,
                            np.inf if margin is None else float(margin), cand, counts, scores)
    return cand, counts, scores


def with_label(emissions, cand: np.ndarray, counts: np.ndarray, scores: np.ndarray, label: int
               ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`best_candidates`' arrays with ``label`` added to every token's
    candidates that lack it (one slot more), in label order, the slots past a
    token's count repeating its last candidate with score ``-inf``."""
    n_tokens, n = cand.shape
    none = np.iinfo(np.int64).max  # (sorts after every label)
    real = real_slots(cand, counts)
    missing = ~((cand == label) & real).any(axis=1)
    label_scores = np.asarray(np.asarray(emissions)[:, label], dtype=scores.dtype)
    keys = np.concatenate([np.where(real, cand, none),
                           np.where(missing, label, none)[:, None]], axis=1)
    order = np.argsort(keys, axis=1, kind="stable")
    keys = np.take_along_axis(keys, order, axis=1)
    scores = np.take_along_axis(
        np.concatenate([np.where(real, scores, -np.inf),
                        np.where(missing, label_scores, -np.inf)[:, None]], axis=1), order, axis=1)
    counts = counts + missing
    last = keys[np.arange(n_tokens), counts - 1]
    cand = np.where(np.arange(n + 1)[None, :] < counts[:, None], keys, last[:, None])
    return cand, counts, scores


def real_slots(cand: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(N, n) bool: the slots within each token's count (the rest repeat its last)."""
    return np.arange(cand.shape[1])[None, :] < counts[:, None]


def put_slots(out: np.ndarray, cand: np.ndarray, counts: np.ndarray, values: np.ndarray) -> None:
    """``out[t, cand[t, i]] = values[t, i]`` over the real slots alone: a
    repeated one (its value 0) would overwrite its label's."""
    real = real_slots(cand, counts)
    out[np.nonzero(real)[0], cand[real]] = values[real]


def slots_of(cand: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Where each token's label (-1: none) stands among its candidates (-1: none)."""
    hit = cand == labels[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1).astype(np.int64)


@register_structure
class PrunedChainStructure(CRFStructure):
    """The exact chain over each token's best labels (see the module)."""

    name = "pruned_chain"
    params = ("transitions", "start", "end")
    layout_class = PrunedChainLayout
    batch_trainer_error = Errors.E211
    supports_n_best = True
    supports_spans = True
    supports_span_probabilities = True  # (the full chain's)
    reads_composed_emissions = True
    #: a sequence with unknown gold labels may find no labelling in its lattice
    prunes_labellings = True
    unreachable_gold_warning = "W049"

    def layout(self, docs: Sequence, component: ComponentView) -> PrunedChainLayout:
        target = component.target
        return PrunedChainLayout(sequence_lengths(docs, component),
                                 int(component.cfg.get("candidates", DEFAULT_CANDIDATES)),
                                 component.cfg.get("margin"),
                                 target.out_id if target is not None and target.is_span_target
                                 else -1)

    def check(self, scores: CRFScores, layout: BatchLayout) -> np.ndarray:
        # the emissions as they are (float32 from a model, or a factored
        # table's parts, composed as they are searched): only the candidates'
        # scores are read in float64, not a copy of (N, L)
        emissions = scores.emissions
        if not isinstance(emissions, ComposedEmissions):
            emissions = np.ascontiguousarray(emissions)
        if layout.n_tokens != emissions.shape[0]:
            raise ValueError(Errors.E063.format(n_tokens=layout.n_tokens,
                                                n_rows=emissions.shape[0]))
        return emissions

    @staticmethod
    def _candidates(emissions, layout: PrunedChainLayout, keep: np.ndarray,
                    margin: Optional[float]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each token's candidates (:func:`best_candidates`), with the layout's
        ``always`` label (a span target's ``O``) where it prunes."""
        found = best_candidates(emissions, layout.candidates, keep, margin)
        if layout.always < 0 or (margin is None and layout.candidates >= emissions.shape[1]):
            return found
        return with_label(emissions, *found, layout.always)

    def _lattice(self, emissions: np.ndarray, scores: CRFScores, layout: PrunedChainLayout,
                 keep: np.ndarray, margin: Optional[float]
                 ) -> Tuple[np.ndarray, np.ndarray, tuple]:
        """The candidates and their counts (within ``margin``, the layout's
        in decoding, None in training), and the tree-kernel arguments of
        their lattice: candidate scores (with ``start`` on first tokens and
        ``end`` on last ones; ``-inf`` on a slot past a token's count),
        lengths, heads, order, ``pair[t, i, j]`` = the transition from token
        ``t - 1``'s candidate ``j`` to ``t``'s candidate ``i``, each move's
        pair matrix, no root scores."""
        lengths = layout.lengths
        cand, counts, cand_scores = self._candidates(emissions, layout, keep, margin)
        n_tokens, n_cand = cand.shape
        local = np.empty((n_tokens, n_cand))
        pair = np.empty((n_tokens, n_cand, n_cand))
        pruning.lattice_scores(cand_scores, cand, counts, lengths, as_f64(scores.start),
                               as_f64(scores.end), as_f64(scores.transitions), local, pair)
        heads, order = path_forest(lengths)
        return cand, counts, (local, lengths, heads, order, pair,
                              np.arange(cand.shape[0], dtype=np.int64), np.zeros(cand.shape[1]))

    def _max_pass(self, emissions, scores, layout, fixed, labels, best):
        # the lattice's scores read in place (pruning.lattice_viterbi), not written out
        cand, counts, cand_scores = self._candidates(emissions, layout, fixed, layout.margin)
        slots = np.zeros(cand.shape[0], dtype=np.int64)
        pruning.lattice_viterbi(cand_scores, cand, counts, layout.lengths, as_f64(scores.start),
                                as_f64(scores.end), as_f64(scores.transitions),
                                slots_of(cand, fixed), slots, best)
        labels[:] = cand[np.arange(cand.shape[0]), slots]

    def n_best(self, scores, layout, k, fixed=None):
        """The ``k`` best labellings of the lattice (each token's candidates,
        a fixed label among them), exact there: the list the full chain gives
        whenever its labellings use kept labels only, the first the MAP."""
        if k < 1:
            raise ValueError(Errors.E065.format(k=k, structure=self.name))
        emissions = self.check(scores, layout)
        n_tokens = emissions.shape[0]
        fixed = labels_or_free(n_tokens, fixed)
        cand, _, (local, lengths, _, _, pair, _, _) = self._lattice(emissions, scores, layout,
                                                                    fixed, layout.margin)
        n_cand = cand.shape[1]
        slots = np.zeros((k, n_tokens), dtype=np.int64)
        best = np.zeros((layout.n_sequences, k))
        counts = np.zeros(layout.n_sequences, dtype=np.int64)
        # the kernel's moves[m, previous, next]; the lattice's pair[t, next, previous]
        kbest.kbest_moves(local, lengths, np.ascontiguousarray(pair.transpose(0, 2, 1)),
                          np.arange(n_tokens, dtype=np.int64), np.zeros(n_cand),
                          np.zeros(n_cand), slots_of(cand, fixed), k, slots, best, counts)
        labels = cand[np.arange(n_tokens)[None, :], slots]
        return labels, best, counts

    def _sum_pass(self, emissions, scores, layout, fixed, log_z, marginals):
        # over every candidate, not the margin's few: a token the margin narrows
        # to one label would be sure of it (a probe: 29% of EWT's morphology
        # tokens and 76% of its lemmas at 1.0 exactly, some of them wrong)
        cand, counts, args = self._lattice(emissions, scores, layout, fixed, None)
        kept = np.zeros(cand.shape)
        tree.sum_product(*args, slots_of(cand, fixed), log_z, kept, NO_EDGES,
                         np.zeros(args[4].shape), np.zeros(cand.shape[1]), False, False)
        marginals[:] = 0.0
        put_slots(marginals, cand, counts, kept)

    def nll_and_gradient(self, scores: CRFScores, layout: PrunedChainLayout,
                         gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
        emissions = self.check(scores, layout)
        gold = np.ascontiguousarray(gold, dtype=np.int64)
        # (training keeps every candidate: the margin is decoding's)
        cand, counts, args = self._lattice(emissions, scores, training_layout(layout), gold, None)
        n_labels = emissions.shape[1]
        nll = np.zeros(layout.n_sequences)
        d_local = np.zeros(cand.shape)
        d_pair = np.zeros(args[4].shape)
        tree.nll_gradient(*args, slots_of(cand, gold), nll, d_local, d_pair,
                          np.zeros(cand.shape[1]), False)
        d_emissions = np.zeros(emissions.shape)
        put_slots(d_emissions, cand, counts, d_local)
        first, last = sequence_ends(layout.lengths)
        heads = args[2]
        moves = np.flatnonzero(heads >= 0)
        # d transitions[cand[t - 1, j], cand[t, i]] += d_pair[t, i, j]
        pairs = cand[moves - 1][:, None, :] * n_labels + cand[moves][:, :, None]
        gradient = {
            "emissions": d_emissions,
            "transitions": np.bincount(pairs.ravel(), weights=d_pair[moves].ravel(),
                                       minlength=n_labels * n_labels
                                       ).reshape(n_labels, n_labels),
            "start": np.bincount(cand[first].ravel(), weights=d_local[first].ravel(),
                                 minlength=n_labels),
            "end": np.bincount(cand[last].ravel(), weights=d_local[last].ravel(),
                               minlength=n_labels)}
        return nll, gradient_in_dtype(scores, gradient)

    def span_log_probabilities(self, scores, layout, labels, starts, ends, blocked_after,
                               fixed=None, force_log=False):
        """The spans' log probabilities under the full chain of the same
        parameters: exact, counting the labellings the lattice prunes, at the
        chain's cost (every tag pair of every move)."""
        return get_structure("chain").span_log_probabilities(
            scores, ChainLayout(layout.lengths), labels, starts, ends, blocked_after, fixed,
            force_log)

    def unreachable_gold(self, scores, layout, gold):
        """The sequences of known and unknown gold labels whose training lattice
        (the gold where known, each unknown token's candidates) holds no
        labelling: a span scheme's ``B-PER ? L-PER`` where the unknown token's
        candidates lack ``I-PER``. A sequence whose gold is all known (or all
        unknown) always has one, and so does any of a token target (no move
        is forbidden: the lemma target's batches, often partly known, take no
        pass); only a span target's batch with a partly known sequence takes
        the lattice's Viterbi pass."""
        if layout.always < 0:
            return None
        gold = np.asarray(gold, dtype=np.int64)
        lengths = layout.lengths
        n_known = np.bincount(np.repeat(np.arange(lengths.shape[0]), lengths),
                              weights=gold >= 0, minlength=lengths.shape[0])
        partial = (n_known > 0) & (n_known < lengths)
        if not partial.any():
            return None
        emissions = self.check(scores, layout)
        cand, counts, cand_scores = self._candidates(emissions, training_layout(layout), gold,
                                                     None)
        slots = np.zeros(cand.shape[0], dtype=np.int64)
        best = np.zeros(layout.n_sequences)
        pruning.lattice_viterbi(cand_scores, cand, counts, lengths, as_f64(scores.start),
                                as_f64(scores.end), as_f64(scores.transitions),
                                slots_of(cand, gold), slots, best)
        return partial & np.isneginf(best)

    def labelling_counts(self, layout, labels, weights, out):
        # a labelling scores as in the full chain (the same parameters)
        get_structure("chain").labelling_counts(layout, labels, weights, out)
