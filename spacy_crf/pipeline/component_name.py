"""A crf_tagger's ``name``, which its extensions, stored values, messages and
pipe meta follow (:class:`FollowsItsName`)."""

from spacy.pipeline.pipe import Pipe

from ..models.featurize import set_owner
from .extensions import check_own_place, register_extensions
from .pipe_meta import declare_component_meta, sourcing_pipeline


class FollowsItsName:
    """``name`` for a crf_tagger, whose extensions, stored values and messages
    follow it. spaCy sets the name of a component it sources under another
    (``nlp.add_pipe(NAME, source=nlp1, name=OTHER)``, ``source`` in a config);
    ``nlp.rename_pipe`` tells no component (spaCy's own keep their old name
    too), so set ``nlp.get_pipe(NEW).name = NEW`` after it."""

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
