"""A crf_tagger's ``name``, which its extensions, stored values, messages and
pipe meta follow (:class:`FollowsItsName`)."""

import sys
from typing import Any, Dict

from spacy.language import Language
from spacy.pipeline.pipe import Pipe

from ..errors import Warnings, warn
from ..models.featurize import set_owner
from .extensions import check_own_place, register_extensions, stem
from .pipe_meta import calling_frame, calling_method, declare_component_meta, sourcing_pipeline


class FollowsItsName:
    """``name`` for a crf_tagger, whose extensions, stored values and messages
    follow it. spaCy names a component it sources under another name
    (``nlp.add_pipe(NAME, source=nlp1, name=OTHER)``, ``source`` in a config),
    and one it moves (``nlp.rename_pipe``, through ``Language._link_components``).

    A new name is checked as ``add_pipe`` checks it, before anything changes:
    E190 where it reads as the name of another crf_tagger of the pipeline
    (``my-ner`` and ``my_ner`` store their values in one place); a
    ``rename_pipe`` that gives such a name is undone first. A name set by hand
    (``pipe.name = ...``) is not checked: nothing tells the component which
    pipeline it is in."""

    @property
    def name(self) -> str:
        return Pipe.name.__get__(self)  # the slot spaCy's compiled methods read

    @name.setter
    def name(self, value: str) -> None:
        state = self.__dict__.get("_state")
        nlp = sourcing_pipeline() if state is not None else None
        if nlp is not None:  # E190 before anything changes, as the factory checks
            check_own_place(value, [other for other, pipe in nlp.components
                                    if isinstance(pipe, FollowsItsName)])
            _warn_shared(self, value)
        elif state is not None and stem(value) != stem(state.name):
            # moved by spaCy (rename_pipe): its values would go to a new place,
            # which may be another's
            _check_new_place(self, value)
        Pipe.name.__set__(self, value)
        if state is None:  # the component's own __init__: its extensions now
            register_extensions(value)
            return
        if state.name != value:
            register_extensions(value)
            state.name = value
            set_owner(state.model, value)
        if nlp is not None:  # its target's meta, not the factory's default
            declare_component_meta(nlp, value, self)


def _warn_shared(component: FollowsItsName, value: str) -> None:
    """W050 where spaCy sources ``component`` under a name that stores its
    values where another crf_tagger of the pipeline it comes from stores its
    own: the one object serves both pipelines (spaCy's own comment there:
    "there is no actual solution here"), so there the two would overwrite each
    other's values. (Under any other name its values there just move with
    its name, as the docs say.)"""
    found = calling_method(("create_pipe_from_source",), 5)
    if found is None or _built_from_config():
        return
    nlp, local = found
    source = local.get("source")
    if not isinstance(source, Language) or source is nlp or stem(value) == stem(component.name):
        return
    clash = [other for other, pipe in source.components if pipe is not component
             and isinstance(pipe, FollowsItsName) and stem(other) == stem(value)]
    if clash:
        warn(Warnings.W050.format(old=local.get("source_name", component.name), new=value,
                                  new_stem=stem(value), clash=clash[0]))


def _built_from_config(max_depth: int = 12) -> bool:
    """Whether spaCy's ``Language.from_config`` is among the callers: a config
    that sources a component (``source = PATH``) loads the pipeline it comes
    from itself, and drops it, so no one uses that pipeline after."""
    frame = calling_frame(("from_config",), max_depth, sys._getframe(1))
    # (Language.from_config is a classmethod: its first argument is cls)
    return frame is not None and "self" not in frame.f_locals


def _check_new_place(component: FollowsItsName, value: str) -> None:
    """E190 where spaCy names ``component`` ``value`` in a pipeline whose
    other crf_taggers store their values in that place (under their names
    there, or their own ``name`` where spaCy has not renamed them yet); the
    ``rename_pipe`` that did it is undone first, so the pipeline is as it was."""
    found = calling_method(("_link_components",))
    if found is None:
        return
    nlp: Language = found[0]
    others = [name for other, pipe in nlp.components
              if pipe is not component and isinstance(pipe, FollowsItsName)
              for name in (other, pipe.name)]
    try:
        check_own_place(value, others)
    except ValueError:
        renaming = calling_method(("rename_pipe",), max_depth=8)
        if renaming is not None:
            _undo_rename(*renaming)
        raise


def _undo_rename(nlp: Language, local: Dict[str, Any]) -> None:
    """Give the pipeline back its old entry name: spaCy names its components
    last, after renaming the entries, so an error there would leave the
    pipeline under the new name and the component storing under the old."""
    old, new = local.get("old_name"), local.get("new_name")
    if isinstance(old, str) and isinstance(new, str) and new in nlp.component_names:
        nlp.rename_pipe(new, old)
