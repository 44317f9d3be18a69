"""Combinator: two CRF models side by side, for a structure that runs two CRFs.

``two_experts(first, second, first_params)`` runs both models (Docs ->
CRFScores) on the same batch and returns one :class:`CRFScores` whose
emissions are the two models' emissions side by side, ``(N, 2L)``: columns
``[0, L)`` are ``first``'s, ``[L, 2L)`` ``second``'s. The label-interaction
parameters named in ``first_params`` are taken from ``first``, every other one
from ``second`` (each model may hold the other's too: a pipeline saved before
structures declared their parameters did). Gradients go back the same way.
The ``chain_tree`` structure wraps the component's model with it (a chain
reading the words, a tree reading the words and the parse) and splits the
columns again.
"""

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from .potentials import CRFScores

NAME = "crf_two_experts"
#: attrs key of the parameters read from the first model
FIRST_PARAMS = "crf_first_params"


def two_experts(first: Model[List[Doc], CRFScores], second: Model[List[Doc], CRFScores],
                first_params: Sequence[str]) -> Model[List[Doc], CRFScores]:
    """Both models' scores, their emissions side by side."""
    return Model(NAME, forward, init=init, layers=[first, second],
                 attrs={FIRST_PARAMS: list(first_params)})


def is_two_experts(model: Model) -> bool:
    return model.name == NAME


def copy_model(model: Model) -> Model:
    """A deep copy of ``model`` whose references point into the copy.

    thinc's ``Model.copy()`` copies the layers, params, dims and attrs but no
    reference, so a layer that reads a sibling through one (the whole-label
    weights read the featurize layer's columns, ``whole_label.FEATURES_REF``)
    would fail in the copy. A reference to a node outside ``model`` is left
    unset, as ``Model.copy()`` leaves it.
    """
    copied = model.copy()
    # thinc walks both trees in the same order: shared layers stay shared in the copy
    twins = {id(node): twin for node, twin in zip(model.walk(), copied.walk())}
    for node in model.walk():
        for name in node.ref_names:
            if node.has_ref(name) and id(node.get_ref(name)) in twins:
                twins[id(node)].set_ref(name, twins[id(node.get_ref(name))])
    return copied


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[CRFScores, Callable]:
    first, second = model.layers
    (a, back_a), (b, back_b) = first(docs, is_train), second(docs, is_train)
    L = a.emissions.shape[1]
    owned = set(model.attrs[FIRST_PARAMS])
    params = {**{name: value for name, value in b.params.items() if name not in owned},
              **{name: value for name, value in a.params.items() if name in owned}}
    scores = CRFScores(np.hstack([a.emissions, b.emissions]), params)

    def backprop(d_scores: CRFScores) -> List[Doc]:
        # each model gets its emission columns and the gradients of the parameters it owns
        for back, columns, mine in ((back_a, slice(0, L), True), (back_b, slice(L, 2 * L), False)):
            grads = {name: grad for name, grad in d_scores.params.items()
                     if (name in owned) == mine}
            back(CRFScores(np.ascontiguousarray(d_scores.emissions[:, columns]), grads))
        return []

    return scores, backprop


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    for layer in model.layers:
        layer.initialize(X=X)
