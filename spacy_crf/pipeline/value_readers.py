"""Reading what crf_tagger components stored on docs, without their pipeline.

A ``.spacy`` file written with ``DocBin(store_user_data=True)`` keeps the
confidences, n-best lists and ``_.NAME`` labels the components stored
(:mod:`spacy_crf.token_values`), but spaCy reads an extension only once it is
registered (else its E046), and the components register theirs when they are
built. :func:`register_extensions` registers them as building would.
"""

from typing import Iterable

from ..targets.extension import register_extension
from .extensions import register_extensions as register_component_extensions


def register_extensions(*components: str, labels: Iterable[str] = ()) -> None:
    """Register the extensions that read what crf_tagger components stored on
    docs, as building the components does.

    Parameters
    ----------
    *components : str
        Names of the components: each one's own extensions
        (``token._.{name}_confidence``, ...) and the shared ones
        (``token._.crf_confidence``, ...), which are registered also with no
        name given.
    labels : iterable of str
        NAME of each ``_.NAME`` target whose labels the docs hold
        (``token._.NAME``).
    """
    register_component_extensions(*components)
    for attr in labels:
        register_extension(attr)
