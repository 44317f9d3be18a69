"""A training config read as ``spacy train`` reads it: the pipeline, the
resolved ``[training]`` section and its corpus readers, with the corpora's
paths checked. The batch trainer (``spacy_crf.training.fit``) and ``crf-debug-data``
both read their configs here.
"""

from pathlib import Path
from typing import Any, Callable, Dict, Tuple

from spacy.language import Language
from spacy.schemas import ConfigSchemaTraining
from spacy.util import load_model_from_config, registry, resolve_dot_names
from thinc.api import Config, fix_random_seed

from ..errors import Errors


def load_pipeline(config: Config) -> Language:
    """The pipeline of a (not interpolated) config, after fixing the random seed
    of its ``[training]`` section as ``spacy train`` does."""
    seed = config.interpolate().get("training", {}).get("seed")
    if seed is not None:
        fix_random_seed(seed)
    return load_model_from_config(config, auto_fill=True)


def training_corpora(nlp: Language) -> Tuple[Dict[str, Any], Callable, Callable]:
    """The pipeline's resolved ``[training]`` section and its train and dev
    corpus readers (as spaCy's ``init_nlp`` and ``debug data`` resolve them)."""
    config = nlp.config.interpolate()
    T = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    train_corpus, dev_corpus = resolve_dot_names(config, [T["train_corpus"], T["dev_corpus"]])
    return T, train_corpus, dev_corpus


def check_corpora(**corpora: Callable) -> None:
    """E037 for a corpus reader whose path does not exist (spaCy would raise a
    bare FileNotFoundError from deep inside its reader)."""
    for split, corpus in corpora.items():
        path = getattr(corpus, "path", None)
        if path is not None and not Path(path).exists():
            raise ValueError(Errors.E037.format(split=split, path=path))
