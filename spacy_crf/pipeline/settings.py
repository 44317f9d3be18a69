"""The checks of a crf_tagger's settings, shared by the factory and a load.

Each bad setting gets the error the factory gives for it, so a saved cfg that
was edited by hand, or a config typo, fails the same way wherever it is read.
"""

from typing import Any, Dict, Optional, Sequence, Tuple

from thinc.api import Model

from .. import schemes
from ..errors import Errors
from ..features.doc_arrays import SEQUENCE_DOC, SEQUENCES
from ..models.hooks import scorable_structures
from ..models.token_transitions import has_token_transitions
from ..losses import get_loss
from ..structures import (CRFStructure, ResolvedStructure, StructureSpec, spec_from_cfg,
                          strategy_of)
from ..targets import Target, make_target
from ..util import is_count

#: the layers that make a model's output CRF scores (the feature and
#: neural CRFs' label interactions, the HMM's tables)
CRF_OUTPUT_LAYERS = ("crf_potentials", "hmm")
#: the most labellings ``n_best`` asks for a sequence: each costs the k-best
#: Viterbi a score and a back-pointer per token and label, and a list entry
#: per token (10**9 was accepted, then 216 GiB asked for at the first doc)
MAX_N_BEST = 1000

#: the settings check_settings takes: the factory's, less the model and the scorer
SETTINGS = ("target", "structure", "sequence", "scheme", "keep_existing", "store_confidence",
            "n_best", "loss")


def resolve_structure(spec: StructureSpec, model: Optional[Model], target: str,
                      scheme: str) -> StructureSpec:
    """``spec`` with the settings its config left null chosen for the component
    (``StructureSpec.by_component``): from its target (a span target? labels
    by the hundred?) and the structures its model scores (None: every one). A spec without such
    settings is returned as it is; a bad target or scheme is left to
    :func:`check_settings`."""
    if spec.by_component is None:
        return spec
    try:
        made = make_target(target, scheme)
    except ValueError:
        return spec
    return spec.by_component(made, scorable_structures(model))


def _structure_for(scorable: Sequence[str]) -> str:
    """What E103 tells a user to set for a model that scores only ``scorable``."""
    if scorable[0] == "chain":  # (order 2 runs as "chain_order2": the HMM's case)
        return ("a first-order chain (spacy-crf.Chain.v1 with order = 1, or the default "
                "order = null, which picks 1 for such a model)")
    return f"structure = \"{scorable[0]}\""


def check_settings(model: Optional[Model], name: str, *, target: str, structure: StructureSpec,
                   sequence: str, scheme: str, keep_existing: Optional[bool],
                   store_confidence: bool, n_best: int, loss: str) -> Tuple[CRFStructure, Target]:
    """Check a component's settings, as the factory and a load do (same E-codes).

    ``structure``'s own settings are checked by its block (``structures.config``),
    what it can run with the others by the structure (``check_settings``).

    Returns
    -------
    (CRFStructure, Target)
        The strategy that runs the structure, and the target the settings name.

    Raises
    ------
    ValueError
        The first bad setting, with the error the factory gives for it.
    """
    if model is not None and not any(node.name in CRF_OUTPUT_LAYERS for node in model.walk()):
        shown = model.name if len(model.name) <= 60 else model.name[:57] + "..."
        raise ValueError(Errors.E268.format(name=name, model=shown))
    # E105 for transition templates on anything but a chain or a tree
    crf_structure = strategy_of(structure, has_token_transitions(model))
    get_loss(loss)  # E040 for an unknown name
    if not isinstance(sequence, str) or sequence not in SEQUENCES:
        raise ValueError(Errors.E112.format(value=sequence))
    schemes.check_scheme(scheme)
    if keep_existing is not None and not isinstance(keep_existing, bool):
        raise ValueError(Errors.E163.format(value=keep_existing))
    if not is_count(n_best, 0) or n_best > MAX_N_BEST:
        raise ValueError(Errors.E019.format(value=repr(n_best)))
    scorable = scorable_structures(model)
    if scorable is not None and structure.settings.get("transition_templates"):
        # (a model that scores only some structures is no FeatureCRF)
        raise ValueError(Errors.E183.format(model=model.name))
    if scorable is not None and crf_structure.name not in scorable:
        raise ValueError(Errors.E103.format(model=model.name, allowed=list(scorable),
                                            structure=structure.describe(),
                                            fix=_structure_for(scorable)))
    crf_target = make_target(target, scheme)
    if crf_target.whole_docs and sequence != SEQUENCE_DOC:
        raise ValueError(Errors.E212.format(name=name, target=target,
                                            what=f"sequence = \"{sequence}\""))
    if crf_target.whole_docs and (crf_structure.name == "doc_chain" or crf_structure.needs_parse):
        # (a doc chain's moves into a sentence are told apart by the boundaries the
        # doc has; a tree is one per sentence of the parse)
        raise ValueError(Errors.E212.format(name=name, target=target,
                                            what=f"structure {structure.describe()}"))
    # what the structure can run: its loss, n-best, span targets and confidences
    crf_structure.check_settings(structure, name, crf_target, loss=loss, n_best=n_best,
                                 store_confidence=store_confidence)
    return crf_structure, crf_target


def check_structure_runs(model: Model, name: str, target: Target, cfg: Dict[str, Any]) -> None:
    """The settings of ``cfg`` that the structure it names (the one its labels
    chose at initialize, which add_pipe could not know) cannot run: E019,
    E096, as the factory refuses them for a structure it is given."""
    chosen = ResolvedStructure.of(cfg, has_token_transitions(model))
    chosen.strategy.check_settings(chosen.spec, name, target, loss=cfg["loss"],
                                   n_best=cfg["n_best"], store_confidence=cfg["store_confidence"])


def settings_of(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The settings ``check_settings`` takes (and the factory), from a component's cfg."""
    return {**{key: cfg[key] for key in SETTINGS}, "structure": spec_from_cfg(cfg)}

def initial_cfg(spec: StructureSpec, *, target: str, sequence: str, scheme: str,
                keep_existing: Optional[bool], store_confidence: bool, n_best: int,
                loss: str) -> Dict[str, Any]:
    """A new component's cfg from its (checked) settings, before ``initialize``."""
    return {
        "labels": [],
        "target": target,
        # the structure's name and its own settings (saved as components saved
        # before structures were config blocks saved them)
        **spec.cfg(),
        "sequence": sequence,
        "scheme": scheme,
        "keep_existing": keep_existing,
        "store_confidence": bool(store_confidence),
        "n_best": n_best,
        "loss": loss,
        "relations": [],
        # labels added to the trained model that no update has had in gold:
        # never predicted until then (spacy_crf.unseen_labels)
        "unseen_labels": [],
    }
