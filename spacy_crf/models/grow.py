"""Growing a trained model's label axes: new labels without starting over.

Every layer with label-sized parameters declares them in its attrs under
:data:`LABEL_AXES`: ``{param name: one entry per axis}``, an entry being

* ``None``: not a label axis (the hashed rows, a tok2vec's width);
* ``"out"``: the layer's output columns: one per label, or one per label
  *pair* (``K * K``, row-major) in a layer sized by label pairs (the
  input-dependent transitions);
* ``"start"``: one per label, then one more for START (the second-order
  chain's ``triples``, whose first axis is ``K + 1``).

:func:`grow_params` appends the new labels along those axes, with zeros:
every old weight keeps its value and its place (a label pair ``(a, b)`` keeps
``(a, b)``; START stays last). The component masks a new label's emissions
to ``-inf`` until an update sees it in gold (``spacy_crf.unseen_labels``), so
a grown model decodes exactly as before.

An optimizer that already holds moments or averages of a grown parameter
(one kept across ``add_label``) gets them grown the same way at its next step
(:func:`grow_optimizer_state`): each layer keeps the label counts it has
had in :data:`LABEL_HISTORY`.
"""

from typing import Dict, Optional, Sequence, Tuple

import numpy as np
from thinc.api import Model, Optimizer

from .layer_attrs import LABEL_PAIR_SIZED, SPARSE_TABLE


#: attrs key: {param name: (axis kind or None, ...)} of a layer's label-sized parameters
LABEL_AXES = "crf_label_axes"
#: attrs key: the label counts a layer has had, oldest first (set by growth)
LABEL_HISTORY = "crf_label_history"
#: attrs key: the part counts a factored table has had, oldest first
#: (``label_parts.py``; its columns grow with parts, not labels)
PART_HISTORY = "crf_part_history"


def axis_size(kind: Optional[str], n_labels: int, pair_sized: bool) -> Optional[int]:
    """The length of an axis of ``kind`` for ``n_labels`` labels (None: not a
    label axis; a ``"part"`` axis, a factored table's, grows with its parts,
    ``label_parts.py``)."""
    if kind is None or kind == "part":
        return None
    if kind == "start":
        return n_labels + 1
    return n_labels * n_labels if pair_sized else n_labels


def grow_array(array: np.ndarray, kinds: Sequence[Optional[str]], n_old: int, n_new: int,
               pair_sized: bool = False) -> np.ndarray:
    """``array`` (label axes sized for ``n_old`` labels) sized for ``n_new``,
    the new labels' entries zero and every old one where it was."""
    out_shape = [axis_size(kind, n_new, pair_sized) or array.shape[axis]
                 for axis, kind in enumerate(kinds)]
    grown = np.zeros(out_shape, dtype=array.dtype)
    grown[_old_places(kinds, n_old, n_new, pair_sized, array.shape)] = array
    return grown


def _old_places(kinds: Sequence[Optional[str]], n_old: int, n_new: int, pair_sized: bool,
                shape: Tuple[int, ...]) -> Tuple:
    """An index of the grown array selecting the old entries, in their order."""
    index = []
    for axis, kind in enumerate(kinds):
        if kind is None or kind == "part":  # (a part axis does not grow with the labels)
            index.append(np.arange(shape[axis]))
        elif kind == "start":  # the old labels, then START, which moves to the end
            index.append(np.append(np.arange(n_old), n_new))
        elif pair_sized:  # pair (a, b) at a * K + b
            old = np.arange(n_old)
            index.append((old[:, None] * n_new + old[None, :]).ravel())
        else:
            index.append(np.arange(n_old))
    return np.ix_(*index)


def grow_params(model: Model, n_old: int, n_new: int) -> None:
    """Grow every declared label axis of ``model``'s allocated parameters from
    ``n_old`` to ``n_new`` labels (zeros for the new ones), pending sparse
    gradients with them, and record the growth for optimizers (see the module
    docstring). Dims are the caller's (``architectures.set_n_labels``)."""
    for node in model.walk():
        axes = node.attrs.get(LABEL_AXES)
        if not axes:
            continue
        pair_sized = bool(node.attrs.get(LABEL_PAIR_SIZED))
        grew = False
        for name, kinds in axes.items():
            if not node.has_param(name) or node.get_param(name) is None:
                continue
            node.set_param(name, grow_array(node.get_param(name), kinds, n_old, n_new, pair_sized))
            # a gradient of the old size (an update not yet stepped) grows too
            key = (node.id, name)
            if key in node._params._grads:
                node._params._grads[key] = grow_array(node._params._grads[key], kinds, n_old,
                                                      n_new, pair_sized)
            grew = True
        table = node.attrs.get(SPARSE_TABLE)
        if table is not None:  # pending rows: (rows, labels) like W
            table.grads = grow_rows(node, table.grads, node.get_param("W").shape[1])
        if grew:
            history = list(node.attrs.get(LABEL_HISTORY) or [])
            if not history or history[-1] != n_old:
                history.append(n_old)
            node.attrs[LABEL_HISTORY] = history + [n_new]


