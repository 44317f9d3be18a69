"""Combinator: emissions and input-dependent transition scores from the same Docs.

``with_token_transitions(emissions, pair_scores)`` runs an emission model
(``(N, L)``) and a model of hashed token-pair features whose output has one
column per label pair (``(N, L * L)``: CRF++'s ``B`` templates with ``%x``),
and hands both to ``crf_potentials``, which adds the second to the transitions
at every token. Gradients flow back into both.
"""

from typing import Callable, List, Optional, Tuple

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d

#: attrs key marking a layer whose output has one column per label pair (nO = L * L)
LABEL_PAIR_SIZED = "crf_label_pair_sized"

OutT = Tuple[Floats2d, Floats2d]


def with_token_transitions(emissions: Model[List[Doc], Floats2d],
                           pair_scores: Model[List[Doc], Floats2d]) -> Model[List[Doc], OutT]:
    """``(emissions(docs), pair_scores(docs))`` with both gradients passed back."""
    return Model("crf_with_token_transitions", forward, init=init,
                 layers=[emissions, pair_scores])


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[OutT, Callable]:
    (emissions, back_emissions), (pairs, back_pairs) = (layer(docs, is_train)
                                                        for layer in model.layers)

    def backprop(d_outputs: OutT) -> List[Doc]:
        d_emissions, d_pairs = d_outputs
        back_emissions(d_emissions)
        back_pairs(d_pairs)
        return []

    return (emissions, pairs), backprop


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    for layer in model.layers:
        layer.initialize(X=X)
