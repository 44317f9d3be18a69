"""Transitions factored over label parts: a label pair scores its own weight
plus a weight per pair of their parts.

A chain's ``transitions[a, b]`` is learnt for each label pair alone: with
hundreds of morphology labels most pairs are rare, so agreement ("a genitive
article before a genitive noun") is learnt again for every pair of labels
that show it. Factored, the score of the move from label ``a`` to label ``b``
is::

    transitions[a, b] + sum over parts p of a, q of b of part_transitions[p, q]

where the parts are those of the factored emission table
(``label_parts.py``: the POS and each ``Feature=Value``), so ``Case=Gen ->
Case=Gen`` is one weight that every such pair shares. On UD Greek GDT it adds
+0.25 UFeats on dev; on English EWT, whose morphology agrees little, nothing
(docs/architectures.md, "Factored transitions").

The structures never see the parts: the potentials layer hands them the
composed ``transitions`` (a ``K x K`` array, as before) and takes the gradient
of the parts' weights from theirs. Composing costs ``K x (parts per label)``
adds twice, with the kernels of the factored emissions
(``_kernels/label_parts.py``): about 0.1 ms a batch for EWT's 321 labels,
against 2 for a dense ``C P C^T``.

A potentials layer factors its transitions where its model's emission table
factors (:func:`label_parts.set_label_parts` marks it with the same parts);
a model saved before holds no ``part_transitions`` and scores as it did.
"""

import numpy as np
from thinc.api import Model

from .._kernels.label_parts import compose_parts_backward
from .label_parts import compose_labels, composition
from .layer_attrs import PART_AXES, PART_TRANSITIONS, PARTS  # noqa: F401 (re-exported)


def factors_transitions(node: Model) -> bool:
    """Whether the potentials layer ``node`` holds factored transitions (a
    model saved before they existed holds none)."""
    return bool(node.attrs.get(PARTS) is not None and node.has_param(PART_TRANSITIONS)
                and node.get_param(PART_TRANSITIONS) is not None)


def _sum_over_parts(rows: np.ndarray, starts: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``out[r, k]``: the sum of ``rows[r, p]`` over the parts ``p`` of label ``k``."""
    return compose_labels(np.ascontiguousarray(rows, dtype=np.float32), starts, index,
                          np.zeros(len(starts) - 1, dtype=np.float32))


def _sum_over_labels(rows: np.ndarray, starts: np.ndarray, index: np.ndarray,
                     n_parts: int) -> np.ndarray:
    """``out[r, p]``: the sum of ``rows[r, k]`` over the labels ``k`` that have part ``p``."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    out = np.empty((rows.shape[0], n_parts), dtype=np.float32)
    compose_parts_backward(rows, starts, index, out)
    return out


def compose(transitions: np.ndarray, part_transitions: np.ndarray, starts: np.ndarray,
            index: np.ndarray) -> np.ndarray:
    """The label transitions with the parts' pair weights added (see the module).

    Parameters
    ----------
    transitions : numpy.ndarray
        (K, K) the label pairs' own weights.
    part_transitions : numpy.ndarray
        (P, P) the part pairs' weights.
    starts, index : numpy.ndarray
        The parts of label ``k``: ``index[starts[k]:starts[k + 1]]``.

    Returns
    -------
    numpy.ndarray
        (K, K) float32.
    """
    # by_to[p, b] = sum over q of b of P[p, q]; then sum over p of a, transposed
    by_to = _sum_over_parts(part_transitions, starts, index)
    by_pair = _sum_over_parts(by_to.T, starts, index)  # [b, a]
    return (transitions + by_pair.T).astype(np.float32, copy=False)


def compose_backward(d_transitions: np.ndarray, starts: np.ndarray, index: np.ndarray,
                     n_parts: int) -> np.ndarray:
    """The gradient of :func:`compose` with respect to ``part_transitions``:
    ``d[p, q]`` is the sum of ``d_transitions[a, b]`` over the label pairs
    with ``p`` among ``a``'s parts and ``q`` among ``b``'s."""
    by_to = _sum_over_labels(d_transitions, starts, index, n_parts)  # [a, q]
    return _sum_over_labels(by_to.T, starts, index, n_parts).T.copy()  # [q, p] -> [p, q]


def composed_transitions(node: Model, transitions: np.ndarray) -> np.ndarray:
    """``transitions`` with the potentials layer ``node``'s part weights added."""
    starts, index = composition(node)
    return compose(transitions, node.get_param(PART_TRANSITIONS), starts, index)


def backprop_part_transitions(node: Model, d_transitions: np.ndarray) -> None:
    """Add the gradient of ``node``'s part weights, from the composed transitions'."""
    starts, index = composition(node)
    n_parts = node.get_param(PART_TRANSITIONS).shape[0]
    node.inc_grad(PART_TRANSITIONS, compose_backward(d_transitions, starts, index, n_parts))
