"""The structure interface: what every CRF structure (chain, tree, ...) provides.

A structure is a strategy object, one per kind of graph the CRF's labels
interact over. It owns

* its parameters: which label-interaction scores of
  :class:`~spacy_crf.models.CRFScores` it reads (``params``) and their shapes;
* the batch layout built from Docs (:meth:`CRFStructure.layout`): lengths,
  heads, order, ... computed once per batch from a
  :class:`~spacy_crf.features.doc_arrays.DocBatch` that then goes to the
  model, so the feature windows and the CRF's sequences come from the same
  reading of the Docs;
* inference over that layout: log Z and token marginals, the negative
  log-likelihood and its gradient, Viterbi / max-product (all honouring fixed
  labels: partial gold, forced decoding), n-best and span probabilities where
  the structure defines them, and the feature counts of a labelling (the
  gradient of its score, for the perceptron and the hinge loss);
* the batch trainer's likelihood over a featurized shard.

Strategies register under a name (:func:`register_structure`); the
component's ``structure`` config block (``structures/config.py``) names the
strategy that runs it with its settings (:func:`strategy_of`). Adding a
structure means adding a module that defines and registers both.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type

import numpy as np

from .._kernels.emissions import gather_sum
from .._kernels.shard_nll import scatter_sum
from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_SENTENCE, batch_sequence_lengths
from ..models.potentials import CRFScores, declare_params, param_shape
from ..models.token_transitions import add_token_transitions
# the ragged-batch helpers, for the structures that import them from here
from ..ragged import positions_in_sequence, previous_in_sequence, sequence_ends  # noqa: F401

_STRUCTURES: Dict[str, "CRFStructure"] = {}
#: the structure that scores input-dependent transitions, by the one that does not
TOKEN_TRANSITION_STRUCTURES = {"chain": "chain_input", "chain_order2": "chain_order2",
                               "tree": "tree_input"}


def register_structure(cls: Type["CRFStructure"]) -> Type["CRFStructure"]:
    """Class decorator: make an instance of ``cls`` the structure ``cls.name``."""
    _STRUCTURES[cls.name] = cls()
    return cls


def get_structure(name: str) -> "CRFStructure":
    """The structure registered as ``name``; E012 names the known ones otherwise."""
    if not isinstance(name, str) or name not in _STRUCTURES:
        raise ValueError(Errors.E012.format(structure=name, allowed=", ".join(map(repr, _STRUCTURES))))
    return _STRUCTURES[name]


def structure_names() -> Tuple[str, ...]:
    """The names of the registered structures."""
    return tuple(_STRUCTURES)


def strategy_of(spec, token_transitions: bool = False) -> "CRFStructure":
    """The registered strategy that runs ``spec`` (a ``config.StructureSpec``).

    With transition templates (in the block, or in a model of an earlier
    release: ``token_transitions``) the chain of order 1 becomes
    ``chain_input``, the tree ``tree_input``, and the second-order chain
    reads them as it is; E105 for any other structure.
    """
    key = spec.strategy_key
    if token_transitions or spec.settings.get("transition_templates"):
        if key not in TOKEN_TRANSITION_STRUCTURES:
            raise ValueError(Errors.E105.format(structure=spec.describe()))
        key = TOKEN_TRANSITION_STRUCTURES[key]
    return get_structure(key)


@dataclass
class BatchLayout:
    """How the tokens of a batch are connected; each structure subclasses it.

    Attributes
    ----------
    lengths : numpy.ndarray
        (S,) int64 tokens of each sequence (a chain's sentence, a tree's doc),
        summing to the batch's N rows.
    """

    lengths: np.ndarray
    #: the registered name of the structure that reads this layout
    structure_name = ""

    @property
    def structure(self) -> "CRFStructure":
        return get_structure(self.structure_name)

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())

    @property
    def n_sequences(self) -> int:
        return int(self.lengths.shape[0])


@dataclass(frozen=True)
class ComponentView:
    """What a structure reads of the component it runs for (never the
    component itself: a structure works for any caller that can say these).

    Attributes
    ----------
    name : str
        The component's name, for messages.
    cfg : mapping
        The component's cfg: ``labels``, ``scheme``, ``sequence``, and the
        settings the structure keeps there (``initialize_cfg``).
    vocab : Vocab
        The pipeline's vocab (relation names to string ids).
    target : Target, optional
        The component's target, for the gold labels ``initialize_cfg`` reads.
    n_relation_groups : int
        The relation groups the model's label-interaction scores have.
    """

    name: str
    cfg: Mapping[str, Any]
    vocab: Any = None
    target: Any = None
    n_relation_groups: int = 1

    @property
    def labels(self) -> List[str]:
        return list(self.cfg.get("labels") or [])


class CRFStructure:
    """Inference and training over one kind of label graph.

    Subclasses set ``name``, ``params`` and ``layout_class`` and implement
    the methods that raise ``NotImplementedError`` here; ``n_best`` and
    ``span_log_probabilities`` are optional (they raise a clear error).
    """

    name: str = ""
    #: the label-interaction parameters of CRFScores the structure scores with
    params: Tuple[str, ...] = ()
    layout_class: Type[BatchLayout] = BatchLayout
    #: span targets (BIO/BILUO tags, constrained transitions) need adjacent tokens
    supports_spans: bool = False
    supports_n_best: bool = False
    supports_span_probabilities: bool = False
    #: whether the layout is built from the docs' dependency parse
    needs_parse: bool = False
    #: the structure labels spans, so a token target cannot use it
    needs_span_target: bool = False
    #: ``viterbi`` finds the labelling of highest score (so the perceptron and the
    #: hinge loss can train it); a structure that decodes from marginals sets False
    exact_map: bool = True
    #: why the batch trainer (``spacy_crf.training.fit``) cannot train the structure's
    #: model (the error it raises), or None where it can; a reason that names a
    #: setting under which fit can may end in ``{also}``, filled with what the
    #: component's model needs as well (E211)
    batch_trainer_error: Optional[str] = None
    #: in prediction the structure takes a factored table's part scores and
    #: composes the labels' scores it reads (``models/composed_emissions.py``)
    reads_composed_emissions: bool = False
    #: the structure keeps some labellings only (the second-order chain: the label
    #: pairs initialize saw), so a gold labelling can leave them; every loss then
    #: trains on that sequence as unannotated (:meth:`unreachable_gold`, W045)
    prunes_labellings: bool = False
    #: the warning that names the sequences :meth:`unreachable_gold` finds
    unreachable_gold_warning: str = "W045"

    # -- building ------------------------------------------------------------

    def check_settings(self, spec, component: str, target, *, loss: str, n_best: int,
                       store_confidence: bool) -> None:
        """Refuse the component settings this structure cannot run, with the
        factory's errors: a loss it cannot train (E113), n-best lists (E019),
        a span target (E018) or a token target where it needs spans (E108),
        span confidences (E096).

        Parameters
        ----------
        spec : StructureSpec
            The structure as the component's config gives it (for messages).
        component : str
            The component's name.
        target : Target
            The component's target.
        loss, n_best, store_confidence
            The component's settings of those names.
        """
        if loss != "nll" and not self.exact_map:
            raise ValueError(Errors.E113.format(structure=spec.name, loss=loss))
        if n_best and not self.supports_n_best:
            raise ValueError(Errors.E019.format(value=f"{n_best} with structure {spec.describe()}"))
        if target.is_span_target and not self.supports_spans:
            raise ValueError(Errors.E018.format(target=target.name, structure=spec.describe()))
        if self.needs_span_target and not target.is_span_target:
            raise ValueError(Errors.E108.format(name=component, target=target.name))
        if store_confidence and target.is_span_target and not self.supports_span_probabilities:
            raise ValueError(Errors.E096.format(target=target.name, structure=spec.describe()))

    def prepare_model(self, model, target: Any, settings: Optional[Mapping[str, Any]] = None):
        """The component's model adjusted for this structure: its parameters
        (``params``) declared on the model's ``crf_potentials`` layers, and
        what its block's ``settings`` add (input-dependent transitions for
        ``transition_templates``; a subclass adds more, e.g. tree features,
        or wraps the model with segment features). ``target`` is the
        component's Target (what it assigns, for the features it may read)."""
        if model is None:
            return None
        declare_params(model, self.params)
        templates = (settings or {}).get("transition_templates")
        if templates:
            model = add_token_transitions(model, templates, settings["transition_buckets"])
        return model

    def kept_config(self, config: Dict[str, Any]) -> Dict[str, Any]:
        """The config the pipeline keeps for a component of this structure
        (``nlp.config``, a saved config.cfg), from the one spaCy filled for
        it: where :meth:`prepare_model` builds a model of an architecture of
        its own from another, the config names that architecture (its
        ``model`` block), so the config describes the model. As filled, here."""
        return config

    def initialize_cfg(self, component: ComponentView, get_examples: Callable) -> Dict[str, Any]:
        """Settings read from the training data at ``initialize`` (after the
        labels), kept in the component's cfg and saved with it: ``relations``,
        the names that get label-interaction scores of their own."""
        return {"relations": []}

    def settings_run(self, settings: Mapping[str, Any], cfg: Mapping[str, Any]
                     ) -> Dict[str, Any]:
        """The settings the structure runs with, given its ``settings`` as a
        config names them and a trained component's ``cfg`` (what
        :meth:`initialize_cfg` found): two configs that run alike compare
        equal (W051). As named, here."""
        return dict(settings)

    def grow_cfg(self, component: ComponentView, n_old: int, n_new: int) -> Dict[str, Any]:
        """The cfg settings that change when ``add_label`` grows a trained
        component from ``n_old`` to ``n_new`` labels (the new ones last)."""
        return {}

    def span_length_report(self, cfg: Mapping[str, Any],
                           span_lengths: Mapping[int, int]) -> List[Tuple[str, str, str]]:
        """What ``spacy debug data`` says of a corpus's gold span lengths
        (length -> count) for this structure with the component's ``cfg``:
        ``(kind, text, fix)`` lines, ``kind`` ``"good"`` or ``"warn"``. Most
        structures take spans of any length: nothing."""
        return []

    def layout(self, docs: Sequence, component: ComponentView) -> BatchLayout:
        """The batch layout of ``docs`` (a ``DocBatch``, whose readings the
        model's features then share) for ``component``."""
        raise NotImplementedError

    def param_shapes(self, n_labels: int, n_relations: int = 1) -> Dict[str, Tuple[int, ...]]:
        """Name -> shape of each of ``params``, in their order (from the axes
        their owners registered: ``potentials.register_scores``)."""
        return {name: param_shape(name, n_labels, n_relations) for name in self.params}

    def emission_width(self, n_labels: int) -> int:
        """Columns of the model's emissions: one score per label, unless the
        structure runs several CRFs with scores of their own."""
        return n_labels

    # -- inference -----------------------------------------------------------

    def check(self, scores: CRFScores, layout: BatchLayout) -> np.ndarray:
        """The emissions as C-contiguous float64, after checking they fit the layout."""
        emissions = as_f64(scores.emissions)
        if layout.n_tokens != emissions.shape[0]:
            raise ValueError(Errors.E063.format(n_tokens=layout.n_tokens, n_rows=emissions.shape[0]))
        return emissions

    def viterbi(self, scores: CRFScores, layout: BatchLayout,
                fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Best labelling honouring ``fixed``: (N,) labels, (S,) best scores."""
        emissions = self.check(scores, layout)
        labels = np.zeros(emissions.shape[0], dtype=np.int64)
        best = np.zeros(layout.n_sequences)
        self._max_pass(emissions, scores, layout, labels_or_free(emissions.shape[0], fixed),
                       labels, best)
        return labels, best

    def marginals(self, scores: CRFScores, layout: BatchLayout,
                  fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(N, L) token marginals and (S,) log Z, honouring ``fixed``."""
        emissions = self.check(scores, layout)
        log_z = np.zeros(layout.n_sequences)
        out = np.zeros(emissions.shape)  # float64, whatever the emissions
        self._sum_pass(emissions, scores, layout, labels_or_free(emissions.shape[0], fixed),
                       log_z, out)
        return out, log_z

    def _max_pass(self, emissions: np.ndarray, scores: CRFScores, layout: BatchLayout,
                  fixed: np.ndarray, labels: np.ndarray, best: np.ndarray) -> None:
        """The max-product kernel: fills ``labels`` (N,) and ``best`` (S,)."""
        raise NotImplementedError

    def _sum_pass(self, emissions: np.ndarray, scores: CRFScores, layout: BatchLayout,
                  fixed: np.ndarray, log_z: np.ndarray, marginals: np.ndarray) -> None:
        """The sum-product kernel: fills ``log_z`` (S,) and ``marginals`` (N, L)."""
        raise NotImplementedError

    def nll_and_gradient(self, scores: CRFScores, layout: BatchLayout,
                         gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
        """(S,) negative log-likelihood of ``gold`` (-1 = unannotated) and its gradient."""
        raise NotImplementedError

    def n_best(self, scores: CRFScores, layout: BatchLayout, k: int,
               fixed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``k`` best labellings: (k, N) labels, (S, k) scores, (S,) counts."""
        raise ValueError(Errors.E065.format(k=k, structure=self.name))

    def span_log_probabilities(self, scores: CRFScores, layout: BatchLayout, labels: np.ndarray,
                               starts: np.ndarray, ends: np.ndarray, blocked_after: np.ndarray,
                               fixed: Optional[np.ndarray] = None,
                               force_log: bool = False) -> Tuple[np.ndarray, np.ndarray]:
        """Log probability of each labelled span; (M,) and (S,) log Z."""
        raise ValueError(Errors.E051)

    def unreachable_gold(self, scores: CRFScores, layout: BatchLayout,
                         gold: np.ndarray) -> Optional[np.ndarray]:
        """(S,) bool: the sequences with gold labels (-1 unknown) that no
        labelling the structure keeps agrees with, under ``scores`` (their
        ``-inf`` constraints); training takes them as unannotated. None, with
        no pass, where every labelling is kept (:attr:`prunes_labellings` False)."""
        if not self.prunes_labellings:
            return None
        gold = np.asarray(gold, dtype=np.int64)
        _, best = self.viterbi(scores, layout, gold)
        return np.isneginf(best) & annotated_sequences(gold, layout.lengths)

    def labelling_counts(self, layout: BatchLayout, labels: np.ndarray,
                         weights: np.ndarray, out: CRFScores) -> None:
        """Add ``weights[s]`` times the interaction counts of each sequence's
        labelling into ``out`` (the structure's parameters; emissions are done
        by the caller)."""
        raise NotImplementedError

    def zero_gradient(self, scores: CRFScores) -> CRFScores:
        """float64 zeros for the emissions, every parameter the structure reads
        and the per-token scores the batch has (token transitions, segment
        scores); no other parameter."""
        return CRFScores(np.zeros(scores.emissions.shape),
                         {name: np.zeros(np.shape(value)) for name, value in scores.params.items()
                          if name in self.params},
                         {name: np.zeros(np.shape(value)) for name, value in scores.token.items()})

    # -- the batch trainer -----------------------------------------------------

    def shard_nll(self, rows: np.ndarray, layout: BatchLayout, gold: np.ndarray,
                  params: Dict[str, np.ndarray], grads: Dict[str, np.ndarray],
                  workspace: Tuple[np.ndarray, np.ndarray, np.ndarray]) -> float:
        """Summed nll of a featurized shard at ``params`` (``W``, ``b`` and the
        structure's), its gradient added into ``grads``.

        This generic version gathers the emissions from the compact table,
        calls :meth:`nll_and_gradient` and scatters its emission gradient
        back, so a structure trains with ``spacy_crf.training.fit`` unless it
        says why not (``batch_trainer_error``); the chain and
        the tree override it with one fused numba kernel each, the
        second-order chain with two fused passes over its label pairs.
        """
        return self._gathered_nll(rows, layout, gold, params, grads, workspace[0], None)

    def masked_shard_nll(self, rows: np.ndarray, layout: BatchLayout, gold: np.ndarray,
                         params: Dict[str, np.ndarray], grads: Dict[str, np.ndarray],
                         workspace: Tuple[np.ndarray, np.ndarray, np.ndarray],
                         blocked: np.ndarray) -> float:
        """:meth:`shard_nll` with ``-inf`` emissions where ``blocked`` ((N, L)
        bool: the labels the target does not let a token take, the lemma trees
        that do not apply to its form), as the component masks them in
        training and decoding. The generic way for every structure: the fused
        kernels gather the emissions themselves and take no mask."""
        return self._gathered_nll(rows, layout, gold, params, grads, workspace[0], blocked)

    def _gathered_nll(self, rows: np.ndarray, layout: BatchLayout, gold: np.ndarray,
                      params: Dict[str, np.ndarray], grads: Dict[str, np.ndarray],
                      emissions: np.ndarray, blocked: Optional[np.ndarray]) -> float:
        gather_sum(params["W"], params["b"], rows, np.float64(1.0), emissions)
        if blocked is not None:
            np.copyto(emissions, -np.inf, where=blocked)
        scores = CRFScores(emissions, {name: params[name] for name in self.params})
        nll, gradient = self.nll_and_gradient(scores, layout, gold)
        scatter_sum(np.ascontiguousarray(gradient.emissions, dtype=np.float64), rows,
                    grads["W"], grads["b"])
        for name in self.params:
            grads[name] += getattr(gradient, name)
        return float(nll.sum())


def check_token_transitions(scores: CRFScores, emissions: np.ndarray, structure: str) -> None:
    """E107 unless ``scores`` has (N, L, L) token transitions (transition templates)."""
    token = scores.token_transitions
    expected = (emissions.shape[0], emissions.shape[1], emissions.shape[1])
    if token is None or np.shape(token) != expected:
        raise ValueError(Errors.E107.format(structure=structure, expected=expected,
                                            got=None if token is None else np.shape(token)))


def sequence_lengths(docs: Sequence, component: ComponentView) -> np.ndarray:
    """The lengths of a chain-like CRF's sequences in ``docs``: sentences where
    the docs have them, or whole docs with the component's ``sequence = "doc"``."""
    return batch_sequence_lengths(docs, component.cfg.get("sequence", SEQUENCE_SENTENCE)
                                  == SEQUENCE_SENTENCE)


def annotated_sequences(gold: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(S,) bool: the sequences with at least one gold label (``gold`` >= 0)."""
    sequence = np.repeat(np.arange(lengths.shape[0]), lengths)
    return np.bincount(sequence, weights=gold >= 0, minlength=lengths.shape[0]) > 0


def as_f64(array) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float64)


def labels_or_free(n_tokens: int, fixed: Optional[np.ndarray]) -> np.ndarray:
    """``fixed`` as int64, or all -1 (every label free)."""
    if fixed is None:
        return np.full(n_tokens, -1, dtype=np.int64)
    return np.ascontiguousarray(fixed, dtype=np.int64)


def gradient_in_dtype(scores: CRFScores, gradient: Dict[str, np.ndarray]) -> CRFScores:
    """A CRFScores gradient in the dtype of ``scores`` from float64 arrays:
    ``emissions`` and named scores (each put where its name belongs)."""
    dtype = scores.emissions.dtype
    named = {name: value.astype(dtype) for name, value in gradient.items() if name != "emissions"}
    return CRFScores.of(gradient["emissions"].astype(dtype), **named)


# A placeholder for the kernels' optional pair-marginal output when it is not wanted
# (numba needs an array of the right rank, not None).
NO_EDGES = np.zeros((1, 1, 1))


def check_spans(labels: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 blocked_after: np.ndarray, lengths: np.ndarray, n_tokens: int,
                 n_labels: int) -> None:
    """E050 unless the spans are non-empty, sorted, each inside one sequence, and
    the labels are label ids: the kernel trusts all that (a span past the end of
    its sequence would read the next one's rows, or past the arrays)."""
    ok = (labels.shape == (n_tokens,) and starts.shape == ends.shape
          and blocked_after.shape == (n_labels, n_labels)
          and bool(np.all(starts < ends)) and bool(np.all(np.diff(starts) >= 0)))
    if ok and starts.size:
        seq_end = np.cumsum(lengths)
        seq = np.searchsorted(seq_end, starts, side="right")  # the sequence holding each start
        ok = starts[0] >= 0 and seq[-1] < len(seq_end) and bool(np.all(ends <= seq_end[seq]))
    if ok and labels.size:
        ok = 0 <= labels.min() and labels.max() < n_labels
    if not ok:
        raise ValueError(Errors.E050.format(n_labels=n_labels))
