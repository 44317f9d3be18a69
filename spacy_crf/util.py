"""Small helpers shared by the pipeline modules."""

import numpy as np
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc


def same_tokens(a: Doc, b: Doc) -> bool:
    """Whether two docs have the same text split into the same tokens (vectorised)."""
    if len(a) != len(b) or a.text != b.text:
        return False
    if not len(a):
        return True
    return bool(np.array_equal(a.to_array([IDX, LENGTH]), b.to_array([IDX, LENGTH])))
