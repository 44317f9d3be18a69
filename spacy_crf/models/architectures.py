"""Registered architectures: Docs -> CRFScores."""

from typing import List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Linear, Model, chain, list2array
from thinc.types import Floats2d

from ..errors import Errors
from .featurize import featurize
from .hashed_linear import hashed_linear
from .potentials import CRFScores, crf_potentials
from .sum_emissions import sum_emissions


LABEL_SIZED = "crf_label_sized"


def set_n_labels(model: Model, n_labels: int) -> None:
    """Give every layer whose output is one score per label its ``nO``."""
    for node in model.walk():
        if node.attrs.get(LABEL_SIZED) and node.has_dim("nO") is None:
            node.set_dim("nO", n_labels)


def _label_sized(*layers: Model) -> None:
    for layer in layers:
        layer.attrs[LABEL_SIZED] = True


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(Errors.E005.format(name=name, value=value))


@registry.architectures("spacy-crf.FeatureCRF.v1")
def FeatureCRF(
    templates: List[str],
    n_buckets: int = 2**18,
    n_relations: int = 1,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """A CRF over hashed sparse features of feature templates.

    Parameters
    ----------
    templates : list of str
        Feature templates, e.g. ``["NORM[-2..2]", "NORM[-1]|NORM[0]", "SUFFIX3"]``.
    n_buckets : int
        Rows of the hashed weight table (each row holds one weight per label).
    n_relations : int
        Relation groups with their own pair matrix (tree structure only).
    nO : int, optional
        Number of labels, usually inferred from the component's labels.
    """
    _check_positive("n_buckets", n_buckets)
    _check_positive("n_relations", n_relations)
    linear = hashed_linear(n_buckets, nO=nO)
    potentials = crf_potentials(nO=nO, n_relations=n_relations)
    _label_sized(linear, potentials)
    model = chain(featurize(templates), linear, potentials)
    model.name = "feature_crf"
    return model


@registry.architectures("spacy-crf.NeuralCRF.v1")
def NeuralCRF(
    tok2vec: Model[List[Doc], List[Floats2d]],
    templates: Optional[List[str]] = None,
    n_buckets: int = 2**18,
    n_relations: int = 1,
    nO: Optional[int] = None,
) -> Model[List[Doc], CRFScores]:
    """A CRF whose emissions come from a spaCy tok2vec (own or listener), plus
    optional hashed features.

    Parameters
    ----------
    tok2vec : Model
        Any spaCy tok2vec: ``spacy.Tok2Vec.v2``, ``spacy.Tok2VecListener.v1``,
        a transformer listener.
    templates : list of str, optional
        Feature templates whose hashed weights are added to the emissions.
    n_buckets, n_relations, nO
        As in ``spacy-crf.FeatureCRF.v1``.
    """
    _check_positive("n_relations", n_relations)
    output = Linear(nO=nO)
    potentials = crf_potentials(nO=nO, n_relations=n_relations)
    _label_sized(output, potentials)
    neural = chain(tok2vec, list2array(), output)
    if templates:
        _check_positive("n_buckets", n_buckets)
        linear = hashed_linear(n_buckets, nO=nO)
        _label_sized(linear)
        emissions = sum_emissions(neural, chain(featurize(templates), linear))
    else:
        emissions = neural
    model = chain(emissions, potentials)
    model.name = "neural_crf"
    model.set_ref("tok2vec", tok2vec)
    return model
