"""``loss = "hinge"``: the structured SVM with margin rescaling and Hamming
cost, ``max(0, max_y [s(y) + cost(y, gold)] - s(y_gold))``."""

from typing import Tuple

import numpy as np

from .. import inference
from ..models.potentials import CRFScores
from ..structures import BatchLayout
from .margin import margin_loss
from .registry import register_loss


@register_loss("hinge")
def hinge(scores: CRFScores, layout: BatchLayout,
          gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
    """Structured hinge loss (margin rescaling, Hamming cost) and a subgradient.

    Cost-augmented decoding finds ``y_aug = argmax_y s(y) + cost(y)``, the cost
    counting the annotated tokens where ``y`` differs from the gold label
    (unannotated tokens cost nothing). The loss is
    ``max(0, s(y_aug) + cost(y_aug) - s(y_gold))`` and the subgradient
    ``counts(y_aug) - counts(y_gold)``, zero where the loss is 0.

    Parameters and returns as for :func:`perceptron`.
    """
    gold = np.ascontiguousarray(gold, dtype=np.int64)
    emissions = np.array(scores.emissions, dtype=np.float64)
    annotated = np.flatnonzero(gold >= 0)
    # cost[t, j] = 1 for j != gold[t] on annotated tokens (0 at gold: the gold scores stay
    # bit-identical, so a cost-augmented labelling equal to the gold one has loss exactly 0)
    cost = np.ones((annotated.shape[0], emissions.shape[1]))
    cost[np.arange(annotated.shape[0]), gold[annotated]] = 0.0
    emissions[annotated] += cost
    augmented = scores.replace(emissions=emissions)
    predicted, best = inference.viterbi(augmented, layout)
    return margin_loss(scores, layout, gold, predicted, best, update_all=False)
