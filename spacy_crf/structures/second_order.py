"""The second-order linear-chain CRF (``structure = "chain"``, ``order = 2``).

A labelling scores as the first-order chain's (emissions, ``transitions``,
``start``, ``end``) plus ``triples[y_{t-2}, y_{t-1}, y_t]`` for every label
triple, and ``triples[L, y_0, y_1]`` for the first two labels (index ``L``
stands for the start of the sequence).

Inference runs on the equivalent first-order chain over *label pairs*: the
state at token ``t`` is ``(y_{t-1}, y_t)`` (``(START, y_0)`` at the first
token). The pair states are pruned to those seen in training (the pairs of
adjacent gold labels, and the first labels after START), as label patterns
are in Nguyen et al. (2014); every triple between two kept pairs is allowed
and scored. Inference is exact over the pruned space:

* pair emissions ``E[t, (a, b)] = e[t, b] + transitions[a, b]`` (no
  transition into the first token);
* an edge from pair ``(a, b)`` to pair ``(b, c)`` scores ``triples[a, b, c]``
  (pairs that do not share ``b`` are not connected);
* pair start ``start[b]`` for ``(START, b)``, ``-inf`` otherwise; pair end ``end[b]``.

``_kernels/second_order.py`` walks the edges (a token costs one
multiply-add per allowed triple, not per pair of pairs); a sequence that
scaling cannot represent goes through the first-order chain kernel over the
dense pair transitions instead, which is exact in log space.

With transition templates (``CRFScores.token_transitions``) the move from
``a`` to ``b`` into token ``t`` also scores ``token_transitions[t, a, b]``:
the state at ``t`` is that very pair, so it is one more pair emission, and its
gradient is the pair's marginal at ``t``.

Fixed labels (partial gold, forced decoding) become ``-inf`` pair emissions
for the pairs that disagree with them. A sequence whose gold labelling leaves
the pruned space (a pair never seen in training) is treated as unannotated,
by every loss: the component finds those sequences first
(:meth:`SecondOrderChain.unreachable_gold`, W045), and the nll here and the
margin losses (``losses/margin.py``) take any they are still given so too.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from .._kernels import chain, kbest
from .._kernels import second_order as kernels
from .._kernels import shard_nll as shard_kernels
from ..errors import Errors
from ..models.potentials import CRFScores, register_scores
from .base import (NO_EDGES, BatchLayout, CRFStructure, ComponentView, as_f64, check_spans,
                   gradient_in_dtype, labels_or_free, positions_in_sequence, previous_in_sequence,
                   register_structure, sequence_lengths)

# label c after a then b (a = L: b starts the sequence)
register_scores(triples=("start", "out", "out"))

#: cfg key of the kept label pairs: [previous, label], previous -1 for START
PAIRS_KEY = "label_pairs"
#: the most label triples ((L + 1) * L * L) order 2 takes: its triple scores, their
#: gradient and optimizer state, and the pair-graph edges (one per triple before
#: pruning) cost about 60 bytes per triple, so 2**22 triples (160 labels) are
#: about 250 MB; 300 labels would be about 1.6 GB. Documented in E147.
MAX_LABEL_TRIPLES = 2 ** 22


def max_order2_labels(bound: int = MAX_LABEL_TRIPLES) -> int:
    """The most labels whose ``(L + 1) * L * L`` label triples fit in ``bound``."""
    n = int(round(bound ** (1 / 3)))
    while (n + 1) * n * n > bound:
        n -= 1
    while (n + 2) * (n + 1) * (n + 1) <= bound:
        n += 1
    return n


@dataclass
class SecondOrderLayout(BatchLayout):
    """Chains of a batch and the kept label pairs.

    Attributes
    ----------
    pairs : numpy.ndarray
        (P, 2) int64 kept pairs ``(previous, label)``, previous ``-1`` for START.
    """

    pairs: np.ndarray = None
    structure_name = "chain_order2"

    def __post_init__(self) -> None:
        self.lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)
        self.pairs = np.ascontiguousarray(self.pairs, dtype=np.int64).reshape(-1, 2)


def all_pairs(n_labels: int) -> np.ndarray:
    """Every pair, START pairs included (no pruning)."""
    prev = np.repeat(np.arange(-1, n_labels), n_labels)
    return np.stack([prev, np.tile(np.arange(n_labels), n_labels + 1)], axis=1)


def seen_pairs(gold: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The distinct ``(previous, label)`` pairs of fully known adjacent gold labels."""
    if not gold.shape[0]:
        return np.zeros((0, 2), dtype=np.int64)
    first = positions_in_sequence(lengths) == 0
    prev = previous_in_sequence(gold, lengths, fill=-1)
    keep = (gold >= 0) & (first | (prev >= 0))
    return np.unique(np.stack([prev[keep], gold[keep]], axis=1), axis=0)


