"""Gazetteers as a feature source: ``GAZETTEER``, the phrase lists that match
at the token, with the token's B/I/L/U position in each match
(``features/gazetteer.py``: the lists, their matching and the files they are
read from).

Its settings of ``[initialize.components.NAME]``: ``gazetteer = PATH`` (a
file), ``gazetteer_ruler`` (an ``entity_ruler`` of the pipeline whose phrase
patterns are lists too), ``gazetteer_from_training`` (the training examples'
gold spans, each held out of its own documents while training) and
``gazetteer_case_sensitive``. Phrases are tokenized by the pipeline, their
whitespace tokens kept (``"São\u00a0Paulo"``, ``"New  York"``), as spaCy's
``PhraseMatcher`` and the entity ruler keep them, so that a phrase matches the
same text in a doc.
"""

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc

from ..errors import Errors
from ..features.gazetteer import (EVERY_FOLD, Gazetteer, phrase_of, read_gazetteer,
                                  ruler_phrases, training_phrases)
from .base import BuildContext, FeatureSource
from .registry import register_feature_source

GAZETTEER = "GAZETTEER"


@register_feature_source
class GazetteerSource(FeatureSource):
    """The component's phrase lists.

    Parameters
    ----------
    gazetteer : Gazetteer
        The lists.
    """

    name = "gazetteer"
    attrs_hint = GAZETTEER
    saved_keys = ("gazetteer",)
    absent = {"gazetteer": None}

    def __init__(self, gazetteer: Gazetteer) -> None:
        self.gazetteer = gazetteer

    @classmethod
    def provides(cls, attr: str) -> bool:
        return attr == GAZETTEER

    @classmethod
    def build(cls, context: BuildContext, attrs: Sequence[str], *,
              gazetteer: Optional[str] = None, gazetteer_case_sensitive: bool = False,
              gazetteer_ruler: Optional[str] = None,
              gazetteer_from_training: bool = False) -> Optional["GazetteerSource"]:
        """The lists of a file, a ruler and/or the training data (E125 where
        they are given and no template reads them, or read and not given)."""
        given = gazetteer is not None or gazetteer_ruler is not None or gazetteer_from_training
        if given and not attrs:
            raise ValueError(Errors.E125.format(
                why=f"'{context.name}' was given a gazetteer but no feature template reads it: "
                    f"add templates such as \"GAZETTEER[-1..1]\" to the model's templates"))
        if not attrs:
            return None
        if not given:
            raise ValueError(Errors.E125.format(
                why=f"the templates of '{context.name}' read GAZETTEER, but no gazetteer was "
                    f"given: set [initialize.components.{context.name}] gazetteer = PATH (or "
                    f"gazetteer_ruler = the name of an entity_ruler, or gazetteer_from_training "
                    f"= true)"))
        pairs = _read_file(gazetteer) if gazetteer is not None else []
        if gazetteer_ruler is not None:
            pairs += _ruler(context, gazetteer_ruler)
        given_phrases = phrase_tokens(pairs, _make_doc(context))
        from_training, folds = (training_phrases(_gold_spans(context)) if gazetteer_from_training
                                else ([], []))
        if gazetteer_from_training and not from_training:
            raise ValueError(Errors.E125.format(
                why="gazetteer_from_training found no gold spans in the training examples"))
        # a phrase also given in a file or a ruler holds in every fold (its mask is all ones)
        return cls(Gazetteer(given_phrases + from_training,
                             case_sensitive=gazetteer_case_sensitive,
                             folds=[EVERY_FOLD] * len(given_phrases) + folds))

    @property
    def holds_out(self) -> bool:
        # a gazetteer drawn from the training data holds each document's own phrases out
        return self.gazetteer.from_training

    def columns(self, docs, attrs, keys, held_out) -> np.ndarray:
        return self.gazetteer.column(docs, held_out)[:, None].repeat(len(attrs), axis=1)

    def to_msg(self) -> Dict[str, Any]:
        return {"gazetteer": self.gazetteer.to_dict()}

    @classmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["GazetteerSource"]:
        saved = msg.get("gazetteer")
        return None if saved is None else cls(Gazetteer.from_dict(saved))


def phrase_tokens(pairs: Iterable[Tuple[str, str]], make_doc: Callable[[str], Doc]
                  ) -> List[Tuple[str, Tuple[str, ...]]]:
    """(name, tokens) with each phrase split by the pipeline's tokenizer
    ``make_doc``, as the gazetteer matches it (``features.gazetteer.phrase_of``:
    the whitespace inside kept); a phrase of whitespace alone is dropped."""
    out = []
    for name, phrase in pairs:
        tokens = phrase_of([t.text for t in make_doc(phrase)])
        if tokens:
            out.append((name, tokens))
    return out


def _read_file(path: str) -> List[Tuple[str, str]]:
    """The (name, phrase) pairs of a gazetteer file (E125 naming the line that
    is not UTF-8, where ``read_gazetteer`` would raise a bare UnicodeDecodeError)."""
    try:
        return list(read_gazetteer(path))
    except UnicodeDecodeError as err:
        number = _first_line_not_utf8(Path(path))
        raise ValueError(Errors.E125.format(
            why=f"{path}, line {number} is not UTF-8 ({err.reason}): save the file as "
                f"UTF-8")) from err


def _first_line_not_utf8(path: Path) -> int:
    """The number of the first line of ``path`` that does not decode as UTF-8
    (0 where each line does: the file was cut inside a character)."""
    with path.open("rb") as file:
        for number, raw in enumerate(file, 1):
            try:
                raw.decode("utf8")
            except UnicodeDecodeError:
                return number
    return 0


def _ruler(context: BuildContext, ruler_name: str) -> List[Tuple[str, str]]:
    """The phrase patterns of the pipeline's ``entity_ruler`` ``ruler_name``
    (E125 where the pipeline has no such component, or it has no patterns)."""
    nlp = context.nlp
    if nlp is None or ruler_name not in nlp.component_names:
        have = nlp.component_names if nlp is not None else []
        raise ValueError(Errors.E125.format(
            why=f"gazetteer_ruler = '{ruler_name}' is not a component of the pipeline "
                f"({', '.join(have) or 'none given'})"))
    ruler = nlp.get_pipe(ruler_name)
    if not isinstance(getattr(ruler, "patterns", None), list):
        factory = nlp.get_pipe_meta(ruler_name).factory
        raise ValueError(Errors.E125.format(
            why=f"gazetteer_ruler = '{ruler_name}' names a component of factory '{factory}' "
                f"({type(ruler).__name__}), which has no patterns: name an entity_ruler (or "
                f"span_ruler) of the pipeline, whose phrase patterns are the lists"))
    return ruler_phrases(ruler)


def _make_doc(context: BuildContext):
    """The pipeline's tokenizer (whitespace without a pipeline)."""
    if context.nlp is not None:
        return context.nlp.make_doc
    return lambda text: Doc(context.vocab, words=text.split())


def _gold_spans(context: BuildContext) -> list:
    """(reference doc, gold spans) of every training example (E125 where the
    target has no spans: tags have none)."""
    spans_of = getattr(context.target, "spans_of", None)
    if spans_of is None:
        raise ValueError(Errors.E125.format(
            why=f"gazetteer_from_training makes phrase lists of gold spans, and "
                f"'{context.name}' predicts {context.target_name!r}, which has none: use it "
                f"with target = \"ents\" or \"spans:KEY\""))
    return [(eg.reference, spans_of(eg.reference) or []) for eg in context.get_examples()]
