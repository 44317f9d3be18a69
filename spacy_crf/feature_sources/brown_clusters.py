"""Brown clusters as a feature source: ``CLUSTER`` (the word's whole bit path,
as spaCy stores it in ``lexeme_cluster``; 0 for a word without one) and
``CLUSTERk``, its first ``k`` bits (``CLUSTER4``, ... up to ``CLUSTER63``).

The table comes, in this order, from the ``clusters = PATH`` setting of
``[initialize.components.NAME]``, the vocab's ``lexeme_cluster`` lookups or
spacy-lookups-data (``features/brown_clusters.py``). Templates of the model's
own that read clusters need a table (E126); the optional
``cluster_templates`` are left out without one (W007).
"""

import re
from typing import Any, Dict, Optional, Sequence

import numpy as np

from ..errors import Errors, Warnings, warn
from ..features.brown_clusters import find_cluster_table, prefix_values
from .base import BuildContext
from .registry import register_feature_source
from .word_tables import WordTableSource

CLUSTER = "CLUSTER"
MAX_CLUSTER_BITS = 63
_CLUSTER_PREFIX = re.compile(r"^CLUSTER(\d+)$")


def cluster_bits(attr: str) -> Optional[int]:
    """How many bits of the Brown path ``attr`` reads: 0 for ``CLUSTER`` (all of
    them), k for ``CLUSTERk``; None for any other attribute."""
    if attr == CLUSTER:
        return 0
    m = _CLUSTER_PREFIX.match(attr)
    return int(m.group(1)) if m else None


@register_feature_source
class BrownClusters(WordTableSource):
    """Word -> stored Brown path (one column)."""

    name = "clusters"
    attrs_hint = "CLUSTER, CLUSTERk"
    saved_keys = ("clusters",)
    absent = {"clusters": None}

    def __init__(self, table) -> None:
        if table.n_columns != 1:
            raise ValueError("a Brown cluster table has one column: the stored path")
        super().__init__(table)

    @classmethod
    def provides(cls, attr: str) -> bool:
        return cluster_bits(attr) is not None

    @classmethod
    def check(cls, attr: str, template: str) -> None:
        bits = cluster_bits(attr)
        if attr != CLUSTER and not 1 <= bits <= MAX_CLUSTER_BITS:
            raise ValueError(Errors.E002.format(
                template=template, why=f"'{attr}' reads {bits} bits of the Brown path: use "
                                       f"CLUSTER1 to CLUSTER{MAX_CLUSTER_BITS}, or CLUSTER for all"))

    @classmethod
    def build(cls, context: BuildContext, attrs: Sequence[str], *,
              clusters: Optional[str] = None) -> Optional["BrownClusters"]:
        """The table of a file of one's own (``clusters``), else the vocab's or
        spacy-lookups-data's (E126 where the model's own templates need one
        and there is none, W007 where only ``cluster_templates`` would)."""
        if not attrs:  # (a file given to a model that reads no clusters is not read)
            return None
        table = find_cluster_table(context.vocab, context.lang, clusters)[0]
        if table is not None:
            return cls(table)
        needed = [attr for attr in context.required if cls.provides(attr)]
        if needed:
            raise ValueError(Errors.E126.format(attrs=", ".join(needed)))
        warn(Warnings.W007.format(name=context.name, lang=context.lang))
        return None

    def value_of(self, values: np.ndarray, attr: str) -> np.ndarray:
        return prefix_values(values[:, 0], cluster_bits(attr))

    def to_msg(self) -> Dict[str, Any]:
        return {"clusters": self.table.to_dict()}

    @classmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["BrownClusters"]:
        table = cls.table_of(msg, "clusters")
        return None if table is None else cls(table)
