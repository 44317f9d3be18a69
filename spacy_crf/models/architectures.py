"""Registered architectures: Docs -> CRFScores."""

from typing import List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Linear, Model, chain, list2array
from thinc.types import Floats2d

from ..errors import Errors
from ..features.templates import FeatureTemplates
from ..util import is_count, is_number
from .featurize import featurize
from .grow import declare_label_axes, drop_params, grow_params
from .hashed_linear import LABEL_SIZED, hashed_linear
from .hmm import hmm
from .pooled_experts import pooled_experts
from .potentials import CRFScores, crf_potentials
from .sparse_table import BOOST_UPDATES, L1_PENALTY, LR_SCALE, UPDATES_DONE
from .token_transitions import FEATURE_CRF, LABEL_PAIR_SIZED
from .weight_average import average_weights as average_weights_of

#: default learning-rate scale of the sparse (hashed) weights and the potentials
SPARSE_LR_SCALE = 3.0
#: the tok2vec CRF's share of NeuralCRF.v3's pool (chosen on EWT UPOS dev)
DEFAULT_NEURAL_WEIGHT = 0.2


def set_n_labels(model: Model, n_labels: int) -> None:
    """Give every layer whose output is one score per label its ``nO``.

    A layer sized for another number of labels (a re-initialize with a new
    label set) is resized: its parameters are dropped, to be allocated anew
    by ``model.initialize`` or filled by a load, and so is any pending
    row-sparse gradient.
    """
    for node in model.walk():
        if node.attrs.get(LABEL_PAIR_SIZED):  # one column per label pair
            _set_width(node, n_labels * n_labels)
        elif _outputs_labels(node):
            _set_width(node, n_labels)


def grow_n_labels(model: Model, n_old: int, n_new: int) -> None:
    """Give a trained ``model`` ``n_new - n_old`` more labels, after its own:
    every label-sized parameter grows (``models/grow.py``), the new entries
    zero and the old ones unchanged, and the layers' ``nO`` follows."""
    for node in model.walk():
        if node.attrs.get(LABEL_PAIR_SIZED):
            width = n_new * n_new
        elif _outputs_labels(node):
            width = n_new
        else:
            continue
        if node.has_dim("nO") is not False:  # declared (set or not)
            # thinc refuses a new nO while parameters are set: unset them meanwhile
            kept = {name: node.get_param(name) for name in node.param_names
                    if node.has_param(name)}
            for name in kept:
                node.set_param(name, None)
            node.set_dim("nO", width, force=True)
            for name, value in kept.items():
                node.set_param(name, value)
    grow_params(model, n_old, n_new)


def _set_width(node: Model, width: int) -> None:
    if node.has_dim("nO") and node.get_dim("nO") != width:
        drop_params(node)
        node.set_dim("nO", width, force=True)
    elif node.has_dim("nO") is None:
        node.set_dim("nO", width)


def _outputs_labels(node: Model) -> bool:
    """A label-sized layer, or a combinator whose output is one (e.g. the chain)."""
    if node.attrs.get(LABEL_SIZED):
        return True
    return (bool(node.layers) and node.name != "crf_sum_emissions"
            and _outputs_labels(node.layers[-1]))


def label_sized(*layers: Model) -> None:
    for layer in layers:
        layer.attrs[LABEL_SIZED] = True


def scale_learn_rate(scale: float, *layers: Model) -> None:
    if not is_number(scale) or not scale > 0:
        raise ValueError(Errors.E021.format(value=scale))
    for layer in layers:
        layer.attrs[LR_SCALE] = float(scale)


def _boost(boost_updates: int, *layers: Model) -> None:
    if boost_updates:
        for layer in layers:
            layer.attrs[BOOST_UPDATES] = int(boost_updates)
            layer.attrs[UPDATES_DONE] = 0


