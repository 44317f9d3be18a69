"""The ``crf_tagger`` factory: its default config and how it makes a component.

``nlp.add_pipe("crf_tagger", config={...})`` and every config that names the
factory come here; the settings are checked by the component
(:mod:`.settings`) and by the structure's own config block
(``spacy_crf.structures``). The entry point ``spacy_factories`` names this
function, so ``spacy.load`` finds it without an import.
"""

from typing import Callable, List, Optional, Union

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Config, Model

from ..models.potentials import CRFScores
from ..scoring import default_score_weights
from ..structures import StructureSpec
from ..structures.config import migrate_flat_settings, move_flat_settings
from ..targets import assignable_attributes
from .crf_tagger import CRFTagger
from .extensions import check_own_place
from .pipe_meta import declare_component_meta, declare_pipe_config

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-crf.FeatureCRF.v2"
n_buckets = null
templates = ["NORM[-2..2]", "NORM[-1]|NORM[0]", "NORM[0]|NORM[1]", "SHAPE[-2..2]", "PREFIX1", "PREFIX2", "PREFIX3", "SUFFIX1", "SUFFIX2", "SUFFIX3", "SUFFIX4", "SUFFIX3[-1]", "SUFFIX3[1]", "IS_TITLE[-1..1]", "IS_UPPER", "LIKE_NUM", "ORTH"]
cluster_templates = ["CLUSTER[-1..1]", "CLUSTER6[-1..1]", "CLUSTER[-1]|CLUSTER[0]", "CLUSTER[0]|CLUSTER[1]"]
boost_updates = 300
l1_penalty = 0.000003
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]


@Language.factory(
    "crf_tagger",
    # what some target registered by now may write; each component's own meta
    # (declare_pipe_meta in the factory) names only what its target writes
    assigns=assignable_attributes(),
    default_config={
        "model": DEFAULT_MODEL,
        "target": "tag",
        "structure": {"@structures": "spacy-crf.Chain.v1", "order": None},
        "sequence": "doc",
        "scheme": "BILUO",
        "keep_existing": None,
        "store_confidence": False,
        "n_best": 0,
        "loss": "nll",
        "scorer": {"@scorers": "spacy-crf.crf_scorer.v1"},
    },
    # the default target's; each component declares its own target's (declare_pipe_meta)
    default_score_weights=default_score_weights("tag"),
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
        Docs -> CRFScores, e.g. ``spacy-crf.FeatureCRF.v2``.
    target : str
        Where gold labels come from and predictions go: ``tag``, ``pos``,
        ``dep``, ``morph`` (``Token.morph`` and ``Token.pos``, one label per
        token as spaCy's morphologizer makes them), ``lemma``
        (``Token.lemma_``, an edit tree per token as spaCy's edit tree
        lemmatizer makes them), ``sent_starts`` (``Token.is_sent_start``, a
        senter: its sequence is the doc), ``ents``, ``spans:KEY`` or ``_.NAME``
        (a token extension).
    structure : StructureSpec or str
        The graph the labels interact over, a config block of the
        ``structures`` registry with its own settings
        (``spacy_crf.structures``): ``spacy-crf.Chain.v1`` (``order`` 1 or 2,
        by default ``null``: 2 for span targets, 1 for the others; a
        linear-chain CRF per doc, per sentence with ``sequence =
        "sentence"``; ``transition_templates``: input-dependent
        transitions), ``spacy-crf.Tree.v1`` (a CRF over each doc's
        dependency parse; ``n_relations``, ``tree_templates``, the templates
        the parse adds), ``spacy-crf.ChainTree.v1`` (both, as experts),
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
        the target: ``True`` for ``ents`` (spaCy's ``ner``), ``tag``,
        ``lemma`` and ``sent_starts`` (its ``tagger``, lemmatizers and
        ``senter``: ``overwrite = false``), ``False`` for the others (its
        ``morphologizer`` and ``spancat`` overwrite).
    store_confidence : bool
        Also run forward-backward at prediction and store each token's
        probability of its predicted label (``token._.crf_confidence``) and,
        for span targets, each span's probability (``span._.crf_confidence``).
    n_best : int
        If above 0, also store the ``n_best`` best labellings of every sequence
        with their probabilities in ``doc._.crf_nbest`` (chains and the semi-Markov CRF).
    loss : str
        The training loss (``spacy_crf.losses``): ``nll`` (the
        likelihood), ``perceptron`` (structured perceptron, averaged as every
        update-trained model is: ``average_weights``) or ``hinge`` (structured
        SVM, Hamming cost).
    scorer : callable, optional
        Scoring function, by default ``spacy-crf.crf_scorer.v1``.
    order, max_segment_length : int, optional
        Not settings of the component: its structure's, in the structure's
        block. Configs written before structures were blocks (pipelines saved
        then) have them at the top level: ``structure = "chain"`` with
        ``order = 2`` beside it is read as the block ``spacy-crf.Chain.v1``
        with ``order = 2``, W043 says so, and the config the pipeline keeps
        (``nlp.config``, ``spacy init fill-config``, what ``to_disk`` saves)
        has them in the block alone; E170 for one beside a block that says
        otherwise.
    """
    # each component stores its confidences in a place of its own (issue #49)
    check_own_place(name, [other for other, pipe in nlp.components
                           if isinstance(pipe, CRFTagger)])
    structure = migrate_flat_settings(structure, order=order,
                                      max_segment_length=max_segment_length)
    component = CRFTagger(nlp.vocab, model, name, target=target, structure=structure,
                          sequence=sequence, scheme=scheme, keep_existing=keep_existing,
                          store_confidence=store_confidence, n_best=n_best, loss=loss,
                          scorer=scorer)
    # the config kept for the component: the flat settings in the structure's
    # block alone (spaCy's validation of a saved config needs the parameters to
    # stay in the signature), the model as the structure builds it
    declare_pipe_config(nlp, name, "crf_tagger", lambda config: component.crf_structure
                        .kept_config(move_flat_settings(config)))
    # what this component writes and scores depends on its target: tell
    # nlp.analyze_pipes() and the score weights of nlp.config
    declare_component_meta(nlp, name, component)
    return component


