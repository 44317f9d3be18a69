"""The ``crf_tagger`` component: a CRF sequence labeller for spaCy pipelines.

A thin adapter between Docs/Examples and arrays, in spaCy's method order. A
batch of Docs becomes a :class:`~spacy_crf.features.doc_arrays.DocBatch`:
the component's structure (``spacy_crf.structures``) reads its layout
(sequences, heads, segments) from it once, the model scores it into
:class:`~spacy_crf.models.CRFScores` sharing those readings, and the
structure's kernels (through ``spacy_crf.inference``) decode the scores and
give the loss; a :class:`~spacy_crf.targets.Target` reads gold labels and
writes predictions. Its labels, model and target are one
:class:`~.state.ComponentState`, handed to :mod:`.initialize`, :mod:`.learning`
(the loss of a batch), :mod:`.prediction` and :mod:`.saved_state`.
"""

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_DOC, DocBatch, doc_lengths
from ..models.featurize import add_optional_templates, set_owner, set_sequence
from ..models.potentials import CRFScores, relation_groups
from ..models.sparse_table import sync_averages
from ..models.whole_label import add_whole_label_weights
from ..scoring import score_crf
from ..structures import (BatchLayout, ComponentView, CRFStructure, StructureSpec, as_spec,
                          migrate_model_settings)
from ..targets import Target, check_label
from . import learning, saved_state
from .component_name import FollowsItsName
from .source_settings import with_source_settings
from .initialize import initialize
from .inputs import input_attrs, warn_missing_inputs
from .prediction import CRFPrediction, decode, model_scores, write_prediction
from .pipe_meta import assigned_attributes
from .rehearsal import rehearse
from .settings import check_settings, initial_cfg, resolve_structure, settings_of
from .state import ComponentState


