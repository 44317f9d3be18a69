"""What a component knows about words beyond their spelling: the feature
sources built for it (``spacy_crf.feature_sources``).

A :class:`Lexicon` holds the built sources whose attributes the templates read
(``CLUSTER``, ``VECTOR_CLUSTERk``, ``GAZETTEER``, or a registered source's
own). The component builds it at ``initialize`` from the pipeline
(``pipeline/lexicon_setup.py``), hands it to its feature layers and saves it
beside its weights, so a loaded model reads the same values without what the
sources were built from (spacy-lookups-data, the vectors, the gazetteer file).
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
import srsly
from spacy.tokens import Doc

from ..errors import Errors
from ..feature_sources import FeatureSource, registered_feature_sources, source_of

#: the format of :meth:`Lexicon.to_bytes`
FORMAT = 1


class Lexicon:
    """The built feature sources of one component.

    Parameters
    ----------
    sources : mapping of str to FeatureSource
        The built sources by registry name.
    """

    def __init__(self, sources: Optional[Mapping[str, FeatureSource]] = None) -> None:
        self.sources: Dict[str, FeatureSource] = dict(sources or {})
        #: attr -> its built source (None: none), as the registry said first:
        #: every batch asks, and the registry lists its entries each time
        self._for_attr: Dict[str, Optional[FeatureSource]] = {}

    def __getitem__(self, name: str) -> FeatureSource:
        return self.sources[name]

    def get(self, name: str) -> Optional[FeatureSource]:
        """The built source registered as ``name``, or None."""
        return self.sources.get(name)

    def _source_for(self, attr: str) -> Optional[FeatureSource]:
        if attr not in self._for_attr:
            cls = source_of(attr)
            built = self.sources.get(cls.name) if cls is not None else None
            self._for_attr[attr] = built if built is not None and built.has(attr) else None
        return self._for_attr[attr]

    def missing(self, attrs: Sequence[str]) -> List[str]:
        """The attributes of ``attrs`` this lexicon has no table for."""
        return [attr for attr in attrs if self._source_for(attr) is None]

    def key_attrs(self, attrs: Sequence[str]) -> List[str]:
        """The token attributes (``ORTH``, ``LOWER``) whose hashes ``attrs`` look up."""
        needed: List[str] = []
        for source, own in self._by_source(attrs):
            needed += [key for key in source.key_attrs(own) if key not in needed]
        return needed

    def _by_source(self, attrs: Sequence[str]) -> List[Any]:
        """(built source, its attributes of ``attrs``) in the order of first use."""
        groups: Dict[int, Any] = {}
        for attr in attrs:
            source = self._source_for(attr)
            groups.setdefault(id(source), (source, []))[1].append(attr)
        return list(groups.values())

    @property
    def holds_out(self) -> bool:
        """Whether the columns differ while training (a gazetteer drawn from the
        training data holds each document's own phrases out)."""
        return any(source.holds_out for source in self.sources.values())

    def columns(self, docs: Sequence[Doc], attrs: Sequence[str],
                keys: Dict[str, np.ndarray], held_out: bool = False) -> np.ndarray:
        """``(N, len(attrs))`` uint64 values of ``attrs`` at every token of the batch.

        Parameters
        ----------
        docs : sequence of Doc
            The batch.
        attrs : sequence of str
            Word-representation attributes, each with its source here.
        keys : dict
            ``{"ORTH": (N,) uint64, "LOWER": ...}``: the hashes the sources look up.
        held_out : bool
            Training: a source that :attr:`holds_out` gives its training values.
        """
        # the key arrays have one row a token; summing the docs' lengths in
        # Python costs as much as the lookup itself
        n_tokens = (next(iter(keys.values())).shape[0] if keys
                    else sum(len(doc) for doc in docs))
        out = np.zeros((n_tokens, len(attrs)), dtype=np.uint64)
        position = {attr: j for j, attr in enumerate(attrs)}
        for source, own in self._by_source(attrs):
            out[:, [position[attr] for attr in own]] = source.columns(docs, own, keys, held_out)
        return out

    @property
    def empty(self) -> bool:
        return not self.sources

    def to_bytes(self) -> bytes:
        """msgpack bytes of every source (numpy arrays as they are)."""
        msg: Dict[str, Any] = {"format": FORMAT}
        for name, cls in registered_feature_sources().items():
            built = self.sources.get(name)
            msg.update(built.to_msg() if built is not None else cls.absent)
        return srsly.msgpack_dumps(msg)

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
        """The lexicon of a loaded :meth:`to_bytes` message (see :meth:`from_bytes`).

        Raises
        ------
        ValueError
            For a message of another format, or E243 for one holding a source
            no installed package registers.
        """
        if not isinstance(msg, dict) or msg.get("format") != FORMAT:
            raise ValueError(f"the word tables are of format "
                             f"{msg.get('format') if isinstance(msg, dict) else None!r}, "
                             f"this version reads {FORMAT}")
        registered = registered_feature_sources()
        known = {key for source in registered.values() for key in source.saved_keys}
        unknown = [key for key, value in msg.items()
                   if key != "format" and key not in known and value is not None]
        if unknown:
            raise ValueError(Errors.E243.format(keys=", ".join(map(repr, unknown)),
                                                sources=", ".join(registered)))
        built = {name: source.from_msg(msg) for name, source in registered.items()}
        return cls({name: source for name, source in built.items() if source is not None})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lexicon) and self.sources == other.sources
