"""Emissions factored over label parts: a weight per part, not per label.

A morphology label joins a POS and features (``"Number=Sing|POS=NOUN"``):
321 labels in UD English EWT are made of 77 parts. A hashed table with a
weight per label holds ``n_buckets x 321`` weights, and every feature of a
token reads 321 of them; factored, it holds ``n_buckets x 77``, a feature
reads 77, and a label's score is its parts' scores summed
(``_kernels/label_parts.py``) plus a bias of its own. Labels that share a part
share what it learned: a feature that says "plural" speaks for every plural
label, the rare ones included, where a weight per label learns each alone.

A hashed table (``hashed_linear.py``) factors when :data:`PARTS` in its attrs
lists the parts (its columns, in order) and :data:`LABEL_PARTS` maps each
label to its parts; thinc saves both with the model. :func:`set_label_parts`
sets them from the target's :meth:`~spacy_crf.targets.Target.label_parts` at
``initialize`` (fresh) and at ``add_label`` (new parts appended, old columns
kept). Whether a table factors is its :data:`FACTORED` setting
(``FeatureCRF(factored=...)``): true, false, or null for "where the target's
labels are made of parts" (some label has more than one).
"""

import functools
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from thinc.api import Model

from .._kernels.label_parts import compose_parts

from .grow import LABEL_AXES, PART_HISTORY, drop_param, drop_params, grow_array
from .layer_attrs import (HASHED_TABLE, LABEL_PAIR_SIZED, LABEL_PARTS, LABEL_SIZED, PART_AXES,
                          PART_TRANSITIONS, PARTS, SPARSE_TABLE)

#: attrs key of a table's setting: True, False or None (null: where labels have parts)
FACTORED = "crf_factored"
#: the label axes of a factored table's parameters: ``W`` has a column per
#: part (grown by :func:`set_label_parts`, not by the label count), ``b`` one per label
FACTORED_AXES = {"W": (None, "part"), "b": ("out",)}
PLAIN_AXES = {"W": (None, "out"), "b": ("out",)}


def has_parts(label_parts: Sequence[Sequence[str]]) -> bool:
    """Whether labels are made of parts: some label has more than one."""
    return any(len(parts) > 1 for parts in label_parts)


def factors(node: Model) -> bool:
    """Whether ``node`` (a hashed table) has a column per part."""
    return node.attrs.get(PARTS) is not None


def width(node: Model) -> int:
    """The columns of ``node``'s weight table: its parts, or its labels."""
    parts = node.attrs.get(PARTS)
    return len(parts) if parts is not None else node.get_dim("nO")


def composition(node: Model) -> Tuple[np.ndarray, np.ndarray]:
    """``(starts, index)`` int64 arrays of a factored table (see :data:`LABEL_PARTS`)."""
    layout = node.attrs[LABEL_PARTS]
    return (np.asarray(layout["starts"], dtype=np.int64),
            np.asarray(layout["index"], dtype=np.int64))


def compose_labels(part_scores: np.ndarray, starts: np.ndarray, index: np.ndarray,
                   bias: np.ndarray) -> np.ndarray:
    """``(N, K)`` label scores: each label's ``bias`` plus its parts' ``part_scores``
    (``(N, P)``; the labels' parts ``index[starts[k]:starts[k + 1]]``), in the
    dtype of ``part_scores``."""
    part_scores = np.ascontiguousarray(part_scores)
    out = np.empty((part_scores.shape[0], len(starts) - 1), dtype=part_scores.dtype)
    compose_parts(part_scores, *composition_trie(starts, index),
                  np.ascontiguousarray(bias, dtype=part_scores.dtype), out)
    return out


