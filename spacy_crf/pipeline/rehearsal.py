"""Rehearsal: training toward the labellings a copy of the model gave, against forgetting.

``nlp.resume_training()`` copies each component's model as its teacher;
``nlp.rehearse()`` then asks each to move toward what its teacher predicts on
raw text, as spaCy's tagger rehearses toward its teacher's scores. A CRF's
target is the teacher's Viterbi labelling of each doc (the gold annotation is
not read), trained with the component's own loss (``CRFTagger.rehearse``),
and the gradients are stepped as ``nlp.rehearse`` asks: by its collector.
"""

from typing import Callable, List, Optional, Tuple, Union

import numpy as np
from spacy.training import Example
from thinc.api import Model, Optimizer

from .. import inference
from .._kernels.sparse_update import scatter_rows
from ..errors import Errors
from ..models.grow import LABEL_HISTORY
from ..models.sparse_table import ATTR as SPARSE_TABLE
from .learning import constrained, labelling_loss, training_docs
from .state import ComponentState


def rehearse(state: ComponentState, examples: List[Example], drop: float,
             sgd: Optional[Union[Optimizer, Callable]]) -> float:
    """One step toward the teacher's labellings of the examples' docs; the
    loss (0 without a teacher, or without tokens)."""
    teacher_model = state.rehearsal_model
    docs = None if teacher_model is None else training_docs(state, examples,
                                                            "CRFTagger.rehearse", drop)
    if docs is None:
        return 0.0
    batch = state.read_batch(docs)
    teacher = constrained(state, teacher_model.predict(batch), docs)
    scores, backprop = state.model.begin_update(batch)
    state.check_width(teacher)
    state.check_width(scores)
    # the teacher's labelling is the gold (the examples' own is not read)
    gold, _ = inference.viterbi(teacher, batch.layout, None)
    loss, d_scores = labelling_loss(state, constrained(state, scores, docs), batch.layout, gold)
    backprop(d_scores)
    if isinstance(sgd, Optimizer):
        state.step(sgd)
    elif callable(sgd):
        # (the collector steps after this returns: the averages the model
        # predicts with take that step at their next use)
        state.averages.step_elsewhere(state.model)
        step_through_collector(state.model, sgd)
    elif sgd is not None:
        raise ValueError(Errors.E164.format(name=state.name, sgd=sgd))
    return loss


def step_through_collector(model: Model, sgd: Callable) -> None:
    """Hand the gradients to ``nlp.rehearse``'s collector, which steps them
    with the pipeline's optimizer after every component has rehearsed.

    The collector takes dense arrays, so each hashed table's pending rows go
    to it as a dense gradient under a key of its own (``(id, "W:rehearse")``):
    the optimizer state that key gets is dense, and must not meet the compact
    row state the table's sparse steps keep under ``(id, "W")``. The gradient
    is not left on the model, where the next sparse step would find it.
    Every other parameter is stepped as thinc's ``Model.finish_update`` steps
    it, under :func:`collector_key`.
    """
    for node in model.walk():
        table = node.attrs.get(SPARSE_TABLE)
        if table is not None and table.n_rows:
            W = node.get_param("W")
            grad = np.zeros_like(W)
            scatter_rows(table.rows, table.grads, table.n_rows, grad)
            table.clear()
            sgd(collector_key(node, "W:rehearse"), W, grad)
    for node in model.walk():
        for shim in node.shims:
            shim.finish_update(sgd)
    for node in model.walk():
        for name in node.param_names:
            if node.has_grad(name):
                param, grad = sgd(collector_key(node, name), node.get_param(name),
                                  node.get_grad(name))
                node.set_param(name, param)
                node.set_grad(name, grad)


def collector_key(node: Model, name: str) -> Tuple[int, str]:
    """The optimizer key of ``node``'s parameter ``name`` handed to the
    collector: thinc's ``(id, name)``, with the label count for a layer that
    has grown new labels (``add_label``, ``models/grow.py``).

    The collector's optimizer is one the component never sees, and it may
    hold moments of the layer at its size before growing (an optimizer kept
    across ``add_label``, as ``nlp.resume_training()`` keeps the pipeline's):
    an update's step grows them (``grow_optimizer_state``), but this path
    cannot, and thinc would meet arrays of two sizes. A key per size starts
    the grown layer's state afresh, as spaCy's ner, which grows by making a
    new output layer (a new id).
    """
    history = node.attrs.get(LABEL_HISTORY)
    return (node.id, f"{name}:{history[-1]} labels" if history else name)
