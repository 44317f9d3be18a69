"""Combinator: two CRF models side by side, for a structure that runs two CRFs.

``two_experts(first, second)`` runs both models (Docs -> CRFScores) on the same
batch and returns one :class:`CRFScores` whose emissions are the two models'
emissions side by side, ``(N, 2L)``: columns ``[0, L)`` are ``first``'s,
``[L, 2L)`` ``second``'s. The label-interaction parameters are taken by name
from the model that owns them (``CHAIN_PARAMS`` from ``first``, the rest from
``second``). Gradients go back the same way. The ``chain_tree`` structure wraps
the component's model with it (a chain reading the words, a tree reading the
words and the parse) and splits the columns again.
"""

from dataclasses import replace
from typing import Callable, List, Optional, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from .potentials import OPTIONAL_PARAMS, PARAMS, CRFScores

NAME = "crf_two_experts"
#: the parameters read from the first model; every other one comes from the second
CHAIN_PARAMS = ("transitions", "start", "end")


def two_experts(first: Model[List[Doc], CRFScores],
                second: Model[List[Doc], CRFScores]) -> Model[List[Doc], CRFScores]:
    """Both models' scores, their emissions side by side."""
    return Model(NAME, forward, init=init, layers=[first, second])


def is_two_experts(model: Model) -> bool:
    return model.name == NAME


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[CRFScores, Callable]:
    first, second = model.layers
    (a, back_a), (b, back_b) = first(docs, is_train), second(docs, is_train)
    L = a.emissions.shape[1]
    scores = CRFScores(np.hstack([a.emissions, b.emissions]), **_owned(a, b))

    def backprop(d_scores: CRFScores) -> List[Doc]:
        # each model gets its emission columns and the gradients of the parameters it owns
        grads = {name: getattr(d_scores, name) for name in PARAMS + OPTIONAL_PARAMS}
        first_grads = {name: (g if name in CHAIN_PARAMS else None) for name, g in grads.items()}
        second_grads = {name: (None if name in CHAIN_PARAMS else g) for name, g in grads.items()}
        for back, columns, params in ((back_a, slice(0, L), first_grads),
                                      (back_b, slice(L, 2 * L), second_grads)):
            back(replace(d_scores, emissions=np.ascontiguousarray(d_scores.emissions[:, columns]),
                         **params))
        return []

    return scores, backprop


def _owned(first: CRFScores, second: CRFScores) -> dict:
    """The label-interaction parameters by name: ``CHAIN_PARAMS`` from ``first``,
    the others from ``second``."""
    return {name: getattr(first if name in CHAIN_PARAMS else second, name)
            for name in PARAMS + OPTIONAL_PARAMS}


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    for layer in model.layers:
        layer.initialize(X=X)
