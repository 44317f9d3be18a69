"""``spacy-crf.add_labels.v1``: new labels for a trained crf_tagger that ``spacy train`` sources.

``spacy train`` neither initializes a sourced component nor reads its labels
from the corpus: it resumes training it (``nlp.resume_training()``), so a
label the trained model lacks would be unknown (W001) in every batch. This
``[initialize.after_init]`` callback adds them, as ``add_label`` does on a
trained component: the weights grow and predictions stay as they were until
the new labels are learned::

    [components.crf_tagger]
    source = "path/to/trained_pipeline"

    [initialize.after_init]
    @callbacks = "spacy-crf.add_labels.v1"
    component = "crf_tagger"
"""

from itertools import islice
from typing import Callable, List, Optional

from spacy.language import Language
from spacy.util import logger, registry, resolve_dot_names

from ..errors import Errors

#: the examples of a streamed corpus (``[training] max_epochs = -1``) read for
#: labels: as many as spaCy's ``initialize`` reads of one
STREAMED_SAMPLE = 100


@registry.callbacks("spacy-crf.add_labels.v1")
def create_add_labels(component: str = "crf_tagger", labels: Optional[List[str]] = None,
                      from_corpus: bool = True) -> Callable[[Language], Language]:
    """An ``[initialize.after_init]`` callback that adds labels to a trained crf_tagger.

    Parameters
    ----------
    component : str
        The crf_tagger's name in the pipeline.
    labels : list of str, optional
        Labels to add (span targets: types such as ``LOC``, or their tags).
    from_corpus : bool
        Also add the labels of the ``[training] train_corpus`` that the
        component lacks (one pass over the corpus; its first 100 examples
        where it is streamed, ``[training] max_epochs = -1``).

    Returns
    -------
    callable
        ``callback(nlp) -> nlp``; it raises E168 for a component that is no
        crf_tagger of the pipeline, E266 for one in ``[training] frozen_components``.
    """
    extra = list(labels or [])

    def add_labels(nlp: Language) -> Language:
        # get_pipe finds it though spacy train disables the sourced components
        # while it initializes
        from ..pipeline.crf_tagger import CRFTagger

        if component not in nlp.component_names or not isinstance(nlp.get_pipe(component),
                                                                  CRFTagger):
            raise ValueError(Errors.E168.format(name=component, pipeline=nlp.component_names))
        pipe = nlp.get_pipe(component)
        config = nlp.config.interpolate()
        if component in config["training"].get("frozen_components", []):
            raise ValueError(Errors.E266.format(name=component))
        wanted = list(extra)
        if from_corpus:
            corpus = resolve_dot_names(config, [config["training"]["train_corpus"]])[0]
            # a streamed corpus (max_epochs = -1) may never end: its first
            # examples, as spaCy's initialize reads them
            limit = STREAMED_SAMPLE if config["training"].get("max_epochs") == -1 else None
            found = set()
            for eg in islice(corpus(nlp), limit):
                found.update(pipe.target.label_strings(eg.reference))
            # a span target's tags as their types: one growth a type, logged as types
            wanted.extend(pipe.target.label_data(pipe.target.order_labels(found)))
        added = [label for label in wanted if pipe.add_label(label)]
        if added:
            logger.info("%s: added labels %s", component, added)
        return nlp

    return add_labels
