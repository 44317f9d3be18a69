"""Combinator: the sum of several emission layers over the same Docs."""

from typing import Callable, List, Optional, Tuple

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d


def sum_emissions(*layers: Model[List[Doc], Floats2d]) -> Model[List[Doc], Floats2d]:
    """Add the ``(N, nO)`` emission scores of every layer.

    Unlike thinc's ``add`` this never adds up the layers' input gradients (a
    list of Docs has none), so a tok2vec listener and a feature layer mix.
    """
    return Model("crf_sum_emissions", forward, init=init, layers=list(layers), dims={"nO": None})


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[Floats2d, Callable]:
    outputs = [layer(docs, is_train) for layer in model.layers]
    total = outputs[0][0].copy()
    for scores, _ in outputs[1:]:
        total += scores

    def backprop(d_total: Floats2d) -> List[Doc]:
        for _, callback in outputs:
            callback(d_total)
        return []

    return total, backprop


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    for layer in model.layers:
        layer.initialize(X=X)
