"""What a component knows about words beyond their spelling: Brown clusters,
clusters of the vectors, gazetteers.

A :class:`Lexicon` holds the tables the word-representation attributes of the
templates read (``CLUSTER``, ``CLUSTERk``, ``VECTOR_CLUSTERk``, ``GAZETTEER``;
see ``templates.py``). The component builds it at ``initialize`` from the
pipeline (:func:`build_lexicon`), hands it to its feature layers and saves it
beside its weights, so a loaded model reads the same values without the
sources (spacy-lookups-data, the vectors, the gazetteer file).
"""

from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import srsly
from spacy.tokens import Doc

from ..errors import Errors
from .brown_clusters import prefix_values
from .gazetteer import Gazetteer
from .templates import GAZETTEER, cluster_bits, vector_clusters
from .word_table import WordTable

#: the format of :meth:`Lexicon.to_bytes`
FORMAT = 1


class Lexicon:
    """The word tables of one component.

    Parameters
    ----------
    clusters : WordTable, optional
        Word -> stored Brown path (one column).
    vector_clusters : WordTable, optional
        Word -> cluster id (from 1) for each k of ``vector_ks``, one column each.
    vector_ks : sequence of int
        The cluster counts of ``vector_clusters``' columns.
    gazetteer : Gazetteer, optional
        The phrase lists.
    """

    def __init__(self, clusters: Optional[WordTable] = None,
                 vector_clusters: Optional[WordTable] = None, vector_ks: Sequence[int] = (),
                 gazetteer: Optional[Gazetteer] = None) -> None:
        if clusters is not None and clusters.n_columns != 1:
            raise ValueError("a Brown cluster table has one column: the stored path")
        vector_ks = [int(k) for k in vector_ks]
        if (vector_clusters is None) != (not vector_ks) or (
                vector_clusters is not None and vector_clusters.n_columns != len(vector_ks)):
            raise ValueError("a vector-cluster table has one column per cluster count")
        self.clusters = clusters
        self.vector_clusters = vector_clusters
        self.vector_ks = vector_ks
        self.gazetteer = gazetteer

    def missing(self, attrs: Sequence[str]) -> List[str]:
        """The attributes of ``attrs`` this lexicon has no table for."""
        out = []
        for attr in attrs:
            if cluster_bits(attr) is not None and self.clusters is None:
                out.append(attr)
            elif vector_clusters(attr) is not None and vector_clusters(attr) not in self.vector_ks:
                out.append(attr)
            elif attr == GAZETTEER and self.gazetteer is None:
                out.append(attr)
        return out

    def key_attrs(self, attrs: Sequence[str]) -> List[str]:
        """The token attributes (``ORTH``, ``LOWER``) whose hashes ``attrs`` look up."""
        needed = []
        for attr in attrs:
            table = self._table_of(attr)
            if table is not None and table.key_attr not in needed:
                needed.append(table.key_attr)
        return needed

    def _table_of(self, attr: str) -> Optional[WordTable]:
        if cluster_bits(attr) is not None:
            return self.clusters
        if vector_clusters(attr) is not None:
            return self.vector_clusters
        return None

    @property
    def holds_out(self) -> bool:
        """Whether the columns differ while training (a gazetteer drawn from the
        training data holds each document's own phrases out; ``gazetteer.py``)."""
        return self.gazetteer is not None and self.gazetteer.from_training

    def columns(self, docs: Sequence[Doc], attrs: Sequence[str],
                keys: Dict[str, np.ndarray], held_out: bool = False) -> np.ndarray:
        """``(N, len(attrs))`` uint64 values of ``attrs`` at every token of the batch.

        Parameters
        ----------
        docs : sequence of Doc
            The batch (the gazetteer matches in them).
        attrs : sequence of str
            Word-representation attributes, each with its table here.
        keys : dict
            ``{"ORTH": (N,) uint64, "LOWER": ...}``: the hashes the tables look up.
        held_out : bool
            Training: the gazetteer holds out what each document itself gave it.
        """
        # the key arrays have one row a token; summing the docs' lengths in
        # Python costs as much as the lookup itself
        n_tokens = (next(iter(keys.values())).shape[0] if keys
                    else sum(len(doc) for doc in docs))
        out = np.zeros((n_tokens, len(attrs)), dtype=np.uint64)
        looked_up: Dict[int, np.ndarray] = {}
        for j, attr in enumerate(attrs):
            if attr == GAZETTEER:
                out[:, j] = self.gazetteer.column(docs, held_out)
                continue
            table = self._table_of(attr)
            if id(table) not in looked_up:
                looked_up[id(table)] = table.lookup(keys[table.key_attr])
            values = looked_up[id(table)]
            bits = cluster_bits(attr)
            if bits is not None:
                out[:, j] = prefix_values(values[:, 0], bits)
            else:
                out[:, j] = values[:, self.vector_ks.index(vector_clusters(attr))]
        return out

    @property
    def empty(self) -> bool:
        return self.clusters is None and self.vector_clusters is None and self.gazetteer is None

    def to_bytes(self) -> bytes:
        """msgpack bytes of every table (numpy arrays as they are)."""
        return srsly.msgpack_dumps({
            "format": FORMAT,
            "clusters": None if self.clusters is None else self.clusters.to_dict(),
            "vector_clusters": (None if self.vector_clusters is None
                                else self.vector_clusters.to_dict()),
            "vector_ks": self.vector_ks,
            "gazetteer": None if self.gazetteer is None else self.gazetteer.to_dict(),
        })

    @classmethod
    def from_bytes(cls, data: bytes) -> "Lexicon":
        """The lexicon of :meth:`to_bytes`.

        Raises
        ------
        ValueError
            For bytes that are not a lexicon of a format this version reads.
        """
        try:
            msg = srsly.msgpack_loads(data)
        except Exception as err:  # msgpack raises several types for corrupt data
            raise ValueError(f"the word tables are not msgpack: {err!r}") from err
        return cls.from_msg(msg)

    @classmethod
    def from_msg(cls, msg: Any) -> "Lexicon":
        """The lexicon of a loaded :meth:`to_bytes` message (see :meth:`from_bytes`)."""
        if not isinstance(msg, dict) or msg.get("format") != FORMAT:
            raise ValueError(f"the word tables are of format "
                             f"{msg.get('format') if isinstance(msg, dict) else None!r}, "
                             f"this version reads {FORMAT}")
        clusters, vectors, gazetteer = msg.get("clusters"), msg.get("vector_clusters"), \
            msg.get("gazetteer")
        return cls(clusters=None if clusters is None else WordTable.from_dict(clusters),
                   vector_clusters=None if vectors is None else WordTable.from_dict(vectors),
                   vector_ks=msg.get("vector_ks") or (),
                   gazetteer=None if gazetteer is None else Gazetteer.from_dict(gazetteer))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Lexicon) and self.clusters == other.clusters
                and self.vector_clusters == other.vector_clusters
                and self.vector_ks == other.vector_ks and self.gazetteer == other.gazetteer)


