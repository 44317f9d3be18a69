"""The ``crf_tagger`` component: a CRF sequence labeller for spaCy pipelines.

A thin adapter between Docs/Examples and arrays: the model turns a batch of
Docs into :class:`~spacy_crf.models.CRFScores`; the numba kernels (through
``spacy_crf.inference``) decode them and give the loss; a
:class:`~spacy_crf.pipeline.targets.Target` reads gold labels and writes
predictions.
"""

import copy
import warnings
import zlib
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.util import LEXEME_NORM_LANGS, ensure_path
from spacy.util import logger as spacy_logger
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate

from .. import inference
from .._kernels.sparse_update import scatter_rows
from ..errors import Errors, Warnings, warn
from ..features.doc_arrays import SEQUENCE_DOC, SEQUENCE_SENTENCE, doc_lengths, read_once
from ..models.architectures import grow_n_labels, has_token_transitions, set_n_labels
from ..models.featurize import restore_lexicon, set_owner, set_sequence
from ..models.hashed_linear import seed_dropout
from ..models.hmm import FIT_COUNTS
from ..models.potentials import CRFScores, find_potentials
from ..models.serialize import NonFiniteWeights, model_from_bytes, model_to_bytes
from ..models.sparse_table import ATTR as SPARSE_TABLE
from ..models.sparse_table import restart_boost, step_model, sync_averages
from ..models.weight_average import WeightAverages
from ..losses import each_expert, get_loss
from ..scoring import MAIN_SCORE, default_score_weights, score_crf
from ..structures import (BatchLayout, CRFStructure, StructureSpec, as_spec, spec_from_cfg,
                          strategy_of)
from ..structures.config import migrate_flat_settings
from ..structures.base import sequence_lengths
from ..targets import make_target
from ..unseen_labels import mask_labels, seen_in
from ..util import training_seed
from .extensions import (CONFIDENCE_KEY, NBEST_KEY, SPAN_CONFIDENCE_KEY,  # noqa: F401
                         register_confidence_extension)
from .lexicon_setup import set_up_lexicon
from .pipe_meta import declare_pipe_meta
from .settings import SETTINGS, check_settings

#: token annotations a crf_tagger's features may read from its docs, as
#: Doc.has_annotation names them, each with the name spaCy's pipe meta gives a
#: component that assigns it (``Language.get_pipe_meta(name).assigns``)
INPUT_ANNOTATIONS = {"TAG": "token.tag", "POS": "token.pos", "MORPH": "token.morph",
                     "LEMMA": "token.lemma", "DEP": "token.dep"}

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-crf.FeatureCRF.v1"
n_buckets = 1048576
templates = ["NORM[-2..2]", "NORM[-1]|NORM[0]", "NORM[0]|NORM[1]", "SHAPE[-2..2]", "PREFIX1", "PREFIX2", "PREFIX3", "SUFFIX1", "SUFFIX2", "SUFFIX3", "SUFFIX4", "SUFFIX3[-1]", "SUFFIX3[1]", "IS_TITLE[-1..1]", "IS_UPPER", "LIKE_NUM", "ORTH"]
tree_templates = ["head:NORM", "head:SUFFIX", "DEP", "head:DEP", "DEP|head:DEP", "HEAD_DIST", "N_CHILDREN", "LCHILD_DEP", "RCHILD_DEP"]
cluster_templates = ["CLUSTER[-1..1]", "CLUSTER4[-1..1]", "CLUSTER6[-1..1]"]
boost_updates = 300
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]


