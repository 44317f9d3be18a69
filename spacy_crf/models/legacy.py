"""Architectures of earlier releases, kept so that pipelines saved with them load.

Before structures were config blocks of their own, a model's config carried
settings of the structures that read it: the tree's relation groups
(``n_relations``), the templates a tree adds (``tree_templates``) and
input-dependent transitions (``transition_templates``,
``transition_buckets``). They are settings of the structure's block now
(``spacy_crf.structures``). Each version here builds the model the current
version builds, applies those settings to it as the old version did (the
same layers in the same places, so saved weights load into it and predict as
before), and records them on the model (:data:`LEGACY_STRUCTURE_SETTINGS`):
the component moves them into its structure's settings
(``structures.config.migrate_model_settings``), where they are saved with
the pipeline. A setting of a structure the component does not have (a
chain's model kept the factory's ``tree_templates``) did nothing then and
does nothing now.
"""

from typing import Any, Dict, List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain
from thinc.types import Floats2d

from .architectures import (DEFAULT_NEURAL_WEIGHT, SPARSE_LR_SCALE, FeatureCRF, NeuralCRF,
                            check_positive, label_sized, scale_learn_rate, tok2vec_emissions)
from .featurize import featurize, set_tree_templates
from .hashed_linear import hashed_linear
from .potentials import CRFScores, set_relation_groups
from .sum_emissions import sum_emissions
from .token_transitions import add_token_transitions

#: attrs key of the structure settings an old architecture was given
LEGACY_STRUCTURE_SETTINGS = "crf_legacy_structure_settings"
#: the settings it recorded when they were left at their defaults then
NO_STRUCTURE_SETTINGS: Dict[str, Any] = {"n_relations": 1, "tree_templates": [],
                                         "transition_templates": [], "transition_buckets": 2**16}


def _record(model: Model, **settings: Any) -> Model:
    model.attrs[LEGACY_STRUCTURE_SETTINGS] = settings
    return model


@registry.architectures("spacy-crf.FeatureCRF.v1")
def FeatureCRF_v1(
    templates: List[str],
    n_buckets: int = 2**18,
    n_relations: int = 1,
    learn_rate_scale: float = SPARSE_LR_SCALE,
    tree_templates: Optional[List[str]] = None,
    transition_templates: Optional[List[str]] = None,
    transition_buckets: int = 2**16,
    cluster_templates: Optional[List[str]] = None,
    boost_updates: int = 0,
    average_weights: bool = True,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """``spacy-crf.FeatureCRF.v2`` with the structure settings v1 took:
    ``n_relations`` and ``tree_templates`` (the tree block's now) and
    ``transition_templates``, ``transition_buckets`` (the chain's and the
    tree's); the other parameters as in v2."""
    model = FeatureCRF(templates, n_buckets=n_buckets, learn_rate_scale=learn_rate_scale,
                       cluster_templates=cluster_templates, boost_updates=boost_updates,
                       average_weights=average_weights, nO=nO)
    set_relation_groups(model, n_relations)
    set_tree_templates(model, tree_templates or ())
    if transition_templates:
        check_positive("transition_buckets", transition_buckets)
        model = add_token_transitions(model, transition_templates, transition_buckets)
    return _record(model, n_relations=n_relations, tree_templates=list(tree_templates or ()),
                   transition_templates=list(transition_templates or ()),
                   transition_buckets=transition_buckets)


@registry.architectures("spacy-crf.NeuralCRF.v1")
def NeuralCRF_v1(
    tok2vec: Model[List[Doc], List[Floats2d]],
    templates: Optional[List[str]] = None,
    n_buckets: int = 2**18,
    n_relations: int = 1,
    learn_rate_scale: float = SPARSE_LR_SCALE,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """A CRF whose emissions come from a spaCy tok2vec plus, with
    ``templates``, hashed features, summed into one CRF (v3 pools two CRFs
    instead); ``n_relations`` is the tree block's setting now."""
    neural, potentials = tok2vec_emissions(tok2vec, learn_rate_scale, nO)
    if templates:
        check_positive("n_buckets", n_buckets)
        linear = hashed_linear(n_buckets, nO=nO)
        label_sized(linear)
        scale_learn_rate(learn_rate_scale, linear)
        emissions = sum_emissions(neural, chain(featurize(templates), linear))
    else:
        emissions = neural
    model = chain(emissions, potentials)
    model.name = "neural_crf"
    model.set_ref("tok2vec", tok2vec)
    set_relation_groups(model, n_relations)
    return _record(model, n_relations=n_relations)


@registry.architectures("spacy-crf.NeuralCRF.v2")
def NeuralCRF_v2(
    tok2vec: Model[List[Doc], List[Floats2d]],
    templates: Optional[List[str]] = None,
    neural_weight: float = DEFAULT_NEURAL_WEIGHT,
    n_buckets: int = 2**20,
    n_relations: int = 1,
    learn_rate_scale: float = SPARSE_LR_SCALE,
    cluster_templates: Optional[List[str]] = None,
    boost_updates: int = 0,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """``spacy-crf.NeuralCRF.v3`` with ``n_relations``, the tree block's setting now."""
    model = NeuralCRF(tok2vec, templates=templates, neural_weight=neural_weight,
                      n_buckets=n_buckets, learn_rate_scale=learn_rate_scale,
                      cluster_templates=cluster_templates, boost_updates=boost_updates, nO=nO)
    set_relation_groups(model, n_relations)
    return _record(model, n_relations=n_relations)
