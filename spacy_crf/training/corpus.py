"""A FeatureCRF component's training corpus, featurized once into shards.

Features, labels and structure come from the component itself: its model's
featurize layer, ``gold_label_ids`` (the target's gold ids, scheme-breaking span tags
unannotated, as in ``update``), ``batch_layout`` and ``constrain_target`` (a
span scheme's forbidden moves, and the labels a token may not take: the lemma
trees that do not apply to its form). So the batch trainer sees exactly what
``spacy train`` shows the component.

The hashed table has ``n_buckets`` rows but a corpus uses a fraction of them:
those rows are compacted (``buckets[r]`` is the table row of compact row
``r``), and :func:`write_weights` puts a parameter vector back into the
component's model.
"""

import ctypes
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, List, Sequence, Tuple, Union

import numpy as np
import srsly
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Model, set_dropout_rate

from .._kernels.emissions import feature_rows
from ..errors import Errors
from ..features.doc_arrays import doc_lengths
from ..models.featurize import OWNER
from ..models.hashed_linear import BUCKETING, UNSIGNED
from ..models.label_parts import FACTORED, factors
from ..models.whole_label import NAME as WHOLE_LABEL
from ..models.potentials import CRFScores
from ..targets import Target
from .objective import FeaturizedShard, ParameterLayout

FEATURE_CRF = "feature_crf"
#: what trains a model that fit does not (E031), by the model's name
FIT_ROUTES = {
    "neural_crf": "Train a NeuralCRF model with python -m spacy train.",
    "hmm": ("An HMM (spacy-crf.HMM.v1) has no weights to fit: it learns from counts when the "
            "component is initialized, so python -m spacy train, or nlp.initialize() with "
            "the training examples, trains it."),
    "crf_two_experts": ("Train the two experts of structure = \"chain_tree\" with python -m "
                        "spacy train."),
}
#: E031's route for a model of another name
OTHER_ROUTE = ("Train it with python -m spacy train, or give the component a "
               "spacy-crf.FeatureCRF.v2 model to train it with fit.")


def not_a_feature_crf(model: Model) -> ValueError:
    """E031 for ``model``, which is no FeatureCRF, naming what trains it."""
    return ValueError(Errors.E031.format(model=model.name,
                                         route=FIT_ROUTES.get(model.name, OTHER_ROUTE)))


def feature_layers(model: Model) -> Tuple[Model, Model, Model]:
    """The featurize, hashed-linear and potentials layers of a FeatureCRF model.

    Raises
    ------
    ValueError
        E031 if ``model`` is not a ``spacy-crf.FeatureCRF``.
    """
    if model.name != FEATURE_CRF:
        raise not_a_feature_crf(model)
    if len(model.layers) != 3:  # transition templates add a branch
        raise ValueError(Errors.E106)
    featurize, linear, potentials = model.layers
    # a weight per label part (and whole-label weights beside them, which only
    # a factored table has): the shards' kernels read one table of one per label
    if factors(linear) or linear.name == WHOLE_LABEL:
        raise ValueError(Errors.E241.format(name=featurize.attrs.get(OWNER) or "crf_tagger"))
    return featurize, linear, potentials


def holds_part_weights(model: Model, target: Target) -> bool:
    """Whether the FeatureCRF ``model`` of a component of ``target`` has, or
    gets at ``initialize``, a table with a weight per label part, which fit
    does not train (E241); before ``initialize`` too, for a message that
    names every setting fit needs at once."""
    if model.name != FEATURE_CRF or len(model.layers) != 3:
        return False
    linear = model.layers[1]
    if factors(linear) or linear.name == WHOLE_LABEL:
        return True
    setting = linear.attrs.get(FACTORED)
    if setting is not None:
        return bool(setting)
    # factored = null factors where the labels are made of parts: a target whose
    # labels are gives their parts (it has its own Target.label_parts)
    return type(target).label_parts is not Target.label_parts


def layout_of(pipe) -> ParameterLayout:
    """The parameter layout of ``pipe`` (an initialized ``crf_tagger``), without rows."""
    _, _, potentials = feature_layers(pipe.model)
    return ParameterLayout(0, len(pipe.tags), pipe.crf_structure.name, potentials.get_dim("nR"))


def read_corpus(corpus: Callable[[Language], Iterable[Example]],
                nlp: Language) -> List[Example]:
    """All examples of a config's corpus reader (e.g. ``spacy.Corpus.v1``, with
    its augmenter), as ``spacy train`` reads them.

    srsly, which ``DocBin`` uses, looks up its msgpack decoders among every
    installed package's entry points at each ``msgpack_loads``, and a doc with
    user data (a ``_.NAME`` target) or spans takes three: on CoNLL-2000 that
    was half of the 7 s spent reading the training corpus. The decoders are
    looked up once here, for as long as the reading lasts.
    """
    with _decoders_looked_up_once():
        return list(corpus(nlp))


