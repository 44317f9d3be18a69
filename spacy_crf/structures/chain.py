"""The linear-chain CRF: one chain per sentence (per doc without sentence boundaries).

Parameters: ``transitions[i, j]`` (label ``i`` then ``j``), ``start[j]``,
``end[j]``. Kernels: ``_kernels/chain.py`` (forward-backward, Viterbi, the
likelihood), ``_kernels/kbest.py`` (n-best), ``_kernels/span_probabilities.py``
(span probabilities) and ``_kernels/shard_nll.py`` (the batch trainer).
"""

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.util import registry

from .._kernels import chain, kbest, span_probabilities
from .._kernels import shard_nll as shard_kernels
from ..errors import Errors
from ..models.potentials import CRFScores, register_scores
from ..util import is_count
from .base import (NO_EDGES, BatchLayout, CRFStructure, ComponentView, as_f64, check_spans,
                   gradient_in_dtype, labels_or_free, positions_in_sequence, register_structure,
                   sequence_ends, sequence_lengths)
from .config import TRANSITION_BUCKETS, StructureSpec, register_spec, transition_settings
from .second_order import allowed_triples

# a chain's label-interaction scores: label i then j; the first label; the last
register_scores(transitions=("out", "out"), start=("out",), end=("out",))

#: the chain's orders, and the strategy that runs each
ORDERS = {1: "chain", 2: "chain_order2"}
#: the most label triples (their scheme allows) a span target's order ``null``
#: takes order 2 with: 1,622 for 6 BILUO types, 1,762 for 8 BIO types (UNER's 3
#: types: 326 triples). Above, order 1 (see :func:`_span_order_for_labels`)
DEFAULT_ORDER2_TRIPLES = 2_000
#: the most tags a span target's order ``null`` takes the full chain with (order
#: 1 or 2); above, the pruned chain (each token's best tags and O). On
#: CoNLL-2000's 45 chunk tags the full chain scored 0.46 F1 higher and decoded
#: 1.3x as fast; on 269 synthetic tags (100 types) it decoded 3x slower
DEFAULT_PRUNED_SPAN_LABELS = 200
#: the candidates it keeps there: on those 45 tags, 8 cost 0.46 F1 and 16 0.04
#: (93.24 and 93.66 against 93.70), decoding as fast (the margin keeps fewer)
SPAN_CANDIDATES = 16
#: the strategy of a chain that prunes each token's labels (``pruned_chain.py``)
PRUNED = "pruned_chain"
PRUNED_BLOCK = "spacy-crf.PrunedChain.v1"
#: the margin it takes there (``pruned_chain.py``'s ``margin``): on UD
#: Greek GDT and EWT morphology, the labels decoded at 6 are those decoded
#: without one, with 4.5 and 3.3 labels a token kept of 8 (at 4, GDT's UFeats
#: loses 0.04)
PRUNED_MARGIN = 6.0


