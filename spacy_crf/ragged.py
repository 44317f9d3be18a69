"""Ragged batches: the rows of many sequences concatenated, with their lengths.

numpy only: the structures, the targets and the models all read sequences
this way, so these helpers sit below them all.
"""

from typing import Tuple

import numpy as np


def positions_in_sequence(lengths: np.ndarray) -> np.ndarray:
    """Each token's position within its sequence, for a ragged batch of ``lengths``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)


def sequence_ends(lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Rows of the first and of the last token of every non-empty sequence."""
    lengths = np.asarray(lengths, dtype=np.int64)
    nonempty = lengths > 0
    first = (np.cumsum(lengths) - lengths)[nonempty]
    return first, first + lengths[nonempty] - 1


def previous_in_sequence(values: np.ndarray, lengths: np.ndarray, fill: int,
                         steps: int = 1) -> np.ndarray:
    """``values`` of the token ``steps`` before each token in its own sequence, and
    ``fill`` where the sequence has none (its first ``steps`` tokens)."""
    values = np.asarray(values)
    out = np.full(values.shape[0], fill, dtype=values.dtype)
    has = np.flatnonzero(positions_in_sequence(lengths) >= steps)
    out[has] = values[has - steps]
    return out
