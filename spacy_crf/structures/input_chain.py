"""The linear chain with input-dependent transitions (``transition_templates``).

The move from label ``i`` at token ``t - 1`` to ``j`` at ``t`` scores
``transitions[i, j] + token_transitions[t, i, j]``, the second from hashed
features of the tokens (``CRFScores.token_transitions``). A chain whose
every edge has a pair matrix of its own is a tree whose heads are the
previous tokens and whose relation groups are the edges themselves, so this
structure runs on the tree kernels (``_kernels/tree.py``: belief propagation
up and down a path is forward-backward; max-product is Viterbi), with

* ``pair[t, c, h] = transitions[h, c] + token_transitions[t, h, c]``,
  relation group ``t`` for the edge into token ``t``;
* ``root = start``, and ``end`` added to the emissions of each last token.

The component selects it for a chain of order 1 whose model has transition
templates (``base.strategy_of(..., token_transitions=True)``). n-best lists and
span probabilities are not defined here yet (E019 / E096 name that).
"""

from typing import Sequence

import numpy as np

from ..models.potentials import CRFScores
from .base import (CRFStructure, ComponentView, as_f64, check_token_transitions, get_structure,
                   gradient_in_dtype, positions_in_sequence, register_structure, sequence_ends,
                   sequence_lengths)
from .chain import ChainLayout
from .tree_path import TreeKernelPath, path_forest, with_end


class InputChainLayout(ChainLayout):
    """Sequence lengths of a batch of chains with input-dependent transitions."""

    structure_name = "chain_input"


@register_structure
class InputTransitionChain(TreeKernelPath, CRFStructure):
    """A first-order chain whose transitions also depend on the tokens."""

    name = "chain_input"
    params = ("transitions", "start", "end")
    layout_class = InputChainLayout
    supports_spans = True

    def layout(self, docs: Sequence, component: ComponentView) -> InputChainLayout:
        return InputChainLayout(sequence_lengths(docs, component))

    def check(self, scores: CRFScores, layout) -> np.ndarray:
        emissions = super().check(scores, layout)
        check_token_transitions(scores, emissions, self.name)
        return emissions

    def _path(self, emissions: np.ndarray, scores: CRFScores, layout) -> tuple:
        lengths = layout.lengths
        heads, order = path_forest(lengths)
        pair = as_f64(np.swapaxes(as_f64(scores.transitions)[None] + as_f64(scores.token_transitions),
                                  1, 2))
        return (with_end(emissions, lengths, scores.end), lengths, heads, order, pair,
                np.arange(emissions.shape[0], dtype=np.int64), as_f64(scores.start))

    def nll_and_gradient(self, scores, layout, gold):
        nll, d_emissions, d_pair, d_start = self._path_nll(scores, layout, gold)
        lengths = layout.lengths
        d_token = np.swapaxes(d_pair, 1, 2)  # [t, head label, child label] = [t, i, j]
        d_token[positions_in_sequence(lengths) == 0] = 0.0  # no edge into a first token
        _, last = sequence_ends(lengths)
        gradient = {"emissions": d_emissions, "transitions": d_token.sum(axis=0),
                    "start": d_start, "end": d_emissions[last].sum(axis=0),
                    "token_transitions": np.ascontiguousarray(d_token)}
        return nll, gradient_in_dtype(scores, gradient)

    def labelling_counts(self, layout, labels, weights, out):
        get_structure("chain").labelling_counts(layout, labels, weights, out)
        t = np.flatnonzero(positions_in_sequence(layout.lengths) > 0)
        token_weight = np.repeat(weights, layout.lengths)
        # d token_transitions[t, y_{t-1}, y_t] = w for every t with a predecessor
        out.token_transitions[t, labels[t - 1], labels[t]] += token_weight[t]
