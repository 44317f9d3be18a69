"""Whole-label weights beside a factored table: the word itself scores every
label as a whole, the other features its parts.

A table factored over label parts (``label_parts.py``) scores
``"Number=Sing|POS=NOUN"`` as the sum of what its features say of
``POS=NOUN`` and of ``Number=Sing``. That shares what a part learns across
the labels that have it, but no feature can speak for a combination: "that"
is ``PRON`` with ``PronType=Rel``, or ``DET`` with ``PronType=Dem``, or
``SCONJ`` with neither, and its weights for the parts alone also favour
``PRON`` with ``PronType=Dem``. A weight per whole label for the word's own
form gives each word its combinations back, at the cost of one table row per
word:

    score(token, label) = sum over features f, parts p of label of W[f, p]
                          + sum over whole-label features g of V[g, label]
                          + bias[label]

On UD English EWT's morphology (321 labels of 80 parts), the word's
``NORM`` and the rule lemmas spaCy's tables give it (one conjunction) as
those features lift UFeats from 95.57 to 95.75 on dev and from 95.90 to
96.10 on test (three shuffles each of a plain loop); UD Greek GDT moves from
91.78 to 91.85 on dev. Reading every optional template of the target as well
(16 columns, not 2) scored the same (95.83 dev, 96.09 test) and decoded at
360k tok/s against 430k (before the search added the labels' scores in
place, which took the default to 508k; the parts alone 607k). A table with
a weight per label for every feature (``factored = false``) scores 96.14 on
test, at 1.7 times the training memory. The whole-label table has
:data:`ROWS` rows, and the factored table beside it is sized as if it held
the labels' columns too (``hashed_linear.table_rows``: 2^18 rows, not 2^19,
for EWT), so training takes no more memory than the factored table alone did
(about 1.0 GB).
Decoding costs a fifth more: the labels' scores are gathered for each
token, and the pruned chain's search adds them to each block it composes
(``_kernels/pruning.py:compose_candidates``).

Which templates read a whole label is the target's
(:attr:`~spacy_crf.targets.Target.whole_label_templates`: the word and its
rule lemmas for ``morph``); the component adds the layer when it is made
(:func:`add_whole_label_weights`), where its model is a
``spacy-crf.FeatureCRF`` whose table may factor (``factored`` not false). The
layer reads the columns of those templates from the model's own featurize
layer (a reference, so nothing is hashed twice). A pipeline saved before the
layer existed loads without it (:func:`fit_saved_layout`) and predicts as it
did.
"""

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
from thinc.api import Model

from ..features.templates import FeatureTemplates
from .composed_emissions import ComposedEmissions
from .experts import is_two_experts
from .hashed_linear import NAME as TABLE_LAYER
from .hashed_linear import ROW_COLUMNS, companion_table
from .label_parts import FACTORED
from .layer_attrs import AVERAGE_WEIGHTS, LABEL_SIZED
from .sparse_table import BOOST_UPDATES, L1_PENALTY, LR_SCALE
from .token_transitions import FEATURE_CRF

NAME = "crf_whole_label"
#: rows of the whole-label table: EWT's training split has 16k distinct NORMs
#: (14k rows written at 2^15); 2^15 x 321 labels is 10.5M weights
ROWS = 2 ** 15
#: attrs key: the canonical names of the templates read as whole labels (``"NORM[0]"``)
TEMPLATES = "crf_whole_label_templates"
#: the reference to the featurize layer whose columns the layer reads
FEATURES_REF = "features"
#: the attrs the whole-label table takes from the factored table (it is
#: stepped, boosted, penalised and averaged as that table is)
_SHARED_ATTRS = (LR_SCALE, BOOST_UPDATES, AVERAGE_WEIGHTS, L1_PENALTY)