@contextmanager
def _decoders_looked_up_once() -> Iterator[None]:
    registry = srsly.msgpack_decoders
    found = registry.get_all()
    registry.get_all = lambda: found
    try:
        yield
    finally:
        del registry.get_all


def release_memory() -> None:
    """Hand the C heap's free pages back to the system.

    Docs keep their tokens in ``malloc``'d memory; once they are freed, glibc
    keeps the pages for later ``malloc`` calls, which large numpy arrays (own
    ``mmap`` regions) never use, so the peak RSS would include them. A no-op
    where the C library has no ``malloc_trim``. (Docs and Examples hold no
    reference cycles: dropping the last reference frees them, no
    ``gc.collect`` needed.)
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):
        pass


def shard_bounds(lengths: np.ndarray, n_shards: int) -> List[Tuple[int, int]]:
    """Split docs with ``lengths`` tokens into at most ``n_shards`` contiguous,
    non-empty runs of about equal token counts, as ``(first, end)`` doc indices."""
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    cuts = [0]
    for i in range(1, n_shards):
        cut = int(np.searchsorted(ends, total * i / n_shards, side="left")) + 1
        if cuts[-1] < cut < len(lengths):
            cuts.append(cut)
    cuts.append(len(lengths))
    return list(zip(cuts[:-1], cuts[1:]))


def featurize_corpus(pipe, examples: Sequence[Example],
                     n_shards: int = 1) -> Tuple[List[FeaturizedShard], np.ndarray]:
    """Featurize the predicted docs of ``examples`` for ``pipe``, in ``n_shards`` shards.

    Parameters
    ----------
    pipe : CRFTagger
        An initialized ``crf_tagger`` with a FeatureCRF model.
    examples : sequence of Example
        The training corpus (predicted docs as the component would see them).
    n_shards : int
        How many shards (fewer if there are fewer non-empty docs).

    Returns
    -------
    shards : list of FeaturizedShard
    buckets : numpy.ndarray
        (R,) int64: the hashed-table row of every compact row.
    """
    featurize, linear, _ = feature_layers(pipe.model)
    n_buckets = linear.get_dim("nV")
    unsigned = linear.attrs.get(BUCKETING, UNSIGNED) == UNSIGNED
    examples = [eg for eg in examples if len(eg.predicted)]
    if not examples:
        raise ValueError(Errors.E020.format(name=pipe.name, where=""))
    bounds = shard_bounds(doc_lengths([eg.predicted for eg in examples]), n_shards)
    parts = []
    for first, end in bounds:
        batch = examples[first:end]
        docs = pipe.read_batch([eg.predicted for eg in batch])
        batch_layout = docs.layout
        # featurized as training does (a gazetteer drawn from this corpus holds
        # each document's own phrases out)
        features = np.ascontiguousarray(featurize(docs, is_train=True)[0], dtype=np.uint64)
        # the table row of every feature, mapped as the hashed layer maps it
        buckets = np.empty(features.shape, dtype=np.int64)
        feature_rows(features, n_buckets, unsigned, buckets)
        scores = _constrained_zeros(pipe, docs)
        gold = pipe.gold_label_ids(batch, scores, batch_layout)
        pipe.learn_new_labels(gold)  # labels added to a warm start, which this corpus trains
        constraints = None
        if pipe.target.is_span_target:
            constraints = {name: np.asarray(getattr(scores, name), dtype=np.float64)
                           for name in batch_layout.structure.params}
        blocked = np.isneginf(scores.emissions)
        parts.append((buckets, gold, batch_layout, constraints,
                      blocked if blocked.any() else None))
    # compact rows in order of decreasing frequency: the features of most tokens
    # share a few cache lines of the weights and of the gradient
    counts = np.zeros(n_buckets, dtype=np.int64)
    for buckets, *_ in parts:
        counts += np.bincount(buckets.ravel(), minlength=n_buckets)
    table_rows = np.flatnonzero(counts)
    table_rows = table_rows[np.argsort(-counts[table_rows], kind="stable")]
    # compact[b] = the compact row of table row b
    compact = np.full(n_buckets, -1, dtype=np.int64)
    compact[table_rows] = np.arange(table_rows.shape[0])
    base = layout_of(pipe)
    layout = ParameterLayout(int(table_rows.shape[0]), base.n_labels, base.structure,
                             base.n_relations)
    shards = [FeaturizedShard(layout, np.ascontiguousarray(compact[buckets]),
                              np.ascontiguousarray(gold, dtype=np.int64), batch_layout,
                              constraints, blocked)
              for buckets, gold, batch_layout, constraints, blocked in parts]
    return shards, table_rows


def _constrained_zeros(pipe, docs: Sequence[Doc]) -> CRFScores:
    """All-zero scores of ``docs`` with the component's target constraints
    (``-inf``): a span scheme's forbidden moves, and the emissions of the labels
    a token may not take (``Target.allowed_labels``), as ``update`` has them."""
    L = len(pipe.tags)
    _, _, potentials = feature_layers(pipe.model)
    R = potentials.get_dim("nR")
    shapes = pipe.crf_structure.param_shapes(L, R)
    scores = CRFScores(np.zeros((int(doc_lengths(docs).sum()), L), dtype=np.float32),
                       {name: np.zeros(shape, dtype=np.float32) for name, shape in shapes.items()})
    return pipe.constrain_target(scores, docs)


def write_weights(pipe, layout: ParameterLayout, buckets: np.ndarray,
                  theta: np.ndarray, clear_others: bool = True) -> None:
    """Put the parameter vector ``theta`` into ``pipe``'s model (in its dtype).

    Rows of the hashed table that no compact row maps to become zero, unless
    ``clear_others`` is False: the batch trainer writes its weights after
    every evaluation, into a table whose other rows it has already cleared,
    and a 2**20-row table is 92 MB to rewrite.
    """
    _, linear, potentials = feature_layers(pipe.model)
    params = layout.split(np.asarray(theta))
    W = linear.get_param("W")
    if clear_others:
        W[...] = 0
    W[buckets] = params["W"]
    linear.set_param("W", W)
    linear.set_param("b", params["b"].astype(linear.get_param("b").dtype))
    for name in layout.params:
        potentials.set_param(name, params[name].astype(potentials.get_param(name).dtype))


def read_weights(pipe, layout: ParameterLayout, buckets: np.ndarray) -> np.ndarray:
    """The parameter vector ``theta`` of ``pipe``'s model (the inverse of
    :func:`write_weights`): a trained model's weights, to start from."""
    _, linear, potentials = feature_layers(pipe.model)
    theta = np.zeros(layout.size, dtype=np.float64)
    params = layout.split(theta)
    params["W"][...] = linear.get_param("W")[buckets]
    params["b"][...] = linear.get_param("b")
    for name in layout.params:
        params[name][...] = potentials.get_param(name)
    return theta


