"""The package's extension points as registries with entry points.

Targets, losses and feature sources are each a registry of spaCy's own
machinery (``spacy.util.registry.crf_targets``, ``crf_losses``,
``crf_feature_sources``), so one works as spaCy's factories and architectures
do: a module registers what it defines as it is imported, and a package of
its own adds one without an import through its entry point. catalogue names
a registry's entry-point group after its namespace, ``("spacy", "crf_losses")``
giving the group ``spacy_crf_losses``::

    [project.entry-points.spacy_crf_losses]
    ramp = "my_package.ramp_loss:RAMP"

:class:`ExtensionRegistry` is what the three have in common: where the
registry lives, registering, listing (this process's registrations in their
order, then the entry points no module registered) and the list an error
names.
"""

import importlib
import pkgutil
from typing import Any, Dict, Iterable, Optional, Sequence

import catalogue
from spacy.util import registry


class ExtensionRegistry:
    """One of the package's registries, ``spacy.util.registry.<attr>``.

    Parameters
    ----------
    attr : str
        The registry's attribute of spaCy's ``registry`` and the second part
        of its namespace (``"crf_losses"``: entry-point group
        ``spacy_crf_losses``).
    """

    def __init__(self, attr: str) -> None:
        if not hasattr(registry, attr):
            # as spaCy makes its own registries (registry.create would name the
            # entry-point group "thinc_<attr>"): the group is "spacy_<attr>"
            setattr(registry, attr, catalogue.create("spacy", attr, entry_points=True))
        self.catalogue: catalogue.Registry = getattr(registry, attr)
        #: the same registry without its entry points: what this process
        #: registered, in the order it did (``get_all`` lists entry points first)
        self._in_process = catalogue.Registry(self.catalogue.namespace, entry_points=False)
        self._external: Optional[Dict[str, Any]] = None

    @property
    def group(self) -> str:
        """The entry-point group, e.g. ``spacy_crf_losses``."""
        return "_".join(self.catalogue.namespace)

    def register(self, name: str, value: Any) -> Any:
        """Register ``value`` under ``name`` (a later registration replaces it)."""
        self.catalogue.register(name, func=value)
        return value

    def in_process(self) -> Dict[str, Any]:
        """What this process registered, by name, in registration order."""
        return self._in_process.get_all()

    def all(self) -> Dict[str, Any]:
        """Everything registered, by name: this process's registrations in their
        order (the package's own first), then those of entry points that no
        module registered as it was imported."""
        if self._external is None:
            # read once: entry points change with an install, not within a process
            # (and reading them costs milliseconds, asked for every template parsed)
            self._external = self.catalogue.get_entry_points()  # (loading one may register it)
        found = self.in_process()
        for name, value in self._external.items():
            found.setdefault(name, value)
        return found

    def get(self, name: str) -> Optional[Any]:
        """The value registered as ``name``, or None."""
        return self.all().get(name) if isinstance(name, str) else None


def listing(names: Iterable[str]) -> str:
    """Names as an error lists them: ``'a', 'b' or 'c'``."""
    quoted = [f"'{name}'" if not name.startswith("'") else name for name in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def import_modules(package: str, path: Sequence[str]) -> None:
    """Import every module of ``package`` (its ``__path__``), so that one added
    there registers itself with no import line (a package of its own has its
    entry point instead)."""
    for module in pkgutil.iter_modules(path):
        importlib.import_module(f"{package}.{module.name}")
