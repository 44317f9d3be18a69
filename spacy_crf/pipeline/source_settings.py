"""``CRFTagger.initialize`` takes the settings of every registered feature source.

spaCy checks ``[initialize.components.NAME]`` against the signature of the
component's ``initialize`` and refuses a setting it does not name, even where
the method takes ``**kwargs`` (``spacy.schemas.get_arg_model``). The settings
of the feature sources (``clusters = PATH``, ``gazetteer = PATH``, those of a
source a package registers) are the sources' own, so the method's signature
is made when spaCy asks for it: the method's own parameters, then the
keyword-only parameters of each registered source's ``build``.
"""

import inspect
from typing import Any, Callable

from ..feature_sources import registered_feature_sources


class with_source_settings:  # noqa: N801  (used as a decorator)
    """Method decorator: the method takes ``**sources``, and its signature (as
    ``inspect.signature`` reads it) names every registered source's settings."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__

    def __get__(self, pipe: Any, owner: type) -> Any:
        return self if pipe is None else _Bound(self.method, pipe)


class _Bound:
    """The method bound to a component, with the signature spaCy validates against."""

    def __init__(self, method: Callable[..., Any], pipe: Any) -> None:
        self.__func__, self.__self__ = method, pipe
        self.__doc__ = method.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__(self.__self__, *args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        own = list(inspect.signature(self.__func__).parameters.values())[1:]  # (less self)
        params = [p for p in own if p.kind != p.VAR_KEYWORD]
        for cls in registered_feature_sources().values():
            build = inspect.signature(cls.build).parameters
            params += [build[name] for name in cls.settings()]
        return inspect.Signature(params)
