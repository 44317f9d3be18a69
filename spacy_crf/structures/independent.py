"""The zeroth-order CRF: every token labelled on its own, no label interactions.

What spaCy's ``tagger`` and a maximum-entropy tagger are: a softmax over each
token's emission scores, trained on the same likelihood as the chain (whose
special case it is, with zero transitions). It is the baseline that shows what
the label interactions of a chain add on a task, and the cheapest to decode.
Token targets only: a span scheme needs the moves between tags (E018).

Config block::

    [components.crf_tagger.structure]
    @structures = "spacy-crf.Independent.v1"

Kernels: ``_kernels/independent.py`` (the recurrences, per token, in its
docstring). Every other piece comes from the base class: the batch trainer's
generic shard likelihood, the perceptron and hinge losses (no interaction
counts), and span probabilities' clear error.
"""

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

from .._kernels import independent
from ..models.potentials import CRFScores
from .base import (CRFStructure, ComponentView, gradient_in_dtype, register_structure,
                   sequence_lengths)
from .chain import ChainLayout
from .config import StructureSpec, register_spec


@register_spec("spacy-crf.Independent.v1", "independent")
def independent_structure() -> StructureSpec:
    """A zeroth-order CRF: each token's label on its own (a softmax per token)."""
    return StructureSpec("independent")


@dataclass
class IndependentLayout(ChainLayout):
    """A chain's layout (sequence lengths, docs or sentences as the component's
    ``sequence`` says): here they only group the tokens' log Z."""

    structure_name = "independent"


@register_structure
class IndependentStructure(CRFStructure):
    """Per-token softmax marginals, argmax decoding and cross-entropy."""

    name = "independent"
    params = ()
    layout_class = IndependentLayout

    def layout(self, docs: Sequence, component: ComponentView) -> IndependentLayout:
        return IndependentLayout(sequence_lengths(docs, component))

    def _max_pass(self, emissions, scores, layout, fixed, labels, best):
        independent.best_labels(emissions, layout.lengths, fixed, labels, best)

    def _sum_pass(self, emissions, scores, layout, fixed, log_z, marginals):
        independent.marginals(emissions, layout.lengths, fixed, log_z, marginals)

    def nll_and_gradient(self, scores: CRFScores, layout: IndependentLayout,
                         gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
        emissions = self.check(scores, layout)
        nll = np.zeros(layout.n_sequences)
        d_emissions = np.zeros_like(emissions)
        independent.nll_gradient(emissions, layout.lengths,
                                  np.ascontiguousarray(gold, dtype=np.int64), nll, d_emissions)
        return nll, gradient_in_dtype(scores, {"emissions": d_emissions})

    def labelling_counts(self, layout, labels, weights, out) -> None:
        """No label interactions: a labelling's score is its emissions alone."""
