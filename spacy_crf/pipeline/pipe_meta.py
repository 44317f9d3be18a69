"""One component's own pipe meta: what it writes and scores, for ``nlp.analyze_pipes()``.

A factory's ``assigns`` and ``default_score_weights`` are fixed when it is
registered, but what a ``crf_tagger`` writes (``token.pos``, ``doc.ents``,
``token._.chunk``, ...) and which scores it reports depend on its ``target``.
spaCy keeps one :class:`~spacy.language.FactoryMeta` per component in
``nlp._pipe_meta`` (read by ``nlp.get_pipe_meta``, ``nlp.analyze_pipes`` and
``nlp.config``), but ``Language.add_pipe`` fills it with the factory's meta
*after* the factory returns, and there is no public way to set it. So the
factory hands the component's own meta to the pipeline's meta table, which
puts it in place of the factory's as ``add_pipe`` stores it; every way of
adding a component through its factory (``add_pipe``, ``replace_pipe``,
``from_config``, ``spacy.load``) goes through that one store.

A component copied with ``add_pipe(source=...)`` (or ``source`` in a config)
is not made by its factory in the new pipeline, and spaCy would give it the
factory's meta there: the ``tag`` target's score weights, which then weigh in
choosing ``model-best``. spaCy sets the copy's name while it sources it, the
one call a component gets then: the component's ``name`` setter finds the
pipeline that sources it (:func:`sourcing_pipeline`) and declares its meta.

The component's config (``nlp._pipe_configs``, what ``nlp.config``, ``spacy
init fill-config`` and a saved pipeline's config.cfg show) is stored the same
way, after the factory returns, and is handed in the same way: a factory may
rewrite the config spaCy filled for it (:func:`declare_pipe_config`), which
is how a setting that left the factory's top level is migrated into the block
that holds it now.
"""

import dataclasses
import sys
from types import FrameType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from spacy.language import FactoryMeta, Language
from spacy.pipe_analysis import validate_attrs

from .extensions import CONFIDENCE, NBEST, own_extension


class _PendingStore(dict):
    """``nlp._pipe_meta`` or ``nlp._pipe_configs``: spaCy's table, with what the
    factories of components made but not yet stored want stored instead."""

    def __init__(self, entries: Dict[str, Any]) -> None:
        super().__init__(entries)
        #: name -> (factory, what becomes of the entry spaCy stores for it)
        self.own: Dict[str, tuple] = {}

    def __setitem__(self, name: str, entry: Any) -> None:
        pending = self.own.pop(name, None)
        # only for the component its factory just made: a component of another
        # factory stored later under the same name keeps spaCy's entry
        if pending is not None and _factory_of(entry) == pending[0]:
            entry = pending[1](entry)
        super().__setitem__(name, entry)

    def __reduce__(self):
        # pickled and copied as the plain dict spaCy made (the pending entries
        # are only needed between a factory call and add_pipe's store)
        return (dict, (dict(self),))


def _factory_of(entry: Any) -> Any:
    return entry.get("factory") if isinstance(entry, Mapping) else entry.factory


def _pending(nlp: Language, table: str) -> _PendingStore:
    store = getattr(nlp, table)
    if not isinstance(store, _PendingStore):
        store = _PendingStore(store)
        setattr(nlp, table, store)
    return store


def declare_pipe_meta(nlp: Language, name: str, factory: str, **fields: Any) -> FactoryMeta:
    """Give the component ``name`` that ``factory`` is making its own meta.

    Parameters
    ----------
    nlp : Language
        The pipeline the factory was called for.
    name : str
        The component's name in it.
    factory : str
        The factory's name (its meta is the base).
    **fields
        ``FactoryMeta`` fields that differ from the factory's, e.g.
        ``assigns=["token.pos"]``.

    Returns
    -------
    FactoryMeta
        The component's meta, as ``nlp.get_pipe_meta(name)`` will give it
        once ``add_pipe`` has stored the component.
    """
    if "assigns" in fields:
        fields["assigns"] = list(validate_attrs(fields["assigns"]))
    if "default_score_weights" in fields and "scores" not in fields:
        # as Language.factory derives them: the scores are the weights' keys
        fields["scores"] = list(fields["default_score_weights"])
    meta = dataclasses.replace(nlp.get_factory_meta(factory), **fields)
    _pending(nlp, "_pipe_meta").own[name] = (factory, lambda _: meta)
    return meta


def declare_component_meta(nlp: Language, name: str, component: Any) -> None:
    """Declare the meta of the crf_tagger ``component`` named ``name`` in
    ``nlp``: what its target writes and scores (:func:`declare_pipe_meta`)."""
    from ..scoring import default_score_weights

    declare_pipe_meta(nlp, name, "crf_tagger", assigns=component.assigns,
                      default_score_weights=default_score_weights(component.cfg["target"]))


def sourcing_pipeline(max_depth: int = 4) -> Optional[Language]:
    """The pipeline whose ``Language.create_pipe_from_source`` is among the
    callers (up to ``max_depth`` frames up), None elsewhere: spaCy gives a
    component it sources no other sign of the pipeline it goes into."""
    found = calling_method(("create_pipe_from_source",), max_depth + 1)
    return found[0] if found else None


def calling_method(names: Sequence[str], max_depth: int = 5
                   ) -> Optional[Tuple[Language, Dict[str, Any]]]:
    """The pipeline and the local variables of the nearest of the callers (up
    to ``max_depth`` frames above the caller of this function) that is a
    ``Language`` method named one of ``names``; None where there is none.
    spaCy names a component from ``create_pipe_from_source`` (sourcing) and
    ``_link_components`` (``rename_pipe``, ``add_pipe``, loading), and gives it
    no other sign of the pipeline."""
    frame = calling_frame(names, max_depth, sys._getframe(2))
    if frame is None:
        return None
    nlp = frame.f_locals.get("self")
    return (nlp, dict(frame.f_locals)) if isinstance(nlp, Language) else None


def calling_frame(names: Sequence[str], max_depth: int, start: Optional[FrameType]
                  ) -> Optional[FrameType]:
    """The nearest frame, from ``start`` up (at most ``max_depth`` of them), of
    a function named one of ``names``; None where there is none."""
    frame = start
    for _ in range(max_depth):
        if frame is None:
            return None
        if frame.f_code.co_name in names:
            return frame
        frame = frame.f_back
    return None


def declare_pipe_config(nlp: Language, name: str, factory: str,
                        rewrite: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
    """Have ``rewrite`` make the config ``nlp`` keeps for the component ``name``
    that ``factory`` is making from the config spaCy filled for it (the
    factory's settings, with ``factory`` among them)."""
    _pending(nlp, "_pipe_configs").own[name] = (factory, rewrite)


def assigned_attributes(name: str, target: Any, cfg: Mapping[str, Any]) -> List[str]:
    """What the component ``name`` with ``target`` (a ``Target``) and ``cfg``
    writes, as spaCy's pipe meta names it: the target's attribute, and the
    component's own confidence and n-best extensions where its settings turn
    them on."""
    out = list(target.assigns)
    confidence, n_best = own_extension(name, CONFIDENCE), own_extension(name, NBEST)
    if cfg["store_confidence"]:
        out.append(f"token._.{confidence}")
        if target.is_span_target:
            out.append(f"span._.{confidence}")
    if cfg["n_best"]:
        out.append(f"doc._.{n_best}")
    return out
