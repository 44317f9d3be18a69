"""The checks of a crf_tagger's settings, shared by the factory and a load.

Each bad setting gets the error the factory gives for it, so a saved cfg that
was edited by hand, or a config typo, fails the same way wherever it is read.
"""

from typing import Optional, Tuple

from thinc.api import Model

from .. import schemes
from ..errors import Errors
from ..features.doc_arrays import SEQUENCES
from ..models.architectures import has_token_transitions
from ..models.hmm import STRUCTURES
from ..losses import get_loss
from ..structures import CRFStructure, StructureSpec, strategy_of
from ..targets import Target, make_target
from ..util import is_count

#: the settings check_settings takes: the factory's, less the model and the scorer
SETTINGS = ("target", "structure", "sequence", "scheme", "keep_existing", "store_confidence",
            "n_best", "loss")


def resolve_structure(spec: StructureSpec, model: Optional[Model], target: str,
                      scheme: str) -> StructureSpec:
    """``spec`` with the settings its config left null chosen for the component
    (``StructureSpec.by_component``): from whether its target is a span target
    and the structures its model scores (None: every one). A spec without such
    settings is returned as it is; a bad target or scheme is left to
    :func:`check_settings`."""
    if spec.by_component is None:
        return spec
    try:
        is_span_target = make_target(target, scheme).is_span_target
    except ValueError:
        return spec
    return spec.by_component(is_span_target,
                             model.attrs.get(STRUCTURES) if model is not None else None)


def check_settings(model: Optional[Model], name: str, *, target: str, structure: StructureSpec,
                   sequence: str, scheme: str, keep_existing: Optional[bool],
                   store_confidence: bool, n_best: int, loss: str) -> Tuple[CRFStructure, Target]:
    """Check a component's settings, as the factory and a load do (same E-codes).

    ``structure`` is checked by its own block (``structures.config``); here
    only how it goes with the model and the other settings.

    Returns
    -------
    (CRFStructure, Target)
        The strategy that runs the structure, and the target the settings name.

    Raises
    ------
    ValueError
        The first bad setting, with the error the factory gives for it.
    """
    # E105 for transition templates on anything but a chain or a tree
    crf_structure = strategy_of(structure, has_token_transitions(model))
    get_loss(loss)  # E040 for an unknown name
    if loss != "nll" and not crf_structure.exact_map:
        raise ValueError(Errors.E113.format(structure=structure.name, loss=loss))
    if not isinstance(sequence, str) or sequence not in SEQUENCES:
        raise ValueError(Errors.E112.format(value=sequence))
    schemes.check_scheme(scheme)
    if keep_existing is not None and not isinstance(keep_existing, bool):
        raise ValueError(Errors.E163.format(value=keep_existing))
    if not is_count(n_best, 0):
        raise ValueError(Errors.E019.format(value=n_best))
    if n_best and not crf_structure.supports_n_best:
        raise ValueError(Errors.E019.format(value=f"{n_best} with structure {structure.describe()}"))
    scorable = model.attrs.get(STRUCTURES) if model is not None else None
    if scorable is not None and crf_structure.name not in scorable:
        raise ValueError(Errors.E103.format(model=model.name, allowed=list(scorable),
                                            structure=structure.describe()))
    crf_target = make_target(target, scheme)
    if crf_target.is_span_target and not crf_structure.supports_spans:
        raise ValueError(Errors.E018.format(target=target))
    if crf_structure.needs_span_target and not crf_target.is_span_target:
        raise ValueError(Errors.E108.format(name=name, target=target))
    if (store_confidence and crf_target.is_span_target
            and not crf_structure.supports_span_probabilities):
        raise ValueError(Errors.E096.format(target=target, structure=crf_structure.name))
    return crf_structure, crf_target