@Language.factory(
    "crf_tagger",
    # what some target may write; each component's own meta (declare_pipe_meta
    # in the factory) names only what its target writes
    assigns=["token.tag", "token.pos", "token.dep", "doc.ents", "token.ent_iob",
             "token.ent_type", "doc.spans"],
    default_config={
        "model": DEFAULT_MODEL,
        "target": "tag",
        "structure": {"@structures": "spacy-crf.Chain.v1", "order": 1},
        "sequence": "doc",
        "scheme": "BILUO",
        "keep_existing": None,
        "store_confidence": False,
        "n_best": 0,
        "loss": "nll",
        "scorer": {"@scorers": "spacy-crf.crf_scorer.v1"},
    },
    default_score_weights={MAIN_SCORE: 1.0},
)
def make_crf_tagger(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFScores],
    target: str,
    structure: Union[str, StructureSpec],
    sequence: str,
    scheme: str,
    keep_existing: Optional[bool],
    store_confidence: bool,
    n_best: int,
    loss: str,
    scorer: Optional[Callable],
    order: Optional[int] = None,
    max_segment_length: Optional[int] = None,
) -> "CRFTagger":
    """Create a ``crf_tagger`` (use ``nlp.add_pipe("crf_tagger")``).

    Parameters
    ----------
    model : Model
        Docs -> CRFScores, e.g. ``spacy-crf.FeatureCRF.v1``.
    target : str
        Where gold labels come from and predictions go: ``tag``, ``pos``,
        ``dep``, ``ents``, ``spans:KEY`` or ``_.NAME`` (a token extension).
    structure : StructureSpec or str
        The graph the labels interact over, a config block of the
        ``structures`` registry with its own settings
        (``spacy_crf.structures``): ``spacy-crf.Chain.v1`` (``order`` 1 or 2:
        a linear-chain CRF per doc, per sentence with ``sequence =
        "sentence"``), ``spacy-crf.Tree.v1`` (a CRF over each doc's
        dependency parse), ``spacy-crf.ChainTree.v1`` (both, as experts),
        ``spacy-crf.SemiMarkov.v1`` (``max_segment_length``). A structure's
        name (``"tree"``) is short for its block with the default settings.
    sequence : str
        What one CRF sequence is for the chain-like structures, and where
        feature windows stop: ``"doc"`` (the default, as spaCy's own tagger
        and ner read a doc) the whole doc, whatever sentence boundaries an
        upstream parser or senter set, so a wrong boundary costs nothing;
        ``"sentence"``: each sentence where boundaries are set, else the doc
        (an entity then never crosses a boundary). A tree is over each doc's
        parse either way.
    scheme : str
        ``BIO`` or ``BILUO``: how ``ents`` / ``spans:KEY`` targets tag spans.
        The scheme's forbidden transitions are enforced in training and
        decoding, so no ill-formed span is ever produced.
    keep_existing : bool or None
        Forced decoding: labels already on a doc (entities from an
        EntityRuler, tags from an earlier component) are kept with their
        ``kb_id``, and the CRF decodes the other tokens consistently with
        them; tokens blocked with ``doc.set_ents(..., blocked=...)`` stay out
        of every entity. ``None`` (the default) does as spaCy's own pipe for
        the target: ``True`` for ``ents`` (spaCy's ``ner``), ``False`` for
        the others (the ``tagger`` and ``spancat`` overwrite).
    store_confidence : bool
        Also run forward-backward at prediction and store each token's
        probability of its predicted label (``token._.crf_confidence``) and,
        for span targets, each span's probability (``span._.crf_confidence``).
    n_best : int
        If above 0, also store the ``n_best`` best labellings of every sequence
        with their probabilities in ``doc._.crf_nbest`` (chains and the semi-Markov CRF).
    loss : str
        The training objective (``spacy_crf.losses``): ``nll`` (the
        likelihood), ``perceptron`` (structured perceptron, averaged as every
        update-trained model is: ``average_weights``) or ``hinge`` (structured
        SVM, Hamming cost).
    scorer : callable, optional
        Scoring function, by default ``spacy-crf.crf_scorer.v1``.
    order, max_segment_length : int, optional
        Configs written before structures were blocks (pipelines saved then
        have them): ``structure = "chain"`` with ``order = 2`` beside it is
        read as the block ``spacy-crf.Chain.v1`` with ``order = 2``. Leave
        them ``null``; E170 for one set beside a block.
    """
    structure = migrate_flat_settings(structure, order=order,
                                      max_segment_length=max_segment_length)
    component = CRFTagger(nlp.vocab, model, name, target=target, structure=structure,
                          sequence=sequence, scheme=scheme, keep_existing=keep_existing,
                          store_confidence=store_confidence, n_best=n_best, loss=loss,
                          scorer=scorer)
    # what this component writes and scores depends on its target: tell
    # nlp.analyze_pipes() and the score weights of nlp.config
    declare_pipe_meta(nlp, name, "crf_tagger", assigns=component.assigns,
                      default_score_weights=default_score_weights(target))
    return component


