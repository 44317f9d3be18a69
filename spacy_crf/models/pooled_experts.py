"""Combinator: a logarithmic opinion pool of CRFs, each trained as it would be alone.

``pooled_experts([a, b], [w_a, w_b])`` runs CRF models (Docs -> CRFScores) over
the same batch and returns the pool: every score (emissions and label
interactions) is ``w_a * a + w_b * b``, with the weights summing to 1, so the
pool is one CRF of the same structure whose distribution is the normalised
weighted geometric mean of the experts' (Smith, Cohn and Osborne 2005,
*Logarithmic opinion pools for conditional random fields*). Decoding, marginals,
n-best and span probabilities read the pool as they read any CRF.

The pooled scores carry each expert's own scores (``CRFScores.experts``), and
the training losses (``spacy_crf/losses``) give each expert the loss of its
own CRF: an expert is never trained to lean on the other. This matters when
one expert fits the training data much faster than the other (a tok2vec beside
hashed features): trained jointly on the pooled likelihood, the fast one takes
the gradient and the other stops learning.

Backprop takes both kinds of gradient: each expert gets its own (``experts``)
plus its weight times the gradient of the pooled scores, if any.
"""

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from ..errors import Errors
from .potentials import CRFScores

NAME = "crf_pooled_experts"
#: attrs key of a pool's weights; it marks the pool whatever its name
#: (an architecture may rename it, as NeuralCRF.v3 does)
WEIGHTS = "crf_pool_weights"


def pooled_experts(experts: Sequence[Model[List[Doc], CRFScores]],
                   weights: Sequence[float]) -> Model[List[Doc], CRFScores]:
    """The weighted sum of the experts' scores, with their own scores attached.

    Parameters
    ----------
    experts : sequence of Model
        Two or more CRF models of the same labels.
    weights : sequence of float
        One per expert, each in (0, 1), summing to 1. (A fit on held-out data,
        ``training/pool_weights.py``, may later set one to 0.)
    """
    weights = [float(w) for w in weights]
    if (len(weights) != len(experts) or len(experts) < 2 or min(weights) <= 0
            or abs(sum(weights) - 1.0) > 1e-6):
        raise ValueError(Errors.E118.format(weights=weights, n=len(experts)))
    return Model(NAME, forward, init=init, layers=list(experts), attrs={WEIGHTS: weights})


def is_pooled(model: Optional[Model]) -> bool:
    """Whether ``model`` holds a pool of experts."""
    return pool_weights_node(model) is not None


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[CRFScores, Callable]:
    weights = model.attrs[WEIGHTS]
    outputs = [expert(docs, is_train) for expert in model.layers]
    pooled = pool_scores(tuple(scores for scores, _ in outputs), weights)

    def backprop(d_pooled: CRFScores) -> List[Doc]:
        own = d_pooled.experts or (None,) * len(outputs)
        for (_, back), weight, d_own in zip(outputs, weights, own):
            back(_expert_gradient(d_pooled, weight, d_own))
        return []

    return pooled, backprop


def pool_weights_node(model: Optional[Model]) -> Optional[Model]:
    """The node of ``model`` that holds the pool's weights (``attrs[WEIGHTS]``), if any."""
    return next((node for node in model.walk() if WEIGHTS in node.attrs), None) if model else None


def pool_scores(experts: Sequence[CRFScores], weights: Sequence[float]) -> CRFScores:
    """The pool of the experts' scores under ``weights``, carrying the experts' own."""
    named = [scores.named() for scores in experts]
    names = sorted({name for scores in named for name in scores})
    return CRFScores.of(weighted_sum([s.emissions for s in experts], weights),
                        experts=tuple(experts),
                        **{name: weighted_sum([s.get(name) for s in named], weights)
                           for name in names})


def weighted_sum(values: Sequence, weights: Sequence[float]):
    """``sum(w * v)``; ``None`` where every expert has ``None`` (a score the
    structure does not use), E119 where only some have it."""
    present = [v is not None for v in values]
    if not any(present):
        return None
    if not all(present):
        raise ValueError(Errors.E119)
    # an expert of weight 0 (a fit can drop one) is left out, not multiplied:
    # 0 * -inf would be nan
    terms = [(weight, value) for weight, value in zip(weights, values) if weight]
    total = terms[0][0] * terms[0][1]
    for weight, value in terms[1:]:
        total = total + weight * value
    return total.astype(values[0].dtype, copy=False)


def _expert_gradient(d_pooled: CRFScores, weight: float, d_own: Optional[CRFScores]) -> CRFScores:
    """``weight * d_pooled + d_own``, score by score (``None`` counts as zero)."""
    pooled_named = {"emissions": d_pooled.emissions, **d_pooled.named()}
    own_named = {} if d_own is None else {"emissions": d_own.emissions, **d_own.named()}
    out = {}
    for name in {**pooled_named, **own_named}:
        pooled, own = pooled_named.get(name), own_named.get(name)
        if pooled is not None and np.any(pooled):
            pooled = weight * pooled
            own = pooled if own is None else own + pooled
        out[name] = own
    emissions = out.pop("emissions")
    if emissions is None:
        emissions = np.zeros_like(d_pooled.emissions)
    return CRFScores.of(emissions, **out)


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    for expert in model.layers:
        expert.initialize(X=X)
