"""The registry of targets: a config's ``target`` string resolved to a Target.

Targets are registered with spaCy's registry machinery, as its factories and
architectures are: ``spacy.util.registry.crf_targets``, whose entry points
are the group ``spacy_crf_targets`` (catalogue names a registry's group after
its namespace, here ``("spacy", "crf_targets")``), so a package adds targets
without an import, as its ``pyproject.toml`` says::

    [project.entry-points.spacy_crf_targets]
    shape = "my_package.shape_target:ShapeTarget"

A module adds one by decorating its class (:func:`register_target`), under
the class's :attr:`~spacy_crf.targets.base.Target.name`: the config string
itself (``"tag"``), or for a target whose names follow a pattern the pattern
as the docs write it (``"spans:KEY"``, ``"_.NAME"``); its classmethod
:meth:`~spacy_crf.targets.base.Target.from_name` tells which strings it
answers to and builds the target of one.
"""

from typing import Dict, List, Type

from ..errors import Errors
from ..registries import ExtensionRegistry, listing
from .base import Target

#: ``spacy.util.registry.crf_targets`` (entry points: ``spacy_crf_targets``)
TARGETS = ExtensionRegistry("crf_targets")


def register_target(cls: Type[Target]) -> Type[Target]:
    """Class decorator: register the target class ``cls`` under ``cls.name``.

    Parameters
    ----------
    cls : type
        A subclass of :class:`~spacy_crf.targets.base.Target` with its
        ``name`` (and ``from_name`` where its names follow a pattern).

    Returns
    -------
    type
        ``cls`` itself.
    """
    return TARGETS.register(cls.name, cls)


def registered_targets() -> Dict[str, Type[Target]]:
    """Every registered target class by name: this process's registrations in
    their order (the package's own first), then those of entry points that no
    module registered as it was imported."""
    return TARGETS.all()


def assignable_attributes() -> List[str]:
    """What some target registered in this process may write, as spaCy's pipe
    meta names it (each target class's ``assigns``, in registration order,
    each once): the factory's ``assigns``. A target whose attribute depends on
    its name (``_.NAME``) names it on its components only."""
    targets = TARGETS.in_process()
    return list(dict.fromkeys(attr for cls in targets.values() for attr in cls.assigns))


def make_target(target: str, scheme: str = "BILUO") -> Target:
    """Build the target the config names.

    Parameters
    ----------
    target : str
        The component's ``target`` setting: a registered name (``tag``,
        ``pos``, ``dep``, ``morph``, ``lemma``, ``sent_starts``, ``ents``)
        or a string a registered pattern takes (``spans:KEY``, ``_.NAME``).
    scheme : str
        ``BIO`` or ``BILUO``, for span targets.

    Returns
    -------
    Target
        A fresh target, without labels.

    Raises
    ------
    ValueError
        E006, naming the registered targets, for a string none of them takes.
    """
    targets = registered_targets()
    if isinstance(target, str):
        # the target registered under the string itself first, then the patterns
        named = targets.get(target)
        for cls in ([named] if named else []) + [c for c in targets.values() if c is not named]:
            made = cls.from_name(target, scheme)
            if made is not None:
                return made
    raise ValueError(Errors.E006.format(target=target, options=_listing(targets)))


def _listing(targets: Dict[str, Type[Target]]) -> str:
    """The registered names as E006 lists them: ``'tag', 'pos' or '_.NAME' (a hint)``."""
    return listing(f"'{name}'" + (f" ({cls.name_hint})" if cls.name_hint else "")
                   for name, cls in targets.items())
