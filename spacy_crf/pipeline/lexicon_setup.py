"""The component's word tables, gathered from a pipeline at ``initialize``.

The spaCy side of ``features/lexicon.py``: which attributes the model's
templates read, where the Brown clusters come from (a file, the vocab's
lookups, spacy-lookups-data), the pipeline's vectors, and a gazetteer from a
file or an ``entity_ruler``, tokenized as the pipeline tokenizes.
"""

import warnings
from pathlib import Path
from typing import Any, Iterable, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..errors import Errors, Warnings
from ..features.brown_clusters import find_cluster_table
from ..features.gazetteer import (EVERY_FOLD, Gazetteer, read_gazetteer, ruler_phrases,
                                  tokenized, training_phrases)
from ..features.lexicon import Lexicon, build_lexicon
from ..features.templates import GAZETTEER, cluster_bits
from ..models.featurize import has_cluster_templates, lexicon_attrs, set_lexicon

PathLike = Union[str, Path]


def set_up_lexicon(model: Model, name: str, vocab: Vocab, nlp: Optional[Language], *,
                   clusters: Optional[PathLike] = None, gazetteer: Optional[PathLike] = None,
                   gazetteer_case_sensitive: bool = False,
                   gazetteer_ruler: Optional[str] = None,
                   gazetteer_spans: Optional[Iterable[Tuple[Doc, Iterable[Any]]]] = None,
                   seed: int = 0) -> Optional[Lexicon]:
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
    clusters : str or Path, optional
        A Brown cluster file of one's own (``paths`` or a JSON table).
    gazetteer : str or Path, optional
        A gazetteer file (see ``features/gazetteer.py``).
    gazetteer_case_sensitive : bool
        Match the gazetteer's phrases with their case.
    gazetteer_ruler : str, optional
        The name of an ``entity_ruler`` of the pipeline whose phrase patterns
        are (also) the gazetteer.
    gazetteer_spans : iterable of (Doc, iterable of Span), optional
        Training documents and their gold spans, which (also) make the
        gazetteer, each phrase held out of its own documents while training
        (``gazetteer_from_training``; ``features/gazetteer.py``).
    seed : int
        Seed of the vectors' k-means.

    Returns
    -------
    Lexicon or None
        What the layers got (None where the templates read no word table).

    Raises
    ------
    ValueError
        A source that is given but unreadable, or missing where a template needs it.
    """
    attrs = lexicon_attrs(model)
    given_gazetteer = (gazetteer is not None or gazetteer_ruler is not None
                       or gazetteer_spans is not None)
    if given_gazetteer and GAZETTEER not in attrs:
        raise ValueError(Errors.E125.format(
            why=f"'{name}' was given a gazetteer but no feature template reads it: add "
                f"templates such as \"GAZETTEER[-1..1]\" to the model's templates"))
    if not attrs:
        set_lexicon(model, None)
        return None
    lang = nlp.lang if nlp is not None else (vocab.lang or "xx")
    def cluster_table():
        return find_cluster_table(vocab, lang, clusters)[0]

    phrases = _gazetteer(nlp, vocab, gazetteer, gazetteer_ruler, gazetteer_case_sensitive,
                         gazetteer_spans) if GAZETTEER in attrs else None
    if GAZETTEER in attrs and phrases is None:
        raise ValueError(Errors.E125.format(
            why=f"the templates of '{name}' read GAZETTEER, but no gazetteer was given: "
                f"set [initialize.components.{name}] gazetteer = PATH (or gazetteer_ruler = "
                f"the name of an entity_ruler, or gazetteer_from_training = true)"))
    lexicon = build_lexicon(attrs, cluster_table=cluster_table,
                            vectors=vocab.vectors if len(vocab.vectors.key2row) else None,
                            gazetteer=phrases, seed=seed)
    if lexicon.clusters is None and any(cluster_bits(a) is not None for a in attrs):
        needed = lexicon_attrs(model, with_cluster_templates=False)
        if any(cluster_bits(a) is not None for a in needed):  # the templates proper read them
            raise ValueError(Errors.E126.format(attrs=", ".join(
                a for a in needed if cluster_bits(a) is not None)))
        if has_cluster_templates(model):  # only the optional ones: say how to add them
            warnings.warn(Warnings.W007.format(name=name, lang=lang))
    set_lexicon(model, None if lexicon.empty else lexicon)
    return None if lexicon.empty else lexicon


def _gazetteer(nlp: Optional[Language], vocab: Vocab, path: Optional[PathLike],
               ruler_name: Optional[str], case_sensitive: bool,
               spans: Optional[Iterable[Tuple[Doc, Iterable[Any]]]] = None
               ) -> Optional[Gazetteer]:
    """The gazetteer of a file and/or an entity_ruler, tokenized by the pipeline,
    and/or of the training documents' gold spans (with their folds)."""
    if path is None and ruler_name is None and spans is None:
        return None
    pairs = list(read_gazetteer(path)) if path is not None else []
    if ruler_name is not None:
        if nlp is None or ruler_name not in nlp.component_names:
            have = nlp.component_names if nlp is not None else []
            raise ValueError(Errors.E125.format(
                why=f"gazetteer_ruler = '{ruler_name}' is not a component of the pipeline "
                    f"({', '.join(have) or 'none given'})"))
        pairs += ruler_phrases(nlp.get_pipe(ruler_name))
    if nlp is not None:
        make_doc = nlp.make_doc
    else:
        def make_doc(text: str) -> Doc:
            return Doc(vocab, words=text.split())
    given = tokenized(pairs, make_doc)
    from_training, folds = training_phrases(spans) if spans is not None else ([], [])
    if spans is not None and not from_training:
        raise ValueError(Errors.E125.format(
            why="gazetteer_from_training found no gold spans in the training examples"))
    # a phrase also given in a file or a ruler holds in every fold (its mask is all ones)
    return Gazetteer(given + from_training, case_sensitive=case_sensitive,
                     folds=[EVERY_FOLD] * len(given) + folds)
