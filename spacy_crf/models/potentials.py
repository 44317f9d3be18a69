"""Layer: emission scores -> all the potentials of the CRF, and the scores' container.

A batch's scores (:class:`CRFScores`) are the emissions and named arrays
beside them, each named and shaped by the structure or the layer that reads
or makes it, never here:

* ``params``: label-interaction scores of the whole batch, parameters of this
  layer (so the optimizer updates them, parameter averaging covers them and
  ``to_disk`` saves them). Which ones a component's layer holds is declared
  by its structure (:func:`declare_params`, from ``CRFStructure.params``);
* ``token``: scores of every token of the batch beside its emissions, made
  by the model's other layers (input-dependent transitions, a semi-Markov
  CRF's segment scores).

The module that owns a name registers the kind of each of its axes
(:func:`register_scores`): ``"row"`` (the batch's tokens), ``"out"`` (a
label), ``"start"`` (a label, then START), ``None`` (any other, sized by
this layer's ``nR`` dim for a parameter). Allocation, masking a label and
growing the label set read the axes from there.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import numpy as np
from thinc.api import Model
from thinc.types import Floats2d

from ..errors import Errors
from ..util import is_count
from .grow import LABEL_AXES, axis_size
from .layer_attrs import PARTS
from .part_transitions import (PART_TRANSITIONS, backprop_part_transitions,
                               composed_transitions, factors_transitions)

#: registered score name -> the kind of each of its axes (see the module docstring)
SCORE_AXES: Dict[str, Tuple[Optional[str], ...]] = {}
#: the axis kind of the batch's tokens (the first axis of a per-token score)
ROW = "row"


def register_scores(**axes: Tuple[Optional[str], ...]) -> None:
    """Register score names with the kind of each of their axes, e.g.
    ``register_scores(transitions=("out", "out"))`` (by the module that owns them)."""
    SCORE_AXES.update({name: tuple(kinds) for name, kinds in axes.items()})


def label_axes(name: str) -> Tuple[int, ...]:
    """The axes of the score ``name`` that run over labels (``"out"``, ``"start"``)."""
    return tuple(axis for axis, kind in enumerate(SCORE_AXES[name]) if kind in ("out", "start"))


def is_per_token(name: str) -> bool:
    """Whether the score ``name`` has a row per token of the batch."""
    kinds = SCORE_AXES.get(name)
    return bool(kinds) and kinds[0] == ROW


def axes_shape(kinds, n_labels: int, n_relations: int) -> Tuple[int, ...]:
    """The shape of a parameter whose axes are of ``kinds`` ("out": a label,
    "start": a label then START, None: a relation group)."""
    return tuple(axis_size(kind, n_labels, pair_sized=False) or n_relations for kind in kinds)


def param_shape(name: str, n_labels: int, n_relations: int = 1) -> Tuple[int, ...]:
    """The shape of the registered parameter ``name``."""
    return axes_shape(SCORE_AXES[name], n_labels, n_relations)


@dataclass
class CRFScores:
    """Every score of the CRF for a batch (or the gradient of each).

    Attributes
    ----------
    emissions : array
        ``(N, L)``: the concatenated tokens of the batch, a column per label.
    params : dict
        Label-interaction scores by name (a chain's ``transitions``,
        ``start``, ``end``; a tree's ``pair``, ``root``; ...).
    token : dict
        Per-token scores by name, a row per token (``token_transitions``,
        ``segments``).
    experts : tuple of CRFScores, optional
        The scores of each expert of a pooled model, whose weighted sum the
        other fields hold; in a gradient, each expert's gradient.

    A registered name reads and writes as an attribute (``scores.transitions``),
    ``None`` where the batch has no such score.
    """

    emissions: Any
    params: Dict[str, Any] = field(default_factory=dict)
    token: Dict[str, Any] = field(default_factory=dict)
    # (a tuple of CRFScores, not named so: pydantic v1, which thinc before 8.3.10
    # checks a factory's arguments with, recursed on the self-reference forever)
    experts: Optional[Tuple[Any, ...]] = None

    def __getattr__(self, name: str) -> Any:
        if name not in SCORE_AXES:
            raise AttributeError(name)
        where = self.__dict__.get("token" if is_per_token(name) else "params") or {}
        return where.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in SCORE_AXES:
            object.__setattr__(self, name, value)
            return
        where = self.token if is_per_token(name) else self.params
        if value is None:
            where.pop(name, None)
        else:
            where[name] = value

    @classmethod
    def of(cls, emissions: Any, experts: Optional[Tuple["CRFScores", ...]] = None,
           **named: Any) -> "CRFScores":
        """Scores from named arrays, each put in ``params`` or ``token`` by its
        registered axes (``None`` values left out)."""
        return cls(emissions, experts=experts).replace(**named)

    def replace(self, **changes: Any) -> "CRFScores":
        """A copy with ``changes``: ``emissions``, ``experts``, or named scores
        (``None`` removes one); the arrays themselves are not copied."""
        out = CRFScores(changes.pop("emissions", self.emissions), dict(self.params),
                        dict(self.token), changes.pop("experts", self.experts))
        for name, value in changes.items():
            if name not in SCORE_AXES:
                raise KeyError(f"No score is registered as {name!r} (potentials.register_scores)")
            setattr(out, name, value)  # into params or token, as its axes say
        return out

    def named(self) -> Dict[str, Any]:
        """Every named score (``params`` and ``token``) by name."""
        return {**self.params, **self.token}

    def map(self, func: Callable[[Any], Any]) -> "CRFScores":
        """``func`` applied to the emissions and every named score (not the experts)."""
        return CRFScores(func(self.emissions), {k: func(v) for k, v in self.params.items()},
                         {k: func(v) for k, v in self.token.items()}, self.experts)

    @property
    def n_labels(self) -> int:
        """Labels of one CRF: the width of a label axis of its parameters."""
        for name, value in self.params.items():
            axes = SCORE_AXES[name]
            if "out" in axes:
                return int(np.shape(value)[axes.index("out")])
        return int(np.shape(self.emissions)[1])


def allow_only(scores: CRFScores, allowed: np.ndarray,
               rows: Optional[np.ndarray] = None) -> CRFScores:
    """``scores`` with ``-inf`` emissions where ``allowed`` is False: (N, L)
    over every token, or over the tokens ``rows`` alone. Every block of ``L``
    emission columns is masked (the ``chain_tree`` structure's two experts
    each have one, side by side), and so is every expert of a pool. The
    emissions are a new array; ``scores`` is not written to."""
    def masked(part: CRFScores) -> CRFScores:
        # (numpy reads composed emissions as their array; a copy where rows are written)
        whole = part.emissions if rows is None else np.array(part.emissions)
        at = whole if rows is None else whole[rows]
        blocks = at.shape[1] // allowed.shape[1]
        where = allowed if blocks == 1 else np.tile(allowed, (1, blocks))
        # -inf of the emissions' own dtype: np.where then writes them once, no cast after
        blocked = np.where(where, at, at.dtype.type(-np.inf))
        if rows is not None:
            whole[rows] = blocked
            blocked = whole
        return part.replace(emissions=blocked)

    out = masked(scores)
    if scores.experts is not None:
        out = out.replace(experts=tuple(masked(expert) for expert in scores.experts))
    return out


def rows_from(scores: CRFScores, other: CRFScores, rows: np.ndarray) -> CRFScores:
    """``scores`` with the emissions of the tokens ``rows`` ((N,) bool) taken
    from ``other``, every expert's too: ``other`` the scores before
    :func:`allow_only` masked them. The emissions are new arrays."""
    def take(part: CRFScores, source: CRFScores) -> CRFScores:
        return part.replace(emissions=np.where(rows[:, None], np.asarray(source.emissions),
                                               np.asarray(part.emissions)))

    out = take(scores, other)
    if scores.experts is not None:
        out = out.replace(experts=tuple(take(mine, theirs)
                                        for mine, theirs in zip(scores.experts, other.experts)))
    return out


def crf_potentials(nO: Optional[int] = None, n_relations: int = 1) -> Model[Floats2d, CRFScores]:
    """Attach the label-interaction parameters to a batch's emission scores.

    Parameters
    ----------
    nO : int, optional
        Number of labels; set by the component at initialize when not given.
    n_relations : int
        Length of the parameters' axes that are not labels (a tree's relation
        groups, each with a pair matrix of its own).

    The parameters are those its component's structure declares
    (:func:`declare_params`). The input is the emissions, or ``(emissions,
    {name: per-token scores})`` from a layer that makes those too; they pass
    into the scores' ``token``, their gradients back.
    """
    # the "order" dim is unused; pipelines saved before structures declared
    # their parameters set it, and a load sets every saved dim
    return Model("crf_potentials", forward, init=init,
                 dims={"nO": nO, "nR": n_relations, "order": None},
                 attrs={LABEL_AXES: {}})


def declare_params(model: Model, names: Iterable[str]) -> None:
    """Give every ``crf_potentials`` layer of ``model`` the parameters ``names``
    (registered scores), allocated at its next ``initialize``; a structure
    declares its own in ``prepare_model``. Parameters a layer holds already
    (from a load) stay."""
    for node in model.walk():
        if node.name == "crf_potentials":
            axes = dict(node.attrs.get(LABEL_AXES) or {})
            for name in names:
                axes.setdefault(name, SCORE_AXES[name])
                if not node.has_param(name):
                    node.set_param(name, None)  # declared, allocated at initialize
            node.attrs[LABEL_AXES] = axes


def undeclare_params(model: Model, names: Iterable[str]) -> None:
    """Take back the declaration of ``names`` on every ``crf_potentials`` layer
    of ``model`` (with any value they hold): its ``initialize`` allocates none
    of them. For a structure chosen at ``initialize`` that lacks them, e.g.
    order 1 where order 2 was declared: its triples, cubic in the labels,
    would not fit in memory for thousands of labels."""
    for node in model.walk():
        if node.name == "crf_potentials":
            axes = dict(node.attrs.get(LABEL_AXES) or {})
            for name in names:
                axes.pop(name, None)
                if node.has_param(name):
                    node.set_param(name, None)
            node.attrs[LABEL_AXES] = axes


def forward(model: Model, inputs, is_train: bool) -> Tuple[CRFScores, Callable]:
    emissions, token = inputs if isinstance(inputs, tuple) else (inputs, {})
    params = {name: model.get_param(name) for name in model.attrs[LABEL_AXES]
              if model.has_param(name) and name != PART_TRANSITIONS}
    factored = factors_transitions(model) and "transitions" in params
    if factored:  # the structures see the label pairs' scores, the parts' added
        params["transitions"] = composed_transitions(model, params["transitions"])
    scores = CRFScores(emissions, params, dict(token))

    def backprop(d_scores: CRFScores):
        for name, grad in d_scores.params.items():
            if name in params and grad is not None:
                model.inc_grad(name, grad.astype(params[name].dtype, copy=False))
                if factored and name == "transitions":
                    backprop_part_transitions(model, grad)
        if not token:
            return d_scores.emissions
        return d_scores.emissions, {name: d_scores.token.get(name) for name in token}

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


def set_relation_groups(model: Model, n_groups: int) -> None:
    """Give every ``crf_potentials`` layer of ``model`` ``n_groups`` relation
    groups (the length of its pair scores' first axis; a tree structure's
    ``n_relations``), before its parameters are allocated.

    Raises
    ------
    ValueError
        E005 for a count that is not positive; E181 if a layer already holds
        parameters for another number of groups.
    """
    if not is_count(n_groups):
        raise ValueError(Errors.E005.format(name="n_relations", value=n_groups))
    for node in model.walk():
        if node.name != "crf_potentials" or node.get_dim("nR") == n_groups:
            continue
        if any(node.has_param(name) for name in node.param_names):
            raise ValueError(Errors.E181.format(found=node.get_dim("nR"), n_groups=n_groups))
        node.set_dim("nR", int(n_groups), force=True)


def is_initialized(model: Model) -> bool:
    """Whether ``model``'s label-sized parameters are allocated (by
    ``initialize`` or a load): some layer holds one it declares."""
    return any(node.has_param(name) for node in model.walk()
               for name in node.attrs.get(LABEL_AXES) or ())


def potentials_of(model: Model) -> Model:
    """The ``crf_potentials`` layer of ``model``; E066 if it has none."""
    potentials = find_potentials(model)
    if potentials is None:
        raise ValueError(Errors.E066)
    return potentials


def init(model: Model, X: Optional[Floats2d] = None, Y=None) -> None:
    L, R = model.get_dim("nO"), model.get_dim("nR")
    n_parts = len(model.attrs.get(PARTS) or ())
    for name, kinds in model.attrs[LABEL_AXES].items():
        shape = tuple(n_parts if kind == "part" else size
                      for kind, size in zip(kinds, axes_shape(kinds, L, R)))
        model.set_param(name, model.ops.alloc(shape, dtype="float32"))