def build_lexicon(attrs: Sequence[str], *, cluster_table: Callable[[], Optional[WordTable]],
                  vectors: Any = None, gazetteer: Optional[Gazetteer] = None,
                  seed: int = 0) -> Lexicon:
    """The tables that ``attrs`` read, from the pipeline's sources.

    Parameters
    ----------
    attrs : sequence of str
        Word-representation attributes the component's templates read.
    cluster_table : callable
        Returns the Brown cluster table or None (called only if ``attrs`` read clusters).
    vectors : Vectors, optional
        The pipeline's vectors, for ``VECTOR_CLUSTERk``.
    gazetteer : Gazetteer, optional
        The phrase lists, for ``GAZETTEER``.
    seed : int
        Seed of the vectors' k-means.

    Raises
    ------
    ValueError
        E124 / E126 where an attribute's source is missing.
    """
    from .vector_clusters import vector_cluster_table

    clusters = None
    if any(cluster_bits(a) is not None for a in attrs):
        clusters = cluster_table()
    ks = sorted({vector_clusters(a) for a in attrs if vector_clusters(a) is not None})
    vector_table = None
    if ks:
        if vectors is None:
            raise ValueError(Errors.E124.format(why="the pipeline has no vectors"))
        vector_table = vector_cluster_table(vectors, ks, seed=seed)
    lexicon = Lexicon(clusters, vector_table, ks if vector_table is not None else (),
                      gazetteer if GAZETTEER in attrs else None)
    return lexicon
