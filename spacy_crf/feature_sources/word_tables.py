"""What the sources that are word tables share: a table of word hashes, one
column per attribute value, looked up once per batch (``features/word_table.py``)."""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..features.word_table import WordTable
from .base import FeatureSource


class WordTableSource(FeatureSource):
    """A source whose values are a word table's columns (clusters of some kind).

    Parameters
    ----------
    table : WordTable
        Word -> the source's stored values.
    """

    def __init__(self, table: WordTable) -> None:
        self.table = table

    def key_attrs(self, attrs: Sequence[str]) -> List[str]:
        return [self.table.key_attr]

    def columns(self, docs, attrs, keys, held_out) -> np.ndarray:
        # one lookup for every attribute of the source
        values = self.table.lookup(keys[self.table.key_attr])
        out = np.zeros((values.shape[0], len(attrs)), dtype=np.uint64)
        for j, attr in enumerate(attrs):
            out[:, j] = self.value_of(values, attr)
        return out

    def value_of(self, values: np.ndarray, attr: str) -> np.ndarray:
        """``attr``'s column from the table's looked-up ``values``."""
        raise NotImplementedError

    @staticmethod
    def table_of(msg: Dict[str, Any], key: str) -> Optional[WordTable]:
        """The word table saved under ``key`` (None where there is none)."""
        saved = msg.get(key)
        return None if saved is None else WordTable.from_dict(saved)
