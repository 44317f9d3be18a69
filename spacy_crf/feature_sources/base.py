"""What a feature source is: the attributes it gives the templates, its build
at ``initialize``, the columns it fills and how it is saved.

A feature source is a table the component holds about words beyond their
spelling (Brown clusters, clusters of the vectors, phrase lists). Its class
says which template attributes it provides (:meth:`FeatureSource.provides`),
which ``[initialize.components.NAME]`` settings it takes (the keyword-only
parameters of :meth:`FeatureSource.build`) and how it is built from them and
the pipeline; the source built then fills its attributes' columns for a batch
(:meth:`FeatureSource.columns`) and is saved with the component, inside the
component's word tables (:class:`~spacy_crf.features.lexicon.Lexicon`), under
the message keys it names (:attr:`FeatureSource.saved_keys`).
"""

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

#: the parameters of ``build`` that are not settings
_BUILD_ARGS = ("context", "attrs")


@dataclass(frozen=True)
class BuildContext:
    """What a source may read when the component is initialized.

    Attributes
    ----------
    name : str
        The component's name, for messages (``[initialize.components.NAME]``).
    vocab : Vocab
        The pipeline's vocab (its lookups, its vectors).
    nlp : Language, optional
        The pipeline: its language, tokenizer and components.
    get_examples : callable
        Returns the training examples.
    target : object
        The component's target (``spans_of`` for a span target).
    target_name : str
        The component's ``target`` setting, for messages.
    required : tuple of str
        The attributes the model's own templates read; the others a source is
        asked for are optional (``cluster_templates``: added where it is built).
    seed : int
        A seed for what a build draws at random.
    """

    name: str
    vocab: Vocab
    nlp: Optional[Language]
    get_examples: Callable[[], Iterable[Example]]
    target: Any
    target_name: str
    required: Tuple[str, ...] = ()
    seed: int = 0

    @property
    def lang(self) -> str:
        """The pipeline's language (``xx`` where nothing says)."""
        return self.nlp.lang if self.nlp is not None else (self.vocab.lang or "xx")


class FeatureSource(ABC):
    """A table of word features, built at ``initialize`` and saved with the component.

    A subclass registers itself (:func:`~spacy_crf.feature_sources.register_feature_source`)
    under :attr:`name`.
    """

    #: the registry name
    name: ClassVar[str]
    #: how E001 lists the attributes, e.g. ``"CLUSTER, CLUSTERk"``
    attrs_hint: ClassVar[str]
    #: the keys of the word tables' message this source writes (:meth:`to_msg`)
    saved_keys: ClassVar[Tuple[str, ...]] = ()
    #: what is written under them for a component without this source (the
    #: package's own sources wrote their keys always; a new one writes nothing)
    absent: ClassVar[Dict[str, Any]] = {}

    # ------------------------------------------------------------- the class
    @classmethod
    @abstractmethod
    def provides(cls, attr: str) -> bool:
        """Whether the template attribute ``attr`` (upper case) is this source's."""

    @classmethod
    def check(cls, attr: str, template: str) -> None:
        """Raise E002 where ``attr``, one of this source's, is out of range."""

    @classmethod
    def settings(cls) -> List[str]:
        """The ``[initialize.components.NAME]`` settings this source takes: the
        keyword-only parameters of :meth:`build`."""
        return [p.name for p in inspect.signature(cls.build).parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.name not in _BUILD_ARGS]

    @classmethod
    @abstractmethod
    def build(cls, context: BuildContext, attrs: Sequence[str],
              **settings: Any) -> Optional["FeatureSource"]:
        """The source the component's templates read, or None where it has none.

        Called where the templates read some of its attributes (``attrs``,
        optional ones too: see :attr:`BuildContext.required`) or some of its
        settings are given. A subclass declares its settings as keyword-only
        parameters with defaults; spaCy's validation of initialize settings
        checks their types.

        Raises
        ------
        ValueError
            A setting that cannot be read, or a required attribute without a table.
        """

    # ------------------------------------------------------ the source built
    def has(self, attr: str) -> bool:
        """Whether this built source has a value for ``attr`` (one it provides)."""
        return True

    def key_attrs(self, attrs: Sequence[str]) -> List[str]:
        """The token attributes (``ORTH``, ``LOWER``) whose hashes :meth:`columns` looks up."""
        return []

    @property
    def holds_out(self) -> bool:
        """Whether the columns differ while training (``held_out``)."""
        return False

    @abstractmethod
    def columns(self, docs: Sequence[Doc], attrs: Sequence[str], keys: Dict[str, np.ndarray],
                held_out: bool) -> np.ndarray:
        """``(N, len(attrs))`` uint64 values of ``attrs`` at every token of the batch.

        Parameters
        ----------
        docs : sequence of Doc
            The batch.
        attrs : sequence of str
            Attributes of this source, each of which it :meth:`has`.
        keys : dict
            ``{"ORTH": (N,) uint64, ...}``: the hashes of :meth:`key_attrs`.
        held_out : bool
            Training (see :attr:`holds_out`).
        """

    @abstractmethod
    def to_msg(self) -> Dict[str, Any]:
        """The source as msgpack-able values under :attr:`saved_keys`."""

    @classmethod
    @abstractmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["FeatureSource"]:
        """The source saved in the word tables' message ``msg`` (None where it
        holds none). Raises ValueError for an unreadable one."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and _same(self.to_msg(), other.to_msg())

    __hash__ = object.__hash__


def _same(a: Any, b: Any) -> bool:
    """Equality of messages that hold numpy arrays."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b
