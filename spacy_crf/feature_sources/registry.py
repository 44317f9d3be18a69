"""The registry of feature sources: which source gives a template attribute,
and which takes an initialize setting.

``spacy.util.registry.crf_feature_sources``, whose entry points are the group
``spacy_crf_feature_sources`` (:mod:`spacy_crf.registries`). A module adds a
source by decorating its class (:func:`register_feature_source`); a package
of its own points its entry point at the class::

    [project.entry-points.spacy_crf_feature_sources]
    wordnet = "my_package.wordnet_source:WordNetSenses"
"""

from typing import Any, Dict, Optional, Type

from ..errors import Errors
from ..registries import ExtensionRegistry
from .base import FeatureSource

#: ``spacy.util.registry.crf_feature_sources`` (entry points: ``spacy_crf_feature_sources``)
FEATURE_SOURCES = ExtensionRegistry("crf_feature_sources")


def register_feature_source(cls: Type[FeatureSource]) -> Type[FeatureSource]:
    """Class decorator: register the feature source class ``cls`` under ``cls.name``.

    Raises
    ------
    ValueError
        E244 where another registered source takes one of its settings.
    """
    for other in FEATURE_SOURCES.in_process().values():  # (entry points load later)
        shared = set(other.settings()) & set(cls.settings())
        if other.name != cls.name and shared:
            raise ValueError(Errors.E244.format(source=cls.name, other=other.name,
                                                settings=", ".join(sorted(shared))))
    return FEATURE_SOURCES.register(cls.name, cls)


def registered_feature_sources() -> Dict[str, Type[FeatureSource]]:
    """Every registered source class by name, the package's own first."""
    return FEATURE_SOURCES.all()


def source_of(attr: str) -> Optional[Type[FeatureSource]]:
    """The registered source that provides the template attribute ``attr``, or None."""
    return next((cls for cls in registered_feature_sources().values() if cls.provides(attr)),
                None)


def attrs_hints() -> str:
    """Every source's attributes as E001 lists them (``CLUSTER, CLUSTERk, ...``)."""
    return ", ".join(cls.attrs_hint for cls in registered_feature_sources().values())


def split_settings(name: str, settings: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The component's initialize settings by the source that takes them.

    Parameters
    ----------
    name : str
        The component's name, for messages.
    settings : dict
        ``[initialize.components.NAME]`` less the component's own settings.

    Raises
    ------
    ValueError
        E242, listing what the sources take, for a setting none of them takes.
    """
    sources = registered_feature_sources()
    owner = {setting: source for source, cls in sources.items() for setting in cls.settings()}
    unknown = [setting for setting in settings if setting not in owner]
    if unknown:
        raise ValueError(Errors.E242.format(
            name=name, settings=", ".join(map(repr, unknown)),
            options="; ".join(f"{source}: {', '.join(cls.settings()) or 'none'}"
                              for source, cls in sources.items())))
    split: Dict[str, Dict[str, Any]] = {source: {} for source in sources}
    for setting, value in settings.items():
        split[owner[setting]][setting] = value
    return split
