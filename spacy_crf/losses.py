"""Training objectives of the CRF, keyed by the component's ``loss`` setting.

Every objective has the contract of :func:`spacy_crf.inference.nll_and_gradient`:
``(scores, layout, gold) -> (per_sequence_loss, gradient)``, with ``gold``
(N,) int64 and ``-1`` for unannotated tokens, the loss (S,) float64 and the
gradient of the summed loss as :class:`~spacy_crf.models.CRFScores` in the
dtype of ``scores`` (``None`` for the parameters the structure does not use).

* ``nll``: the negative log-likelihood (unannotated tokens marginalised).
* ``perceptron``: the structured perceptron, ``s(y_hat) - s(y_gold)`` with
  ``y_hat`` the Viterbi labelling; with partial gold, ``y_gold`` is the best
  labelling that agrees with the known tags (a latent perceptron).
* ``hinge``: the structured SVM with margin rescaling and Hamming cost,
  ``max(0, max_y [s(y) + cost(y, gold)] - s(y_gold))``.

The labelling objectives' gradient is a difference of feature counts; the
scores are linear in the counts, so the counts are the gradient of a
labelling's score. Averaging (the *averaged* perceptron) is the model's
``average_weights`` (on in ``FeatureCRF`` by default) or the optimizer's
``use_averages``.

A new objective registers itself with :func:`register_loss`. For the
scores of a pool of experts (``models/pooled_experts.py``) every objective is
each expert's own loss, summed (:func:`each_expert`, which the component
calls).
"""

from typing import Callable, Dict, Optional, Tuple

import numpy as np

from . import inference
from .errors import Errors
from .models.potentials import CRFScores
from .structures import BatchLayout

Objective = Callable[[CRFScores, BatchLayout, np.ndarray], Tuple[np.ndarray, CRFScores]]

OBJECTIVES: Dict[str, Objective] = {}


def register_loss(name: str) -> Callable[[Objective], Objective]:
    """Decorator: make ``func`` the objective of ``loss = name``."""

    def register(func: Objective) -> Objective:
        OBJECTIVES[name] = func
        return func

    return register


def get_loss(name: str) -> Objective:
    """The objective registered as ``name``; raises E040 for an unknown name."""
    if not isinstance(name, str) or name not in OBJECTIVES:
        raise ValueError(Errors.E040.format(loss=name, allowed=", ".join(map(repr, OBJECTIVES))))
    return OBJECTIVES[name]


def each_expert(objective: Objective, scores: CRFScores, layout: BatchLayout,
                gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
    """``objective`` of ``scores``; for a pool of experts, the sum of the
    objective of each expert's own scores, its gradient in ``experts`` (the
    pooled scores get none: no expert is trained through the other)."""
    if scores.experts is None:
        return objective(scores, layout, gold)
    results = [objective(expert, layout, gold) for expert in scores.experts]
    loss = np.sum([per_sequence for per_sequence, _ in results], axis=0)
    gradient = CRFScores(np.zeros_like(scores.emissions),
                         experts=tuple(grad for _, grad in results))
    return loss, gradient


register_loss("nll")(inference.nll_and_gradient)


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
        (S,) float64 per sequence, >= 0 (``inf`` if the gold is impossible).
    gradient : CRFScores
        Gradient of the summed loss.
    """
    gold = np.ascontiguousarray(gold, dtype=np.int64)
    predicted, best = inference.viterbi(scores, layout)
    return _margin_objective(scores, layout, gold, predicted, best, update_all=True)


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
    return _margin_objective(scores, layout, gold, predicted, best, update_all=False)


def _margin_objective(scores: CRFScores, layout: BatchLayout, gold: np.ndarray,
                      predicted: np.ndarray, best: np.ndarray,
                      update_all: bool) -> Tuple[np.ndarray, CRFScores]:
    """``best - s(y_gold)`` per sequence (at least 0) and ``counts(predicted) - counts(y_gold)``.

    ``y_gold`` is the best labelling that agrees with the known gold labels
    (the gold labelling itself where every label is known). Unless
    ``update_all``, sequences with zero loss get no gradient.
    """
    gold_side, gold_score = inference.viterbi(scores, layout, gold)
    with np.errstate(invalid="ignore"):  # -inf - -inf where nothing is allowed
        loss = np.maximum(best - gold_score, 0.0)
    loss[gold_score == -np.inf] = np.inf
    weight = np.ones_like(loss) if update_all else (loss > 0).astype(np.float64)
    gradient = _zero_gradient(scores, layout)
    labelling_counts(layout, predicted, weight, gradient)
    labelling_counts(layout, gold_side, -weight, gradient)
    dtype = scores.emissions.dtype
    return loss, gradient.map(lambda g: g.astype(dtype, copy=False))


def _zero_gradient(scores: CRFScores, layout: BatchLayout) -> CRFScores:
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
