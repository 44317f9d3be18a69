"""Saving and loading a crf_tagger: its cfg and its model's weights.

A save writes under temporary names and renames when complete, so an
interrupted save never leaves a loadable-but-wrong model behind. A load reads
and checks everything (the cfg with the factory's own E-codes, the weights,
the word tables, the label count) on a copy before it swaps anything in, so a
failed load raises a clear error and leaves the component as it was: the
component's :class:`~.state.ComponentState` swaps in what was checked.
"""

import copy
import dataclasses
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Union

import srsly
from spacy.util import ensure_path

from ..errors import Errors, Warnings, warn
from ..features.doc_arrays import SEQUENCE_SENTENCE
from ..models.architectures import set_n_labels
from ..models.label_parts import check_label_parts, forget_label_parts
from ..models.featurize import built_templates, other_templates, restore_lexicon, set_owner
from ..models.serialize import NonFiniteWeights, model_from_bytes, model_to_bytes
from ..targets import make_target
from ..structures import settings_left_behind, spec_from_cfg
from .settings import check_settings, settings_of
from .state import ComponentState

#: settings that do not change the weights: a loaded component keeps its own,
#: those of nlp.config (overrides given to spacy.load(..., config=...) included)
RUNTIME_SETTINGS = ("store_confidence", "n_best", "keep_existing", "sequence", "loss")


def to_disk(state: ComponentState, path: Union[str, Path], exclude: Iterable[str]) -> None:
    """Write the cfg and the (averaged) weights of ``state`` into the directory ``path``."""
    path = ensure_path(path)
    path.mkdir(parents=True, exist_ok=True)
    state.averages.show_averages(state.model)
    cfg_tmp, model_tmp = path / "cfg.tmp", path / "model.tmp"
    if "cfg" not in exclude:
        srsly.write_json(cfg_tmp, state.cfg)
    if "model" not in exclude:
        model_tmp.write_bytes(model_to_bytes(state.model))
    if "cfg" not in exclude:
        cfg_tmp.replace(path / "cfg")
    if "model" not in exclude:
        model_tmp.replace(path / "model")


def from_disk(state: ComponentState, path: Union[str, Path], exclude: Iterable[str]) -> None:
    """Load ``state`` from a directory written by :func:`to_disk`; a directory
    saved without its cfg (``exclude=["cfg"]``) keeps the component's own, as
    spaCy's pipes do (its weights must fit it, E186)."""
    path = ensure_path(path)
    cfg = model_bytes = None  # None: excluded, this component's own is kept
    if "cfg" not in exclude and (path / "cfg").exists():
        try:
            cfg = _cfg_object(srsly.read_json(path / "cfg"))
        except (OSError, ValueError) as err:
            raise ValueError(Errors.E010.format(name=state.name, path=path / "cfg",
                                                why=err)) from err
    if "model" not in exclude:
        try:
            model_bytes = (path / "model").read_bytes()
        except OSError as err:
            raise ValueError(Errors.E010.format(name=state.name, path=path / "model",
                                                why=err)) from err
    load(state, cfg, model_bytes, where=str(path / "model"))


def _cfg_object(cfg: Any) -> Dict[str, Any]:
    """``cfg`` as read, if it is an object; ValueError otherwise (a ``null``
    there was taken for a cfg left out, and the component's own kept)."""
    if not isinstance(cfg, dict):
        raise ValueError(f"the cfg is {cfg!r} ({type(cfg).__name__}), not an object of settings")
    return cfg


def to_bytes(state: ComponentState, exclude: Iterable[str]) -> bytes:
    """The cfg and the (averaged) weights of ``state`` as msgpack, less the
    parts named in ``exclude``."""
    msg: Dict[str, Any] = {}
    state.averages.show_averages(state.model)
    if "cfg" not in exclude:
        msg["cfg"] = state.cfg
    if "model" not in exclude:
        msg["model"] = model_to_bytes(state.model)
    return srsly.msgpack_dumps(msg)


def from_bytes(state: ComponentState, bytes_data: bytes, exclude: Iterable[str]) -> None:
    """Load ``state`` from :func:`to_bytes` output; a part it lacks (written
    with ``exclude``) is kept as the component has it, as spaCy's pipes do."""
    try:
        msg = srsly.msgpack_loads(bytes_data)
        if not isinstance(msg, dict):
            raise TypeError(f"a {type(msg).__name__}, not a dict of parts")
        cfg = None if "cfg" in exclude or "cfg" not in msg else _cfg_object(msg["cfg"])
        model_bytes = None if "model" in exclude else msg.get("model")
    except Exception as err:  # msgpack raises several types for corrupt data
        raise ValueError(Errors.E010.format(name=state.name, path="bytes", why=err)) from err
    load(state, cfg, model_bytes, where="bytes")