def grow_optimizer_state(model: Model, sgd: Optimizer) -> None:
    """Grow the moments and averages ``sgd`` holds for parameters that have
    grown since it last stepped them (a no-op for a new optimizer, as
    ``nlp.resume_training()`` creates)."""
    for node in model.walk():
        if not node.attrs.get(LABEL_HISTORY) and not node.attrs.get(PART_HISTORY):
            continue
        pair_sized = bool(node.attrs.get(LABEL_PAIR_SIZED))
        for name, kinds in node.attrs[LABEL_AXES].items():
            if not node.has_param(name) or node.get_param(name) is None:
                continue
            # a factored table's columns grow with its parts (label_parts.py)
            by_parts = "part" in kinds
            history = node.attrs.get(PART_HISTORY if by_parts else LABEL_HISTORY)
            if not history:
                continue
            kinds = tuple("out" if kind == "part" else kind for kind in kinds)
            n_now = history[-1]
            current = node.get_param(name).shape
            key = (node.id, name)
            for store in (sgd.mom1, sgd.mom2, sgd.averages or {}):
                if key in store:
                    store[key] = _grown_state(node, name, store[key], kinds, history,
                                              current, pair_sized, n_now)


def _grown_state(node: Model, name: str, state: np.ndarray, kinds, history: Sequence[int],
                 current: Tuple[int, ...], pair_sized: bool, n_now: int) -> np.ndarray:
    """One optimizer array of ``name`` grown to ``n_now`` labels from the earlier
    label count whose parameter size it has (thinc keeps moments flat and
    averages shaped); as it is if it has the current size. The row-sparse
    Adam's compact moments grow in ``sparse_table.py`` (:func:`grow_rows`)."""
    if state.size == int(np.prod(current)):
        return state
    for n_old in reversed(history[:-1]):
        shape = tuple(axis_size(kind, n_old, pair_sized) or current[axis]
                      for axis, kind in enumerate(kinds))
        if state.size == int(np.prod(shape)):
            grown = grow_array(state.reshape(shape), kinds, n_old, n_now, pair_sized)
            return grown.reshape(-1) if state.ndim == 1 else grown
    return state


def grow_rows(node: Model, rows: np.ndarray, width: int) -> np.ndarray:
    """Rows shaped as ``node``'s ``W`` rows (a hashed table's compact optimizer
    moments, or its pending gradient), grown to ``width`` columns (labels,
    label pairs or a factored table's parts)."""
    pair_sized = bool(node.attrs.get(LABEL_PAIR_SIZED))
    n_old, n_now = ((int(round(rows.shape[1] ** 0.5)), int(round(width ** 0.5))) if pair_sized
                    else (rows.shape[1], width))
    kinds = tuple("out" if kind == "part" else kind for kind in node.attrs[LABEL_AXES]["W"])
    return grow_array(rows, kinds, n_old, n_now, pair_sized)


def drop_params(node: Model) -> None:
    """Unset ``node``'s parameters (to be allocated anew by ``initialize`` or
    filled by a load), with any pending gradient and row-sparse state."""
    for name in node.param_names:
        if node.has_param(name):
            node.set_param(name, None)
        # a gradient left from the old size would be added to the new
        # one; thinc's ParamServer has no public way to drop it
        node._params._grads.pop((node.id, name), None)
    node.attrs.pop(SPARSE_TABLE, None)


def drop_param(node: Model, name: str) -> None:
    """Unset ``node``'s parameter ``name`` (declared, to be allocated anew by
    ``initialize`` or filled by a load), with any pending gradient."""
    node.set_param(name, None)
    node._params._grads.pop((node.id, name), None)


def declare_label_axes(node: Model, axes: Dict[str, Tuple[Optional[str], ...]]) -> Model:
    """Declare ``node``'s label-sized parameters (see the module docstring); returns it."""
    node.attrs[LABEL_AXES] = dict(axes)
    return node