class CRFTagger(FollowsItsName, TrainablePipe):
    """A conditional random field over the tokens of each Doc (its model's
    columns, the tags, in ``cfg["labels"]``)."""

    def __init__(self, vocab: Vocab, model: Model[List[Doc], CRFScores],
                 name: str = "crf_tagger", *, target: str = "tag",
                 structure: Union[str, StructureSpec] = "chain", sequence: str = SEQUENCE_DOC,
                 scheme: str = "BILUO", keep_existing: Optional[bool] = None,
                 store_confidence: bool = False, n_best: int = 0, loss: str = "nll",
                 scorer: Optional[Callable] = score_crf) -> None:
        # E012 for a name that is no structure's; settings an old architecture
        # was given moved into the block; those left null chosen for this component
        spec = migrate_model_settings(as_spec(structure), model)
        spec = resolve_structure(spec, model, target, scheme)
        settings = dict(target=target, sequence=sequence, scheme=scheme, loss=loss, n_best=n_best,
                        keep_existing=keep_existing, store_confidence=store_confidence)
        crf_structure, target = check_settings(model, name, structure=spec, **settings)
        self.vocab, self.name, self.scorer = vocab, name, scorer
        self._inputs_checked = False  # (setting the name registered its extensions)
        model = add_whole_label_weights(model, target.whole_label_templates)  # before a wrap
        model = crf_structure.prepare_model(model, target, spec.settings) or model
        add_optional_templates(model, target.optional_templates)
        set_sequence(model, sequence)
        set_owner(model, name)
        self._state = ComponentState(name, vocab, initial_cfg(spec, **settings), model, target,
                                     spec.by_labels)
        self._mirror_model()
        target.check_model(model, self.n_relation_groups)

    @property
    def cfg(self) -> Dict[str, Any]:
        """The settings and the labels (``labels``, ``unseen_labels``): what is saved."""
        return self._state.cfg

    @property
    def model(self) -> Model[List[Doc], CRFScores]:
        """The thinc model: Docs to :class:`~spacy_crf.models.CRFScores`."""
        return self._state.model

    @property
    def target(self) -> Target:
        """Where the labels are read and written (``cfg["target"]``)."""
        return self._state.target

    @property
    def _rehearsal_model(self) -> Optional[Model]:
        # the teacher of rehearse(), set by nlp.resume_training() under this name
        return self._state.rehearsal_model

    @_rehearsal_model.setter
    def _rehearsal_model(self, model: Optional[Model]) -> None:
        self._state.rehearsal_model = model

    @property
    def crf_structure(self) -> CRFStructure:
        """The strategy that runs the component's structure (``spacy_crf.structures``)."""
        return self._state.structure

    @property
    def structure_spec(self) -> StructureSpec:
        """The component's structure and its settings, as its config block gives them."""
        return self._state.resolved.spec

    @property
    def n_relation_groups(self) -> int:
        """Relation groups of the model's label-interaction scores."""
        return relation_groups(self.model)

    @property
    def component_view(self) -> ComponentView:
        """What the structure reads of the component (its name, cfg, vocab, target)."""
        return self._state.view

    @property
    def keep_existing(self) -> bool:
        """Whether labels on a doc are kept (``cfg["keep_existing"]``; None: as spaCy's pipe)."""
        return self._state.keep_existing

    @property
    def tags(self) -> tuple:
        """The model's output columns, in order: the labels of a token target,
        the scheme's tags of a span target (``O``, ``B-PER``, ...)."""
        return self._state.tags

    @property
    def labels(self) -> tuple:
        """The labels: a span target's types, sorted (``("LOC", "PER")``, as
        spaCy's ``ner`` and ``spancat`` give them), else :attr:`tags`."""
        return self.target.public_labels(self.tags)

    @property
    def label_data(self) -> List[str]:
        """The labels, for ``spacy init labels`` and ``initialize(labels=...)``: a span
        target's types (a type with only some of the scheme's tags, or named like a
        tag, as its tags), so that they read back into the same :attr:`tags`."""
        return self.target.label_data(self.tags)

    @property
    def assigns(self) -> List[str]:
        """What the component writes, as spaCy's pipe meta names it: its
        target's attribute, and the confidence extensions where they are on."""
        return assigned_attributes(self.name, self.target, self.cfg)

    def predict(self, docs: Iterable[Doc]) -> CRFPrediction:
        """Viterbi-decode a batch of Docs (does not modify them).

        Parameters
        ----------
        docs : iterable of Doc
            The batch.

        Returns
        -------
        CRFPrediction
            Label ids of every token, and confidences if ``store_confidence``.
        """
        # (a DocBatch from the start: the lengths read here serve the layout too)
        docs = DocBatch(docs)
        lengths = doc_lengths(docs)
        if not int(lengths.sum()):
            return CRFPrediction(np.zeros((0,), dtype=np.int64), lengths)
        self._state.require_labels()
        self.check_inputs(docs)
        self.use_prediction_weights()
        batch = self.read_batch(docs)
        scores = self.constrain_scores(model_scores(self._state, batch), docs)
        self._state.check_width(scores)
        return decode(self._state, docs, scores, batch.layout, lengths)

    def set_annotations(self, docs: Iterable[Doc], prediction: CRFPrediction) -> None:
        """Write the predicted labels (and confidences, n-best lists) onto the Docs."""
        write_prediction(self._state, list(docs), prediction)

    def update(self, examples: Iterable[Example], *, drop: float = 0.0,
               sgd: Optional[Optimizer] = None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """Learn from a batch of examples: one gradient step of the configured ``loss``."""
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        docs = learning.training_docs(self._state, examples, "CRFTagger.update", drop)
        if docs is None:
            return losses
        learning.add_gold_types(self._state, examples)  # a span type first seen: the model grows
        self.check_inputs(docs)
        batch = self.read_batch(docs)
        scores, backprop = self.model.begin_update(batch)
        loss, d_scores = learning.batch_loss(self._state, examples,
                                             self.constrain_target(scores, docs), batch.layout,
                                             learn=True)
        backprop(d_scores)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    def get_loss(self, examples: Iterable[Example], scores: CRFScores):
        """Summed loss of the gold labels (the configured ``loss``) and its
        gradient; tokens without a gold label are marginalised out (nll) or take
        their best gold-consistent labels (perceptron, hinge)."""
        examples = list(examples)
        validate_examples(examples, "CRFTagger.get_loss")
        docs = [eg.predicted for eg in examples]
        return learning.batch_loss(self._state, examples, self.constrain_target(scores, docs),
                                   self.batch_layout(docs))

    def rehearse(self, examples: Iterable[Example], *, drop: float = 0.0,
                 sgd: Optional[Union[Optimizer, Callable]] = None,
                 losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """Train toward the labellings the model gave when ``nlp.resume_training()``
        copied it, against forgetting (:mod:`.rehearsal`; nothing without it)."""
        losses = {} if losses is None else losses
        losses[self.name] = losses.get(self.name, 0.0) + rehearse(self._state, list(examples),
                                                                  drop, sgd)
        return losses

    def gold_label_ids(self, examples: List[Example], scores: CRFScores,
                       layout: BatchLayout) -> np.ndarray:
        """Gold label ids of the batch's tokens, -1 where unknown (W003 for span
        tags that break the scheme); ``scores`` constrained (:meth:`constrain_scores`),
        ``layout`` :meth:`batch_layout`'s. The batch trainer reads its labels here."""
        return learning.gold_label_ids(self._state, examples, scores, layout)

    @with_source_settings
    def initialize(self, get_examples: Callable[[], Iterable[Example]], *,
                   nlp: Optional[Language] = None, labels: Optional[Sequence[str]] = None,
                   keep_weights: bool = False, **sources: Any) -> None:
        """Collect the labels, build the word tables and allocate the model
        (the settings of ``[initialize.components.NAME]``).

        Parameters
        ----------
        get_examples : callable
            Returns the training examples (labels from their reference docs).
        nlp : Language, optional
            The pipeline.
        labels : sequence of str, optional
            The label set, e.g. from ``spacy init labels``; for a span target
            types (``PER``: every tag of the type), tags (``B-PER``) or both.
        keep_weights : bool
            On a trained component, keep its labels and weights and add the
            examples' (or ``labels``', E167) new ones as ``add_label`` does.
        **sources
            The settings of the registered feature sources
            (``spacy_crf.feature_sources``), each source's own: a table file,
            phrase lists and how to match them (docs/features.md lists them).
            spaCy checks them as it checks the component's own: the
            method's signature names them (``source_settings.py``).
        """
        initialize(self._state, get_examples, nlp=nlp, labels=labels, keep_weights=keep_weights,
                   sources=sources)

    def constrain_scores(self, scores: CRFScores,
                         docs: Optional[Sequence[Doc]] = None) -> CRFScores:
        """``scores`` (the model's output) as the CRF decodes and trains on them:
        with the target's constraints (a span scheme's forbidden moves, the
        labels its tokens may take where ``docs``, the batch, is given) and
        ``-inf`` for the labels not learned yet."""
        return learning.constrained(self._state, scores, docs)

    def constrain_target(self, scores: CRFScores,
                         docs: Optional[Sequence[Doc]] = None) -> CRFScores:
        """``scores`` with the target's constraints: its forbidden moves, and
        where ``docs`` is given the labels each token may not take (the lemma
        trees that do not apply to its form) at ``-inf``."""
        return learning.mask_candidates(self._state, self.target.constrain(scores), docs)

    def learn_new_labels(self, gold: np.ndarray) -> None:
        """Predict the new labels ``gold`` has from now on (the batch trainer
        calls this for its corpus; ``update`` does it for every batch)."""
        self._state.learn_new_labels(gold)

    def add_label(self, label: str) -> int:
        """Add a label (a span target's type, ``"LOC"``, adds all its tags, a
        tag, ``"B-LOC"``, that tag); 1 if new, else 0.

        Before ``initialize`` the label joins those it finds. A trained model
        grows (zero weights for the label) and predicts exactly as before until
        an update has the label in gold (``nlp.resume_training()`` and
        ``nlp.update``, or ``python -m spacy_crf.fit --init-from``).
        """
        check_label(label)  # E062, E263
        new = [tag for tag in self.target.labels_for(label) if tag not in self.tags]
        if not new:
            return 0
        self._state.add_labels(new)
        return 1

    def finish_update(self, sgd: Optimizer) -> None:
        """Step the parameters (:meth:`.state.ComponentState.step`)."""
        self._state.step(sgd)

    def use_prediction_weights(self) -> None:
        """Make the model hold the weights it predicts with (the moving average
        of ``average_weights``): for reading ``self.model`` as a predictor by
        hand; ``predict`` and saving do it, the next update takes them back."""
        self._state.averages.show_averages(self.model)

    def use_params(self, params: Dict) -> Iterator[None]:
        """Swap in e.g. the optimizer's averages (a generator, as
        ``Language.use_params`` drives it with ``next()``)."""
        # (the optimizer's averages follow the iterate)
        self._state.averages.show_iterate(self.model)
        sync_averages(self.model, params)
        with self.model.use_params(params):
            self._state.averages.lent = bool(params)
            try:
                yield
            finally:
                self._state.averages.lent = False

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        """Score predictions (see ``spacy_crf.scoring.score_crf``)."""
        validate_examples(examples := list(examples), "CRFTagger.score")
        return learning.checked_scores(self._state, examples, self.scorer(  # (W053)
            examples, **{"target": self.cfg["target"], **self.target.scorer_args(), **kwargs}))

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save cfg and the (averaged) weights; an interrupted save leaves no loadable file."""
        saved_state.to_disk(self._state, path, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load what ``to_disk`` wrote; a failed load leaves the component as it was."""
        saved_state.from_disk(self._state, path, exclude)
        return self._mirror_model()

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize ``cfg`` and the model's weights, less the parts named in ``exclude``."""
        return saved_state.to_bytes(self._state, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load ``to_bytes`` output; a failed load leaves the component as it was."""
        saved_state.from_bytes(self._state, bytes_data, exclude)
        return self._mirror_model()

    def input_attrs(self) -> List[Tuple[str, str]]:
        """(attribute, why) of every token annotation the component reads from its docs
        (``TAG``, ``POS``, ``MORPH``, ``LEMMA``, ``DEP`` for a parse, ``SENT_START``)."""
        return input_attrs(self.model, self.crf_structure.needs_parse, self.cfg["structure"],
                           self.cfg["sequence"])

    def check_inputs(self, docs: Sequence[Doc]) -> None:
        """W005, once per component, for an input no doc of the first batch has (a missing
        parse is E015 instead); W055 for docs of a language it was not trained in."""
        if not self._inputs_checked:
            self._inputs_checked = True
            warn_missing_inputs(self.name, docs, self.input_attrs(), self.cfg.get("lang"))

    def read_batch(self, docs: Sequence[Doc]) -> DocBatch:
        """``docs`` as the structure and the model read them: a ``DocBatch`` with
        the ``layout`` the structure built (a missing parse fails here)."""
        return self._state.read_batch(docs)

    def batch_layout(self, docs: Sequence[Doc]) -> BatchLayout:
        """The layout :meth:`read_batch` builds, read by inference beside the scores."""
        return self.read_batch(docs).layout

    def _mirror_model(self) -> "CRFTagger":
        # the state holds the model; spaCy's compiled TrainablePipe methods
        # (is_resizable, set_output) read their own slot of it, kept in step here
        TrainablePipe.model.__set__(self, self.model)
        return self

    def __reduce__(self):
        # rebuilt through __init__ in a worker process (nlp.pipe(n_process=...), spawn):
        # that registers the extensions there too; it predicts with the averaged weights
        self.use_prediction_weights()
        return (rebuild, (CRFTagger, self.vocab, self.model, self.name, self.cfg, self.scorer))


def rebuild(cls: type, vocab: Vocab, model: Model, name: str, cfg: Dict[str, Any],
            scorer: Optional[Callable]) -> CRFTagger:
    """A component of class ``cls`` made again from its pickled parts (through
    ``__init__``, which registers the token extensions in a worker process)."""
    pipe = cls(vocab, model, name, scorer=scorer, **settings_of(cfg))
    pipe._state.update_structure(cfg)  # with what initialize added to the cfg
    pipe._state.set_labels(pipe.cfg["labels"])
    return pipe