def load(state: ComponentState, cfg: Optional[Dict[str, Any]], model_bytes: Optional[bytes],
         where: str) -> None:
    """Swap a saved cfg and model into ``state`` (``None``: excluded, keep the
    component's own), after checking everything: a failed load changes nothing."""
    own_cfg = cfg is None  # weights that do not fit are then E186: the cfg is the likely cause
    cfg = state.cfg if own_cfg else checked_cfg(state, cfg, where)
    other_structure = None if own_cfg else _other_structure(state, cfg)
    target = make_target(cfg["target"], cfg["scheme"])
    try:
        target.set_labels(cfg["labels"], state.vocab)  # E061 for a tag outside the scheme
    except ValueError as err:
        raise ValueError(Errors.E162.format(name=state.name, key="labels", value=cfg["labels"],
                                            why=err)) from err
    n_labels = len(cfg["labels"])
    model = state.model
    if model_bytes is not None:
        model = copy.deepcopy(state.model)
        if n_labels:  # an uninitialized component keeps its label sizes unset
            set_n_labels(model, n_labels)
        # the file says whether its tables factor over label parts (thinc loads
        # attrs); one saved before tables could has a column per label
        forget_label_parts(model)
        config_templates = built_templates(model)
        try:
            model = model_from_bytes(model, model_bytes)
        except NonFiniteWeights as err:
            raise ValueError(Errors.E165.format(name=state.name, path=where, why=err)) from err
        except Exception as err:
            raise ValueError(_not_loaded(state, where, err, own_cfg)) from err
        templates_error = other_templates(model, config_templates, state.name)  # E267
        if templates_error is not None:
            raise ValueError(templates_error)
        try:
            check_label_parts(model, [target.label_parts(label) for label in cfg["labels"]])
            restore_lexicon(model)  # the saved word tables, and the templates they add
            set_owner(model, state.name)
        except Exception as err:
            raise ValueError(_not_loaded(state, where, err, own_cfg)) from err
    for node in model.walk():
        if (node.name == "crf_potentials" and node.has_dim("nO")
                and node.get_dim("nO") not in (None, n_labels)):
            found = node.get_dim("nO")
            if own_cfg:
                raise ValueError(_unfit(state, where, f"they hold {found} labels"))
            raise ValueError(Errors.E011.format(name=state.name, found=found, expected=n_labels))
    state.swap(cfg, model, target)
    if other_structure:
        warn(other_structure)


def _not_loaded(state: ComponentState, where: str, why: Any, own_cfg: bool) -> str:
    """E186 (:func:`_unfit`) where the component kept its own cfg, else E010."""
    if own_cfg:
        return _unfit(state, where, why)
    return Errors.E010.format(name=state.name, path=where, why=why)


def _unfit(state: ComponentState, where: str, why: Any) -> str:
    """E186: saved weights that do not fit the cfg the component kept (the
    data had none, or it was excluded)."""
    return Errors.E186.format(name=state.name, path=where, n_labels=len(state.cfg["labels"]),
                              why=why)


def _same_as_saved(state: ComponentState, saved: Dict[str, Any], where: str, key: str) -> None:
    """E252 where the component's ``key`` is not the one its weights were saved with."""
    if key in saved and saved[key] != state.cfg[key]:
        raise ValueError(Errors.E252.format(name=state.name, path=where, key=key,
                                            saved=saved[key], given=state.cfg[key]))


def _other_structure(state: ComponentState, cfg: Dict[str, Any]) -> Optional[str]:
    """W051 where the component's config names a structure, or structure
    settings, other than those of the ``cfg`` it is loaded with (the saved
    one's): those run, as its weights were trained with them. Not where the
    config leaves the structure to the labels (a span target's ``order =
    null``). Said once the load has succeeded (a model the config's structure
    shapes otherwise fails to load: E010)."""
    given, kept = state.resolved.spec, spec_from_cfg(cfg)
    if state.structure_by_labels is not None or given.cfg() == kept.cfg():
        return None
    if given.strategy_key == kept.strategy_key:
        # settings that run alike are the same structure (a semi-Markov
        # max_segment_length = 0 runs as the length initialize found)
        runs = state.resolved.strategy.settings_run
        given, kept = (dataclasses.replace(spec, settings=runs(spec.settings, cfg))
                       for spec in (given, kept))
        if given.cfg() == kept.cfg():
            return None
    return Warnings.W051.format(name=state.name, given=given.describe(), saved=kept.describe())


def checked_cfg(state: ComponentState, saved: Any, where: str) -> Dict[str, Any]:
    """The cfg a load swaps in: the saved one, checked with the factory's
    E-codes, with the component's own runtime settings (RUNTIME_SETTINGS)."""
    if not isinstance(saved, dict) or not isinstance(saved.get("labels"), list):
        raise ValueError(Errors.E010.format(name=state.name, path=where,
                                            why="cfg has no label list"))
    labels = saved["labels"]
    if not all(isinstance(label, str) for label in labels) or len(set(labels)) < len(labels):
        raise ValueError(Errors.E162.format(name=state.name, key="labels", value=labels,
                                            why="labels must be distinct strings"))
    unseen = saved.get("unseen_labels", [])  # none in a model saved before growing existed
    if not isinstance(unseen, list) or not all(label in labels for label in unseen):
        raise ValueError(Errors.E162.format(name=state.name, key="unseen_labels", value=unseen,
                                            why="they must be some of its labels"))
    # what the weights mean: the config it is loaded with must agree (an
    # override to spacy.load, an edited config.cfg, another component's files);
    # the target first, the scheme once the saved one is known to be valid
    _same_as_saved(state, saved, where, "target")
    cfg = {**state.cfg, **saved, "unseen_labels": list(unseen)}
    check_settings(state.model, state.name, **settings_of(cfg))
    for key in settings_left_behind(state.cfg, cfg["structure"]) - set(saved):
        del cfg[key]  # (the config's chain order, where its null chose a pruned chain)
    if state.target.is_span_target:
        _same_as_saved(state, saved, where, "scheme")
    for key in RUNTIME_SETTINGS:
        cfg[key] = state.cfg[key]
    if "sequence" not in saved:
        # saved before the sequence setting existed: it was trained on sentences
        cfg["sequence"] = SEQUENCE_SENTENCE
    # this component's own runtime settings must suit the saved structure too
    check_settings(state.model, state.name, **settings_of(cfg))
    return cfg

