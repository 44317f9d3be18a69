"""spacy-crf: CRF sequence labelling components for spaCy, with numba kernels.

Importing the package registers the ``crf_tagger`` factory, the
``spacy-crf.*`` architectures, scorer and corpus helpers; the entry points in
``pyproject.toml`` make spaCy do that without an explicit import.
"""

from . import _kernels  # noqa: F401  (first: where numba caches the kernels, shared_cache.py)
from . import augmenters, scoring  # noqa: F401  (registrations)
from .training import add_labels, train_logger  # noqa: F401  (registers callbacks, the logger)
from .models import CRFScores, FeatureCRF, NeuralCRF
from .pipeline import CRFTagger, make_crf_tagger
from .pipeline.value_readers import register_extensions
from .targets import set_doc_labels

__version__ = "0.1.0"

__all__ = ["CRFTagger", "make_crf_tagger", "FeatureCRF", "NeuralCRF", "CRFScores", "set_doc_labels",
           "register_extensions"]
