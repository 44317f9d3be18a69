"""Layer: emission scores -> all the potentials of the CRF.

The label-interaction scores are parameters of this layer, so the optimizer
updates them, parameter averaging covers them and ``to_disk`` saves them:

* chain: ``transitions[i, j]`` (label ``i`` then ``j``), ``start[j]``, ``end[j]``;
* tree: ``pair[r, c, h]`` (child label ``c`` under head label ``h`` on an edge
  of relation group ``r``) and ``root[j]``;
* second-order chain (``order`` dim 2, set by that structure): ``triples[a, b,
  c]``, label ``c`` after ``a`` then ``b`` (``a = L``: ``b`` starts the sequence).

Both sets exist whatever the component's structure; the optimizer only
touches the ones that get gradients.
"""

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import numpy as np
from thinc.api import Model
from thinc.types import Floats1d, Floats2d, Floats3d

from ..errors import Errors
from .grow import LABEL_AXES

PARAMS = ("transitions", "start", "end", "pair", "root")
#: parameters only some structures allocate (``None`` otherwise)
OPTIONAL_PARAMS = ("triples",)


@dataclass
class CRFScores:
    """Every score of the CRF for a batch (or the gradient of each)."""

    emissions: Floats2d  # (N, L): concatenated tokens of the batch
    transitions: Floats2d  # (L, L)
    start: Floats1d  # (L,)
    end: Floats1d  # (L,)
    pair: Floats3d  # (R, L, L)
    root: Floats1d  # (L,)
    triples: Optional[Floats3d] = None  # (L + 1, L, L), second order only
    # (N, L, L): score of label i at token t - 1 then j at t, added to the
    # transitions at row t (input-dependent transitions; row 0 of a sequence unused)
    token_transitions: Optional[Floats3d] = None
    # (N, D, L): score of the segment of length d + 1 starting at row t when its
    # first tag is j (semi-Markov CRF, ``segment_scores.py``; rows past a sequence unused)
    segments: Optional[Floats3d] = None
    # the scores of each expert of a pooled model (``pooled_experts.py``), whose
    # weighted sum the other fields hold; in a gradient, each expert's gradient
    experts: Optional[Tuple["CRFScores", ...]] = None

    @property
    def n_labels(self) -> int:
        return self.transitions.shape[0]


def crf_potentials(nO: Optional[int] = None, n_relations: int = 1) -> Model[Floats2d, CRFScores]:
    """Attach the label-interaction parameters to a batch's emission scores.

    Parameters
    ----------
    nO : int, optional
        Number of labels; set by the component at initialize when not given.
    n_relations : int
        Number of relation groups with a pair matrix of their own (tree structure).
    """
    return Model(
        "crf_potentials",
        forward,
        init=init,
        dims={"nO": nO, "nR": n_relations, "order": 1},
        params={name: None for name in PARAMS + OPTIONAL_PARAMS},
        # every axis is a label's but the relation group's; triples' first is
        # the previous label or START (last)
        attrs={LABEL_AXES: {"transitions": ("out", "out"), "start": ("out",), "end": ("out",),
                            "pair": (None, "out", "out"), "root": ("out",),
                            "triples": ("start", "out", "out")}},
    )


def forward(model: Model, inputs, is_train: bool) -> Tuple[CRFScores, Callable]:
    # (emissions, (N, L * L) token transition scores) from a model with
    # transition templates, else the emissions alone
    emissions, token_transitions = inputs if isinstance(inputs, tuple) else (inputs, None)
    L = emissions.shape[1]
    scores = CRFScores(emissions, *(model.get_param(name) for name in PARAMS),
                       triples=model.get_param("triples") if model.has_param("triples") else None,
                       token_transitions=(None if token_transitions is None
                                          else token_transitions.reshape(-1, L, L)))

    def backprop(d_scores: CRFScores):
        for name in PARAMS + OPTIONAL_PARAMS:
            grad = getattr(d_scores, name)
            if grad is not None:
                model.inc_grad(name, grad.astype(model.get_param(name).dtype, copy=False))
        if token_transitions is None:
            return d_scores.emissions
        d_token = d_scores.token_transitions
        d_token = (np.zeros_like(token_transitions) if d_token is None
                   else d_token.reshape(-1, L * L).astype(token_transitions.dtype, copy=False))
        return d_scores.emissions, d_token

    return scores, backprop


def find_potentials(model: Model) -> Optional[Model]:
    """The ``crf_potentials`` layer of ``model`` (the first), or None (e.g. the HMM)."""
    for node in model.walk():
        if node.name == "crf_potentials":
            return node
    return None


def relation_groups(model: Model) -> int:
    """Relation groups of ``model``'s pair scores (its ``n_relations``; 1 for a
    model without a ``crf_potentials`` layer, such as the HMM)."""
    potentials = find_potentials(model)
    return 1 if potentials is None else potentials.get_dim("nR")


def has_transitions(model: Model) -> bool:
    """Whether ``model`` is initialized: the layer with the transition scores
    (``crf_potentials``, the HMM) has them allocated."""
    return any(node.has_param("transitions") and node.get_param("transitions") is not None
               for node in model.walk())


def potentials_of(model: Model) -> Model:
    """The ``crf_potentials`` layer of ``model``; E066 if it has none."""
    potentials = find_potentials(model)
    if potentials is None:
        raise ValueError(Errors.E066)
    return potentials


def init(model: Model, X: Optional[Floats2d] = None, Y=None) -> None:
    L, R = model.get_dim("nO"), model.get_dim("nR")
    model.set_param("transitions", model.ops.alloc2f(L, L))
    model.set_param("start", model.ops.alloc1f(L))
    model.set_param("end", model.ops.alloc1f(L))
    model.set_param("pair", model.ops.alloc3f(R, L, L))
    model.set_param("root", model.ops.alloc1f(L))
    if model.get_dim("order") == 2:
        model.set_param("triples", model.ops.alloc3f(L + 1, L, L))