def check_emissions(pipe, examples: Sequence[Example],
                    shards: Union[FeaturizedShard, Sequence[FeaturizedShard]],
                    buckets: np.ndarray, seed: int = 0, n_docs: int = 20) -> None:
    """Check that the shards' features give the model's own emissions.

    Random weights are written into the model (zeros afterwards) and the
    emissions of the first ``n_docs`` non-empty docs of ``examples`` are
    compared with those the shards' rows select. The shards hold the
    non-empty docs in order, so the first docs may span several shards: a
    small corpus cut into many shards (30 docs on 2 threads) has fewer than
    ``n_docs`` docs in its first.

    Raises
    ------
    RuntimeError
        E035 if they differ (the feature rows do not map as the model's do).
    """
    if isinstance(shards, FeaturizedShard):
        shards = [shards]
    layout = shards[0].layout
    rng = np.random.default_rng(seed)
    probe = rng.normal(size=layout.size).astype(np.float32).astype(np.float64)
    docs, n_tokens = [], 0
    for eg in examples:
        if len(eg.predicted):
            docs.append(eg.predicted)
            n_tokens += len(eg.predicted)
        if len(docs) == n_docs:
            break
    rows = _first_rows(shards, n_tokens)
    write_weights(pipe, layout, buckets, probe)
    try:
        got = np.asarray(_training_emissions(pipe.model, docs), dtype=np.float64)
    finally:
        write_weights(pipe, layout, buckets, np.zeros(layout.size))
    params = layout.split(probe)
    want = params["b"] + params["W"][rows].sum(axis=1)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-3):
        raise RuntimeError(Errors.E035.format(name=pipe.name))


def _training_emissions(model: Model, docs: Sequence[Doc]) -> np.ndarray:
    """The emissions of ``docs`` featurized as the shards are, in training mode
    (a gazetteer drawn from the corpus holds each document's own phrases out),
    with no dropout."""
    rates = {node.id: node.attrs["dropout_rate"] for node in model.walk()
             if "dropout_rate" in node.attrs}
    set_dropout_rate(model, 0.0)
    try:
        return model(docs, is_train=True)[0].emissions
    finally:
        for node in model.walk():
            if node.id in rates:
                node.attrs["dropout_rate"] = rates[node.id]


def _first_rows(shards: Sequence[FeaturizedShard], n_tokens: int) -> np.ndarray:
    """The feature rows of the corpus's first ``n_tokens`` tokens, across shards."""
    parts, left = [], n_tokens
    for shard in shards:
        if left <= 0:
            break
        parts.append(shard.rows[:left])
        left -= parts[-1].shape[0]
    return np.concatenate(parts, axis=0)
