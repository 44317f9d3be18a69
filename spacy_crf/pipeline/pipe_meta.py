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

A component copied with ``add_pipe(source=...)`` is not made by its factory in
the new pipeline: it keeps the factory's meta there.
"""

import dataclasses
from typing import Any, Dict, List, Mapping

from spacy.language import FactoryMeta, Language
from spacy.pipe_analysis import validate_attrs

from .extensions import CONFIDENCE, NBEST, own_extension


class _PipeMetas(dict):
    """``nlp._pipe_meta``, holding the metas of components made but not yet stored."""

    def __init__(self, metas: Dict[str, FactoryMeta]) -> None:
        super().__init__(metas)
        self.own: Dict[str, FactoryMeta] = {}

    def __setitem__(self, name: str, meta: FactoryMeta) -> None:
        own = self.own.pop(name, None)
        # only for the component its factory just made: a component of another
        # factory stored later under the same name keeps its factory's meta
        if own is not None and own.factory == meta.factory:
            meta = own
        super().__setitem__(name, meta)

    def __reduce__(self):
        # pickled and copied as the plain dict spaCy made (the pending metas
        # are only needed between a factory call and add_pipe's store)
        return (dict, (dict(self),))


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
    metas = nlp._pipe_meta
    if not isinstance(metas, _PipeMetas):
        metas = nlp._pipe_meta = _PipeMetas(metas)
    metas.own[name] = meta
    return meta


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
