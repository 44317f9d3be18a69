"""The ``crf_tagger`` component: a CRF sequence labeller for spaCy pipelines.

A thin adapter between Docs/Examples and arrays, in spaCy's method order: the
model turns a batch of Docs into :class:`~spacy_crf.models.CRFScores`; the
component's structure (``spacy_crf.structures``) lays the batch out and its
kernels (through ``spacy_crf.inference``) decode it and give the loss; a
:class:`~spacy_crf.targets.Target` reads gold labels and writes predictions.
The parts with a job of their own live beside it: the factory
(:mod:`.factory`), the label set ``initialize`` reads (:mod:`.initial_labels`),
the inputs read from other components (:mod:`.inputs`), decoding and writing
predictions (:mod:`.prediction`), rehearsal (:mod:`.rehearsal`), saving and
loading (:mod:`.saved_state`).
"""

import zlib
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate

from ..errors import Errors, Warnings, warn
from ..features.doc_arrays import SEQUENCE_DOC, doc_lengths, read_once
from ..models.architectures import grow_n_labels, has_token_transitions, set_n_labels
from ..models.featurize import set_owner, set_sequence
from ..models.hashed_linear import seed_dropout
from ..models.hmm import FIT_COUNTS
from ..models.potentials import CRFScores, find_potentials
from ..models.sparse_table import restart_boost, step_model, sync_averages
from ..models.weight_average import WeightAverages
from ..losses import each_expert, get_loss
from ..scoring import score_crf
from ..structures import BatchLayout, CRFStructure, StructureSpec, as_spec, spec_from_cfg, strategy_of
from ..targets import make_target
from ..unseen_labels import mask_labels, seen_in
from ..util import training_seed
from . import saved_state
from .extensions import register_confidence_extension
from .initial_labels import initial_labels
from .inputs import (check_dep_target, input_attrs, upstream_annotated, warn_missing_inputs,
                     warn_no_lexeme_norm)
from .lexicon_setup import set_up_lexicon
from .prediction import CRFPrediction, decode, write_prediction
from .rehearsal import rehearse
from .settings import check_settings, resolve_structure


