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
from ..objectives import get_objective
from ..structures import CRFStructure, get_structure, structure_key
from ..structures.semi_markov import DEFAULT_CAP as DEFAULT_SEGMENT_CAP
from ..targets import Target, make_target
from ..util import is_count

#: the longest max_segment_length accepted: the semi-Markov CRF's cost grows with it
#: at every token, and spans longer than this are not what it is for
MAX_SEGMENT_LENGTH = 100


#: the settings check_settings takes: the factory's, less the model and the scorer
SETTINGS = ("target", "structure", "order", "max_segment_length", "sequence", "scheme",
            "keep_existing", "store_confidence", "n_best", "loss")


def check_settings(model: Optional[Model], name: str, *, target: str, structure: str, order: int,
                   max_segment_length: int, sequence: str, scheme: str,
                   keep_existing: Optional[bool], store_confidence: bool, n_best: int,
                   loss: str) -> Tuple[CRFStructure, Target]:
    """Check a component's settings, as the factory and a load do (same E-codes).

    Returns
    -------
    (CRFStructure, Target)
        The structure and the target the settings name.

    Raises
    ------
    ValueError
        The first bad setting, with the error the factory gives for it.
    """
    if not isinstance(structure, str):  # a saved cfg's value may be anything
        get_structure(repr(structure))  # E012, naming the structures there are
    # E012 names the known structures, E094 the orders above 1 they have
    # E105 for transition templates on anything but a first-order chain
    crf_structure = get_structure(structure_key(structure, order, has_token_transitions(model)))
    get_objective(loss)  # E040 for an unknown name
    if loss != "nll" and not crf_structure.exact_map:
        raise ValueError(Errors.E113.format(structure=structure, loss=loss))
    _check_max_segment_length(max_segment_length, crf_structure)
    if not isinstance(sequence, str) or sequence not in SEQUENCES:
        raise ValueError(Errors.E112.format(value=sequence))
    schemes.check_scheme(scheme)
    if keep_existing is not None and not isinstance(keep_existing, bool):
        raise ValueError(Errors.E163.format(value=keep_existing))
    if not is_count(n_best, 0):
        raise ValueError(Errors.E019.format(value=n_best))
    if n_best and not crf_structure.supports_n_best:
        raise ValueError(Errors.E019.format(value=f"{n_best} with structure '{structure}'"))
    scorable = model.attrs.get(STRUCTURES) if model is not None else None
    if scorable is not None and crf_structure.name not in scorable:
        raise ValueError(Errors.E103.format(model=model.name, allowed=list(scorable),
                                            structure=structure,
                                            order=f", order = {order}" if order != 1 else ""))
    crf_target = make_target(target, scheme)
    if crf_target.is_span_target and not crf_structure.supports_spans:
        raise ValueError(Errors.E018.format(target=target))
    if crf_structure.needs_span_target and not crf_target.is_span_target:
        raise ValueError(Errors.E108.format(name=name, target=target))
    if (store_confidence and crf_target.is_span_target
            and not crf_structure.supports_span_probabilities):
        raise ValueError(Errors.E096.format(target=target, structure=crf_structure.name))
    return crf_structure, crf_target


def _check_max_segment_length(value: int, structure: CRFStructure) -> None:
    """E109 unless an int >= 0, and 0 with a structure that has no segments;
    E166 above :data:`MAX_SEGMENT_LENGTH`."""
    ok = not isinstance(value, bool) and isinstance(value, int) and value >= 0
    if not ok or (value and not structure.has_segments):
        raise ValueError(Errors.E109.format(value=value, cap=DEFAULT_SEGMENT_CAP,
                                            structure=structure.name))
    if value > MAX_SEGMENT_LENGTH:
        raise ValueError(Errors.E166.format(value=value, most=MAX_SEGMENT_LENGTH,
                                            cap=DEFAULT_SEGMENT_CAP))


