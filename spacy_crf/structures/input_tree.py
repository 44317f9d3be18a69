"""The tree CRF with input-dependent edge scores (``transition_templates``).

The edge from token ``t`` up to its head scores ``pair[rel[t], c, h] +
token_transitions[t, h, c]`` for child label ``c`` under head label ``h``: the
second from hashed features of token ``t`` (``CRFScores.token_transitions``,
read as head label then child label, as the chain reads previous label then
label). Every edge then has a matrix of its own, so the tree kernels run with
one relation group per token (``_kernels/tree.py``; belief propagation is
exact on any forest); the gradient of an edge's matrix is split back into its
relation group's and its token's. The component selects this structure for a
tree whose model has transition templates (``base.strategy_of(...,
token_transitions=True)``); templates that read the head (``head:NORM``) see
the pair the edge crosses.
"""

from typing import Sequence

import numpy as np

from .._kernels import tree
from ..models.potentials import CRFScores
from .base import (NO_EDGES, ComponentView, as_f64, check_token_transitions, gradient_in_dtype,
                   register_structure)
from .tree import TreeLayout, TreeStructure


class InputTreeLayout(TreeLayout):
    """The forests of a batch, scored with input-dependent edges."""

    structure_name = "tree_input"


@register_structure
class InputTransitionTree(TreeStructure):
    """Belief propagation over dependency forests with a score matrix per edge."""

    name = "tree_input"
    layout_class = InputTreeLayout

    def layout(self, docs: Sequence, component: ComponentView) -> InputTreeLayout:
        base = super().layout(docs, component)
        return InputTreeLayout(base.lengths, base.heads, base.order, base.relations)

    def check(self, scores: CRFScores, layout) -> np.ndarray:
        emissions = super().check(scores, layout)
        check_token_transitions(scores, emissions, self.name)
        return emissions

    def _forest(self, layout: TreeLayout, scores: CRFScores):
        # edge_pair[t, c, h] = pair[rel[t], c, h] + token_transitions[t, h, c]
        edge_pair = as_f64(as_f64(scores.pair)[layout.relations]
                           + np.swapaxes(as_f64(scores.token_transitions), 1, 2))
        return (layout.lengths, layout.heads, layout.order, edge_pair,
                np.arange(layout.heads.shape[0], dtype=np.int64), as_f64(scores.root))

    def _sum_pass(self, emissions, scores, layout, fixed, log_z, marginals):
        forest = self._forest(layout, scores)
        tree.sum_product(emissions, *forest, fixed, log_z, marginals, NO_EDGES,
                         np.zeros(forest[3].shape), np.zeros(emissions.shape[1]), False, False)

    def nll_and_gradient(self, scores, layout, gold):
        emissions = self.check(scores, layout)
        forest = self._forest(layout, scores)
        nll = np.zeros(layout.n_sequences)
        d_emissions = np.zeros_like(emissions)
        d_edges = np.zeros(forest[3].shape)
        d_root = np.zeros(emissions.shape[1])
        tree.nll_gradient(emissions, *forest, np.ascontiguousarray(gold, dtype=np.int64), nll,
                          d_emissions, d_edges, d_root, False)
        d_edges[layout.heads < 0] = 0.0  # a root has no edge
        d_pair = np.zeros(np.shape(scores.pair))
        np.add.at(d_pair, layout.relations, d_edges)
        gradient = {"emissions": d_emissions, "pair": d_pair, "root": d_root,
                    "token_transitions": np.ascontiguousarray(np.swapaxes(d_edges, 1, 2))}
        return nll, gradient_in_dtype(scores, gradient)

    def labelling_counts(self, layout, labels, weights, out):
        super().labelling_counts(layout, labels, weights, out)
        child = np.flatnonzero(layout.heads >= 0)
        token_weight = np.repeat(weights, layout.lengths)
        # d token_transitions[t, y_head(t), y_t] = w on every edge
        out.token_transitions[child, labels[layout.heads[child]], labels[child]] += \
            token_weight[child]
