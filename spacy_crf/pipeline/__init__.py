from .crf_tagger import CRFTagger, make_crf_tagger

__all__ = ["CRFTagger", "make_crf_tagger"]
