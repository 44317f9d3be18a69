"""Structures as config blocks: the ``structures`` registry.

A component's structure is a block of its config with the structure's own
settings and no others::

    [components.crf_tagger.structure]
    @structures = "spacy-crf.SemiMarkov.v1"
    max_segment_length = 10

(``structure = "semi_markov"``, a registered name, is short for the block
with the structure's default settings). Each registered function checks its
settings and returns a :class:`StructureSpec`; the component saves the spec
in its ``cfg`` as ``structure`` (the name) and the settings beside it, as
components saved before the blocks existed did, so both load alike
(:func:`spec_from_cfg`). A new structure registers its function here with
:func:`register_spec`, in its own module, and lists it under the
``spacy_structures`` entry points.
"""

import inspect
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Union

import catalogue
from spacy.util import registry
from thinc.api import Model

from ..errors import Errors, Warnings, warn
from ..features.templates import FeatureTemplates
from ..models.legacy import LEGACY_STRUCTURE_SETTINGS, NO_STRUCTURE_SETTINGS
from ..util import is_count
from .base import CRFStructure, strategy_of

if not hasattr(registry, "structures"):
    # as spaCy makes its own registries: entry points in the group
    # "spacy_structures", so spacy.load finds a plugin's structures without an import
    registry.structures = catalogue.create("spacy", "structures", entry_points=True)


@dataclass(frozen=True)
class StructureSpec:
    """A structure with its settings, as a config block gives it.

    Attributes
    ----------
    name : str
        The structure's name (``cfg["structure"]``): ``"chain"``, ``"tree"``, ...
    settings : dict
        Its own settings, saved in the component's cfg beside the name.
    key : str
        The registered strategy that runs it (``structures.get_structure``),
        e.g. ``"chain_order2"`` for a chain of order 2.
    """

    name: str
    settings: Dict[str, Any] = field(default_factory=dict)
    key: str = ""
    #: for a block whose config leaves a setting null, to be chosen by the
    #: component: ``(its Target, scorable structures or None) -> spec``,
    #: the spec with those settings chosen (``pipeline.settings.resolve_structure``)
    by_component: Optional[Callable[[Any, Optional[Sequence[str]]], "StructureSpec"]] = field(
        default=None, compare=False)
    #: for a block whose choice also rests on the label count, known at
    #: ``initialize`` only: ``(its Target, with its labels) -> spec``, the spec
    #: for those labels (``pipeline.state.ComponentState.choose_structure``);
    #: a new component's alone, as the cfg saves the choice
    by_labels: Optional[Callable[[Any], "StructureSpec"]] = field(default=None, compare=False)

    @property
    def strategy_key(self) -> str:
        return self.key or self.name

    def cfg(self) -> Dict[str, Any]:
        """The entries the component's cfg keeps: the name and the settings."""
        return {"structure": self.name, **self.settings}

    def describe(self) -> str:
        """The structure as a config names it, for messages (a list of
        templates by its length)."""
        settings = ", ".join(f"{k} = [{len(v)} templates]" if isinstance(v, list)
                             else f"{k} = {v!r}" for k, v in self.settings.items())
        return f"'{self.name}'" + (f" ({settings})" if settings else "")


@dataclass(frozen=True)
class ResolvedStructure:
    """A component's structure resolved from its cfg, once: at construction,
    at ``initialize`` and at a load, the only times it changes (every batch
    reads it; re-reading the cfg would re-check the block and re-parse its
    templates each time).

    Attributes
    ----------
    spec : StructureSpec
        The structure and its settings, as the cfg holds them.
    strategy : CRFStructure
        The registered strategy that runs it.
    """

    spec: StructureSpec
    strategy: CRFStructure

    @classmethod
    def of(cls, cfg: Mapping[str, Any], token_transitions: bool = False) -> "ResolvedStructure":
        """The structure ``cfg`` holds, for a model with input-dependent
        transitions of an earlier release or not (``base.strategy_of``)."""
        spec = spec_from_cfg(dict(cfg))
        return cls(spec, strategy_of(spec, token_transitions))


