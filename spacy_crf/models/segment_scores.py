"""Combinator: a CRF model's scores plus hashed segment features (semi-Markov CRF).

``with_segment_scores(model)`` runs ``model`` (Docs -> CRFScores) and a hashed
linear layer over the features of every candidate segment
(``_kernels/segment_features.py``: length, first and last word, the whole
segment, its shape, the words around it), and returns the scores with
``segments`` (N, D, L) filled: column ``j`` of a candidate is its score when
the segment's first tag is ``j`` (so each feature is conjoined with the
segment's type, and with whether it is one token long where the scheme tells
that by its tag). The semi-Markov structure wraps the component's model with it
(``prepare_model``); ``D``, the longest segment, is the batch layout's
(``SemiMarkovLayout.max_length``, from the component's cfg), which the
component's :class:`~spacy_crf.features.doc_arrays.DocBatch` carries to the
layer. Gradients flow into both.
"""

from typing import Callable, List, Optional, Tuple

import numpy as np
from spacy.attrs import NORM, SHAPE
from spacy.tokens import Doc
from thinc.api import Model

from .._kernels.segment_features import N_SEGMENT_FEATURES, segment_ids
from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_SENTENCE, attribute_matrix, batch_sequence_lengths
from .featurize import SEQUENCE, by_sentence
from .hashed_linear import LABEL_SIZED, hashed_linear
from .potentials import ROW, CRFScores, register_scores
from .sparse_table import LR_SCALE

NAME = "crf_with_segment_scores"
# the score of the segment of length d + 1 starting at row t when its first tag
# is j (rows past a sequence unused)
register_scores(segments=(ROW, None, "out"))
#: default rows of the segment features' hashed table
SEGMENT_BUCKETS = 2**18


def with_segment_scores(model: Model[List[Doc], CRFScores], n_buckets: int = SEGMENT_BUCKETS
                        ) -> Model[List[Doc], CRFScores]:
    """``model``'s scores with the segment scores of the batch's candidates."""
    table = hashed_linear(n_buckets)
    # a label-sized layer: the component sizes its columns to the labels
    table.attrs[LABEL_SIZED] = True
    # the same step size as the model's own hashed weights
    scales = [node.attrs[LR_SCALE] for node in model.walk() if LR_SCALE in node.attrs]
    if scales:
        table.attrs[LR_SCALE] = scales[0]
    return Model(NAME, forward, init=init, layers=[model, table], dims={"nD": None},
                 attrs={SEQUENCE: SEQUENCE_SENTENCE})


def is_wrapped(model: Model) -> bool:
    """Whether ``model`` already scores segments."""
    return model is not None and any(node.name == NAME for node in model.walk())


def longest_segment(model: Model, docs: List[Doc]) -> int:
    """``D`` for a batch: its layout's ``max_length`` (a ``DocBatch`` from the
    component), else the layer's ``nD`` (set by hand, or saved by a model of
    an earlier release); E180 without either."""
    length = getattr(getattr(docs, "layout", None), "max_length", None)
    if length is None and model.has_dim("nD"):
        length = model.get_dim("nD")
    if not length:
        raise ValueError(Errors.E180)
    return int(length)


def candidate_ids(docs: List[Doc], max_length: int, sentences: bool = True) -> np.ndarray:
    """(N * D, N_SEGMENT_FEATURES) uint64 ids of every candidate segment."""
    values = attribute_matrix(docs, [NORM, SHAPE])
    out = np.empty((values.shape[0] * max_length, N_SEGMENT_FEATURES), dtype=np.uint64)
    segment_ids(np.ascontiguousarray(values[:, 0]), np.ascontiguousarray(values[:, 1]),
                batch_sequence_lengths(docs, sentences), max_length, out)
    return out


def forward(model: Model, docs: List[Doc], is_train: bool) -> Tuple[CRFScores, Callable]:
    inner, table = model.layers
    scores, back_scores = inner(docs, is_train)
    D = longest_segment(model, docs)
    flat, back_table = table(candidate_ids(docs, D, by_sentence(model)), is_train)
    N, L = scores.emissions.shape
    scores = scores.replace(segments=flat.reshape(N, D, L))

    def backprop(d_scores: CRFScores) -> List[Doc]:
        back_scores(d_scores)
        if d_scores.segments is not None:
            back_table(np.ascontiguousarray(d_scores.segments).reshape(N * D, L))
        return []

    return scores, backprop


def init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    model.layers[0].initialize(X=X)
    model.layers[1].initialize()
