"""The registry of losses: the component's ``loss`` string resolved to a Loss.

``spacy.util.registry.crf_losses``, whose entry points are the group
``spacy_crf_losses`` (:mod:`spacy_crf.registries`). A module adds a loss by
decorating its loss function with :func:`register_loss`; a package of its own
points its entry point at the :class:`Loss` that decorator returns::

    [project.entry-points.spacy_crf_losses]
    ramp = "my_package.ramp_loss:ramp"
"""

from dataclasses import dataclass
from typing import Callable, Dict, Tuple

import numpy as np

from ..errors import Errors
from ..models.potentials import CRFScores
from ..registries import ExtensionRegistry
from ..structures import BatchLayout

LossFunction = Callable[[CRFScores, BatchLayout, np.ndarray], Tuple[np.ndarray, CRFScores]]

#: ``spacy.util.registry.crf_losses`` (entry points: ``spacy_crf_losses``)
LOSSES = ExtensionRegistry("crf_losses")


@dataclass(frozen=True)
class Loss:
    """A training loss of the CRF, called as its ``function``.

    Attributes
    ----------
    name : str
        The ``loss`` setting that chooses it.
    function : callable
        ``(scores, layout, gold) -> (per_sequence_loss, gradient)``, the
        contract of :func:`spacy_crf.inference.nll_and_gradient`: ``gold``
        (N,) int64 with ``-1`` for unannotated tokens, the loss (S,) float64,
        the gradient of the summed loss as ``CRFScores`` in the dtype of
        ``scores`` (``None`` for the parameters the structure does not use).
    supports_batch_fit : bool
        Whether ``python -m spacy_crf.fit`` can minimise it. The batch
        trainer's L-BFGS needs a smooth objective whose minimum is a model
        (its fused kernels compute the likelihood): the perceptron's is
        reached at zero weights and the hinge has no gradient at its kinks,
        so they train with ``spacy train`` only.
    """

    name: str
    function: LossFunction
    supports_batch_fit: bool = False

    def __call__(self, scores: CRFScores, layout: BatchLayout,
                 gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
        return self.function(scores, layout, gold)


def register_loss(name: str, *, supports_batch_fit: bool = False) -> Callable[[LossFunction], Loss]:
    """Decorator: make the loss function it decorates the :class:`Loss` of ``loss = name``.

    Returns
    -------
    callable
        The decorator, which returns the registered :class:`Loss` (callable
        as the function itself).
    """

    def register(function: LossFunction) -> Loss:
        return LOSSES.register(name, Loss(name, function, supports_batch_fit))

    return register


def registered_losses() -> Dict[str, Loss]:
    """Every registered loss by name, the package's own first."""
    return LOSSES.all()


def get_loss(name: str) -> Loss:
    """The loss registered as ``name``.

    Raises
    ------
    ValueError
        E040, listing the registered losses, for any other name.
    """
    found = LOSSES.get(name)
    if not isinstance(found, Loss):
        raise ValueError(Errors.E040.format(loss=name,
                                            allowed=", ".join(map(repr, registered_losses()))))
    return found


def each_expert(loss: LossFunction, scores: CRFScores, layout: BatchLayout,
                gold: np.ndarray) -> Tuple[np.ndarray, CRFScores]:
    """``loss`` of ``scores``; for a pool of experts, the sum of the
    loss of each expert's own scores, its gradient in ``experts`` (the
    pooled scores get none: no expert is trained through the other)."""
    if scores.experts is None:
        return loss(scores, layout, gold)
    results = [loss(expert, layout, gold) for expert in scores.experts]
    loss = np.sum([per_sequence for per_sequence, _ in results], axis=0)
    gradient = CRFScores(np.zeros_like(scores.emissions),
                         experts=tuple(grad for _, grad in results))
    return loss, gradient