def penalize_l1(l1_penalty: float, table: Model) -> None:
    if not is_number(l1_penalty) or not l1_penalty >= 0:
        raise ValueError(Errors.E184.format(value=l1_penalty))
    if l1_penalty:
        table.attrs[L1_PENALTY] = float(l1_penalty)


def check_table_settings(n_buckets: Optional[int], boost_updates: int,
                         l1_penalty: Optional[float] = None,
                         cluster_templates: Optional[List[str]] = None) -> None:
    """E005, E127, E184, E001-E004 for the hashed table's settings (also where
    a NeuralCRF without templates has no table: a typo there still says so)."""
    if n_buckets is not None:
        check_positive("n_buckets", n_buckets)
    if not is_count(boost_updates, 0):
        raise ValueError(Errors.E127.format(value=boost_updates))
    if l1_penalty is not None and (not is_number(l1_penalty) or not l1_penalty >= 0):
        raise ValueError(Errors.E184.format(value=l1_penalty))
    if cluster_templates:
        FeatureTemplates(cluster_templates)


def check_positive(name: str, value: int) -> None:
    if not is_count(value):
        raise ValueError(Errors.E005.format(name=name, value=value))


@registry.architectures("spacy-crf.FeatureCRF.v2")
def FeatureCRF(
    templates: List[str],
    n_buckets: Optional[int] = 2**18,
    learn_rate_scale: float = SPARSE_LR_SCALE,
    cluster_templates: Optional[List[str]] = None,
    boost_updates: int = 0,
    average_weights: bool = True,
    l1_penalty: float = 0.0,
    factored: Optional[bool] = None,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """A CRF over hashed sparse features of feature templates.

    What a structure adds to the model (a tree's relation groups and the
    templates that read the parse, input-dependent transitions) is set in the
    structure's block (``spacy_crf.structures``), which adds it when the
    component is made. v1 took those settings here (``models/legacy.py``).

    Parameters
    ----------
    templates : list of str
        Feature templates, e.g. ``["NORM[-2..2]", "NORM[-1]|NORM[0]", "SUFFIX3"]``.
    n_buckets : int, optional
        Rows of the hashed weight table (each row holds one weight per label,
        or per label part). null (the factory's default model): sized by the
        table's width at initialize, 2^20 rows up to 64 columns, then the
        most that keep it under 2^26 weights, at least 2^18
        (``spacy_crf.models.hashed_linear.table_rows``; a factored table counts
        the columns of the whole-label table beside it): 2^18 for EWT's
        morphology (80 parts beside 321 labels) and for its lemmas (531
        edit trees). The
        rows chosen are saved with the model.
    learn_rate_scale : float
        Multiplies the optimizer's learning rate for this model's weights.
        A sparse feature is seen in few batches, so it needs a larger step
        per update than a dense neural weight; the default makes spaCy's
        default optimizer (Adam, 0.001) train the CRF well. Set 1.0 to use
        the optimizer's rate as it is.
    cluster_templates : list of str, optional
        Templates added to ``templates`` when the component finds a Brown
        cluster table at ``initialize`` (spacy-lookups-data for the language,
        ``nlp.vocab.lookups``, or a file of one's own), e.g.
        ``["CLUSTER[-1..1]", "CLUSTER6"]``; without a table they are left out
        and the model reads the words' spelling alone.
    boost_updates : int
        A head start for short training loops: update ``t`` of the model's
        weights steps ``sqrt(boost_updates / t)`` times farther while that is
        above 1 (``spacy_crf.models.sparse_table.boost``); 0 turns it off. The
        factory's default model has 300: a plain loop of 80 updates then
        reaches what it otherwise needs several hundred for.
    average_weights : bool
        Predict with the moving average of the weights training visited
        (thinc's, as the optimizer's ``use_averages`` keeps it), not the last
        ones: the component keeps the average when the optimizer does not
        (``spacy_crf.models.weight_average``), so a plain ``nlp.update``
        loop and spaCy's default optimizer get it too. In a plain loop the
        factory's default model gains 1.2 F1 on UNER dev with it (EWT UPOS
        dev: -0.07); through ``spacy train`` both move by -0.1.
    l1_penalty : float
        An L1 penalty on the hashed weights, taken at every update as a
        proximal step scaled like Adam's step for each weight
        (``spacy_crf._kernels.sparse_update``): rare features that do not
        earn their weight go to zero, as in a CRF trained with L1
        (CRFsuite's c1, ``fit --c1``). In units of the gradient of one
        update, at the optimizer's rate times ``learn_rate_scale`` (without
        the head start); 0 turns it off. The factory's default model has
        3e-6, chosen on dev splits (docs/component.md, "Defaults"): UNER
        +0.7 dev F1, EWT UPOS 0.0; without a cluster table UPOS -0.15, so
        set 0 there. Optimizers the row-sparse step
        does not handle (RAdam) step the table densely, without it; ``fit``
        has its own ``--c1``.
    factored : bool, optional
        Hold a weight per label *part* rather than per label, a label scoring
        the sum of its parts' weights and a bias of its own
        (``spacy_crf.models.label_parts``): the morphology's 321 labels in UD
        English EWT are 77 parts (``POS=NOUN``, ``Number=Sing``), so the
        table holds a quarter of the weights, a token reads a quarter, and a
        rare label learns from every label that shares its parts. null (the
        default): factor where the target's labels are made of parts
        (``morph``), not elsewhere (every other target: its labels are
        atomic, so factoring would change nothing but the cost). Where the
        table may factor, the component adds the target's whole-label
        weights beside it (``spacy_crf.models.whole_label``: for ``morph``
        the word and its rule lemmas keep a weight per label). The batch
        trainer ``fit`` trains unfactored tables only.
    nO : int, optional
        Number of labels, usually inferred from the component's labels.
    """
    check_table_settings(n_buckets, boost_updates)
    if factored not in (None, True, False):
        raise ValueError(Errors.E240.format(value=factored))
    linear = hashed_linear(n_buckets, nO=nO, factored=factored)
    potentials = crf_potentials(nO=nO)
    label_sized(linear, potentials)
    scale_learn_rate(learn_rate_scale, linear, potentials)
    _boost(boost_updates, linear, potentials)
    penalize_l1(l1_penalty, linear)
    if average_weights:
        average_weights_of(linear, potentials)
    model = chain(featurize(templates, cluster_templates or ()), linear, potentials)
    model.name = FEATURE_CRF
    return model


@registry.architectures("spacy-crf.NeuralCRF.v3")
def NeuralCRF(
    tok2vec: Model[List[Doc], List[Floats2d]],
    templates: Optional[List[str]] = None,
    neural_weight: float = DEFAULT_NEURAL_WEIGHT,
    n_buckets: Optional[int] = None,
    learn_rate_scale: float = SPARSE_LR_SCALE,
    cluster_templates: Optional[List[str]] = None,
    boost_updates: int = 0,
    l1_penalty: float = 0.0,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """A CRF over a spaCy tok2vec (own or listener) and, with ``templates``, a
    CRF over hashed features, pooled: two experts, each trained as it would
    be alone.

    With templates the model is a logarithmic opinion pool
    (``models/pooled_experts.py``) of two CRFs with scores of their own: one
    over the tok2vec (a linear layer and its own label interactions) and one
    exactly as ``spacy-crf.FeatureCRF.v2`` over the templates. Each expert is
    trained on its own likelihood; the component decodes the pool, whose
    scores are ``neural_weight`` times the tok2vec CRF's plus ``1 -
    neural_weight`` times the feature CRF's. v1 (``models/legacy.py``)
    instead trains one CRF over the summed emissions, where the tok2vec,
    which fits the training data fastest, takes the gradient from the hashed
    features; on EWT UPOS and UNER that joint model scores below the feature
    CRF alone; the pool scores above it on EWT UPOS, and about 1 F1 below it
    on UNER. v3 is v2 without ``n_relations``, which is the tree structure's
    setting now.

    Without templates the model is the tok2vec CRF alone.

    Parameters
    ----------
    tok2vec : Model
        Any spaCy tok2vec: ``spacy.Tok2Vec.v2``, ``spacy.Tok2VecListener.v1``,
        a transformer listener.
    templates : list of str, optional
        Feature templates of the hashed-feature expert.
    neural_weight : float
        The tok2vec CRF's share of the pool, in (0, 1). A tok2vec CRF is
        sharper on its training data than on new text, so it gets the smaller
        share; the default was chosen on EWT UPOS dev (README, Architectures).
        The ``spacy train`` callback ``spacy-crf.fit_pool_weights.v1`` refits
        it on the dev corpus before every evaluation.
    n_buckets : int, optional
        Rows of the feature expert's hashed table; the default is the
        ``crf_tagger`` factory's (null: sized by the table's width), so with
        the factory's templates the feature expert is the factory's default
        model.
    learn_rate_scale, nO
        As in ``spacy-crf.FeatureCRF.v2``; ``learn_rate_scale`` applies to the
        hashed weights and both experts' label interactions, not to the
        tok2vec or its output layer.
    cluster_templates, boost_updates, l1_penalty
        As in ``spacy-crf.FeatureCRF.v2``, for the feature expert (the
        factory's default model has ``CLUSTER`` templates, 300 and 3e-6).
    """
    neural, potentials = tok2vec_emissions(tok2vec, learn_rate_scale, nO)
    if not templates:
        # (the feature expert's settings, unused: a bad value is still named)
        check_table_settings(n_buckets, boost_updates, l1_penalty, cluster_templates)
        model = chain(neural, potentials)
    else:
        if not is_number(neural_weight) or not 0.0 < neural_weight < 1.0:
            raise ValueError(Errors.E120.format(value=neural_weight))
        features = FeatureCRF(templates, n_buckets=n_buckets, learn_rate_scale=learn_rate_scale,
                              cluster_templates=cluster_templates,
                              boost_updates=boost_updates, l1_penalty=l1_penalty, nO=nO)
        model = pooled_experts([features, chain(neural, potentials)],
                               [1.0 - neural_weight, neural_weight])
    model.name = "neural_crf"
    model.set_ref("tok2vec", tok2vec)
    return model


def tok2vec_emissions(tok2vec: Model, learn_rate_scale: float,
                      nO: Optional[int]) -> Tuple[Model, Model]:
    """The tok2vec's emissions (a linear layer over its vectors) and label
    interactions for them."""
    output = declare_label_axes(Linear(nO=nO), {"W": ("out", None), "b": ("out",)})
    potentials = crf_potentials(nO=nO)
    label_sized(output, potentials)
    scale_learn_rate(learn_rate_scale, potentials)
    return chain(tok2vec, list2array(), output), potentials


@registry.architectures("spacy-crf.HMM.v1")
def HMM(n_buckets: int = 2**18, smoothing: float = 0.1, nO: Optional[int] = None
        ) -> Model[List[Doc], CRFScores]:
    """A first-order hidden Markov model: the generative baseline, decoded by
    the chain kernel (see ``spacy_crf.models.hmm``).

    It learns from counts when the component is initialized (``spacy train``
    and ``nlp.initialize`` hand it the whole training corpus); updates leave it
    as it is. Chain structure, first order only.

    Parameters
    ----------
    n_buckets : int
        Rows of the hashed count tables (words, and suffixes with capitalisation).
    smoothing : float
        The additive smoothing, > 0: added to every transition count, and,
        times the tag's relative frequency ``P(y)``, to every word-tag count.
    nO : int, optional
        Number of tags, usually inferred from the component's labels.
    """
    check_positive("n_buckets", n_buckets)
    if not is_number(smoothing) or not smoothing > 0:
        raise ValueError(Errors.E104.format(value=smoothing))
    model = hmm(n_buckets, float(smoothing), nO=nO)
    label_sized(model)
    return model