def composition_trie(starts: np.ndarray, index: np.ndarray
                     ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trie of the labels' part lists that the forward kernels add along
    (``_kernels/label_parts.py``): ``(parent, part, label_node)`` int64.

    A label's parts are taken most frequent first (over the labels), so that
    labels share the longest prefixes: ``POS=NOUN``, then ``Number=Sing``... A
    node stands for a prefix: its ``parent`` the prefix one part shorter
    (node 0, the root, is the empty one), ``part`` its last part; node ``i``
    comes after its parent. ``label_node[k]`` is label ``k``'s full list.
    Worked out once per composition (cached: a forward pass asks again).
    """
    return _trie(np.ascontiguousarray(starts, dtype=np.int64).tobytes(),
                 np.ascontiguousarray(index, dtype=np.int64).tobytes())


@functools.lru_cache(maxsize=64)
def _trie(starts_bytes: bytes, index_bytes: bytes) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts = np.frombuffer(starts_bytes, dtype=np.int64)
    index = np.frombuffer(index_bytes, dtype=np.int64)
    frequency = np.bincount(index)
    nodes: Dict[Tuple[int, ...], int] = {(): 0}
    parent, part, label_node = [-1], [-1], []
    for k in range(len(starts) - 1):
        prefix: Tuple[int, ...] = ()
        node = 0
        for p in sorted(index[starts[k]:starts[k + 1]].tolist(),
                        key=lambda p: (-frequency[p], p)):
            prefix += (p,)
            if prefix not in nodes:
                nodes[prefix] = len(parent)
                parent.append(node)
                part.append(p)
            node = nodes[prefix]
        label_node.append(node)
    arrays = tuple(np.asarray(values, dtype=np.int64) for values in (parent, part, label_node))
    for array in arrays:
        array.flags.writeable = False  # shared by every caller of the cache
    return arrays  # type: ignore[return-value]


def _tables(model: Model) -> List[Model]:
    """The hashed tables of ``model`` with a column per label (or per part)."""
    return [node for node in model.walk()
            if node.name == HASHED_TABLE and node.attrs.get(LABEL_SIZED)
            and not node.attrs.get(LABEL_PAIR_SIZED)]


def _transition_layers(model: Model) -> List[Model]:
    """The potentials layers of ``model`` whose structure has label transitions
    (a chain's ``transitions``): those that factor them where the tables do
    (``part_transitions.py``)."""
    return [node for node in model.walk() if node.name == "crf_potentials"
            and ("transitions" in (node.attrs.get(LABEL_AXES) or {})
                 or node.attrs.get(PARTS) is not None)]


def _layout(label_parts: Sequence[Sequence[str]], names: Sequence[str]) -> Dict[str, List[int]]:
    column = {name: i for i, name in enumerate(names)}
    starts, index = [0], []
    for parts in label_parts:
        index.extend(column[part] for part in parts)
        starts.append(len(index))
    return {"starts": starts, "index": index}


def _in_order(label_parts: Sequence[Sequence[str]], known: Sequence[str]) -> List[str]:
    """``known``, then every other part in order of first appearance."""
    names, seen = list(known), set(known)
    for parts in label_parts:
        for part in parts:
            if part not in seen:
                seen.add(part)
                names.append(part)
    return names


def set_label_parts(model: Model, label_parts: Sequence[Sequence[str]], grow: bool = False
                    ) -> None:
    """Give ``model``'s hashed tables the parts of the labels.

    Parameters
    ----------
    model : Model
        A component's model, its label counts set (``architectures.set_n_labels``).
    label_parts : sequence of sequences of str
        The parts of label ``k``, for every label in order
        (``Target.label_parts``).
    grow : bool
        False at ``initialize``: each table factors as its setting says, its
        columns are the parts in order of first appearance, and a table of
        another width drops its parameters (``model.initialize`` allocates
        them). True after ``add_label`` (the labels grew, the first ones
        unchanged): a factored table appends the new parts as zero columns,
        every old weight where it was; a table with a column per label
        stays so (it grew with the labels).

    A potentials layer whose structure has label transitions factors them
    over the same parts where a table factors (``part_transitions.py``): its
    ``part_transitions`` are declared here, allocated by ``initialize``, and
    grow with the parts.
    """
    for node in _tables(model):
        if grow:
            if factors(node):
                _grow_parts(node, label_parts)
            continue
        setting = node.attrs.get(FACTORED)
        factor = has_parts(label_parts) if setting is None else bool(setting)
        before = width(node) if node.has_param("W") and node.get_param("W") is not None else None
        _mark(node, label_parts, _in_order(label_parts, ()) if factor else None)
        if before is not None and before != width(node):
            drop_params(node)
    # the transitions factor over the same parts where an emission table does
    names = next((node.attrs[PARTS] for node in _tables(model) if factors(node)), None)
    for node in _transition_layers(model):
        if grow:
            if node.attrs.get(PARTS) is not None:
                _grow_parts(node, label_parts)
        elif names is not None and "transitions" in node.attrs[LABEL_AXES]:
            _mark_transitions(node, label_parts, names)
        else:
            _unmark_transitions(node)


def _mark(node: Model, label_parts: Sequence[Sequence[str]], names: Optional[List[str]]) -> None:
    """Give ``node`` a column per part of ``names`` (None: a column per label),
    with no growth behind it."""
    node.attrs[PARTS] = names
    node.attrs[LABEL_PARTS] = _layout(label_parts, names) if names is not None else None
    node.attrs[LABEL_AXES] = dict(FACTORED_AXES if names is not None else PLAIN_AXES)
    node.attrs.pop(PART_HISTORY, None)


def _mark_transitions(node: Model, label_parts: Sequence[Sequence[str]],
                      names: List[str]) -> None:
    """Declare the factored transitions of the potentials layer ``node``
    (allocated by its ``initialize``, sized by its parts)."""
    node.attrs[PARTS] = list(names)
    node.attrs[LABEL_PARTS] = _layout(label_parts, names)
    node.attrs[LABEL_AXES] = {**node.attrs[LABEL_AXES], PART_TRANSITIONS: PART_AXES}
    node.attrs.pop(PART_HISTORY, None)
    drop_param(node, PART_TRANSITIONS)


def _unmark_transitions(node: Model) -> None:
    """``node``'s transitions a weight per label pair alone (its parts' taken back)."""
    # (keys taken out, not set to None: a layer that never factored keeps
    # the attrs it had, and its bytes)
    for key in (PARTS, LABEL_PARTS, PART_HISTORY):
        node.attrs.pop(key, None)
    if PART_TRANSITIONS in (node.attrs.get(LABEL_AXES) or {}):
        axes = dict(node.attrs[LABEL_AXES])
        del axes[PART_TRANSITIONS]
        node.attrs[LABEL_AXES] = axes
    if PART_TRANSITIONS in node.param_names:
        drop_param(node, PART_TRANSITIONS)


def _grow_parts(node: Model, label_parts: Sequence[Sequence[str]]) -> None:
    """Append the new parts of ``label_parts`` to ``node``'s (a factored table
    or factored transitions): zero weights along every part axis, each old
    weight where it was, and the growth recorded for optimizers."""
    old = list(node.attrs[PARTS])
    names = _in_order(label_parts, old)
    node.attrs[LABEL_PARTS] = _layout(label_parts, names)
    if len(names) == len(old):
        return
    node.attrs[PARTS] = names
    for name, kinds in node.attrs[LABEL_AXES].items():
        if "part" not in kinds or not node.has_param(name) or node.get_param(name) is None:
            continue
        kinds = tuple("out" if kind == "part" else kind for kind in kinds)
        node.set_param(name, grow_array(node.get_param(name), kinds, len(old), len(names)))
        key = (node.id, name)  # a dense gradient not yet stepped grows too
        if key in node._params._grads:
            node._params._grads[key] = grow_array(node._params._grads[key], kinds, len(old),
                                                  len(names))
    table = node.attrs.get(SPARSE_TABLE)
    if table is not None:  # a pending gradient, (rows, parts) like W
        table.grads = grow_array(table.grads, (None, "out"), len(old), len(names))
    history = list(node.attrs.get(PART_HISTORY) or [len(old)])
    node.attrs[PART_HISTORY] = history + [len(names)]


def forget_label_parts(model: Model) -> None:
    """Mark ``model``'s tables as having a column per label, before weights
    are loaded into it: a file saved with parts sets them again (thinc loads
    attrs), and one saved before tables could factor has none to set."""
    for node in _tables(model):
        _mark(node, (), None)
    for node in _transition_layers(model):
        _unmark_transitions(node)


def check_label_parts(model: Model, label_parts: Sequence[Sequence[str]]) -> None:
    """Check that loaded tables fit the labels they will score.

    Raises
    ------
    ValueError
        Where a factored table's columns are not its parts, or its labels'
        parts are not those the target gives the labels.
    """
    for node in _tables(model):
        if not factors(node):
            continue
        names = node.attrs[PARTS]
        W = node.get_param("W") if node.has_param("W") else None
        if W is not None and W.shape[1] != len(names):
            raise ValueError(f"a factored table holds {W.shape[1]} columns for "
                             f"{len(names)} label parts")
        if len(_in_order(label_parts, names)) != len(names) \
                or node.attrs.get(LABEL_PARTS) != _layout(label_parts, names):
            raise ValueError("the labels' parts are not those the table was trained with")
    for node in _transition_layers(model):
        names = node.attrs.get(PARTS)
        if names is None or not node.has_param(PART_TRANSITIONS):
            continue
        weights = node.get_param(PART_TRANSITIONS)
        if weights is not None and tuple(weights.shape) != (len(names), len(names)):
            raise ValueError(f"factored transitions hold {weights.shape} weights for "
                             f"{len(names)} label parts")
        if node.attrs.get(LABEL_PARTS) != _layout(label_parts, names):
            raise ValueError("the labels' parts are not those the transitions were trained with")


def part_history(node: Model) -> Optional[List[int]]:
    """The part counts a factored table has had (``None``: it never grew parts)."""
    return node.attrs.get(PART_HISTORY)
