from .crf_tagger import CRFTagger
from .factory import DEFAULT_MODEL, make_crf_tagger

__all__ = ["CRFTagger", "DEFAULT_MODEL", "make_crf_tagger"]
