"""A chain over each whole doc whose moves across sentence boundaries score apart.

A chain over sentences (``sequence = "sentence"``) forgets the last label of a
sentence when the next one starts; a chain over the doc (``sequence = "doc"``)
remembers it but scores the move into a new sentence as any other move. This
structure chains every token of a doc and gives the moves that cross a
sentence boundary a transition matrix of their own, ``boundary``: the move from
label ``i`` at the last token of a sentence to ``j`` at the first token of the
next scores ``boundary[i, j]``; every other move ``transitions[i, j]``. Chunk or
discourse tags that carry over a boundary (or a segmenter's false splits) keep
their context, and what usually starts a sentence is learned where it happens.
A doc without sentence boundaries is the doc chain.

Config block::

    [components.crf_tagger.structure]
    @structures = "spacy-crf.DocChain.v1"

A chain whose edges come in two kinds is a tree whose heads are the previous
tokens and whose relation groups are the kinds, so it runs on the tree
kernels (``tree_path.py``: belief propagation along a path is
forward-backward, max-product is Viterbi) with

* ``pair[0, c, h] = transitions[h, c]``, ``pair[1, c, h] = boundary[h, c]``,
  group 1 for the edge into the first token of every sentence but the doc's;
* ``root = start`` at each doc's first token, and ``end`` added to the
  emissions of each doc's last token.

Token targets only (a span scheme's constraints act on the chain's own
transitions, E018); no n-best lists (E019) or span confidences. The batch
trainer (``spacy_crf.training.fit``) trains it through the base class's generic shard
likelihood, the perceptron and hinge losses through :meth:`labelling_counts`.
"""

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..features.doc_arrays import batch_sequence_lengths, doc_lengths
from ..models.potentials import CRFScores, register_scores
from ..ragged import sequence_ends
from .base import (BatchLayout, CRFStructure, ComponentView, as_f64, gradient_in_dtype,
                   register_structure)
from .config import StructureSpec, register_spec
from .tree_path import TreeKernelPath, path_forest, with_end

# the moves into the first token of a sentence (not a doc's first): label i then j
register_scores(boundary=("out", "out"))

#: the relation group of a move within a sentence and of one across a boundary
WITHIN, ACROSS = 0, 1


@register_spec("spacy-crf.DocChain.v1", "doc_chain")
def doc_chain_structure() -> StructureSpec:
    """A chain over each doc, with moves across sentence boundaries scored apart."""
    return StructureSpec("doc_chain")


@dataclass
class DocChainLayout(BatchLayout):
    """A batch of doc chains.

    Attributes
    ----------
    lengths : numpy.ndarray
        (D,) int64 tokens of each doc.
    crossing : numpy.ndarray
        (N,) int64: ``ACROSS`` (1) at the first token of every sentence but
        its doc's first, ``WITHIN`` (0) elsewhere.
    """

    crossing: np.ndarray = None
    structure_name = "doc_chain"

    def __post_init__(self) -> None:
        self.lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)
        self.crossing = np.ascontiguousarray(self.crossing, dtype=np.int64)


@register_structure
class DocChainStructure(TreeKernelPath, CRFStructure):
    """Forward-backward and Viterbi over doc chains with boundary transitions."""

    name = "doc_chain"
    params = ("transitions", "boundary", "start", "end")
    layout_class = DocChainLayout

    def layout(self, docs: Sequence, component: ComponentView) -> DocChainLayout:
        # the sentences of a DocBatch are those the features read (one reading)
        sentences = batch_sequence_lengths(docs, True)
        lengths = doc_lengths(docs)
        crossing = np.zeros(int(lengths.sum()), dtype=np.int64)
        sentence_first, _ = sequence_ends(sentences)
        doc_first, _ = sequence_ends(lengths)
        crossing[np.setdiff1d(sentence_first, doc_first)] = ACROSS
        return DocChainLayout(lengths, crossing)

    def _path(self, emissions: np.ndarray, scores: CRFScores, layout: DocChainLayout) -> tuple:
        heads, order = path_forest(layout.lengths)
        # [group, child label, head label]: the move from the head's label to the child's
        pair = np.ascontiguousarray(np.stack([as_f64(scores.transitions).T,
                                              as_f64(scores.boundary).T]))
        return (with_end(emissions, layout.lengths, scores.end), layout.lengths, heads, order,
                pair, layout.crossing, as_f64(scores.start))

    def nll_and_gradient(self, scores, layout, gold):
        nll, d_emissions, d_pair, d_start = self._path_nll(scores, layout, gold)
        _, last = sequence_ends(layout.lengths)
        gradient = {"emissions": d_emissions, "transitions": d_pair[WITHIN].T.copy(),
                    "boundary": d_pair[ACROSS].T.copy(), "start": d_start,
                    "end": d_emissions[last].sum(axis=0)}
        return nll, gradient_in_dtype(scores, gradient)

    def labelling_counts(self, layout, labels, weights, out) -> None:
        """One count per move (in ``transitions`` or ``boundary`` as it crosses
        a sentence boundary or not), and at each doc's first / last label."""
        lengths = layout.lengths
        first, last = sequence_ends(lengths)
        out.start[:] += np.bincount(labels[first], weights=weights[lengths > 0],
                                    minlength=out.start.shape[0])
        out.end[:] += np.bincount(labels[last], weights=weights[lengths > 0],
                                  minlength=out.end.shape[0])
        token_weight = np.repeat(weights, lengths)
        moves = np.ones(labels.shape[0], dtype=bool)
        moves[first] = False
        L = out.emissions.shape[1]
        for group, name in ((WITHIN, "transitions"), (ACROSS, "boundary")):
            t = np.flatnonzero(moves & (layout.crossing == group))
            getattr(out, name)[:] += np.bincount(labels[t - 1] * L + labels[t],
                                                 weights=token_weight[t],
                                                 minlength=L * L).reshape(L, L)