def allowed_pairs(transitions: np.ndarray, start: np.ndarray) -> np.ndarray:
    """(P, 2) ``(previous, label)`` pairs of allowed moves: ``(-1, b)`` for every
    allowed first label ``b`` and ``(a, b)`` where ``transitions[a, b]``."""
    first = np.flatnonzero(start)
    prev, label = np.nonzero(transitions)
    return np.concatenate([np.stack([np.full_like(first, -1), first], axis=1),
                           np.stack([prev, label], axis=1)]).astype(np.int64)


def allowed_triples(transitions: np.ndarray, start: np.ndarray) -> int:
    """The label triples an order-2 chain over the pairs of
    :func:`allowed_pairs` walks at each token (its pair-graph edges): for each
    middle label ``b``, the pairs into it (START included) times the moves out."""
    transitions = np.asarray(transitions, dtype=bool)
    into = np.asarray(start, dtype=bool).astype(np.int64) + transitions.sum(axis=0)
    return int(into @ transitions.sum(axis=1))


class _Expanded:
    """The first-order chain over the kept pairs of a layout, for given scores: pair
    emissions, and the edges between joining pairs (``_kernels/second_order.py``)."""

    def __init__(self, scores: CRFScores, layout: SecondOrderLayout, emissions: np.ndarray,
                 expand: bool = True):
        # expand=False: the pair graph alone (``pair_score`` for a kernel to expand)
        L = emissions.shape[1]
        pairs = layout.pairs
        if pairs.size and (pairs.max() >= L or pairs.min() < -1):
            raise ValueError(Errors.E095.format(n_labels=L))
        self.L, self.prev, self.label = L, pairs[:, 0], pairs[:, 1]
        P = pairs.shape[0]
        starts = self.prev < 0
        trans, start, end = as_f64(scores.transitions), as_f64(scores.start), as_f64(scores.end)
        self.prev_index = np.where(starts, L, self.prev)
        # E[t, (a, b)] = e[t, b] + transitions[a, b] (a START pair has no transition)
        # + token_transitions[t, a, b] (transition templates: the move into token t)
        self.pair_score = np.ascontiguousarray(
            np.where(starts, 0.0, trans[np.maximum(self.prev, 0), self.label]))
        self.token = scores.token_transitions
        self.emissions = None
        if expand:
            self.emissions = emissions[:, self.label] + self.pair_score
            if self.token is not None:
                inner = np.flatnonzero(~starts)
                self.emissions[:, inner] += as_f64(self.token)[:, self.prev[inner],
                                                                self.label[inner]]
            self.emissions = np.ascontiguousarray(self.emissions)
        # edges (a, b) -> (b, c), scored triples[a, b, c]
        self.src, self.dst = (np.ascontiguousarray(x, dtype=np.int64) for x in
                              np.nonzero(self.label[:, None] == self.prev[None, :]))
        self.weight = np.ascontiguousarray(as_f64(scores.triples)[
            self.prev_index[self.src], self.label[self.src], self.label[self.dst]])
        self.in_edges = np.argsort(self.dst, kind="stable").astype(np.int64)
        self.in_ptr = np.searchsorted(self.dst[self.in_edges], np.arange(P + 1)).astype(np.int64)
        self.out_edges = np.argsort(self.src, kind="stable").astype(np.int64)
        self.out_ptr = np.searchsorted(self.src[self.out_edges], np.arange(P + 1)).astype(np.int64)
        self.start = np.ascontiguousarray(np.where(starts, start[self.label], -np.inf))
        self.end = np.ascontiguousarray(end[self.label])

    def mask(self, layout: SecondOrderLayout, fixed: Optional[np.ndarray]) -> np.ndarray:
        """The pair emissions with ``-inf`` where a pair disagrees with ``fixed``."""
        if fixed is None or not (np.asarray(fixed) >= 0).any():
            return self.emissions
        return self._masked(self.emissions, layout.lengths, fixed)

    def _masked(self, emissions: np.ndarray, lengths: np.ndarray, fixed: np.ndarray) -> np.ndarray:
        fixed = np.asarray(fixed, dtype=np.int64)
        before = previous_in_sequence(fixed, lengths, fill=-1)
        bad = (fixed[:, None] >= 0) & (self.label[None, :] != fixed[:, None])
        bad |= (before[:, None] >= 0) & (self.prev[None, :] != before[:, None])
        return np.where(bad, -np.inf, emissions)

    def viterbi(self, emissions: np.ndarray, lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        states = np.zeros(emissions.shape[0], dtype=np.int64)
        best = np.zeros(lengths.shape[0])
        kernels.viterbi(emissions, lengths, self.src, self.weight, self.in_ptr, self.in_edges,
                        self.start, self.end, states, best)
        return states, best

    def sum_pass(self, emissions: np.ndarray, lengths: np.ndarray):
        """log Z (S,), pair marginals (N, P), expected edge (E,), start and end (P,) counts."""
        P = emissions.shape[1]
        log_z = np.zeros(lengths.shape[0])
        marginals = np.zeros_like(emissions)
        edges, starts, ends = np.zeros(self.src.shape[0]), np.zeros(P), np.zeros(P)
        status = np.zeros(lengths.shape[0], dtype=np.int64)
        kernels.sum_pass(emissions, lengths, self.src, self.dst, self.weight, self.in_ptr,
                         self.in_edges, self.out_ptr, self.out_edges, self.start, self.end,
                         log_z, marginals, edges, starts, ends, status)
        if status.any():
            self._exactly(emissions, lengths, status.astype(bool), log_z, marginals, edges,
                          starts, ends)
        return log_z, marginals, edges, starts, ends

    def dense_transitions(self) -> np.ndarray:
        """(P, P) pair transitions: the edge scores, ``-inf`` between pairs that do not join."""
        P = self.prev.shape[0]
        dense = np.full((P, P), -np.inf)
        dense[self.src, self.dst] = self.weight
        return dense

    def _exactly(self, emissions, lengths, redo, log_z, marginals, edges, starts, ends) -> None:
        """The flagged sequences through the first-order kernel over dense pair
        transitions (it falls back to log space where scaling cannot hold)."""
        P = emissions.shape[1]
        rows = np.repeat(redo, lengths)
        dense = self.dense_transitions()
        sub_z = np.zeros(int(redo.sum()))
        sub_marginals = np.zeros((int(rows.sum()), P))
        sub_edges = np.zeros((P, P))
        chain.forward_backward(np.ascontiguousarray(emissions[rows]), lengths[redo], dense,
                               self.start, self.end, np.full(int(rows.sum()), -1, dtype=np.int64),
                               sub_z, sub_marginals, sub_edges, starts, ends, NO_EDGES, False,
                               False)
        log_z[redo] = sub_z
        marginals[rows] += sub_marginals
        edges += sub_edges[self.src, self.dst]

    def pair_of(self) -> np.ndarray:
        """(L + 1, L) int64: the index of pair ``(previous, label)`` at
        ``[previous + 1, label]`` (row 0: START), -1 where the pair is not kept."""
        table = np.full((self.L + 1, self.L), -1, dtype=np.int64)
        table[self.prev + 1, self.label] = np.arange(self.prev.shape[0])
        return table

    def token_marginals(self, pair_marginals: np.ndarray) -> np.ndarray:
        # the sum over the pairs ending in each label, as sums of column runs:
        # np.add.at took 8% of decoding with confidences, and a product with the
        # pairs' one-hot labels ran on BLAS threads, twice as slow where the
        # cores were busy (a (N, P) @ (P, L) product is too small to share)
        order = np.argsort(self.label, kind="stable")
        present, first = np.unique(self.label[order], return_index=True)
        out = np.zeros((pair_marginals.shape[0], self.L))
        if len(order) and pair_marginals.shape[0]:
            out[:, present] = np.add.reduceat(pair_marginals[:, order], first, axis=1)
        return out

    def gradient(self, marginals, edges, starts, ends) -> Dict[str, np.ndarray]:
        """Expected counts of every parameter from pair marginals and counts."""
        d = {"emissions": self.token_marginals(marginals),
             **self.pair_gradient(marginals.sum(axis=0), edges, starts, ends)}
        if self.token is not None:
            L = self.L
            inner = self.prev >= 0
            # d token_transitions[t, a, b] = P(y_{t-1} = a, y_t = b): the pair's marginal at t
            d["token_transitions"] = np.zeros((marginals.shape[0], L, L))
            np.add.at(d["token_transitions"].transpose(1, 2, 0),
                      (self.prev[inner], self.label[inner]), marginals[:, inner].T)
        return d

    def pair_gradient(self, per_pair, edges, starts, ends) -> Dict[str, np.ndarray]:
        """Expected counts of the label interactions (``transitions``, ``start``,
        ``end``, ``triples``) from the pairs' summed marginals and the edge,
        start and end counts."""
        L = self.L
        d = {"transitions": np.zeros((L, L)), "start": np.zeros(L), "end": np.zeros(L),
             "triples": np.zeros((L + 1, L, L))}
        inner = self.prev >= 0
        np.add.at(d["transitions"], (self.prev[inner], self.label[inner]), per_pair[inner])
        np.add.at(d["start"], self.label, starts)
        np.add.at(d["end"], self.label, ends)
        np.add.at(d["triples"], (self.prev_index[self.src], self.label[self.src],
                                 self.label[self.dst]), edges)
        return d


@register_structure
class SecondOrderChain(CRFStructure):
    """Forward-backward and Viterbi over label pairs (see the module docstring)."""

    name = "chain_order2"
    params = ("transitions", "start", "end", "triples")
    layout_class = SecondOrderLayout
    supports_spans = True
    supports_n_best = True
    supports_span_probabilities = True
    prunes_labellings = True

    def initialize_cfg(self, component: ComponentView, get_examples: Callable) -> Dict[str, Any]:
        """``label_pairs``: the pairs of adjacent gold labels of the training data.

        Raises
        ------
        ValueError
            E147 when the labels are too many for order 2's memory
            (:data:`MAX_LABEL_TRIPLES`), before the corpus is read.
        """
        n_labels = len(component.labels)
        if (n_labels + 1) * n_labels * n_labels > MAX_LABEL_TRIPLES:
            raise ValueError(Errors.E147.format(name=component.name, n=n_labels,
                                                triples=(n_labels + 1) * n_labels ** 2))
        gold, lengths = [], []
        for eg in get_examples():
            if len(eg.predicted):
                gold.append(component.target.gold_ids(eg))
                lengths.append(sequence_lengths([eg.predicted], component))
        pairs = (seen_pairs(np.concatenate(gold), np.concatenate(lengths)) if gold
                 else np.zeros((0, 2), dtype=np.int64))
        if component.target.is_span_target:
            # every pair the scheme allows, seen or not: any well-formed tagging
            # is then a path, whatever a partly annotated corpus showed (the gold
            # of later updates, entities kept by forced decoding); pairs the
            # scheme forbids are the ones worth pruning
            allowed, allowed_start, _ = component.target.constraints()
            pairs = np.unique(np.concatenate([pairs, allowed_pairs(allowed, allowed_start)]),
                              axis=0)
        return {"relations": [], PAIRS_KEY: pairs.tolist()}

    def grow_cfg(self, component: ComponentView, n_old: int, n_new: int) -> Dict[str, Any]:
        """Every pair with a new label joins the kept pairs (``(a, new)``,
        ``(new, b)``, START first included), so the new labels can be learned;
        while a label is not learned its emissions are ``-inf``, so its pairs
        change no path. E147 if the labels become too many for order 2."""
        if (n_new + 1) * n_new * n_new > MAX_LABEL_TRIPLES:
            raise ValueError(Errors.E147.format(name=component.name, n=n_new,
                                                triples=(n_new + 1) * n_new ** 2))
        pairs = component.cfg.get(PAIRS_KEY)
        if not pairs:  # no pruning: every pair, old and new
            return {}
        every = all_pairs(n_new)
        new = every[(every >= n_old).any(axis=1)]
        return {PAIRS_KEY: list(pairs) + new.tolist()}

    def layout(self, docs: Sequence, component: ComponentView) -> SecondOrderLayout:
        pairs = component.cfg.get(PAIRS_KEY)
        if not pairs:
            pairs = all_pairs(len(component.labels))
        return SecondOrderLayout(sequence_lengths(docs, component), np.asarray(pairs))

    def _expand(self, scores: CRFScores, layout: SecondOrderLayout) -> _Expanded:
        return _Expanded(scores, layout, self.check(scores, layout))

    def viterbi(self, scores, layout, fixed=None):
        x = self._expand(scores, layout)
        states, best = x.viterbi(x.mask(layout, fixed), layout.lengths)
        return x.label[states] if len(x.label) else states, best

    def n_best(self, scores, layout, k, fixed=None):
        """The k-best kernel over the pair graph (one pair path per labelling)."""
        if k < 1:
            raise ValueError(Errors.E065.format(k=k, structure=self.name))
        x = self._expand(scores, layout)
        emissions = np.ascontiguousarray(x.mask(layout, fixed))
        states = np.zeros((k, emissions.shape[0]), dtype=np.int64)
        best = np.zeros((layout.n_sequences, k))
        counts = np.zeros(layout.n_sequences, dtype=np.int64)
        # over the pair graph's edges (a dense pair matrix read P**2 a token)
        kbest.kbest_edges(emissions, layout.lengths, x.src, x.weight, x.in_ptr, x.in_edges,
                          x.start, x.end, k, states, best, counts)
        return (x.label[states] if len(x.label) else states), best, counts

    def span_log_probabilities(self, scores, layout, labels, starts, ends, blocked_after,
                               fixed=None, force_log=False):
        """One constrained forward-backward per sequence: each span's mass from
        alpha at its start, the pair path of its labels and beta at its end, the
        token after it kept off the labels that would continue it
        (``blocked_after[last label of the span, next label]``); see
        ``_kernels/second_order.py``. Linear in tokens however many spans
        (clamping a copy of the sequence per span was quadratic)."""
        emissions = self.check(scores, layout)
        lengths = layout.lengths
        starts, ends, labels = (np.ascontiguousarray(a, dtype=np.int64)
                                for a in (starts, ends, labels))
        blocked_after = np.ascontiguousarray(blocked_after, dtype=np.bool_)
        check_spans(labels, starts, ends, blocked_after, lengths, emissions.shape[0],
                    emissions.shape[1])
        x = self._expand(scores, layout)
        log_z = np.zeros(lengths.shape[0])
        log_p = np.zeros(starts.shape[0])
        kernels.span_log_probabilities(
            np.ascontiguousarray(x.mask(layout, labels_or_free(emissions.shape[0], fixed))),
            lengths, x.src, x.dst, x.weight, x.in_ptr, x.in_edges, x.out_ptr, x.out_edges,
            x.start, x.end, x.pair_of(), x.label, labels, starts, ends, blocked_after,
            bool(force_log), log_z, log_p)
        return log_p, log_z

    def marginals(self, scores, layout, fixed=None):
        x = self._expand(scores, layout)
        log_z, pair_marginals, *_ = x.sum_pass(x.mask(layout, fixed), layout.lengths)
        return x.token_marginals(pair_marginals), log_z

    def unreachable_gold(self, scores, layout, gold):
        """The sequences whose known gold labels no path over the kept pairs
        agrees with. A sequence whose gold is all known needs no pass: it is
        lost where one of its pairs (``(START, y_0)`` included) is not kept.
        Only where a batch has a sequence with unknown labels among known ones
        does a Viterbi pass clamped to them say whether the kept pairs join them."""
        gold = np.asarray(gold, dtype=np.int64)
        lengths = layout.lengths
        L = np.shape(scores.emissions)[1]
        sequence = np.repeat(np.arange(lengths.shape[0]), lengths)
        kept = np.zeros((L + 1, L), dtype=bool)  # [previous + 1, label], row 0 START
        kept[layout.pairs[:, 0] + 1, layout.pairs[:, 1]] = True
        before = previous_in_sequence(gold, lengths, fill=-1)
        first = positions_in_sequence(lengths) == 0
        # the pairs of two known labels, and of START and a known first label
        t = np.flatnonzero((gold >= 0) & (first | (before >= 0)))
        off = t[~kept[before[t] + 1, gold[t]]]
        lost = np.bincount(sequence[off], minlength=lengths.shape[0]) > 0
        n_known = np.bincount(sequence, weights=gold >= 0, minlength=lengths.shape[0])
        partial = (n_known > 0) & (n_known < lengths) & ~lost
        if partial.any():
            _, best = self.viterbi(scores, layout, gold)
            lost |= partial & np.isneginf(best)
        return lost

    def nll_and_gradient(self, scores, layout, gold):
        x = self._expand(scores, layout)
        gold = np.ascontiguousarray(gold, dtype=np.int64)
        free = x.sum_pass(x.emissions, layout.lengths)
        clamped = x.sum_pass(x.mask(layout, gold), layout.lengths)
        lost = ~np.isfinite(clamped[0]) & np.isfinite(free[0])
        if lost.any():  # gold outside the kept pairs: those sequences count as unannotated
            gold = np.where(np.repeat(lost, layout.lengths), -1, gold)
            clamped = x.sum_pass(x.mask(layout, gold), layout.lengths)
        with np.errstate(invalid="ignore"):
            nll = free[0] - clamped[0]
        # no labelling at all in the kept pairs (log Z = -inf) costs nothing; a NaN
        # or +inf log Z is divergence and stays in the loss, for E009 / E034
        nll[np.isneginf(free[0])] = 0.0
        d_free, d_gold = x.gradient(*free[1:]), x.gradient(*clamped[1:])
        return nll, gradient_in_dtype(scores, {k: d_free[k] - d_gold[k] for k in d_free})

    # -- the batch trainer -----------------------------------------------------

    def shard_nll(self, rows, layout, gold, params, grads, workspace):
        """:meth:`nll_and_gradient` of a featurized shard, fused into two passes of
        ``_kernels/second_order.shard_pass`` over the token emissions: no
        ``(N, P)`` pair array is made, the passes hold no GIL (the shards run
        side by side), and a sequence whose gold is all known is scored along
        its one path instead of a clamped pass. A shard whose gold leaves the
        kept pairs goes the generic way, which counts those sequences as
        unannotated."""
        emissions, d_emissions, nll = workspace
        x = _Expanded(CRFScores(emissions, {name: params[name] for name in self.params}),
                      layout, emissions, expand=False)
        gold = np.ascontiguousarray(gold, dtype=np.int64)
        shard_kernels.gather_zeroed(params["W"], params["b"], rows, emissions, d_emissions)
        P = x.label.shape[0]
        per_pair, edges, starts, ends = (np.zeros(P), np.zeros(x.src.shape[0]), np.zeros(P),
                                         np.zeros(P))
        pair_of = x.pair_of()
        log_z = []
        for clamp, sign in ((False, 1.0), (True, -1.0)):
            z = np.zeros(layout.lengths.shape[0])
            status = np.zeros(layout.lengths.shape[0], dtype=np.int64)
            kernels.shard_pass(emissions, layout.lengths, gold, clamp, x.label, x.prev,
                               pair_of, x.pair_score, x.src, x.dst, x.weight, x.in_ptr,
                               x.in_edges, x.out_ptr, x.out_edges, x.start, x.end, sign, z,
                               d_emissions, per_pair, edges, starts, ends, status)
            if status.any():  # where scaling cannot hold: the exact pass, for those alone
                redo = status.astype(bool)
                z[redo] = self._exact_counts(x, emissions, layout.lengths, redo,
                                             gold if clamp else None, sign, d_emissions,
                                             (per_pair, edges, starts, ends))
            log_z.append(z)
        free, clamped = log_z
        if (~np.isfinite(clamped) & np.isfinite(free)).any():
            return CRFStructure.shard_nll(self, rows, layout, gold, params, grads, workspace)
        with np.errstate(invalid="ignore"):
            np.subtract(free, clamped, out=nll)
        # as nll_and_gradient: no labelling at all in the kept pairs costs nothing
        nll[np.isneginf(free)] = 0.0
        shard_kernels.scatter_gradient(d_emissions, rows, grads["W"], grads["b"])
        d = x.pair_gradient(per_pair, edges, starts, ends)
        for name in self.params:
            grads[name] += d[name]
        return float(nll.sum())

    @staticmethod
    def _exact_counts(x: _Expanded, emissions: np.ndarray, lengths: np.ndarray,
                      redo: np.ndarray, gold: Optional[np.ndarray], sign: float,
                      d_emissions: np.ndarray, sums: Tuple[np.ndarray, ...]) -> np.ndarray:
        """log Z of the sequences ``redo`` by :meth:`_Expanded.sum_pass` (exact
        where scaling fails), ``sign`` times their counts added into
        ``d_emissions`` and ``sums`` (per pair, edges, starts, ends)."""
        rows = np.repeat(redo, lengths)
        sub_lengths = lengths[redo]
        pairs = emissions[rows][:, x.label] + x.pair_score
        if gold is not None:
            pairs = x._masked(pairs, sub_lengths, gold[rows])
        log_z, marginals, edges, starts, ends = x.sum_pass(np.ascontiguousarray(pairs),
                                                           sub_lengths)
        d_emissions[rows] += sign * x.token_marginals(marginals)
        for total, part in zip(sums, (marginals.sum(axis=0), edges, starts, ends)):
            total += sign * part
        return log_z

    def labelling_counts(self, layout, labels, weights, out):
        get_first_order().labelling_counts(layout, labels, weights, out)
        lengths = layout.lengths
        L = out.emissions.shape[1]
        token_weight = np.repeat(weights, lengths)
        # the token before and two before, L (START) where the sequence has none
        before = previous_in_sequence(labels, lengths, fill=L)
        two_before = previous_in_sequence(labels, lengths, fill=L, steps=2)
        t = np.flatnonzero(positions_in_sequence(lengths) > 0)
        # d triples[y_{t-2}, y_{t-1}, y_t] = w for every t with a predecessor
        np.add.at(out.triples, (two_before[t], before[t], labels[t]), token_weight[t])
        if out.token_transitions is not None:  # d token_transitions[t, y_{t-1}, y_t] = w
            out.token_transitions[t, labels[t - 1], labels[t]] += token_weight[t]


def get_first_order() -> CRFStructure:
    from .base import get_structure

    return get_structure("chain")
