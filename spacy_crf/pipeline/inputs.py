"""What a crf_tagger reads from its Docs besides the words, and the checks on it.

The features may read annotations of earlier components (``TAG``, ``POS``,
``MORPH``, ``LEMMA``, a parse); the tree structures read the parse. This
module names them (for the pipe meta and W005), runs the earlier components
over initialize's sample where it lacks them, and gives the warnings spaCy's
own pipes give for a missing norm table.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import LEXEME_NORM_LANGS
from spacy.util import logger as spacy_logger
from thinc.api import Model

from ..errors import Warnings, warn
from ..features.doc_arrays import SEQUENCE_DOC, SEQUENCE_SENTENCE
from ..features.templates import templates_of

#: token annotations a crf_tagger's features may read from its docs, as
#: Doc.has_annotation names them, each with the name spaCy's pipe meta gives a
#: component that assigns it (``Language.get_pipe_meta(name).assigns``)
INPUT_ANNOTATIONS = {"TAG": "token.tag", "POS": "token.pos", "MORPH": "token.morph",
                     "LEMMA": "token.lemma", "DEP": "token.dep",
                     "SENT_START": "token.is_sent_start"}


def input_attrs(model: Model, needs_parse: bool, structure_name: str,
                sequence: str = SEQUENCE_DOC) -> List[Tuple[str, str]]:
    """(attribute, why) of every token annotation a component reads from its
    docs (``TAG``, ``POS``, ``MORPH``, ``LEMMA``, ``DEP`` for a parse,
    ``SENT_START`` for its sequences where ``sequence = "sentence"``: a doc
    without boundaries is one sequence, at training as at prediction)."""
    found: Dict[str, str] = {}
    if needs_parse:
        found["DEP"] = f'structure = "{structure_name}"'
    if sequence == SEQUENCE_SENTENCE:
        found["SENT_START"] = f'sequence = "{SEQUENCE_SENTENCE}"'
    for templates in templates_of(model):
        for attr in INPUT_ANNOTATIONS:
            if attr not in found and templates.reads(attr):
                found[attr] = "feature templates"
        if "DEP" not in found and getattr(templates, "uses_tree", False):
            found["DEP"] = "tree feature templates"
    return list(found.items())


def warn_missing_inputs(name: str, docs: Sequence[Doc], attrs: Sequence[Tuple[str, str]],
                        trained_lang: Optional[str] = None) -> None:
    """W005 for each input of ``attrs`` that no doc of ``docs`` has (a missing
    parse is E015 at the structure or the features instead); W055 where the
    docs are of another language than ``trained_lang`` (:func:`warn_other_language`)."""
    warn_other_language(name, trained_lang, docs)
    docs = [doc for doc in docs if len(doc)]
    for attr, why in attrs:
        if attr != "DEP" and not any(doc.has_annotation(attr) for doc in docs):
            warn(Warnings.W005.format(name=name, attr=attr, why=why))


def warn_other_language(name: str, trained: Optional[str], docs: Sequence[Doc]) -> None:
    """W055 where the docs are of another language than the one the component
    was trained in (``cfg["lang"]``; a model saved before it was kept says
    nothing): sourced, loaded or warm-started into another pipeline, it reads
    its own language's word tables, and the words as its tokenizer split them."""
    lang = next((doc.vocab.lang for doc in docs), None)
    if trained and lang and lang != trained:
        warn(Warnings.W055.format(name=name, trained=trained, lang=lang))


def warn_no_lexeme_norm(model: Model, vocab, name: str) -> None:
    """W017 where spaCy's tagger and ner give W033: the templates read NORM but
    the vocab has no (or an empty) ``lexeme_norm`` table for a language
    spacy-lookups-data has norms for.

    Logged at DEBUG on spaCy's logger, as spaCy logs W033 (``spacy train
    --verbose`` shows it): a blank pipeline lacks the table by design, and a
    warning at every initialize of one would be noise.
    """
    lang = vocab.lang
    if lang not in LEXEME_NORM_LANGS or len(vocab.lookups.get_table("lexeme_norm", {})):
        return
    if any(templates.reads("NORM") for templates in templates_of(model)):
        spacy_logger.debug(Warnings.W017.format(name=name, lang=lang))


def upstream_annotated(name: str, needed: Sequence[str], docs: List[Doc],
                       nlp: Optional[Language]) -> List[Doc]:
    """Copies of ``docs`` run through the components before ``name`` (a parser
    that annotates in training gives the trees the tree features read), where
    ``docs`` lack an input of ``needed``; else ``docs``.

    spaCy initializes the components in pipeline order but hands each the raw
    examples, so without this a tree CRF behind a parser would meet docs with
    no parse at initialize (E015) though every training batch will have one.
    """
    if nlp is None or not docs or all(d.has_annotation(a) for d in docs for a in needed):
        return docs
    # components, not pipeline: spacy train disables frozen components while
    # it initializes, and a parser it sources is frozen
    return run_components_before(name, nlp.components, [doc.copy() for doc in docs])


def run_components_before(name: str, components: Sequence[Tuple[str, Any]], docs: List[Doc],
                          batch_size: Optional[int] = None) -> List[Doc]:
    """``docs`` run through the ``(name, component)`` pairs that come before ``name``."""
    batching = {} if batch_size is None else {"batch_size": batch_size}
    for other, proc in components:
        if other == name:
            break
        docs = list(proc.pipe(docs, **batching)) if hasattr(proc, "pipe") else [proc(d) for d in docs]
    return docs