#: structure name -> (registered function name, function)
_BLOCKS: Dict[str, tuple] = {}


def register_spec(registered_name: str, structure: str) -> Callable[[Callable], Callable]:
    """Decorator: register a function returning a :class:`StructureSpec` for
    ``structure`` as ``@structures = registered_name``."""

    def decorate(func: Callable[..., StructureSpec]) -> Callable[..., StructureSpec]:
        registry.structures.register(registered_name, func=func)
        _BLOCKS[structure] = (registered_name, func)
        return func

    return decorate


def _load_plugins() -> None:
    """Import every module the ``spacy_structures`` entry points name (a
    structure whose module nothing has imported yet registers itself)."""
    registry.structures.get_all()


def _block(name: Any) -> Callable[..., StructureSpec]:
    """The registered function of the structure ``name``; E012 names the
    structures there are otherwise."""
    if isinstance(name, str) and name not in _BLOCKS:
        _load_plugins()
    if not isinstance(name, str) or name not in _BLOCKS:
        raise ValueError(Errors.E012.format(structure=name, allowed=", ".join(map(repr, _BLOCKS))))
    return _BLOCKS[name][1]


def settings_left_behind(cfg: Mapping[str, Any], structure: str) -> Set[str]:
    """The keys of ``cfg`` that the block of its structure takes and that of
    ``structure`` does not: stale in a cfg that names ``structure`` now (a
    chain's ``order`` beside the pruned chain that ``order = null`` chose)."""
    if cfg.get("structure") == structure:
        return set()
    return (set(_params(_block(cfg["structure"]))) - set(_params(_block(structure)))) & set(cfg)


@lru_cache(maxsize=None)
def _params(block: Callable[..., StructureSpec]) -> Dict[str, Any]:
    """The settings a structure's block takes, with their defaults (read
    once: the component reads its spec from its cfg at every batch)."""
    return {name: param.default for name, param in inspect.signature(block).parameters.items()}


#: rows of the hashed table of input-dependent transitions, by default
TRANSITION_BUCKETS = 2**16


def transition_settings(templates: Optional[List[str]], n_buckets: int) -> Dict[str, Any]:
    """The settings of input-dependent transitions, for the block of a
    structure that has them (a chain, a tree): ``transition_templates``
    (CRF++'s ``B`` templates with ``%x``: templates evaluated at each token,
    e.g. ``"NORM[-1]|NORM[0]"``, the word pair the move crosses, whose hashed
    weights score every label pair, added to the transitions into that
    token) and ``transition_buckets``, the rows of their hashed table; none
    without templates."""
    if not is_count(n_buckets):  # checked with or without templates, as the docs say
        raise ValueError(Errors.E005.format(name="transition_buckets", value=n_buckets))
    if not templates:
        return {}
    FeatureTemplates(list(templates))  # a typo fails with the config
    return {"transition_templates": list(templates), "transition_buckets": n_buckets}


def as_spec(value: Union[str, StructureSpec, Any]) -> StructureSpec:
    """A ``structure`` setting as a spec: a spec as it is, a structure's name as
    its block with the default settings; E012 names the structures otherwise."""
    return value if isinstance(value, StructureSpec) else _block(value)()


#: the settings a component took beside ``structure`` before structures were
#: config blocks, with their defaults then
FLAT_SETTINGS = {"order": 1, "max_segment_length": 0}


