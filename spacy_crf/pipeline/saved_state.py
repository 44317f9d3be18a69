"""Saving and loading a crf_tagger: its cfg and its model's weights.

A save writes under temporary names and renames when complete, so an
interrupted save never leaves a loadable-but-wrong model behind. A load reads
and checks everything (the cfg with the factory's own E-codes, the weights,
the word tables, the label count) on a copy before it swaps anything in, so a
failed load raises a clear error and leaves the component as it was.
"""

import copy
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional, Union

import srsly
from spacy.util import ensure_path
from spacy.vocab import Vocab
from thinc.api import Model

from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_SENTENCE
from ..models.architectures import set_n_labels
from ..models.label_parts import check_label_parts, forget_label_parts
from ..models.featurize import restore_lexicon, set_owner, set_sequence
from ..models.serialize import NonFiniteWeights, model_from_bytes, model_to_bytes
from ..structures import spec_from_cfg
from ..targets import make_target
from .settings import SETTINGS, check_settings

#: settings that do not change the weights: a loaded component keeps its own,
#: those of nlp.config (overrides given to spacy.load(..., config=...) included)
RUNTIME_SETTINGS = ("store_confidence", "n_best", "keep_existing", "sequence")


def to_disk(pipe, path: Union[str, Path], exclude: Iterable[str]) -> None:
    """Write ``pipe``'s cfg and model into the directory ``path``."""
    path = ensure_path(path)
    path.mkdir(parents=True, exist_ok=True)
    pipe.use_prediction_weights()
    cfg_tmp, model_tmp = path / "cfg.tmp", path / "model.tmp"
    if "cfg" not in exclude:
        srsly.write_json(cfg_tmp, pipe.cfg)
    if "model" not in exclude:
        model_tmp.write_bytes(model_to_bytes(pipe.model))
    if "cfg" not in exclude:
        cfg_tmp.replace(path / "cfg")
    if "model" not in exclude:
        model_tmp.replace(path / "model")


def from_disk(pipe, path: Union[str, Path], exclude: Iterable[str]):
    """Load ``pipe`` from a directory written by :func:`to_disk`; a directory
    saved without its cfg (``exclude=["cfg"]``) keeps the component's own, as
    spaCy's pipes do (its weights must fit it, E186)."""
    path = ensure_path(path)
    cfg = model_bytes = None  # None: excluded, this component's own is kept
    if "cfg" not in exclude and (path / "cfg").exists():
        try:
            cfg = srsly.read_json(path / "cfg")
        except (OSError, ValueError) as err:
            raise ValueError(Errors.E010.format(name=pipe.name, path=path / "cfg", why=err)) from err
    if "model" not in exclude:
        try:
            model_bytes = (path / "model").read_bytes()
        except OSError as err:
            raise ValueError(Errors.E010.format(name=pipe.name, path=path / "model", why=err)) from err
    return load(pipe, cfg, model_bytes, where=str(path / "model"))


def to_bytes(pipe, exclude: Iterable[str]) -> bytes:
    """``pipe``'s cfg and model as msgpack, less the parts named in ``exclude``."""
    msg: Dict[str, Any] = {}
    pipe.use_prediction_weights()
    if "cfg" not in exclude:
        msg["cfg"] = pipe.cfg
    if "model" not in exclude:
        msg["model"] = model_to_bytes(pipe.model)
    return srsly.msgpack_dumps(msg)


def from_bytes(pipe, bytes_data: bytes, exclude: Iterable[str]):
    """Load ``pipe`` from :func:`to_bytes` output; a part it lacks (written
    with ``exclude``) is kept as the component has it, as spaCy's pipes do."""
    try:
        msg = srsly.msgpack_loads(bytes_data)
        if not isinstance(msg, dict):
            raise TypeError(f"a {type(msg).__name__}, not a dict of parts")
        cfg = None if "cfg" in exclude else msg.get("cfg")
        model_bytes = None if "model" in exclude else msg.get("model")
    except Exception as err:  # msgpack raises several types for corrupt data
        raise ValueError(Errors.E010.format(name=pipe.name, path="bytes", why=err)) from err
    return load(pipe, cfg, model_bytes, where="bytes")