@register_spec("spacy-crf.Chain.v1", "chain")
def chain_structure(order: Optional[int] = None, transition_templates: Optional[List[str]] = None,
                    transition_buckets: int = TRANSITION_BUCKETS) -> StructureSpec:
    """A linear-chain CRF over each sequence (``sequence``: a doc or a sentence).

    Parameters
    ----------
    order : int, optional
        ``1``: label pairs are scored (``structures/chain.py``); ``2``: label
        triples too, over the label pairs seen in training, or for a span
        target every pair its scheme allows (``structures/second_order.py``).
        ``null`` (the default): 2 for a span target (``ents``, ``spans:KEY``)
        whose model scores order 2 and whose scheme allows at most
        :data:`DEFAULT_ORDER2_TRIPLES` label triples (up to 6 BILUO or 8 BIO
        types; chosen at ``initialize``, when the labels are known, and saved),
        1 above, and above :data:`DEFAULT_PRUNED_SPAN_LABELS` tags (50 BILUO
        types) the pruned chain below; for a target whose labels come by the
        hundred (``morph``), order 1 over each token's best labels
        (``spacy-crf.PrunedChain.v1`` with ``margin = 6``:
        ``structures/pruned_chain.py``); 1
        otherwise. A span scheme allows few
        label pairs, so the triples over them cost little: on UNER English, +0.55 test F1 over 7 plain-loop
        runs and +1.17 through ``spacy train`` (filled config), for 19%
        slower decoding; on EWT UPOS, whose 17 tags follow one another
        freely, +0.15 for 4 times the training time.
    transition_templates : list of str, optional
        Input-dependent transitions (CRF++'s ``B`` templates with ``%x``):
        templates evaluated at each token (e.g. ``"NORM[-1]|NORM[0]"``, the
        word pair the move crosses) whose hashed weights score every label
        pair, added to the transitions into that token
        (``structures/input_chain.py`` at order 1); the model must be a
        ``spacy-crf.FeatureCRF``. Trained by ``spacy train`` and
        ``nlp.update``.
    transition_buckets : int
        Rows of their hashed table (each row holds a weight per label pair).
    """
    transitions = transition_settings(transition_templates, transition_buckets)
    if order is None:
        return StructureSpec("chain", {"order": None, **transitions}, key=ORDERS[1],
                             by_component=partial(_order_for, transitions))
    if not is_count(order) or order not in ORDERS:
        raise ValueError(Errors.E094.format(order=repr(order), structure="chain",
                                            available=", ".join(map(str, ORDERS))))
    return StructureSpec("chain", {"order": order, **transitions}, key=ORDERS[order])


def _order_for(transitions: Dict[str, Any], target: Any,
               scorable: Optional[Sequence[str]]) -> StructureSpec:
    """``order = null`` chosen for a component (see :func:`chain_structure`):
    order 2 for a span target (to be chosen again by its labels at
    ``initialize``), the pruned chain of order 1 for a target whose
    labels come by the hundred (``Target.many_labels``: the morphology), order
    1 otherwise."""
    def allowed(key: str) -> bool:
        return scorable is None or key in scorable

    prunable = not transitions.get("transition_templates") and allowed(PRUNED)
    if target.is_span_target and allowed(ORDERS[2]):
        spec = chain_structure(2, **transitions)
        return replace(spec, by_labels=partial(_span_order_for_labels, transitions, prunable))
    if target.many_labels and prunable:
        return pruned_chain_spec()
    return chain_structure(1, **transitions)


def pruned_chain_spec(**settings: Any) -> StructureSpec:
    """The pruned chain as ``order = null`` picks it (``margin = 6``, and
    ``settings``): the block from the registry, as its module builds on this one."""
    return registry.structures.get(PRUNED_BLOCK)(margin=PRUNED_MARGIN, **settings)


def _span_order_for_labels(transitions: Dict[str, Any], prunable: bool,
                           target: Any) -> StructureSpec:
    """The order ``null`` gives a span target with its labels (at
    ``initialize``): 2 where its scheme allows at most
    :data:`DEFAULT_ORDER2_TRIPLES` label triples, 1 above, and over
    :data:`DEFAULT_PRUNED_SPAN_LABELS` tags the pruned chain, where the model
    can score it (``prunable``). Order 2 walks every allowed triple at every
    token, and their number grows with the cube of the types: 618 for 4 BILUO
    types, 29,486 for 18 (OntoNotes), which decoded 22 times slower; order 1
    over 18 types decodes about as fast as order 2 over 4, but its label pairs
    grow with the square of the types: 1,000 types (4,001 tags) trained at 45
    tokens/s."""
    allowed, allowed_start, _ = target.constraints()
    if prunable and allowed.shape[0] > DEFAULT_PRUNED_SPAN_LABELS:
        return pruned_chain_spec(candidates=SPAN_CANDIDATES)
    order = 2 if allowed_triples(allowed, allowed_start) <= DEFAULT_ORDER2_TRIPLES else 1
    return chain_structure(order, **transitions)


@dataclass
class ChainLayout(BatchLayout):
    """Sequence lengths of a batch of chains."""

    structure_name = "chain"

    def __post_init__(self) -> None:
        self.lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)


