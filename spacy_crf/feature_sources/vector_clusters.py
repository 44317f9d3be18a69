"""Clusters of the pipeline's static vectors as a feature source:
``VECTOR_CLUSTERk``, the word's k-means cluster among ``k`` clusters
(``VECTOR_CLUSTER256``), computed once at ``initialize`` for every ``k`` the
templates read (``features/vector_clusters.py``) and saved as a word table
with one column per ``k``."""

import re
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..errors import Errors
from ..features.vector_clusters import vector_cluster_table
from ..features.word_table import WordTable
from .base import BuildContext
from .registry import register_feature_source
from .word_tables import WordTableSource

MAX_VECTOR_CLUSTERS = 65536
_VECTOR_CLUSTER = re.compile(r"^VECTOR_CLUSTER(\d+)$")


def vector_clusters(attr: str) -> Optional[int]:
    """k for ``VECTOR_CLUSTERk``, else None."""
    m = _VECTOR_CLUSTER.match(attr)
    return int(m.group(1)) if m else None


@register_feature_source
class VectorClusters(WordTableSource):
    """Word -> cluster id (from 1) for each k of ``ks``, one column each.

    Parameters
    ----------
    table : WordTable
        One column per cluster count.
    ks : sequence of int
        The cluster counts of the columns.
    """

    name = "vector_clusters"
    attrs_hint = "VECTOR_CLUSTERk"
    saved_keys = ("vector_clusters", "vector_ks")
    absent = {"vector_clusters": None, "vector_ks": []}

    def __init__(self, table: WordTable, ks: Sequence[int]) -> None:
        ks = [int(k) for k in ks]
        if not ks or table.n_columns != len(ks):
            raise ValueError("a vector-cluster table has one column per cluster count")
        super().__init__(table)
        self.ks: List[int] = ks

    @classmethod
    def provides(cls, attr: str) -> bool:
        return vector_clusters(attr) is not None

    @classmethod
    def check(cls, attr: str, template: str) -> None:
        k = vector_clusters(attr)
        if not 2 <= k <= MAX_VECTOR_CLUSTERS:
            raise ValueError(Errors.E002.format(
                template=template, why=f"'{attr}' asks for {k} clusters of the vectors: use "
                                       f"VECTOR_CLUSTER2 to VECTOR_CLUSTER{MAX_VECTOR_CLUSTERS}"))

    @classmethod
    def build(cls, context: BuildContext, attrs: Sequence[str]) -> Optional["VectorClusters"]:
        """k-means of the vocab's vectors for every k of ``attrs`` (E124 without vectors)."""
        ks = sorted({vector_clusters(attr) for attr in attrs})
        if not ks:
            return None
        # (E124 for no vectors, or floret ones, whose word list is empty too)
        return cls(vector_cluster_table(context.vocab.vectors, ks, seed=context.seed), ks)

    def has(self, attr: str) -> bool:
        return vector_clusters(attr) in self.ks

    def value_of(self, values: np.ndarray, attr: str) -> np.ndarray:
        return values[:, self.ks.index(vector_clusters(attr))]

    def to_msg(self) -> Dict[str, Any]:
        return {"vector_clusters": self.table.to_dict(), "vector_ks": self.ks}

    @classmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["VectorClusters"]:
        table = cls.table_of(msg, "vector_clusters")
        return None if table is None else cls(table, msg.get("vector_ks") or ())
