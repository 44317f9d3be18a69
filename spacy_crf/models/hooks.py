"""What a model tells its component through its attrs (any model may set them).

* ``STRUCTURES``: the structures the model can score; a component with another
  structure is refused (E103). A model without it scores any.
* ``FIT_COUNTS``: a function ``(model, docs, gold, lengths)`` that sets the
  model's parameters from counts over gold labels (a generative model, such as
  the HMM, ``hmm.py``). The component calls it at ``initialize`` instead of
  learning such a model's new labels from updates.
"""

from typing import Optional, Sequence, Tuple

import numpy as np
from thinc.api import Model

#: attrs key of the counting function the component calls at initialize
FIT_COUNTS = "crf_fit_counts"
#: attrs key of the structures a model can score (others are refused, E103)
STRUCTURES = "crf_structures"


def scorable_structures(model: Optional[Model]) -> Optional[Tuple[str, ...]]:
    """The structures ``model`` can score, or None for any."""
    return None if model is None else model.attrs.get(STRUCTURES)


def learns_from_counts(model: Model) -> bool:
    """Whether ``model`` sets its parameters from counts (``FIT_COUNTS``)."""
    return model.attrs.get(FIT_COUNTS) is not None


def fit_counts(model: Model, docs: Sequence, gold: np.ndarray, lengths: np.ndarray) -> None:
    """Set ``model``'s parameters from the counts of ``gold`` label ids over
    ``docs`` (sequences of ``lengths`` tokens); only for a model that
    :func:`learns_from_counts`."""
    model.attrs[FIT_COUNTS](model, docs, gold, lengths)
