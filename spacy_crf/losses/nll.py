"""``loss = "nll"``: the negative log-likelihood, unannotated tokens
marginalised (each structure's ``nll_and_gradient``); the one loss the batch
trainer minimises too."""

from .. import inference
from .registry import register_loss

nll = register_loss("nll", supports_batch_fit=True)(inference.nll_and_gradient)
