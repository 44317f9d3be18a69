"""``loss = "perceptron"``: the structured perceptron, ``s(y_hat) - s(y_gold)``
with ``y_hat`` the Viterbi labelling; with partial gold, ``y_gold`` is the
best labelling that agrees with the known tags (a latent perceptron)."""

from typing import Tuple

import numpy as np

from .. import inference
from ..models.potentials import CRFScores
from ..structures import BatchLayout
from .margin import margin_loss
from .registry import register_loss


@register_loss("perceptron")
def perceptron(scores: CRFScores, layout: BatchLayout,
               gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
    """Structured perceptron: ``s(y_hat) - s(y_gold)`` and ``counts(y_hat) - counts(y_gold)``.

    The loss is 0 when the prediction is right; the update is mistake-driven:
    where ``y_hat`` differs from ``y_gold`` only by a tie (all scores zero, as
    at initialization) the loss is 0 but the gradient is not.

    Parameters
    ----------
    scores : CRFScores
        The batch's scores (forbidden moves ``-inf``).
    layout : BatchLayout
        Chains or forests of the batch.
    gold : numpy.ndarray
        (N,) int64 gold label ids, ``-1`` where unknown.

    Returns
    -------
    loss : numpy.ndarray
        (S,) float64 per sequence, >= 0 (``inf`` if the gold is impossible;
        0 where the structure keeps some labellings only and the gold leaves
        them: unannotated, as in the nll, see :func:`.margin.margin_loss`).
    gradient : CRFScores
        Gradient of the summed loss.
    """
    gold = np.ascontiguousarray(gold, dtype=np.int64)
    predicted, best = inference.viterbi(scores, layout)
    return margin_loss(scores, layout, gold, predicted, best, update_all=True)