def migrate_flat_settings(structure: Union[str, StructureSpec], **flat: Optional[int]
                          ) -> StructureSpec:
    """The spec of a config written before structures were blocks:
    ``structure = "chain"`` with ``order = 2`` beside it is the block
    ``spacy-crf.Chain.v1`` with ``order = 2`` (so a pipeline saved then loads
    as it was). A flat setting of another structure at its old default is
    dropped; E170 for one set beside a block that says otherwise (the
    block's own value is taken where both agree), or one the structure lacks."""
    given = {key: value for key, value in flat.items() if value is not None}
    spec = as_spec(structure)
    if not given:
        return spec
    block = _block(spec.name)
    own = _params(block)
    said = [f"{key} = {value!r}" for key, value in given.items()
            if key in own or value != FLAT_SETTINGS.get(key)]  # not those dropped
    if said:
        warn(Warnings.W043.format(settings=", ".join(said)))
    for key, value in given.items():
        if isinstance(structure, StructureSpec):
            if spec.settings.get(key) == value:
                continue  # the block says the same: nothing to choose between
            raise ValueError(Errors.E170.format(setting=key, value=value,
                                                structure=spec.describe(),
                                                why="belongs in the block"))
        if key not in own and value != FLAT_SETTINGS.get(key):
            raise ValueError(Errors.E170.format(setting=key, value=value,
                                                structure=spec.describe(),
                                                why=f"is not one of {spec.name}'s"))
    if isinstance(structure, StructureSpec):
        return spec  # (every flat setting agreed with it)
    return block(**{key: value for key, value in given.items() if key in own})


def move_flat_settings(config: Dict[str, Any]) -> Dict[str, Any]:
    """A component's config with the flat settings (``order``,
    ``max_segment_length`` at its top level, where configs written before
    structures were blocks had them) moved into its ``structure`` block, as
    :func:`migrate_flat_settings` read them, and the null ones dropped: the
    config a pipeline keeps (``nlp.config``, ``spacy init fill-config``, a
    saved config.cfg) has them in the block alone. Run on the config spaCy
    filled for a component the factory has made, so the settings are valid."""
    out = config.copy()  # a thinc Config stays one (spaCy keeps Configs)
    given = {key: value for key in FLAT_SETTINGS
             if (value := out.pop(key, None)) is not None}
    if not given:
        return out
    structure = out.get("structure")
    block = dict(structure) if isinstance(structure, Mapping) else {
        "@structures": _BLOCKS[as_spec(structure).name][0]}
    own = _params(registry.structures.get(block["@structures"]))
    # a flat setting the structure lacks was dropped at its old default
    block.update({key: value for key, value in given.items() if key in own})
    out["structure"] = block
    return out


def migrate_model_settings(spec: StructureSpec, model: Optional[Model]) -> StructureSpec:
    """``spec`` with the structure settings an architecture of an earlier
    release was given (``models/legacy.py``: ``n_relations``,
    ``tree_templates``, ``transition_templates``, ``transition_buckets`` in
    ``spacy-crf.FeatureCRF.v1``), so a pipeline saved with it loads as it was.

    A setting goes into the block where the block leaves it at its default;
    one the structure does not take did nothing then and is dropped (E105
    follows for transition templates, which the model scores). E182 for one
    set, differently, in both the model and the block."""
    legacy = None if model is None else model.attrs.get(LEGACY_STRUCTURE_SETTINGS)
    if not legacy:
        return spec
    block = _block(spec.name)
    params, defaults = _params(block), block().settings
    changes = {}
    for key, value in legacy.items():
        if key not in params:
            continue
        current = spec.settings.get(key, params[key])
        if current == defaults.get(key, params[key]):
            changes[key] = value
        elif value != NO_STRUCTURE_SETTINGS.get(key) and value != current:
            raise ValueError(Errors.E182.format(setting=key, model_value=value,
                                                block_value=current))
    return block(**{**spec.settings, **changes}) if changes else spec


def spec_from_cfg(cfg: Dict[str, Any]) -> StructureSpec:
    """The spec a component's cfg holds (the structure's name and, beside it,
    its settings; a setting a cfg lacks takes its default), checked as the
    config block is (a saved cfg edited by hand fails as a config would)."""
    block = _block(cfg.get("structure"))
    # a setting a cfg lacks was saved before it existed: its default then
    return block(**{key: cfg.get(key, FLAT_SETTINGS.get(key, value))
                     for key, value in _params(block).items()})
