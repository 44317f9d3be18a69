"""The component's word tables, built from a pipeline at ``initialize``.

The spaCy side of ``features/lexicon.py``: which attributes the model's
templates read, which registered feature source provides each, and the
``[initialize.components.NAME]`` settings each source takes; every source the
templates read (or whose settings are given) builds itself
(``spacy_crf.feature_sources``).
"""

from typing import Any, Callable, Dict, Iterable, Optional

from spacy.language import Language
from spacy.schemas import validate_init_settings
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Model

from ..feature_sources import BuildContext, registered_feature_sources, split_settings
from ..features.lexicon import Lexicon
from ..models.featurize import lexicon_attrs, set_lexicon


def set_up_lexicon(model: Model, name: str, vocab: Vocab, nlp: Optional[Language], *,
                   get_examples: Callable[[], Iterable[Example]], target: Any, target_name: str,
                   settings: Dict[str, Any], seed: int = 0) -> Optional[Lexicon]:
    """Build the word tables ``model``'s templates read and hand them to its layers.

    Parameters
    ----------
    model : Model
        The component's model.
    name : str
        The component's name, for messages.
    vocab : Vocab
        The pipeline's vocab.
    nlp : Language, optional
        The pipeline: its language, tokenizer and components.
    get_examples : callable
        Returns the training examples.
    target : Target
        The component's target; ``target_name`` its setting.
    settings : dict
        The feature sources' settings of ``[initialize.components.NAME]``
        (each source's own: ``clusters = PATH``, ``gazetteer = PATH``, ...).
    seed : int
        Seed of what a source draws (the vectors' k-means).

    Returns
    -------
    Lexicon or None
        What the layers got (None where the templates read no word table).

    Raises
    ------
    ValueError
        E242 for a setting no source takes; a source's own error for a setting
        it cannot read, or a table missing where a template needs it.
    """
    wanted = lexicon_attrs(model)
    context = BuildContext(name, vocab, nlp, get_examples, target, target_name,
                           required=tuple(lexicon_attrs(model, with_cluster_templates=False)),
                           seed=seed)
    built = {}
    for source, given in split_settings(name, settings).items():
        cls = registered_feature_sources()[source]
        attrs = [attr for attr in wanted if cls.provides(attr)]
        if not attrs and not given:
            continue
        # spaCy's own check of initialize settings (types, coercion), per source
        given = validate_init_settings(cls.build, given, section="components", name=name,
                                       exclude=("context", "attrs"))
        table = cls.build(context, attrs, **given)
        if table is not None:
            built[source] = table
    lexicon = Lexicon(built) if built else None
    set_lexicon(model, lexicon)
    return lexicon
