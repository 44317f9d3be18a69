"""Layer: Docs -> hashed feature ids (no parameters)."""

from typing import Callable, List, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from ..features.extract import extract_features
from ..features.templates import FeatureTemplates

InT = List[Doc]
OutT = np.ndarray  # (N, n_templates) uint64


def featurize(templates: Sequence[str]) -> Model[InT, OutT]:
    """Hash the feature templates at every token of a batch of Docs.

    Parameters
    ----------
    templates : sequence of str
        Template strings (see ``spacy_crf.features.templates``); validated here,
        so a typo fails when the pipeline is built, not during training.
    """
    parsed = FeatureTemplates(templates)
    return Model("crf_featurize", forward, attrs={"templates": parsed})


def forward(model: Model[InT, OutT], docs: InT, is_train: bool) -> Tuple[OutT, Callable]:
    features = extract_features(docs, model.attrs["templates"])

    def backprop(d_features: OutT) -> InT:
        return []

    return features, backprop
