"""The extensions a crf_tagger's stored confidences and n-best lists are read through.

Each component stores its values under its own name (:mod:`spacy_crf.token_values`:
they follow their tokens through ``doc.retokenize()`` and ``Span.as_doc``), and
has extensions of its own, named after it:

* ``token._.{name}_confidence``: P(the token's predicted label);
* ``span._.{name}_confidence``: P(the predicted span), for span targets;
* ``doc._.{name}_nbest``: the n best labellings of each sequence.

So a POS and an NER component in one pipeline never overwrite each other's
(issue #49). ``token._.crf_confidence``, ``span._.crf_confidence`` and
``doc._.crf_nbest`` stay as shared names: they read the values of the one
component that stored them on a doc, and raise a ValueError naming each
component's own extension where two did. Getters are partials of module
functions, so they pickle (``nlp.pipe(n_process=...)`` with spawn).
"""

from functools import partial
from typing import Any, Callable, Iterable, List, Optional, Tuple

from spacy.tokens import Doc, Span, Token

from .. import token_values
from ..errors import Errors

CONFIDENCE = "confidence"
SPAN_CONFIDENCE = "span_confidence"
NBEST = "nbest"

#: the shared extensions, read where one component stored values on a doc; they
#: are the own extensions of a component whose name reads "crf"
SHARED_STEM = "crf"
SHARED_CONFIDENCE = f"{SHARED_STEM}_{CONFIDENCE}"
SHARED_NBEST = f"{SHARED_STEM}_{NBEST}"

NBestLists = List[List[Tuple[float, List[str]]]]


def _token_confidence(owner: Optional[str], token: Token) -> Optional[float]:
    return _read(partial(token_values.token_value, token, CONFIDENCE), owner, "token", CONFIDENCE)


def _span_confidence(owner: Optional[str], span: Span) -> Optional[float]:
    return _read(partial(token_values.span_value, span, SPAN_CONFIDENCE), owner, "span",
                 CONFIDENCE)


def _doc_n_best(owner: Optional[str], doc: Doc) -> Optional[NBestLists]:
    found = _read(partial(token_values.doc_value, doc, NBEST), owner, "doc", NBEST)
    # stored with the token count it was decoded over: retokenized tokens read None
    return None if found is None or found[0] != len(doc) else found[1]


def _read(value_of: Callable[[Optional[str]], Any], owner: Optional[str], obj: str,
          kind: str) -> Any:
    """``value_of(owner)``; for a shared extension (``owner=None``) where
    several components stored values, the one named "crf"'s, else an error
    that names each component's own extension."""
    try:
        return value_of(owner)
    except token_values.AmbiguousValues as error:
        if SHARED_STEM in error.owners:
            return value_of(SHARED_STEM)
        own = ", ".join(f"{obj}._.{stem}_{kind}" for stem in error.owners)
        raise ValueError(Errors.E191.format(shared=f"{obj}._.{SHARED_STEM}_{kind}",
                                            owners=", ".join(error.owners), own=own,
                                            names=", ".join(map(repr, error.owners)))) from None


def store_n_best(doc: Doc, owner: str, lists: NBestLists) -> None:
    """Store a doc's n-best lists for ``doc._.{owner}_nbest`` (``owner``: a stem)."""
    token_values.store_doc_value(doc, NBEST, owner, [len(doc), lists])


def _set(cls: Any, name: str, getter: Callable) -> None:
    """Register a getter extension, once; an extension of that name that is
    not ours is an error, not overwritten."""
    existing = cls.get_extension(name)
    if existing is not None:
        old = existing[2]
        if isinstance(old, partial) and old.func is getter.func and old.args == getter.args:
            return
        raise ValueError(Errors.E192.format(name=f"{cls.__name__.lower()}._.{name}"))
    cls.set_extension(name, getter=getter, force=True)


def confidence_owner(extension: Optional[tuple]) -> Optional[str]:
    """Whose confidences a token extension (as ``Token.get_extension`` gives it)
    reads: the stem of the crf_tagger whose own extension it is
    (``SHARED_STEM`` for the shared ``token._.crf_confidence``), None where
    it is no crf_tagger's (or there is none)."""
    getter = extension[2] if extension is not None else None
    if isinstance(getter, partial) and getter.func is _token_confidence:
        return getter.args[0] or SHARED_STEM
    return None


def register_extensions(*components: str) -> None:
    """Register the components' own extensions and the shared ones (a
    component whose name reads "crf" has the shared ones as its own; with no
    name, the shared ones alone)."""
    owners = [None] + [stem(c) for c in components if stem(c) != SHARED_STEM]
    for owner in dict.fromkeys(owners):
        name = f"{owner or SHARED_STEM}_"
        _set(Token, name + CONFIDENCE, partial(_token_confidence, owner))
        _set(Span, name + CONFIDENCE, partial(_span_confidence, owner))
        _set(Doc, name + NBEST, partial(_doc_n_best, owner))


def check_own_place(component: str, others: Iterable[str]) -> None:
    """E190 where another crf_tagger of the pipeline (``others``: their
    names) would store its values in the component's place."""
    for other in others:
        if other != component and stem(other) == stem(component):
            raise ValueError(Errors.E190.format(name=component, other=other,
                                                stem=stem(component)))


def stem(component: str) -> str:
    """Where a component's values are stored and what its extensions are
    named after: its name made an identifier (``my-ner``: ``my_ner``)."""
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in component)
    return "_" + safe if not safe or safe[0].isdigit() else safe


def own_extension(component: str, kind: str) -> str:
    """The name of a component's own extension, ``{stem}_confidence`` or
    ``{stem}_nbest`` (:func:`stem`)."""
    return f"{stem(component)}_{kind}"