class CRFTagger(TrainablePipe):
    """A conditional random field over the tokens of each Doc.

    Labels live in ``cfg["labels"]`` and are serialized with the component.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFScores],
        name: str = "crf_tagger",
        *,
        target: str = "tag",
        structure: Union[str, StructureSpec] = "chain",
        sequence: str = SEQUENCE_DOC,
        scheme: str = "BILUO",
        keep_existing: Optional[bool] = None,
        store_confidence: bool = False,
        n_best: int = 0,
        loss: str = "nll",
        scorer: Optional[Callable] = score_crf,
    ) -> None:
        # E012 for a name that is no structure's; settings left null chosen for this component
        spec = resolve_structure(as_spec(structure), model, target, scheme)
        crf_structure, self.target = check_settings(
            model, name, target=target, structure=spec, sequence=sequence, scheme=scheme,
            keep_existing=keep_existing, store_confidence=store_confidence, n_best=n_best,
            loss=loss)
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {
            "labels": [],
            "target": target,
            # the structure's name and its own settings (saved as components
            # saved before structures were config blocks saved them)
            **spec.cfg(),
            "sequence": sequence,
            "scheme": scheme,
            "keep_existing": keep_existing,
            "store_confidence": bool(store_confidence),
            "n_best": n_best,
            "loss": loss,
            "relations": [],
            # labels added to the trained model that no update has had in gold:
            # never predicted until then (spacy_crf.unseen_labels)
            "unseen_labels": [],
        }
        # labels given with add_label() before initialize(): kept by it
        self._added_labels: List[str] = []
        self._inputs_checked = False
        # the teacher of rehearse(): nlp.resume_training() sets it to a copy of the model
        self._rehearsal_model: Optional[Model] = None
        # the moving average of the weights, predicted with (models/weight_average.py)
        self._averages = WeightAverages()
        register_confidence_extension()
        self.model = crf_structure.prepare_model(self.model, target) or self.model
        set_sequence(self.model, sequence)
        set_owner(self.model, name)
        if target == "dep":
            check_dep_target(self.model, self.n_relation_groups)

    @property
    def crf_structure(self) -> CRFStructure:
        """The strategy that runs the component's structure (``spacy_crf.structures``)."""
        return strategy_of(self.structure_spec, has_token_transitions(self.model))

    @property
    def structure_spec(self) -> StructureSpec:
        """The component's structure and its settings, as its config block gives them."""
        return spec_from_cfg(self.cfg)

    @property
    def n_relation_groups(self) -> int:
        """Relation groups of the model's label-interaction scores (its ``n_relations``;
        1 for a model without a ``crf_potentials`` layer, such as the HMM)."""
        potentials = find_potentials(self.model)
        return 1 if potentials is None else potentials.get_dim("nR")

    @property
    def keep_existing(self) -> bool:
        """Whether labels already on a doc are kept (``cfg["keep_existing"]``;
        ``None`` as spaCy's own pipe for the target: only ``ents`` keeps them)."""
        setting = self.cfg.get("keep_existing")
        return self.target.name == "ents" if setting is None else bool(setting)

    @property
    def labels(self) -> tuple:
        """The labels, in the order of the model's output columns."""
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> List[str]:
        """The labels, for ``spacy init labels`` and ``initialize(labels=...)``."""
        return list(self.labels)

    @property
    def assigns(self) -> List[str]:
        """What the component writes, as spaCy's pipe meta names it: its
        target's attribute, and the confidence extensions where they are on."""
        out = list(self.target.assigns)
        if self.cfg["store_confidence"]:
            out.append("token._.crf_confidence")
            if self.target.is_span_target:
                out.append("span._.crf_confidence")
        if self.cfg["n_best"]:
            out.append("doc._.crf_nbest")
        return out

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
        docs = list(docs)
        lengths = doc_lengths(docs)
        if not int(lengths.sum()):
            return CRFPrediction(np.zeros((0,), dtype=np.int64), lengths)
        self._require_labels()
        self.check_inputs(docs)
        self.use_prediction_weights()
        with read_once(docs):  # the features and the layout share the sequences and heads
            layout = self.batch_layout(docs)
            scores = self.constrain_scores(self.model.predict(docs))
        self._check_width(scores)
        fixed = None
        if self.keep_existing:
            fixed, scores = self.target.fixed_labels([doc for doc in docs if len(doc)], scores)
        if fixed is not None and not (fixed >= 0).any():
            fixed = None  # nothing on the docs to keep: decode freely (the same, faster)
        return decode(self, scores, layout, lengths, fixed)

    def set_annotations(self, docs: Iterable[Doc], prediction: CRFPrediction) -> None:
        """Write the predicted labels (and confidences, n-best lists) onto the Docs."""
        write_prediction(self, list(docs), prediction)

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a batch of examples: one gradient step of the configured ``loss``."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        docs = self._training_docs(examples, "CRFTagger.update", drop)
        if docs is None:
            return losses
        self.check_inputs(docs)
        with read_once(docs):
            layout = self.batch_layout(docs)  # a missing parse fails here, before any work
            scores, backprop = self.model.begin_update(docs)
        loss, d_scores = self._loss(examples, self.target.constrain(scores), layout, learn=True)
        backprop(d_scores)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    def _training_docs(self, examples: List[Example], caller: str,
                       drop: float) -> Optional[List[Doc]]:
        """The predicted docs of a training step's examples (``update``,
        ``rehearse``), the model set to train on them: its dropout, and the
        weights it trains rather than their average. None for a batch without
        a token; E007 before ``initialize``."""
        validate_examples(examples, caller)
        docs = [eg.predicted for eg in examples]
        if not int(doc_lengths(docs).sum()):
            return None
        self._require_labels()
        set_dropout_rate(self.model, drop)
        self._averages.show_iterate(self.model)
        return docs

    def get_loss(self, examples: Iterable[Example], scores: CRFScores):
        """Summed loss of the gold labels (the configured objective, by default the
        negative log-likelihood), and its gradient.

        Tokens without a gold label (unannotated, or a label unseen at
        initialize) are marginalised out (the likelihood) or take their best
        gold-consistent labels (perceptron, hinge).
        """
        examples = list(examples)
        validate_examples(examples, "CRFTagger.get_loss")
        return self._loss(examples, self.target.constrain(scores),
                          self.batch_layout([eg.predicted for eg in examples]))

    def rehearse(self, examples: Iterable[Example], *, drop: float = 0.0,
                 sgd: Optional[Union[Optimizer, Callable]] = None,
                 losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """Train toward the labellings the model gave when ``nlp.resume_training()``
        copied it (against forgetting while training on new data), as spaCy's
        tagger rehearses toward its teacher's scores (:mod:`.rehearsal`).

        Without a teacher (no ``nlp.resume_training()``) nothing changes.
        ``sgd`` is a thinc Optimizer, or a function ``(key, param, grad)`` as
        ``nlp.rehearse()`` passes (the gradients go to it densely).
        """
        return rehearse(self, examples, drop=drop, sgd=sgd,
                        losses={} if losses is None else losses)

    def _loss(self, examples: List[Example], scores: CRFScores,
              layout: BatchLayout, learn: bool = False):
        self._check_width(scores)
        gold = self.gold_label_ids(examples, scores, layout)
        # new labels this gold has are trained (and, in an update, predicted from now on)
        seen = self._new_labels_in(gold)
        if learn and FIT_COUNTS not in self.model.attrs:
            # (a generative model, the HMM, learns from counts, not from updates:
            # its new labels are learned when initialize refits them)
            self.learn_new_labels(gold)
        return self._objective(self._mask_unseen(scores, but=seen), layout, gold)

    def _objective(self, scores: CRFScores, layout: BatchLayout, gold: np.ndarray):
        """The configured loss of ``gold`` label ids (-1: unknown) and its gradient;
        ``scores`` must be constrained. E009 if it is not finite."""
        per_sequence, gradient = each_expert(get_loss(self.cfg.get("loss", "nll")),
                                             scores, layout, gold)
        loss = float(per_sequence.sum())
        if not np.isfinite(loss):
            raise ValueError(Errors.E009.format(name=self.name, value=loss))
        return loss, gradient

    def gold_label_ids(self, examples: List[Example], scores: CRFScores,
                       layout: BatchLayout) -> np.ndarray:
        """Gold label ids of the batch's tokens, -1 where unknown; for span
        targets, tags that break the scheme are unannotated (W003). ``scores``
        must be constrained (:meth:`constrain_scores`; only its ``-inf``
        entries matter) and ``layout`` is :meth:`batch_layout`'s. The batch
        trainer (``spacy_crf.fit``) reads its labels here too."""
        gold = (np.concatenate([self.target.gold_ids(eg) for eg in examples]) if examples
                else np.zeros(0, dtype=np.int64))
        gold, n_bad = self.target.repair_gold(scores, gold, layout)
        if n_bad:
            warn(Warnings.W003.format(n=n_bad, name=self.name, scheme=self.cfg["scheme"]))
        return gold

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Sequence[str]] = None,
        clusters: Optional[str] = None,
        gazetteer: Optional[str] = None,
        gazetteer_case_sensitive: bool = False,
        gazetteer_ruler: Optional[str] = None,
        keep_weights: bool = False,
    ) -> None:
        """Collect the labels, gather the word tables and allocate the model.

        Parameters
        ----------
        get_examples : callable
            Returns the training examples; labels are read from their
            reference docs unless ``labels`` is given.
        nlp : Language, optional
            The pipeline.
        labels : sequence of str, optional
            The label set, e.g. from ``spacy init labels``.
        clusters : str, optional
            A Brown cluster table of one's own for the ``CLUSTER`` templates:
            Liang's ``paths`` file or a JSON ``{word: path}`` table. Without
            it the pipeline's ``nlp.vocab.lookups`` table ``lexeme_cluster``
            is read, else spacy-lookups-data's table for ``nlp.lang``.
        gazetteer : str, optional
            A gazetteer file for the ``GAZETTEER`` templates: JSON lines
            ``{"label": NAME, "pattern": PHRASE}`` or ``NAME<TAB>phrase`` lines.
        gazetteer_case_sensitive : bool
            Match the gazetteer's phrases with their case (default: ignore it).
        gazetteer_ruler : str, optional
            An ``entity_ruler`` of the pipeline whose phrase patterns are
            (also) the gazetteer.
        keep_weights : bool
            On a trained component: keep its labels and weights, and add the
            labels of the examples (or of ``labels``, which must then include
            every trained label, E167) that it lacks, as ``add_label`` does;
            the word tables stay those it was trained with. The HMM relearns
            its counts from the examples. Without it (the default, as spaCy's
            pipes) the model starts afresh.
        """
        # the label set starts afresh (as in spaCy's own pipes): labels of an
        # earlier initialize or load are not merged in, and every label-sized
        # parameter is resized to the new set
        found = initial_labels(self.name, self.target, self.cfg["target"], get_examples, nlp,
                               labels, self._added_labels)
        if keep_weights and self._initialized():
            missing = [label for label in self.labels if label not in found]
            if labels is not None and missing:
                raise ValueError(Errors.E167.format(name=self.name, missing=missing,
                                                    labels=list(self.labels)))
            new = [label for label in self.target.order_labels(found) if label not in self.labels]
            if new:
                self._grow(new)
            self._fit_counts(get_examples)
            return
        # new weights: the averages of the old ones go (with the iterate they followed)
        self._averages.show_iterate(self.model)
        self._averages.clear()
        self._set_labels(self.target.order_labels(found))
        self.cfg["unseen_labels"] = []
        self._added_labels = []
        set_n_labels(self.model, len(self.labels))
        # settings the structure reads from the data (relation groups, kept label pairs)
        self.cfg.update(self.crf_structure.initialize_cfg(self, get_examples))
        # the word tables the templates read (clusters, vector clusters, gazetteer)
        set_up_lexicon(self.model, self.name, self.vocab, nlp, clusters=clusters,
                       gazetteer=gazetteer, gazetteer_case_sensitive=gazetteer_case_sensitive,
                       gazetteer_ruler=gazetteer_ruler)
        sample = [eg.predicted for eg in islice(get_examples(), 10) if len(eg.predicted)]
        needed = [attr for attr, _ in self.input_attrs()]
        self.model.initialize(X=upstream_annotated(self.name, needed, sample, nlp) or None)
        restart_boost(self.model)  # new weights: their first updates get the head start
        # feature dropout of its own: the same masks whatever else the pipeline draws
        seed_dropout(self.model, [training_seed(nlp), zlib.crc32(self.name.encode("utf8"))])
        warn_no_lexeme_norm(self.model, self.vocab, self.name)
        self._fit_counts(get_examples)

    def _fit_counts(self, get_examples: Callable[[], Iterable[Example]]) -> None:
        """A generative model (the HMM) learns its counts from the examples."""
        fit_counts = self.model.attrs.get(FIT_COUNTS)
        if fit_counts is not None:
            examples = [eg for eg in get_examples() if len(eg.predicted)]
            docs = [eg.predicted for eg in examples]
            gold = np.concatenate([self.target.gold_ids(eg) for eg in examples])
            fit_counts(self.model, docs, gold, self.batch_layout(docs).lengths)
            self.learn_new_labels(gold)

    def constrain_scores(self, scores: CRFScores) -> CRFScores:
        """``scores`` (the model's output) as the CRF decodes and trains on them:
        with the target's constraints (a span scheme's forbidden moves) and
        ``-inf`` for the labels not learned yet."""
        return self._mask_unseen(self.target.constrain(scores))

    def _mask_unseen(self, scores: CRFScores, but: Sequence[str] = ()) -> CRFScores:
        unseen = [label for label in self.cfg.get("unseen_labels") or [] if label not in but]
        return mask_labels(scores, [self.labels.index(l) for l in unseen], len(self.labels))

    def _new_labels_in(self, gold: np.ndarray) -> List[str]:
        """The labels not learned yet (``cfg["unseen_labels"]``) that ``gold``
        has, with every tag of their span types."""
        unseen = self.cfg.get("unseen_labels") or []
        kinds = {self.target.kind_of(label) for label in seen_in(gold, unseen, self.labels)}
        return [label for label in unseen if self.target.kind_of(label) in kinds]

    def learn_new_labels(self, gold: np.ndarray) -> None:
        """Predict the new labels ``gold`` has from now on (the batch trainer
        calls this for its corpus; ``update`` does it for every batch)."""
        seen = self._new_labels_in(gold)
        self.cfg["unseen_labels"] = [l for l in self.cfg.get("unseen_labels") or [] if l not in seen]

    def add_label(self, label: str) -> int:
        """Add a label; returns 1 if it was new, else 0.

        Before ``initialize`` the label joins those it finds. On a trained
        component the model grows (every label-sized weight gets zeros for the
        label, the old ones unchanged), and the label is not predicted until an
        update has it in gold: predictions stay exactly as they were until the
        model learns it (``nlp.resume_training()`` and ``nlp.update``, or
        ``python -m spacy_crf.fit --init-from``).

        A span target (``ents``, ``spans:KEY``) takes a span type (``"LOC"``),
        which adds every tag of the type in its scheme (with the scheme's
        allowed moves), or a tag (``"B-LOC"``).
        """
        if not isinstance(label, str):
            raise ValueError(Errors.E062.format(label=label))
        new = [tag for tag in self.target.labels_for(label) if tag not in self.labels]
        if not new:
            return 0
        if self._initialized():
            self._grow(new)
            return 1
        self._set_labels(list(self.labels) + new)
        self._added_labels.extend(new)
        return 1

    def _grow(self, new: Sequence[str]) -> None:
        """Append ``new`` labels to a trained component (see ``add_label``)."""
        n_old, labels = len(self.labels), list(self.labels) + list(new)
        grown_cfg = self.crf_structure.grow_cfg(self, n_old, len(labels))  # may refuse: first
        make_target(self.cfg["target"], self.cfg["scheme"]).set_labels(labels, self.vocab)  # E061
        # the model grows from the weights it predicts with; averaging starts afresh
        self._averages.commit(self.model)
        for model in (self.model, self._rehearsal_model):
            if model is not None:
                grow_n_labels(model, n_old, len(labels))
        self.cfg.update(grown_cfg)
        self._set_labels(labels)
        self.cfg["unseen_labels"] = list(self.cfg.get("unseen_labels", [])) + list(new)

    def finish_update(self, sgd: Optimizer) -> None:
        """Step the parameters: the hashed tables row-sparse, the rest as thinc
        does, each layer with its own learning-rate scale, and the weights'
        moving average where the optimizer keeps none (``average_weights``)."""
        step_model(self.model, sgd, self._averages.for_step(self.model, sgd))

    def use_prediction_weights(self) -> None:
        """Make the model hold the weights the component predicts with: the
        moving average of the weights its updates visited (``FeatureCRF``'s
        ``average_weights``), where it keeps one. ``predict`` and saving do
        this themselves; call it before reading ``self.model`` as a predictor
        directly. The next update takes the training weights back."""
        self._averages.show_averages(self.model)

    def use_params(self, params: Dict) -> Iterator[None]:
        """Swap in e.g. the optimizer's averages (for evaluation and saving).

        A generator, as ``Language.use_params`` drives it with ``next()``.
        """
        self._averages.show_iterate(self.model)  # (the optimizer's averages follow the iterate)
        sync_averages(self.model, params)
        with self.model.use_params(params):
            yield

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        """Score predictions (see ``spacy_crf.scoring.score_crf``)."""
        validate_examples(examples, "CRFTagger.score")
        return self.scorer(examples, target=self.cfg["target"], **kwargs)

    # -- serialization -------------------------------------------------------

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save ``cfg`` and the model's weights (the averaged ones) into the
        directory ``path``; an interrupted save leaves no loadable file."""
        saved_state.to_disk(self, path, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load from a directory written by ``to_disk``; a failed load raises a
        clear error and leaves the component as it was."""
        return saved_state.from_disk(self, path, exclude)

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize ``cfg`` and the model's weights, less the parts named in ``exclude``."""
        return saved_state.to_bytes(self, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load from ``to_bytes`` output, less the parts named in ``exclude``; a
        failed load leaves the component as it was."""
        return saved_state.from_bytes(self, bytes_data, exclude)

    # -- helpers -------------------------------------------------------------

    def input_attrs(self) -> List[Tuple[str, str]]:
        """(attribute, why) of every token annotation the component reads from
        its docs (``TAG``, ``POS``, ``MORPH``, ``LEMMA``, ``DEP`` for a parse)."""
        return input_attrs(self.model, self.crf_structure.needs_parse, self.cfg["structure"])

    def check_inputs(self, docs: Sequence[Doc]) -> None:
        """W005, once per component, for an input no doc of the first batch has
        (a missing parse is E015 at the structure or the features instead)."""
        if not self._inputs_checked:
            self._inputs_checked = True
            warn_missing_inputs(self.name, docs, self.input_attrs())

    def batch_layout(self, docs: Sequence[Doc]) -> BatchLayout:
        """The batch layout of ``docs`` (chains of sentences, the forest of each
        doc's parse, ...), built by the component's structure: what its
        inference reads beside the scores. Inside
        ``features.doc_arrays.read_once(docs)`` it shares the sentences and
        heads the model's features read."""
        return self.crf_structure.layout(docs, self)

    def _set_labels(self, labels: Sequence[str]) -> None:
        self.cfg["labels"] = list(labels)
        self.target.set_labels(self.cfg["labels"], self.vocab)

    def _initialized(self) -> bool:
        # the layer with the transition scores (crf_potentials, the HMM) has them allocated
        return any(node.has_param("transitions") and node.get_param("transitions") is not None
                   for node in self.model.walk())

    def _require_labels(self) -> None:
        if not self.labels or not self._initialized():
            raise ValueError(Errors.E007.format(name=self.name))

    def _check_width(self, scores: CRFScores) -> None:
        expected = self.crf_structure.emission_width(len(self.labels))
        if scores.emissions.shape[1] != expected:
            raise ValueError(Errors.E013.format(name=self.name, n_labels=scores.emissions.shape[1],
                                                expected=expected))

    def __reduce__(self):
        # rebuilt through __init__ in a worker process (nlp.pipe(n_process=...),
        # spawn start method): that registers the token extensions there too;
        # the copy predicts as this one does, with the averaged weights
        self.use_prediction_weights()
        return (saved_state.rebuild, (CRFTagger, self.vocab, self.model, self.name, self.cfg,
                                      self.scorer))
