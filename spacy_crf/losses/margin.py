"""What the margin losses (``perceptron``, ``hinge``) share: a labelling's
feature counts and the loss of the best labelling against the gold one.

The labelling losses' gradient is a difference of feature counts; the
scores are linear in the counts, so the counts are the gradient of a
labelling's score. Averaging (the *averaged* perceptron) is the model's
``average_weights`` (on in ``FeatureCRF`` by default) or the optimizer's
``use_averages``.
"""

from typing import Optional, Tuple

import numpy as np

from .. import inference
from ..models.potentials import CRFScores
from ..structures import BatchLayout


def margin_loss(scores: CRFScores, layout: BatchLayout, gold: np.ndarray,
                      predicted: np.ndarray, best: np.ndarray,
                      update_all: bool) -> Tuple[np.ndarray, CRFScores]:
    """``best - s(y_gold)`` per sequence (at least 0) and ``counts(predicted) - counts(y_gold)``.

    ``y_gold`` is the best labelling that agrees with the known gold labels
    (the gold labelling itself where every label is known). Unless
    ``update_all``, sequences with zero loss get no gradient.

    Where the structure keeps some labellings only (``prunes_labellings``: the
    second-order chain's kept label pairs), a sequence whose gold labelling
    leaves them is unannotated, as in the nll. Unannotated, its ``y_gold``
    would be its best labelling, and so would ``predicted`` (the hinge costs
    annotated tokens only): it adds no loss and no gradient, and nor does a
    sequence the kept labellings leave no labelling at all (the nll's log Z
    of ``-inf``). Elsewhere an impossible gold labelling is ``inf``, for E009.
    """
    gold_side, gold_score = inference.viterbi(scores, layout, gold)
    with np.errstate(invalid="ignore"):  # -inf - -inf where nothing is allowed
        loss = np.maximum(best - gold_score, 0.0)
    impossible = gold_score == -np.inf
    loss[impossible] = np.inf
    weight = np.ones_like(loss) if update_all else (loss > 0).astype(np.float64)
    if layout.structure.prunes_labellings and impossible.any():
        loss[impossible] = 0.0
        weight[impossible] = 0.0
        # (no -inf path's labels in the counts, weighted 0 or not)
        gold_side = np.where(np.repeat(impossible, layout.lengths), predicted, gold_side)
    gradient = zero_gradient(scores, layout)
    labelling_counts(layout, predicted, weight, gradient)
    labelling_counts(layout, gold_side, -weight, gradient)
    dtype = scores.emissions.dtype
    return loss, gradient.map(lambda g: g.astype(dtype, copy=False))


def zero_gradient(scores: CRFScores, layout: BatchLayout) -> CRFScores:
    """float64 zeros for every parameter the structure uses, ``None`` for the rest."""
    return layout.structure.zero_gradient(scores)


def labelling_counts(layout: BatchLayout, labels: np.ndarray,
                     weights: Optional[np.ndarray], out: CRFScores) -> CRFScores:
    """Add ``weights[s]`` times the feature counts of each sequence's labelling into ``out``.

    The counts of a labelling are the gradient of its score: one per token at
    its label in ``emissions``, and the structure's own (on chains one per
    adjacent pair in ``transitions`` and one at the first / last label in
    ``start`` / ``end``; on trees one per edge in ``pair[relation, child
    label, head label]`` and one per root in ``root``). Vectorised over the
    batch (no loop per token).

    Parameters
    ----------
    layout : BatchLayout
        The batch layout (chains, forests, ...).
    labels : numpy.ndarray
        (N,) int64 label of every token.
    weights : numpy.ndarray, optional
        (S,) float64 weight of each sequence (1 when not given).
    out : CRFScores
        float64 arrays added into: ``emissions`` and the parameters of the structure.

    Returns
    -------
    CRFScores
        ``out``.
    """
    lengths = layout.lengths
    labels = np.asarray(labels, dtype=np.int64)
    N = out.emissions.shape[0]
    if weights is None:
        weights = np.ones(lengths.shape[0])
    # d e(t, y_t) = w
    out.emissions[np.arange(N), labels] += np.repeat(weights, lengths)
    layout.structure.labelling_counts(layout, labels, weights, out)
    return out