@register_structure
class ChainStructure(CRFStructure):
    """Forward-backward, Viterbi, n-best and span probabilities over chains."""

    name = "chain"
    params = ("transitions", "start", "end")
    layout_class = ChainLayout
    supports_spans = True
    supports_n_best = True
    supports_span_probabilities = True

    def layout(self, docs: Sequence, component: ComponentView) -> ChainLayout:
        return ChainLayout(sequence_lengths(docs, component))

    @staticmethod
    def _interactions(scores: CRFScores) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        return as_f64(scores.transitions), as_f64(scores.start), as_f64(scores.end)

    def _max_pass(self, emissions, scores, layout, fixed, labels, best):
        chain.viterbi(emissions, layout.lengths, *self._interactions(scores), fixed, labels, best)

    def _sum_pass(self, emissions, scores, layout, fixed, log_z, marginals):
        L = emissions.shape[1]
        chain.forward_backward(emissions, layout.lengths, *self._interactions(scores), fixed,
                               log_z, marginals, np.zeros((L, L)), np.zeros(L), np.zeros(L),
                               NO_EDGES, False, False)

    def nll_and_gradient(self, scores, layout, gold):
        emissions = self.check(scores, layout)
        L = emissions.shape[1]
        nll = np.zeros(layout.n_sequences)
        grad = {"emissions": np.zeros_like(emissions), "transitions": np.zeros((L, L)),
                "start": np.zeros(L), "end": np.zeros(L)}
        chain.nll_gradient(emissions, layout.lengths, *self._interactions(scores),
                           np.ascontiguousarray(gold, dtype=np.int64), nll, grad["emissions"],
                           grad["transitions"], grad["start"], grad["end"], False)
        return nll, gradient_in_dtype(scores, grad)

    def n_best(self, scores, layout, k, fixed=None):
        if k < 1:
            raise ValueError(Errors.E065.format(k=k, structure=self.name))
        emissions = self.check(scores, layout)
        labels = np.zeros((k, emissions.shape[0]), dtype=np.int64)
        best = np.zeros((layout.n_sequences, k))
        counts = np.zeros(layout.n_sequences, dtype=np.int64)
        kbest.kbest_viterbi(emissions, layout.lengths, *self._interactions(scores),
                            labels_or_free(emissions.shape[0], fixed), k, labels, best, counts)
        return labels, best, counts

    def span_log_probabilities(self, scores, layout, labels, starts, ends, blocked_after,
                               fixed=None, force_log=False):
        emissions = self.check(scores, layout)
        L = emissions.shape[1]
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        blocked_after = np.ascontiguousarray(blocked_after, dtype=np.bool_)
        check_spans(labels, starts, ends, blocked_after, layout.lengths, emissions.shape[0], L)
        log_p = np.zeros(starts.shape[0])
        log_z = np.zeros(layout.n_sequences)
        span_probabilities.span_log_probabilities(
            emissions, layout.lengths, *self._interactions(scores),
            labels_or_free(emissions.shape[0], fixed), labels, starts, ends, blocked_after,
            log_z, log_p, force_log)
        return log_p, log_z

    def labelling_counts(self, layout, labels, weights, out):
        lengths = layout.lengths
        L = out.emissions.shape[1]
        token_weight = np.repeat(weights, lengths)
        first, last = sequence_ends(lengths)
        # d start(y_first) = w, d end(y_last) = w
        out.start += np.bincount(labels[first], weights=weights[lengths > 0], minlength=L)
        out.end += np.bincount(labels[last], weights=weights[lengths > 0], minlength=L)
        t = np.flatnonzero(positions_in_sequence(lengths) > 0)
        # d T(y_{t-1}, y_t) = w for every t with a predecessor in its sequence
        out.transitions += np.bincount(labels[t - 1] * L + labels[t], weights=token_weight[t],
                                       minlength=L * L).reshape(L, L)

    def shard_nll(self, rows, layout, gold, params, grads, workspace):
        emissions, d_emissions, nll = workspace
        return shard_kernels.chain_nll(rows, layout.lengths, gold, params["W"], params["b"],
                                       params["transitions"], params["start"], params["end"],
                                       emissions, d_emissions, nll, grads["W"], grads["b"],
                                       grads["transitions"], grads["start"], grads["end"])
