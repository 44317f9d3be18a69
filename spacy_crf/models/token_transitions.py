"""Combinator: emissions and input-dependent transition scores from the same Docs.

A structure with ``transition_templates`` in its block (a chain or a tree)
adds them to the component's model with :func:`add_token_transitions`.

``with_token_transitions(emissions, pair_scores)`` runs an emission model
(``(N, L)``) and a model of hashed token-pair features whose output has one
column per label pair (``(N, L * L)``: CRF++'s ``B`` templates with ``%x``),
and hands both to ``crf_potentials`` as the per-token score ``token_transitions``
(``(N, L, L)``), which a structure with input-dependent transitions adds to
its transitions at every token. Gradients flow back into both.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model, chain
from thinc.types import Floats2d, Floats3d

from ..errors import Errors
from .featurize import TREE_TEMPLATES, featurize
from .hashed_linear import companion_table
from .layer_attrs import AVERAGE_WEIGHTS, LABEL_PAIR_SIZED
from .potentials import ROW, register_scores
from .sparse_table import BOOST_UPDATES, LR_SCALE

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


#: the name of a model of ``spacy-crf.FeatureCRF``, the one that can take them
FEATURE_CRF = "feature_crf"
#: attrs that the pair table takes from the model's own hashed table
_SHARED_ATTRS = (LR_SCALE, BOOST_UPDATES, AVERAGE_WEIGHTS)


def has_token_transitions(model: Optional[Model]) -> bool:
    """Whether ``model`` scores input-dependent transitions (transition templates)."""
    return model is not None and any(node.attrs.get(LABEL_PAIR_SIZED) for node in model.walk())


def add_token_transitions(model: Model, templates: Sequence[str], n_buckets: int) -> Model:
    """``model`` (``spacy-crf.FeatureCRF``: featurize, hashed table, label
    interactions) with input-dependent transitions over ``templates``: a
    hashed table of ``n_buckets`` rows of one weight per label pair, stepped,
    boosted and averaged as the model's own table. A model that has them
    already is returned as it is (a pipeline saved with them, rebuilt).

    Raises
    ------
    ValueError
        E183 for a model of another architecture.
    """
    if has_token_transitions(model):
        return model
    if model.name != FEATURE_CRF or len(model.layers) != 3:
        raise ValueError(Errors.E183.format(model=model.name))
    features, linear, potentials = model.layers
    pair_linear = companion_table(linear, n_buckets, _SHARED_ATTRS)
    pair_linear.attrs[LABEL_PAIR_SIZED] = True
    pair_features = featurize(templates)
    # its templates are the block's alone: a tree's templates go to the emissions
    del pair_features.attrs[TREE_TEMPLATES]
    pair_scores = chain(pair_features, pair_linear)
    wrapped = chain(with_token_transitions(chain(features, linear), pair_scores), potentials)
    wrapped.name = FEATURE_CRF
    wrapped.attrs.update(model.attrs)
    return wrapped