def add_whole_label_weights(model: Optional[Model], templates: Sequence[str]) -> Optional[Model]:
    """``model`` with whole-label weights for the features of ``templates``,
    where it is a ``spacy-crf.FeatureCRF`` (featurize, hashed table, label
    interactions) whose table may factor; any other model is returned as it
    is, and so is one that has them already.

    Parameters
    ----------
    model : Model, optional
        The component's model, before its structure adds to it; of two
        experts (``spacy-crf.ChainTreeExperts.v1``), each expert's.
    templates : sequence of str
        The word's template first (``"NORM"``), then others read where the
        model has them (optional templates, added at ``initialize`` where
        their tables are there). A model whose templates lack the first is
        returned as it is.
    """
    if model is not None and is_two_experts(model):
        # each expert a FeatureCRF (chain_tree's architecture in a config): each
        # gets them, as a plain FeatureCRF gets them before the structure copies it
        for expert in model.layers:
            add_whole_label_weights(expert, templates)
        return model
    if model is None or not templates or model.name != FEATURE_CRF or len(model.layers) != 3:
        return model
    features, table, potentials = model.layers
    # (a model that has them holds this layer, not a table, in the middle)
    if table.name != TABLE_LAYER or table.attrs.get(FACTORED) is False:
        return model  # no parts (factored = false): every feature has whole labels already
    names = [name for text in templates for name in FeatureTemplates([text]).names]
    if names[0] not in features.attrs["templates"].names:
        return model  # its templates lack the word: the others are its extras
    label_table = companion_table(table, ROWS, _SHARED_ATTRS)
    label_table.attrs[LABEL_SIZED] = True
    # the featurize layer is a child too (thinc walks it once, from the
    # model): a reference may only point into the layer's own tree
    layer = Model(NAME, forward, init=init, layers=[features, table, label_table],
                  dims={"nO": None},
                  refs={FEATURES_REF: features},
                  attrs={TEMPLATES: names})
    model.layers[1] = layer
    return model


def _columns(model: Model) -> np.ndarray:
    """The featurize layer's columns of the whole-label templates it has."""
    names = model.get_ref(FEATURES_REF).attrs["templates"].names
    wanted = set(model.attrs[TEMPLATES])
    return np.asarray([i for i, name in enumerate(names) if name in wanted], dtype=np.int64)


def forward(model: Model, features: np.ndarray, is_train: bool) -> Tuple[object, Callable]:
    _, table, label_table = model.layers
    scores, back_table = table(features, is_train)
    columns = _columns(model)
    if not len(columns):
        return scores, back_table
    label_scores, back_labels = label_table(np.ascontiguousarray(features[:, columns]), is_train)
    if isinstance(scores, ComposedEmissions):  # deferred: the structure composes (prediction)
        scores = scores.with_label_scores(label_scores)
    else:
        scores = scores + label_scores

    def backprop(d_scores: np.ndarray) -> np.ndarray:
        back_table(d_scores)
        back_labels(d_scores)
        return features

    return scores, backprop


def init(model: Model, X=None, Y=None) -> None:
    _, table, label_table = model.layers  # (the featurize layer is its model's to initialize)
    if model.has_dim("nO") and model.get_dim("nO"):
        for layer in (table, label_table):
            if layer.has_dim("nO") is None:
                layer.set_dim("nO", model.get_dim("nO"))
        # the factored table is sized as if it held the labels' columns too
        # (hashed_linear.table_rows): the whole-label table takes their share
        table.attrs[ROW_COLUMNS] = model.get_dim("nO")
    for layer in (table, label_table):
        layer.initialize(X=X)


def fit_saved_layout(model: Model, saved_names: List[str]) -> Model:
    """``model`` as a pipeline saved before whole-label weights were laid out:
    where its message (the layers' ``saved_names`` in walk order) has no
    whole-label layer and ``model`` has, the layer is replaced by its factored
    table, so the saved weights load and score as they did. Else ``model``."""
    if NAME in saved_names:
        return model
    for node in model.walk():
        for i, layer in enumerate(node.layers):
            if layer.name == NAME:
                node.layers[i] = layer.layers[1]
    return model
