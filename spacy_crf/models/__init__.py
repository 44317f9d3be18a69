from .architectures import HMM, FeatureCRF, NeuralCRF
from . import legacy  # noqa: F401  (registers the earlier versions, for saved pipelines)
from .potentials import CRFScores

__all__ = ["FeatureCRF", "NeuralCRF", "HMM", "CRFScores"]
