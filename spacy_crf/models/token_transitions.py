"""Combinator: emissions and input-dependent transition scores from the same Docs.

``with_token_transitions(emissions, pair_scores)`` runs an emission model
(``(N, L)``) and a model of hashed token-pair features whose output has one
column per label pair (``(N, L * L)``: CRF++'s ``B`` templates with ``%x``),
and hands both to ``crf_potentials`` as the per-token score ``token_transitions``
(``(N, L, L)``), which a structure with input-dependent transitions adds to
its transitions at every token. Gradients flow back into both.
"""

from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from .grow import LABEL_PAIR_SIZED  # noqa: F401 (the architectures import it from here)
from .potentials import ROW, register_scores

#: the per-token score: label i at token t - 1 then j at t, added to the
#: transitions at row t (row 0 of a sequence unused)
TOKEN_TRANSITIONS = "token_transitions"
register_scores(token_transitions=(ROW, "out", "out"))

OutT = Tuple[Floats2d, Dict[str, Floats3d]]


def with_token_transitions(emissions: Model[List[Doc], Floats2d],
                           pair_scores: Model[List[Doc], Floats2d]) -> Model[List[Doc], OutT]:
    """``(emissions(docs), {"token_transitions": pair_scores(docs)})``, the
    pair scores as ``(N, L, L)``, with both gradients passed back."""
    return Model("crf_with_token_transitions", forward, init=init,
                 layers=[emissions, pair_scores])


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[OutT, Callable]:
    (emissions, back_emissions), (pairs, back_pairs) = (layer(docs, is_train)
                                                        for layer in model.layers)
    L = emissions.shape[1]

    def backprop(d_outputs: OutT) -> List[Doc]:
        d_emissions, d_token = d_outputs
        back_emissions(d_emissions)
        d_pairs = d_token.get(TOKEN_TRANSITIONS)
        back_pairs(np.zeros_like(pairs) if d_pairs is None
                   else d_pairs.reshape(-1, L * L).astype(pairs.dtype, copy=False))
        return []

    return (emissions, {TOKEN_TRANSITIONS: pairs.reshape(-1, L, L)}), backprop


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    for layer in model.layers:
        layer.initialize(X=X)
