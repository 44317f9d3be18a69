"""A table from word hashes to integer columns, looked up for a whole batch at once.

Brown clusters and the clusters of a pipeline's vectors are both a value (or a
few) per word type. The table keeps its keys (spaCy string hashes of the words)
sorted, as they are saved; a batch's tokens are looked up in one numba pass
over an open-addressing table of entries built from them on the first lookup
(``_kernels/word_lookup.py``), with no Python step per token.
"""

from typing import Any, Dict, Iterable, Optional, Sequence

import numpy as np
from spacy.strings import get_string_id

from .._kernels.word_lookup import EMPTY_KEY, insert_missing, lookup_values

#: the value of a word the table does not hold (spaCy's ``Token.cluster`` gives 0 too)
MISSING = 0


class WordTable:
    """Word hashes -> ``n_columns`` unsigned integers.

    Parameters
    ----------
    keys : array-like of uint64
        The words' hashes (``nlp.vocab.strings[word]``), unique. Key 0, the
        empty string's, is left out: no token has it.
    values : array-like of int
        ``(len(keys), n_columns)`` (or ``(len(keys),)`` for one column), each
        value at least 0 and below 2**63.
    key_attr : str
        The token attribute whose hash is looked up: ``"ORTH"`` (the text as
        it is, as spaCy's cluster table is keyed) or ``"LOWER"``.
    """

    def __init__(self, keys: Any, values: Any, key_attr: str = "ORTH") -> None:
        keys = np.asarray(keys, dtype=np.uint64).reshape(-1)
        values = np.asarray(values)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        if values.ndim != 2 or values.shape[0] != keys.shape[0]:
            raise ValueError(f"a word table needs one row of values per key: got "
                             f"{keys.shape[0]} keys and values of shape {values.shape}")
        if values.size and (values.min() < 0 or not np.issubdtype(values.dtype, np.integer)):
            raise ValueError("a word table holds integers of at least 0")
        if key_attr not in ("ORTH", "LOWER"):
            raise ValueError(f"a word table is keyed by ORTH or LOWER, not {key_attr!r}")
        kept = keys != EMPTY_KEY
        keys, values = keys[kept], values[kept]
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        if keys.shape[0] > 1 and np.any(keys[1:] == keys[:-1]):
            raise ValueError("a word table's keys must be unique")
        self.keys = np.ascontiguousarray(keys)
        self.values = np.ascontiguousarray(values[order].astype(np.uint64))
        self.key_attr = key_attr
        self._entries: Optional[np.ndarray] = None  # built on the first lookup, not saved

    @property
    def n_columns(self) -> int:
        return self.values.shape[1]

    def __len__(self) -> int:
        return self.keys.shape[0]

    def lookup(self, words: np.ndarray) -> np.ndarray:
        """``(N, n_columns)`` uint64 values of N word hashes, :data:`MISSING` where absent."""
        words = np.ascontiguousarray(words, dtype=np.uint64).reshape(-1)
        out = np.empty((words.shape[0], self.n_columns), dtype=np.uint64)
        # one or two probes a token where a binary search over the 190k
        # English cluster words took 80-90 ns (EWT test)
        lookup_values(self.entries, words, np.uint64(MISSING), out)
        return out

    @property
    def entries(self) -> np.ndarray:
        """The open-addressing table of keys and values: a power of two at
        least twice their number, so that a lookup probes one or two entries."""
        if self._entries is None:
            n_entries = 1 << max(4, int(2 * max(len(self), 1) - 1).bit_length())
            entries = np.zeros((n_entries, 1 + self.n_columns), dtype=np.uint64)
            insert_missing(entries, self.keys, self.values)
            self._entries = entries
        return self._entries

    def __getstate__(self) -> Dict[str, Any]:
        # the entries are rebuilt where the table is used (a worker of nlp.pipe(n_process=...))
        return {**self.__dict__, "_entries": None}

    def to_dict(self) -> Dict[str, Any]:
        """Arrays and settings, for msgpack."""
        return {"keys": self.keys, "values": self.values, "key_attr": self.key_attr}

    @classmethod
    def from_dict(cls, msg: Dict[str, Any]) -> "WordTable":
        """The table of :meth:`to_dict` (raises ValueError on an inconsistent one)."""
        try:
            return cls(msg["keys"], np.asarray(msg["values"]), key_attr=msg["key_attr"])
        except (KeyError, TypeError) as err:
            raise ValueError(f"a saved word table is incomplete: {err!r}") from err

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WordTable) and self.key_attr == other.key_attr
                and np.array_equal(self.keys, other.keys)
                and np.array_equal(self.values, other.values))


def word_keys(words: Iterable[str]) -> np.ndarray:
    """The keys of ``words`` as ``Doc.to_array(ORTH)`` gives them: the string's
    hash, or its symbol id for the strings spaCy keeps as symbols ("ORG",
    "nsubj"), which a plain hash would never meet in a doc."""
    return np.fromiter((get_string_id(w) for w in words), dtype=np.uint64)


def table_from_items(keys: Sequence[int], values: Sequence[int], key_attr: str = "ORTH",
                     drop_missing: bool = True) -> WordTable:
    """A one-column table, leaving out words whose value is :data:`MISSING`
    (they read the same either way, and spaCy's English table holds 810k such)."""
    keys = np.asarray(keys, dtype=np.uint64)
    values = np.asarray(values, dtype=np.int64)
    if drop_missing:
        kept = values != MISSING
        keys, values = keys[kept], values[kept]
    return WordTable(keys, values, key_attr)