def load(pipe, cfg: Optional[Dict[str, Any]], model_bytes: Optional[bytes], where: str):
    """Swap a saved cfg and model into ``pipe`` (``None``: excluded, keep the
    component's own), after checking everything: a failed load changes nothing."""
    own_cfg = cfg is None  # weights that do not fit are then E186: the cfg is the likely cause
    cfg = pipe.cfg if own_cfg else checked_cfg(pipe, cfg, where)
    target = make_target(cfg["target"], cfg["scheme"])
    try:
        target.set_labels(cfg["labels"], pipe.vocab)  # E061 for a tag outside the scheme
    except ValueError as err:
        raise ValueError(Errors.E162.format(name=pipe.name, key="labels", value=cfg["labels"],
                                            why=err)) from err
    n_labels = len(cfg["labels"])
    model = pipe.model
    if model_bytes is not None:
        model = copy.deepcopy(pipe.model)
        if n_labels:  # an uninitialized component keeps its label sizes unset
            set_n_labels(model, n_labels)
        # the file says whether its tables factor over label parts (thinc loads
        # attrs); one saved before tables could has a column per label
        forget_label_parts(model)
        try:
            model_from_bytes(model, model_bytes)
            check_label_parts(model, [target.label_parts(label) for label in cfg["labels"]])
            restore_lexicon(model)  # the saved word tables, and the templates they add
            set_owner(model, pipe.name)
        except NonFiniteWeights as err:
            raise ValueError(Errors.E165.format(name=pipe.name, path=where, why=err)) from err
        except Exception as err:
            if own_cfg:
                raise ValueError(_unfit(pipe, where, err)) from err
            raise ValueError(Errors.E010.format(name=pipe.name, path=where, why=err)) from err
    for node in model.walk():
        if (node.name == "crf_potentials" and node.has_dim("nO")
                and node.get_dim("nO") not in (None, n_labels)):
            found = node.get_dim("nO")
            if own_cfg:
                raise ValueError(_unfit(pipe, where, f"they hold {found} labels"))
            raise ValueError(Errors.E011.format(name=pipe.name, found=found, expected=n_labels))
    if model is not pipe.model:
        # new weights: the averages of the old ones go (a copy's layers keep
        # their ids, so old averages would match). A kept model keeps its
        # averages and iterate: dropping the iterate while the model showed
        # the averages would leave them owing the iterate's L1 penalty
        pipe._averages.clear()
    pipe.model, pipe.target = model, target
    pipe.cfg = cfg
    set_sequence(pipe.model, pipe.cfg["sequence"])
    pipe._set_labels(pipe.cfg["labels"])
    return pipe


def _unfit(pipe, where: str, why: Any) -> str:
    """E186: saved weights that do not fit the cfg the component kept (the
    data had none, or it was excluded)."""
    return Errors.E186.format(name=pipe.name, path=where, n_labels=len(pipe.cfg["labels"]),
                              why=why)


def checked_cfg(pipe, saved: Any, where: str) -> Dict[str, Any]:
    """The cfg a load swaps in: the saved one, checked with the factory's
    E-codes, with the component's own runtime settings (RUNTIME_SETTINGS)."""
    if not isinstance(saved, dict) or not isinstance(saved.get("labels"), list):
        raise ValueError(Errors.E010.format(name=pipe.name, path=where, why="cfg has no label list"))
    if saved.get("target", pipe.cfg["target"]) != pipe.cfg["target"]:
        raise ValueError(Errors.E010.format(
            name=pipe.name, path=where,
            why=f"it was trained for target '{saved.get('target')}', this component has "
                f"'{pipe.cfg['target']}'"))
    labels = saved["labels"]
    if not all(isinstance(label, str) for label in labels) or len(set(labels)) < len(labels):
        raise ValueError(Errors.E162.format(name=pipe.name, key="labels", value=labels,
                                            why="labels must be distinct strings"))
    unseen = saved.get("unseen_labels", [])  # none in a model saved before growing existed
    if not isinstance(unseen, list) or not all(label in labels for label in unseen):
        raise ValueError(Errors.E162.format(name=pipe.name, key="unseen_labels", value=unseen,
                                            why="they must be some of its labels"))
    cfg = {**pipe.cfg, **saved, "unseen_labels": list(unseen)}
    check_settings(pipe.model, pipe.name, **settings_of(cfg))
    for key in RUNTIME_SETTINGS:
        cfg[key] = pipe.cfg[key]
    if "sequence" not in saved:
        # saved before the sequence setting existed: it was trained on sentences
        cfg["sequence"] = SEQUENCE_SENTENCE
    # this component's own runtime settings must suit the saved structure too
    check_settings(pipe.model, pipe.name, **settings_of(cfg))
    return cfg


def settings_of(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The settings ``check_settings`` takes, from a component's cfg."""
    return {**{key: cfg[key] for key in SETTINGS}, "structure": spec_from_cfg(cfg)}


def rebuild(cls: type, vocab: Vocab, model: Model, name: str, cfg: Dict[str, Any],
            scorer: Optional[Callable]):
    """A component of class ``cls`` made again from its pickled parts (through
    ``__init__``, which registers the token extensions in a worker process)."""
    pipe = cls(vocab, model, name, target=cfg["target"], structure=spec_from_cfg(cfg),
               sequence=cfg.get("sequence", SEQUENCE_SENTENCE),
               scheme=cfg.get("scheme", "BILUO"),
               keep_existing=cfg.get("keep_existing"),
               store_confidence=cfg.get("store_confidence", False),
               n_best=cfg.get("n_best", 0), loss=cfg.get("loss", "nll"), scorer=scorer)
    pipe.cfg.update(cfg)
    pipe._set_labels(pipe.cfg["labels"])
    return pipe
