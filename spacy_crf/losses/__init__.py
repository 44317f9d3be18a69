"""Training losses of the CRF, chosen by the component's ``loss`` setting.

* ``nll``: the negative log-likelihood (unannotated tokens marginalised);
* ``perceptron``: the structured perceptron (a latent one with partial gold);
* ``hinge``: the structured SVM, margin rescaling and Hamming cost.

Each lives in a module of its own here and registers itself
(:mod:`.registry`: ``spacy.util.registry.crf_losses``, whose entry points are
the group ``spacy_crf_losses``); :func:`get_loss` finds the one a config
names. A new loss is one more module: its loss function decorated with
:func:`register_loss`; a module here is imported with the package, one
elsewhere through its entry point. For the scores of a pool of experts
(``models/pooled_experts.py``) every loss is the sum of each expert's own,
summed (:func:`each_expert`, which the component calls).
"""

from .registry import Loss, LossFunction, each_expert, get_loss, register_loss, registered_losses

# the package's own losses, registered in the order E040 lists them
from .nll import nll  # noqa: I100
from .perceptron import perceptron
from .hinge import hinge
from .margin import labelling_counts, margin_loss, zero_gradient
from ..registries import import_modules

import_modules(__name__, __path__)

__all__ = ["Loss", "LossFunction", "each_expert", "get_loss", "register_loss", "registered_losses",
           "nll", "perceptron", "hinge", "labelling_counts", "margin_loss", "zero_gradient"]
