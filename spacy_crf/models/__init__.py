from .architectures import FeatureCRF, NeuralCRF
from .potentials import CRFScores

__all__ = ["FeatureCRF", "NeuralCRF", "CRFScores"]
