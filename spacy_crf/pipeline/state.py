"""A crf_tagger's learnable state in one place: its labels, model and target.

They change together: ``initialize`` sets them, ``add_label`` and a span type
an update first sees grow them, updates learn the labels added to a trained
model, a load swaps in saved ones. :class:`ComponentState` holds them, with
what training keeps beside them, and each such change is one of its methods.
The labels live in ``cfg["labels"]`` (the cfg is what is saved); the target is
set from them. Those added to a trained model and not learned yet are
``cfg["unseen_labels"]`` (:mod:`spacy_crf.unseen_labels`).
"""

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..errors import Errors
from ..features.doc_arrays import DocBatch
from ..models.architectures import grow_n_labels
from ..models.featurize import set_sequence
from ..models.label_parts import set_label_parts
from ..models.potentials import (CRFScores, declare_params, is_initialized, relation_groups,
                                 undeclare_params)
from ..models.token_transitions import has_token_transitions
from ..models.sparse_table import step_model
from ..models.weight_average import WeightAverages
from ..structures import (BatchLayout, ComponentView, CRFStructure, ResolvedStructure,
                          StructureSpec, settings_left_behind)
from ..targets import Target, make_target
from ..unseen_labels import seen_in


class ComponentState:
    """The labels, settings, model and target of a component, and what training keeps.

    Attributes
    ----------
    name : str
        The component's name, for messages.
    vocab : Vocab
        The pipeline's vocab (the target's label strings).
    cfg : dict
        The component's settings and its labels (``labels``, ``unseen_labels``).
    model : Model
        The thinc model; its label-sized weights have a column per label.
    target : Target
        Where the labels are read and written, set from ``cfg["labels"]``.
    averages : WeightAverages
        The weights' moving average, predicted with (``average_weights``).
    rehearsal_model : Model or None
        The teacher of ``rehearse`` (a copy of the model, by ``nlp.resume_training()``).
    added_labels : list of str
        Labels ``add_label`` gave before ``initialize``, which keeps them.

    ``cfg``, ``model`` and ``target`` are replaced by :meth:`swap` alone.
    """

    def __init__(self, name: str, vocab: Vocab, cfg: Dict[str, Any], model: Model, target: Target,
                 structure_by_labels: Optional[Callable[[Target], StructureSpec]] = None) -> None:
        self.name, self.vocab, self.cfg, self.model, self.target = name, vocab, cfg, model, target
        # the config's choice by label count (StructureSpec.by_labels), made at
        # every fresh initialize; the cfg saves what it chose
        self.structure_by_labels = structure_by_labels
        self.averages = WeightAverages()
        self.rehearsal_model: Optional[Model] = None
        self.added_labels: List[str] = []
        self.resolved = ResolvedStructure.of(cfg, has_token_transitions(model))

    @property
    def tags(self) -> tuple:
        """The model's output columns, in order (``cfg["labels"]``)."""
        return tuple(self.cfg["labels"])

    @property
    def structure(self) -> CRFStructure:
        """The strategy that runs the structure ``cfg`` describes for this model."""
        return self.resolved.strategy

    def update_structure(self, changes: Mapping[str, Any]) -> None:
        """Write the structure's settings ``changes`` into the cfg (less those of
        a structure they replace) and resolve it again."""
        for key in settings_left_behind(self.cfg, changes.get("structure", self.cfg["structure"])):
            del self.cfg[key]
        self.cfg.update(changes)
        self.resolved = ResolvedStructure.of(self.cfg, has_token_transitions(self.model))

    @property
    def view(self) -> ComponentView:
        """What the structure reads of the component."""
        return ComponentView(self.name, self.cfg, self.vocab, self.target,
                             relation_groups(self.model))

    @property
    def keep_existing(self) -> bool:
        """Whether labels already on a doc are kept (``cfg["keep_existing"]``,
        ``None``: as the target's spaCy pipe does)."""
        setting = self.cfg.get("keep_existing")
        return self.target.keeps_existing if setting is None else bool(setting)

    def read_batch(self, docs: Sequence) -> DocBatch:
        """``docs`` as a ``DocBatch`` with the structure's layout, whose
        sentences and heads the model's features share (a missing parse
        fails here); a fresh ``DocBatch`` keeps what it has read so far."""
        batch = docs if isinstance(docs, DocBatch) and docs.layout is None else DocBatch(docs)
        batch.layout = self.structure.layout(batch, self.view)
        return batch

    def step(self, sgd: Optimizer) -> None:
        """Step the parameters: the hashed tables row-sparse, the rest as thinc
        does, each layer with its own learning-rate scale, and the weights'
        moving average where the optimizer keeps none (``average_weights``)."""
        step_model(self.model, sgd, self.averages.for_step(self.model, sgd))

    def initialized(self) -> bool:
        """Whether the model has its weights (``initialize`` or a load gave them)."""
        return is_initialized(self.model)

    def require_labels(self) -> None:
        """E007 before ``initialize``: nothing to predict or train yet."""
        if not self.tags or not self.initialized():
            raise ValueError(Errors.E007.format(name=self.name))

    def check_width(self, scores: CRFScores) -> None:
        """E013 where the model scored another number of labels than it has."""
        expected = self.structure.emission_width(len(self.tags))
        got = scores.emissions.shape[1]
        if got != expected:
            raise ValueError(Errors.E013.format(name=self.name, n_labels=got, expected=expected))

    def set_labels(self, labels: Sequence[str]) -> None:
        """Make ``labels`` the label set, in the cfg and the target."""
        self.cfg["labels"] = list(labels)
        self.target.set_labels(self.cfg["labels"], self.vocab)

    def restart(self, labels: Sequence[str]) -> None:
        """``labels``, for new weights: the averages of the old weights go
        (with the iterate they followed), no label waits to be learned, and
        those added before ``initialize`` have been taken in."""
        self.averages.show_iterate(self.model)
        self.averages.clear()
        self.set_labels(labels)
        self.cfg["unseen_labels"] = []
        self.added_labels = []

    def choose_structure(self) -> None:
        """The structure the config leaves to the label count, for the labels
        set now (a fresh ``initialize``, before the weights are allocated):
        its settings into the cfg, and the parameters the model declares made
        the chosen structure's."""
        if self.structure_by_labels is None:
            return
        old = self.structure
        self.update_structure(self.structure_by_labels(self.target).cfg())
        new = self.structure
        undeclare_params(self.model, set(old.params) - set(new.params))
        declare_params(self.model, new.params)

    def add_labels(self, new: Sequence[str]) -> None:
        """Add ``new`` labels: before ``initialize`` they join those it finds;
        a trained model grows (:meth:`grow`)."""
        if self.initialized():
            self.grow(new)
        else:
            self.set_labels(list(self.tags) + list(new))
            self.added_labels.extend(new)

    def grow(self, new: Sequence[str]) -> None:
        """Append ``new`` labels to a trained model (and its rehearsal
        teacher): zero weights, and never predicted until some gold has them."""
        n_old, labels = len(self.tags), list(dict.fromkeys([*self.tags, *new]))  # each once
        grown_cfg = self.structure.grow_cfg(self.view, n_old, len(labels))  # may refuse
        make_target(self.cfg["target"], self.cfg["scheme"]).set_labels(labels, self.vocab)  # E061
        # the model grows from the weights it predicts with; averaging starts afresh
        self.averages.commit(self.model)
        parts = [self.target.label_parts(label) for label in labels]
        for model in (self.model, self.rehearsal_model):
            if model is not None:
                grow_n_labels(model, n_old, len(labels))
                set_label_parts(model, parts, grow=True)  # a factored table's new parts
        self.update_structure(grown_cfg)
        self.set_labels(labels)
        self.cfg["unseen_labels"] = list(self.cfg.get("unseen_labels", [])) + labels[n_old:]

    def unseen_ids(self, but: Sequence[str] = ()) -> List[int]:
        """The columns of the labels not learned yet, but ``but``."""
        return [self.tags.index(label) for label in self.cfg.get("unseen_labels") or []
                if label not in but]

    def new_labels_in(self, gold: np.ndarray) -> List[str]:
        """The labels not learned yet that ``gold`` (label ids, -1 unknown)
        has, with every tag of their span types."""
        unseen = self.cfg.get("unseen_labels") or []
        kinds = {self.target.kind_of(label) for label in seen_in(gold, unseen, self.tags)}
        return [label for label in unseen if self.target.kind_of(label) in kinds]

    def learn_new_labels(self, gold: np.ndarray) -> None:
        """Predict the new labels ``gold`` has from now on."""
        seen = self.new_labels_in(gold)
        self.cfg["unseen_labels"] = [label for label in self.cfg.get("unseen_labels") or []
                                     if label not in seen]

    def swap(self, cfg: Dict[str, Any], model: Model, target: Target) -> None:
        """Take a loaded ``cfg``, ``model`` and ``target``, checked by the load
        beforehand (so that a failed load leaves this state as it was)."""
        resolved = ResolvedStructure.of(cfg, has_token_transitions(model))  # before anything changes
        if model is not self.model:
            # new weights: the averages of the old ones go (a copy's layers keep
            # their ids, so old averages would match). A kept model keeps its
            # averages and iterate: dropping the iterate while the model showed
            # the averages would leave them owing the iterate's L1 penalty
            self.averages.clear()
        self.cfg, self.model, self.target, self.resolved = cfg, model, target, resolved
        set_sequence(model, cfg["sequence"])
        self.set_labels(cfg["labels"])
