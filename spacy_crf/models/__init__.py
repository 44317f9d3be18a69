from .architectures import HMM, FeatureCRF, NeuralCRF
from .potentials import CRFScores

__all__ = ["FeatureCRF", "NeuralCRF", "HMM", "CRFScores"]