@dataclass
class CRFPrediction:
    """Decoded label ids of a batch, concatenated, with per-doc lengths."""

    label_ids: np.ndarray  # (N,) int64
    doc_lengths: np.ndarray  # (D,) int64
    confidence: Optional[np.ndarray] = None  # (N,) float32 P(predicted label)
    # (N,) P(the predicted span starting here) and (N,) its end row; NaN / -1 elsewhere
    span_confidence: Optional[Tuple[np.ndarray, np.ndarray]] = None
    n_best: Optional[List[List[Tuple[float, List[str]]]]] = None  # per sequence


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
        spec = as_spec(structure)  # E012 for a name that is no structure's
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
            self._check_dep_target()

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
        label_ids, _ = inference.viterbi(scores, layout, fixed)
        confidence = spans = nbest = None
        if self.cfg["store_confidence"] or self.cfg["n_best"]:
            probs, log_z = inference.marginals(scores, layout, fixed)
        if self.cfg["n_best"]:
            nbest = self._n_best(scores, layout, fixed, log_z)
        if self.cfg["store_confidence"]:
            # marginals are float32: a sure label can round a few ulps above 1
            confidence = np.clip(probs[np.arange(len(label_ids)), label_ids], 0.0, 1.0
                                 ).astype(np.float32)
            spans = self.target.span_confidence(scores, layout, label_ids, fixed)
        return CRFPrediction(label_ids, lengths, confidence, spans, nbest)

    def set_annotations(self, docs: Iterable[Doc], prediction: CRFPrediction) -> None:
        """Write the predicted labels (and confidences, n-best lists) onto the Docs."""
        docs = list(docs)
        ends = np.cumsum(prediction.doc_lengths)
        if prediction.n_best is not None or self.cfg["n_best"]:
            # every doc gets a list, [] for an empty doc (alone in its batch too, where
            # predict skips decoding), and each entry is [probability, labels]: a
            # list, as it comes back from nlp.pipe(n_process=2) (user data goes
            # through msgpack, which turns tuples into lists)
            per_doc = iter(prediction.n_best or [])
            for doc in docs:
                n_seqs = len(sequence_lengths([doc], self)) if len(doc) else 0
                doc.user_data[NBEST_KEY] = [[[p, labels] for p, labels in next(per_doc)]
                                            for _ in range(n_seqs)]
        for doc, end, n in zip(docs, ends, prediction.doc_lengths):
            if not n:
                continue
            self.target.write_prediction(doc, prediction.label_ids[end - n:end],
                                         self.keep_existing)
            if prediction.confidence is not None:
                doc.user_data[CONFIDENCE_KEY] = prediction.confidence[end - n:end].tolist()
            if prediction.span_confidence is not None:
                probs, span_ends = prediction.span_confidence
                doc.user_data[SPAN_CONFIDENCE_KEY] = (probs[end - n:end].tolist(),
                                                      (span_ends[end - n:end] - (end - n)).tolist())

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
        validate_examples(examples, "CRFTagger.update")
        docs = [eg.predicted for eg in examples]
        if not int(doc_lengths(docs).sum()):
            return losses
        self._require_labels()
        self.check_inputs(docs)
        set_dropout_rate(self.model, drop)
        self._averages.show_iterate(self.model)
        with read_once(docs):
            layout = self.batch_layout(docs)  # a missing parse fails here, before any work
            scores, backprop = self.model.begin_update(docs)
        loss, d_scores = self._loss(examples, self.target.constrain(scores), layout, learn=True)
        backprop(d_scores)
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

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

    def rehearse(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Union[Optimizer, Callable]] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Train toward the labellings the model gave when ``nlp.resume_training()``
        copied it (against forgetting while training on new data), as spaCy's
        tagger rehearses toward its teacher's scores.

        The teacher's Viterbi labelling of each doc (the gold annotation is not
        read) is the target of the component's loss. Without a teacher (no
        ``nlp.resume_training()``) nothing changes, as in spaCy's pipes.

        Parameters
        ----------
        examples : iterable of Example
            Raw text to rehearse on (their predicted docs are read).
        drop : float
            Feature dropout.
        sgd : Optimizer or callable, optional
            A thinc Optimizer, or a function ``(key, param, grad)`` as
            ``nlp.rehearse()`` passes (the gradients go to it densely).
        losses : dict, optional
            Summed losses by component name, updated in place.
        """
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        if self._rehearsal_model is None:
            return losses
        examples = list(examples)
        validate_examples(examples, "CRFTagger.rehearse")
        docs = [eg.predicted for eg in examples]
        if not int(doc_lengths(docs).sum()):
            return losses
        self._require_labels()
        set_dropout_rate(self.model, drop)
        self._averages.show_iterate(self.model)
        with read_once(docs):
            layout = self.batch_layout(docs)
            teacher = self.constrain_scores(self._rehearsal_model.predict(docs))
            scores, backprop = self.model.begin_update(docs)
        self._check_width(teacher)
        self._check_width(scores)
        gold, _ = inference.viterbi(teacher, layout, None)
        loss, d_scores = self._objective(self.constrain_scores(scores), layout, gold)
        backprop(d_scores)
        if isinstance(sgd, Optimizer):
            self.finish_update(sgd)
        elif callable(sgd):
            self._rehearse_step(sgd)
        elif sgd is not None:
            raise ValueError(Errors.E164.format(name=self.name, sgd=sgd))
        losses[self.name] += loss
        return losses

    def _rehearse_step(self, sgd: Callable) -> None:
        """Hand the gradients to ``nlp.rehearse``'s collector, which steps them
        with the pipeline's optimizer after every component has rehearsed.

        The collector takes dense arrays, so each hashed table's pending rows go
        to it as a dense gradient under a key of its own (``(id, "W:rehearse")``):
        the optimizer state that key gets is dense, and must not meet the compact
        row state the table's sparse steps keep under ``(id, "W")``. The gradient
        is not left on the model, where the next sparse step would find it.
        """
        for node in self.model.walk():
            table = node.attrs.get(SPARSE_TABLE)
            if table is not None and table.n_rows:
                W = node.get_param("W")
                grad = np.zeros_like(W)
                scatter_rows(table.rows, table.grads, table.n_rows, grad)
                table.clear()
                sgd((node.id, "W:rehearse"), W, grad)
        self.model.finish_update(sgd)  # every other parameter, as thinc steps it

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
        # validate a sample only: spaCy's validate_get_examples reads the whole
        # corpus, and the label pass below reads it again (a third of the
        # training time on CoNLL-2000); that pass checks every example's type
        self._check_get_examples(get_examples, nlp, labels)
        # the label set starts afresh (as in spaCy's own pipes): labels of an
        # earlier initialize or load are not merged in, and every label-sized
        # parameter is resized to the new set
        if labels is not None:
            found = set(labels)
        else:
            found = set(self._added_labels)
            n_examples = 0
            for eg in get_examples():
                if not isinstance(eg, Example):
                    raise TypeError(Errors.E160.format(
                        name=self.name, obj=f"a function whose examples include a {type(eg).__name__}"))
                found.update(self.target.label_strings(eg.reference))
                n_examples += 1
            if not n_examples and not found:
                train = nlp.config.get("paths", {}).get("train") if nlp is not None else None
                where = f" (paths.train = {train})" if train else ""
                raise ValueError(Errors.E020.format(name=self.name, where=where))
        if not found and labels is None and self._may_start_untrained(get_examples, nlp):
            # as spaCy's ner after nlp.initialize(): no types, no entities predicted
            warnings.warn(Warnings.W016.format(name=self.name, target=self.cfg["target"],
                                               what="span"))
            found = {"O"}
        if not found:
            raise ValueError(Errors.E008.format(target=self.cfg["target"], name=self.name))
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
        self.model.initialize(X=self._upstream_annotated(sample, nlp) or None)
        restart_boost(self.model)  # new weights: their first updates get the head start
        # feature dropout of its own: the same masks whatever else the pipeline draws
        seed_dropout(self.model, [training_seed(nlp), zlib.crc32(self.name.encode("utf8"))])
        self._warn_no_lexeme_norm()
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

    def _check_get_examples(self, get_examples: Any, nlp: Optional[Language],
                            labels: Optional[Sequence[str]]) -> None:
        """E160 (a TypeError, as spaCy's E930 / E978) unless ``get_examples`` is a
        function returning Examples; E020 for a configured corpus with none.

        Only the first 10 examples are read here: the label pass reads the rest.
        """
        if not callable(get_examples):
            raise TypeError(Errors.E160.format(name=self.name, obj=f"a {type(get_examples).__name__}"))
        examples = get_examples()
        try:
            sample = list(islice(iter(examples), 10))
        except TypeError:  # e.g. lambda: example, a bare Example
            raise TypeError(Errors.E160.format(
                name=self.name, obj=f"a function returning a {type(examples).__name__}")) from None
        for eg in sample:
            if not isinstance(eg, Example):
                raise TypeError(Errors.E160.format(
                    name=self.name, obj=f"a function whose examples include a {type(eg).__name__}"))
        if sample or labels is not None:
            return
        train = nlp.config.get("paths", {}).get("train") if nlp is not None else None
        if train:  # spacy train with an empty corpus: name the file
            raise ValueError(Errors.E020.format(name=self.name, where=f" (paths.train = {train})"))
        raise TypeError(Errors.E160.format(name=self.name, obj="a function returning no examples"))

    def _may_start_untrained(self, get_examples: Callable[[], Iterable[Example]],
                             nlp: Optional[Language]) -> bool:
        """Whether a span target may start with ``O`` alone: it was given no
        examples, i.e. ``nlp.initialize()`` without get_examples, for which spaCy
        passes one placeholder Example (the words "x y z", unannotated). Examples
        of one's own without spans still get E008 (a corpus lacking them)."""
        if not self.target.is_span_target:
            return False
        examples = list(islice(get_examples(), 2))
        return (len(examples) == 1 and [t.text for t in examples[0].reference] == _PLACEHOLDER
                and self.target.spans_of(examples[0].reference) is None)

    def _warn_no_lexeme_norm(self) -> None:
        """W017 where spaCy's tagger and ner give W033: the templates read NORM but
        the vocab has no (or an empty) ``lexeme_norm`` table for a language
        spacy-lookups-data has norms for.

        Logged at DEBUG on spaCy's logger, as spaCy logs W033 (``spacy train
        --verbose`` shows it): a blank pipeline lacks the table by design, and a
        warning at every initialize of one would be noise.
        """
        lang = self.vocab.lang
        if lang not in LEXEME_NORM_LANGS or len(self.vocab.lookups.get_table("lexeme_norm", {})):
            return
        if any(getattr(node.attrs.get("templates"), "reads", lambda attr: False)("NORM")
               for node in self.model.walk()):
            spacy_logger.debug(Warnings.W017.format(name=self.name, lang=lang))

    def _upstream_annotated(self, docs: List[Doc], nlp: Optional[Language]) -> List[Doc]:
        """Copies of ``docs`` run through the components before this one (a parser
        that annotates in training gives the trees the tree features read), where
        ``docs`` lack an input this component reads; else ``docs``.

        spaCy initializes the components in pipeline order but hands each the raw
        examples, so without this a tree CRF behind a parser would meet docs with
        no parse here (E015) though every training batch will have one.
        """
        needed = {attr for attr, _ in self.input_attrs()}
        if nlp is None or not docs or all(d.has_annotation(a) for d in docs for a in needed):
            return docs
        # components, not pipeline: spacy train disables frozen components while
        # it initializes, and a parser it sources is frozen
        return run_components_before(self.name, nlp.components, [doc.copy() for doc in docs])

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
        """Save ``cfg`` and the model's weights into the directory ``path``.

        Files are written under temporary names and renamed when complete, so
        an interrupted save never leaves a loadable-but-wrong model behind.
        """
        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.use_prediction_weights()
        cfg_tmp, model_tmp = path / "cfg.tmp", path / "model.tmp"
        if "cfg" not in exclude:
            srsly.write_json(cfg_tmp, self.cfg)
        if "model" not in exclude:
            model_tmp.write_bytes(model_to_bytes(self.model))
        if "cfg" not in exclude:
            cfg_tmp.replace(path / "cfg")
        if "model" not in exclude:
            model_tmp.replace(path / "model")

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load from a directory written by ``to_disk``.

        Everything is read and checked before the component changes, so a
        failed load raises a clear error and leaves the component as it was.
        """
        path = ensure_path(path)
        cfg = model_bytes = None  # None: excluded, this component's own is kept
        if "cfg" not in exclude:
            try:
                cfg = srsly.read_json(path / "cfg")
            except (OSError, ValueError) as err:
                raise ValueError(Errors.E010.format(name=self.name, path=path / "cfg", why=err)) from err
        if "model" not in exclude:
            try:
                model_bytes = (path / "model").read_bytes()
            except OSError as err:
                raise ValueError(Errors.E010.format(name=self.name, path=path / "model", why=err)) from err
        return self._load(cfg, model_bytes, where=str(path / "model"))

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize ``cfg`` and the model's weights, less the parts named in ``exclude``."""
        msg: Dict[str, Any] = {}
        self.use_prediction_weights()
        if "cfg" not in exclude:
            msg["cfg"] = self.cfg
        if "model" not in exclude:
            msg["model"] = model_to_bytes(self.model)
        return srsly.msgpack_dumps(msg)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load from ``to_bytes`` output, less the parts named in ``exclude``; a
        failed load leaves the component as it was."""
        try:
            msg = srsly.msgpack_loads(bytes_data)
            cfg = None if "cfg" in exclude else msg["cfg"]
            model_bytes = None if "model" in exclude else msg["model"]
        except Exception as err:  # msgpack raises several types for corrupt data
            raise ValueError(Errors.E010.format(name=self.name, path="bytes", why=err)) from err
        return self._load(cfg, model_bytes, where="bytes")

    # -- helpers -------------------------------------------------------------

    def _n_best(self, scores: CRFScores, layout: BatchLayout,
                fixed: Optional[np.ndarray], log_z: np.ndarray) -> List[List[Tuple[float, List[str]]]]:
        """Per sequence, its best labellings as (probability, label strings)."""
        labels, best, counts = inference.n_best(scores, layout, self.cfg["n_best"], fixed)
        names = np.asarray(list(self.labels) + [None], dtype=object)[:-1]
        out, start = [], 0
        for s, n in enumerate(layout.lengths):
            if n:
                out.append([(float(np.exp(best[s, r] - log_z[s])),
                             names[labels[r, start:start + n]].tolist())
                            for r in range(counts[s])])
            start += n
        return out

    def input_attrs(self) -> List[Tuple[str, str]]:
        """(attribute, why) of every token annotation the component reads from
        its docs (``TAG``, ``POS``, ``MORPH``, ``LEMMA``, ``DEP`` for a parse)."""
        found: Dict[str, str] = {}
        if self.crf_structure.needs_parse:
            found["DEP"] = f'structure = "{self.cfg["structure"]}"'
        for node in self.model.walk():
            templates = node.attrs.get("templates")
            if templates is None or not hasattr(templates, "reads"):
                continue
            for attr in INPUT_ANNOTATIONS:
                if attr not in found and templates.reads(attr):
                    found[attr] = "feature templates"
            if "DEP" not in found and getattr(templates, "uses_tree", False):
                found["DEP"] = "tree feature templates"
        return list(found.items())

    def check_inputs(self, docs: Sequence[Doc]) -> None:
        """W005, once per component, for an input no doc of the first batch has
        (a missing parse is E015 at the structure or the features instead)."""
        if self._inputs_checked:
            return
        self._inputs_checked = True
        docs = [doc for doc in docs if len(doc)]
        for attr, why in self.input_attrs():
            if attr != "DEP" and not any(doc.has_annotation(attr) for doc in docs):
                warnings.warn(Warnings.W005.format(name=self.name, attr=attr, why=why))

    def batch_layout(self, docs: Sequence[Doc]) -> BatchLayout:
        """The batch layout of ``docs`` (chains of sentences, the forest of each
        doc's parse, ...), built by the component's structure: what its
        inference reads beside the scores. Inside
        ``features.doc_arrays.read_once(docs)`` it shares the sentences and
        heads the model's features read."""
        return self.crf_structure.layout(docs, self)

    def _check_dep_target(self) -> None:
        templates = [node.attrs["templates"] for node in self.model.walk()
                     if "templates" in node.attrs]
        reading = [t.names for t in templates if t.reads("DEP")]
        if reading or self.n_relation_groups != 1:
            raise ValueError(Errors.E017.format(templates=reading))

    #: settings that do not change the weights: a loaded component keeps its own,
    #: those of nlp.config (overrides given to spacy.load(..., config=...) included)
    RUNTIME_SETTINGS = ("store_confidence", "n_best", "keep_existing", "sequence")

    def _load(self, cfg: Optional[Dict[str, Any]], model_bytes: Optional[bytes],
              where: str) -> "CRFTagger":
        """Swap in a saved cfg and model (``None``: excluded, keep the component's
        own), after checking everything: a failed load changes nothing."""
        cfg = self.cfg if cfg is None else self._checked_cfg(cfg, where)
        target = make_target(cfg["target"], cfg["scheme"])
        try:
            target.set_labels(cfg["labels"], self.vocab)  # E061 for a tag outside the scheme
        except ValueError as err:
            raise ValueError(Errors.E162.format(name=self.name, key="labels", value=cfg["labels"],
                                                why=err)) from err
        n_labels = len(cfg["labels"])
        model = self.model
        if model_bytes is not None:
            model = copy.deepcopy(self.model)
            if n_labels:  # an uninitialized component keeps its label sizes unset
                set_n_labels(model, n_labels)
            try:
                model_from_bytes(model, model_bytes)
                restore_lexicon(model)  # the saved word tables, and the templates they add
                set_owner(model, self.name)
            except NonFiniteWeights as err:
                raise ValueError(Errors.E165.format(name=self.name, path=where, why=err)) from err
            except Exception as err:
                raise ValueError(Errors.E010.format(name=self.name, path=where, why=err)) from err
        for node in model.walk():
            if (node.name == "crf_potentials" and node.has_dim("nO")
                    and node.get_dim("nO") not in (None, n_labels)):
                raise ValueError(Errors.E011.format(name=self.name, found=node.get_dim("nO"), expected=n_labels))
        self.model, self.target = model, target
        self._averages.clear()  # (a copy's layers keep their ids: old averages would match)
        self.cfg = cfg
        set_sequence(self.model, self.cfg["sequence"])
        self._set_labels(self.cfg["labels"])
        return self

    def _checked_cfg(self, saved: Any, where: str) -> Dict[str, Any]:
        """The cfg a load swaps in: the saved one, checked with the factory's
        E-codes, with this component's own runtime settings (RUNTIME_SETTINGS)."""
        if not isinstance(saved, dict) or not isinstance(saved.get("labels"), list):
            raise ValueError(Errors.E010.format(name=self.name, path=where, why="cfg has no label list"))
        if saved.get("target", self.cfg["target"]) != self.cfg["target"]:
            raise ValueError(Errors.E010.format(
                name=self.name, path=where,
                why=f"it was trained for target '{saved.get('target')}', this component has "
                    f"'{self.cfg['target']}'"))
        labels = saved["labels"]
        if not all(isinstance(label, str) for label in labels) or len(set(labels)) < len(labels):
            raise ValueError(Errors.E162.format(name=self.name, key="labels", value=labels,
                                                why="labels must be distinct strings"))
        unseen = saved.get("unseen_labels", [])  # none in a model saved before growing existed
        if not isinstance(unseen, list) or not all(label in labels for label in unseen):
            raise ValueError(Errors.E162.format(name=self.name, key="unseen_labels", value=unseen,
                                                why="they must be some of its labels"))
        cfg = {**self.cfg, **saved, "unseen_labels": list(unseen)}
        check_settings(self.model, self.name, **_settings(cfg))
        for key in self.RUNTIME_SETTINGS:
            cfg[key] = self.cfg[key]
        if "sequence" not in saved:
            # saved before the sequence setting existed: it was trained on sentences
            cfg["sequence"] = SEQUENCE_SENTENCE
        # this component's own runtime settings must suit the saved structure too
        check_settings(self.model, self.name, **_settings(cfg))
        return cfg

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
        return (_rebuild, (self.vocab, self.model, self.name, self.cfg, self.scorer))


def run_components_before(name: str, components: Sequence[Tuple[str, Any]], docs: List[Doc],
                          batch_size: Optional[int] = None) -> List[Doc]:
    """``docs`` run through the ``(name, component)`` pairs that come before ``name``."""
    batching = {} if batch_size is None else {"batch_size": batch_size}
    for other, proc in components:
        if other == name:
            break
        docs = list(proc.pipe(docs, **batching)) if hasattr(proc, "pipe") else [proc(d) for d in docs]
    return docs


def _settings(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The settings ``check_settings`` takes, from a component's cfg."""
    return {**{key: cfg[key] for key in SETTINGS}, "structure": spec_from_cfg(cfg)}


def _rebuild(vocab: Vocab, model: Model, name: str, cfg: Dict[str, Any],
             scorer: Optional[Callable]) -> CRFTagger:
    pipe = CRFTagger(vocab, model, name, target=cfg["target"], structure=spec_from_cfg(cfg),
                     sequence=cfg.get("sequence", SEQUENCE_SENTENCE),
                     scheme=cfg.get("scheme", "BILUO"),
                     keep_existing=cfg.get("keep_existing"),
                     store_confidence=cfg.get("store_confidence", False),
                     n_best=cfg.get("n_best", 0), loss=cfg.get("loss", "nll"), scorer=scorer)
    pipe.cfg.update(cfg)
    pipe._set_labels(pipe.cfg["labels"])
    return pipe


#: the words of the Example spaCy's nlp.initialize() passes when given no get_examples
_PLACEHOLDER = ["x", "y", "z"]
